//! What the property tests share: their proptest configuration (a fixed seed), strategies for
//! readings, state words and costs weighted towards their edges, and the invariants every quota
//! keeps for any input.

use super::time::{at, HORIZON_NS, SECOND_NS};
use nanolimit::quota::Step;
use nanolimit::{Quota, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// The proptest configuration of the property tests: a fixed seed keeps CI deterministic; set
/// `PROPTEST_RNG_SEED` to explore other cases.
pub fn proptest_config(cases: u32) -> Config {
    let mut config = Config::with_cases(cases);
    config.failure_persistence = None;
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x6e61_6e6f_6c69_6d69);
    }
    config
}

/// Any reading from the origin to the horizon, weighted towards both ends.
pub fn any_reading() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        2 => 0..=HORIZON_NS,
        1 => 0..=SECOND_NS,
        1 => HORIZON_NS - SECOND_NS..=HORIZON_NS,
        1 => Just(HORIZON_NS),
        1 => Just(0u64),
    ]
    .prop_map(at)
}

/// Any state word, weighted towards the edges of the `u64` range.
pub fn any_state() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => any::<u64>(),
        1 => Just(0u64),
        1 => u64::MAX - 16..=u64::MAX,
        1 => 0..=1u64 << 20,
    ]
}

/// Any cost, weighted towards the quota's `limit` (on both sides of it) and towards `u64::MAX`.
pub fn any_cost(limit: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => any::<u64>(),
        2 => limit.saturating_sub(2)..=limit.saturating_add(2),
        2 => u64::MAX - 2..=u64::MAX,
        1 => 0..=limit,
        1 => Just(0u64),
    ]
}

/// The invariants every quota keeps for any input (the test profile keeps overflow checks on,
/// so an overflow panics): `step` denies every cost above the limit, never writes the keyed
/// table's two slot markers (`u64::MAX` and `u64::MAX - 1`), and the other pure methods run
/// without panicking, `remaining` within the limit.
pub fn check_every_method_on_any_input<Q: Quota>(
    quota: &Q,
    state: u64,
    now: Timestamp,
    cost: u64,
) -> Result<(), TestCaseError> {
    let instant = quota.instant(now);
    let limit = quota.limit();
    let step = quota.step(state, instant, cost);
    if cost > limit {
        prop_assert_eq!(step, Step::Deny, "cost {} above the limit {}", cost, limit);
    }
    if let Step::Allow(word) = step {
        prop_assert!(
            word < u64::MAX - 1,
            "a slot marker was written: {:#x}",
            word
        );
    }
    let remaining = quota.remaining(state, instant);
    prop_assert!(
        remaining <= limit,
        "remaining {} above the limit",
        remaining
    );
    let _ = quota.reset_after_ns(state, instant);
    let _ = quota.is_fresh(state, instant);
    let _ = quota.retry_after_ns(state, instant, cost.min(limit));
    let _ = quota.retry_after_ns(state, instant, cost % (limit + 1));
    Ok(())
}

//! Live control: the unlimited and "burst then never" quotas, a direct limiter whose quota
//! changes at runtime ([`LiveLimiter`]), and the reset of one key of a keyed table.

mod common;

use common::{
    any_cost, any_reading, any_state, at, check_every_method_on_any_input, limiter,
    proptest_config, HORIZON_NS, SECOND_NS, YEAR_NS,
};
use nanolimit::{
    FixedWindow, Gcra, KeyedLimiter, ManualClock, Quota, QuotaError, Request, SlidingWindow, Step,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// The unlimited quota.

#[test]
fn an_unlimited_limiter_admits_every_request_of_a_busy_schedule() {
    let limiter = limiter(Gcra::unlimited());
    let mut rng = StdRng::seed_from_u64(14);
    let mut now_ns = 0;
    for _ in 0..100_000 {
        // Bursts at one instant, bytes-sized costs, and the odd huge one.
        now_ns += rng.gen_range(0..=1_000);
        let cost = match rng.gen_range(0..10) {
            0 => rng.gen_range(1..=1 << 40),
            _ => rng.gen_range(1..=1_500),
        };
        let decision = limiter
            .check_with(Request::cost(cost).at(at(now_ns)))
            .unwrap();
        assert!(decision.is_allowed(), "cost {cost} at {now_ns}");
        assert_eq!(decision.retry_after(), Duration::ZERO);
    }
    // The largest cost it accepts passes on a fresh state; one more is an error, not a denial.
    let fresh = common::limiter(Gcra::unlimited());
    let largest = Gcra::unlimited().limit();
    assert_eq!(largest, (1 << 62) - 1);
    assert!(fresh
        .check_with(Request::cost(largest))
        .unwrap()
        .is_allowed());
    assert!(fresh.check_with(Request::cost(largest + 1)).is_err());
}

#[test]
fn a_premium_tier_is_unlimited_on_a_table_whose_free_tier_is_limited() {
    for base in [
        Gcra::per_second(2).unwrap(),
        Gcra::new(3, Duration::from_secs(1))
            .unwrap()
            .with_burst(2)
            .unwrap(),
    ] {
        let clock = ManualClock::new();
        let limiter = KeyedLimiter::builder(base)
            .capacity(64)
            .clock(clock.clone())
            .build()
            .unwrap();
        let premium = limiter.tier(Gcra::unlimited()).unwrap();
        assert!(premium.quota().is_unlimited());
        for _ in 0..10_000 {
            let request = Request::new().tier(premium);
            assert!(limiter
                .check_with(&"premium", request)
                .unwrap()
                .is_allowed());
        }
        assert!(limiter.check(&"free").is_allowed());
        assert!(limiter.check(&"free").is_allowed());
        let denied = limiter.check(&"free");
        assert!(denied.is_denied(), "{base:?}");
        // The free tier's advice is its own, unchanged by the unlimited tier's lead.
        assert!(denied.retry_after() <= Duration::from_millis(500));
        assert!(denied.retry_after() > Duration::ZERO);
        // A key moved from the free tier to the premium one is admitted at once, and back.
        let request = Request::new().tier(premium);
        assert!(limiter.check_with(&"free", request).unwrap().is_allowed());
        assert!(limiter.check(&"free").is_denied());
        clock.advance(Duration::from_secs(1));
        assert!(limiter.check(&"free").is_allowed());
    }
}

#[test]
fn an_unlimited_state_keeps_the_quota_invariants() {
    let quota = Gcra::unlimited();
    let mut rng = StdRng::seed_from_u64(15);
    for _ in 0..100_000 {
        let state = match rng.gen_range(0..3) {
            0 => rng.gen(),
            1 => Gcra::FRESH,
            _ => quota.instant(at(rng.gen_range(0..=HORIZON_NS))).ticks(),
        };
        let now_ns = rng.gen_range(0..=HORIZON_NS);
        let now = quota.instant(at(now_ns));
        let cost = rng.gen_range(1..=quota.limit());
        if let Step::Allow(written) = quota.step(state, now, cost) {
            assert!(written > state);
            assert!(written < u64::MAX - 1);
            let earlier = quota.instant(at(rng.gen_range(0..=now_ns)));
            let fresh = rng.gen_range(0..=earlier.ticks());
            assert!(quota.is_fresh(fresh, earlier));
            assert!(written > fresh);
        }
    }
    let now = quota.instant(at(5 * SECOND_NS));
    assert!(quota.is_fresh(Gcra::FRESH, now));
    assert!(matches!(
        quota.step(Gcra::FRESH, now, quota.limit()),
        Step::Allow(_)
    ));
}

// ---------------------------------------------------------------------------------------------
// "Burst then never".

/// Both window quotas' "burst then never" constructors, and their `new`'s limit bound.
fn never_quotas(
    limit: u64,
) -> (
    Result<FixedWindow, QuotaError>,
    Result<SlidingWindow, QuotaError>,
) {
    (
        FixedWindow::burst_then_never(limit),
        SlidingWindow::burst_then_never(limit),
    )
}

#[test]
fn burst_then_never_rejects_the_limits_its_window_quota_rejects() {
    assert_eq!(never_quotas(0).0, Err(QuotaError::ZeroLimit));
    assert_eq!(never_quotas(0).1, Err(QuotaError::ZeroLimit));
    let (fixed, sliding) = never_quotas(FixedWindow::MAX_LIMIT + 1);
    assert_eq!(
        fixed,
        Err(QuotaError::LimitTooLarge {
            requested: FixedWindow::MAX_LIMIT + 1,
            max: FixedWindow::MAX_LIMIT
        })
    );
    assert!(matches!(sliding, Err(QuotaError::LimitTooLarge { .. })));
    assert!(FixedWindow::burst_then_never(FixedWindow::MAX_LIMIT).is_ok());
    assert!(SlidingWindow::burst_then_never(SlidingWindow::MAX_LIMIT).is_ok());
}

/// A limiter under `quota` admits exactly its limit over a random schedule spanning the whole
/// horizon, and every denial reports a wait to past the horizon (never zero).
fn assert_the_limit_is_admitted_once_ever<Q: Quota>(quota: Q, seed: u64) {
    let limiter = limiter(quota);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut now_ns = rng.gen_range(0..=YEAR_NS);
    let mut admitted = 0;
    while now_ns <= HORIZON_NS {
        let cost = rng.gen_range(1..=quota.limit().min(4));
        let decision = limiter
            .check_with(Request::cost(cost).at(at(now_ns)))
            .unwrap();
        if decision.is_allowed() {
            admitted += cost;
        } else {
            // Past the horizon: the fixed window's ends one nanosecond after it; the sliding
            // window's estimate also waits for its count's share of the next one to decay.
            let past_the_horizon = Duration::from_nanos(HORIZON_NS + 1 - now_ns);
            assert!(decision.retry_after() >= past_the_horizon, "{quota:?}");
            assert!(decision.reset_after() >= past_the_horizon);
            assert!(decision.headers().retry_after_seconds.unwrap() >= 1);
        }
        assert!(admitted <= quota.limit(), "{quota:?}");
        now_ns = now_ns.saturating_add(rng.gen_range(0..=YEAR_NS / 4));
    }
    // Enough checks to spend it: the schedule spans 18 years in steps of up to 3 months, and a
    // check at the horizon itself is denied once spent.
    assert!(admitted + 4 > quota.limit());
    let last = limiter.check_at(at(HORIZON_NS));
    assert_eq!(last.is_allowed(), admitted < quota.limit());
}

#[test]
fn burst_then_never_admits_its_limit_once_over_the_whole_horizon() {
    for (seed, limit) in [(1, 1), (2, 3), (3, 40), (4, 200)] {
        let (fixed, sliding) = never_quotas(limit);
        assert_the_limit_is_admitted_once_ever(fixed.unwrap(), seed);
        assert_the_limit_is_admitted_once_ever(sliding.unwrap(), seed);
    }
}

#[test]
fn burst_then_never_quotas_are_tiers_of_each_other_and_of_nothing_else() {
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::builder(FixedWindow::burst_then_never(3).unwrap())
        .capacity(64)
        .clock(clock.clone())
        .build()
        .unwrap();
    let paid = limiter
        .tier(FixedWindow::burst_then_never(10).unwrap())
        .unwrap();
    assert_eq!(
        limiter.tier(FixedWindow::per_minute(10).unwrap()),
        Err(QuotaError::IncompatibleQuota)
    );
    for _ in 0..3 {
        assert!(limiter.check(&"trial").is_allowed());
    }
    assert!(limiter.check(&"trial").is_denied());
    // Upgraded: the units used on the trial count, the paid allowance applies at once.
    for _ in 0..7 {
        let request = Request::new().tier(paid);
        assert!(limiter.check_with(&"trial", request).unwrap().is_allowed());
    }
    let request = Request::new().tier(paid);
    assert!(limiter.check_with(&"trial", request).unwrap().is_denied());
    clock.advance(Duration::from_secs(17 * 365 * 86_400));
    assert!(limiter.check(&"trial").is_denied());
    assert!(limiter.check(&"another").is_allowed());
}

proptest! {
    #![proptest_config(proptest_config(20_000))]

    /// The quota invariants, for any state, reading and cost: no panic, no cost above the limit
    /// admitted, no slot marker written; and a written word is greater than the one it
    /// replaces (the window index never changes, so it never wraps).
    #[test]
    fn burst_then_never_keeps_the_quota_invariants(
        limit in prop_oneof![1u64..=8, 1u64..=SlidingWindow::MAX_LIMIT],
        state in any_state(),
        now in any_reading(),
        cost_seed in any::<u64>(),
    ) {
        let (fixed, sliding) = never_quotas(limit);
        let (fixed, sliding) = (fixed.unwrap(), sliding.unwrap());
        for cost in [cost_seed, cost_seed % (limit + 2), limit] {
            check_every_method_on_any_input(&fixed, state, now, cost)?;
            check_every_method_on_any_input(&sliding, state, now, cost)?;
        }
        for cost in [1, limit] {
            let fresh_fixed = fixed.step(FixedWindow::FRESH, fixed.instant(now), cost);
            let fresh_sliding = sliding.step(SlidingWindow::FRESH, sliding.instant(now), cost);
            prop_assert!(matches!(fresh_fixed, Step::Allow(word) if word > 0));
            prop_assert!(matches!(fresh_sliding, Step::Allow(word) if word > 0));
        }
        // Every word a schedule writes is greater than the one it replaces.
        let mut rng = StdRng::seed_from_u64(cost_seed);
        let (mut fixed_word, mut sliding_word) = (FixedWindow::FRESH, SlidingWindow::FRESH);
        let mut now_ns = now.as_ns();
        for _ in 0..8 {
            let cost = rng.gen_range(1..=limit);
            if let Step::Allow(word) = fixed.step(fixed_word, fixed.instant(at(now_ns)), cost) {
                prop_assert!(word > fixed_word);
                fixed_word = word;
            }
            if let Step::Allow(word) = sliding.step(sliding_word, sliding.instant(at(now_ns)), cost) {
                prop_assert!(word > sliding_word);
                sliding_word = word;
            }
            now_ns = rng.gen_range(now_ns..=HORIZON_NS);
        }
    }

    /// The unlimited quota keeps the invariants for any input too.
    #[test]
    fn the_unlimited_quota_keeps_the_quota_invariants_on_any_input(
        cost in any_cost(Gcra::unlimited().limit()),
        state in any_state(),
        now in any_reading(),
    ) {
        check_every_method_on_any_input(&Gcra::unlimited(), state, now, cost)?;
    }
}

//! Property tests: a keyed limiter decides exactly like a reference model, a
//! `HashMap<key, state word>` driven by the quota's own step function, under random schedules
//! of keys, clock readings (forward and backward), costs, peeks, checks and peeks under tiers,
//! and removals of keys (`remove`, a key the model forgets), while no new key finds its slots full: on a roomy table (many shards and buckets), and
//! on a crowded one (one shard of two buckets, eight keys) where keys share buckets, live in the
//! second of their two buckets, and share one-byte lookup hints.
//!
//! The model uses the public [`Quota`] step function on an entry defaulting to
//! [`Quota::FRESH`], under the quota a tier applies ([`Request::tier`]); so these tests check the
//! table (lookup, insert, tiers, the decision it builds), not the quotas, which are tested on
//! their own. Tiers are made once per test case, by a table of the same quota, and used on every
//! table of the case.

use crate::common::keyed::{clock_at, table, TableShape};
use crate::common::SECOND_NS;
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::quota::Step;
use nanolimit::{
    Clock, Decision, FixedWindow, Gcra, KeyedLimiter, ManualClock, Quota, QuotaError, Request,
    RequestError, SlidingWindow, Timestamp,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

/// Keys are drawn from `0..KEY_UNIVERSE`: few enough that keys repeat often.
const KEY_UNIVERSE: u64 = 24;

/// A table's shape and how schedule keys map onto its keys.
#[derive(Debug, Clone, Copy)]
struct ModelShape {
    table: TableShape,
    /// Schedule keys are taken modulo this.
    keys: u64,
}

/// Far above the key universe: keys rarely share a bucket.
const ROOMY: ModelShape = ModelShape {
    table: TableShape::capacity(4_096),
    keys: KEY_UNIVERSE,
};

/// One shard of two buckets (16 slots; capacity 10 plus headroom rounds up to two buckets in
/// both key modes) and eight keys: every key's candidate slots (8 or 16) always include a
/// vacant one, since at most seven other keys exist, so no new key is refused and no slot is
/// reclaimed, yet keys crowd the same buckets, half of them land in their second bucket, and
/// one-byte hints collide often (about one schedule in nine, with a random seed per case).
const CROWDED: ModelShape = ModelShape {
    table: TableShape::capacity(10).shards(1),
    keys: 8,
};

/// What a schedule step does.
#[derive(Debug, Clone, Copy)]
enum Operation {
    /// `check_with` under the table's quota.
    Check,
    /// `peek_with` under the table's quota.
    Peek,
    /// `check_with` under the tier with this index.
    CheckWith(usize),
    /// `peek_with` under the tier with this index.
    PeekWith(usize),
    /// `remove`.
    Remove,
}

/// One step of a schedule.
#[derive(Debug, Clone, Copy)]
struct Event {
    key: u64,
    /// Clock movement before the operation, in nanoseconds (negative: the clock steps back).
    clock_step_ns: i64,
    cost: u64,
    operation: Operation,
}

/// The reference: one state word per key, absent meaning [`Quota::FRESH`].
struct Model {
    states: HashMap<u64, u64>,
    /// Keys given a state (absent before), and keys removed.
    inserts: u64,
    removals: u64,
    /// The largest lead of the quotas the table has used (see `Quota::judging_lead`).
    lead_ticks: u64,
}

/// What the model expects of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Expected {
    allowed: bool,
    untracked: bool,
    state: u64,
    limit: u64,
    remaining: u64,
    reset_after_ns: u64,
    retry_after_ns: u64,
}

impl Model {
    fn new<Q: Quota>(table_quota: &Q) -> Self {
        Model {
            states: HashMap::new(),
            inserts: 0,
            removals: 0,
            lead_ticks: table_quota.lead_ticks(),
        }
    }

    /// A tier used on the table raises its lead before its decision.
    fn use_tier<Q: Quota>(&mut self, tier_quota: &Q) {
        self.lead_ticks = self.lead_ticks.max(tier_quota.lead_ticks());
    }

    /// Forgets `key`: whether it had a state.
    fn remove(&mut self, key: u64) -> bool {
        let removed = self.states.remove(&key).is_some();
        self.removals += u64::from(removed);
        removed
    }

    /// Applies one operation under `quota` (the table's, or a tier's as the table applies it);
    /// `consume` is false for a peek.
    fn apply<Q: Quota>(
        &mut self,
        key: u64,
        cost: u64,
        quota: &Q,
        now: Timestamp,
        consume: bool,
    ) -> Result<Expected, RequestError> {
        // The documented contract: the cost is checked against the applied quota's limit.
        if cost > quota.limit() {
            return Err(RequestError::CostAboveLimit {
                cost,
                limit: quota.limit(),
            });
        }
        // The documented rule for readings behind a state: judged by the largest lead of the
        // quotas the table has used (its own, and every tier made for it or used on it).
        let quota = &quota.judging_lead(self.lead_ticks);
        let now = quota.instant(now);
        let state = self.states.get(&key).copied().unwrap_or(Q::FRESH);
        let (allowed, state) = if cost == 0 {
            (true, state)
        } else {
            match quota.step(state, now, cost) {
                Step::Allow(next) => {
                    if consume {
                        self.inserts += u64::from(self.states.insert(key, next).is_none());
                        (true, next)
                    } else {
                        (true, state)
                    }
                }
                Step::Deny => (false, state),
            }
        };
        Ok(Expected {
            allowed,
            untracked: false,
            state,
            limit: quota.limit(),
            remaining: quota.remaining(state, now),
            reset_after_ns: quota.reset_after_ns(state, now),
            retry_after_ns: if allowed {
                0
            } else {
                quota.retry_after_ns(state, now, cost)
            },
        })
    }
}

fn observed<Q: Quota>(decision: &Decision<Q>) -> Expected {
    Expected {
        allowed: decision.is_allowed(),
        untracked: decision.is_untracked(),
        state: decision.state_word(),
        limit: decision.limit(),
        remaining: decision.remaining(),
        reset_after_ns: decision.reset_after().as_nanos() as u64,
        retry_after_ns: decision.retry_after().as_nanos() as u64,
    }
}

/// Runs `events` against a keyed limiter and the model side by side, asserting identical
/// outcomes at every step, then that the table held exactly the model's keys.
fn run_against_model<Q: Quota + PartialEq, M: KeyMode<u64>>(
    limiter: &KeyedLimiter<u64, Q, ManualClock, M>,
    shape: ModelShape,
    clock: &ManualClock,
    tiers: &[Q],
    events: &[Event],
) -> Result<(), TestCaseError> {
    let table_quota = *limiter.quota();
    let mut model = Model::new(&table_quota);
    for (index, event) in events.iter().enumerate() {
        let previous_ns = clock.now().as_ns();
        let now = Timestamp::saturating_from_ns(if event.clock_step_ns >= 0 {
            previous_ns.saturating_add(event.clock_step_ns as u64)
        } else {
            previous_ns.saturating_sub(event.clock_step_ns.unsigned_abs())
        });
        clock.set(now);
        let key = event.key % shape.keys;
        if let Operation::Remove = event.operation {
            prop_assert_eq!(limiter.remove(&key), model.remove(key), "step {}", index);
            continue;
        }
        let request = Request::cost(event.cost).at(now);
        let (actual, expected, quota) = match event.operation {
            Operation::Check => (
                limiter.check_with(&key, request),
                model.apply(key, event.cost, &table_quota, now, true),
                table_quota,
            ),
            Operation::Peek => (
                limiter.peek_with(&key, request),
                model.apply(key, event.cost, &table_quota, now, false),
                table_quota,
            ),
            Operation::CheckWith(tier_index) => {
                let tier = tiers[tier_index % tiers.len()];
                model.use_tier(&tier);
                (
                    limiter.check_with(&key, request.tier(tier)),
                    model.apply(key, event.cost, &tier, now, true),
                    tier,
                )
            }
            Operation::PeekWith(tier_index) => {
                let tier = tiers[tier_index % tiers.len()];
                model.use_tier(&tier);
                (
                    limiter.peek_with(&key, request.tier(tier)),
                    model.apply(key, event.cost, &tier, now, false),
                    tier,
                )
            }
            Operation::Remove => unreachable!("handled above"),
        };
        match (actual, expected) {
            (Ok(decision), Ok(expected)) => {
                prop_assert_eq!(decision.cost(), event.cost);
                prop_assert!(decision.quota() == &quota, "step {}: {:?}", index, event);
                prop_assert_eq!(
                    observed(&decision),
                    expected,
                    "step {} at {:?}: {:?}",
                    index,
                    now,
                    event
                );
            }
            (Err(actual), Err(expected)) => prop_assert_eq!(actual, expected, "step {}", index),
            (actual, expected) => prop_assert!(
                false,
                "step {}: {:?}: table {:?}, model {:?}",
                index,
                event,
                actual.map(|decision| observed(&decision)),
                expected
            ),
        }
    }
    let stats = limiter.stats();
    // The precondition: the table never ran out of room, so it must hold every key the model
    // holds, each inserted once.
    prop_assert_eq!(stats.reclaims, 0);
    prop_assert_eq!(stats.refused_new_keys, 0);
    prop_assert_eq!(stats.untracked_new_keys, 0);
    prop_assert_eq!(stats.evictions, 0);
    // A removed key's next insert takes its own removed entry back (or a vacant slot): never
    // a reclaim, so a key holds at most one slot, and the crowded table always has a vacant one.
    prop_assert_eq!(stats.inserts, model.inserts);
    prop_assert_eq!(stats.removals, model.removals);
    prop_assert_eq!(limiter.entries(), model.states.len());
    // And a final look at every key agrees with the model's state.
    let now = clock.now();
    for key in 0..shape.keys {
        let state = model.states.get(&key).copied().unwrap_or(Q::FRESH);
        let peeked = limiter.peek_with(&key, Request::new().at(now)).unwrap();
        prop_assert_eq!(peeked.state_word(), state, "key {}", key);
    }
    Ok(())
}

/// Schedules for a quota of limit `limit`, with `tiers` tiers and time steps scaled to
/// `scale_ns` (about a window or an emission interval): mostly short steps forward, some long
/// ones (entries going fresh), some back (clocks that step back).
fn events(limit: u64, tiers: usize, scale_ns: u64) -> impl Strategy<Value = Vec<Event>> {
    let scale = scale_ns as i64;
    let clock_step = prop_oneof![
        4 => Just(0i64),
        8 => 0..scale / 4,
        2 => 0..4 * scale,
        1 => -scale..0,
    ];
    let operation = prop_oneof![
        6 => Just(Operation::Check),
        2 => Just(Operation::Peek),
        3 => (0..tiers).prop_map(Operation::CheckWith),
        1 => (0..tiers).prop_map(Operation::PeekWith),
        1 => Just(Operation::Remove),
    ];
    // Costs up to a little above the table's limit: exercises all-or-nothing denials and the
    // impossible-cost errors (tiers have their own limits).
    let cost = prop_oneof![
        6 => Just(1u64),
        3 => 0..=limit,
        1 => 0..=limit * 3 + 2,
    ];
    let event = (0..KEY_UNIVERSE, clock_step, cost, operation).prop_map(
        |(key, clock_step_ns, cost, operation)| Event {
            key,
            clock_step_ns,
            cost,
            operation,
        },
    );
    prop::collection::vec(event, 1..300)
}

/// Runs one schedule on a table of key mode `M` of each shape, each against its own model.
fn check_every_shape<Q: Quota + PartialEq, M: KeyMode<u64>>(
    quota: Q,
    tiers: &[Q],
    start_ns: u64,
    seed: u64,
    events: &[Event],
) -> Result<(), TestCaseError> {
    for shape in [ROOMY, CROWDED] {
        let clock = clock_at(start_ns);
        let limiter = table::<M, Q>(quota, shape.table.seed(seed), &clock);
        if shape.table.shards.is_some() {
            prop_assert_eq!(limiter.slots(), 16);
        }
        run_against_model(&limiter, shape, &clock, tiers, events)?;
    }
    Ok(())
}

/// Makes the case's tiers (once, with a table of `quota`), checks that `incompatible` quotas
/// cannot be made tiers, and runs one schedule on a hashed and on an exact table of each shape.
fn check_both_key_modes<Q: Quota + PartialEq>(
    quota: Q,
    tier_quotas: &[Q],
    incompatible: &[Q],
    start_ns: u64,
    seed: u64,
    events: &[Event],
) -> Result<(), TestCaseError> {
    let maker = table::<Hashed, Q>(quota, TableShape::capacity(1), &ManualClock::new());
    let tiers: Vec<Q> = tier_quotas
        .iter()
        .map(|&tier_quota| maker.tier(tier_quota).unwrap())
        .collect();
    for &other in incompatible {
        prop_assert_eq!(maker.tier(other), Err(QuotaError::IncompatibleQuota));
    }
    check_every_shape::<Q, Hashed>(quota, &tiers, start_ns, seed, events)?;
    check_every_shape::<Q, Exact>(quota, &tiers, start_ns, seed, events)
}

fn gcra_tier_quotas() -> Vec<Gcra> {
    vec![
        // The table's own quota.
        Gcra::per_second(20).unwrap().with_burst(5).unwrap(),
        // Another whole-nanosecond interval: the table's units as is.
        Gcra::per_second(100).unwrap().with_burst(12).unwrap(),
        // Intervals of no whole number of nanoseconds: expressed in the table's ticks.
        Gcra::new(3, Duration::from_secs(1)).unwrap(),
        Gcra::per_minute(50).unwrap().with_burst(2).unwrap(),
        Gcra::every(Duration::from_nanos(33_333_337)).unwrap(),
    ]
}

fn fixed_window_tier_quotas() -> Vec<FixedWindow> {
    vec![
        FixedWindow::new(5, Duration::from_millis(100)).unwrap(),
        FixedWindow::new(2, Duration::from_millis(100)).unwrap(),
        FixedWindow::new(9, Duration::from_millis(100)).unwrap(),
    ]
}

fn sliding_window_tier_quotas() -> Vec<SlidingWindow> {
    vec![
        SlidingWindow::new(5, Duration::from_millis(100)).unwrap(),
        SlidingWindow::new(2, Duration::from_millis(100)).unwrap(),
        SlidingWindow::new(9, Duration::from_millis(100)).unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn gcra_table_matches_the_model(
        start_ns in 0..100 * SECOND_NS,
        seed in any::<u64>(),
        events in events(5, 5, 50_000_000),
    ) {
        let quota = Gcra::per_second(20).unwrap().with_burst(5).unwrap();
        check_both_key_modes(quota, &gcra_tier_quotas(), &[], start_ns, seed, &events)?;
    }

    #[test]
    fn sliding_window_table_matches_the_model(
        start_ns in 0..100 * SECOND_NS,
        seed in any::<u64>(),
        events in events(5, 3, 100_000_000),
    ) {
        let quota = SlidingWindow::new(5, Duration::from_millis(100)).unwrap();
        // Another window length cannot share the table's counts.
        let incompatible = [SlidingWindow::new(5, Duration::from_secs(1)).unwrap()];
        check_both_key_modes(
            quota,
            &sliding_window_tier_quotas(),
            &incompatible,
            start_ns,
            seed,
            &events,
        )?;
    }

    #[test]
    fn fixed_window_table_matches_the_model(
        start_ns in 0..100 * SECOND_NS,
        seed in any::<u64>(),
        events in events(5, 3, 100_000_000),
    ) {
        let quota = FixedWindow::new(5, Duration::from_millis(100)).unwrap();
        // Another window length cannot share the table's counts.
        let incompatible = [FixedWindow::new(5, Duration::from_millis(150)).unwrap()];
        check_both_key_modes(
            quota,
            &fixed_window_tier_quotas(),
            &incompatible,
            start_ns,
            seed,
            &events,
        )?;
    }
}

//! Property tests: a keyed limiter decides exactly like a reference model, a
//! `HashMap<key, state word>` driven by the algorithm's own step function, under random
//! schedules of keys, clock readings (forward and backward), costs, peeks and per-call quotas,
//! while no new key finds its slots full: on a roomy table (many shards and buckets), and on a
//! crowded one (one shard of two buckets, eight keys) where keys share buckets, live in the
//! second of their two buckets, and share one-byte lookup hints.
//!
//! The model uses the public [`Algorithm`] step function on an entry defaulting to
//! [`Algorithm::FRESH`]; so these tests check the table (lookup, insert, per-call quotas, the
//! decision it builds), not the algorithms, which are tested on their own.

use nanolimit::{
    Algorithm, CheckError, Clock, Decision, Exact, FixedWindow, Gcra, Hashed, InsufficientCapacity,
    KeyMode, KeyedLimiter, ManualClock, SlidingWindow, Step, TIME_HORIZON_NS,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

/// Keys are drawn from `0..KEY_UNIVERSE`: few enough that keys repeat often.
const KEY_UNIVERSE: u64 = 24;

/// A table's size and how schedule keys map onto its keys.
#[derive(Debug, Clone, Copy)]
struct Shape {
    capacity: usize,
    /// `None`: the default for the capacity.
    shards: Option<usize>,
    /// Schedule keys are taken modulo this.
    keys: u64,
}

/// Far above the key universe: keys rarely share a bucket.
const ROOMY: Shape = Shape {
    capacity: 4_096,
    shards: None,
    keys: KEY_UNIVERSE,
};

/// One shard of two buckets (16 slots; capacity 10 plus headroom rounds up to two buckets in
/// both key modes) and eight keys: every key's candidate slots (8 or 16) always include a
/// vacant one, since at most seven other keys exist, so no new key is refused and no slot is
/// reclaimed, yet keys crowd the same buckets, half of them land in their second bucket, and
/// one-byte hints collide often (about one schedule in nine, with a random seed per case).
const CROWDED: Shape = Shape {
    capacity: 10,
    shards: Some(1),
    keys: 8,
};

/// What a schedule step does.
#[derive(Debug, Clone, Copy)]
enum Operation {
    /// `check_key_n_at` under the table's quota.
    Check,
    /// `peek_key_n_at` under the table's quota.
    Peek,
    /// `check_key_with_n_at` under the per-call quota with this index.
    CheckWith(usize),
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

/// The reference: one state word per key, absent meaning [`Algorithm::FRESH`].
struct Model<A: Algorithm> {
    table_quota: A,
    states: HashMap<u64, u64>,
}

/// What the model expects of a decision, or the error it expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Expected {
    allowed: bool,
    state: u64,
    limit: u64,
    remaining: u64,
    reset_after_ns: u64,
    retry_after_ns: u64,
}

impl<A: Algorithm> Model<A> {
    fn new(table_quota: A) -> Self {
        Model {
            table_quota,
            states: HashMap::new(),
        }
    }

    /// Applies one operation; `consume` is false for a peek.
    fn apply(
        &mut self,
        key: u64,
        cost: u64,
        quota: &A,
        now_ns: u64,
        consume: bool,
    ) -> Result<Expected, CheckError> {
        // The table's documented contract: a per-call quota is first expressed in the table's
        // units, then the cost is checked against its capacity.
        let quota = quota.rebase(&self.table_quota)?;
        if cost > quota.capacity() {
            return Err(CheckError::Capacity(InsufficientCapacity {
                cost,
                capacity: quota.capacity(),
            }));
        }
        let now = quota.instant(now_ns);
        let state = self.states.get(&key).copied().unwrap_or(A::FRESH);
        let (allowed, state) = if cost == 0 {
            (true, state)
        } else {
            match quota.step(state, now, cost) {
                Step::Allow(next) => {
                    if consume {
                        self.states.insert(key, next);
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
            state,
            limit: quota.capacity(),
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

fn observed<A: Algorithm>(decision: &Decision<A>) -> Expected {
    Expected {
        allowed: decision.is_allowed(),
        state: decision.state_word(),
        limit: decision.limit(),
        remaining: decision.remaining(),
        reset_after_ns: decision.reset_after().as_nanos() as u64,
        retry_after_ns: decision.retry_after().as_nanos() as u64,
    }
}

/// Runs `events` against a keyed limiter and the model side by side, asserting identical
/// outcomes at every step, then that the table held exactly the model's keys.
fn run_against_model<A: Algorithm, M: KeyMode<u64>>(
    limiter: &KeyedLimiter<u64, A, ManualClock, M>,
    shape: Shape,
    clock: &ManualClock,
    per_call_quotas: &[A],
    events: &[Event],
) -> Result<(), TestCaseError> {
    let mut model = Model::new(*limiter.policy());
    let table_quota = *limiter.policy();
    for (index, event) in events.iter().enumerate() {
        let previous_ns = clock.now_ns();
        let now_ns = if event.clock_step_ns >= 0 {
            previous_ns.saturating_add(event.clock_step_ns as u64)
        } else {
            previous_ns.saturating_sub(event.clock_step_ns.unsigned_abs())
        }
        .min(TIME_HORIZON_NS);
        clock.set_ns(now_ns);
        let key = event.key % shape.keys;
        let (actual, expected) = match event.operation {
            Operation::Check => (
                limiter
                    .check_key_n_at(&key, event.cost, now_ns)
                    .map_err(CheckError::from),
                model.apply(key, event.cost, &table_quota, now_ns, true),
            ),
            Operation::Peek => (
                limiter
                    .peek_key_n_at(&key, event.cost, now_ns)
                    .map_err(CheckError::from),
                model.apply(key, event.cost, &table_quota, now_ns, false),
            ),
            Operation::CheckWith(quota_index) => {
                let quota = &per_call_quotas[quota_index % per_call_quotas.len()];
                (
                    limiter.check_key_with_n_at(&key, event.cost, quota, now_ns),
                    model.apply(key, event.cost, quota, now_ns, true),
                )
            }
        };
        match (actual, expected) {
            (Ok(decision), Ok(expected)) => {
                prop_assert!(!decision.is_untracked(), "step {}: {:?}", index, event);
                prop_assert_eq!(decision.cost(), event.cost);
                prop_assert_eq!(
                    observed(&decision),
                    expected,
                    "step {} at {} ns: {:?}",
                    index,
                    now_ns,
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
    prop_assert_eq!(stats.inserts, model.states.len() as u64);
    prop_assert_eq!(limiter.entries(), model.states.len());
    // And a final look at every key agrees with the model's state.
    let now_ns = clock.now_ns();
    for key in 0..shape.keys {
        let state = model.states.get(&key).copied().unwrap_or(A::FRESH);
        let peeked = limiter.peek_key_at(&key, now_ns);
        prop_assert_eq!(peeked.state_word(), state, "key {}", key);
    }
    Ok(())
}

/// Schedules for a quota of capacity `capacity`, with `per_call_quotas` per-call quotas and
/// time steps scaled to `scale_ns` (about a window or an emission interval): mostly short
/// steps forward, some long ones (entries going fresh), some back (clocks that step back).
fn events(
    capacity: u64,
    per_call_quotas: usize,
    scale_ns: u64,
) -> impl Strategy<Value = Vec<Event>> {
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
        3 => (0..per_call_quotas).prop_map(Operation::CheckWith),
    ];
    // Costs up to a little above the table's capacity: exercises all-or-nothing denials and
    // the impossible-cost errors (per-call quotas have their own capacities).
    let cost = prop_oneof![
        6 => Just(1u64),
        3 => 0..=capacity,
        1 => 0..=capacity * 3 + 2,
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

fn hashed_limiter<A: Algorithm>(
    quota: A,
    clock: &ManualClock,
    shape: Shape,
    seed: u64,
) -> KeyedLimiter<u64, A, ManualClock> {
    let builder = KeyedLimiter::<u64, _>::builder(quota)
        .capacity(shape.capacity)
        .seed(seed)
        .clock(clock.clone());
    match shape.shards {
        Some(shards) => builder.shards(shards),
        None => builder,
    }
    .build()
    .unwrap()
}

fn exact_limiter<A: Algorithm>(
    quota: A,
    clock: &ManualClock,
    shape: Shape,
    seed: u64,
) -> KeyedLimiter<u64, A, ManualClock, Exact> {
    let builder = KeyedLimiter::<u64, _>::builder(quota)
        .capacity(shape.capacity)
        .seed(seed)
        .clock(clock.clone())
        .exact_keys();
    match shape.shards {
        Some(shards) => builder.shards(shards),
        None => builder,
    }
    .build()
    .unwrap()
}

/// Runs one schedule on a hashed and on an exact table of each shape, each against its own
/// model.
fn check_both_key_modes<A: Algorithm>(
    quota: A,
    per_call_quotas: &[A],
    start_ns: u64,
    seed: u64,
    events: &[Event],
) -> Result<(), TestCaseError> {
    for shape in [ROOMY, CROWDED] {
        let clock = ManualClock::starting_at(start_ns);
        let limiter: KeyedLimiter<u64, A, ManualClock, Hashed> =
            hashed_limiter(quota, &clock, shape, seed);
        if shape.shards.is_some() {
            prop_assert_eq!(limiter.slots(), 16);
        }
        run_against_model(&limiter, shape, &clock, per_call_quotas, events)?;
        let clock = ManualClock::starting_at(start_ns);
        let limiter = exact_limiter(quota, &clock, shape, seed);
        if shape.shards.is_some() {
            prop_assert_eq!(limiter.slots(), 16);
        }
        run_against_model(&limiter, shape, &clock, per_call_quotas, events)?;
    }
    Ok(())
}

const SECOND_NS: u64 = 1_000_000_000;

fn gcra_per_call_quotas() -> Vec<Gcra> {
    vec![
        // The table's own quota.
        Gcra::per_second(20).unwrap().with_burst(5).unwrap(),
        // Other rates and bursts: rebased onto the table's ticks.
        Gcra::per_second(100).unwrap().with_burst(12).unwrap(),
        Gcra::per_period(3, Duration::from_secs(1)).unwrap(),
        Gcra::per_minute(50).unwrap().with_burst(2).unwrap(),
        Gcra::with_period(Duration::from_nanos(33_333_337)).unwrap(),
    ]
}

fn fixed_window_per_call_quotas() -> Vec<FixedWindow> {
    vec![
        FixedWindow::new(5, Duration::from_millis(100)).unwrap(),
        FixedWindow::new(2, Duration::from_millis(100)).unwrap(),
        FixedWindow::new(9, Duration::from_millis(100)).unwrap(),
        // Another window length: always an error, nothing stored.
        FixedWindow::new(5, Duration::from_millis(150)).unwrap(),
    ]
}

fn sliding_window_per_call_quotas() -> Vec<SlidingWindow> {
    vec![
        SlidingWindow::new(5, Duration::from_millis(100)).unwrap(),
        SlidingWindow::new(2, Duration::from_millis(100)).unwrap(),
        SlidingWindow::new(9, Duration::from_millis(100)).unwrap(),
        SlidingWindow::new(5, Duration::from_secs(1)).unwrap(),
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
        check_both_key_modes(quota, &gcra_per_call_quotas(), start_ns, seed, &events)?;
    }

    #[test]
    fn sliding_window_table_matches_the_model(
        start_ns in 0..100 * SECOND_NS,
        seed in any::<u64>(),
        events in events(5, 4, 100_000_000),
    ) {
        let quota = SlidingWindow::new(5, Duration::from_millis(100)).unwrap();
        check_both_key_modes(quota, &sliding_window_per_call_quotas(), start_ns, seed, &events)?;
    }

    #[test]
    fn fixed_window_table_matches_the_model(
        start_ns in 0..100 * SECOND_NS,
        seed in any::<u64>(),
        events in events(5, 4, 100_000_000),
    ) {
        let quota = FixedWindow::new(5, Duration::from_millis(100)).unwrap();
        check_both_key_modes(quota, &fixed_window_per_call_quotas(), start_ns, seed, &events)?;
    }
}

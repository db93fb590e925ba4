//! The keyed sliding log (`nanolimit::sliding_log::KeyedSlidingLogLimiter`): per key, the same
//! decisions and metadata as a reference log of timestamps, on random schedules over a table
//! that never reuses an entry (readings backward included) and over a table of eight slots
//! shared by twenty keys, whose entries are reclaimed and reused (readings forward); at most the
//! limit in any window of a key's admitted units when readings also step back; exactly the
//! limit per key from threads on a frozen clock; each `WhenFull` policy on a full table; clear
//! errors for bad input; memory that grows with the limit; and exact keys deciding as hashed
//! ones.

use crate::common::sliding_log::{observed, quotas, Expected, ReferenceLog};
use crate::common::{at, proptest_config, DAY_NS, HORIZON_NS, SECOND_NS};
use nanolimit::keyed::{Hashed, KeyMode};
use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog, MAX_KEYED_LIMIT};
use nanolimit::{BuildError, ManualClock, Request, RequestError, WhenFull};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use std::cell::Cell;
use std::hash::Hash;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// Slots of a table of capacity 1 and one shard: one bucket, which every key shares.
const ONE_BUCKET: usize = 8;

/// Keys of the schedules on a table that never reuses an entry.
const FEW_KEYS: u64 = 4;

/// Keys of the schedules on a table of one bucket: more than its slots, so entries are reused.
const MANY_KEYS: u64 = 20;

/// A table of one bucket of 8 slots (capacity 1, one shard) of `u64` keys on a manual clock.
fn one_bucket(quota: SlidingLog, when_full: WhenFull) -> KeyedSlidingLogLimiter<u64, ManualClock> {
    let limiter = KeyedSlidingLogLimiter::<u64>::builder(quota)
        .capacity(1)
        .shards(1)
        .seed(7)
        .when_full(when_full)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert_eq!(limiter.slots(), ONE_BUCKET);
    limiter
}

/// A table large enough that a handful of keys never share or reuse an entry.
fn large_table(quota: SlidingLog) -> KeyedSlidingLogLimiter<u64, ManualClock> {
    KeyedSlidingLogLimiter::<u64>::builder(quota)
        .capacity(1_000)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

// --- The reference ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Operation {
    /// `check_with` of a cost (0 reads the metadata).
    Check(u64),
    /// `check_at` (one unit).
    Unit,
    /// `peek_with` of a cost.
    Peek(u64),
}

impl Operation {
    /// The operation a schedule's `kind` (0..10) and `cost` (any) name, on `quota`.
    fn of(kind: u8, cost: u64, quota: &SlidingLog) -> Operation {
        let cost = cost % (quota.max_cost() + 1);
        match kind {
            0..=4 => Operation::Check(cost),
            5..=7 => Operation::Unit,
            _ => Operation::Peek(cost),
        }
    }

    /// Makes the operation on `key` at `now`.
    fn apply<K: ?Sized, M: KeyMode<K>>(
        self,
        limiter: &KeyedSlidingLogLimiter<K, ManualClock, M>,
        key: &K,
        now: u64,
    ) -> nanolimit::Decision<SlidingLog> {
        let now = at(now);
        match self {
            Operation::Check(cost) => limiter
                .check_with(key, Request::cost(cost).at(now))
                .expect("a cost within the most a request may cost"),
            Operation::Unit => limiter.check_at(key, now),
            Operation::Peek(cost) => limiter
                .peek_with(key, Request::cost(cost).at(now))
                .expect("a cost within the most a request may cost"),
        }
    }

    /// What the reference decides for the operation at `now` (recording what a check admits).
    fn expect(self, reference: &mut ReferenceLog, now: u64) -> Expected {
        match self {
            Operation::Check(cost) => reference.decide(cost, now, true),
            Operation::Unit => reference.decide(1, now, true),
            Operation::Peek(cost) => reference.decide(cost, now, false),
        }
    }

    /// The units a check of this operation would record if admitted.
    fn units(self) -> u64 {
        match self {
            Operation::Check(cost) => cost,
            Operation::Unit => 1,
            Operation::Peek(_) => 0,
        }
    }

    /// The units it asks about, recorded or not.
    fn cost(self) -> u64 {
        match self {
            Operation::Check(cost) | Operation::Peek(cost) => cost,
            Operation::Unit => 1,
        }
    }
}

/// One step of a schedule: (key, reading step in thousandths of the window, kind, cost).
type Move = (u64, i64, u8, u64);

/// The reading after `reading_ns` moved by `step` thousandths of `quota`'s window, clamped to
/// the clock's range.
fn next_reading(reading_ns: u64, step: i64, quota: &SlidingLog) -> u64 {
    let window_ns = quota.window().as_nanos() as i128;
    let moved = reading_ns as i128 + (step as i128 * window_ns) / 1_000;
    moved.clamp(0, HORIZON_NS as i128) as u64
}

/// Steps mostly forward, sometimes backward, sometimes far, over `keys` keys.
fn schedules(keys: u64) -> impl Strategy<Value = Vec<Move>> {
    proptest::collection::vec((0..keys, -400i64..1_200, 0u8..10, 0u64..17), 1..120)
}

/// Steps forward only (often none: several requests at one instant), over `keys` keys.
fn forward_schedules(keys: u64) -> impl Strategy<Value = Vec<Move>> {
    let step = prop_oneof![2 => Just(0i64), 5 => 0i64..1_500];
    proptest::collection::vec((0..keys, step, 0u8..10, 0u64..17), 1..200)
}

// --- Decisions equal the reference's -----------------------------------------------------------

/// Runs `schedule` from `start_ns` on a table that never reuses an entry: every decision and
/// its metadata must be the key's reference log's.
fn run_without_reuse(quota: SlidingLog, schedule: &[Move], start_ns: u64) {
    let limiter = large_table(quota);
    let mut references: Vec<_> = (0..FEW_KEYS).map(|_| ReferenceLog::new(&quota)).collect();
    let mut reading_ns = start_ns;
    for (index, &(key, step, kind, cost)) in schedule.iter().enumerate() {
        reading_ns = next_reading(reading_ns, step, &quota);
        let operation = Operation::of(kind, cost, &quota);
        let decision = operation.apply(&limiter, &key, reading_ns);
        let expected = operation.expect(&mut references[key as usize], reading_ns);
        assert!(!decision.is_untracked(), "step {index}: untracked");
        assert_eq!(
            observed(&decision),
            expected,
            "step {index}: {operation:?} of key {key} at {reading_ns} ns on {quota:?}"
        );
    }
    let stats = limiter.stats();
    assert_eq!((stats.reclaims, stats.evictions), (0, 0));
}

proptest! {
    #![proptest_config(proptest_config(300))]

    /// Each key's decisions and metadata (allowed, remaining, reset-after, retry-after, the
    /// time judged at) are those of its own exact log, readings backward included, on a table
    /// that keeps every key: keys do not leak units into each other's logs.
    #[test]
    fn each_key_decides_as_its_reference_log_on_a_table_that_keeps_every_key(
        quota in proptest::sample::select(quotas()),
        schedule in schedules(FEW_KEYS),
        start_ns in prop_oneof![Just(0u64), 0..DAY_NS, Just(HORIZON_NS / 2)],
    ) {
        run_without_reuse(quota, &schedule, start_ns);
    }
}

/// Runs `schedule` (forward readings) on a table of one bucket under `WhenFull::Deny`: every
/// decision the table tracked must be the key's reference log's, whose history the table may
/// have forgotten (all of it had left the window when the entry was reused). Returns the
/// table's reclaims.
fn run_with_reuse(quota: SlidingLog, schedule: &[Move]) -> u64 {
    let limiter = one_bucket(quota, WhenFull::Deny);
    let mut references: Vec<_> = (0..MANY_KEYS).map(|_| ReferenceLog::new(&quota)).collect();
    let mut reading_ns = SECOND_NS;
    let mut refused = 0;
    for (index, &(key, step, kind, cost)) in schedule.iter().enumerate() {
        assert!(step >= 0);
        reading_ns = next_reading(reading_ns, step, &quota);
        let operation = Operation::of(kind, cost, &quota);
        let decision = operation.apply(&limiter, &key, reading_ns);
        let context = format!("step {index}: {operation:?} of key {key} at {reading_ns} ns");
        if decision.is_untracked() {
            // A new key the full table refuses: nothing recorded, the reference unchanged (a
            // request of no units asks for nothing, and passes, as on every limiter).
            let asks_nothing = operation.cost() == 0;
            assert_eq!(decision.is_allowed(), asks_nothing, "{context}: untracked");
            assert_eq!(decision.remaining(), 0, "{context}");
            assert!(decision.retry_after() <= quota.window(), "{context}");
            refused += u64::from(operation.units() > 0);
            continue;
        }
        let expected = operation.expect(&mut references[key as usize], reading_ns);
        assert_eq!(observed(&decision), expected, "{context} on {quota:?}");
        assert!(limiter.entries() <= ONE_BUCKET);
    }
    assert_eq!(limiter.stats().refused_new_keys, refused);
    assert_eq!(limiter.stats().evictions, 0);
    limiter.stats().reclaims
}

/// On a table of eight slots shared by twenty keys, entries are reclaimed and reused; with
/// readings that never step back, every decision the table tracks is still exactly the key's
/// reference log's: a key that comes back after losing its entry gets what its whole history
/// allows (all of it has left the window), and a key in a reused entry inherits nothing.
#[test]
fn with_entries_reused_and_forward_readings_each_tracked_decision_is_the_reference_logs() {
    let reclaims = Cell::new(0u64);
    let mut runner = TestRunner::new(proptest_config(300));
    let strategy = (
        proptest::sample::select(quotas()),
        forward_schedules(MANY_KEYS),
    );
    runner
        .run(&strategy, |(quota, schedule)| {
            reclaims.set(reclaims.get() + run_with_reuse(quota, &schedule));
            Ok(())
        })
        .unwrap();
    // The schedules did reuse entries (else the test would show nothing about reuse).
    assert!(reclaims.get() > 300, "{} reclaims", reclaims.get());
}

/// Runs `schedule` (readings backward and forward) on a table of one bucket under
/// `WhenFull::Deny`, and checks each key's admitted units: in any window `(t − W, t]` of the
/// times they were judged at (what they are recorded at), at most the limit. Returns the
/// table's reclaims.
fn run_with_reuse_and_stale_readings(quota: SlidingLog, schedule: &[Move]) -> u64 {
    let limiter = one_bucket(quota, WhenFull::Deny);
    let window_ns = quota.window().as_nanos() as u64;
    let mut admitted: Vec<Vec<(u64, u64, usize)>> = vec![Vec::new(); MANY_KEYS as usize];
    let mut reading_ns = DAY_NS;
    for (index, &(key, step, kind, cost)) in schedule.iter().enumerate() {
        reading_ns = next_reading(reading_ns, step, &quota);
        let operation = Operation::of(kind, cost, &quota);
        let decision = operation.apply(&limiter, &key, reading_ns);
        assert!(
            decision.judged_at().as_ns() >= reading_ns,
            "step {index}: judged before its reading"
        );
        if decision.is_allowed() && operation.units() > 0 {
            assert!(!decision.is_untracked(), "step {index}: allowed untracked");
            let units = operation.units();
            admitted[key as usize].push((decision.judged_at().as_ns(), units, index));
        }
    }
    for (key, units) in admitted.iter_mut().enumerate() {
        units.sort_unstable();
        // A sliding sum over (t − W, t] at every admitted time t.
        let (mut first, mut in_window) = (0, 0);
        for last in 0..units.len() {
            in_window += units[last].1;
            while units[first].0 + window_ns <= units[last].0 {
                in_window -= units[first].1;
                first += 1;
            }
            assert!(
                in_window <= quota.limit(),
                "key {key}: {in_window} units in the window ending at {} ns on {quota:?} \
                 (admitted as (judged at, units, step): {:?})",
                units[last].0,
                &units[first..=last]
            );
        }
    }
    limiter.stats().reclaims
}

/// Readings that step back (a timestamp taken before a preemption) on a table whose entries
/// are reused: no key is ever admitted more than the limit in any window of the times its
/// units were judged at, which is the exactness a user of a per-key log relies on.
#[test]
fn with_entries_reused_and_stale_readings_no_key_exceeds_the_limit_in_any_window() {
    let reclaims = Cell::new(0u64);
    let mut runner = TestRunner::new(proptest_config(300));
    let strategy = (proptest::sample::select(quotas()), schedules(MANY_KEYS));
    runner
        .run(&strategy, |(quota, schedule)| {
            reclaims.set(reclaims.get() + run_with_reuse_and_stale_readings(quota, &schedule));
            Ok(())
        })
        .unwrap();
    assert!(reclaims.get() > 300, "{} reclaims", reclaims.get());
}

/// The smallest case of the property above, spelled out: a key whose entry was reclaimed (its
/// one unit had left the window at the reclaiming key's reading, 120 s) comes back with a
/// reading taken 1 s before that (a timestamp read before a preemption). Its unit at 60 s is
/// still in the window `(59 s, 119 s]` at that reading, so with a limit of 1 per minute it must
/// be denied, or judged at a time its unit has left (120 s or later), not admitted at 119 s.
#[test]
fn a_key_whose_entry_was_reclaimed_is_not_readmitted_by_a_reading_behind_the_reclaim() {
    let quota = SlidingLog::new(1, Duration::from_secs(60)).unwrap();
    let limiter = one_bucket(quota, WhenFull::Deny);
    let s = SECOND_NS;
    for key in 0..8 {
        assert!(limiter.check_at(&key, at(0)).is_allowed());
    }
    // Key 8 reclaims an entry whose unit has left (a slot's first reclaimable entry: slot 0's).
    let first = limiter.check_at(&8, at(60 * s));
    assert!(first.is_allowed() && !first.is_untracked());
    // At 120 s key 8's unit has left too: key 9 reclaims key 8's entry (the first again).
    assert!(!limiter.check_at(&9, at(120 * s)).is_untracked());
    assert_eq!(limiter.stats().reclaims, 2);
    // Key 8 had one unit at 60 s: at 119 s its log is full.
    let stale = limiter.check_at(&8, at(119 * s));
    assert!(
        stale.is_denied() || stale.judged_at() >= at(120 * s),
        "key 8 admitted again at {} s (untracked: {}), with its unit at 60 s still in the \
         window: 2 units in (59 s, 119 s] for a limit of 1",
        stale.judged_at().as_ns() / s,
        stale.is_untracked()
    );
}

// --- Threads on a frozen clock -----------------------------------------------------------------

/// The units admitted per key when `threads` threads check `keys` keys on one frozen reading,
/// with costs cycling through `costs`, each thread stopping on a key once a request of the
/// largest cost is denied there (so at most that cost less one unit is left unused).
fn admitted_per_key_on_a_frozen_clock(
    limiter: &Arc<KeyedSlidingLogLimiter<u64, ManualClock>>,
    threads: u64,
    keys: u64,
    costs: &'static [u64],
    round: u64,
) -> Vec<u64> {
    let limit = limiter.quota().limit();
    let max_cost = *costs.iter().max().unwrap();
    let admitted: Arc<Vec<AtomicU64>> = Arc::new((0..keys).map(|_| AtomicU64::new(0)).collect());
    let barrier = Arc::new(Barrier::new(threads as usize));
    let workers: Vec<_> = (0..threads)
        .map(|thread| {
            let (limiter, admitted, barrier) = (limiter.clone(), admitted.clone(), barrier.clone());
            std::thread::spawn(move || {
                let now = at(DAY_NS);
                let mut attempts = vec![0u64; keys as usize];
                let mut done = vec![false; keys as usize];
                barrier.wait();
                while done.iter().any(|&done| !done) {
                    for offset in 0..keys {
                        // Odd rounds: every thread starts on the same key (racing inserts).
                        let key = (offset + if round % 2 == 1 { 0 } else { thread }) % keys;
                        let index = key as usize;
                        if done[index] {
                            continue;
                        }
                        let cost =
                            costs[((attempts[index] + thread + round) as usize) % costs.len()];
                        attempts[index] += 1;
                        assert!(
                            attempts[index] <= 4 * limit + 4 * costs.len() as u64,
                            "key {key} never denied a request of {max_cost}"
                        );
                        let decision = limiter
                            .check_with(&key, Request::cost(cost).at(now))
                            .unwrap();
                        assert!(!decision.is_untracked());
                        if decision.is_allowed() {
                            admitted[index].fetch_add(cost, Ordering::Relaxed);
                        } else if cost == max_cost {
                            done[index] = true;
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    admitted
        .iter()
        .map(|units| units.load(Ordering::Relaxed))
        .collect()
}

/// After the threads: what the table says of each key agrees with the units admitted to it.
fn assert_each_key_has_what_was_admitted(
    limiter: &KeyedSlidingLogLimiter<u64, ManualClock>,
    admitted: &[u64],
) {
    let limit = limiter.quota().limit();
    let now = at(DAY_NS);
    for (key, &units) in (0u64..).zip(admitted) {
        let peek = limiter.peek_with(&key, Request::cost(1).at(now)).unwrap();
        assert_eq!(peek.remaining(), limit - units, "key {key}");
        assert_eq!(peek.is_allowed(), units < limit, "key {key}");
    }
}

/// Threads racing over a few keys on one frozen reading admit exactly the limit per key: no
/// key gets one unit more (the log is exact under contention, inserts of a new key racing
/// included) and none gets one fewer (a lost race never denies what fits).
#[test]
fn threads_on_a_frozen_clock_admit_exactly_the_limit_per_key() {
    let (threads, keys) = (4, 8);
    for limit in [1u64, 5, 16, 37] {
        let quota = SlidingLog::new(limit, Duration::from_secs(60)).unwrap();
        for round in 0..8 {
            for tiny in [false, true] {
                // Eight keys fill the one bucket's eight slots exactly: inserts race there.
                let limiter = Arc::new(match tiny {
                    false => large_table(quota),
                    true => one_bucket(quota, WhenFull::Deny),
                });
                let admitted =
                    admitted_per_key_on_a_frozen_clock(&limiter, threads, keys, &[1], round);
                assert!(
                    admitted.iter().all(|&units| units == limit),
                    "limit {limit}, round {round}, one bucket {tiny}: admitted {admitted:?}"
                );
                assert_eq!(limiter.entries(), keys as usize);
                assert_each_key_has_what_was_admitted(&limiter, &admitted);
            }
        }
    }
}

/// With requests of several units racing on a frozen reading: a key never gets more than the
/// limit, exactly the limit when every request costs a divisor of it, and at most the largest
/// cost less one unit short of it otherwise (a request that does not fit is denied whole).
#[test]
fn threads_on_a_frozen_clock_admit_requests_of_several_units_up_to_the_limit_per_key() {
    let (threads, keys) = (4, 8);
    let cases: [(u64, &'static [u64]); 6] = [
        (16, &[4]),
        (36, &[3]),
        (32, &[16]),
        (5, &[2, 3]),
        (37, &[1, 2, 3, 4]),
        (100, &[16, 1, 7]),
    ];
    for (limit, costs) in cases {
        let quota = SlidingLog::new(limit, Duration::from_secs(60)).unwrap();
        let max_cost = *costs.iter().max().unwrap();
        let divides = costs.iter().all(|&cost| limit % cost == 0);
        for round in 0..8 {
            let limiter = Arc::new(large_table(quota));
            let admitted =
                admitted_per_key_on_a_frozen_clock(&limiter, threads, keys, costs, round);
            for (key, &units) in admitted.iter().enumerate() {
                let context = format!("limit {limit}, costs {costs:?}, round {round}, key {key}");
                assert!(units <= limit, "{context}: {units} admitted");
                if divides && costs.len() == 1 {
                    assert_eq!(units, limit, "{context}");
                } else {
                    assert!(units + max_cost > limit, "{context}: {units} admitted");
                }
            }
            assert_each_key_has_what_was_admitted(&limiter, &admitted);
        }
    }
}

// --- Full tables -------------------------------------------------------------------------------

/// Under `WhenFull::Deny`, a new key on a table of live entries is refused without an entry,
/// told to come back when the first slot can be reused: when the slot whose *latest* unit is
/// oldest has no unit left in the window (not when the oldest unit of all leaves).
#[test]
fn a_full_table_under_deny_refuses_a_new_key_until_the_soonest_slot_empties() {
    let quota = SlidingLog::new(2, Duration::from_secs(60)).unwrap();
    let limiter = one_bucket(quota, WhenFull::Deny);
    let s = SECOND_NS;
    // Key 0 holds the oldest unit (0 s) but a later one (5 s); key 1's only unit is at 2 s.
    assert!(limiter.check_at(&0, at(0)).is_allowed());
    assert!(limiter.check_at(&0, at(5 * s)).is_allowed());
    assert!(limiter.check_at(&1, at(2 * s)).is_allowed());
    for key in 2..8 {
        assert!(limiter.check_at(&key, at((key + 4) * s)).is_allowed());
    }
    assert_eq!(limiter.entries(), ONE_BUCKET);

    let refused = limiter.check_at(&100, at(20 * s));
    assert!(refused.is_denied() && refused.is_untracked());
    assert_eq!(refused.remaining(), 0);
    // Key 1's unit at 2 s leaves at 62 s; then the new key gets its whole limit (the headers
    // must not say "reset now, retry in 42 s").
    assert_eq!(refused.retry_after(), Duration::from_secs(42));
    assert_eq!(refused.reset_after(), Duration::from_secs(42));
    assert_eq!(refused.headers().reset_seconds, 42);
    let peeked = limiter
        .peek_with(&100, Request::cost(1).at(at(20 * s)))
        .unwrap();
    assert!(peeked.is_denied() && peeked.is_untracked());
    assert_eq!(peeked.retry_after(), Duration::from_secs(42));
    assert_eq!(limiter.entries(), ONE_BUCKET);
    let stats = limiter.stats();
    assert_eq!(
        (stats.inserts, stats.refused_new_keys, stats.reclaims),
        (8, 1, 0)
    );
    // Keys the table holds are judged on their own logs.
    let second = limiter.check_at(&3, at(20 * s));
    assert!(second.is_allowed() && !second.is_untracked());
    assert_eq!(second.remaining(), 0);

    // One nanosecond early, still refused; on time, admitted into key 1's slot.
    let early = limiter.check_at(&100, at(62 * s - 1));
    assert!(early.is_denied() && early.is_untracked());
    assert_eq!(early.retry_after(), Duration::from_nanos(1));
    let admitted = limiter.check_at(&100, at(62 * s));
    assert!(admitted.is_allowed() && !admitted.is_untracked());
    assert_eq!(admitted.remaining(), 1);
    assert_eq!(limiter.stats().reclaims, 1);
    assert_eq!(limiter.entries(), ONE_BUCKET);
    // Key 1 lost its entry, whose unit had left: it is now the one refused.
    assert!(limiter.check_at(&1, at(62 * s)).is_untracked());
}

/// Under `WhenFull::Allow`, a new key on a table of live entries is admitted untracked, every
/// time, and no entry is created for it: the keys the table holds keep their logs.
#[test]
fn a_full_table_under_allow_admits_a_new_key_untracked_without_an_entry() {
    let quota = SlidingLog::new(3, Duration::from_secs(60)).unwrap();
    let limiter = one_bucket(quota, WhenFull::Allow);
    for key in 0..8 {
        assert!(limiter.check_at(&key, at(key * SECOND_NS)).is_allowed());
    }
    let now = at(10 * SECOND_NS);
    for _ in 0..5 {
        let untracked = limiter.check_at(&100, now);
        assert!(untracked.is_allowed() && untracked.is_untracked());
        assert_eq!(untracked.remaining(), 2);
        assert_eq!(untracked.retry_after(), Duration::ZERO);
    }
    let several = limiter.check_with(&100, Request::cost(3).at(now)).unwrap();
    assert!(several.is_allowed() && several.is_untracked());
    assert_eq!(several.remaining(), 0);
    assert_eq!(limiter.entries(), ONE_BUCKET);
    let stats = limiter.stats();
    assert_eq!(
        (stats.inserts, stats.untracked_new_keys, stats.evictions),
        (8, 6, 0)
    );
    // The tracked keys were not charged for the untracked ones.
    for key in 0..8 {
        let decision = limiter.check_at(&key, now);
        assert!(decision.is_allowed() && !decision.is_untracked());
        assert_eq!(decision.remaining(), 1);
    }
}

/// Under `WhenFull::EvictClosestToFresh`, a new key takes the entry whose latest unit is oldest
/// and inherits its log: with a limit of 2 and one unit in that log, the new key gets exactly
/// one admission until that unit leaves the window.
#[test]
fn eviction_takes_the_entry_whose_latest_unit_is_oldest_and_the_new_key_inherits_its_units() {
    let quota = SlidingLog::new(2, Duration::from_secs(60)).unwrap();
    let limiter = one_bucket(quota, WhenFull::EvictClosestToFresh);
    let s = SECOND_NS;
    // Key 0's one unit, at 0 s, is the oldest latest unit.
    for key in 0..8 {
        assert!(limiter.check_at(&key, at(key * s)).is_allowed());
    }
    let first = limiter.check_at(&100, at(30 * s));
    assert!(first.is_allowed() && !first.is_untracked());
    assert_eq!(first.remaining(), 0);
    let stats = limiter.stats();
    assert_eq!(
        (stats.evictions, stats.inserts, stats.refused_new_keys),
        (1, 9, 0)
    );
    assert_eq!(limiter.entries(), ONE_BUCKET);

    let second = limiter.check_at(&100, at(30 * s));
    assert!(second.is_denied() && !second.is_untracked());
    // The inherited unit, at 0 s, leaves at 60 s.
    assert_eq!(second.retry_after(), Duration::from_secs(30));
    assert!(limiter.check_at(&100, at(60 * s - 1)).is_denied());
    assert!(limiter.check_at(&100, at(60 * s)).is_allowed());
    assert!(limiter.check_at(&100, at(60 * s)).is_denied());
    // The keys not evicted kept their logs: key 1 still has one unit (at 1 s) in the window.
    let key_1 = limiter.check_at(&1, at(30 * s));
    assert!(key_1.is_allowed() && !key_1.is_untracked());
    assert!(limiter.check_at(&1, at(30 * s)).is_denied());
    assert_eq!(limiter.stats().evictions, 1);
}

/// Under `WhenFull::EvictClosestToFresh`, a new key whose check the inherited log would deny is
/// refused (denied, untracked), and the entry is not evicted: its key keeps its log.
#[test]
fn eviction_refuses_a_new_key_that_the_inherited_log_would_deny() {
    let quota = SlidingLog::new(2, Duration::from_secs(60)).unwrap();
    let limiter = one_bucket(quota, WhenFull::EvictClosestToFresh);
    let s = SECOND_NS;
    // Key 0 spent its limit at 0 s: the oldest latest unit, and a full log.
    assert!(limiter
        .check_with(&0, Request::cost(2).at(at(0)))
        .unwrap()
        .is_allowed());
    for key in 1..8 {
        assert!(limiter.check_at(&key, at(key * s)).is_allowed());
    }
    let refused = limiter.check_at(&100, at(30 * s));
    assert!(refused.is_denied() && refused.is_untracked());
    assert_eq!(refused.remaining(), 0);
    // The units at 0 s leave at 60 s.
    assert_eq!(refused.retry_after(), Duration::from_secs(30));
    let stats = limiter.stats();
    assert_eq!(
        (stats.evictions, stats.refused_new_keys, stats.inserts),
        (0, 1, 8)
    );
    // Key 0 still holds its entry and its log.
    let key_0 = limiter.check_at(&0, at(30 * s));
    assert!(key_0.is_denied() && !key_0.is_untracked());
    assert_eq!(key_0.retry_after(), Duration::from_secs(30));
    // Once key 0's units have left, its entry is reclaimed (not evicted) for the new key.
    let admitted = limiter.check_at(&100, at(60 * s));
    assert!(admitted.is_allowed() && !admitted.is_untracked());
    assert_eq!(admitted.remaining(), 1);
    let stats = limiter.stats();
    assert_eq!((stats.evictions, stats.reclaims), (0, 1));
}

// --- Bad input -----------------------------------------------------------------------------------

#[test]
fn a_limit_above_the_keyed_maximum_and_a_zero_capacity_are_errors() {
    let too_large = SlidingLog::per_minute(MAX_KEYED_LIMIT + 1).unwrap();
    assert_eq!(
        KeyedSlidingLogLimiter::<u64>::new(too_large, 100).unwrap_err(),
        BuildError::LimitTooLarge {
            limit: MAX_KEYED_LIMIT + 1,
            max: MAX_KEYED_LIMIT
        }
    );
    let largest = SlidingLog::per_minute(MAX_KEYED_LIMIT).unwrap();
    let limiter = KeyedSlidingLogLimiter::<u64>::builder(largest)
        .capacity(10)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for _ in 0..MAX_KEYED_LIMIT / 16 {
        assert!(limiter
            .check_with(&1, Request::cost(16))
            .unwrap()
            .is_allowed());
    }
    assert!(limiter.check(&1).is_denied());
    assert!(limiter.check(&2).is_allowed());

    let quota = SlidingLog::per_minute(5).unwrap();
    assert_eq!(
        KeyedSlidingLogLimiter::<u64>::new(quota, 0).unwrap_err(),
        BuildError::ZeroCapacity
    );
    assert_eq!(
        KeyedSlidingLogLimiter::<u64>::builder(quota)
            .shards(3)
            .build()
            .unwrap_err(),
        BuildError::ShardsNotPowerOfTwo { shards: 3 }
    );
}

/// A cost above the most a request may cost (the limit, and at most 16) is an error from checks
/// and peeks alike, recording nothing and inserting no key.
#[test]
fn a_cost_above_the_most_a_request_may_cost_is_an_error_that_records_nothing() {
    for (limit, max_cost) in [(5u64, 5u64), (100, 16)] {
        let quota = SlidingLog::per_minute(limit).unwrap();
        let limiter = large_table(quota);
        let error = RequestError::CostAboveLimit {
            cost: max_cost + 1,
            limit: max_cost,
        };
        let too_much = Request::cost(max_cost + 1).at(at(SECOND_NS));
        assert_eq!(limiter.check_with(&1, too_much).unwrap_err(), error);
        assert_eq!(limiter.peek_with(&1, too_much).unwrap_err(), error);
        assert!(limiter.check_with(&1, Request::cost(u64::MAX)).is_err());
        assert_eq!(limiter.entries(), 0);
        assert_eq!(limiter.stats().inserts, 0);

        let two = limiter
            .check_with(&1, Request::cost(2).at(at(SECOND_NS)))
            .unwrap();
        assert_eq!((two.is_allowed(), two.remaining()), (true, limit - 2));
        assert_eq!(limiter.check_with(&1, too_much).unwrap_err(), error);
        assert_eq!(limiter.peek_with(&1, too_much).unwrap_err(), error);
        // Nothing was recorded by the errors.
        let after = limiter
            .peek_with(&1, Request::cost(0).at(at(SECOND_NS)))
            .unwrap();
        assert_eq!(after.remaining(), limit - 2);
        assert_eq!(limiter.entries(), 1);
    }
}

/// Peeks, and checks of no units, read without inserting: a key only gets an entry when a
/// check records a unit for it.
#[test]
fn peeks_and_checks_of_no_units_never_insert_a_key() {
    let quota = SlidingLog::per_minute(3).unwrap();
    let limiter = large_table(quota);
    let now = at(SECOND_NS);
    for key in 0..50u64 {
        let peek = limiter.peek_with(&key, Request::cost(3).at(now)).unwrap();
        assert!(peek.is_allowed() && !peek.is_untracked());
        assert_eq!((peek.remaining(), peek.reset_after()), (3, Duration::ZERO));
        assert!(limiter.peek(&key).is_allowed());
        let nothing = limiter.check_with(&key, Request::cost(0).at(now)).unwrap();
        assert_eq!(nothing.remaining(), 3);
    }
    assert_eq!(limiter.entries(), 0);
    assert_eq!(limiter.stats().inserts, 0);
    assert!(limiter.check_at(&7, now).is_allowed());
    assert_eq!(limiter.entries(), 1);
    let peek = limiter.peek_with(&7, Request::cost(3).at(now)).unwrap();
    assert!(peek.is_denied());
    assert_eq!(
        (peek.remaining(), peek.reset_after()),
        (2, Duration::from_secs(60))
    );
}

// --- Memory ----------------------------------------------------------------------------------------

/// Memory is fixed at construction and grows with the limit: every slot has a ring of
/// `L.next_power_of_two()` records of 8 bytes beside the table.
#[test]
fn memory_includes_a_ring_of_records_per_slot_and_grows_with_the_limit() {
    let build = |limit| {
        KeyedSlidingLogLimiter::<u64>::new(SlidingLog::per_minute(limit).unwrap(), 1_000).unwrap()
    };
    let (four, five, large) = (build(4), build(5), build(512));
    let slots = four.slots();
    assert!(slots >= 1_000);
    assert_eq!((five.slots(), large.slots()), (slots, slots));
    for (limiter, limit) in [(&four, 4usize), (&five, 5), (&large, 512)] {
        let records = slots * 8 * limit.next_power_of_two();
        assert!(limiter.memory_bytes() > records, "limit {limit}");
        let capacity = limiter.capacity();
        assert_eq!(capacity, 1_000);
        assert_eq!(
            limiter.bytes_per_key(),
            (limiter.memory_bytes() + capacity / 2) / capacity
        );
        assert!(limiter.bytes_per_key() >= records / capacity);
    }
    // The same table, with larger rings: the difference is the records alone.
    assert_eq!(
        large.memory_bytes() - four.memory_bytes(),
        slots * 8 * (512 - 4)
    );
    // A limit of 5 takes rings of 8.
    assert_eq!(
        five.memory_bytes() - four.memory_bytes(),
        slots * 8 * (8 - 4)
    );
    assert!(large.bytes_per_key() > four.bytes_per_key());
}

// --- Exact keys ----------------------------------------------------------------------------------

/// Runs one schedule on a hashed and an exact table of the same keys and on per-key references:
/// all three decide alike.
fn assert_exact_keys_decide_as_hashed<K: Hash + nanolimit::keyed::ExactKey>(
    keys: &[K],
    quota: SlidingLog,
) where
    Hashed: KeyMode<K>,
{
    let hashed = KeyedSlidingLogLimiter::<K>::builder(quota)
        .capacity(100)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let exact = KeyedSlidingLogLimiter::<K>::builder(quota)
        .capacity(100)
        .clock(ManualClock::new())
        .exact_keys()
        .build()
        .unwrap();
    let mut references: Vec<_> = keys.iter().map(|_| ReferenceLog::new(&quota)).collect();
    let mut reading_ns = SECOND_NS;
    for step in 0..400u64 {
        // A fixed pseudo-random walk: mostly forward, sometimes back.
        let mix = step.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        reading_ns = next_reading(reading_ns, (mix % 900) as i64 - 200, &quota);
        let key = (mix / 7) as usize % keys.len();
        let operation = Operation::of((mix / 11 % 10) as u8, mix / 13, &quota);
        let from_hashed = operation.apply(&hashed, &keys[key], reading_ns);
        let from_exact = operation.apply(&exact, &keys[key], reading_ns);
        let expected = operation.expect(&mut references[key], reading_ns);
        assert_eq!(observed(&from_hashed), expected, "step {step}: hashed");
        assert_eq!(observed(&from_exact), expected, "step {step}: exact");
        assert!(!from_exact.is_untracked());
    }
    assert_eq!(exact.entries(), keys.len());
    assert_eq!(hashed.entries(), keys.len());
}

/// Exact keys (`u64` ids, IPv4 addresses) get the same decisions as hashed ones, each key its
/// own log.
#[test]
fn exact_keys_decide_as_hashed_keys_and_as_the_reference() {
    let quota = SlidingLog::new(3, Duration::from_nanos(1_000)).unwrap();
    assert_exact_keys_decide_as_hashed(&[0u64, 1, u64::MAX, 1 << 40], quota);
    let addresses = [
        Ipv4Addr::LOCALHOST,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::BROADCAST,
    ];
    let quota = SlidingLog::new(5, Duration::from_nanos(777)).unwrap();
    assert_exact_keys_decide_as_hashed(&addresses, quota);

    // And the exact table's limit per key, on its own.
    let limiter = KeyedSlidingLogLimiter::<Ipv4Addr>::builder(SlidingLog::per_minute(2).unwrap())
        .capacity(10)
        .clock(ManualClock::new())
        .exact_keys()
        .build()
        .unwrap();
    let client = Ipv4Addr::new(192, 0, 2, 7);
    assert!(limiter.check(&client).is_allowed());
    assert!(limiter.check(&client).is_allowed());
    let denied = limiter.check(&client);
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_secs(60));
    assert!(limiter.check(&Ipv4Addr::new(192, 0, 2, 8)).is_allowed());
}

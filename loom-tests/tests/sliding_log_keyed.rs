//! Loom models of the keyed sliding log (src/sliding_log/slots.rs): each slot of the keyed table
//! has a log (the ring of records beside the table, the slot's state word as the log's
//! position); a check of a present key runs the direct log's protocol on its slot, and an
//! inserter that reuses a slot (reclaim, eviction) claims its state word, *seals* the position
//! it holds (rewrites the record a request starting there would replace), then gives the slot
//! to the new key, unless a request of the old key started there first, which then stands.
//!
//! The models race a check of the old key against the insert that takes its slot, and two
//! inserts of one new key. Every model asserts, per key, on the times the decisions were judged
//! at, that no window `(t − 10, t]` holds more than the limit (the units admitted before the
//! threads included), and that a key whose check was admitted finds that unit in its own log
//! afterwards. Mutants each model catches are listed in loom-tests/README.md.
//!
//! Tables have one shard and one bucket (capacity 1: 8 slots), `Exact` keys and a fixed seed.
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test sliding_log_keyed`

use loom::sync::Arc;
use nanolimit::keyed::Exact;
use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
use nanolimit::{ManualClock, Request, WhenFull};
use nanolimit_loom_tests::{
    at, explore, run_concurrently, Bounds, ModelThread, UNREACHED_PREEMPTION_BOUND,
};
use std::time::Duration;

/// The window of every model, in nanoseconds.
const WINDOW_NS: u64 = 10;

/// The key whose slot is taken, and the new key taking it.
const OLD_KEY: u64 = 100;
const NEW_KEY: u64 = 200;
/// Keys that hold the table's other seven slots, with units in the window throughout.
const LIVE_KEYS: std::ops::Range<u64> = 101..108;

type Limiter = KeyedSlidingLogLimiter<u64, ManualClock, Exact>;

/// The bound of the models where a check races an insert that takes its key's slot: their
/// executions pass through the insert path's survey of eight slots, and unbounded they run for
/// over 25 minutes. Four preemptions let the check be preempted between each of its loads and
/// the next, and the insert between its claim, seal and publish (40 s for the three races
/// for the old key's slot; the default run explores those within 3, and the returning key's
/// model, a second at 4, within 4).
const RACES_WITH_AN_INSERT: usize = 4;

/// One request a thread makes: `cost` units for `key`, read at `reading_ns`.
#[derive(Debug, Clone, Copy)]
struct Check {
    key: u64,
    cost: u64,
    reading_ns: u64,
}

/// What a request got.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    key: u64,
    allowed: bool,
    untracked: bool,
    cost: u64,
    judged_ns: u64,
}

fn perform(limiter: &Limiter, check: Check) -> Outcome {
    let decision = limiter
        .check_with(
            &check.key,
            Request::cost(check.cost).at(at(check.reading_ns)),
        )
        .expect("a cost the quota allows");
    Outcome {
        key: check.key,
        allowed: decision.is_allowed(),
        untracked: decision.is_untracked(),
        cost: check.cost,
        judged_ns: decision.judged_at().as_ns(),
    }
}

/// A one-bucket table of `limit` units per window, after `before` (key, cost, reading) checks,
/// each of which must pass.
fn limiter(limit: u64, when_full: WhenFull, before: &[(u64, u64, u64)]) -> Arc<Limiter> {
    let quota = SlidingLog::new(limit, Duration::from_nanos(WINDOW_NS)).unwrap();
    let limiter = KeyedSlidingLogLimiter::<u64>::builder(quota)
        .capacity(1)
        .shards(1)
        .seed(7)
        .when_full(when_full)
        .clock(ManualClock::new())
        .exact_keys()
        .build()
        .expect("a one-bucket table");
    assert_eq!(limiter.slots(), 8);
    for &(key, cost, reading_ns) in before {
        let decision = limiter
            .check_with(&key, Request::cost(cost).at(at(reading_ns)))
            .unwrap();
        assert!(decision.is_allowed(), "setup check of key {key} denied");
    }
    Arc::new(limiter)
}

/// Per key: at most `limit` units admitted in any window ending at an admitted unit's time,
/// counting the units admitted before the threads (`before`).
fn assert_no_window_holds_more_than(
    limit: u64,
    before: &[(u64, u64, u64)],
    outcomes: &[Vec<Outcome>],
) {
    let mut admitted: Vec<(u64, u64, u64)> = before.to_vec();
    admitted.extend(
        outcomes
            .iter()
            .flatten()
            .filter(|outcome| outcome.allowed && !outcome.untracked)
            .map(|outcome| (outcome.key, outcome.cost, outcome.judged_ns)),
    );
    for &(key, _, end_ns) in &admitted {
        let in_window: u64 = admitted
            .iter()
            .filter(|&&(other, _, time_ns)| {
                other == key && time_ns <= end_ns && time_ns + WINDOW_NS > end_ns
            })
            .map(|&(_, cost, _)| cost)
            .sum();
        assert!(
            in_window <= limit,
            "key {key}: {in_window} units in the window ending at {end_ns}: {outcomes:?}"
        );
    }
}

/// Exactly one of the two racing keys was admitted, tracked, and the other refused by the full
/// table; the admitted key's log then holds its units: a further `probe_cost` at the same time
/// is denied, judged on that key's own entry (not as a new key).
fn assert_one_admitted_into_its_own_log(
    limiter: &Limiter,
    outcomes: &[Vec<Outcome>],
    probe_cost: u64,
) {
    let admitted: Vec<&Outcome> = outcomes.iter().flatten().filter(|o| o.allowed).collect();
    assert_eq!(admitted.len(), 1, "not exactly one admitted: {outcomes:?}");
    let winner = admitted[0];
    assert!(!winner.untracked, "{outcomes:?}");
    let refused = outcomes.iter().flatten().find(|o| !o.allowed).unwrap();
    assert!(
        refused.untracked,
        "the loser was not refused by the full table: {outcomes:?}"
    );
    let probe = limiter
        .peek_with(
            &winner.key,
            Request::cost(probe_cost).at(at(winner.judged_ns)),
        )
        .unwrap();
    assert!(
        probe.is_denied() && !probe.is_untracked(),
        "key {}: its admitted units are not in its own log: {outcomes:?}",
        winner.key
    );
}

/// The setup of the reclaim models: the old key's `old_units` at 0, and every other slot's key
/// with `live_units` at 5 (in the window at 10, when the old key's have left).
fn reclaim_setup(old_units: u64, live_units: u64) -> Vec<(u64, u64, u64)> {
    let mut before = vec![(OLD_KEY, old_units, 0)];
    before.extend(LIVE_KEYS.map(|key| (key, live_units, 5)));
    before
}

/// A race for the old key's slot: on a one-bucket table of `limit` units set up by `before`
/// (the old key's units, and every other slot's key live), the old key checks `old_cost` units
/// while the new key checks one, both read at `reading_ns`. Exactly one is admitted, into its
/// own log; the other is refused by the full table.
fn race_for_the_old_key_s_slot(
    name: &'static str,
    limit: u64,
    when_full: WhenFull,
    before: Vec<(u64, u64, u64)>,
    old_cost: u64,
    reading_ns: u64,
) {
    let bounds = Bounds {
        default: 3,
        exhaustive: RACES_WITH_AN_INSERT,
    };
    explore(name, bounds, move || {
        let limiter = limiter(limit, when_full, &before);
        let check = |key, cost| Check {
            key,
            cost,
            reading_ns,
        };
        let plans = vec![vec![check(OLD_KEY, old_cost)], vec![check(NEW_KEY, 1)]];
        let outcomes = run_concurrently(ModelThread::OnlyJoins, &limiter, plans, perform);
        assert_no_window_holds_more_than(limit, &before, &outcomes);
        // The winner's log is full after one more unit (the old key) or the rest of the limit
        // less one (the new key, which inherits nothing after a reclaim).
        let probe_cost = match (outcomes[0][0].allowed, when_full) {
            (true, _) => 1,
            (false, WhenFull::EvictClosestToFresh) => 1,
            (false, _) => limit,
        };
        assert_one_admitted_into_its_own_log(&limiter, &outcomes, probe_cost);
    });
}

/// The old key checks one unit at 10 while a new key's insert reclaims its slot (its unit at 0
/// has left the window at 10; every other slot is live), on a limit of one. Either the old
/// key's check takes the position first, and keeps its slot (the new key is refused), or the
/// seal does, and the old key's check starts over, finds no slot, and is refused.
#[test]
fn a_check_of_the_old_key_races_the_reclaim_of_its_slot() {
    race_for_the_old_key_s_slot(
        "keyed sliding log: a check of the old key races a reclaim, limit 1",
        1,
        WhenFull::Deny,
        reclaim_setup(1, 1),
        1,
        10,
    );
}

/// As above with a request of two units of the old key, on a limit of two: when it takes the
/// position first, the inserter finds it half written and writes its second record before
/// giving the slot back to the old key.
#[test]
fn a_request_of_two_units_of_the_old_key_races_the_reclaim_of_its_slot() {
    race_for_the_old_key_s_slot(
        "keyed sliding log: 2 units of the old key race a reclaim, limit 2",
        2,
        WhenFull::Deny,
        reclaim_setup(2, 1),
        2,
        10,
    );
}

/// The old key (one unit at 0) checks at 6 while a new key evicts it (every other key holds two
/// units at 5, on a limit of two, so the old key's entry is the closest to fresh, and its log
/// admits one more unit). Exactly one is admitted; the new key, if it is, inherits the old
/// key's unit.
#[test]
fn a_check_of_the_old_key_races_its_eviction() {
    race_for_the_old_key_s_slot(
        "keyed sliding log: a check of the old key races its eviction, limit 2",
        2,
        WhenFull::EvictClosestToFresh,
        reclaim_setup(1, 2),
        1,
        6,
    );
}

/// A key comes back after its entry was reclaimed, from two threads: one reads the current
/// time, the other a time taken before a preemption, behind the reclaim. On a limit of two, the
/// old key (100) had two units at 0; key 200 reclaimed its slot at 10, which sets the shard's
/// floor to 10 (when the old units left the window). Key 300's entry (one unit at 0) is the
/// only one the returning key can reclaim. Whichever check inserts the key is judged no earlier
/// than 10, and so is the other: the insert makes the key's first check before publishing it,
/// so no check finds the key without a unit at 10 or later. A stale check judged at 5 on the
/// inherited log would fit (one unit in it) and give the key three units in `(−5, 5]`.
#[test]
fn a_returning_key_s_stale_check_races_its_insert() {
    let mut before = vec![(OLD_KEY, 2, 0), (300, 1, 0)];
    before.extend((101..107).map(|key| (key, 1, 5)));
    before.push((NEW_KEY, 1, 10));
    explore(
        "keyed sliding log: a returning key's stale check races its insert, limit 2",
        RACES_WITH_AN_INSERT,
        move || {
            let limiter = limiter(2, WhenFull::Deny, &before);
            let check = |reading_ns| Check {
                key: OLD_KEY,
                cost: 1,
                reading_ns,
            };
            let plans = vec![vec![check(10)], vec![check(5)]];
            let outcomes = run_concurrently(ModelThread::OnlyJoins, &limiter, plans, perform);
            assert_no_window_holds_more_than(2, &before, &outcomes);
            assert!(
                outcomes
                    .iter()
                    .flatten()
                    .all(|o| o.allowed && o.judged_ns >= 10),
                "both fit at 10 or later: {outcomes:?}"
            );
        },
    );
}

/// Two checks of one new key on an empty table, on a limit of one: one entry, one admission.
#[test]
fn two_checks_insert_one_new_key_once() {
    explore(
        "keyed sliding log: two inserts of one new key, limit 1",
        UNREACHED_PREEMPTION_BOUND,
        move || {
            let limiter = limiter(1, WhenFull::Deny, &[]);
            let plans = vec![
                vec![Check {
                    key: NEW_KEY,
                    cost: 1,
                    reading_ns: 5,
                }],
                vec![Check {
                    key: NEW_KEY,
                    cost: 1,
                    reading_ns: 5,
                }],
            ];
            let outcomes = run_concurrently(ModelThread::OnlyJoins, &limiter, plans, perform);
            assert_no_window_holds_more_than(1, &[], &outcomes);
            let admitted = outcomes.iter().flatten().filter(|o| o.allowed).count();
            assert_eq!(admitted, 1, "{outcomes:?}");
            assert_eq!(limiter.entries(), 1, "{outcomes:?}");
        },
    );
}

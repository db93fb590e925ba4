//! Loom models of removing a key from a keyed table (`KeyedLimiter::remove`, "Removal" in
//! src/store/table/protocol.rs): a removal racing a check of its key, and a removal whose slot is
//! reused by another key while a stale check of the removed key is under way.
//!
//! Tables as in `tests/keyed.rs`: one shard, one bucket (8 slots), a fixed seed, `Exact` keys
//! unless the model's name says `hashed_keys`; GCRA at one unit per second, bursts of 2. Every
//! plan runs on a spawned thread while the model's thread only joins.

use loom::sync::Arc;
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{Decision, Gcra, KeyedLimiter, ManualClock, Request, Timestamp, WhenFull};
use nanolimit_loom_tests::{
    at, explore, run_concurrently, Bounds, ModelThread, UNREACHED_PREEMPTION_BOUND,
};

const SECOND_NS: u64 = 1_000_000_000;

type Table<M> = KeyedLimiter<u64, Gcra, ManualClock, M>;

/// A one-bucket table (8 slots) of GCRA at one unit per second, bursts of 2, keys stored as
/// `M` says, refusing new keys when full.
fn table<M: KeyMode<u64>>() -> Table<M> {
    KeyedLimiter::<u64, Gcra>::builder(Gcra::per_second(1).unwrap().with_burst(2).unwrap())
        .capacity(1)
        .shards(1)
        .seed(7)
        .when_full(WhenFull::Deny)
        .clock(ManualClock::new())
        .key_mode::<M>()
        .build()
        .expect("a one-bucket table")
}

/// One operation of a plan.
#[derive(Debug, Clone, Copy)]
enum Operation {
    /// `check_at(&key, now)`.
    Check { key: u64, now: Timestamp },
    /// `remove(&key)`.
    Remove { key: u64 },
}

/// What an operation did, in the figures a caller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Admitted on a tracked entry, leaving `remaining`.
    Admitted { remaining: u64 },
    /// Denied on a tracked entry.
    Denied,
    /// A new key refused: every slot it may use was live.
    Refused,
    /// `remove` returned this.
    Removed(bool),
}

fn check(key: u64, now_ns: u64) -> Operation {
    Operation::Check {
        key,
        now: at(now_ns),
    }
}

fn remove(key: u64) -> Operation {
    Operation::Remove { key }
}

fn outcome_of(decision: &Decision<Gcra>) -> Outcome {
    match (decision.is_allowed(), decision.is_untracked()) {
        (true, false) => Outcome::Admitted {
            remaining: decision.remaining(),
        },
        (false, false) => Outcome::Denied,
        (false, true) => Outcome::Refused,
        (true, true) => panic!("no model here admits a new key untracked: {decision:?}"),
    }
}

fn perform<M: KeyMode<u64>>(table: &Table<M>, operation: Operation) -> Outcome {
    match operation {
        Operation::Check { key, now } => outcome_of(&table.check_at(&key, now)),
        Operation::Remove { key } => Outcome::Removed(table.remove(&key)),
    }
}

/// Units a peek of `key` at `now_ns` reports remaining, or `None` if the table does not hold
/// `key` and a check would refuse it (every slot live).
fn remaining<M: KeyMode<u64>>(table: &Table<M>, key: u64, now_ns: u64) -> Option<u64> {
    let decision = table
        .peek_with(&key, Request::new().at(at(now_ns)))
        .unwrap();
    (!decision.is_untracked()).then(|| decision.remaining())
}

const ADMITTED_0: Outcome = Outcome::Admitted { remaining: 0 };
const ADMITTED_1: Outcome = Outcome::Admitted { remaining: 1 };

/// Key 100 holds one unit (1 left). Thread 0 removes it, then checks it; thread 1 checks it.
/// Thread 1's check is decided on the key's old entry (as if before the removal) or on its new
/// one (after it), never elsewhere; thread 0's check, made after the removal on its thread, is
/// always on the new entry. So, as (thread 1, thread 0, the new entry's remaining afterwards):
/// (0 left, 1 left, 1) with thread 1 on the old entry; (1, 0, 0) or (0, 1, 0) with both on the
/// new entry, in either order.
///
/// Under [`UNREACHED_PREEMPTION_BOUND`], 10 s with `Exact` keys: the default run explores
/// that one within `default_bound` preemptions.
fn removal_racing_a_check<M: KeyMode<u64>>(name: &str, default_bound: usize) {
    let bounds = Bounds {
        default: default_bound,
        exhaustive: UNREACHED_PREEMPTION_BOUND,
    };
    explore(name, bounds, || {
        let table = Arc::new(table::<M>());
        assert_eq!(outcome_of(&table.check_at(&100, at(0))), ADMITTED_1);
        let outcomes = run_concurrently(
            ModelThread::OnlyJoins,
            &table,
            vec![vec![remove(100), check(100, 0)], vec![check(100, 0)]],
            perform,
        );
        let (removed, after, racing) = (outcomes[0][0], outcomes[0][1], outcomes[1][0]);
        assert_eq!(removed, Outcome::Removed(true), "{outcomes:?}");
        let left = remaining(&*table, 100, 0);
        let allowed = [
            (ADMITTED_0, ADMITTED_1, Some(1)),
            (ADMITTED_1, ADMITTED_0, Some(0)),
            (ADMITTED_0, ADMITTED_1, Some(0)),
        ];
        assert!(
            allowed.contains(&(racing, after, left)),
            "{outcomes:?}, then {left:?} left: the check after the removal was not on a new entry"
        );
        let stats = table.stats();
        assert_eq!(
            (stats.entries, stats.inserts, stats.reclaims, stats.removals),
            (1, 2, 0, 1),
            "{outcomes:?}"
        );
        // A second removal takes the new entry; a third finds nothing.
        assert!(table.remove(&100) && !table.remove(&100));
    });
}

#[test]
fn a_removal_races_a_check_of_its_key_exact_keys() {
    removal_racing_a_check::<Exact>("remove: a removal races a check of its key", 6);
}

#[test]
fn hashed_keys_a_removal_races_a_check_of_its_key() {
    removal_racing_a_check::<Hashed>(
        "remove: a removal races a check of its key (hashed keys)",
        UNREACHED_PREEMPTION_BOUND,
    );
}

/// Key 100 used a unit at 0 (fresh again at 1 s); keys 101..=107 a unit at 0.5 s (live until
/// 1.5 s). Thread 0 removes key 100, then checks new key 200 at 1 s, whose only candidate is
/// key 100's slot; thread 1 checks key 100 with a stale reading of 0. The orders:
/// - thread 1's check is decided on key 100's entry before its slot is reused (admitted, 0
///   left: the entry, detached or not, is then live until 2 s), and key 200 is refused;
/// - after the removal, key 100 takes its own entry back, fresh (admitted, 1 left: live until
///   1 s), and key 200 reclaims it at 1 s (admitted, 1 left);
/// - key 200 reuses the detached entry first (admitted, 1 left; the shard's floor becomes 1 s),
///   and key 100's check, judged as a new key's at 1 s, finds no free slot (refused).
///
/// Never key 100 admitted on the old entry and key 200 admitted: the stale check's
/// compare-and-swap and key 200's claim of the slot are on the same word, and exactly one wins.
/// And when key 200 is admitted it holds exactly its own unit: no check of key 100 landed on it.
///
/// Under [`UNREACHED_PREEMPTION_BOUND`], 11 s with `Exact` keys: the default run explores
/// that one within `default_bound` preemptions.
fn removed_slot_reused_under_a_stale_check<M: KeyMode<u64>>(name: &str, default_bound: usize) {
    let bounds = Bounds {
        default: default_bound,
        exhaustive: UNREACHED_PREEMPTION_BOUND,
    };
    explore(name, bounds, || {
        let table = Arc::new(table::<M>());
        assert_eq!(outcome_of(&table.check_at(&100, at(0))), ADMITTED_1);
        for key in 101..=107 {
            assert_eq!(
                outcome_of(&table.check_at(&key, at(SECOND_NS / 2))),
                ADMITTED_1
            );
        }
        let outcomes = run_concurrently(
            ModelThread::OnlyJoins,
            &table,
            vec![
                vec![remove(100), check(200, SECOND_NS)],
                vec![check(100, 0)],
            ],
            perform,
        );
        let (removed, new_key, stale) = (outcomes[0][0], outcomes[0][1], outcomes[1][0]);
        assert_eq!(removed, Outcome::Removed(true), "{outcomes:?}");
        let stats = table.stats();
        // (entries, inserts, reclaims, refused new keys) for each order.
        let expected = match (stale, new_key) {
            (ADMITTED_0, Outcome::Refused) => (7, 8, 0, 1),
            (ADMITTED_1, ADMITTED_1) => (8, 10, 1, 0),
            (Outcome::Refused, ADMITTED_1) => (8, 9, 0, 1),
            _ => panic!("{outcomes:?}: not one of the orders"),
        };
        assert_eq!(
            (
                stats.entries,
                stats.inserts,
                stats.reclaims,
                stats.refused_new_keys
            ),
            expected,
            "{outcomes:?}"
        );
        assert_eq!((stats.evictions, stats.removals), (0, 1), "{outcomes:?}");
        if new_key == ADMITTED_1 {
            assert_eq!(remaining(&*table, 200, SECOND_NS), Some(1), "{outcomes:?}");
        }
        // Key 100 is not in the table, and the other keys hold their units.
        assert!(!table.remove(&100), "{outcomes:?}");
        for key in 101..=107 {
            assert_eq!(remaining(&*table, key, SECOND_NS), Some(1), "{outcomes:?}");
        }
    });
}

#[test]
fn a_removed_slot_is_reused_while_a_stale_check_of_its_key_runs() {
    removed_slot_reused_under_a_stale_check::<Exact>(
        "remove: a removed slot is reused while a stale check of its key runs",
        6,
    );
}

#[test]
fn hashed_keys_a_removed_slot_is_reused_while_a_stale_check_of_its_key_runs() {
    removed_slot_reused_under_a_stale_check::<Hashed>(
        "remove: a removed slot is reused while a stale check of its key runs (hashed keys)",
        UNREACHED_PREEMPTION_BOUND,
    );
}

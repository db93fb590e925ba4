//! Loom models of the keyed table's slot protocol (src/keyed.rs): concurrent inserts of one new
//! key, an insert reclaiming a fresh-equivalent slot while its old key is checked, and checks of
//! present keys racing with each other.
//!
//! Every table here has one shard and one bucket (capacity 1 gives 8 slots) and a fixed hash
//! seed: lookups go through the bucket's hint word, whose bytes come from the hash, so a random
//! seed would make executions of one model differ. Most keys are `Exact` integers, so the
//! models cover the two-word identity; the insert and reclaim models also run on `Hashed` keys.

use loom::sync::Arc;
use loom::thread;
use nanolimit::{
    Algorithm, Exact, ExactKey, Gcra, Hashed, KeyMode, KeyedLimiter, ManualClock, SlidingWindow,
};
use nanolimit_loom_tests::explore;
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;

/// A keyed GCRA table with `u64` keys stored as `M` says.
type Table<M> = KeyedLimiter<u64, Gcra, ManualClock, M>;

/// A one-bucket table (8 slots) under `quota`, `Exact` keys of type `K`.
fn one_bucket_table<K: ExactKey + std::hash::Hash, A: Algorithm>(
    quota: A,
) -> KeyedLimiter<K, A, ManualClock, Exact> {
    KeyedLimiter::builder(quota)
        .capacity(1)
        .shards(1)
        .seed(7)
        .clock(ManualClock::new())
        .exact_keys()
        .build()
        .unwrap()
}

/// A one-bucket table (8 slots) of GCRA state, burst 2, one unit per second, `Exact` keys.
fn gcra_table() -> Table<Exact> {
    one_bucket_table(Gcra::per_second(1).unwrap().with_burst(2).unwrap())
}

/// Checks `key` at `now_ns` from `threads` threads at once; their decisions, allowed or not.
fn concurrent_checks<A: Algorithm>(
    table: &Arc<KeyedLimiter<u64, A, ManualClock, Exact>>,
    threads: usize,
    key: u64,
    now_ns: u64,
) -> Vec<bool> {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let table = Arc::clone(table);
            thread::spawn(move || table.check_key_at(&key, now_ns).is_allowed())
        })
        .collect();
    handles.into_iter().map(|t| t.join().unwrap()).collect()
}

/// The same with `Hashed` keys.
fn hashed_gcra_table() -> Table<Hashed> {
    KeyedLimiter::builder(Gcra::per_second(1).unwrap().with_burst(2).unwrap())
        .capacity(1)
        .shards(1)
        .seed(7)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// Two threads insert the same new key at once: one entry results, and both admissions count
/// against it (a third unit is denied; with two entries it would pass).
fn two_inserts_of_one_key_make_one_entry<M: KeyMode<u64>>(name: &str, new_table: fn() -> Table<M>) {
    explore(name, 3, move || {
        let table = Arc::new(new_table());
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let table = Arc::clone(&table);
                thread::spawn(move || table.check_key_at(&7, 0).is_allowed())
            })
            .collect();
        for handle in handles {
            assert!(
                handle.join().unwrap(),
                "a fresh key with burst 2 admits two units"
            );
        }
        assert_eq!(table.stats().inserts, 1, "one entry for one key");
        assert!(
            table.check_key_at(&7, 0).is_denied(),
            "both units counted against the entry"
        );
        assert_eq!(table.peek_key_at(&7, 0).remaining(), 0);
    });
}

#[test]
fn concurrent_inserts_of_one_key_make_one_entry() {
    two_inserts_of_one_key_make_one_entry("keyed: two inserts of one new key", gcra_table);
}

/// As above, through the hinted lookup: a checker that misses the new key's hint falls back to
/// the locked path and finds the entry there.
#[test]
fn hashed_keys_concurrent_inserts_make_one_entry() {
    two_inserts_of_one_key_make_one_entry(
        "keyed (hashed): two inserts of one new key",
        hashed_gcra_table,
    );
}

/// Fills the 8 slots with keys 100..108, each having used one unit at time 0 (fresh again at 1 s).
fn fill<M: KeyMode<u64>>(table: &Table<M>) {
    for key in 100..108 {
        assert!(table.check_key_at(&key, 0).is_allowed());
    }
    assert_eq!(table.stats().inserts, 8);
}

/// At 1 s every entry is fresh-equivalent. A new key's insert reclaims a slot (the first one,
/// key 100's) while another thread checks key 100. Whatever the interleaving: no admission is
/// lost (key 100 and the new key each show exactly one unit used), and no slot ends up serving
/// two keys (each key's remaining capacity is its own).
fn reclaim_races_with_a_check_of_the_old_key<M: KeyMode<u64>>(
    name: &str,
    new_table: fn() -> Table<M>,
) {
    explore(name, 2, move || {
        let table = Arc::new(new_table());
        fill(&table);
        let now = SECOND_NS;
        let checker = {
            let table = Arc::clone(&table);
            thread::spawn(move || table.check_key_at(&100, now).is_allowed())
        };
        let inserter = {
            let table = Arc::clone(&table);
            thread::spawn(move || table.check_key_at(&200, now).is_allowed())
        };
        assert!(checker.join().unwrap());
        assert!(inserter.join().unwrap());
        for key in [100, 200] {
            assert_eq!(
                table.peek_key_at(&key, now).remaining(),
                1,
                "key {key}: one unit used"
            );
        }
        for key in 101..108 {
            assert_eq!(
                table.peek_key_at(&key, now).remaining(),
                2,
                "key {key}: untouched"
            );
        }
        let stats = table.stats();
        assert!(stats.reclaims >= 1, "{stats:?}");
        assert_eq!(stats.refused_new_keys, 0, "{stats:?}");
    });
}

#[test]
fn insert_reclaiming_a_slot_races_with_a_check_of_its_old_key() {
    reclaim_races_with_a_check_of_the_old_key("keyed: reclaim vs check of the old key", gcra_table);
}

/// As above, with hinted lookups: the reclaim rewrites the slot's hint while the old key's check
/// may be reading it.
#[test]
fn hashed_keys_reclaim_races_with_a_check_of_the_old_key() {
    reclaim_races_with_a_check_of_the_old_key(
        "keyed (hashed): reclaim vs check of the old key",
        hashed_gcra_table,
    );
}

/// Two new keys race for the reclaimable slots while a third thread checks a present key whose
/// entry is reclaimable too, and the first candidate (key 100: one unit at 0, fresh again at
/// 1 s): the check and the reclaims race for its slot. Whatever wins, no admission is lost and
/// no slot serves two keys: the three keys each show exactly one unit used, so a check landing
/// on a slot already handed to another key would show up as a unit missing or a unit too many.
#[test]
fn two_inserts_reclaiming_while_a_live_key_is_checked() {
    explore(
        "keyed: two reclaims vs a check of a reclaimable key",
        2,
        || {
            let table = Arc::new(gcra_table());
            fill(&table);
            let now = SECOND_NS;
            let threads: Vec<_> = [100u64, 200, 201]
                .into_iter()
                .map(|key| {
                    let table = Arc::clone(&table);
                    thread::spawn(move || table.check_key_at(&key, now).is_allowed())
                })
                .collect();
            let admitted: Vec<bool> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            assert_eq!(admitted, [true, true, true]);
            for key in [100, 200, 201] {
                assert_eq!(
                    table.peek_key_at(&key, now).remaining(),
                    1,
                    "key {key}: one unit used"
                );
            }
            let stats = table.stats();
            // Two new keys, plus key 100 again if its slot was reclaimed before its check landed.
            assert!(
                (10..=11).contains(&stats.inserts),
                "{stats:?}: two new keys, key 100 at most once more"
            );
            assert_eq!(stats.refused_new_keys, 0, "{stats:?}");
        },
    );
}

/// Checks of one present key from three threads on a sliding window: exactly the limit passes
/// (no lost update through the keyed path of the driver).
#[test]
fn checks_of_a_present_key_admit_exactly_the_limit() {
    explore("keyed: three checkers on one key", 2, || {
        let quota = SlidingWindow::new(2, Duration::from_secs(1)).unwrap();
        let table = Arc::new(one_bucket_table(quota));
        assert!(table.check_key_at(&1u64, 0).is_allowed());
        let admitted = concurrent_checks(&table, 3, 1, 1)
            .into_iter()
            .filter(|&allowed| allowed)
            .count();
        assert_eq!(admitted, 1, "limit 2, one unit already used");
        assert_eq!(table.peek_key_at(&1u64, 1).remaining(), 0);
    });
}

/// Two threads check one present key when both units fit (GCRA burst 3, one unit used): both
/// are admitted. The fast path makes one compare-and-swap attempt; the thread that loses it
/// must retry through the slow path, not be denied.
#[test]
fn a_check_that_loses_a_race_retries_instead_of_denying() {
    explore("keyed: two checkers, room for both", 3, || {
        let table = Arc::new(one_bucket_table(
            Gcra::per_second(1).unwrap().with_burst(3).unwrap(),
        ));
        assert!(table.check_key_at(&1u64, 0).is_allowed());
        for allowed in concurrent_checks(&table, 2, 1, 0) {
            assert!(allowed, "burst 3, one unit used: both fit");
        }
        assert_eq!(table.peek_key_at(&1u64, 0).remaining(), 0);
        assert_eq!(table.stats().inserts, 1);
    });
}

/// An `Exact` identity is two words, rewritten one after the other when an inserter reclaims a
/// slot. A check that reads the old key's state and low word, then the new key's high word,
/// sees a third key's identity: here the checked key, whose lookup hint is chosen to equal the
/// old key's so that its lookup reads that slot. It must not decide on the old key's state.
///
/// Key 1 (`(low 1, high 1)`) used its one unit at 0: spent until 1 s, then reclaimable. Seven
/// other keys used theirs at 0.9 s (live until 1.9 s). At 1 s a new key `(low 2, high h)`
/// reclaims key 1's slot; meanwhile, with a reading of 0.5 s, key `(low 1, high h)`, never seen,
/// is checked: every slot is live at 0.5 s, so the right answer is a refusal of a new key
/// (untracked), never a denial on key 1's spent state. Fails without the state re-read after
/// the identity (`SlotOps::unchanged_since`).
#[test]
fn a_check_never_decides_on_an_identity_half_rewritten_by_a_reclaim() {
    explore("keyed: torn two-word identity", 2, || {
        let table = Arc::new(one_bucket_table::<u128, _>(Gcra::per_second(1).unwrap()));
        let key = |low: u128, high: u128| low | (high << 64);
        let old_key = key(1, 1);
        // The new key's high word, so that the torn identity has the old key's hint.
        let high = (2..)
            .find(|&high| table.lookup_hint(&key(1, high)) == table.lookup_hint(&old_key))
            .unwrap();
        let (new_key, torn_key) = (key(2, high), key(1, high));
        assert!(table.check_key_at(&old_key, 0).is_allowed());
        for other in 0..7 {
            assert!(table
                .check_key_at(&key(100 + other, 0), 900_000_000)
                .is_allowed());
        }
        let inserter = {
            let table = Arc::clone(&table);
            thread::spawn(move || table.check_key_at(&new_key, SECOND_NS))
        };
        let checker = {
            let table = Arc::clone(&table);
            thread::spawn(move || table.check_key_at(&torn_key, SECOND_NS / 2))
        };
        let inserted = inserter.join().unwrap();
        assert!(inserted.is_allowed() && !inserted.is_untracked());
        let checked = checker.join().unwrap();
        assert!(
            checked.is_denied() && checked.is_untracked(),
            "a key never seen was judged on another key's state: {checked:?}"
        );
        let stats = table.stats();
        assert_eq!(
            (stats.reclaims, stats.refused_new_keys),
            (1, 1),
            "{stats:?}"
        );
    });
}

//! Loom models of the keyed table's slot protocol (src/store/table/protocol.rs, on the table of
//! src/store/table/mod.rs and the slots of src/store/table/slot.rs): concurrent inserts of one new key, an
//! insert reclaiming or evicting a slot while its old key is checked or peeked at, and checks of
//! present keys racing with each other.
//!
//! Every table here has one shard and one bucket (capacity 1 gives 8 slots) and a fixed hash
//! seed: lookups go through the bucket's hint word, whose bytes come from the hash, so a random
//! seed would make executions of one model differ. Most keys are `Exact` integers, so the
//! models cover the two-word identity; the insert, reclaim, eviction and peek models also run on
//! `Hashed` keys. Keys are filled into the empty table in order, so the first key filled takes
//! the first slot: the first candidate a reclaim or an eviction considers among equals.

use loom::sync::Arc;
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{
    Decision, Gcra, KeyedLimiter, ManualClock, Quota, Request, SlidingWindow, Stats, WhenFull,
};
use nanolimit_loom_tests::{
    assert_admissions_form_one_sequence, at, explore, perform_keyed, run_concurrently, Bounds,
    KeyedOperation, ModelThread, UNREACHED_PREEMPTION_BOUND,
};
use std::hash::Hash;
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;

/// Every plan runs on a spawned thread while the model's thread waits: loom explores several
/// times as many interleavings of the table's paths this way (see [`ModelThread`]).
const MODEL_THREAD: ModelThread = ModelThread::OnlyJoins;
/// Models of two racing threads run under a bound none of their executions reaches, in a few
/// seconds each, but for the reclaim races with a torn identity or a peek, which take from 25 s
/// to about 13 minutes under it: those run under a lower default bound (see [`Bounds`]).
const TWO_THREAD_PREEMPTION_BOUND: usize = UNREACHED_PREEMPTION_BOUND;
/// Models of three racing threads explore the interleavings with at most 2 preemptions: a bound
/// of 3 takes about 7 times as long (the two reclaims model: 142,424 executions, half a minute).
const THREE_THREAD_PREEMPTION_BOUND: usize = 2;

/// A keyed GCRA table with `u64` keys stored as `M` says.
type Table<M> = KeyedLimiter<u64, Gcra, ManualClock, M>;

/// A one-bucket table (8 slots) under `quota`, keys of type `K` stored as `M` says, a fixed
/// seed, and `when_full` for a new key that finds every slot live.
fn one_bucket_table<K, Q, M>(quota: Q, when_full: WhenFull) -> KeyedLimiter<K, Q, ManualClock, M>
where
    K: Hash + ?Sized,
    Q: Quota,
    M: KeyMode<K>,
{
    KeyedLimiter::<K, Q>::builder(quota)
        .capacity(1)
        .shards(1)
        .seed(7)
        .when_full(when_full)
        .clock(ManualClock::new())
        .key_mode::<M>()
        .build()
        .expect("a one-bucket table")
}

/// GCRA at one unit per second (emission interval 1 s), bursts of `burst`.
fn gcra(burst: u64) -> Gcra {
    Gcra::per_second(1).unwrap().with_burst(burst).unwrap()
}

/// A one-bucket table of GCRA state, burst 2, keys stored as `M` says, refusing new keys when
/// full.
fn gcra_table<M: KeyMode<u64>>() -> Table<M> {
    one_bucket_table(gcra(2), WhenFull::Deny)
}

/// `check_at(&key, now)`, `now_ns` after the origin.
fn check<K>(key: K, now_ns: u64) -> KeyedOperation<K> {
    KeyedOperation::Check {
        key,
        now: at(now_ns),
    }
}

/// `peek_with(&key, Request::new().at(now))`, `now_ns` after the origin.
fn peek<K>(key: K, now_ns: u64) -> KeyedOperation<K> {
    KeyedOperation::Peek {
        key,
        now: at(now_ns),
    }
}

/// A peek of `key` at `now_ns` (which inserts nothing and changes nothing).
fn peeked<K: ?Sized, Q: Quota, M: KeyMode<K>>(
    table: &KeyedLimiter<K, Q, ManualClock, M>,
    key: &K,
    now_ns: u64,
) -> Decision<Q> {
    table.peek_with(key, Request::new().at(at(now_ns))).unwrap()
}

/// What a unit peek reported, in the figures a caller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peeked {
    /// Judged on a state: the key's own, or for a key the table does not hold, the state its
    /// insert would start from (fresh in a free slot, or an evicted entry's).
    State {
        remaining: u64,
        reset_after: Duration,
    },
    /// A key the table does not hold, which a check would refuse: every slot it may use holds a
    /// live entry, the first of which frees after `retry_after`.
    Refused { retry_after: Duration },
}

impl Peeked {
    fn of<Q: Quota>(decision: &Decision<Q>) -> Peeked {
        if !decision.is_untracked() {
            return Peeked::State {
                remaining: decision.remaining(),
                reset_after: decision.reset_after(),
            };
        }
        assert!(
            decision.is_denied() && decision.remaining() == 0,
            "no model here leaves a new key untracked: {decision:?}"
        );
        assert_eq!(
            decision.reset_after(),
            decision.retry_after(),
            "{decision:?}"
        );
        Peeked::Refused {
            retry_after: decision.retry_after(),
        }
    }

    /// Judged on a state with `remaining` units left, reset after `reset_after_ms`.
    fn state(remaining: u64, reset_after_ms: u64) -> Peeked {
        Peeked::State {
            remaining,
            reset_after: Duration::from_millis(reset_after_ms),
        }
    }

    /// Refused, until a slot frees after `retry_after_ms`.
    fn refused(retry_after_ms: u64) -> Peeked {
        Peeked::Refused {
            retry_after: Duration::from_millis(retry_after_ms),
        }
    }
}

/// [`Peeked`] of a peek of `key` at `now_ns`.
fn peek_report<K: ?Sized, Q: Quota, M: KeyMode<K>>(
    table: &KeyedLimiter<K, Q, ManualClock, M>,
    key: &K,
    now_ns: u64,
) -> Peeked {
    Peeked::of(&peeked(table, key, now_ns))
}

/// The stats of a table of `inserts` keys given a slot, `reclaims` and `evictions` of them into
/// another key's slot, and no new key refused or left untracked: every other insert took a
/// vacant slot, so that many slots hold an entry.
fn stats(inserts: u64, reclaims: u64, evictions: u64) -> Stats {
    Stats {
        entries: inserts - reclaims - evictions,
        inserts,
        reclaims,
        refused_new_keys: 0,
        untracked_new_keys: 0,
        evictions,
        removals: 0,
        ..Stats::default()
    }
}

/// Two threads insert the same new key at once: one entry results, and both admissions count
/// against it, one after the other (the second leaves nothing; with two entries, or a lost
/// update, both would leave one).
fn two_inserts_of_one_key_make_one_entry<M: KeyMode<u64>>(name: &str) {
    explore(name, TWO_THREAD_PREEMPTION_BOUND, || {
        let table = Arc::new(gcra_table::<M>());
        let outcomes = run_concurrently(
            MODEL_THREAD,
            &table,
            vec![vec![check(7, 0)]; 2],
            perform_keyed,
        );
        assert!(
            outcomes.iter().flatten().all(Decision::is_allowed),
            "a fresh key with burst 2 admits two units: {outcomes:?}"
        );
        assert_admissions_form_one_sequence(2, &outcomes);
        assert_eq!(table.stats(), stats(1, 0, 0), "one entry for one key");
        assert!(
            table.check_at(&7, at(0)).is_denied(),
            "both units counted against the entry"
        );
        assert_eq!(peeked(&*table, &7, 0).remaining(), 0);
    });
}

#[test]
fn concurrent_inserts_of_one_key_make_one_entry() {
    two_inserts_of_one_key_make_one_entry::<Exact>("keyed: two inserts of one new key");
}

/// As above, through the hinted lookup: a checker that misses the new key's hint falls back to
/// the locked path and finds the entry there.
#[test]
fn hashed_keys_concurrent_inserts_make_one_entry() {
    two_inserts_of_one_key_make_one_entry::<Hashed>("keyed (hashed): two inserts of one new key");
}

/// Two threads insert two different new keys into one shard at once: both are admitted, and
/// the shard counts both inserts. Its insert counts are a load and a store, not a
/// read-modify-write (`Table::count`), exact only because every insert counts while holding
/// the shard's insert lock.
#[test]
fn hashed_keys_inserts_of_two_new_keys_count_both() {
    explore(
        "keyed (hashed): inserts of two new keys",
        TWO_THREAD_PREEMPTION_BOUND,
        || {
            let table = Arc::new(gcra_table::<Hashed>());
            let outcomes = run_concurrently(
                MODEL_THREAD,
                &table,
                vec![vec![check(7, 0)], vec![check(8, 0)]],
                perform_keyed,
            );
            assert!(
                outcomes.iter().flatten().all(Decision::is_allowed),
                "two fresh keys: {outcomes:?}"
            );
            assert_eq!(table.stats(), stats(2, 0, 0), "two entries, both counted");
        },
    );
}

/// Fills the 8 slots with keys 100..108, each having used one unit at time 0 (fresh again at 1 s).
fn fill<M: KeyMode<u64>>(table: &Table<M>) {
    for key in 100..108 {
        assert!(table.check_at(&key, at(0)).is_allowed());
    }
    assert_eq!(table.stats().inserts, 8);
}

/// At 1 s every entry is fresh-equivalent. A new key's insert reclaims a slot (the first one,
/// key 100's) while another thread checks key 100. Whatever the interleaving: no admission is
/// lost (key 100 and the new key each show exactly one unit used), and no slot ends up serving
/// two keys (each key's remaining units are its own).
fn reclaim_races_with_a_check_of_the_old_key<M: KeyMode<u64>>(name: &str) {
    explore(name, TWO_THREAD_PREEMPTION_BOUND, || {
        let table = Arc::new(gcra_table::<M>());
        fill(&table);
        let plans = vec![vec![check(100, SECOND_NS)], vec![check(200, SECOND_NS)]];
        let outcomes = run_concurrently(MODEL_THREAD, &table, plans, perform_keyed);
        assert!(
            outcomes.iter().flatten().all(Decision::is_allowed),
            "{outcomes:?}"
        );
        for key in [100, 200] {
            assert_eq!(
                peeked(&*table, &key, SECOND_NS).remaining(),
                1,
                "key {key}: one unit used"
            );
        }
        for key in 101..108 {
            assert_eq!(
                peeked(&*table, &key, SECOND_NS).remaining(),
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
    reclaim_races_with_a_check_of_the_old_key::<Exact>("keyed: reclaim vs check of the old key");
}

/// As above, with hinted lookups: the reclaim rewrites the slot's hint while the old key's check
/// may be reading it.
#[test]
fn hashed_keys_reclaim_races_with_a_check_of_the_old_key() {
    reclaim_races_with_a_check_of_the_old_key::<Hashed>(
        "keyed (hashed): reclaim vs check of the old key",
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
        THREE_THREAD_PREEMPTION_BOUND,
        || {
            let table = Arc::new(gcra_table::<Exact>());
            fill(&table);
            let plans = [100, 200, 201]
                .into_iter()
                .map(|key| vec![check(key, SECOND_NS)])
                .collect();
            let outcomes = run_concurrently(MODEL_THREAD, &table, plans, perform_keyed);
            assert!(
                outcomes.iter().flatten().all(Decision::is_allowed),
                "{outcomes:?}"
            );
            for key in [100, 200, 201] {
                assert_eq!(
                    peeked(&*table, &key, SECOND_NS).remaining(),
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
    explore(
        "keyed: three checkers on one key",
        THREE_THREAD_PREEMPTION_BOUND,
        || {
            let quota = SlidingWindow::new(2, Duration::from_secs(1)).unwrap();
            let table = Arc::new(one_bucket_table::<u64, _, Exact>(quota, WhenFull::Deny));
            assert!(table.check_at(&1, at(0)).is_allowed());
            let outcomes = run_concurrently(
                MODEL_THREAD,
                &table,
                vec![vec![check(1, 1)]; 3],
                perform_keyed,
            );
            let admitted = outcomes.iter().flatten().filter(|d| d.is_allowed()).count();
            assert_eq!(admitted, 1, "limit 2, one unit already used: {outcomes:?}");
            assert_eq!(peeked(&*table, &1, 1).remaining(), 0);
        },
    );
}

/// Two threads check one present key when both units fit (GCRA burst 3, one unit used): both
/// are admitted. The fast path makes one compare-and-swap attempt; the thread that loses it
/// must retry through the slow path, not be denied.
#[test]
fn a_check_that_loses_a_race_retries_instead_of_denying() {
    explore(
        "keyed: two checkers, room for both",
        TWO_THREAD_PREEMPTION_BOUND,
        || {
            let table = Arc::new(one_bucket_table::<u64, _, Exact>(gcra(3), WhenFull::Deny));
            assert!(table.check_at(&1, at(0)).is_allowed());
            let outcomes = run_concurrently(
                MODEL_THREAD,
                &table,
                vec![vec![check(1, 0)]; 2],
                perform_keyed,
            );
            assert!(
                outcomes.iter().flatten().all(Decision::is_allowed),
                "burst 3, one unit used: both fit: {outcomes:?}"
            );
            assert_admissions_form_one_sequence(2, &outcomes);
            assert_eq!(peeked(&*table, &1, 0).remaining(), 0);
            assert_eq!(table.stats().inserts, 1);
        },
    );
}

/// The `u128` key whose low word is `low` and high word `high`.
fn exact_key(low: u128, high: u128) -> u128 {
    low | (high << 64)
}

/// Keys for a race between a reclaim and a check or peek reading an `Exact` identity half
/// before and half after the reclaim rewrites it: the reclaimed key `(low 1, high 1)`, the new
/// key `(low 2, high h)`, and the torn key `(low 1, high h)`, never seen, with `h` chosen (with
/// the loom-only `lookup_hint`) so that the torn key's hint equals the reclaimed key's: its lookup
/// then reads the reclaimed slot.
struct TornIdentity {
    reclaimed: u128,
    new: u128,
    torn: u128,
}

impl TornIdentity {
    fn in_table<Q: Quota>(table: &KeyedLimiter<u128, Q, ManualClock, Exact>) -> TornIdentity {
        let reclaimed = exact_key(1, 1);
        let high = (2..)
            .find(|&high| table.lookup_hint(&exact_key(1, high)) == table.lookup_hint(&reclaimed))
            .unwrap();
        TornIdentity {
            reclaimed,
            new: exact_key(2, high),
            torn: exact_key(1, high),
        }
    }
}

/// An `Exact` identity is two words, rewritten one after the other when an inserter reclaims a
/// slot. A check that reads the old key's state and low word, then the new key's high word,
/// sees a third key's identity: here the checked key (see [`TornIdentity`]). It must not decide
/// on the old key's state.
///
/// The reclaimed key used its one unit at 0: spent until 1 s, then reclaimable. Seven other keys
/// used theirs at 0.9 s (live until 1.9 s). At 1 s the new key reclaims the reclaimed key's
/// slot; meanwhile, with a reading of 0.5 s, the torn key is checked: every slot is live at
/// 0.5 s, so the right answer is a refusal of a new key (untracked), never a denial on the
/// reclaimed key's spent state. Fails without the state re-read after the identity
/// (`SlotOps::unchanged_since`) and without the inserter's Release fence.
#[test]
fn a_check_never_decides_on_an_identity_half_rewritten_by_a_reclaim() {
    explore(
        "keyed: torn two-word identity",
        Bounds {
            default: 6,
            exhaustive: TWO_THREAD_PREEMPTION_BOUND,
        },
        || {
            let table = Arc::new(one_bucket_table::<u128, _, Exact>(gcra(1), WhenFull::Deny));
            let keys = TornIdentity::in_table(&table);
            assert!(table.check_at(&keys.reclaimed, at(0)).is_allowed());
            for other in 0..7 {
                assert!(table
                    .check_at(&exact_key(100 + other, 0), at(900_000_000))
                    .is_allowed());
            }
            let plans = vec![
                vec![check(keys.new, SECOND_NS)],
                vec![check(keys.torn, SECOND_NS / 2)],
            ];
            let outcomes = run_concurrently(MODEL_THREAD, &table, plans, perform_keyed);
            let (inserted, checked) = (outcomes[0][0], outcomes[1][0]);
            assert!(inserted.is_allowed() && !inserted.is_untracked());
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
        },
    );
}

/// The key whose entry is the closest to fresh, and evicted.
const EVICTEE: u64 = 100;
/// The new key that evicts it.
const NEW_KEY: u64 = 200;

/// [`WhenFull::EvictClosestToFresh`] on a full table of live entries (GCRA, one unit per second,
/// bursts of `checkers + 2`): at 0 the evictee has used one unit (due back at 1 s) and keys
/// 101..108 their whole burst. At 0 a new key's insert evicts the evictee (the closest to fresh,
/// whatever the racing checks add to it), claiming its slot by a compare-and-swap from the state
/// it judged to `RESERVED`, while `checkers` threads check the evictee. If a check updates the
/// state first, the claim fails and the insert chooses again under the shard lock, evicting the
/// evictee with its new state; if the claim wins, a check that finds its key gone inserts it
/// again, evicting the new key (now the closest to fresh) in turn.
///
/// Whatever the interleaving, every request is admitted, and the admissions are one sequence of
/// updates on the evictee's state, which each inserted key inherits (so it is never looser than
/// that state): `checkers + 1` admissions from `checkers + 1` remaining, down to 0. The key of
/// the last admission holds the combined state (the whole burst, reset after `checkers + 2`
/// seconds): no admission is lost, none counted twice, none landed in a slot its key no longer
/// held. The other key is not in the table (a peek reports what its check would get: refused,
/// since it would inherit a spent entry); the other keys are untouched; and the stats count an
/// eviction, and an insert, each time the admissions pass from one key to the other, and
/// nothing refused.
fn eviction_races_with_checks_of_the_evictee<M: KeyMode<u64>>(
    name: &str,
    checkers: usize,
    preemption_bound: usize,
) {
    explore(name, preemption_bound, move || {
        let burst = checkers as u64 + 2;
        let table = Arc::new(one_bucket_table::<u64, _, M>(
            gcra(burst),
            WhenFull::EvictClosestToFresh,
        ));
        assert!(table.check_at(&EVICTEE, at(0)).is_allowed());
        for key in 101..108 {
            let whole_burst = Request::cost(burst).at(at(0));
            assert!(table.check_with(&key, whole_burst).unwrap().is_allowed());
        }
        assert_eq!(table.stats(), stats(8, 0, 0));

        let mut plans = vec![vec![check(NEW_KEY, 0)]];
        plans.extend(vec![vec![check(EVICTEE, 0)]; checkers]);
        let outcomes = run_concurrently(MODEL_THREAD, &table, plans, perform_keyed);
        assert!(
            outcomes
                .iter()
                .flatten()
                .all(|decision| decision.is_allowed() && !decision.is_untracked()),
            "every request fits the evictee's state: {outcomes:?}"
        );
        assert_admissions_form_one_sequence(burst - 1, &outcomes);

        // The keys of the admissions, in the order they were made (most remaining first).
        let mut admissions: Vec<(u64, u64)> = outcomes
            .iter()
            .enumerate()
            .map(|(thread, decisions)| {
                let key = if thread == 0 { NEW_KEY } else { EVICTEE };
                (decisions[0].remaining(), key)
            })
            .collect();
        admissions.sort_unstable_by(|left, right| right.cmp(left));
        let keys_in_order: Vec<u64> = admissions.iter().map(|&(_, key)| key).collect();
        let evictions = [EVICTEE]
            .iter()
            .chain(&keys_in_order)
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|pair| pair[0] != pair[1])
            .count() as u64;
        let holder = *keys_in_order.last().unwrap();
        let evicted = if holder == NEW_KEY { EVICTEE } else { NEW_KEY };
        assert_eq!(
            peek_report(&*table, &holder, 0),
            Peeked::state(0, burst * 1_000),
            "key {holder} made the last admission: it holds the whole burst: {outcomes:?}"
        );
        // Not in the table: its check would inherit the closest entry to fresh, all of them
        // spent until 1 s.
        assert_eq!(
            peek_report(&*table, &evicted, 0),
            Peeked::refused(1_000),
            "key {evicted} was evicted: {outcomes:?}"
        );
        for key in 101..108 {
            assert_eq!(
                peek_report(&*table, &key, 0),
                Peeked::state(0, burst * 1_000),
                "key {key}: untouched"
            );
        }
        assert_eq!(
            table.stats(),
            stats(8 + evictions, 0, evictions),
            "admissions by key {keys_in_order:?}: {outcomes:?}"
        );
        assert_eq!(table.entries(), 8);
    });
}

/// One check of the evictee races the eviction. A claim that overwrites the state without its
/// compare-and-swap, or one that ignores a failed compare-and-swap instead of choosing again,
/// loses the check's update: both admissions then report 1 remaining.
#[test]
fn an_eviction_races_with_a_check_of_the_evictee() {
    eviction_races_with_checks_of_the_evictee::<Exact>(
        "keyed: eviction vs check of the evictee",
        1,
        TWO_THREAD_PREEMPTION_BOUND,
    );
}

#[test]
fn hashed_keys_eviction_races_with_a_check_of_the_evictee() {
    eviction_races_with_checks_of_the_evictee::<Hashed>(
        "keyed (hashed): eviction vs check of the evictee",
        1,
        TWO_THREAD_PREEMPTION_BOUND,
    );
}

/// Two checks of the evictee race the eviction: one check's update makes the other lose its
/// fast-path compare-and-swap, and its slow path may then find the evictee's entry just before
/// the insert claims it, and lose its compare-and-swap again, to the new key's state. The
/// driver's guard must then see that the slot changed keys and look the evictee up again, not
/// charge the new key's state. With `Hashed` keys (one identity word): with `Exact` ones the
/// model explores twice as many executions, in about a minute.
#[test]
fn hashed_keys_eviction_races_with_two_checks_of_the_evictee() {
    eviction_races_with_checks_of_the_evictee::<Hashed>(
        "keyed (hashed): eviction vs two checks of the evictee",
        2,
        THREE_THREAD_PREEMPTION_BOUND,
    );
}

/// The keys of a peek racing a reclaim: the reclaimed key, the new key reclaiming its slot, the
/// seven other keys filling the table, and the key peeked at.
struct PeekRace<K> {
    reclaimed: K,
    new: K,
    others: [K; 7],
    peeked: K,
}

/// A peek racing a reclaim, on GCRA burst 2, one unit per second, a table that refuses new keys
/// when full. The reclaimed key used one unit at 0 (reclaimable from 1 s), the seven others one
/// unit each at 0.9 s (live until 1.9 s). At 1 s the new key reclaims the reclaimed key's slot
/// (the only reclaimable one), while a peek with a reading of 0.5 s looks at `peeked`.
///
/// At 0.5 s every slot is live, so a key the table does not hold is reported as its check
/// would be decided: refused, until the first of its slots frees (the reclaimed key's after
/// 0.5 s if the peek read that slot before the claim, else the others' after 1.4 s; the new
/// key's state frees after 1.5 s), or, once the peek reads the new-key floor the reclaim raised
/// to 1 s (when the reclaimed entry became fresh), judged at 1 s: after 0.9 s. The reclaimed key's own state has one unit left and resets
/// after 0.5 s; the new key's state has none left. So:
/// - a peek of the reclaimed key reports its state, or, once the slot is claimed, that of a key
///   not in the table; a peek of a key never seen reports the latter. Never the new key's
///   state, never another key's;
/// - the peek inserts nothing and changes nothing: afterwards the reclaimed and the peeked keys
///   are not in the table, the new key and the others hold their states, and the stats show the
///   one reclaim and no refusal.
///
/// Under [`TWO_THREAD_PREEMPTION_BOUND`] these take from 25 s to about 13 minutes: the
/// default run explores them within `default_bound` preemptions.
fn peek_races_a_reclaim<K, M>(
    name: &str,
    default_bound: usize,
    keys: fn(&KeyedLimiter<K, Gcra, ManualClock, M>) -> PeekRace<K>,
) where
    K: Hash + Copy + Eq + Send + Sync + std::fmt::Debug + 'static,
    M: KeyMode<K>,
{
    let bounds = Bounds {
        default: default_bound,
        exhaustive: TWO_THREAD_PREEMPTION_BOUND,
    };
    explore(name, bounds, move || {
        let table = Arc::new(one_bucket_table::<K, _, M>(gcra(2), WhenFull::Deny));
        let keys = keys(&table);
        assert!(table.check_at(&keys.reclaimed, at(0)).is_allowed());
        for other in &keys.others {
            assert!(table.check_at(other, at(900_000_000)).is_allowed());
        }

        let plans = vec![
            vec![check(keys.new, SECOND_NS)],
            vec![peek(keys.peeked, SECOND_NS / 2)],
        ];
        let outcomes = run_concurrently(MODEL_THREAD, &table, plans, perform_keyed);
        let (inserted, peek) = (outcomes[0][0], outcomes[1][0]);
        assert_eq!(
            Peeked::of(&inserted),
            Peeked::state(1, 1_000),
            "the new key is admitted on its own state"
        );
        assert!(inserted.is_allowed());

        let reclaimed_state = Peeked::state(1, 500);
        // A key not held, refused until a slot frees: from the peek's own reading of 0.5 s
        // (after 0.5 s if it read key 100's entry, else 1.4 s), or, once the reclaim has raised
        // the shard's new-key floor to 1 s (when key 100's entry became fresh, read Relaxed by
        // peeks), judged there: after 0.9 s.
        let not_held = [
            Peeked::refused(500),
            Peeked::refused(900),
            Peeked::refused(1_400),
        ];
        // Judged at the floor (1 s) while it still read key 100's slot as it was: that entry is
        // fresh at 1 s, so a new key would take it with a fresh state (2 left), as key 100
        // itself would have at 1 s. Never the new key's state (0 left).
        let fresh_at_the_floor = Peeked::state(2, 0);
        let reported = Peeked::of(&peek);
        let peeked_was_in_table = keys.peeked == keys.reclaimed;
        assert!(
            not_held.contains(&reported)
                || reported == fresh_at_the_floor
                || (peeked_was_in_table && reported == reclaimed_state),
            "a peek at 0.5 s of {:?} (in the table before the reclaim: {peeked_was_in_table}) \
             reported {reported:?}: neither a key not held {not_held:?} nor the reclaimed key's \
             state {reclaimed_state:?}",
            keys.peeked
        );
        assert_eq!(
            peek.is_allowed(),
            reported == reclaimed_state || reported == fresh_at_the_floor
        );

        for key in [&keys.reclaimed, &keys.peeked] {
            // Judged at the new-key floor the reclaim set (1 s): the first slot frees at 1.9 s.
            assert_eq!(
                peek_report(&*table, key, SECOND_NS / 2),
                Peeked::refused(900),
                "{key:?} is not in the table"
            );
        }
        assert_eq!(
            peek_report(&*table, &keys.new, SECOND_NS),
            Peeked::state(1, 1_000)
        );
        for other in &keys.others {
            assert_eq!(
                peek_report(&*table, other, SECOND_NS),
                Peeked::state(1, 900),
                "{other:?}: untouched"
            );
        }
        assert_eq!(table.stats(), stats(9, 1, 0));
        assert_eq!(table.entries(), 8);
    });
}

/// The keys of [`peek_races_a_reclaim`] with `u64` keys: key 100 reclaimed by key 200 and peeked
/// at, keys 101..108 the others.
fn peek_at_the_reclaimed_key<M: KeyMode<u64>>(_: &Table<M>) -> PeekRace<u64> {
    PeekRace {
        reclaimed: 100,
        new: 200,
        others: core::array::from_fn(|index| 101 + index as u64),
        peeked: 100,
    }
}

#[test]
fn a_peek_of_a_key_being_reclaimed_reports_its_state_or_its_absence() {
    peek_races_a_reclaim(
        "keyed: peek of the reclaimed key vs the reclaim",
        5,
        peek_at_the_reclaimed_key::<Exact>,
    );
}

/// As above, with hinted lookups: the reclaim rewrites the slot's hint and one-word identity
/// while the peek may be reading them.
#[test]
fn hashed_keys_peek_of_a_key_being_reclaimed_reports_its_state_or_its_absence() {
    peek_races_a_reclaim(
        "keyed (hashed): peek of the reclaimed key vs the reclaim",
        5,
        peek_at_the_reclaimed_key::<Hashed>,
    );
}

/// The torn-identity race of [`a_check_never_decides_on_an_identity_half_rewritten_by_a_reclaim`]
/// with a peek: the torn key, never seen, must be reported as a key not in the table, never on
/// the reclaimed key's state (nor the new key's). Fails without the state re-read after the
/// identity.
#[test]
fn a_peek_never_reports_an_identity_half_rewritten_by_a_reclaim() {
    peek_races_a_reclaim("keyed: torn two-word identity, peeked", 4, |table| {
        let keys = TornIdentity::in_table(table);
        PeekRace {
            reclaimed: keys.reclaimed,
            new: keys.new,
            others: core::array::from_fn(|index| exact_key(100 + index as u128, 0)),
            peeked: keys.torn,
        }
    });
}

/// Key 100 spends its burst at 0 (fresh again at 2 s); at 2 s key 200's insert reclaims key
/// 100's slot (the first of eight fresh ones) while key 100 checks one unit with a reading of
/// 1 s, taken before a preemption. Either the check finds its entry and is judged on it, or it
/// finds none and is inserted no earlier than the shard's floor, the moment key 100's reclaimed
/// entry became fresh: in both, its admission writes at least what its old state would have
/// (the never-forgetting word). Judged at its own stale reading on a fresh state, it would
/// write less: a whole burst again behind the one it spent (issue 15's stale-reading defect).
fn a_stale_check_races_the_reclaim_of_its_keys_slot<M: KeyMode<u64>>(name: &str) {
    explore(name, TWO_THREAD_PREEMPTION_BOUND, || {
        let table = Arc::new(gcra_table::<M>());
        assert!(table.check_at(&100, at(0)).is_allowed());
        assert!(table.check_at(&100, at(0)).is_allowed());
        let spent = peeked(&*table, &100, 0).state_word();
        for key in 101..108 {
            assert!(table.check_at(&key, at(0)).is_allowed());
        }
        let stale_ns = SECOND_NS;
        let plans = vec![vec![check(200, 2 * SECOND_NS)], vec![check(100, stale_ns)]];
        let outcomes = run_concurrently(MODEL_THREAD, &table, plans, perform_keyed);
        let (inserted, stale) = (&outcomes[0][0], &outcomes[1][0]);
        assert!(inserted.is_allowed() && stale.is_allowed(), "{outcomes:?}");
        let quota = *table.quota();
        let never_forgetting = match quota.step(spent, quota.instant(at(stale_ns)), 1) {
            nanolimit::quota::Step::Allow(word) => word,
            nanolimit::quota::Step::Deny => unreachable!("one unit is left at 1 s"),
        };
        assert!(
            stale.state_word() >= never_forgetting,
            "the stale check wrote {} below {never_forgetting}: {outcomes:?}",
            stale.state_word()
        );
    });
}

#[test]
fn a_stale_check_racing_the_reclaim_of_its_keys_slot_gets_no_extra_capacity() {
    a_stale_check_races_the_reclaim_of_its_keys_slot::<Exact>(
        "keyed: stale check vs the reclaim of its key's slot",
    );
}

#[test]
fn hashed_keys_stale_check_racing_the_reclaim_of_its_keys_slot_gets_no_extra_capacity() {
    a_stale_check_races_the_reclaim_of_its_keys_slot::<Hashed>(
        "keyed (hashed): stale check vs the reclaim of its key's slot",
    );
}

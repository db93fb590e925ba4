//! Loom models of the keyed table's slot protocol (src/keyed/protocol.rs, on the table of
//! src/keyed/table.rs and the slots of src/keyed/slot.rs): concurrent inserts of one new key, an
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
use nanolimit::{
    Decision, Exact, Gcra, Hashed, KeyMode, KeyedLimiter, KeyedStats, ManualClock, Quota, Request,
    SlidingWindow, WhenFull,
};
use nanolimit_loom_tests::{
    assert_admissions_form_one_sequence, at, explore_within, perform_keyed, run_concurrently,
    KeyedOperation, ModelThread,
};
use std::hash::Hash;
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;

/// Every plan runs on a spawned thread, in the order given, while the model's thread waits:
/// loom explores several times as many interleavings of the table's paths this way (see
/// [`ModelThread`]). Each model lists its writer (the inserter) first where the roles differ.
const MODEL_THREAD: ModelThread = ModelThread::OnlyJoins;
/// Models of two racing threads explore every interleaving (a few seconds each; the torn
/// identity model, the longest, about half a minute).
const TWO_THREAD_PREEMPTION_BOUND: Option<usize> = None;
/// Models of three racing threads explore the interleavings with at most 2 preemptions: a bound
/// of 3 takes about 7 times as long (the two reclaims model: 142,424 executions, half a minute).
const THREE_THREAD_PREEMPTION_BOUND: Option<usize> = Some(2);

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

/// What `key` has left at `now_ns`, read with a peek (which inserts nothing).
fn peeked<K: ?Sized, Q: Quota, M: KeyMode<K>>(
    table: &KeyedLimiter<K, Q, ManualClock, M>,
    key: &K,
    now_ns: u64,
) -> Decision<Q> {
    table.peek_with(key, Request::new().at(at(now_ns))).unwrap()
}

/// The stats of a table of `inserts` keys given a slot, `reclaims` and `evictions` of them into
/// another key's slot, and no new key refused or left untracked.
fn stats(inserts: u64, reclaims: u64, evictions: u64) -> KeyedStats {
    KeyedStats {
        inserts,
        reclaims,
        refused_new_keys: 0,
        untracked_new_keys: 0,
        evictions,
    }
}

/// Two threads insert the same new key at once: one entry results, and both admissions count
/// against it, one after the other (the second leaves nothing; with two entries, or a lost
/// update, both would leave one).
fn two_inserts_of_one_key_make_one_entry<M: KeyMode<u64>>(name: &str) {
    explore_within(name, TWO_THREAD_PREEMPTION_BOUND, || {
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
    explore_within(name, TWO_THREAD_PREEMPTION_BOUND, || {
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
    explore_within(
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
    explore_within(
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
    explore_within(
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
/// the hidden `lookup_hint`) so that the torn key's hint equals the reclaimed key's: its lookup
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
/// (`SlotOps::unchanged_since`), and without the inserter's Release fence.
#[test]
fn a_check_never_decides_on_an_identity_half_rewritten_by_a_reclaim() {
    explore_within(
        "keyed: torn two-word identity",
        TWO_THREAD_PREEMPTION_BOUND,
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

/// [`WhenFull::EvictClosestToFresh`] on a full table of live entries (GCRA burst 3, one unit per
/// second): at 0, the evictee has used one unit (due back at 1 s) and keys 101..108 all three
/// (3 s). At 0 a new key's insert evicts the evictee (the closest to fresh: one unit more still
/// leaves it the closest), claiming its slot by a compare-and-swap from the state it judged to
/// `RESERVED`, while another thread checks the evictee. If the check updates the state first,
/// the claim fails and the insert chooses again under the shard lock, evicting the evictee with
/// its new state; if the claim wins, the evictee's check finds its key gone and inserts it
/// again, evicting the new key (now the closest to fresh) in turn.
///
/// Either way both are admitted, and the two admissions are one sequence of updates on the
/// evictee's state, which the new key inherits (so it is never looser than that state): 1 and
/// then 0 remaining. The key of the later admission holds the combined state (three units,
/// reset after 3 s); the other is not in the table (a peek reports it fresh); the other keys
/// are untouched; and the stats count one eviction, or two when the evictee came back, as many
/// inserts, and nothing refused. A claim that overwrites the state without its compare-and-swap,
/// or one that ignores a failed compare-and-swap instead of choosing again, loses the check's
/// update: both admissions then report 1 remaining.
fn eviction_races_with_a_check_of_the_evictee<M: KeyMode<u64>>(name: &str) {
    explore_within(name, TWO_THREAD_PREEMPTION_BOUND, || {
        let table = Arc::new(one_bucket_table::<u64, _, M>(
            gcra(3),
            WhenFull::EvictClosestToFresh,
        ));
        assert!(table.check_at(&EVICTEE, at(0)).is_allowed());
        for key in 101..108 {
            let full_burst = Request::cost(3).at(at(0));
            assert!(table.check_with(&key, full_burst).unwrap().is_allowed());
        }
        assert_eq!(table.stats(), stats(8, 0, 0));

        let plans = vec![vec![check(NEW_KEY, 0)], vec![check(EVICTEE, 0)]];
        let outcomes = run_concurrently(MODEL_THREAD, &table, plans, perform_keyed);
        let (inserted, checked) = (outcomes[0][0], outcomes[1][0]);
        assert!(
            outcomes
                .iter()
                .flatten()
                .all(|decision| decision.is_allowed() && !decision.is_untracked()),
            "both fit the evictee's state (two of three units left): {outcomes:?}"
        );
        assert_admissions_form_one_sequence(2, &outcomes);

        let (holder, evicted, evictions) = if inserted.remaining() == 0 {
            (NEW_KEY, EVICTEE, 1)
        } else {
            assert_eq!(checked.remaining(), 0, "{outcomes:?}");
            (EVICTEE, NEW_KEY, 2)
        };
        let held = peeked(&*table, &holder, 0);
        assert_eq!(
            (held.remaining(), held.reset_after()),
            (0, Duration::from_secs(3)),
            "key {holder} made the later admission: it holds all three units: {outcomes:?}"
        );
        let gone = peeked(&*table, &evicted, 0);
        assert_eq!(
            (gone.remaining(), gone.reset_after()),
            (3, Duration::ZERO),
            "key {evicted} was evicted: it is fresh: {outcomes:?}"
        );
        for key in 101..108 {
            let untouched = peeked(&*table, &key, 0);
            assert_eq!(
                (untouched.remaining(), untouched.reset_after()),
                (0, Duration::from_secs(3)),
                "key {key}: untouched"
            );
        }
        assert_eq!(table.stats(), stats(8 + evictions, 0, evictions));
        assert_eq!(table.entries(), 8);
    });
}

#[test]
fn an_eviction_races_with_a_check_of_the_evictee() {
    eviction_races_with_a_check_of_the_evictee::<Exact>("keyed: eviction vs check of the evictee");
}

#[test]
fn hashed_keys_eviction_races_with_a_check_of_the_evictee() {
    eviction_races_with_a_check_of_the_evictee::<Hashed>(
        "keyed (hashed): eviction vs check of the evictee",
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

/// A peek racing a reclaim, on GCRA burst 2, one unit per second. The reclaimed key used one
/// unit at 0 (reclaimable from 1 s), the seven others one unit each at 0.9 s (live until 1.9 s).
/// At 1 s the new key reclaims the reclaimed key's slot (the only reclaimable one), while a
/// peek with a reading of 0.5 s looks at `peeked`. At 0.5 s the reclaimed key's state has one
/// unit left (reset after 0.5 s), a fresh key two, and the new key's state none: so the peek's
/// figures tell which state it read.
///
/// A peek of the reclaimed key reports its state or, once the slot is claimed, fresh (the key
/// is no longer in the table); a peek of a key never seen reports fresh. Never the new key's
/// state, never another key's. And the peek inserts nothing and changes nothing: afterwards the
/// reclaimed key is fresh, the new key and the others hold their states, and the stats show
/// the one reclaim.
fn peek_races_a_reclaim<K, M>(
    name: &str,
    keys: fn(&KeyedLimiter<K, Gcra, ManualClock, M>) -> PeekRace<K>,
) where
    K: Hash + Copy + Eq + Send + Sync + std::fmt::Debug + 'static,
    M: KeyMode<K>,
{
    explore_within(name, TWO_THREAD_PREEMPTION_BOUND, move || {
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
        assert!(inserted.is_allowed() && !inserted.is_untracked());
        assert_eq!(
            inserted.remaining(),
            1,
            "the new key judged on its own state"
        );

        let fresh = (2, Duration::ZERO);
        let reclaimed_state = (1, Duration::from_millis(500));
        let reported = (peek.remaining(), peek.reset_after());
        let peeked_was_in_table = keys.peeked == keys.reclaimed;
        assert!(
            peek.is_allowed() && !peek.is_untracked(),
            "a peek at 0.5 s of {:?} reported {reported:?}",
            keys.peeked
        );
        assert!(
            reported == fresh || (peeked_was_in_table && reported == reclaimed_state),
            "a peek at 0.5 s of {:?} (in the table: {peeked_was_in_table}) reported \
             (remaining, reset after) {reported:?}: neither fresh {fresh:?} nor the reclaimed \
             key's state {reclaimed_state:?}",
            keys.peeked
        );

        let after = |key: &K, now_ns: u64| {
            let decision = peeked(&*table, key, now_ns);
            (decision.remaining(), decision.reset_after())
        };
        assert_eq!(after(&keys.reclaimed, SECOND_NS / 2), fresh, "reclaimed");
        assert_eq!(after(&keys.peeked, SECOND_NS / 2), fresh, "not inserted");
        assert_eq!(after(&keys.new, SECOND_NS), (1, Duration::from_secs(1)));
        for other in &keys.others {
            assert_eq!(after(other, SECOND_NS), (1, Duration::from_millis(900)));
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
fn a_peek_of_a_key_being_reclaimed_reports_its_state_or_fresh() {
    peek_races_a_reclaim(
        "keyed: peek of the reclaimed key vs the reclaim",
        peek_at_the_reclaimed_key::<Exact>,
    );
}

/// As above, with hinted lookups: the reclaim rewrites the slot's hint and one-word identity
/// while the peek may be reading them.
#[test]
fn hashed_keys_peek_of_a_key_being_reclaimed_reports_its_state_or_fresh() {
    peek_races_a_reclaim(
        "keyed (hashed): peek of the reclaimed key vs the reclaim",
        peek_at_the_reclaimed_key::<Hashed>,
    );
}

/// The torn-identity race of [`a_check_never_decides_on_an_identity_half_rewritten_by_a_reclaim`]
/// with a peek: the torn key, never seen, must be reported fresh, never on the reclaimed key's
/// state (nor the new key's). Fails without the state re-read after the identity.
#[test]
fn a_peek_never_reports_an_identity_half_rewritten_by_a_reclaim() {
    peek_races_a_reclaim("keyed: torn two-word identity, peeked", |table| {
        let keys = TornIdentity::in_table(table);
        PeekRace {
            reclaimed: keys.reclaimed,
            new: keys.new,
            others: core::array::from_fn(|index| exact_key(100 + index as u128, 0)),
            peeked: keys.torn,
        }
    });
}

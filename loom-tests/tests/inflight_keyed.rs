//! Loom models of the keyed in-flight limiter (src/inflight/keyed.rs): a key's units in flight
//! and its release count share one slot word of the keyed table (src/quota/concurrency.rs); an
//! acquire is the table's check (one compare-and-swap on the fast path), a release looks its
//! key up again and applies the release step through the table's guarded driver
//! (`apply_if_present` in src/store/table/protocol.rs), and an entry with nothing in flight is
//! fresh: the next new key that needs its slot reclaims it.
//!
//! Every unit a thread gets it uses in a *guarded section* of its key, as in the direct
//! in-flight models (tests/inflight.rs): it adds its units to the key's `inside` (a Relaxed
//! read-modify-write) and asserts the sum is within the limit, then increments the key's
//! `guarded` non-atomically (a Relaxed load, then a Relaxed store of one more), so only the
//! permits' own Acquire and Release order one section before the next. After the joins every
//! model asserts each key's units in flight, and `guarded` equal to the sections run. A permit
//! whose release finds its units nowhere (its key gone from the table, or fewer units in flight
//! than it holds) panics when dropped under `cfg(nanolimit_loom)`.
//!
//! Tables have one shard and one bucket (capacity 1: 8 slots) and a fixed seed, as in
//! tests/keyed.rs; keys are `Exact` unless the model's name says `hashed_keys`.
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test inflight_keyed`

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use nanolimit::inflight::{AcquireError, KeyedInFlightLimiter, Permit};
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::WhenFull;
use nanolimit_loom_tests::{
    explore, run_concurrently, Bounds, ModelThread, UNREACHED_PREEMPTION_BOUND,
};

/// Every plan runs on a spawned thread while the model's thread only joins (see
/// [`ModelThread`]).
const MODEL_THREAD: ModelThread = ModelThread::OnlyJoins;

/// The key every one-key model uses.
const KEY: u64 = 1;
/// The reclaim model's keys: the one whose entry is reclaimed, and the new key reclaiming it.
const OLD_KEY: u64 = 100;
const NEW_KEY: u64 = 200;
/// The reclaim model's other keys: each holds a unit for the whole model, so the table has no
/// other slot to give.
const LIVE_KEYS: std::ops::Range<u64> = 101..108;

/// What the threads share.
struct Shared<M: KeyMode<u64>> {
    limiter: KeyedInFlightLimiter<u64, M>,
    /// The keys the threads use, and per key: units inside guarded sections now, and guarded
    /// sections run, counted non-atomically.
    keys: Vec<u64>,
    inside: Vec<AtomicU64>,
    guarded: Vec<AtomicU64>,
    /// Whether a guarded section also reads its key's units in flight, which must then be
    /// exactly its own (each key used by one thread only).
    reads_in_flight: bool,
    /// Whether one key's sections never overlap (a limit of 1, or one thread per key), so
    /// that `guarded` must count every section (else two may race on it, legitimately).
    exclusive: bool,
}

impl<M: KeyMode<u64>> Shared<M> {
    fn new(limit: u64, keys: &[u64], reads_in_flight: bool, exclusive: bool) -> Arc<Self> {
        let limiter = KeyedInFlightLimiter::<u64>::builder(limit)
            .capacity(1)
            .shards(1)
            .seed(7)
            .when_full(WhenFull::Deny)
            .key_mode::<M>()
            .build()
            .expect("a one-bucket table");
        Arc::new(Shared {
            limiter,
            keys: keys.to_vec(),
            inside: keys.iter().map(|_| AtomicU64::new(0)).collect(),
            guarded: keys.iter().map(|_| AtomicU64::new(0)).collect(),
            reads_in_flight,
            exclusive,
        })
    }

    fn index(&self, key: u64) -> usize {
        self.keys
            .iter()
            .position(|&known| known == key)
            .expect("a modelled key")
    }

    /// Uses `permit`'s units of `key` in a guarded section, then drops it.
    fn use_permit(&self, key: u64, permit: Permit<'_, KeyedInFlightLimiter<u64, M>>) {
        let units = permit.units();
        let index = self.index(key);
        let now_inside = self.inside[index].fetch_add(units, Ordering::Relaxed) + units;
        let limit = self.limiter.limit();
        assert!(
            now_inside <= limit,
            "{now_inside} units of key {key} inside a limit of {limit}"
        );
        if self.reads_in_flight {
            assert_eq!(
                self.limiter.in_flight(&key),
                units,
                "key {key}: its entry counts other units than its one permit's"
            );
        }
        let count = self.guarded[index].load(Ordering::Relaxed);
        self.guarded[index].store(count + 1, Ordering::Relaxed);
        self.inside[index].fetch_sub(units, Ordering::Relaxed);
        drop(permit);
    }
}

/// One operation a thread makes: `try_acquire_many(&key, units)`, used if served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TryAcquire {
    key: u64,
    units: u64,
}

/// What an operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Served this many units of this key (and used them).
    Served(u64, u64),
    /// Refused: the key's units were in flight.
    Busy(u64),
    /// Refused: a new key, and every slot held a key with units in flight.
    TableFull(u64),
}

fn perform<M: KeyMode<u64>>(shared: &Shared<M>, operation: TryAcquire) -> Outcome {
    let TryAcquire { key, units } = operation;
    match shared.limiter.try_acquire_many(&key, units) {
        Ok(permit) => {
            assert!(!permit.is_untracked(), "the table refuses, never untracks");
            shared.use_permit(key, permit);
            Outcome::Served(key, units)
        }
        Err(AcquireError::Busy { .. }) => Outcome::Busy(key),
        Err(AcquireError::TableFull) => Outcome::TableFull(key),
        Err(error) => panic!("key {key}: {error}"),
    }
}

fn served(outcomes: &[Vec<Outcome>], key: u64) -> u64 {
    outcomes
        .iter()
        .flatten()
        .filter(|outcome| matches!(outcome, Outcome::Served(k, _) if *k == key))
        .count() as u64
}

/// Asserts `key` has nothing in flight and, where its sections never overlap, one guarded
/// section per service.
fn assert_all_returned<M: KeyMode<u64>>(shared: &Shared<M>, key: u64, outcomes: &[Vec<Outcome>]) {
    let limiter = &shared.limiter;
    assert_eq!(
        (limiter.in_flight(&key), limiter.remaining(&key)),
        (0, limiter.limit()),
        "key {key}: {outcomes:?}"
    );
    if shared.exclusive {
        assert_eq!(
            shared.guarded[shared.index(key)].load(Ordering::Relaxed),
            served(outcomes, key),
            "key {key}: a guarded section's increment was lost: {outcomes:?}"
        );
    }
}

fn unit_try(key: u64) -> TryAcquire {
    TryAcquire { key, units: 1 }
}

/// Runs `plans` of unit tries of [`KEY`], present in the table (inserted, with nothing in
/// flight) before the threads start, on a limit of `limit`; asserts every unit returned.
fn one_key_model(limit: u64, plans: Vec<Vec<TryAcquire>>) -> Vec<Vec<Outcome>> {
    let shared = Shared::<Exact>::new(limit, &[KEY], false, limit == 1);
    drop(shared.limiter.try_acquire(&KEY).expect("a fresh key"));
    let outcomes = run_concurrently(MODEL_THREAD, &shared, plans, perform);
    assert_all_returned(&shared, KEY, &outcomes);
    assert_eq!(shared.limiter.stats().inserts, 1, "{outcomes:?}");
    outcomes
}

/// (1) Unit acquires race releases of one present key on a limit of 1: never two inside, the
/// next holder's section ordered after the previous one's (no guarded increment lost), nothing
/// lost, and one of the first tries served (a try is refused only while the other thread holds
/// the unit).
#[test]
fn unit_acquires_race_releases_of_one_key() {
    explore(
        "keyed inflight: unit acquires race releases, limit 1",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let outcomes = one_key_model(
                1,
                vec![vec![unit_try(KEY), unit_try(KEY)], vec![unit_try(KEY)]],
            );
            assert!(
                outcomes[0][0] != Outcome::Busy(KEY) || outcomes[1][0] != Outcome::Busy(KEY),
                "{outcomes:?}"
            );
        },
    );
}

/// (1') One unit try on each thread under a limit of 2, where neither is refused: an
/// acquire's compare-and-swap may land between a release's lookup and its update. Both are
/// served and every unit returns (two sections may overlap here, so `guarded` is not
/// compared); a release that overwrote an acquire's update would leave a unit counted that
/// nobody holds, or one held that is not counted (whose release then finds too few in flight
/// and panics).
#[test]
fn acquires_land_between_a_release_s_lookup_and_its_update() {
    explore(
        "keyed inflight: acquires race releases, limit 2",
        // 20 s under the exhaustive bound.
        Bounds {
            default: 6,
            exhaustive: UNREACHED_PREEMPTION_BOUND,
        },
        || {
            let outcomes = one_key_model(2, vec![vec![unit_try(KEY)], vec![unit_try(KEY)]]);
            assert_eq!(served(&outcomes, KEY), 2, "{outcomes:?}");
        },
    );
}

/// (2) A keyed release races a reclaim of its key's slot by another key. Limit 2; key
/// [`OLD_KEY`] inserted first (the first slot, the first reclaim candidate) with nothing in
/// flight; keys 101..107 hold a unit each throughout, so the table has no other slot. Thread 1
/// acquires a unit of the old key, uses it and releases it; thread 2 acquires a unit of
/// [`NEW_KEY`], which can only reclaim the old key's slot, while it has nothing in flight. Each
/// guarded section reads its key's units in flight: exactly its own unit. Afterwards both keys
/// have nothing in flight (a release into the other key's state would leave a unit there, or
/// take one away), the live keys one unit each, and at least one of the two was served (each
/// is refused only while the other holds the slot).
///
/// Under [`UNREACHED_PREEMPTION_BOUND`] this takes 25 s (`Hashed` keys) to 85 s (`Exact`): the
/// default run explores it within 5 preemptions.
fn release_races_a_reclaim<M: KeyMode<u64>>(name: &str) {
    let bounds = Bounds {
        default: 5,
        exhaustive: UNREACHED_PREEMPTION_BOUND,
    };
    explore(name, bounds, || {
        let shared = Shared::<M>::new(2, &[OLD_KEY, NEW_KEY], true, true);
        drop(shared.limiter.try_acquire(&OLD_KEY).expect("a fresh key"));
        let live: Vec<_> = LIVE_KEYS
            .map(|key| shared.limiter.try_acquire(&key).expect("a vacant slot"))
            .collect();
        let plans = vec![vec![unit_try(OLD_KEY)], vec![unit_try(NEW_KEY)]];
        let outcomes = run_concurrently(MODEL_THREAD, &shared, plans, perform);
        assert!(
            served(&outcomes, OLD_KEY) + served(&outcomes, NEW_KEY) >= 1,
            "{outcomes:?}"
        );
        for key in [OLD_KEY, NEW_KEY] {
            assert_all_returned(&shared, key, &outcomes);
        }
        for key in LIVE_KEYS {
            assert_eq!(shared.limiter.in_flight(&key), 1, "key {key}: {outcomes:?}");
        }
        let stats = shared.limiter.stats();
        assert_eq!(stats.evictions, 0, "{stats:?}");
        // The new key reclaims at most once; the old key, refused or not, at most once back.
        assert!(stats.reclaims <= 2, "{stats:?}: {outcomes:?}");
        drop(live);
        for key in LIVE_KEYS {
            assert_eq!(shared.limiter.in_flight(&key), 0, "key {key}");
        }
    });
}

#[test]
fn a_release_races_a_reclaim_of_its_slot_by_another_key() {
    release_races_a_reclaim::<Exact>("keyed inflight: release vs reclaim by another key");
}

/// As above, with hinted lookups: the reclaim rewrites the slot's hint while the old key's
/// acquire or release may be reading it.
#[test]
fn hashed_keys_release_races_a_reclaim_of_its_slot_by_another_key() {
    release_races_a_reclaim::<Hashed>("keyed inflight (hashed): release vs reclaim by another key");
}

//! The keyed limiters under test, behind one trait, [`KeyedSubject`], that every keyed benchmark
//! drives: `benches/keyed.rs` (criterion), `benches/callgrind_keyed.rs` (instruction counts) and
//! the keyed scenarios of `benches/contention.rs`. Included by `#[path]`, after `quota_spec.rs`.
//! Generic loops over the trait are monomorphised: no dynamic dispatch in a measured loop.
//!
//! Defined here: nanolimit's [`KeyedLimiter`] in each configuration the benchmarks name, and
//! governor's keyed limiter on its default clock, [`GovernorKeyed`], over any hasher. Subjects of
//! one benchmark only implement the trait there (governor on its fake clock in
//! `governor_fake_clock.rs`, on its upkeep clock in `keyed.rs`; the mutex-hashmap in
//! `contention/subjects.rs`; the empty `loop_only` in `callgrind_keyed.rs`).

use crate::quota_spec::{FromSpec, QuotaSpec};
use governor::clock::DefaultClock;
use governor::state::keyed::DashMapStateStore;
use nanolimit::clock::UpkeepClock;
use nanolimit::keyed::{Exact, Hashed};
use nanolimit::{KeyedLimiter, ManualClock, QuantaClock, Stats, Timestamp, WhenFull};
use std::hash::BuildHasher;

/// Capacity of the nanolimit tables of `benches/keyed.rs`'s `new_key_each_call`, and the size
/// at which the unbounded maps are swept there (see [`KeyedSubject::sweep`]).
pub const NEW_KEY_TABLE_CAPACITY: usize = 100_000;

/// A keyed limiter under test, with `u64` keys.
///
/// Time reaches a check in one of three ways, one method each:
///
/// | method | time | used by |
/// |---|---|---|
/// | [`check`](Self::check) | the implementation's own clock, read per call | contention's keyed scenarios |
/// | [`check_at`](Self::check_at) | a reading of that clock the caller took earlier ([`now`](Self::now)) | contention's packet loop, one reading per batch |
/// | [`check_at_caller_ns`](Self::check_at_caller_ns) | nanoseconds the caller counts itself, for the implementations that take the caller's time; the others read their own clock | `keyed.rs`, `callgrind_keyed.rs` |
pub trait KeyedSubject: Sync + Sized {
    /// The implementation's name in `keyed.rs` benchmark ids and `callgrind_keyed.rs` cases.
    const NAME: &'static str;

    /// A time to judge a check at, as the implementation takes it: nanolimit's [`Timestamp`],
    /// an `Instant`, or `()` for an implementation with no API taking the time (every check
    /// then reads its own clock).
    type Timestamp: Copy;

    /// A limiter under `quota`, sized for `capacity` keys where the implementation is bounded.
    fn build(quota: &QuotaSpec, capacity: usize) -> Self;

    /// A reading of the implementation's own clock.
    fn now(&self) -> Self::Timestamp;

    /// Checks one unit for `key` at `now` (a reading of [`now`](Self::now)); true if allowed.
    fn check_at(&self, key: u64, now: Self::Timestamp) -> bool;

    /// Checks one unit for `key` now, on the implementation's own clock; true if allowed.
    #[inline]
    fn check(&self, key: u64) -> bool {
        self.check_at(key, self.now())
    }

    /// Checks one unit for `key` in a loop that counts its own time: `caller_ns` nanoseconds.
    /// Caller-time implementations are judged at that time (nanolimit makes a [`Timestamp`] of
    /// it per call; governor's fake clock is moved to follow it); the others ignore it and read
    /// their own clock. True if allowed.
    fn check_at_caller_ns(&self, key: u64, caller_ns: u64) -> bool;

    /// Keys the table holds.
    fn stored_keys(&self) -> u64;

    /// New keys the table could not hold (refused or left untracked).
    fn untracked_new_keys(&self) -> u64;

    /// A line about the limiter's state after a run (keys held, table counters).
    fn state_report(&self) -> String;

    /// Untimed housekeeping between samples of `keyed.rs`'s `new_key_each_call`.
    fn sweep(&self) {}
}

/// Implements [`KeyedSubject`] for nanolimit's keyed limiter on one clock and key mode, for
/// every algorithm. Tables refuse new keys when full (`WhenFull::Deny`, the default) and have
/// the default shards and a random seed.
macro_rules! nanolimit_subject {
    (
        $clock:ty,
        $key_mode:ty,
        $name:literal,
        clock: $make_clock:expr,
        check_at_caller_ns: |$self_:ident, $key:ident, $caller_ns:ident| $check:expr $(,)?
    ) => {
        impl<Q: FromSpec> KeyedSubject for KeyedLimiter<u64, Q, $clock, $key_mode> {
            const NAME: &'static str = $name;

            type Timestamp = Timestamp;

            fn build(quota: &QuotaSpec, capacity: usize) -> Self {
                KeyedLimiter::<u64, Q>::builder(Q::from_spec(quota))
                    .capacity(capacity)
                    .when_full(WhenFull::Deny)
                    .clock($make_clock)
                    .key_mode::<$key_mode>()
                    .build()
                    .expect("valid table")
            }

            #[inline]
            fn now(&self) -> Timestamp {
                KeyedLimiter::now(self)
            }

            #[inline]
            fn check_at(&self, key: u64, now: Timestamp) -> bool {
                KeyedLimiter::check_at(self, &key, now).is_allowed()
            }

            #[inline]
            fn check_at_caller_ns(&$self_, $key: u64, $caller_ns: u64) -> bool {
                $check
            }

            fn stored_keys(&self) -> u64 {
                table_stored_keys(&self.stats())
            }

            fn untracked_new_keys(&self) -> u64 {
                table_untracked_new_keys(&self.stats())
            }

            fn state_report(&self) -> String {
                table_report(self.bytes_per_key(), &self.stats())
            }
        }
    };
}

nanolimit_subject!(
    QuantaClock,
    Hashed,
    "nanolimit_hashed",
    clock: QuantaClock::new(),
    check_at_caller_ns: |self, key, _caller_ns| KeyedLimiter::check(self, &key).is_allowed(),
);
// The caller-time subjects never read their (manual) clock: a loop counting its own
// nanoseconds makes a `Timestamp` of them per call with `Timestamp::saturating_from_ns`, the
// clamp to the horizon that a clock applies to its own readings.
nanolimit_subject!(
    ManualClock,
    Hashed,
    "nanolimit_hashed_caller_time",
    clock: ManualClock::new(),
    check_at_caller_ns: |self, key, caller_ns| {
        KeyedLimiter::check_at(self, &key, Timestamp::saturating_from_ns(caller_ns)).is_allowed()
    },
);
nanolimit_subject!(
    QuantaClock,
    Exact,
    "nanolimit_exact",
    clock: QuantaClock::new(),
    check_at_caller_ns: |self, key, _caller_ns| KeyedLimiter::check(self, &key).is_allowed(),
);
nanolimit_subject!(
    ManualClock,
    Exact,
    "nanolimit_exact_caller_time",
    clock: ManualClock::new(),
    check_at_caller_ns: |self, key, caller_ns| {
        KeyedLimiter::check_at(self, &key, Timestamp::saturating_from_ns(caller_ns)).is_allowed()
    },
);
nanolimit_subject!(
    UpkeepClock,
    Hashed,
    "nanolimit_hashed_upkeep_clock",
    clock: UpkeepClock::new(UpkeepClock::DEFAULT_INTERVAL).expect("upkeep thread"),
    check_at_caller_ns: |self, key, _caller_ns| KeyedLimiter::check(self, &key).is_allowed(),
);

/// nanolimit's keyed limiter built with counters (`with_counters()`), hashed keys, checked at
/// the caller's time: against `nanolimit_hashed_caller_time`, what counting costs a keyed check.
pub struct CountedKeyed<Q: nanolimit::Quota>(
    pub KeyedLimiter<u64, Q, ManualClock, Hashed, nanolimit::counters::Counters>,
);

impl<Q: FromSpec> KeyedSubject for CountedKeyed<Q> {
    const NAME: &'static str = "nanolimit_hashed_counted_caller_time";

    type Timestamp = Timestamp;

    fn build(quota: &QuotaSpec, capacity: usize) -> Self {
        CountedKeyed(
            KeyedLimiter::<u64, Q>::builder(Q::from_spec(quota))
                .capacity(capacity)
                .when_full(WhenFull::Deny)
                .clock(ManualClock::new())
                .with_counters()
                .build()
                .expect("valid table"),
        )
    }

    #[inline]
    fn now(&self) -> Timestamp {
        self.0.now()
    }

    #[inline]
    fn check_at(&self, key: u64, now: Timestamp) -> bool {
        self.0.check_at(&key, now).is_allowed()
    }

    #[inline]
    fn check_at_caller_ns(&self, key: u64, caller_ns: u64) -> bool {
        self.0
            .check_at(&key, Timestamp::saturating_from_ns(caller_ns))
            .is_allowed()
    }

    fn stored_keys(&self) -> u64 {
        table_stored_keys(&self.0.stats())
    }

    fn untracked_new_keys(&self) -> u64 {
        table_untracked_new_keys(&self.0.stats())
    }

    fn state_report(&self) -> String {
        table_report(self.0.bytes_per_key(), &self.0.stats())
    }
}

/// A hasher for governor's `DashMap`, named for benchmark ids.
pub trait GovernorHasher: BuildHasher + Clone + Default + Send + Sync + 'static {
    /// The name of governor's keyed limiter with this hasher on its default clock.
    const NAME: &'static str;
    /// The name of governor's keyed limiter with this hasher on its fake clock.
    const FAKE_CLOCK_NAME: &'static str;
}

/// The hasher of governor's default keyed store: std's SipHash `RandomState`.
pub type DefaultHasher = governor::state::keyed::DefaultHasher;

impl GovernorHasher for DefaultHasher {
    const NAME: &'static str = "governor_dashmap";
    const FAKE_CLOCK_NAME: &'static str = "governor_dashmap_fake_clock";
}

impl GovernorHasher for ahash::RandomState {
    const NAME: &'static str = "governor_dashmap_ahash";
    const FAKE_CLOCK_NAME: &'static str = "governor_dashmap_ahash_fake_clock";
}

/// governor's keyed limiter on its default clock: a `DashMap` with hasher `S`. With the default
/// hasher this is governor's default keyed limiter (what `RateLimiter::keyed` and
/// `RateLimiter::dashmap` build, `governor::DefaultKeyedRateLimiter<u64>`).
pub type GovernorKeyed<S = DefaultHasher> =
    governor::RateLimiter<u64, DashMapStateStore<u64, S>, DefaultClock>;

impl<S: GovernorHasher> KeyedSubject for GovernorKeyed<S> {
    const NAME: &'static str = S::NAME;

    /// governor has no API taking the caller's time: every check reads its own (quanta) clock,
    /// so in the packet loop it pays one clock read per check where nanolimit pays one per
    /// batch.
    type Timestamp = ();

    /// governor's map is unbounded: `capacity` is ignored (the map grows as keys arrive).
    fn build(quota: &QuotaSpec, _capacity: usize) -> Self {
        governor::RateLimiter::dashmap_with_hasher(quota.governor(), S::default())
    }

    #[inline]
    fn now(&self) {}

    #[inline]
    fn check_at(&self, key: u64, _now: ()) -> bool {
        self.check_key(&key).is_ok()
    }

    #[inline]
    fn check_at_caller_ns(&self, key: u64, _caller_ns: u64) -> bool {
        self.check_key(&key).is_ok()
    }

    fn stored_keys(&self) -> u64 {
        self.len() as u64
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    fn state_report(&self) -> String {
        unbounded_map_report(self.len())
    }

    /// What governor's users run periodically: see [`sweep_unbounded_map`].
    fn sweep(&self) {
        sweep_unbounded_map(Self::NAME, || self.len(), || self.retain_recent());
    }
}

/// Keys a nanolimit table holds, from its counters.
pub fn table_stored_keys(stats: &Stats) -> u64 {
    stats.inserts - stats.reclaims - stats.evictions
}

/// New keys a nanolimit table could not hold, from its counters.
pub fn table_untracked_new_keys(stats: &Stats) -> u64 {
    stats.refused_new_keys + stats.untracked_new_keys
}

/// The state report of a nanolimit table (keyed limiters, the keyed sliding log).
pub fn table_report(bytes_per_key: usize, stats: &Stats) -> String {
    format!(
        "{bytes_per_key} B/key; inserts {}, reclaims {}, refused new keys {}, untracked new keys {}, evictions {}",
        stats.inserts,
        stats.reclaims,
        stats.refused_new_keys,
        stats.untracked_new_keys,
        stats.evictions,
    )
}

/// The state report of an implementation whose map is unbounded.
pub fn unbounded_map_report(keys: usize) -> String {
    format!("holds {keys} keys (unbounded map)")
}

/// What governor's users run periodically, for the governor subjects' `sweep`: once the map
/// holds more keys than nanolimit's table, drop the entries equivalent to fresh (all of them,
/// under the generous quota).
pub fn sweep_unbounded_map(name: &str, len: impl Fn() -> usize, retain_recent: impl Fn()) {
    if len() > NEW_KEY_TABLE_CAPACITY {
        retain_recent();
        assert!(
            len() <= NEW_KEY_TABLE_CAPACITY,
            "{name}: the sweep left {} keys",
            len()
        );
    }
}

//! The keyed limiters under test, shared by `benches/keyed.rs` and
//! `examples/callgrind_keyed.rs` (included by `#[path]`, after `keyed_quotas.rs` and
//! `governor_fake_clock.rs`), so both measure the same configurations.

use crate::governor_fake_clock::GovernorFakeClock;
use crate::keyed_quotas::Quota;
use governor::clock::{DefaultClock, QuantaUpkeepClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use nanolimit::{
    Exact, Gcra, Hashed, KeyedLimiter, ManualClock, QuantaClock, Timestamp, UpkeepClock, WhenFull,
};
use std::hash::BuildHasher;

/// How far the caller-supplied clock moves between two checks: more than the generous quota's
/// emission interval (1 ns), so every allowed check stays allowed and every entry is fresh
/// (reclaimable) one check after its last use.
pub const CALLER_TIME_STEP_NS: u64 = 4;

/// Capacity of the nanolimit tables of `new_key_each_call`, and the size at which governor's
/// map is swept there.
pub const NEW_KEY_TABLE_CAPACITY: usize = 100_000;

/// A keyed limiter under test, with `u64` keys.
pub trait Subject: Sync + Sized {
    /// The implementation's name in benchmark ids.
    const NAME: &'static str;

    /// A limiter under `quota`, sized for `capacity` keys where the implementation is bounded.
    fn build(quota: Quota, capacity: usize) -> Self;

    /// Checks one unit for `key`; `now_ns` is the caller's clock, ignored by implementations
    /// that read their own.
    fn check(&self, key: u64, now_ns: u64) -> bool;

    /// Keys the table holds.
    fn stored_keys(&self) -> u64;

    /// New keys the table could not hold (refused or left untracked).
    fn untracked_new_keys(&self) -> u64;

    /// Untimed housekeeping between samples of `new_key_each_call`.
    fn sweep(&self) {}
}

macro_rules! nanolimit_subject {
    (
        $limiter:ty,
        $name:literal,
        build: |$builder:ident| $configure:expr,
        check: |$self_:ident, $key:ident, $now_ns:ident| $check:expr $(,)?
    ) => {
        impl Subject for $limiter {
            const NAME: &'static str = $name;

            fn build(quota: Quota, capacity: usize) -> Self {
                let $builder = KeyedLimiter::<u64, Gcra>::builder(quota.nanolimit())
                    .capacity(capacity)
                    .when_full(WhenFull::Deny);
                $configure.build().expect("valid table")
            }

            #[inline]
            fn check(&$self_, $key: u64, $now_ns: u64) -> bool {
                $check
            }

            fn stored_keys(&self) -> u64 {
                let stats = self.stats();
                stats.inserts - stats.reclaims - stats.evictions
            }

            fn untracked_new_keys(&self) -> u64 {
                let stats = self.stats();
                stats.refused_new_keys + stats.untracked_new_keys
            }
        }
    };
}

nanolimit_subject!(
    KeyedLimiter<u64, Gcra, QuantaClock, Hashed>,
    "nanolimit_hashed",
    build: |builder| builder,
    check: |self, key, _now_ns| KeyedLimiter::check(self, &key).is_allowed(),
);
nanolimit_subject!(
    KeyedLimiter<u64, Gcra, ManualClock, Hashed>,
    "nanolimit_hashed_caller_time",
    build: |builder| builder.clock(ManualClock::new()),
    check: |self, key, now_ns| self.check_at(&key, Timestamp::saturating_from_ns(now_ns)).is_allowed(),
);
nanolimit_subject!(
    KeyedLimiter<u64, Gcra, QuantaClock, Exact>,
    "nanolimit_exact",
    build: |builder| builder.exact_keys(),
    check: |self, key, _now_ns| KeyedLimiter::check(self, &key).is_allowed(),
);
nanolimit_subject!(
    KeyedLimiter<u64, Gcra, ManualClock, Exact>,
    "nanolimit_exact_caller_time",
    build: |builder| builder.clock(ManualClock::new()).exact_keys(),
    check: |self, key, now_ns| self.check_at(&key, Timestamp::saturating_from_ns(now_ns)).is_allowed(),
);
nanolimit_subject!(
    KeyedLimiter<u64, Gcra, UpkeepClock, Hashed>,
    "nanolimit_hashed_upkeep_clock",
    build: |builder| builder.clock(UpkeepClock::new(UpkeepClock::DEFAULT_INTERVAL).expect("upkeep thread")),
    check: |self, key, _now_ns| KeyedLimiter::check(self, &key).is_allowed(),
);

/// A hasher for governor's `DashMap`, named for benchmark ids.
pub trait GovernorHasher: BuildHasher + Clone + Default + Send + Sync + 'static {
    const NAME: &'static str;
    /// The name of governor's limiter with this hasher on its fake clock.
    const FAKE_CLOCK_NAME: &'static str;
}

impl GovernorHasher for std::hash::RandomState {
    const NAME: &'static str = "governor_dashmap";
    const FAKE_CLOCK_NAME: &'static str = "governor_dashmap_fake_clock";
}

impl GovernorHasher for ahash::RandomState {
    const NAME: &'static str = "governor_dashmap_ahash";
    const FAKE_CLOCK_NAME: &'static str = "governor_dashmap_ahash_fake_clock";
}

pub type GovernorKeyed<S> = governor::RateLimiter<u64, DashMapStateStore<u64, S>, DefaultClock>;

impl<S: GovernorHasher> Subject for GovernorKeyed<S> {
    const NAME: &'static str = S::NAME;

    /// governor's map is unbounded: `capacity` is ignored (the map grows as keys arrive).
    fn build(quota: Quota, _capacity: usize) -> Self {
        governor::RateLimiter::dashmap_with_hasher(quota.governor(), S::default())
    }

    #[inline]
    fn check(&self, key: u64, _now_ns: u64) -> bool {
        self.check_key(&key).is_ok()
    }

    fn stored_keys(&self) -> u64 {
        self.len() as u64
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    /// What governor's users run periodically: see [`sweep_unbounded_map`].
    fn sweep(&self) {
        sweep_unbounded_map(Self::NAME, || self.len(), || self.retain_recent());
    }
}

impl<S: GovernorHasher> Subject for GovernorFakeClock<S> {
    const NAME: &'static str = S::FAKE_CLOCK_NAME;

    /// Unbounded, like [`GovernorKeyed`]: `capacity` is ignored.
    fn build(quota: Quota, _capacity: usize) -> Self {
        GovernorFakeClock::new(quota.governor())
    }

    #[inline]
    fn check(&self, key: u64, now_ns: u64) -> bool {
        GovernorFakeClock::check(self, key, now_ns)
    }

    fn stored_keys(&self) -> u64 {
        self.0.len() as u64
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    /// As for [`GovernorKeyed`].
    fn sweep(&self) {
        sweep_unbounded_map(Self::NAME, || self.0.len(), || self.0.retain_recent());
    }
}

/// governor's default keyed limiter on its upkeep clock (a background thread stores the time;
/// a read is one atomic load and a conversion), with the same interval as nanolimit's
/// [`UpkeepClock`].
pub struct GovernorUpkeep(
    governor::RateLimiter<
        u64,
        DashMapStateStore<u64>,
        QuantaUpkeepClock,
        NoOpMiddleware<governor::clock::QuantaInstant>,
    >,
);

impl Subject for GovernorUpkeep {
    const NAME: &'static str = "governor_dashmap_upkeep_clock";

    /// Unbounded, like [`GovernorKeyed`]: `capacity` is ignored.
    fn build(quota: Quota, _capacity: usize) -> Self {
        GovernorUpkeep(governor::RateLimiter::new(
            quota.governor(),
            DashMapStateStore::default(),
            QuantaUpkeepClock::from_interval(UpkeepClock::DEFAULT_INTERVAL)
                .expect("quanta upkeep thread"),
        ))
    }

    #[inline]
    fn check(&self, key: u64, _now_ns: u64) -> bool {
        self.0.check_key(&key).is_ok()
    }

    fn stored_keys(&self) -> u64 {
        self.0.len() as u64
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    /// As for [`GovernorKeyed`].
    fn sweep(&self) {
        sweep_unbounded_map(Self::NAME, || self.0.len(), || self.0.retain_recent());
    }
}

/// What governor's users run periodically, for the governor cases' `sweep`: once the map holds
/// more keys than nanolimit's table, drop the entries equivalent to fresh (all of them, under
/// the generous quota).
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

pub type DefaultHasher = std::hash::RandomState;

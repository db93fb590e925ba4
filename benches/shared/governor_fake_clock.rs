//! governor's keyed limiter on its `FakeRelativeClock`, shared by `benches/keyed.rs` and
//! `benches/callgrind_keyed.rs` (included by `#[path]`, after `keyed_subjects.rs`): the
//! like-for-like peer of nanolimit's caller-time checks (governor has no API taking the time;
//! its fake clock costs one atomic load per read).

use crate::keyed_subjects::{
    sweep_unbounded_map, unbounded_map_report, GovernorHasher, KeyedSubject,
};
use crate::quota_spec::QuotaSpec;
use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use std::hash::BuildHasher;
use std::time::Duration;

/// How often (in caller time) the clock is moved forward, and by how much: every 1,024 calls at
/// the benchmarks' 4 ns caller-time step. Advancing is a compare-and-swap loop, so it is not
/// done per call; governor sees time at most this far behind nanolimit's caller time.
pub const FAKE_CLOCK_ADVANCE_NS: u64 = 4_096;

/// governor's keyed limiter (a `DashMap` with hasher `S`) on its fake clock.
pub struct GovernorFakeClock<S: BuildHasher + Clone>(
    pub  governor::RateLimiter<
        u64,
        DashMapStateStore<u64, S>,
        FakeRelativeClock,
        NoOpMiddleware<governor::nanos::Nanos>,
    >,
);

impl<S: BuildHasher + Clone + Default + Send + Sync> GovernorFakeClock<S> {
    /// An empty limiter (the map is unbounded) under `quota`.
    pub fn new(quota: governor::Quota) -> Self {
        GovernorFakeClock(governor::RateLimiter::new(
            quota,
            DashMapStateStore::with_hasher(S::default()),
            FakeRelativeClock::default(),
        ))
    }

    /// Moves the fake clock to follow caller time `caller_ns` (a multiple of the 4 ns step):
    /// forward by [`FAKE_CLOCK_ADVANCE_NS`] each time the caller passes a multiple of it.
    #[inline]
    pub fn follow(&self, caller_ns: u64) {
        if caller_ns % FAKE_CLOCK_ADVANCE_NS == 0 {
            self.0
                .clock()
                .advance(Duration::from_nanos(FAKE_CLOCK_ADVANCE_NS));
        }
    }
}

impl<S: GovernorHasher> KeyedSubject for GovernorFakeClock<S> {
    const NAME: &'static str = S::FAKE_CLOCK_NAME;

    /// Checks read the fake clock; only [`follow`](GovernorFakeClock::follow) moves it.
    type Timestamp = ();

    /// Unbounded, like `GovernorKeyed`: `capacity` is ignored.
    fn build(quota: &QuotaSpec, _capacity: usize) -> Self {
        GovernorFakeClock::new(quota.governor())
    }

    #[inline]
    fn now(&self) {}

    #[inline]
    fn check_at(&self, key: u64, _now: ()) -> bool {
        self.0.check_key(&key).is_ok()
    }

    #[inline]
    fn check_at_caller_ns(&self, key: u64, caller_ns: u64) -> bool {
        self.follow(caller_ns);
        self.0.check_key(&key).is_ok()
    }

    fn stored_keys(&self) -> u64 {
        self.0.len() as u64
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    fn state_report(&self) -> String {
        unbounded_map_report(self.0.len())
    }

    /// As for `GovernorKeyed`.
    fn sweep(&self) {
        sweep_unbounded_map(Self::NAME, || self.0.len(), || self.0.retain_recent());
    }
}

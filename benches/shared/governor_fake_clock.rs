//! governor's keyed limiter on its `FakeRelativeClock`, shared by `benches/keyed.rs` and
//! `examples/callgrind_keyed.rs` (included by `#[path]`): the like-for-like peer of nanolimit's
//! caller-time checks (governor has no API taking the time; its fake clock costs one atomic load
//! per read).

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

    /// Checks one unit for `key` at caller time `now_ns` (a multiple of the 4 ns step).
    #[inline]
    pub fn check(&self, key: u64, now_ns: u64) -> bool {
        if now_ns % FAKE_CLOCK_ADVANCE_NS == 0 {
            self.0
                .clock()
                .advance(Duration::from_nanos(FAKE_CLOCK_ADVANCE_NS));
        }
        self.0.check_key(&key).is_ok()
    }
}

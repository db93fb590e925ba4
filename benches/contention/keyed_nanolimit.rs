//! The adapter between the harness and `nanolimit::KeyedLimiter`: the only place the benchmark
//! touches the keyed API, so a change there is a change here.

use nanolimit::{Algorithm, Clock, KeyedLimiter, QuantaClock};
use std::time::Instant;

/// A nanolimit keyed limiter over `u64` keys (default hashed keys, default shards, default
/// behaviour when full), with a handle on its clock so the packet loop can read the same clock
/// once per batch and pass the reading to `check_key_at`.
pub struct NanolimitKeyed<A: Algorithm> {
    limiter: KeyedLimiter<u64, A, QuantaClock>,
    clock: QuantaClock,
    clock_origin: Instant,
}

impl<A: Algorithm> NanolimitKeyed<A> {
    /// A table for up to `capacity` keys under `policy`.
    pub fn new(policy: A, capacity: usize) -> Self {
        // Clones of a QuantaClock share its origin, so our readings are the limiter's readings.
        let clock_origin = Instant::now();
        let clock = QuantaClock::new();
        let limiter = KeyedLimiter::builder(policy)
            .capacity(capacity)
            .clock(clock.clone())
            .build()
            .expect("the benchmark's table capacities are valid");
        NanolimitKeyed {
            limiter,
            clock,
            clock_origin,
        }
    }

    /// One check of `key` now.
    #[inline]
    pub fn check_key(&self, key: u64) -> bool {
        self.limiter.check_key(&key).is_allowed()
    }

    /// One check of `key` at `now_ns`, a reading of [`now_ns`](Self::now_ns).
    #[inline]
    pub fn check_key_at(&self, key: u64, now_ns: u64) -> bool {
        self.limiter.check_key_at(&key, now_ns).is_allowed()
    }

    /// Reads the limiter's clock.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// Just before the limiter's clock read zero (window boundaries are aligned to it).
    pub fn clock_origin(&self) -> Instant {
        self.clock_origin
    }

    /// The table's slow-path counters and footprint, for the report.
    pub fn describe(&self) -> String {
        let stats = self.limiter.stats();
        format!(
            "{} B/key; inserts {}, reclaims {}, refused new keys {}, untracked new keys {}, evictions {}",
            self.limiter.bytes_per_key(),
            stats.inserts,
            stats.reclaims,
            stats.refused_new_keys,
            stats.untracked_new_keys,
            stats.evictions,
        )
    }
}

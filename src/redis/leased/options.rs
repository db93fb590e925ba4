//! Building a [`LeasedRedisLimiter`]: lease sizes, their lifetime, the local table's capacity,
//! the clock, and whether refills run in the background.

use super::policy::KEY_LEASES;
use super::{Inner, LeasedRedisLimiter};
use crate::clock::{Clock, QuantaClock};
use crate::engine::error::BuildError;
use crate::limiter::lease::{LeasePolicy, REDIS_LEASE_LIFETIME};
use crate::quota::Gcra;
use crate::redis::RedisLimiter;
use crate::sync::Arc;
use core::fmt;
use std::time::Duration;

/// The default capacity of the local table, in keys.
const DEFAULT_CAPACITY: usize = 100_000;
/// The largest lease the default configuration takes.
const DEFAULT_MAX_LEASE_UNITS: u64 = 1_024;
/// The largest local table.
const MAX_CAPACITY: usize = 1 << 28;

/// Configures a [`LeasedRedisLimiter`]; made by [`LeasedRedisLimiter::builder`].
///
/// | setting | default | set with |
/// |---|---|---|
/// | lease sizes | 1 to `min(1,024, burst / 8)` units (at least 1) | [`lease_units`](Self::lease_units) |
/// | lease lifetime | 100 ms | [`lease_lifetime`](Self::lease_lifetime) |
/// | local table | 100,000 keys | [`capacity`](Self::capacity) |
/// | clock (lease lifetimes) | [`QuantaClock`] | [`clock`](Self::clock) |
/// | background refills | on | [`background_refills`](Self::background_refills) |
///
/// ```
/// use nanolimit::redis::{LeasedRedisLimiter, RedisLimiter};
/// use nanolimit::Gcra;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let shared = RedisLimiter::builder(Gcra::per_second(10_000)?.with_burst(1_000)?)
///     .build("redis://127.0.0.1:6379")?;
/// let limiter = LeasedRedisLimiter::builder(shared)
///     .lease_units(4, 64)
///     .lease_lifetime(Duration::from_millis(50))
///     .build()?;
/// assert_eq!(limiter.over_admission_bound(8), 8 * 64);
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct LeasedRedisLimiterBuilder<C: Clock = QuantaClock> {
    shared: RedisLimiter<Gcra>,
    min_units: u64,
    max_units: u64,
    lifetime: Duration,
    capacity: usize,
    clock: C,
    background_refills: bool,
}

impl<C: Clock> fmt::Debug for LeasedRedisLimiterBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeasedRedisLimiterBuilder")
            .field("shared", &self.shared)
            .field("min_units", &self.min_units)
            .field("max_units", &self.max_units)
            .field("lifetime", &self.lifetime)
            .field("capacity", &self.capacity)
            .field("background_refills", &self.background_refills)
            .finish_non_exhaustive()
    }
}

impl LeasedRedisLimiterBuilder<QuantaClock> {
    pub(crate) fn new(shared: RedisLimiter<Gcra>) -> Self {
        let max_units = (shared.quota().limit() / 8).clamp(1, DEFAULT_MAX_LEASE_UNITS);
        LeasedRedisLimiterBuilder {
            shared,
            min_units: 1,
            max_units,
            lifetime: REDIS_LEASE_LIFETIME,
            capacity: DEFAULT_CAPACITY,
            clock: QuantaClock::new(),
            background_refills: true,
        }
    }
}

impl<C: Clock + 'static> LeasedRedisLimiterBuilder<C> {
    /// The smallest and the largest lease a refill takes (a request that needs more than the
    /// process holds takes at least its cost). Leases start at `min` and adapt: a key's next
    /// lease doubles when half its lease went in the first quarter of its lifetime, and halves
    /// when a lease lapsed with units unspent. `max` is also each process's share of the
    /// over-admission bound. `lease_units(1, 1)` turns leasing off: every check is one script
    /// call, exactly as a [`RedisLimiter`]'s.
    pub fn lease_units(mut self, min: u64, max: u64) -> Self {
        self.min_units = min;
        self.max_units = max;
        self
    }

    /// How long leased units may be spent, counted from the reading taken before the lease was
    /// asked for (100 ms by default; from 1 ms to an hour). Shorter lifetimes return idle
    /// units sooner; longer ones need fewer round trips for slow keys.
    pub fn lease_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The most keys the process holds leases for at once (100,000 by default; shared among 64
    /// shards, so a shard may fill a little before the table does). A key that finds its shard
    /// full of live leases is checked with one script call, exactly.
    pub fn capacity(mut self, keys: usize) -> Self {
        self.capacity = keys;
        self
    }

    /// Whether a check that leaves a key's lease half spent starts the next lease in the
    /// background (on by default: a tokio task, so the checks that follow do not wait for
    /// it). Off, the check that finds the lease short takes the next one itself: fewer round
    /// trips for keys checked rarely, and deterministic tests.
    pub fn background_refills(mut self, on: bool) -> Self {
        self.background_refills = on;
        self
    }

    /// The clock that times lease lifetimes (when a request carries no time of its own).
    pub fn clock<C2: Clock + 'static>(self, clock: C2) -> LeasedRedisLimiterBuilder<C2> {
        LeasedRedisLimiterBuilder {
            shared: self.shared,
            min_units: self.min_units,
            max_units: self.max_units,
            lifetime: self.lifetime,
            capacity: self.capacity,
            clock,
            background_refills: self.background_refills,
        }
    }

    /// The limiter; with background refills, must be called within a tokio runtime (the one
    /// its refills run on).
    pub fn build(self) -> Result<LeasedRedisLimiter<C>, BuildError> {
        let burst = self.shared.quota().limit();
        let (min_units, max_units) = (self.min_units, self.max_units);
        let policy = LeasePolicy::new(min_units, max_units, self.lifetime, burst, KEY_LEASES)?;
        if self.capacity == 0 {
            return Err(BuildError::ZeroCapacity);
        }
        if self.capacity > MAX_CAPACITY {
            return Err(BuildError::CapacityTooLarge {
                capacity: self.capacity,
                max: MAX_CAPACITY,
            });
        }
        let runtime = if self.background_refills {
            Some(tokio::runtime::Handle::try_current().map_err(|_| BuildError::NoRuntime)?)
        } else {
            None
        };
        Ok(LeasedRedisLimiter {
            inner: Arc::new(Inner::new(
                self.shared,
                policy,
                self.capacity,
                self.clock,
                runtime,
            )),
        })
    }
}

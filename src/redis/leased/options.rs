//! Building a [`LeasedRedisLimiter`] with the [`RedisLimiterBuilder`] of a [`Gcra`] limit: lease
//! sizes, their lifetime, the local table's capacity, the clock, and whether refills run in the
//! background; the defaults, and the checks of a configuration.

use super::policy::KEY_LEASES;
use super::{Inner, LeasedRedisLimiter};
use crate::clock::{Clock, QuantaClock};
use crate::engine::error::BuildError;
use crate::limiter::lease::{LeasePolicy, REDIS_LEASE_LIFETIME};
use crate::quota::Gcra;
use crate::redis::{RedisLimiter, RedisLimiterBuilder};
use crate::sync::Arc;
use ::redis::aio::ConnectionManager;
use core::fmt;
use std::time::Duration;

/// The default capacity of the local table, in keys.
const DEFAULT_CAPACITY_KEYS: usize = 100_000;
/// The largest lease the default configuration takes.
const DEFAULT_MAX_LEASE_UNITS: u64 = 1_024;
/// The largest local table, in keys.
const MAX_CAPACITY_KEYS: usize = 1 << 28;

/// A leased limiter's settings, held by the builder until
/// [`build_leased`](RedisLimiterBuilder::build_leased).
#[derive(Clone)]
pub(crate) struct LeaseOptions<C> {
    /// The smallest and the largest lease; `None`: from 1 to the default for the quota's burst.
    units: Option<(u64, u64)>,
    lifetime: Duration,
    capacity_keys: usize,
    clock: LeaseClock<C>,
    background_refills: bool,
}

/// The clock that times lease lifetimes: the one the caller gave, or a way to make the default
/// one when a leased limiter is built, so that a builder of a limiter that leases nothing never
/// makes the process's [`QuantaClock`] (whose first making calibrates it).
#[derive(Clone)]
enum LeaseClock<C> {
    Default(fn() -> C),
    Given(C),
}

impl<C> fmt::Debug for LeaseOptions<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseOptions")
            .field("units", &self.units)
            .field("lifetime", &self.lifetime)
            .field("capacity_keys", &self.capacity_keys)
            .field("background_refills", &self.background_refills)
            .finish_non_exhaustive()
    }
}

impl LeaseOptions<QuantaClock> {
    pub(crate) fn new() -> Self {
        LeaseOptions {
            units: None,
            lifetime: REDIS_LEASE_LIFETIME,
            capacity_keys: DEFAULT_CAPACITY_KEYS,
            clock: LeaseClock::Default(QuantaClock::new),
            background_refills: true,
        }
    }
}

impl<C: Clock + 'static> LeaseOptions<C> {
    /// The parts of a leased limiter leasing from a budget of `burst` units, or why these
    /// settings cannot make one.
    fn check(self, burst: u64) -> Result<Leasing<C>, BuildError> {
        let default_max_units = (burst / 8).clamp(1, DEFAULT_MAX_LEASE_UNITS);
        let (min_units, max_units) = self.units.unwrap_or((1, default_max_units));
        let policy = LeasePolicy::new(min_units, max_units, self.lifetime, burst, KEY_LEASES)?;
        if self.capacity_keys == 0 {
            return Err(BuildError::ZeroCapacity);
        }
        if self.capacity_keys > MAX_CAPACITY_KEYS {
            return Err(BuildError::CapacityTooLarge {
                capacity: self.capacity_keys,
                max: MAX_CAPACITY_KEYS,
            });
        }
        let runtime = if self.background_refills {
            Some(tokio::runtime::Handle::try_current().map_err(|_| BuildError::NoRuntime)?)
        } else {
            None
        };
        let clock = match self.clock {
            LeaseClock::Default(make) => make(),
            LeaseClock::Given(clock) => clock,
        };
        Ok(Leasing {
            policy,
            capacity_keys: self.capacity_keys,
            clock,
            runtime,
        })
    }
}

/// A leased limiter's checked settings, waiting for its shared limiter.
struct Leasing<C> {
    policy: LeasePolicy,
    capacity_keys: usize,
    clock: C,
    runtime: Option<tokio::runtime::Handle>,
}

impl<C: Clock + 'static> Leasing<C> {
    fn limiter(self, shared: RedisLimiter<Gcra>) -> LeasedRedisLimiter<C> {
        LeasedRedisLimiter {
            inner: Arc::new(Inner::new(
                shared,
                self.policy,
                self.capacity_keys,
                self.clock,
                self.runtime,
            )),
        }
    }
}

/// The leased limiter's settings, on the builder of a [`Gcra`] limit: they apply to
/// [`build_leased`](Self::build_leased) (and [`build_leased_on`](Self::build_leased_on)) only.
impl<C> RedisLimiterBuilder<Gcra, C> {
    /// The smallest and the largest lease a refill takes (a request that needs more than the
    /// process holds takes at least its cost): 1 to `min(1,024, burst / 8)` units (at least 1)
    /// by default. Leases start at `min` and adapt: a key's next lease doubles when half its
    /// lease went in the first quarter of its lifetime, and halves when a lease lapsed with
    /// units unspent. `max` is also each process's share of the over-admission bound.
    /// `lease_units(1, 1)` turns leasing off: every check is one script call, exactly as a
    /// [`RedisLimiter`]'s.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::{BuildError, Gcra};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let quota = Gcra::per_second(1_000)?;
    /// let builder = || RedisLimiter::builder(quota);
    /// let limiter = builder().build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.max_lease_units(), 125); // burst / 8
    /// let exact = builder().lease_units(1, 1).build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(exact.over_admission_bound(10), 0);
    /// let too_large = builder().lease_units(1, 2_000).build_leased("redis://127.0.0.1:6379");
    /// assert!(matches!(too_large, Err(BuildError::LeaseAboveBurst { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn lease_units(mut self, min: u64, max: u64) -> Self {
        self.lease.units = Some((min, max));
        self
    }

    /// How long leased units may be spent, counted from the reading taken before the lease was
    /// asked for (100 ms by default; from 1 ms to an hour). Shorter lifetimes return idle
    /// units sooner; longer ones need fewer round trips for slow keys.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .lease_lifetime(Duration::from_millis(20))
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// # let _ = limiter;
    /// # Ok(())
    /// # }
    /// ```
    pub fn lease_lifetime(mut self, lifetime: Duration) -> Self {
        self.lease.lifetime = lifetime;
        self
    }

    /// The most keys the process holds leases for at once (100,000 by default; shared among 64
    /// shards, so a shard may fill a little before the table does). A key that finds its shard
    /// full of live leases is checked with one script call, exactly.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::{BuildError, Gcra};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .lease_capacity(10_000)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.keys(), 0);
    /// let none = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .lease_capacity(0)
    ///     .build_leased("redis://127.0.0.1:6379");
    /// assert_eq!(none.err(), Some(BuildError::ZeroCapacity));
    /// # Ok(())
    /// # }
    /// ```
    pub fn lease_capacity(mut self, keys: usize) -> Self {
        self.lease.capacity_keys = keys;
        self
    }

    /// Whether a check that leaves a key's lease half spent starts the next lease in the
    /// background (on by default: a tokio task, so the checks that follow do not wait for
    /// it). Off, the check that finds the lease short takes the next one itself: fewer round
    /// trips for keys checked rarely, and deterministic tests.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .background_refills(false)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// # let _ = limiter;
    /// # Ok(())
    /// # }
    /// ```
    pub fn background_refills(mut self, on: bool) -> Self {
        self.lease.background_refills = on;
        self
    }

    /// The clock that times lease lifetimes when a request carries no time of its own
    /// ([`QuantaClock`] by default; Redis judges at its own `TIME` either way).
    ///
    /// ```
    /// use nanolimit::redis::{LeasedRedisLimiter, RedisLimiter};
    /// use nanolimit::{Gcra, ManualClock};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = ManualClock::new();
    /// let limiter: LeasedRedisLimiter<ManualClock> = RedisLimiter::builder(Gcra::per_second(10)?)
    ///     .lease_clock(clock.clone())
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// clock.advance(std::time::Duration::from_millis(100)); // the leases' time, not Redis's
    /// # let _ = limiter;
    /// # Ok(())
    /// # }
    /// ```
    pub fn lease_clock<C2: Clock + 'static>(self, clock: C2) -> RedisLimiterBuilder<Gcra, C2> {
        RedisLimiterBuilder {
            quota: self.quota,
            prefix: self.prefix,
            timeout: self.timeout,
            policy: self.policy,
            epoch_unix_seconds: self.epoch_unix_seconds,
            lease: LeaseOptions {
                units: self.lease.units,
                lifetime: self.lease.lifetime,
                capacity_keys: self.lease.capacity_keys,
                clock: LeaseClock::Given(clock),
                background_refills: self.lease.background_refills,
            },
        }
    }
}

impl<C: Clock + 'static> RedisLimiterBuilder<Gcra, C> {
    /// A [`LeasedRedisLimiter`] on the server at `url`, connected as [`build`](Self::build)'s
    /// limiter is: it leases from the keys of the [`RedisLimiter`] `build` would make (its
    /// [`shared`](LeasedRedisLimiter::shared) limiter), so processes sharing the prefix share
    /// each key's budget, whether they lease or check every request in Redis. With background
    /// refills, must be called within a tokio runtime (the one its refills run on). Fails as
    /// `build` does, and for lease settings that cannot work ([`BuildError::LeaseUnits`],
    /// [`LeaseAboveBurst`](BuildError::LeaseAboveBurst),
    /// [`LeaseTooLarge`](BuildError::LeaseTooLarge),
    /// [`LeaseLifetime`](BuildError::LeaseLifetime), [`ZeroCapacity`](BuildError::ZeroCapacity),
    /// [`CapacityTooLarge`](BuildError::CapacityTooLarge), [`NoRuntime`](BuildError::NoRuntime)).
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Connects lazily: building needs no server.
    /// let limiter = RedisLimiter::builder(Gcra::per_second(10_000)?.with_burst(1_000)?)
    ///     .prefix("api")
    ///     .lease_units(4, 64)
    ///     .lease_lifetime(Duration::from_millis(50))
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.over_admission_bound(8), 8 * 64);
    /// assert_eq!(limiter.shared().key_name("tenant-7"), "api:gcra:{tenant-7}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_leased(self, url: &str) -> Result<LeasedRedisLimiter<C>, BuildError> {
        let (shared, lease) = self.split_lease();
        shared.check()?;
        let leasing = lease.check(shared.quota.limit())?;
        let connection = shared.connect(url)?;
        Ok(leasing.limiter(shared.limiter(connection)))
    }

    /// A [`LeasedRedisLimiter`] on a connection the caller made (to share one with other
    /// limiters); fails as [`build_leased`](Self::build_leased) does, but for the URL.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    /// use redis::aio::ConnectionManager;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379")?;
    /// let connection = ConnectionManager::new(client).await?;
    /// let quota = Gcra::per_second(1_000)?;
    /// let leased = RedisLimiter::builder(quota).build_leased_on(connection.clone())?;
    /// let exact = RedisLimiter::builder(quota).build_on(connection)?;
    /// # let _ = (leased, exact);
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_leased_on(
        self,
        connection: ConnectionManager,
    ) -> Result<LeasedRedisLimiter<C>, BuildError> {
        let (shared, lease) = self.split_lease();
        shared.check()?;
        let leasing = lease.check(shared.quota.limit())?;
        Ok(leasing.limiter(shared.limiter(connection)))
    }

    /// The shared limiter's settings, and the lease's.
    fn split_lease(self) -> (RedisLimiterBuilder<Gcra>, LeaseOptions<C>) {
        let shared = RedisLimiterBuilder {
            quota: self.quota,
            prefix: self.prefix,
            timeout: self.timeout,
            policy: self.policy,
            epoch_unix_seconds: self.epoch_unix_seconds,
            lease: LeaseOptions::new(),
        };
        (shared, self.lease)
    }
}

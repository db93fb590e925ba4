//! Building a [`RedisLimiter`]: the connection, key prefix, timeout, failure policy and epoch
//! (the settings of a leased limiter's leases are in `leased/options.rs`).

use super::leased::LeaseOptions;
use super::limiter::RedisLimiter;
use super::policy::FailurePolicy;
use super::quota::RedisKind;
use super::stats::Counters;
use super::store::Store;
use crate::clock::QuantaClock;
use crate::engine::error::BuildError;
use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use core::fmt;
use std::time::Duration;

/// The default epoch: 2025-01-01T00:00:00Z, in seconds of the Unix clock. Times are counted in
/// nanoseconds from the epoch, up to [`Timestamp::HORIZON`](crate::Timestamp::HORIZON) (about
/// 18.3 years: until April 2043 for this epoch).
pub const DEFAULT_EPOCH_UNIX_SECONDS: u64 = 1_735_689_600;

/// The default per-call timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5);

/// The largest epoch a builder accepts (the year 36812): the scripts read it as a Lua number.
const MAX_EPOCH_UNIX_SECONDS: u64 = 1 << 40;

/// Configures a [`RedisLimiter`], or a [`LeasedRedisLimiter`](super::LeasedRedisLimiter) of a
/// [`Gcra`](crate::Gcra) limit; made by [`RedisLimiter::builder`].
///
/// | setting | default | set with |
/// |---|---|---|
/// | key prefix | `nanolimit` | [`prefix`](Self::prefix) |
/// | per-call timeout | 5 ms | [`timeout`](Self::timeout) |
/// | failure policy | [`FailurePolicy::Open`] | [`failure_policy`](Self::failure_policy) |
/// | epoch (time origin) | 2025-01-01T00:00:00Z | [`epoch_unix_seconds`](Self::epoch_unix_seconds) |
/// | lease sizes (leased) | 1 to `min(1,024, burst / 8)` units (at least 1) | [`lease_units`](Self::lease_units) |
/// | lease lifetime (leased) | 100 ms | [`lease_lifetime`](Self::lease_lifetime) |
/// | local table (leased) | 100,000 keys | [`lease_capacity`](Self::lease_capacity) |
/// | background refills (leased) | on | [`background_refills`](Self::background_refills) |
/// | clock of lease lifetimes (leased): `C` | [`QuantaClock`] | [`lease_clock`](Self::lease_clock) |
///
/// [`build`](Self::build) makes a [`RedisLimiter`]; for a [`Gcra`](crate::Gcra) limit,
/// [`build_leased`](Self::build_leased) makes a
/// [`LeasedRedisLimiter`](super::LeasedRedisLimiter) on the same keys, which the lease settings
/// (a [`Gcra`](crate::Gcra) builder's only) configure. Every server that shares a limit must use
/// the same prefix, quota and epoch.
///
/// ```
/// use nanolimit::redis::{FailurePolicy, RedisLimiter};
/// use nanolimit::Gcra;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Connects lazily: building needs no server.
/// let limiter = RedisLimiter::builder(Gcra::per_second(100)?)
///     .prefix("api")
///     .timeout(Duration::from_millis(3))
///     .failure_policy(FailurePolicy::Closed)
///     .build("redis://127.0.0.1:6379")?;
/// assert_eq!(limiter.key_name("tenant-7"), "api:gcra:{tenant-7}");
/// let leased = RedisLimiter::builder(Gcra::per_second(100)?)
///     .prefix("api")
///     .lease_units(1, 10)
///     .build_leased("redis://127.0.0.1:6379")?;
/// assert_eq!(leased.over_admission_bound(3), 30);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RedisLimiterBuilder<Q, C = QuantaClock> {
    pub(super) quota: Q,
    pub(super) prefix: String,
    pub(super) timeout: Duration,
    pub(super) policy: FailurePolicy,
    pub(super) epoch_unix_seconds: u64,
    /// A leased limiter's settings (a [`Gcra`](crate::Gcra) builder's only).
    pub(super) lease: LeaseOptions<C>,
}

impl<Q: fmt::Debug, C> fmt::Debug for RedisLimiterBuilder<Q, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLimiterBuilder")
            .field("quota", &self.quota)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("policy", &self.policy)
            .field("epoch_unix_seconds", &self.epoch_unix_seconds)
            .field("lease", &self.lease)
            .finish()
    }
}

impl<Q> RedisLimiterBuilder<Q> {
    pub(crate) fn new(quota: Q) -> Self {
        RedisLimiterBuilder {
            quota,
            prefix: "nanolimit".to_owned(),
            timeout: DEFAULT_TIMEOUT,
            policy: FailurePolicy::Open,
            epoch_unix_seconds: DEFAULT_EPOCH_UNIX_SECONDS,
            lease: LeaseOptions::new(),
        }
    }
}

impl<Q, C> RedisLimiterBuilder<Q, C> {
    /// The first part of every key name: `{prefix}:{algorithm}:{{key}}`. Use one prefix per
    /// quota: two limiters with different quotas of one algorithm under one prefix would read
    /// each other's words.
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_owned();
        self
    }

    /// The longest a call waits for Redis before its failure policy decides (5 ms by default):
    /// a caller is never blocked longer. Must not be zero.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// What a call answers when Redis does not ([`FailurePolicy::Open`] by default).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The time origin, in whole seconds of the Unix clock: checks on Redis time judge at
    /// `TIME − epoch`, and explicit [`Timestamp`](crate::Timestamp)s count from it too (see
    /// [`RedisLimiter::timestamp_of`]). Every server sharing a limit must use the same epoch;
    /// the server's clock must lie between it and its horizon (18.3 years on), else calls fail
    /// (and the failure policy decides).
    pub fn epoch_unix_seconds(mut self, epoch_unix_seconds: u64) -> Self {
        self.epoch_unix_seconds = epoch_unix_seconds;
        self
    }

    /// The connection to `url`: lazy, reconnecting (see [`build`](Self::build)).
    pub(super) fn connect(&self, url: &str) -> Result<ConnectionManager, BuildError> {
        let client = ::redis::Client::open(url).map_err(connection_error)?;
        // Reconnection: quick first retries, then at most one attempt a second; the limiter's
        // own timeout bounds every call whatever the manager is doing.
        let config = ConnectionManagerConfig::new()
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_secs(1))
            .set_connection_timeout(Some(self.timeout.max(Duration::from_millis(100))));
        ConnectionManager::new_lazy_with_config(client, config).map_err(connection_error)
    }
}

impl<Q: RedisKind, C> RedisLimiterBuilder<Q, C> {
    /// A limiter on the server at `url` (`redis://host:port/db`), through a
    /// [`ConnectionManager`] that connects on the first call and reconnects after failures.
    /// Must be called within a tokio runtime. Fails only on a malformed URL or configuration,
    /// and for a [`SlidingLog`](crate::sliding_log::SlidingLog) whose limit is above
    /// [`MAX_SLIDING_LOG_LIMIT`](super::MAX_SLIDING_LOG_LIMIT) ([`BuildError::LimitTooLarge`]).
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    /// use nanolimit::BuildError;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Connects lazily: building needs no server.
    /// let resets = RedisLimiter::builder(SlidingLog::per_hour(3)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// assert_eq!(resets.quota().limit(), 3);
    /// let too_large = RedisLimiter::builder(SlidingLog::per_hour(1_000_000)?)
    ///     .build("redis://127.0.0.1:6379");
    /// assert!(matches!(too_large, Err(BuildError::LimitTooLarge { max: 100_000, .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(self, url: &str) -> Result<RedisLimiter<Q>, BuildError> {
        self.check()?;
        let connection = self.connect(url)?;
        Ok(self.limiter(connection))
    }

    /// A limiter on a connection the caller made (to share one among several limiters); fails
    /// as [`build`](Self::build) does, but for the URL.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    /// use nanolimit::Gcra;
    /// use redis::aio::ConnectionManager;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379")?;
    /// let connection = ConnectionManager::new(client).await?;
    /// let requests = RedisLimiter::builder(Gcra::per_second(100)?).build_on(connection.clone())?;
    /// let logins = RedisLimiter::builder(SlidingLog::per_hour(5)?).build_on(connection)?;
    /// # let _ = (requests, logins);
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_on(self, connection: ConnectionManager) -> Result<RedisLimiter<Q>, BuildError> {
        self.check()?;
        Ok(self.limiter(connection))
    }

    /// Why these settings cannot make a limiter, if they cannot (the lease settings aside).
    pub(super) fn check(&self) -> Result<(), BuildError> {
        if self.timeout.is_zero() {
            return Err(BuildError::ZeroTimeout);
        }
        if self.epoch_unix_seconds > MAX_EPOCH_UNIX_SECONDS {
            return Err(BuildError::EpochTooLate {
                epoch_unix_seconds: self.epoch_unix_seconds,
            });
        }
        self.quota.check_buildable()
    }

    /// The limiter on `connection`, for keys named `{prefix}:{algorithm}:{{key}}`.
    pub(super) fn limiter(self, connection: ConnectionManager) -> RedisLimiter<Q> {
        let store = Store {
            connection,
            key_prefix: format!("{}:{}:", self.prefix, Q::ALGORITHM),
            timeout: self.timeout,
            policy: self.policy,
            epoch_unix_seconds: self.epoch_unix_seconds,
            counters: Counters::default(),
        };
        RedisLimiter {
            quota: self.quota,
            store,
        }
    }
}

fn connection_error(error: ::redis::RedisError) -> BuildError {
    BuildError::Connection {
        message: error.to_string(),
    }
}

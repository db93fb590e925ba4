//! The Redis limiter: what is the same whatever Redis keeps per key, and the checks of the
//! quotas whose state word it keeps: one script call per check or peek, the decision built from
//! the word the script decided on, with the crate's own decision code (the sliding log's
//! checks are in `sliding_log.rs`).

use super::builder::RedisLimiterBuilder;
use super::policy::FailurePolicy;
use super::quota::{RedisKind, RedisQuota};
use super::store::{Call, Store};
use crate::clock::Timestamp;
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::engine::stats::Stats;
use crate::quota::Step;
use std::time::SystemTime;

/// A keyed limit shared by every server that uses the same Redis (a fleet): per API key, per
/// tenant. Each check is one atomic script call on the key's state in Redis; the [`Decision`]
/// is then built in Rust from what the script decided, with the in-process limiters' own code.
/// So given the same times and costs it decides exactly as the in-process limiter of its quota
/// does, and reports the same limit, remaining, reset-after and retry-after.
///
/// | `Q` | what Redis holds per key | decides as |
/// |---|---|---|
/// | [`Gcra`](crate::Gcra), [`SlidingWindow`](crate::SlidingWindow), [`FixedWindow`](crate::FixedWindow) (a [`RedisQuota`]) | the quota's state word, the `u64` the in-process limiters keep | a [`KeyedLimiter`](crate::KeyedLimiter) |
/// | [`SlidingLog`](crate::sliding_log::SlidingLog) (exact, [below](#the-exact-sliding-log)) | a sorted set, one member per unit in the window | a [`SlidingLogLimiter`](crate::sliding_log::SlidingLogLimiter) |
///
/// | operation | shorthand | full form |
/// |---|---|---|
/// | consume if it fits | [`check(key)`](Self::check) | [`check_with(key, request)`](Self::check_with) |
/// | ask without consuming | [`peek(key)`](Self::peek) | [`peek_with(key, request)`](Self::peek_with) |
/// | consume, for many keys in one round trip | | [`check_many(&[(key, request)])`](Self::check_many) |
///
/// - Time: the server's `TIME` by default (so the fleet's clocks don't matter), less the
///   limiter's epoch; or the request's own [`at`](Request::at), a [`Timestamp`] since the
///   epoch ([`timestamp_of`](Self::timestamp_of) converts wall-clock times).
/// - Keys: `{prefix}:{algorithm}:{{key}}`, the key as a Redis Cluster hash tag. Idle keys
///   expire: each admission sets the key to expire once its state is as good as fresh (its
///   reset-after, rounded up to the millisecond, plus up to 2 ms).
/// - Failures: every call returns within the timeout; without a reply, the
///   [`FailurePolicy`] decides ([`Decision::is_fallback`]), and [`stats`](Self::stats) counts it.
/// - No tiers, reservations or waits: a request with a tier fails with
///   [`RequestError::ForeignTier`].
/// - Leases: the builder of a [`Gcra`](crate::Gcra) limit also makes a
///   [`LeasedRedisLimiter`](super::LeasedRedisLimiter), which spends the same keys' budgets
///   from local leases ([`build_leased`](RedisLimiterBuilder::build_leased)).
///
/// ```no_run
/// use nanolimit::redis::RedisLimiter;
/// use nanolimit::{Gcra, Request};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // 100 requests per second per tenant, across the fleet.
/// let limiter = RedisLimiter::builder(Gcra::per_second(100)?).build("redis://127.0.0.1:6379")?;
/// let decision = limiter.check("tenant-7").await;
/// if decision.is_denied() {
///     println!("429, retry after {:?}", decision.retry_after());
/// }
/// let upload = limiter.check_with("tenant-7", Request::cost(10)).await?;
/// println!("{} left", upload.remaining());
/// # Ok(())
/// # }
/// ```
///
/// # The exact sliding log
///
/// A `RedisLimiter<SlidingLog>` keeps the exact sliding log
/// ([`SlidingLog`](crate::sliding_log::SlidingLog): at most `L` units in any window of length
/// `W`) per key: the limit for small, strict quotas where one extra admission matters (5 login
/// attempts per 15 minutes per account), across a fleet.
///
/// Each key is a sorted set with one member per admitted unit, and each check one atomic
/// script call: it drops the units that have left the window, counts the rest, and adds the
/// request's units if they fit, all or nothing. The rule is the in-process
/// [`SlidingLogLimiter`](crate::sliding_log::SlidingLogLimiter)'s, exactly (see
/// [`sliding_log`](crate::sliding_log)): a reading behind the latest unit is judged at that
/// unit's time. `remaining` is counted by the script, when the decision is made.
///
/// - Exact times: a member is named by its unit's time, in nanoseconds since the epoch as 16
///   hex digits, and a sequence number (`0000001a2b3c4d5e:3`); every score is 0, so Redis
///   orders members by their bytes, which for hex digits of one width is the order of the
///   times. The script selects units by time with lexicographic ranges (`ZLEXCOUNT`,
///   `ZRANGEBYLEX`, `ZREMRANGEBYLEX`), so every time up to the horizon is exact; as scores
///   (doubles), nanoseconds would be exact only for the first 2^53 ns (104 days).
/// - Keys `{prefix}:sliding-log:{{key}}` expire once the latest unit has left the window (W
///   after each admission, rounded up to the millisecond, plus up to 2 ms).
/// - Costs: one request costs at most the quota's
///   [`max_cost`](crate::sliding_log::SlidingLog::max_cost) (its limit, and at most 16), as in
///   process; more is a [`RequestError::CostAboveLimit`].
/// - Memory: up to `L` members per key (about 27 bytes each up to 128, 115 above); limits
///   above [`MAX_SLIDING_LOG_LIMIT`](super::MAX_SLIDING_LOG_LIMIT) (100,000, 11 MB per key)
///   are refused when building. A check costs `O(log L)` plus the units it drops or adds; an
///   admission writes at most 16.
///
/// ```no_run
/// use nanolimit::redis::RedisLimiter;
/// use nanolimit::sliding_log::SlidingLog;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // 5 login attempts per 15 minutes per account, across the fleet.
/// let logins = RedisLimiter::builder(SlidingLog::new(5, Duration::from_secs(900))?)
///     .prefix("logins")
///     .build("redis://127.0.0.1:6379")?;
/// let decision = logins.check("alice").await;
/// if decision.is_denied() {
///     println!("429, retry after {:?}", decision.retry_after());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RedisLimiter<Q> {
    pub(crate) quota: Q,
    pub(crate) store: Store,
}

/// What a script replies: admitted or not, the word decided on, the time judged at (as its
/// high and low parts, `high·2^24 + low` ns).
type Reply = (i64, String, u64, u64);

/// What is the same whatever the limiter keeps per key.
impl<Q: RedisKind> RedisLimiter<Q> {
    /// A builder for a limiter applying `quota` to every key: a [`RedisQuota`] or a
    /// [`SlidingLog`](crate::sliding_log::SlidingLog).
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    /// use nanolimit::SlidingWindow;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Connects lazily: building needs no server.
    /// let limiter = RedisLimiter::builder(SlidingWindow::per_minute(600)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.quota().limit(), 600);
    /// let resets = RedisLimiter::builder(SlidingLog::per_hour(3)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// assert_eq!(resets.key_name("alice"), "nanolimit:sliding-log:{alice}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(quota: Q) -> RedisLimiterBuilder<Q> {
        RedisLimiterBuilder::new(quota)
    }

    /// The quota applied to every key.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let log = RedisLimiter::builder(SlidingLog::per_day(10)?).build("redis://127.0.0.1:6379")?;
    /// assert_eq!((log.quota().limit(), log.quota().max_cost()), (10, 10));
    /// # Ok(())
    /// # }
    /// ```
    pub fn quota(&self) -> &Q {
        &self.quota
    }

    /// The Redis key that holds `key`'s state word or log: `{prefix}:{algorithm}:{{key}}` (the
    /// braces make `key` the Redis Cluster hash tag).
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::FixedWindow;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(FixedWindow::per_minute(5)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.key_name("203.0.113.9"), "nanolimit:fixed-window:{203.0.113.9}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn key_name(&self, key: &str) -> String {
        self.store.key_name(key)
    }

    /// A wall-clock time as a [`Timestamp`] of this limiter (nanoseconds since its epoch), for
    /// [`Request::at`]; `None` before the epoch or past its horizon.
    ///
    /// ```
    /// use nanolimit::redis::{RedisLimiter, DEFAULT_EPOCH_UNIX_SECONDS};
    /// use nanolimit::Gcra;
    /// use std::time::{Duration, UNIX_EPOCH};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1)?).build("redis://127.0.0.1:6379")?;
    /// let epoch = UNIX_EPOCH + Duration::from_secs(DEFAULT_EPOCH_UNIX_SECONDS);
    /// let later = limiter.timestamp_of(epoch + Duration::from_millis(1_500)).unwrap();
    /// assert_eq!(later.as_ns(), 1_500_000_000);
    /// assert_eq!(limiter.timestamp_of(epoch - Duration::from_secs(1)), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn timestamp_of(&self, time: SystemTime) -> Option<Timestamp> {
        self.store.timestamp_of(time)
    }

    /// The calls that fell back to the failure policy so far.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1)?).build("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.stats().fallbacks(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        self.store.stats()
    }
}

/// The quotas whose state word Redis keeps: each check applies the quota's own step to the
/// word (see [`RedisQuota`]).
impl<Q: RedisQuota> RedisLimiter<Q> {
    /// Consumes one unit of `key`'s quota if it fits, judged at the server's time.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::FixedWindow;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(FixedWindow::per_minute(2)?).build("redis://127.0.0.1:6379")?;
    /// assert!(limiter.check("user-1").await.is_allowed());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check(&self, key: &str) -> Decision<Q> {
        self.decide(key, 1, None, true).await
    }

    /// Consumes the request's cost of `key`'s quota if it fits, at the request's time (or the
    /// server's); a cost of zero changes nothing and reads the metadata. Fails, without a call
    /// to Redis, for a cost above the limit ([`RequestError::CostAboveLimit`]) or a request
    /// with a tier ([`RequestError::ForeignTier`]).
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::{Gcra, Request, RequestError, Timestamp};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(10)?).build("redis://127.0.0.1:6379")?;
    /// let now = Timestamp::from_ns(5_000_000_000)?;
    /// assert!(limiter.check_with("k", Request::cost(10).at(now)).await?.is_allowed());
    /// assert!(limiter.check_with("k", Request::cost(1).at(now)).await?.is_denied());
    /// assert_eq!(
    ///     limiter.check_with("k", Request::cost(11)).await.unwrap_err(),
    ///     RequestError::CostAboveLimit { cost: 11, limit: 10 }
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check_with(
        &self,
        key: &str,
        request: Request<Q>,
    ) -> Result<Decision<Q>, RequestError> {
        let cost = self.validate(&request)?;
        Ok(self.decide(key, cost, request.at, true).await)
    }

    /// Whether one unit would pass for `key` now, consuming nothing.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(5)?).build("redis://127.0.0.1:6379")?;
    /// let peeked = limiter.peek("fresh-key").await;
    /// assert!(peeked.is_allowed());
    /// assert_eq!(peeked.remaining(), 5);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn peek(&self, key: &str) -> Decision<Q> {
        self.decide(key, 1, None, false).await
    }

    /// Whether the request would pass for `key`, consuming nothing; fails as
    /// [`check_with`](Self::check_with) does.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::{Gcra, Request};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(5)?).build("redis://127.0.0.1:6379")?;
    /// assert!(limiter.peek_with("fresh-key", Request::cost(5)).await?.is_allowed());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn peek_with(
        &self,
        key: &str,
        request: Request<Q>,
    ) -> Result<Decision<Q>, RequestError> {
        let cost = self.validate(&request)?;
        Ok(self.decide(key, cost, request.at, false).await)
    }

    /// The request's cost, if this limiter (or one leasing from it) can ever judge it.
    pub(super) fn validate(&self, request: &Request<Q>) -> Result<u64, RequestError> {
        if request.tier.is_some() {
            return Err(RequestError::ForeignTier);
        }
        let limit = self.quota.limit();
        if request.cost > limit {
            return Err(RequestError::CostAboveLimit {
                cost: request.cost,
                limit,
            });
        }
        Ok(request.cost)
    }

    /// The core every check and peek funnels into: one script call within the timeout, or the
    /// failure policy. A cost of zero is a peek that always passes, as in process.
    async fn decide(
        &self,
        key: &str,
        cost: u64,
        at: Option<Timestamp>,
        apply: bool,
    ) -> Decision<Q> {
        let apply = apply && cost > 0;
        let call = self.call(key, cost, at, apply);
        let read = |reply| self.decision(reply, cost);
        match self.store.call(Q::script(), call, read).await {
            Some(decision) => decision,
            None => self.fallback(cost, at),
        }
    }

    /// The script call for a request: the key, the common arguments (see `lua/prelude.lua`),
    /// then the quota's.
    fn call(&self, key: &str, cost: u64, at: Option<Timestamp>, apply: bool) -> Call {
        let mut arguments = self.store.common_arguments(at, apply);
        self.quota.push_arguments(cost, &mut arguments);
        (self.key_name(key), arguments)
    }

    /// Checks of several keys in one pipeline: one round trip for all (and, the first time a
    /// server sees the script, one more to load it and one to repeat the checks it refused).
    /// Each request is judged as [`check_with`](Self::check_with) would, in order; a request
    /// this limiter can never judge gets its error without a round trip, and when the pipeline
    /// gets no reply within the timeout, every other request gets the failure policy's
    /// decision.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::{Gcra, Request};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(10)?).build("redis://127.0.0.1:6379")?;
    /// let decisions = limiter
    ///     .check_many(&[("a", Request::cost(1)), ("b", Request::cost(10)), ("c", Request::cost(11))])
    ///     .await;
    /// assert!(decisions[0].as_ref().unwrap().is_allowed());
    /// assert!(decisions[2].is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check_many(
        &self,
        requests: &[(&str, Request<Q>)],
    ) -> Vec<Result<Decision<Q>, RequestError>> {
        self.store
            .check_many(
                Q::script(),
                requests,
                |request| self.validate(request),
                |key, request| self.call(key, request.cost, request.at, request.cost > 0),
                |reply, cost| self.decision(reply, cost),
                |cost, at| self.fallback(cost, at),
            )
            .await
    }

    /// The decision a script's reply describes, made by the same code as in process; `None`
    /// for a reply that is not one of the scripts'.
    fn decision(&self, (allowed, word, at_high, at_low): Reply, cost: u64) -> Option<Decision<Q>> {
        let word = u64::from_str_radix(&word, 16).ok()?;
        // The time judged at, high·2^24 + low ns (see `lua/prelude.lua`).
        if at_low >= 1 << 24 {
            return None;
        }
        let at = Timestamp::from_ns(at_high.checked_mul(1 << 24)?.checked_add(at_low)?).ok()?;
        let allowed = match allowed {
            1 => true,
            0 => cost == 0,
            _ => return None,
        };
        Some(Decision::new(
            allowed,
            cost,
            word,
            self.quota.instant(at),
            self.quota,
        ))
    }

    /// The failure policy's decision, at the request's time or the local clock's.
    #[cold]
    pub(crate) fn fallback(&self, cost: u64, at: Option<Timestamp>) -> Decision<Q> {
        let now = self.quota.instant(self.store.fallback_time(at));
        let allowed = self.store.policy() == FailurePolicy::Open;
        // A cost of at most the limit always passes on a fresh state.
        let state = match self.quota.step(Q::FRESH, now, cost) {
            Step::Allow(word) if allowed && cost > 0 => word,
            _ => Q::FRESH,
        };
        Decision::fallback(allowed || cost == 0, cost, state, now, self.quota)
    }
}

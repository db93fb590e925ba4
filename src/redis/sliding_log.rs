//! The exact sliding log in Redis: the checks of a [`RedisLimiter<SlidingLog>`](RedisLimiter),
//! one sorted set per key, one member per admitted unit (`lua/sliding_log.lua`).

use super::limiter::RedisLimiter;
use super::policy::FailurePolicy;
use super::quota::{push_high_and_low_48, RedisKind};
use super::store::Call;
use crate::clock::Timestamp;
use crate::engine::decision::{Decision, Outcome};
use crate::engine::error::{BuildError, RequestError};
use crate::engine::judge::LogFigures;
use crate::engine::request::Request;
use crate::quota::sliding_log::SlidingLog;
use ::redis::Script;
use std::sync::LazyLock;

/// The largest limit a [`RedisLimiter<SlidingLog>`](RedisLimiter) accepts: Redis keeps one
/// member per unit in the window, up to the limit per key. Measured on Redis 7 (`MEMORY
/// USAGE`): about 27 bytes a member up to 128 members (a listpack), about 115 above (a
/// skiplist): 440 bytes for a key of 16 units, 120 KB for 1,000, 11 MB for a key at this limit.
pub const MAX_SLIDING_LOG_LIMIT: u64 = 100_000;

static SLIDING_LOG_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/prelude.lua"),
        include_str!("lua/sliding_log.lua")
    ))
});

/// What the script replies: admitted or not, the time judged at, the units in the window
/// before the request, the time of the unit that must leave for it to fit (empty if it fits),
/// the latest unit's time (empty for an empty log).
type Reply = (i64, String, u64, String, String);

impl RedisKind for SlidingLog {
    const ALGORITHM: &'static str = "sliding-log";

    fn check_buildable(&self) -> Result<(), BuildError> {
        if self.limit() > MAX_SLIDING_LOG_LIMIT {
            return Err(BuildError::LimitTooLarge {
                limit: self.limit(),
                max: MAX_SLIDING_LOG_LIMIT,
            });
        }
        Ok(())
    }
}

/// The exact sliding log: each check records the request's units in the key's log if they all
/// fit (see [the sliding log](RedisLimiter#the-exact-sliding-log)).
impl RedisLimiter<SlidingLog> {
    /// Records one unit in `key`'s log if it fits, judged at the server's time.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let log = RedisLimiter::builder(SlidingLog::per_hour(3)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// let decision = log.check("alice").await;
    /// println!("{} of 3 left this hour", decision.remaining());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check(&self, key: &str) -> Decision<SlidingLog> {
        self.decide(key, 1, None, true).await
    }

    /// Records the request's units in `key`'s log if they all fit, at the request's time (or
    /// the server's); a cost of zero records nothing and reads the metadata. Fails, without a
    /// call to Redis, for a cost above [`max_cost`](SlidingLog::max_cost)
    /// ([`RequestError::CostAboveLimit`], with that as the limit).
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    /// use nanolimit::{Request, RequestError, Timestamp};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let log = RedisLimiter::builder(SlidingLog::per_minute(3)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// let at = |seconds: u64| Timestamp::from_ns(seconds * 1_000_000_000);
    /// assert!(log.check_with("k", Request::cost(2).at(at(0)?)).await?.is_allowed());
    /// assert!(log.check_with("k", Request::cost(1).at(at(20)?)).await?.is_allowed());
    /// let denied = log.check_with("k", Request::cost(2).at(at(30)?)).await?;
    /// // The two units of second 0 leave the window at second 60.
    /// assert_eq!(denied.retry_after(), Duration::from_secs(30));
    /// assert_eq!(
    ///     log.check_with("k", Request::cost(4)).await.unwrap_err(),
    ///     RequestError::CostAboveLimit { cost: 4, limit: 3 }
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check_with(
        &self,
        key: &str,
        request: Request<SlidingLog>,
    ) -> Result<Decision<SlidingLog>, RequestError> {
        let cost = self.validate(&request)?;
        Ok(self.decide(key, cost, request.at, true).await)
    }

    /// Whether one unit would fit in `key`'s log now, recording nothing (the script writes
    /// nothing).
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let log = RedisLimiter::builder(SlidingLog::per_hour(3)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// let peeked = log.peek("new-account").await;
    /// assert!(peeked.is_allowed());
    /// assert_eq!(peeked.remaining(), 3);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn peek(&self, key: &str) -> Decision<SlidingLog> {
        self.decide(key, 1, None, false).await
    }

    /// Whether the request would fit, recording nothing; fails as
    /// [`check_with`](Self::check_with) does.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    /// use nanolimit::Request;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let log = RedisLimiter::builder(SlidingLog::per_hour(3)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// assert!(log.peek_with("new-account", Request::cost(3)).await?.is_allowed());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn peek_with(
        &self,
        key: &str,
        request: Request<SlidingLog>,
    ) -> Result<Decision<SlidingLog>, RequestError> {
        let cost = self.validate(&request)?;
        Ok(self.decide(key, cost, request.at, false).await)
    }

    /// Checks of several keys in one pipeline round trip, each judged as
    /// [`check_with`](Self::check_with) would, in order, as for the other quotas: a request
    /// this log can never admit gets its error without a round trip, and when the pipeline gets
    /// no reply within the timeout, every other request gets the failure policy's decision.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::sliding_log::SlidingLog;
    /// use nanolimit::Request;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let log = RedisLimiter::builder(SlidingLog::per_hour(3)?)
    ///     .build("redis://127.0.0.1:6379")?;
    /// let decisions = log
    ///     .check_many(&[("a", Request::cost(1)), ("b", Request::cost(3)), ("c", Request::cost(4))])
    ///     .await;
    /// assert!(decisions[1].as_ref().unwrap().is_allowed());
    /// assert!(decisions[2].is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check_many(
        &self,
        requests: &[(&str, Request<SlidingLog>)],
    ) -> Vec<Result<Decision<SlidingLog>, RequestError>> {
        self.store
            .check_many(
                &SLIDING_LOG_SCRIPT,
                requests,
                |request| self.validate(request),
                |key, request| self.call(key, request.cost, request.at, request.cost > 0),
                |reply, cost| self.decision(reply, cost, cost > 0),
                |cost, at| self.fallback(cost, at),
            )
            .await
    }

    /// The request's cost, if this log can ever admit it.
    fn validate(&self, request: &Request<SlidingLog>) -> Result<u64, RequestError> {
        let max_cost = self.quota.max_cost();
        if request.cost > max_cost {
            return Err(RequestError::CostAboveLimit {
                cost: request.cost,
                limit: max_cost,
            });
        }
        Ok(request.cost)
    }

    /// The core every check and peek funnels into: one script call within the timeout, or the
    /// failure policy. A cost of zero records nothing.
    async fn decide(
        &self,
        key: &str,
        cost: u64,
        at: Option<Timestamp>,
        apply: bool,
    ) -> Decision<SlidingLog> {
        let apply = apply && cost > 0;
        let call = self.call(key, cost, at, apply);
        let read = |reply| self.decision(reply, cost, apply);
        match self.store.call(&SLIDING_LOG_SCRIPT, call, read).await {
            Some(decision) => decision,
            None => self.fallback(cost, at),
        }
    }

    /// The script call for a request (see `lua/sliding_log.lua` for the arguments).
    fn call(&self, key: &str, cost: u64, at: Option<Timestamp>, apply: bool) -> Call {
        let mut arguments = self.store.common_arguments(at, apply);
        push_high_and_low_48(self.quota.window_ns(), &mut arguments);
        arguments.extend([self.quota.limit().to_string(), cost.to_string()]);
        (self.key_name(key), arguments)
    }

    /// The decision the script's reply describes, with the in-process log's arithmetic
    /// (`record::leaves_after_ns`, in u64); `None` for a reply that is not the script's.
    fn decision(
        &self,
        (admitted, judged, in_window, must_leave, latest): Reply,
        cost: u64,
        apply: bool,
    ) -> Option<Decision<SlidingLog>> {
        let now_ns = Timestamp::from_ns(time_ns(&judged)?).ok()?.as_ns();
        let (limit, window_ns) = (self.quota.limit(), self.quota.window_ns());
        // Nanoseconds until a unit at `time_ns` leaves the window (0 if it has).
        let leaves_after_ns = |time_ns: u64| {
            time_ns
                .checked_add(window_ns)
                .map(|end_ns| end_ns.saturating_sub(now_ns))
        };
        let (allowed, retry_after_ns) = match (admitted, must_leave.is_empty()) {
            (1, true) => (true, 0),
            (0, false) => (false, leaves_after_ns(time_ns(&must_leave)?)?),
            _ => return None,
        };
        let recorded = allowed && apply;
        let reset_after_ns = match (recorded, latest.is_empty()) {
            (true, _) => window_ns,
            (false, true) => 0,
            (false, false) => leaves_after_ns(time_ns(&latest)?)?,
        };
        let in_window = in_window + if recorded { cost } else { 0 };
        let figures = LogFigures {
            now_ns,
            remaining: limit.saturating_sub(in_window),
            reset_after_ns,
            retry_after_ns,
        };
        let outcome = match allowed {
            true => Outcome::Allowed,
            false => Outcome::Denied,
        };
        Some(Decision::of_log(outcome, cost, self.quota, figures))
    }

    /// The failure policy's decision, at the request's time or the local clock's: open, what a
    /// fresh log would report after the request; closed, a denial with a retry after 1 ns.
    #[cold]
    fn fallback(&self, cost: u64, at: Option<Timestamp>) -> Decision<SlidingLog> {
        let now_ns = self.store.fallback_time(at).as_ns();
        let (limit, window_ns) = (self.quota.limit(), self.quota.window_ns());
        let (allowed, remaining, reset_after_ns, retry_after_ns) = match (self.store.policy(), cost)
        {
            (FailurePolicy::Open, 0) | (FailurePolicy::Closed, 0) => (true, limit, 0, 0),
            (FailurePolicy::Open, _) => (true, limit - cost, window_ns, 0),
            (FailurePolicy::Closed, _) => (false, 0, 1, 1),
        };
        let figures = LogFigures {
            now_ns,
            remaining,
            reset_after_ns,
            retry_after_ns,
        };
        Decision::log_fallback(allowed, cost, self.quota, figures)
    }
}

/// A time the script wrote: 16 hex digits.
fn time_ns(text: &str) -> Option<u64> {
    match text.len() {
        16 => u64::from_str_radix(text, 16).ok(),
        _ => None,
    }
}

//! The direct sliding-log limiter: one log shared by every caller.

use super::decision;
use super::ring::Ring;
use super::SlidingLog;
use crate::clock::{Clock, QuantaClock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::{BuildError, RequestError};
use crate::engine::request::Request;

/// An exact sliding-log limiter: at most `L` units in any window of length `W`, one log shared
/// by every caller (see the [module](super) for the rule and the protocol).
///
/// Lock-free; a denial records nothing (it writes only to help finish another thread's
/// half-written request); no allocation after construction. Share it between
/// threads by reference or in an [`Arc`](std::sync::Arc).
///
/// | operation | shorthand | packet-loop form | full form |
/// |---|---|---|---|
/// | consume if it fits | [`check`](Self::check) | [`check_at`](Self::check_at) | [`check_with`](Self::check_with) |
/// | ask without consuming | [`peek`](Self::peek) | | [`peek_with`](Self::peek_with) |
///
/// ```
/// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
/// use nanolimit::ManualClock;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = SlidingLogLimiter::with_clock(SlidingLog::per_second(2)?, clock.clone())?;
/// assert!(limiter.check().is_allowed());
/// clock.advance(Duration::from_millis(600));
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_denied());
/// // Exactly one second after the first unit, it has left the window.
/// clock.advance(Duration::from_millis(400));
/// assert!(limiter.check().is_allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SlidingLogLimiter<C: Clock = QuantaClock> {
    ring: Ring,
    quota: SlidingLog,
    clock: C,
}

impl SlidingLogLimiter<QuantaClock> {
    /// A limiter on the default clock ([`QuantaClock`]). Errors if the allocator cannot
    /// provide the ring (8 bytes per unit of the limit, rounded up to a power of two).
    pub fn new(quota: SlidingLog) -> Result<Self, BuildError> {
        Self::with_clock(quota, QuantaClock::new())
    }
}

impl<C: Clock> SlidingLogLimiter<C> {
    /// A limiter reading time from `clock`; errors as [`new`](SlidingLogLimiter::new).
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    /// use nanolimit::ManualClock;
    ///
    /// let limiter = SlidingLogLimiter::with_clock(SlidingLog::per_hour(3)?, ManualClock::new())?;
    /// assert_eq!(limiter.quota().limit(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_clock(quota: SlidingLog, clock: C) -> Result<Self, BuildError> {
        let ring = Ring::new(quota.limit()).ok_or(BuildError::AllocationFailed {
            bytes: ring_bytes(quota.limit()),
        })?;
        Ok(SlidingLogLimiter { ring, quota, clock })
    }

    /// The quota this limiter enforces.
    pub fn quota(&self) -> &SlidingLog {
        &self.quota
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// A reading of this limiter's clock, for [`check_at`](Self::check_at) and
    /// [`Request::at`].
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    /// use nanolimit::{ManualClock, Timestamp};
    ///
    /// let limiter = SlidingLogLimiter::with_clock(SlidingLog::per_second(1)?, ManualClock::new())?;
    /// assert_eq!(limiter.now(), Timestamp::ORIGIN);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The bytes this limiter's log occupies: 8 per unit of the limit, rounded up to a power of
    /// two, plus one padded word.
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    ///
    /// let limiter = SlidingLogLimiter::new(SlidingLog::per_day(10)?)?;
    /// assert!(limiter.memory_bytes() >= 16 * 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.ring.memory_bytes() + core::mem::size_of::<Self>() - core::mem::size_of::<Ring>()
    }

    /// Checks one unit now: records it if it fits.
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    ///
    /// let limiter = SlidingLogLimiter::new(SlidingLog::per_minute(1)?)?;
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.check().is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check(&self) -> Decision<SlidingLog> {
        self.check_at(self.clock.now())
    }

    /// Checks one unit at `now`, a reading the caller already holds: no clock read, infallible.
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    /// use nanolimit::Timestamp;
    ///
    /// let limiter = SlidingLogLimiter::new(SlidingLog::per_second(1)?)?;
    /// let now = Timestamp::from_ns(5_000)?;
    /// assert!(limiter.check_at(now).is_allowed());
    /// assert!(limiter.check_at(now).is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_at(&self, now: Timestamp) -> Decision<SlidingLog> {
        self.decide(1, now)
    }

    /// Checks `request` (its cost and time; see [`Request`]): records its units, all or
    /// nothing, if they fit. A cost of 0 records nothing and reads the metadata.
    ///
    /// Errors for a cost above [`max_cost`](SlidingLog::max_cost) (the limit, and at most 16).
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    /// use nanolimit::{ManualClock, Request, RequestError};
    ///
    /// let limiter = SlidingLogLimiter::with_clock(SlidingLog::per_day(10)?, ManualClock::new())?;
    /// assert!(limiter.check_with(Request::cost(7))?.is_allowed());
    /// let denied = limiter.check_with(Request::cost(4))?;
    /// assert_eq!((denied.is_denied(), denied.remaining()), (true, 3));
    /// assert!(matches!(
    ///     limiter.check_with(Request::cost(11)),
    ///     Err(RequestError::CostAboveLimit { cost: 11, limit: 10 })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_with(
        &self,
        request: Request<SlidingLog>,
    ) -> Result<Decision<SlidingLog>, RequestError> {
        let (cost, now) = self.resolve(&request)?;
        Ok(match cost {
            0 => self.peek_decision(0, now),
            _ => self.decide(cost, now),
        })
    }

    /// Whether one unit would fit now, recording nothing.
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    ///
    /// let limiter = SlidingLogLimiter::new(SlidingLog::per_minute(1)?)?;
    /// assert!(limiter.peek().is_allowed());
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.peek().is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek(&self) -> Decision<SlidingLog> {
        self.peek_decision(1, self.clock.now())
    }

    /// Whether `request` would fit, recording nothing; errors as [`check_with`](Self::check_with).
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    /// use nanolimit::{ManualClock, Request};
    ///
    /// let limiter = SlidingLogLimiter::with_clock(SlidingLog::per_hour(3)?, ManualClock::new())?;
    /// assert!(limiter.check_with(Request::cost(2))?.is_allowed());
    /// assert!(limiter.peek_with(Request::cost(1))?.is_allowed());
    /// assert!(limiter.peek_with(Request::cost(2))?.is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_with(
        &self,
        request: Request<SlidingLog>,
    ) -> Result<Decision<SlidingLog>, RequestError> {
        let (cost, now) = self.resolve(&request)?;
        Ok(self.peek_decision(cost, now))
    }

    /// The cost and time of `request`, or why it can never pass.
    #[inline]
    fn resolve(&self, request: &Request<SlidingLog>) -> Result<(u64, Timestamp), RequestError> {
        let max_cost = self.quota.max_cost();
        if request.cost > max_cost {
            return Err(RequestError::CostAboveLimit {
                cost: request.cost,
                limit: max_cost,
            });
        }
        Ok((request.cost, request.at.unwrap_or_else(|| self.clock.now())))
    }

    /// The core every check funnels into: `cost` units (1 to the most a request may cost).
    #[inline]
    fn decide(&self, cost: u64, now: Timestamp) -> Decision<SlidingLog> {
        let (limit, window_ns) = (self.quota.limit(), self.quota.window_ns());
        let view = self.ring.admit(cost, now.as_ns(), limit, window_ns);
        decision::on_log(view, cost, view.fits, self.quota, self.ring.log())
    }

    /// The core every peek funnels into.
    fn peek_decision(&self, cost: u64, now: Timestamp) -> Decision<SlidingLog> {
        let (limit, window_ns) = (self.quota.limit(), self.quota.window_ns());
        let view = self.ring.peek(cost, now.as_ns(), limit, window_ns);
        decision::on_log(view, cost, false, self.quota, self.ring.log())
    }
}

/// The bytes a ring for `limit` units would need (for the allocation error).
fn ring_bytes(limit: u64) -> usize {
    usize::try_from(limit)
        .ok()
        .and_then(usize::checked_next_power_of_two)
        .and_then(|slots| slots.checked_mul(8))
        .unwrap_or(usize::MAX)
}

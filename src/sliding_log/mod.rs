//! The exact sliding log: at most `L` units in any window of length `W`
//! ([`SlidingLogLimiter`], quota [`SlidingLog`]).
//!
//! The sliding-window counter ([`SlidingWindow`](crate::SlidingWindow)) approximates this limit
//! from two counts; GCRA and the fixed window shape traffic differently. The log keeps one
//! record per admitted unit, so it is exact: pick it for small, strict limits where one extra
//! admission matters (5 login attempts per 15 minutes, 3 password resets per hour, 10 SMS per
//! day), at the price of `L` records of memory instead of one word.
//!
//! # The rule, exactly
//!
//! A request of cost `n` judged at time `t` passes iff the units admitted in the window
//! `(t − W, t]` plus `n` are at most `L`. The window is open at its start: a unit admitted at
//! `t₀` counts at `t₀` and until `t₀ + W`, exclusive, and no longer from `t₀ + W` on.
//!
//! - A reading behind the latest admitted unit's time (a clock that stepped back, a timestamp
//!   taken before a preemption) is judged at that latest time, as the other quotas judge
//!   readings behind their state: so whatever the readings, at most `L` units are admitted in
//!   any window of the times the log records.
//! - Decision metadata ([`SlidingLogDecision`]): `remaining` is `L` minus the units in the window
//!   at the decision's time, `reset_after` the time until the latest unit leaves it, and
//!   `retry_after` the time until the unit that must leave for the request to fit has left.
//! - One request costs at most 16 units (and at most `L`): a request's units are written by
//!   whichever thread finishes them, and its first record says how many follow in 4 bits.
//!   Larger costs are an error ([`RequestError::CostAboveLimit`](crate::RequestError), with the
//!   smaller of the two as the limit).
//!
//! # Lock-free, and why
//!
//! A ring of `L` (rounded up to a power of two) 8-byte records, and one word naming the
//! position of the next request; a check reads three records and that word, an admission is
//! one compare-and-swap on a record and one on the word, a denial records nothing, and nothing
//! allocates after construction. A thread that finds a request half written finishes it, so no
//! thread waits for another. The protocol and why it is exact are in `ring.rs`; the record's
//! bit layout in `record.rs`.
//!
//! ```
//! use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
//! use nanolimit::ManualClock;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let logins = SlidingLogLimiter::with_clock(
//!     SlidingLog::new(5, Duration::from_secs(15 * 60))?,
//!     clock.clone(),
//! )?;
//! for _ in 0..5 {
//!     assert!(logins.check().is_allowed());
//!     clock.advance(Duration::from_secs(60));
//! }
//! let denied = logins.check();
//! assert!(denied.is_denied());
//! // The first attempt (at minute 0) leaves the window at minute 15: 10 minutes from now.
//! assert_eq!(denied.retry_after(), Duration::from_secs(10 * 60));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Per key
//!
//! [`KeyedSlidingLogLimiter`] keeps one log per key on the keyed limiters' bounded table, for
//! limits up to [`MAX_KEYED_LIMIT`] (each slot of the table has a ring of records beside it). A
//! check of a key the table holds runs the same protocol on the key's slot, whose state word is
//! the log's position; `src/sliding_log/slots.rs` says how a slot passes from one key to another
//! without a check ever counting in the wrong key's log.
//!
//! # Across servers
//!
//! `RedisSlidingLogLimiter` (feature `redis`, module `nanolimit::redis`) keeps each key's log in
//! a Redis sorted set, for a fleet of servers, and decides by the same rule.

mod decision;
mod keyed;
mod limiter;
mod record;
mod ring;
mod slots;

pub use decision::SlidingLogDecision;
pub use keyed::{
    KeyedSlidingLogBuilder, KeyedSlidingLogError, KeyedSlidingLogLimiter, MAX_KEYED_LIMIT,
};
pub use limiter::{AllocationError, SlidingLogLimiter};

use crate::clock::Timestamp;
use crate::quota::QuotaError;
use std::time::Duration;

/// The most units a sliding log may allow per window: its ring holds one 8-byte record per
/// unit (up to 128 MiB at this limit).
pub const MAX_LIMIT: u64 = 1 << 24;

/// The most units one request to a sliding log may cost (see the [module](self)).
pub const MAX_COST: u64 = record::MAX_UNITS_PER_REQUEST;

/// A sliding-log quota: at most `limit` units in any window of length `window` (see the
/// [module](self) for the exact rule).
///
/// ```
/// use nanolimit::sliding_log::SlidingLog;
/// use nanolimit::QuotaError;
/// use std::time::Duration;
///
/// let resets = SlidingLog::per_hour(3)?;
/// assert_eq!((resets.limit(), resets.window()), (3, Duration::from_secs(3_600)));
/// assert_eq!(SlidingLog::new(0, Duration::from_secs(1)), Err(QuotaError::ZeroLimit));
/// # Ok::<(), QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlidingLog {
    limit: u64,
    window_ns: u64,
}

impl SlidingLog {
    /// At most `limit` units (1 to [`MAX_LIMIT`]) in any window of `window` (1 ns up to the
    /// [clock's horizon](Timestamp::HORIZON), about 18 years).
    ///
    /// ```
    /// use nanolimit::sliding_log::SlidingLog;
    /// use std::time::Duration;
    ///
    /// let logins = SlidingLog::new(5, Duration::from_secs(15 * 60))?;
    /// assert_eq!(logins.limit(), 5);
    /// assert!(SlidingLog::new(5, Duration::ZERO).is_err());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn new(limit: u64, window: Duration) -> Result<Self, QuotaError> {
        if limit == 0 {
            return Err(QuotaError::ZeroLimit);
        }
        if limit > MAX_LIMIT {
            return Err(QuotaError::LimitTooLarge {
                requested: limit,
                max: MAX_LIMIT,
            });
        }
        if window.is_zero() {
            return Err(QuotaError::ZeroPeriod);
        }
        let max_window = Timestamp::HORIZON.since_origin();
        if window > max_window {
            return Err(QuotaError::PeriodTooLong { max: max_window });
        }
        Ok(SlidingLog {
            limit,
            // At most the horizon, 2^59 ns.
            window_ns: window.as_nanos() as u64,
        })
    }

    /// At most `limit` units in any second.
    ///
    /// ```
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// assert_eq!(SlidingLog::per_second(10)?.window().as_secs(), 1);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn per_second(limit: u64) -> Result<Self, QuotaError> {
        Self::new(limit, Duration::from_secs(1))
    }

    /// At most `limit` units in any minute.
    ///
    /// ```
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// assert_eq!(SlidingLog::per_minute(10)?.window().as_secs(), 60);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn per_minute(limit: u64) -> Result<Self, QuotaError> {
        Self::new(limit, Duration::from_secs(60))
    }

    /// At most `limit` units in any hour.
    ///
    /// ```
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// assert_eq!(SlidingLog::per_hour(3)?.window().as_secs(), 3_600);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn per_hour(limit: u64) -> Result<Self, QuotaError> {
        Self::new(limit, Duration::from_secs(3_600))
    }

    /// At most `limit` units in any day (24 hours).
    ///
    /// ```
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// assert_eq!(SlidingLog::per_day(10)?.window().as_secs(), 86_400);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn per_day(limit: u64) -> Result<Self, QuotaError> {
        Self::new(limit, Duration::from_secs(86_400))
    }

    /// The most units in any window.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The window's length.
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.window_ns)
    }

    /// The window's length in nanoseconds.
    pub(crate) fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// The most units one request may cost: the limit, and at most [`MAX_COST`].
    ///
    /// ```
    /// use nanolimit::sliding_log::SlidingLog;
    ///
    /// assert_eq!(SlidingLog::per_minute(5)?.max_cost(), 5);
    /// assert_eq!(SlidingLog::per_minute(1_000)?.max_cost(), 16);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn max_cost(&self) -> u64 {
        self.limit.min(MAX_COST)
    }
}

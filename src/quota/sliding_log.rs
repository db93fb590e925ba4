//! The exact sliding log's quota ([`SlidingLog`]): at most `L` units in any window of length
//! `W`. The log itself (one record per unit, and its protocol) is `src/sliding_log/`.

use super::QuotaError;
use crate::clock::Timestamp;
use core::time::Duration;

/// The most units a sliding log may allow per window: its ring holds one 8-byte record per
/// unit (up to 128 MiB at this limit).
pub const MAX_LIMIT: u64 = 1 << 24;

/// The most units one request to a sliding log may cost (see the [module](crate::sliding_log)):
/// a request's first record says how many follow in 4 bits.
pub const MAX_COST: u64 = 16;

/// A sliding-log quota: at most `limit` units in any window of length `window` (see the
/// [module](crate::sliding_log) for the exact rule).
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

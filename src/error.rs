//! Errors: quotas that cannot be built, requests that can never pass, and timestamps outside
//! the clock's range. (Keyed tables that cannot be built fail with
//! [`TableError`](crate::keyed::TableError).)

use core::fmt;
use std::time::Duration;

/// Why a quota was rejected when it was built.
///
/// Every quota constructor validates its input, so a limiter never holds a quota whose state
/// could overflow its packed word, wrap silently or divide by zero.
///
/// ```
/// use nanolimit::{FixedWindow, Gcra, QuotaError};
///
/// assert_eq!(Gcra::per_second(0), Err(QuotaError::ZeroRate));
/// assert_eq!(FixedWindow::per_second(0), Err(QuotaError::ZeroLimit));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuotaError {
    /// A GCRA quota admits nothing: a count of zero per period.
    ZeroRate,
    /// The period (GCRA) or the window has zero length.
    ZeroPeriod,
    /// A limit of zero (the GCRA burst, or the limit per window): no request could ever pass.
    ZeroLimit,
    /// The rate is faster than the packed state can represent over the supported clock range.
    RateTooHigh {
        /// The fastest supported rate, in cost units per second.
        max_per_second: u64,
    },
    /// The period or window is longer than the supported clock range.
    PeriodTooLong {
        /// The longest supported period.
        max: Duration,
    },
    /// The limit (the GCRA burst, or the limit per window) does not fit the packed state.
    LimitTooLarge {
        /// The limit that was asked for.
        requested: u64,
        /// The largest one this quota can hold.
        max: u64,
    },
    /// The window is shorter than the shortest supported window.
    WindowTooShort {
        /// The shortest supported window.
        min: Duration,
    },
    /// A tier's quota cannot share state with the limiter's own quota (for windows: a different
    /// window length).
    IncompatibleQuota,
}

impl fmt::Display for QuotaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            QuotaError::ZeroRate => f.write_str("quota admits nothing: the count per period is zero"),
            QuotaError::ZeroPeriod => f.write_str("quota period or window has zero length"),
            QuotaError::ZeroLimit => {
                f.write_str("quota limit (burst, or limit per window) is zero: nothing could pass")
            }
            QuotaError::RateTooHigh { max_per_second } => write!(
                f,
                "quota rate is above the supported maximum of {max_per_second} cost units per second"
            ),
            QuotaError::PeriodTooLong { max } => write!(
                f,
                "quota period or window is longer than the supported maximum of {}",
                HumanDuration(max)
            ),
            QuotaError::LimitTooLarge { requested, max } => write!(
                f,
                "quota limit {requested} does not fit the packed state (at most {max})"
            ),
            QuotaError::WindowTooShort { min } => write!(
                f,
                "quota window is shorter than the supported minimum of {}",
                HumanDuration(min)
            ),
            QuotaError::IncompatibleQuota => f.write_str(
                "tier quota cannot share state with this limiter's quota (window length differs)",
            ),
        }
    }
}

impl std::error::Error for QuotaError {}

/// Why a full-form request ([`Request`](crate::Request)) can never be judged.
///
/// Not "not now": waiting will never make such a request pass. It is reported apart from a
/// denied [`Decision`](crate::Decision) so that a caller can tell a client to split the request
/// (an HTTP server might answer 413 rather than 429).
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock, Request, RequestError};
///
/// let limiter = Limiter::with_clock(Gcra::per_second(10)?, ManualClock::new());
/// assert_eq!(
///     limiter.check_with(Request::cost(11)).unwrap_err(),
///     RequestError::CostAboveLimit { cost: 11, limit: 10 }
/// );
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestError {
    /// The cost is larger than the quota (or the request's tier) admits at once.
    CostAboveLimit {
        /// The cost that was asked for.
        cost: u64,
        /// The most the quota admits at once: the GCRA burst, or the limit per window.
        limit: u64,
    },
    /// The request's tier was made by a limiter whose quota counts in other units (another
    /// GCRA tick, another window length), so its state cannot be shared with this limiter's.
    /// Make tiers with the limiter that uses them.
    ForeignTier,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RequestError::CostAboveLimit { cost, limit } => write!(
                f,
                "cost {cost} exceeds the quota's limit of {limit}: it can never be admitted"
            ),
            RequestError::ForeignTier => f.write_str(
                "the request's tier was made by a limiter whose quota counts in other units",
            ),
        }
    }
}

impl std::error::Error for RequestError {}

/// Why a [`Timestamp`](crate::Timestamp) could not be made.
///
/// ```
/// use nanolimit::{Timestamp, TimestampError};
///
/// assert_eq!(
///     Timestamp::from_ns(u64::MAX),
///     Err(TimestampError::PastHorizon { ns: u64::MAX })
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimestampError {
    /// The reading is past [`Timestamp::HORIZON`](crate::Timestamp::HORIZON), about 18.3 years
    /// after the clock's origin: most likely not a time since the limiter's clock's origin at
    /// all (a Unix-epoch time, or an uninitialised value).
    PastHorizon {
        /// The reading, in nanoseconds.
        ns: u64,
    },
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimestampError::PastHorizon { ns } => write!(
                f,
                "timestamp of {ns} ns is past the clock's horizon of {} after its origin \
                 (a Unix-epoch time is not a time since the limiter clock's origin)",
                HumanDuration(crate::Timestamp::HORIZON.since_origin())
            ),
        }
    }
}

impl std::error::Error for TimestampError {}

/// Formats a duration for people: three significant digits in the largest unit that keeps it
/// at or above 1 (`16 ns`, `1 ms`, `18.3 years`).
pub(crate) struct HumanDuration(pub(crate) Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, f64); 8] = [
            ("years", 365.0 * 86_400e9),
            ("days", 86_400e9),
            ("hours", 3_600e9),
            ("minutes", 60e9),
            ("s", 1e9),
            ("ms", 1e6),
            ("µs", 1e3),
            ("ns", 1.0),
        ];
        let ns = self.0.as_nanos() as f64;
        let (unit, size) = UNITS
            .into_iter()
            .find(|&(_, size)| ns >= size)
            .unwrap_or(("ns", 1.0));
        let value = ns / size;
        let digits = if value >= 100.0 || value.fract() == 0.0 {
            0
        } else if value >= 10.0 {
            1
        } else {
            2
        };
        write!(f, "{value:.digits$} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_in_their_largest_unit() {
        let cases = [
            (Duration::from_nanos(16), "16 ns"),
            (Duration::from_micros(1), "1 µs"),
            (Duration::from_millis(1), "1 ms"),
            (Duration::from_millis(1_500), "1.50 s"),
            (Duration::from_secs(90), "1.50 minutes"),
            (Duration::from_nanos(1 << 59), "18.3 years"),
        ];
        for (duration, text) in cases {
            assert_eq!(HumanDuration(duration).to_string(), text);
        }
        let too_long = QuotaError::PeriodTooLong {
            max: Duration::from_nanos(1 << 59),
        };
        assert_eq!(
            too_long.to_string(),
            "quota period or window is longer than the supported maximum of 18.3 years"
        );
    }
}

//! Why a quota cannot be built.

use crate::clock::HumanDuration;
use core::fmt;
use core::time::Duration;

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

impl core::error::Error for QuotaError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_too_long_names_its_maximum_in_its_largest_unit() {
        let too_long = QuotaError::PeriodTooLong {
            max: Duration::from_nanos(1 << 59),
        };
        assert_eq!(
            too_long.to_string(),
            "quota period or window is longer than the supported maximum of 18.3 years"
        );
    }
}

//! Errors: invalid quotas (rejected when the quota is built) and requests that can never pass.

use core::fmt;

/// Why a quota was rejected when it was built.
///
/// Every quota constructor validates its input, so a limiter never holds a quota whose state
/// could overflow its packed word, wrap silently or divide by zero.
///
/// ```
/// use nanolimit::{Gcra, QuotaError};
///
/// assert_eq!(Gcra::per_second(0), Err(QuotaError::ZeroRate));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuotaError {
    /// The quota admits nothing: a count of zero per period.
    ZeroRate,
    /// The period or window has zero length.
    ZeroPeriod,
    /// A burst or window limit of zero: no request could ever pass.
    ZeroBurst,
    /// The rate is faster than the packed state can represent over the supported clock range.
    RateTooHigh {
        /// The fastest supported rate, in cost units per second.
        max_per_second: u64,
    },
    /// The period (or window) is longer than the supported clock range.
    PeriodTooLong {
        /// The longest supported period, in nanoseconds.
        max_ns: u64,
    },
    /// The burst (GCRA) or the limit per window does not fit the packed state.
    BurstTooLarge {
        /// The burst or limit that was asked for.
        requested: u64,
        /// The largest one this quota can hold.
        max: u64,
    },
    /// The window is shorter than the shortest supported window.
    WindowTooShort {
        /// The shortest supported window, in nanoseconds.
        min_ns: u64,
    },
    /// A per-call quota cannot share state with the keyed limiter's own quota (for windows: a
    /// different window length).
    IncompatibleQuota,
}

impl fmt::Display for QuotaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            QuotaError::ZeroRate => f.write_str("quota admits nothing: the count per period is zero"),
            QuotaError::ZeroPeriod => f.write_str("quota period or window has zero length"),
            QuotaError::ZeroBurst => f.write_str("quota burst or limit is zero: nothing could pass"),
            QuotaError::RateTooHigh { max_per_second } => write!(
                f,
                "quota rate is above the supported maximum of {max_per_second} cost units per second"
            ),
            QuotaError::PeriodTooLong { max_ns } => {
                write!(f, "quota period is longer than the supported maximum of {max_ns} ns")
            }
            QuotaError::BurstTooLarge { requested, max } => write!(
                f,
                "quota burst or limit {requested} does not fit the packed state (at most {max})"
            ),
            QuotaError::WindowTooShort { min_ns } => {
                write!(f, "quota window is shorter than the supported minimum of {min_ns} ns")
            }
            QuotaError::IncompatibleQuota => f.write_str(
                "per-call quota cannot share state with this keyed limiter (window length differs)",
            ),
        }
    }
}

impl std::error::Error for QuotaError {}

/// A request whose cost is larger than the quota could ever admit at once.
///
/// This is not "not now": waiting will never make it pass. It is reported apart from a denied
/// [`Decision`](crate::Decision) so that a caller can tell a client to split the request.
///
/// ```
/// use nanolimit::{Gcra, InsufficientCapacity, Limiter, ManualClock};
///
/// let limiter = Limiter::with_clock(Gcra::per_second(10).unwrap(), ManualClock::new());
/// assert_eq!(
///     limiter.check_n(11).unwrap_err(),
///     InsufficientCapacity { cost: 11, capacity: 10 }
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InsufficientCapacity {
    /// The cost that was asked for.
    pub cost: u64,
    /// The most the quota admits at once (the burst, or the limit per window).
    pub capacity: u64,
}

impl InsufficientCapacity {
    /// `Ok` if `quota` can ever admit `cost` at once, the error otherwise.
    #[inline]
    pub(crate) fn check<A: crate::Algorithm>(
        quota: &A,
        cost: u64,
    ) -> Result<(), InsufficientCapacity> {
        let capacity = quota.capacity();
        if cost > capacity {
            return Err(InsufficientCapacity { cost, capacity });
        }
        Ok(())
    }
}

impl fmt::Display for InsufficientCapacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cost {} exceeds the quota's capacity of {}: it can never be admitted",
            self.cost, self.capacity
        )
    }
}

impl std::error::Error for InsufficientCapacity {}

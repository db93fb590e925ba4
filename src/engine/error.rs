//! Why a request can never be judged.

use core::fmt;

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

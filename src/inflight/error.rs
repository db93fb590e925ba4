//! What an in-flight limiter answers when it cannot do what it was asked.

use super::word::MAX_IN_FLIGHT;
use core::fmt;

/// A limit an in-flight limiter cannot take: zero, or above [`MAX_IN_FLIGHT`] (also what
/// [`add_permits`](super::InFlightLimiter::add_permits) answers when the sum would be).
///
/// ```
/// use nanolimit::inflight::{InFlightError, InFlightLimiter, MAX_IN_FLIGHT};
///
/// assert_eq!(InFlightLimiter::new(0).unwrap_err(), InFlightError::ZeroLimit);
/// assert_eq!(
///     InFlightLimiter::new(MAX_IN_FLIGHT + 1).unwrap_err(),
///     InFlightError::LimitAboveMaximum { limit: MAX_IN_FLIGHT + 1 }
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InFlightError {
    /// A limit of zero would admit nothing, ever.
    ZeroLimit,
    /// The limit asked for (saturated at `u64::MAX`) is above [`MAX_IN_FLIGHT`].
    LimitAboveMaximum {
        /// The limit asked for.
        limit: u64,
    },
}

impl fmt::Display for InFlightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InFlightError::ZeroLimit => write!(f, "an in-flight limit must be at least 1"),
            InFlightError::LimitAboveMaximum { limit } => write!(
                f,
                "an in-flight limit of {limit} is above the maximum, {MAX_IN_FLIGHT}"
            ),
        }
    }
}

impl std::error::Error for InFlightError {}

/// A request for more units than the limit: it can never be served whole, so it is refused at
/// once rather than left to wait forever. Split it, or raise the limit
/// ([`add_permits`](super::InFlightLimiter::add_permits)).
///
/// ```
/// use nanolimit::inflight::{AboveLimit, InFlightLimiter};
///
/// let limiter = InFlightLimiter::new(4)?;
/// assert_eq!(limiter.acquire_many(5).unwrap_err(), AboveLimit { units: 5, limit: 4 });
/// # Ok::<(), nanolimit::inflight::InFlightError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AboveLimit {
    /// The units requested.
    pub units: u64,
    /// The limit when the request was made.
    pub limit: u64,
}

impl fmt::Display for AboveLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a request for {} units can never fit an in-flight limit of {}",
            self.units, self.limit
        )
    }
}

impl std::error::Error for AboveLimit {}

/// A refusal of [`try_acquire`](super::InFlightLimiter::try_acquire): the units are not free
/// now, or waiters queued earlier come first. Figures are from the one word the attempt read.
///
/// There is no retry-after: units free when work ends, which no clock predicts. An HTTP server
/// should answer `503 Service Unavailable` (the server is busy, not the client over its rate),
/// with no `Retry-After`, or a short fixed one it chooses itself; or wait with
/// [`acquire`](super::InFlightLimiter::acquire) instead of refusing.
///
/// ```
/// use nanolimit::inflight::InFlightLimiter;
///
/// let limiter = InFlightLimiter::new(2)?;
/// let _held = limiter.try_acquire().unwrap();
/// let busy = limiter.try_acquire_many(2).unwrap_err().busy().unwrap();
/// assert_eq!((busy.limit(), busy.in_flight(), busy.remaining(), busy.requested()), (2, 1, 1, 2));
/// # Ok::<(), nanolimit::inflight::InFlightError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Busy {
    pub(crate) limit: u64,
    pub(crate) in_flight: u64,
    pub(crate) requested: u64,
    pub(crate) queued: bool,
}

impl Busy {
    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Units held by permits.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Units no permit holds. When [`is_queued`](Self::is_queued), they are kept for the
    /// waiters, so a request can be busy with `remaining() >= requested()`.
    pub fn remaining(&self) -> u64 {
        self.limit - self.in_flight
    }

    /// The units the refused request asked for.
    pub fn requested(&self) -> u64 {
        self.requested
    }

    /// Whether waiters were queued: units that free go to them first.
    pub fn is_queued(&self) -> bool {
        self.queued
    }
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} units in flight; {} requested",
            self.in_flight, self.limit, self.requested
        )?;
        if self.queued {
            write!(f, " behind queued waiters")?;
        }
        Ok(())
    }
}

impl std::error::Error for Busy {}

/// Why [`try_acquire_many`](super::InFlightLimiter::try_acquire_many) gave no permit.
///
/// One error type with two variants, rather than a `Result` inside a `Result`: both are
/// refusals the caller answers, but differently ([`Busy`]: now, not later; [`AboveLimit`]:
/// never, split the request), and `?` carries either.
///
/// ```
/// use nanolimit::inflight::{AboveLimit, InFlightLimiter, TryAcquireError};
///
/// let limiter = InFlightLimiter::new(3)?;
/// assert_eq!(
///     limiter.try_acquire_many(4).unwrap_err(),
///     TryAcquireError::AboveLimit(AboveLimit { units: 4, limit: 3 })
/// );
/// # Ok::<(), nanolimit::inflight::InFlightError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TryAcquireError {
    /// Not now: see [`Busy`].
    Busy(Busy),
    /// Never: see [`AboveLimit`].
    AboveLimit(AboveLimit),
}

impl TryAcquireError {
    /// The refusal's figures, if it is [`Busy`](TryAcquireError::Busy).
    pub fn busy(self) -> Option<Busy> {
        match self {
            TryAcquireError::Busy(busy) => Some(busy),
            TryAcquireError::AboveLimit(_) => None,
        }
    }
}

impl fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryAcquireError::Busy(busy) => busy.fmt(f),
            TryAcquireError::AboveLimit(above) => above.fmt(f),
        }
    }
}

impl std::error::Error for TryAcquireError {}

impl From<Busy> for TryAcquireError {
    fn from(busy: Busy) -> Self {
        TryAcquireError::Busy(busy)
    }
}

impl From<AboveLimit> for TryAcquireError {
    fn from(above: AboveLimit) -> Self {
        TryAcquireError::AboveLimit(above)
    }
}

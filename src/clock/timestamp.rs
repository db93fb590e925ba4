//! [`Timestamp`]: a clock reading that is valid by construction.

use super::HumanDuration;
use core::fmt;
use core::time::Duration;

/// A reading of a limiter's clock: nanoseconds since the clock's origin, at most
/// [`Timestamp::HORIZON`] (about 18.3 years).
///
/// Every check takes its time as a `Timestamp`: from the limiter's clock
/// ([`Limiter::now`](crate::Limiter::now), [`Clock::now`](crate::Clock::now)), or built from
/// nanoseconds the caller counted from an origin of its own ([`from_ns`](Self::from_ns)), which
/// rejects a value past the horizon instead of clamping it. A Unix-epoch time in nanoseconds, or
/// `u64::MAX`, is therefore an error where it is made, and can never reach a limiter's state.
///
/// Readings of one limiter must share one origin. Every [`QuantaClock`](crate::QuantaClock) of a
/// process shares one, and [`QuantaClock::timestamp`](crate::QuantaClock::timestamp) converts a
/// [`std::time::Instant`] to it. A packet loop that stamps packets with a NIC counter subtracts
/// the counter's value at a moment of its choosing (say, when the limiter was built) and uses
/// only such timestamps with that limiter, never its clock's. A reading within the horizon but
/// ahead of the true time cannot be told from the truth: the state it writes runs ahead, and
/// later correct readings are denied until they pass it (see
/// [readings behind the state](crate::quota#readings-behind-the-state)).
///
/// ```
/// use nanolimit::Timestamp;
/// use nanolimit::clock::TimestampError;
/// use std::time::Duration;
///
/// let start = Timestamp::from_ns(1_500)?;
/// assert_eq!(start.as_ns(), 1_500);
/// assert_eq!(start.saturating_add(Duration::from_micros(1)).as_ns(), 2_500);
///
/// // A Unix-epoch time in nanoseconds is not a reading since the clock's origin.
/// let epoch_ns = 1_800_000_000_000_000_000;
/// assert_eq!(
///     Timestamp::from_ns(epoch_ns),
///     Err(TimestampError::PastHorizon { ns: epoch_ns })
/// );
/// # Ok::<(), TimestampError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The clock's origin: 0 ns.
    pub const ORIGIN: Timestamp = Timestamp(0);

    /// The latest reading the crate supports: 2^59 ns, about 18.3 years after the clock's
    /// origin. Every quota's state fits its packed word up to this time.
    pub const HORIZON: Timestamp = Timestamp(1 << 59);

    /// A reading `ns` nanoseconds after the clock's origin; an error past [`HORIZON`](Self::HORIZON).
    #[inline]
    pub const fn from_ns(ns: u64) -> Result<Timestamp, TimestampError> {
        if ns > Self::HORIZON.0 {
            return Err(TimestampError::PastHorizon { ns });
        }
        Ok(Timestamp(ns))
    }

    /// A reading `since_origin` after the clock's origin; an error past [`HORIZON`](Self::HORIZON).
    ///
    /// ```
    /// use nanolimit::Timestamp;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Timestamp::from_duration(Duration::from_secs(2))?.as_ns(), 2_000_000_000);
    /// assert!(Timestamp::from_duration(Duration::from_secs(600_000_000)).is_err());
    /// # Ok::<(), nanolimit::clock::TimestampError>(())
    /// ```
    pub const fn from_duration(since_origin: Duration) -> Result<Timestamp, TimestampError> {
        let ns = since_origin.as_nanos();
        if ns > u64::MAX as u128 {
            return Err(TimestampError::PastHorizon { ns: u64::MAX });
        }
        Timestamp::from_ns(ns as u64)
    }

    /// A clock's own reading, clamped to [`HORIZON`](Self::HORIZON): for [`Clock`](crate::Clock)
    /// implementations, whose readings only pass the horizon 18 years after their origin (a
    /// limiter then stops refilling: it fails closed). Caller-supplied times should use
    /// [`from_ns`](Self::from_ns), which reports such a value as an error.
    #[inline]
    pub const fn saturating_from_ns(ns: u64) -> Timestamp {
        if ns > Self::HORIZON.0 {
            Self::HORIZON
        } else {
            Timestamp(ns)
        }
    }

    /// Nanoseconds since the clock's origin.
    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0
    }

    /// The time since the clock's origin.
    pub const fn since_origin(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// This reading moved `by` later, at most to [`HORIZON`](Self::HORIZON).
    #[inline]
    pub const fn saturating_add(self, by: Duration) -> Timestamp {
        let by_ns = by.as_nanos();
        let room_ns = (Self::HORIZON.0 - self.0) as u128;
        if by_ns >= room_ns {
            Self::HORIZON
        } else {
            Timestamp(self.0 + by_ns as u64)
        }
    }

    /// This reading moved `by` later, or `None` past [`HORIZON`](Self::HORIZON).
    pub const fn checked_add(self, by: Duration) -> Option<Timestamp> {
        let by_ns = by.as_nanos();
        if by_ns > (Self::HORIZON.0 - self.0) as u128 {
            None
        } else {
            Some(Timestamp(self.0 + by_ns as u64))
        }
    }

    /// This reading moved `by` earlier, at most to [`ORIGIN`](Self::ORIGIN).
    pub const fn saturating_sub(self, by: Duration) -> Timestamp {
        let by_ns = by.as_nanos();
        if by_ns >= self.0 as u128 {
            Self::ORIGIN
        } else {
            Timestamp(self.0 - by_ns as u64)
        }
    }

    /// The time from `earlier` to this reading, zero if `earlier` is later.
    ///
    /// ```
    /// use nanolimit::Timestamp;
    /// use std::time::Duration;
    ///
    /// let later = Timestamp::from_ns(5_000)?;
    /// let earlier = Timestamp::from_ns(2_000)?;
    /// assert_eq!(later.saturating_duration_since(earlier), Duration::from_nanos(3_000));
    /// assert_eq!(earlier.saturating_duration_since(later), Duration::ZERO);
    /// # Ok::<(), nanolimit::clock::TimestampError>(())
    /// ```
    pub const fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({} ns)", self.0)
    }
}

impl TryFrom<Duration> for Timestamp {
    type Error = TimestampError;

    fn try_from(since_origin: Duration) -> Result<Timestamp, TimestampError> {
        Timestamp::from_duration(since_origin)
    }
}

impl From<Timestamp> for Duration {
    fn from(timestamp: Timestamp) -> Duration {
        timestamp.since_origin()
    }
}

/// Why a [`Timestamp`] could not be made.
///
/// ```
/// use nanolimit::Timestamp;
/// use nanolimit::clock::TimestampError;
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
                HumanDuration(Timestamp::HORIZON.since_origin())
            ),
        }
    }
}

impl core::error::Error for TimestampError {}

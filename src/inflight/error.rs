//! What an in-flight limiter answers when it cannot grant a permit.

use core::fmt;

/// Why an acquire gave no permit: the one error of both limiters, direct
/// ([`InFlightLimiter`](super::InFlightLimiter)) and keyed
/// ([`KeyedInFlightLimiter`](super::KeyedInFlightLimiter)).
///
/// One error type rather than a `Result` inside a `Result`: every variant is a refusal the
/// caller answers, but differently ([`Busy`](Self::Busy) and [`TableFull`](Self::TableFull):
/// not now; [`AboveLimit`](Self::AboveLimit): never, split the request), and `?` carries any.
///
/// | variant | from | meaning |
/// |---|---|---|
/// | [`Busy`](Self::Busy) | `try_acquire`, `try_acquire_many` (both limiters) | the units are not free now, or (direct only) waiters queued earlier come first |
/// | [`AboveLimit`](Self::AboveLimit) | every `*_many` acquire (both limiters, blocking and async included) | more units than the limit: it could never be served |
/// | [`TableFull`](Self::TableFull) | keyed only | a new key, and every slot of the table it may use holds a key with units in flight |
///
/// None carries a retry-after: units free when work ends, which no clock predicts. An HTTP
/// server should answer `503 Service Unavailable` for [`Busy`](Self::Busy) and
/// [`TableFull`](Self::TableFull) alike (the service is saturated, not the client over its
/// rate), with no `Retry-After`, or a short fixed one it chooses itself; or wait with
/// [`acquire`](super::InFlightLimiter::acquire) instead of refusing.
///
/// ```
/// use nanolimit::inflight::{AcquireError, InFlightLimiter};
///
/// let limiter = InFlightLimiter::new(2)?;
/// let _held = limiter.try_acquire()?;
/// assert_eq!(
///     limiter.try_acquire_many(2).unwrap_err(),
///     AcquireError::Busy { limit: 2, in_flight: 1, requested: 2, queued: false }
/// );
/// assert_eq!(
///     limiter.try_acquire_many(3).unwrap_err(),
///     AcquireError::AboveLimit { units: 3, limit: 2 }
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AcquireError {
    /// Not now: the units are not free, or (direct limiter only) waiters queued earlier come
    /// first. The figures are from the one word the attempt read: the limiter's, or the key's
    /// entry for a keyed limiter (a key the table does not hold has nothing in flight).
    Busy {
        /// The limit.
        limit: u64,
        /// Units held by permits (of the key, for a keyed limiter).
        in_flight: u64,
        /// The units the refused request asked for.
        requested: u64,
        /// Whether waiters were queued, so that units that free go to them first: then a
        /// request can be busy though `limit - in_flight >= requested`. Always `false` from a
        /// keyed limiter, which has no queue.
        queued: bool,
    },
    /// Never: a request for more units than the limit can never be served whole, so it is
    /// refused at once rather than left to wait forever. Split it, or raise the limit
    /// ([`add_permits`](super::InFlightLimiter::add_permits), direct limiter only).
    AboveLimit {
        /// The units requested.
        units: u64,
        /// The limit when the request was made.
        limit: u64,
    },
    /// Not now, keyed limiter only: a new key, and every slot of the table it may use holds a
    /// key with units in flight ([`WhenFull::Deny`](crate::WhenFull::Deny), the default). A
    /// slot frees when all of one of those keys' permits are dropped.
    TableFull,
}

impl AcquireError {
    /// Whether it is [`Busy`](Self::Busy): the units were not free now.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(1)?;
    /// let _held = limiter.try_acquire()?;
    /// assert!(limiter.try_acquire().unwrap_err().is_busy());
    /// assert!(!limiter.try_acquire_many(2).unwrap_err().is_busy());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_busy(&self) -> bool {
        matches!(self, AcquireError::Busy { .. })
    }

    /// Whether it is [`Busy`](Self::Busy) behind queued waiters (direct limiter only): units
    /// that free go to the waiters first.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    /// use std::thread;
    ///
    /// let limiter = InFlightLimiter::new(2)?;
    /// let held = limiter.acquire_many(2)?;
    /// thread::scope(|scope| {
    ///     let waiter = scope.spawn(|| limiter.acquire_many(2).map(|permit| permit.units()));
    ///     while limiter.waiters() == 0 {
    ///         thread::yield_now(); // until the waiter has queued
    ///     }
    ///     let error = limiter.try_acquire().unwrap_err();
    ///     drop(held); // serves the waiter
    ///     assert!(error.is_queued());
    ///     assert_eq!(waiter.join().unwrap(), Ok(2));
    /// });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_queued(&self) -> bool {
        matches!(self, AcquireError::Busy { queued: true, .. })
    }

    /// Whether it is [`AboveLimit`](Self::AboveLimit): the request could never be served.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<str>::new(2, 100)?;
    /// assert!(limiter.try_acquire_many("a", 3).unwrap_err().is_above_limit());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_above_limit(&self) -> bool {
        matches!(self, AcquireError::AboveLimit { .. })
    }

    /// Whether it is [`TableFull`](Self::TableFull) (keyed limiter only).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<u32>::builder(1).capacity(1).shards(1).build()?;
    /// let held: Vec<_> = (0..8).map(|key| limiter.try_acquire(&key).unwrap()).collect();
    /// assert!(limiter.try_acquire(&0).unwrap_err().is_busy());
    /// // Every slot key 8 may use holds a key with a unit in flight.
    /// assert!(limiter.try_acquire(&8).unwrap_err().is_table_full());
    /// drop(held);
    /// assert!(limiter.try_acquire(&8).is_ok()); // reclaims a fresh entry
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_table_full(&self) -> bool {
        matches!(self, AcquireError::TableFull)
    }

    /// For [`Busy`](Self::Busy), the units no permit held: `limit - in_flight`. When
    /// [`is_queued`](Self::is_queued), they are kept for the waiters, so a request can be busy
    /// with `remaining >= requested`. `None` for the other variants.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(5)?;
    /// let _three = limiter.try_acquire_many(3)?;
    /// assert_eq!(limiter.try_acquire_many(3).unwrap_err().remaining(), Some(2));
    /// assert_eq!(limiter.try_acquire_many(6).unwrap_err().remaining(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> Option<u64> {
        match *self {
            AcquireError::Busy {
                limit, in_flight, ..
            } => Some(limit - in_flight),
            _ => None,
        }
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AcquireError::Busy {
                limit,
                in_flight,
                requested,
                queued,
            } => {
                write!(
                    f,
                    "{in_flight} of {limit} units in flight; {requested} requested"
                )?;
                if queued {
                    write!(f, " behind queued waiters")?;
                }
                Ok(())
            }
            AcquireError::AboveLimit { units, limit } => write!(
                f,
                "a request for {units} units can never fit an in-flight limit of {limit}"
            ),
            AcquireError::TableFull => write!(
                f,
                "a new key found every slot it may use held by keys with units in flight"
            ),
        }
    }
}

impl std::error::Error for AcquireError {}

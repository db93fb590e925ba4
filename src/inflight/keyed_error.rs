//! What a keyed in-flight limiter answers when it cannot grant a permit.

use super::{AboveLimit, Busy};
use core::fmt;

/// Why a keyed [`try_acquire`](super::KeyedInFlightLimiter::try_acquire) or
/// [`try_acquire_many`](super::KeyedInFlightLimiter::try_acquire_many) gave no permit.
///
/// None carries a retry-after (see [`Busy`]): an HTTP server answers `503` for
/// [`Busy`](Self::Busy) and [`TableFull`](Self::TableFull) alike (the service is saturated),
/// with no computed `Retry-After`.
///
/// ```
/// use nanolimit::inflight::{KeyedInFlightLimiter, KeyedTryAcquireError};
///
/// let limiter = KeyedInFlightLimiter::<u32>::builder(1).capacity(1).shards(1).build()?;
/// let held: Vec<_> = (0..8).map(|key| limiter.try_acquire(&key).unwrap()).collect();
/// assert!(limiter.try_acquire(&0).unwrap_err().busy().is_some());
/// // Every slot key 8 may use holds a key with a unit in flight.
/// assert_eq!(limiter.try_acquire(&8).unwrap_err(), KeyedTryAcquireError::TableFull);
/// drop(held);
/// assert!(limiter.try_acquire(&8).is_ok()); // reclaims a fresh entry
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyedTryAcquireError {
    /// Not now: the key's units are in flight (see [`Busy`]; never
    /// [`is_queued`](Busy::is_queued): keyed limiters have no queue).
    Busy(Busy),
    /// Never: more units than the limit (see [`AboveLimit`]).
    AboveLimit(AboveLimit),
    /// Not now: a new key, and every slot of the table it may use holds a key with units in
    /// flight ([`WhenFull::Deny`](crate::WhenFull::Deny)). A slot frees when all of one of
    /// those keys' permits are dropped.
    TableFull,
}

impl KeyedTryAcquireError {
    /// The refusal's figures, if it is [`Busy`](KeyedTryAcquireError::Busy).
    pub fn busy(self) -> Option<Busy> {
        match self {
            KeyedTryAcquireError::Busy(busy) => Some(busy),
            _ => None,
        }
    }

    /// Whether it is [`TableFull`](KeyedTryAcquireError::TableFull).
    pub fn is_table_full(self) -> bool {
        self == KeyedTryAcquireError::TableFull
    }
}

impl fmt::Display for KeyedTryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyedTryAcquireError::Busy(busy) => busy.fmt(f),
            KeyedTryAcquireError::AboveLimit(above) => above.fmt(f),
            KeyedTryAcquireError::TableFull => write!(
                f,
                "a new key found every slot it may use held by keys with units in flight"
            ),
        }
    }
}

impl std::error::Error for KeyedTryAcquireError {}

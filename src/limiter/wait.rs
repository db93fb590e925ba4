//! Waiting for a reservation's start: what a wait returns when it cannot, and its jitter.

use super::reservation::{Outcome, Reservation};
use crate::clock::{Clock, Timestamp};
use crate::engine::error::RequestError;
use core::cell::Cell;
use core::fmt;
use std::time::Duration;

/// Why a wait returned without admitting its request. Nothing was booked.
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock, Request, WaitError};
/// use std::time::Duration;
///
/// let limiter = Limiter::with_clock(Gcra::per_second(1)?, ManualClock::new());
/// limiter.wait()?; // a fresh limiter admits at once
/// let impatient = Request::new().max_wait(Duration::from_millis(10));
/// assert_eq!(
///     limiter.wait_with(impatient),
///     Err(WaitError::TooLong { wait: Duration::from_secs(1) })
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitError {
    /// The request can never pass: see [`RequestError`].
    Request(RequestError),
    /// It would have had to wait `wait`, longer than its maximum wait
    /// ([`Request::max_wait`](crate::Request::max_wait)): a deadline it cannot meet, or a full
    /// [`LeakyBucket`](crate::LeakyBucket) queue.
    TooLong {
        /// How long it would have had to wait.
        wait: Duration,
    },
    /// A keyed table full of live keys had no slot for the key
    /// ([`WhenFull::Deny`](crate::WhenFull::Deny)).
    TableFull {
        /// How long until a slot frees for it, at least 1 ns.
        retry_after: Duration,
    },
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::Request(error) => error.fmt(f),
            WaitError::TooLong { wait } => write!(
                f,
                "the request would have to wait {wait:?}, longer than its maximum wait"
            ),
            WaitError::TableFull { retry_after } => write!(
                f,
                "the keyed table is full of live keys; a slot frees in {retry_after:?}"
            ),
        }
    }
}

impl std::error::Error for WaitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WaitError::Request(error) => Some(error),
            _ => None,
        }
    }
}

impl From<RequestError> for WaitError {
    fn from(error: RequestError) -> Self {
        WaitError::Request(error)
    }
}

impl Reservation<'_> {
    /// The granted reservation, or why a wait for it cannot start.
    pub(crate) fn granted(self) -> Result<Self, WaitError> {
        match self.outcome() {
            Outcome::Granted => Ok(self),
            Outcome::TooLong => Err(WaitError::TooLong { wait: self.delay() }),
            Outcome::TableFull => Err(WaitError::TableFull {
                retry_after: self.delay(),
            }),
        }
    }
}

/// The blocking wait every limiter's `wait_with` funnels into: block on `clock` until the
/// reservation's start plus up to `jitter`; returns the start.
pub(crate) fn block_until_start(
    reservation: Result<Reservation<'_>, RequestError>,
    jitter: Duration,
    clock: &impl Clock,
) -> Result<Timestamp, WaitError> {
    let reservation = reservation?.granted()?;
    let start = reservation.start();
    clock.sleep_until(start.saturating_add(random_up_to(jitter)));
    Ok(start)
}

/// A uniformly random duration from zero to `jitter` inclusive (zero without a jitter).
pub(crate) fn random_up_to(jitter: Duration) -> Duration {
    if jitter.is_zero() {
        return Duration::ZERO;
    }
    let jitter_ns = u64::try_from(jitter.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(next_random() % jitter_ns.saturating_add(1).max(1))
}

thread_local! {
    /// A xorshift generator per thread, seeded by ahash's random state (the crate's hasher
    /// already draws a random seed per process).
    static RANDOM: Cell<u64> = Cell::new(ahash::RandomState::new().hash_one(0u64) | 1);
}

fn next_random() -> u64 {
    RANDOM.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x
    })
}

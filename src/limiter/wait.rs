//! Waiting for a reservation's start: what a wait returns when it cannot, and its jitter.

use super::reservation::{Outcome, Reservation};
use crate::clock::{Clock, Timestamp};
use crate::engine::error::RequestError;
use core::cell::Cell;
use std::time::Duration;

impl Reservation<'_> {
    /// The granted reservation, or why a wait for it cannot start.
    pub(crate) fn granted(self) -> Result<Self, RequestError> {
        match self.outcome() {
            Outcome::Granted => Ok(self),
            Outcome::TooLong => Err(RequestError::WaitTooLong { wait: self.delay() }),
            Outcome::TableFull => Err(RequestError::TableFull {
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
) -> Result<Timestamp, RequestError> {
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

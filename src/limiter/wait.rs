//! Waiting for a reservation's start: what a wait returns when it cannot, and its jitter.

use super::core::Core;
use super::counters::Counting;
use super::reservation::{Outcome, Reservation};
use crate::clock::{Clock, Timestamp};
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::quota::Reservable;
use crate::store::Store;
use core::cell::Cell;
use std::time::Duration;

impl<Q: Reservable, S: Store, C: Clock, N: Counting> Core<Q, S, C, N> {
    /// Blocks until `request` for the key at `at` may start (plus its jitter): the start.
    pub(crate) fn wait_with(
        &self,
        at: S::At,
        request: Request<Q>,
    ) -> Result<Timestamp, RequestError> {
        block_until_start(self.reserve_with(at, request), request.jitter, &self.clock)
    }
}

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

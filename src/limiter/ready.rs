//! Async waits for tokio (feature `tokio`).

use super::core::Core;
use super::counters::Counting;
use super::reservation::Reservation;
use super::wait::random_up_to;
use crate::clock::{Clock, Timestamp};
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::quota::Reservable;
use crate::store::Store;
use std::time::Duration;

/// Cancels its reservation when dropped before [`disarm`](Self::disarm): what makes the async
/// waits cancellation-safe.
struct CancelOnDrop<'limiter> {
    reservation: Option<Reservation<'limiter>>,
}

impl CancelOnDrop<'_> {
    fn disarm(mut self) {
        // Started: the request is used, nothing to give back.
        self.reservation = None;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(reservation) = self.reservation.take() {
            reservation.cancel();
        }
    }
}

/// The async wait every `until_ready` funnels into: sleep on tokio's timer until the
/// reservation's start (plus up to `jitter`), cancelling the reservation if dropped before.
pub(crate) async fn sleep_until_start(
    reservation: Result<Reservation<'_>, RequestError>,
    jitter: Duration,
    clock: &impl Clock,
) -> Result<Timestamp, RequestError> {
    let reservation = reservation?.granted()?;
    let start = reservation.start();
    let wake = start.saturating_add(random_up_to(jitter));
    let guard = CancelOnDrop {
        reservation: Some(reservation),
    };
    let delay = wake.saturating_duration_since(clock.now());
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    guard.disarm();
    Ok(start)
}

impl<Q: Reservable, S: Store, C: Clock, N: Counting> Core<Q, S, C, N> {
    /// Waits asynchronously until `request` for the key at `at` may start, plus its jitter.
    pub(crate) async fn until_ready_with(
        &self,
        at: S::At,
        request: Request<Q>,
    ) -> Result<Timestamp, RequestError> {
        sleep_until_start(self.reserve_with(at, request), request.jitter, &self.clock).await
    }
}

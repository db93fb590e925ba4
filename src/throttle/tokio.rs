//! Async waits for tokio (feature `tokio`), and a clock that follows tokio's time.

use super::reservation::Reservation;
use super::wait::{random_up_to, WaitError};
use super::LeakyBucket;
use crate::clock::{Clock, Timestamp};
use crate::counters::Counting;
use crate::direct::Limiter;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::keyed::{KeyMode, KeyedLimiter};
use crate::quota::Reservable;
use std::time::Duration;

/// A clock that reads tokio's time ([`tokio::time::Instant`]), so that limiters follow
/// tokio's paused time in tests (`#[tokio::test(start_paused = true)]`, `tokio::time::advance`)
/// exactly as the timers of their async waits do.
///
/// Outside a paused runtime it reads the OS monotonic clock, like
/// [`QuantaClock`](crate::QuantaClock) but slower to read. Its origin is its creation; clones
/// share it.
///
/// ```
/// use nanolimit::{Clock, TokioClock};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let clock = TokioClock::new();
/// tokio::time::sleep(Duration::from_secs(5)).await; // paused time: instant
/// assert_eq!(clock.now().since_origin(), Duration::from_secs(5));
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }

    /// The clock's origin, as a tokio instant.
    pub fn origin(&self) -> tokio::time::Instant {
        self.origin
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    #[inline]
    fn now(&self) -> Timestamp {
        let since_origin = tokio::time::Instant::now().saturating_duration_since(self.origin);
        Timestamp::from_duration(since_origin).unwrap_or(Timestamp::HORIZON)
    }
}

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
async fn sleep_until_start(
    reservation: Result<Reservation<'_>, RequestError>,
    jitter: Duration,
    clock: &impl Clock,
) -> Result<Timestamp, WaitError> {
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

impl<Q: Reservable, C: Clock, N: Counting> Limiter<Q, C, N> {
    /// Waits asynchronously until one unit may start (feature `tokio`): books it when first
    /// polled, then sleeps on tokio's timer until its start. Returns the start. Dropping the
    /// future before then cancels the reservation ([`Reservation::cancel`]).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, TokioClock};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = Limiter::with_clock(Gcra::per_second(100)?.with_burst(1)?, TokioClock::new());
    /// for sent in 0..10u64 {
    ///     let start = limiter.until_ready().await?;
    ///     assert_eq!(start.since_origin(), Duration::from_millis(10 * sent));
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn until_ready(&self) -> Result<Timestamp, WaitError> {
        self.until_ready_with(Request::new()).await
    }

    /// Waits asynchronously until `request` may start (feature `tokio`), plus its
    /// [`jitter`](Request::jitter); with a [`max_wait`](Request::max_wait), returns
    /// [`WaitError::TooLong`] at once if it could not start within it.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, Request, TokioClock, WaitError};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = Limiter::with_clock(Gcra::per_second(1)?, TokioClock::new());
    /// limiter.until_ready().await?;
    /// let soon = Request::new().max_wait(Duration::from_millis(500));
    /// assert!(matches!(limiter.until_ready_with(soon).await, Err(WaitError::TooLong { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn until_ready_with(&self, request: Request<Q>) -> Result<Timestamp, WaitError> {
        sleep_until_start(self.reserve_with(request), request.jitter, &self.clock).await
    }
}

impl<K: ?Sized, Q: Reservable, C: Clock, M: KeyMode<K>, N: Counting> KeyedLimiter<K, Q, C, M, N> {
    /// Waits asynchronously until one unit for `key` may start (feature `tokio`); dropping
    /// the future before then cancels its reservation.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, TokioClock};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(2)?.with_burst(1)?)
    ///     .clock(TokioClock::new())
    ///     .build()?;
    /// limiter.until_ready("alice").await?;
    /// let second = limiter.until_ready("alice").await?;
    /// assert_eq!(second.since_origin(), Duration::from_millis(500));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn until_ready(&self, key: &K) -> Result<Timestamp, WaitError> {
        self.until_ready_with(key, Request::new()).await
    }

    /// Waits asynchronously until `request` for `key` may start (feature `tokio`), plus its
    /// [`jitter`](Request::jitter); with a [`max_wait`](Request::max_wait), returns
    /// [`WaitError::TooLong`] at once if it could not start within it.
    pub async fn until_ready_with(
        &self,
        key: &K,
        request: Request<Q>,
    ) -> Result<Timestamp, WaitError> {
        sleep_until_start(self.reserve_with(key, request), request.jitter, &self.clock).await
    }
}

impl<C: Clock> LeakyBucket<C> {
    /// Joins the queue and waits asynchronously until leaving it (feature `tokio`); returns
    /// [`WaitError::TooLong`] at once if the queue was full. Dropping the future before it
    /// leaves the queue gives its place back (as [`Reservation::cancel`] does).
    ///
    /// ```
    /// use nanolimit::{LeakyBucket, TokioClock};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let queue = LeakyBucket::with_clock(10, Duration::from_secs(1), 5, TokioClock::new())?;
    /// queue.until_ready().await?;
    /// let left = queue.until_ready().await?;
    /// assert_eq!(left.since_origin(), Duration::from_millis(100));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn until_ready(&self) -> Result<Timestamp, WaitError> {
        sleep_until_start(Ok(self.enqueue()), Duration::ZERO, &self.limiter().clock).await
    }
}

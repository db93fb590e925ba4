//! The leaky bucket as a queue: a bounded queue that drains at a constant rate.

use super::direct::Limiter;
use super::reservation::Reservation;
use super::wait::block_until_start;
use crate::clock::{Clock, QuantaClock, Timestamp};
use crate::engine::error::RequestError;
use crate::quota::Gcra;
use crate::quota::QuotaError;
use std::time::Duration;

/// The leaky bucket as a queue (a traffic shaper): requests join a queue that holds at most
/// `queue_capacity` waiting requests and drains one request every emission interval
/// (`period / count`); a request that finds the queue full is dropped.
///
/// It is a [`Gcra`] limiter with a burst of 1, on which every request is a reservation with a
/// maximum wait of `queue_capacity` emission intervals: the requests booked ahead of a new one
/// and not yet started are the queue, and its wait is their number times the interval. So a
/// request is admitted exactly when the reference queue would admit it, and starts exactly
/// when the queue would release it. (The leaky bucket *as a meter*, which rejects instead of
/// queueing, is GCRA itself: [`Gcra`] with its limiter's `check`.)
///
/// | queue | here |
/// |---|---|
/// | drain rate | `count` per `period`: one every `period / count` |
/// | capacity `Q` (waiting requests, the one being released not counted) | `queue_capacity` |
/// | arrival when fewer than `Q` wait | [`enqueue`](Self::enqueue): granted, with the instant it leaves the queue |
/// | arrival when `Q` wait | refused (dropped); nothing is booked |
/// | leaving the queue | [`Reservation::start`]; [`wait`](Self::wait) blocks until then |
///
/// ```
/// use nanolimit::{LeakyBucket, ManualClock};
/// use std::time::Duration;
///
/// // Drains 10 per second; up to 2 wait.
/// let queue = LeakyBucket::with_clock(10, Duration::from_secs(1), 2, ManualClock::new())?;
/// let starts: Vec<_> = (0..4).map(|_| queue.enqueue()).collect();
/// assert_eq!(starts[0].delay(), Duration::ZERO); // released at once
/// assert_eq!(starts[1].delay(), Duration::from_millis(100)); // waits, first in the queue
/// assert_eq!(starts[2].delay(), Duration::from_millis(200)); // second in the queue
/// assert!(starts[3].is_denied()); // the queue is full: dropped
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug)]
pub struct LeakyBucket<C: Clock = QuantaClock> {
    limiter: Limiter<Gcra, C>,
    queue_capacity: u64,
    max_wait_ticks: u64,
}

impl LeakyBucket<QuantaClock> {
    /// A queue draining `count` requests per `period`, holding up to `queue_capacity` waiting
    /// requests, on the default clock.
    ///
    /// Errors as [`Gcra::new`] does for the rate, and with [`QuotaError::LimitTooLarge`] for a
    /// capacity whose wait does not fit the state (more than about 4.5 years of waiting).
    pub fn new(count: u64, period: Duration, queue_capacity: u64) -> Result<Self, QuotaError> {
        Self::with_clock(count, period, queue_capacity, QuantaClock::new())
    }
}

impl<C: Clock> LeakyBucket<C> {
    /// A queue as [`new`](LeakyBucket::new) makes, reading time from `clock`.
    ///
    /// ```
    /// use nanolimit::{LeakyBucket, ManualClock, QuotaError};
    /// use std::time::Duration;
    ///
    /// let too_long = LeakyBucket::with_clock(1, Duration::from_secs(3_600), u64::MAX, ManualClock::new());
    /// assert!(matches!(too_long, Err(QuotaError::LimitTooLarge { .. })));
    /// ```
    pub fn with_clock(
        count: u64,
        period: Duration,
        queue_capacity: u64,
        clock: C,
    ) -> Result<Self, QuotaError> {
        let quota = Gcra::new(count, period)?.with_burst(1)?;
        let interval_ticks = quota.increment_ticks(1);
        let longest_ticks = quota.max_wait_ticks(Duration::MAX);
        let max_wait_ticks = queue_capacity
            .checked_mul(interval_ticks)
            .filter(|&ticks| ticks <= longest_ticks)
            .ok_or(QuotaError::LimitTooLarge {
                requested: queue_capacity,
                max: longest_ticks / interval_ticks,
            })?;
        Ok(LeakyBucket {
            limiter: Limiter::with_clock(quota, clock),
            queue_capacity,
            max_wait_ticks,
        })
    }

    /// A request joins the queue now: granted with the instant it leaves the queue, or refused
    /// (dropped) if `queue_capacity` requests already wait.
    #[inline]
    pub fn enqueue(&self) -> Reservation<'_> {
        self.enqueue_at(self.limiter.now())
    }

    /// A request joins the queue at `now`, a reading of the clock the caller holds.
    ///
    /// ```
    /// use nanolimit::{LeakyBucket, Timestamp};
    /// use std::time::Duration;
    ///
    /// let queue = LeakyBucket::new(1, Duration::from_millis(1), 1)?;
    /// let now = queue.limiter().now();
    /// assert!(queue.enqueue_at(now).is_allowed());
    /// assert!(queue.enqueue_at(now).is_allowed());
    /// assert!(queue.enqueue_at(now).is_denied());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn enqueue_at(&self, now: Timestamp) -> Reservation<'_> {
        let core = &self.limiter.core;
        core.reserve((), &core.quota, 1, now, self.max_wait_ticks)
    }

    /// Joins the queue and blocks until leaving it; returns the instant it left, or
    /// [`RequestError::WaitTooLong`] at once if the queue was full.
    ///
    /// ```
    /// use nanolimit::LeakyBucket;
    /// use std::time::Duration;
    ///
    /// let queue = LeakyBucket::new(1_000, Duration::from_secs(1), 8)?;
    /// let left = queue.wait()?;
    /// assert!(queue.limiter().now() >= left);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(&self) -> Result<Timestamp, RequestError> {
        block_until_start(Ok(self.enqueue()), Duration::ZERO, &self.limiter.core.clock)
    }

    /// How many requests may wait at once.
    pub fn queue_capacity(&self) -> u64 {
        self.queue_capacity
    }

    /// The longest a request waits: `queue_capacity` emission intervals.
    pub fn max_wait(&self) -> Duration {
        let quota = &self.limiter.core.quota;
        let wait_ns =
            quota.period().as_nanos() * u128::from(self.queue_capacity) / u128::from(quota.count());
        Duration::from_nanos(u64::try_from(wait_ns).unwrap_or(u64::MAX))
    }

    /// The GCRA limiter behind the queue (burst 1), for its clock and for checks that must not
    /// queue.
    pub fn limiter(&self) -> &Limiter<Gcra, C> {
        &self.limiter
    }

    /// Joins the queue and waits asynchronously until leaving it (feature `tokio`); returns
    /// [`RequestError::WaitTooLong`] at once if the queue was full. Dropping the future before it
    /// leaves the queue gives its place back (as [`Reservation::cancel`] does).
    ///
    /// ```
    /// use nanolimit::LeakyBucket;
    /// use nanolimit::clock::TokioClock;
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
    #[cfg(feature = "tokio")]
    pub async fn until_ready(&self) -> Result<Timestamp, RequestError> {
        super::ready::sleep_until_start(Ok(self.enqueue()), Duration::ZERO, self.limiter.clock())
            .await
    }
}

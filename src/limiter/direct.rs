//! Direct limiters: one quota, one state word, shared by every caller.

use super::core::Core;
#[cfg(feature = "metrics")]
use super::counters;
#[cfg(feature = "std")]
use super::counters::Counters;
use super::counters::{Counting, NoCounters};
use super::reservation::Reservation;
use crate::clock::{Clock, DefaultClock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::engine::stats::Stats;
use crate::quota::{Gcra, Quota, QuotaError};
use crate::store::word::Word;

/// A rate limiter with one state: every check counts against the same quota.
///
/// Lock-free: a check is one load, the algorithm's arithmetic and (if allowed) one
/// compare-and-swap on a cache-padded `AtomicU64`; a denial writes nothing. No allocation.
/// Share it between threads by reference or in an [`Arc`](std::sync::Arc).
///
/// | operation | shorthand | packet-loop form | full form |
/// |---|---|---|---|
/// | consume if it fits | [`check`](Self::check) | [`check_at`](Self::check_at) | [`check_with`](Self::check_with) |
/// | ask without consuming | [`peek`](Self::peek) | | [`peek_with`](Self::peek_with) |
/// | book ahead (GCRA) | [`reserve`](Self::reserve) | | [`reserve_with`](Self::reserve_with) |
/// | block until the booked start (GCRA) | [`wait`](Self::wait) | | [`wait_with`](Self::wait_with) |
///
/// ```
/// use nanolimit::{Gcra, Limiter};
/// use std::sync::Arc;
///
/// let limiter = Arc::new(Limiter::new(Gcra::per_second(1_000)?));
/// let worker = {
///     let limiter = Arc::clone(&limiter);
///     std::thread::spawn(move || limiter.check().is_allowed())
/// };
/// assert!(worker.join().unwrap());
/// assert!(limiter.check().is_allowed());
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug)]
pub struct Limiter<Q: Quota, C: Clock = DefaultClock, N: Counting = NoCounters> {
    /// The state word, the quota, the clock and the counters ([`Counters`], after
    /// [`with_counters`](Limiter::with_counters), or nothing).
    pub(crate) core: Core<Q, Word, C, N>,
}

#[cfg(feature = "std")]
impl<Q: Quota> Limiter<Q, crate::clock::QuantaClock> {
    /// A limiter on the default clock ([`QuantaClock`](crate::QuantaClock)).
    pub fn new(quota: Q) -> Self {
        Self::with_clock(quota, crate::clock::QuantaClock::new())
    }
}

impl<Q: Quota, C: Clock> Limiter<Q, C, NoCounters> {
    /// A limiter reading time from `clock`.
    ///
    /// ```
    /// use nanolimit::{Limiter, ManualClock, SlidingWindow};
    ///
    /// let limiter = Limiter::with_clock(SlidingWindow::per_second(5)?, ManualClock::new());
    /// assert_eq!(limiter.quota().limit(), 5);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn with_clock(quota: Q, clock: C) -> Self {
        Limiter {
            core: Core::new(Word::new(Q::FRESH), quota, clock, NoCounters),
        }
    }

    /// This limiter, counting its checks from here on: allowed and denied, calls and units
    /// ([`stats`](Limiter::stats)), on per-thread striped counters off the state's cache
    /// line (see [the counters module](crate::counters)). Chained onto the constructor; it makes a
    /// `Limiter<Q, C, Counters>`. Without it ([`NoCounters`], the default), a check counts
    /// nothing and costs exactly what it did before counters existed.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    /// use std::sync::Arc;
    ///
    /// let limiter = Arc::new(Limiter::new(Gcra::per_minute(100)?).with_counters());
    /// let workers: Vec<_> = (0..4)
    ///     .map(|_| {
    ///         let limiter = Arc::clone(&limiter);
    ///         std::thread::spawn(move || (0..50).for_each(|_| drop(limiter.check())))
    ///     })
    ///     .collect();
    /// workers.into_iter().for_each(|worker| worker.join().unwrap());
    /// let totals = limiter.stats();
    /// assert_eq!(totals.calls(), 200);
    /// assert_eq!(totals.allowed, 100);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[must_use = "with_counters returns the limiter that counts"]
    #[cfg(feature = "std")]
    pub fn with_counters(self) -> Limiter<Q, C, Counters> {
        let Core {
            store,
            quota,
            lead,
            clock,
            counters: NoCounters,
        } = self.core;
        Limiter {
            core: Core {
                store,
                quota,
                lead,
                clock,
                counters: Counters::new(),
            },
        }
    }
}

impl<Q: Quota, C: Clock, N: Counting> Limiter<Q, C, N> {
    /// What this limiter counted ([`Stats`]): its checks, allowed and denied, in calls and units,
    /// for a limiter built [`with_counters`](Limiter::with_counters) (zero otherwise). Exact once
    /// the checking threads are joined; see [the counters module](crate::counters) for what is
    /// counted.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    ///
    /// let plain = Limiter::new(Gcra::per_second(1)?);
    /// let _ = plain.check();
    /// assert_eq!(plain.stats().calls(), 0);
    /// let counted = Limiter::new(Gcra::per_second(1)?).with_counters();
    /// let _ = counted.check();
    /// let _ = counted.check();
    /// let stats = counted.stats();
    /// assert_eq!((stats.allowed, stats.denied), (1, 1));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        self.core.counters.add_to(&mut stats);
        stats
    }

    /// Records this limiter's counted checks ([`stats`](Self::stats)) through the `metrics` facade (feature
    /// `metrics`) as `nanolimit_requests_total` and `nanolimit_units_total`, labelled
    /// `limiter = name` and `outcome` (see [`counters`](crate::counters#metrics-names-feature-metrics)).
    /// Records nothing for a limiter without counters. Call it at each scrape or on a timer.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    ///
    /// let limiter = Limiter::new(Gcra::per_second(100)?).with_counters();
    /// let _ = limiter.check();
    /// // With a recorder installed (metrics-exporter-prometheus, an OpenTelemetry bridge),
    /// // this sets nanolimit_requests_total{limiter="global",outcome="allowed"} to 1.
    /// limiter.record_metrics("global");
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[cfg(feature = "metrics")]
    pub fn record_metrics(&self, name: &str) {
        if N::COUNTS {
            counters::export::record_checks(name, &self.stats());
        }
    }

    /// The quota this limiter enforces.
    pub fn quota(&self) -> &Q {
        &self.core.quota
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.core.clock
    }

    /// A reading of this limiter's clock, for [`check_at`](Self::check_at) and
    /// [`Request::at`].
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Timestamp};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Limiter::with_clock(Gcra::per_second(10)?, clock.clone());
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(limiter.now(), Timestamp::from_ns(250_000_000)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.core.clock.now()
    }

    /// `quota` made ready for requests to this limiter ([`Request::tier`]): validated and
    /// expressed in its state's units once, here.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(10)?, ManualClock::new());
    /// let bulk = limiter.tier(Gcra::per_second(10)?.with_burst(100)?)?;
    /// assert!(limiter.check_with(Request::cost(60).tier(bulk))?.is_allowed());
    /// assert!(limiter.check().is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tier(&self, quota: Q) -> Result<Q, QuotaError> {
        self.core.tier(quota)
    }

    /// Checks one unit now: consumes it if it fits.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    ///
    /// let limiter = Limiter::new(Gcra::per_second(2)?);
    /// assert!(limiter.check().is_allowed());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    // Forced inline, as `check_at`.
    #[inline(always)]
    pub fn check(&self) -> Decision<Q> {
        self.core.check_at((), self.core.clock.now())
    }

    /// Checks one unit at `now`, a reading the caller already holds: no clock read. The
    /// packet-loop form: infallible and as cheap as a check gets.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, Timestamp};
    ///
    /// let limiter = Limiter::new(Gcra::per_second(1)?);
    /// let now = limiter.now();
    /// assert!(limiter.check_at(now).is_allowed());
    /// assert!(limiter.check_at(now).is_denied());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    // Forced inline: with counters, the check is a little longer, and the compiler kept it out
    // of line, its `Decision` returned through memory.
    #[inline(always)]
    pub fn check_at(&self, now: Timestamp) -> Decision<Q> {
        self.core.check_at((), now)
    }

    /// Checks `request` (cost, time, tier; see [`Request`]): consumes its cost, all or nothing,
    /// if it fits.
    ///
    /// Errors when the request can never pass: a cost above the quota's limit.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request, RequestError};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(1_500)?, ManualClock::new());
    /// assert!(limiter.check_with(Request::cost(1_000))?.is_allowed());
    /// assert!(limiter.check_with(Request::cost(1_000))?.is_denied());
    /// assert!(matches!(
    ///     limiter.check_with(Request::cost(1_501)),
    ///     Err(RequestError::CostAboveLimit { .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_with(&self, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        self.core.check_with((), request)
    }

    /// Whether one unit would pass now, consuming nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(1)?, ManualClock::new());
    /// assert!(limiter.peek().is_allowed());
    /// assert!(limiter.peek().is_allowed());
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.peek().is_denied());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn peek(&self) -> Decision<Q> {
        self.core.peek_one(())
    }

    /// Whether `request` would pass, consuming nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_minute(10)?, ManualClock::new());
    /// assert!(limiter.check_with(Request::cost(8))?.is_allowed());
    /// assert!(limiter.peek_with(Request::cost(2))?.is_allowed());
    /// assert!(limiter.peek_with(Request::cost(3))?.is_denied());
    /// assert!(limiter.peek_with(Request::cost(11)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_with(&self, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        self.core.peek_with((), request)
    }
}

impl<C: Clock, N: Counting> Limiter<Gcra, C, N> {
    /// Books one unit now, for the earliest start the quota allows: at once if it fits, else
    /// later, with requests booked after it queued behind it. Granted unless the wait would be
    /// longer than a state word can book (at least about 4.5 years) or the start would lie
    /// past the clock's [horizon](Timestamp::HORIZON).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// // 2 per second, bursts of 2.
    /// let limiter = Limiter::with_clock(Gcra::per_second(2)?, ManualClock::new());
    /// let delays: Vec<_> = (0..4).map(|_| limiter.reserve().delay()).collect();
    /// assert_eq!(delays, [0, 0, 500, 1_000].map(Duration::from_millis));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn reserve(&self) -> Reservation<'_> {
        self.core.reserve_one(())
    }

    /// Books `request` (cost, time, tier, longest wait; see [`Request`]) for the earliest start
    /// its quota allows, or refuses it, booking nothing, if that start is further away than
    /// its [`max_wait`](Request::max_wait).
    ///
    /// Errors when the request can never pass: a cost above the quota's limit.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    /// use std::time::Duration;
    ///
    /// // 1,000 bytes per second, bursts of 1,500.
    /// let limiter = Limiter::with_clock(Gcra::per_second(1_000)?.with_burst(1_500)?, ManualClock::new());
    /// assert_eq!(limiter.reserve_with(Request::cost(1_500))?.delay(), Duration::ZERO);
    /// let packet = limiter.reserve_with(Request::cost(500))?;
    /// assert_eq!(packet.delay(), Duration::from_millis(500));
    /// assert!(limiter.reserve_with(Request::cost(2_000)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn reserve_with(&self, request: Request<Gcra>) -> Result<Reservation<'_>, RequestError> {
        self.core.reserve_with((), request)
    }

    /// Waits until one unit may start: books it ([`reserve`](Self::reserve)), then blocks the
    /// thread until its start ([`Clock::sleep_until`]: parked, spinning only for the last
    /// microsecond). Returns the start. Waiters start in the order they booked.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    ///
    /// let limiter = Limiter::new(Gcra::per_second(1_000)?);
    /// let start = limiter.wait()?;
    /// assert!(limiter.now() >= start);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn wait(&self) -> Result<Timestamp, RequestError> {
        self.wait_with(Request::new())
    }

    /// Waits until `request` may start: books it ([`reserve_with`](Self::reserve_with)), then
    /// blocks until its start, plus its [`jitter`](Request::jitter). The deadline form: with a
    /// [`max_wait`](Request::max_wait), a request that could not start within it returns
    /// [`RequestError::WaitTooLong`] at once, booking nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, Request, RequestError};
    /// use std::time::Duration;
    ///
    /// let limiter = Limiter::new(Gcra::per_minute(1)?);
    /// limiter.wait()?;
    /// let within_a_second = Request::new().max_wait(Duration::from_secs(1));
    /// assert!(matches!(limiter.wait_with(within_a_second), Err(RequestError::WaitTooLong { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn wait_with(&self, request: Request<Gcra>) -> Result<Timestamp, RequestError> {
        self.core.wait_with((), request)
    }

    /// Waits asynchronously until one unit may start (feature `tokio`): books it when first
    /// polled, then sleeps on tokio's timer until its start. Returns the start. Dropping the
    /// future before then cancels the reservation ([`Reservation::cancel`]).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    /// use nanolimit::clock::TokioClock;
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
    #[cfg(feature = "tokio")]
    pub async fn until_ready(&self) -> Result<Timestamp, RequestError> {
        self.until_ready_with(Request::new()).await
    }

    /// Waits asynchronously until `request` may start (feature `tokio`), plus its
    /// [`jitter`](Request::jitter); with a [`max_wait`](Request::max_wait), returns
    /// [`RequestError::WaitTooLong`] at once if it could not start within it.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, Request, RequestError};
    /// use nanolimit::clock::TokioClock;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = Limiter::with_clock(Gcra::per_second(1)?, TokioClock::new());
    /// limiter.until_ready().await?;
    /// let soon = Request::new().max_wait(Duration::from_millis(500));
    /// assert!(matches!(limiter.until_ready_with(soon).await, Err(RequestError::WaitTooLong { .. })));
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn until_ready_with(
        &self,
        request: Request<Gcra>,
    ) -> Result<Timestamp, RequestError> {
        self.core.until_ready_with((), request).await
    }
}

//! Direct limiters: one quota, one state word, shared by every caller.

use crate::clock::{Clock, QuantaClock, Timestamp};
#[cfg(feature = "metrics")]
use crate::counters;
use crate::counters::{Counters, Counting, NoCounters, Totals};
use crate::engine::decision::Decision;
use crate::engine::driver::{self, Applied, Attempt};
use crate::engine::error::RequestError;
use crate::engine::operation::{Consume, Operation};
use crate::engine::request::{JudgingLead, Request, Tier};
use crate::quota::QuotaError;
use crate::quota::{Quota, Step};
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

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
pub struct Limiter<Q: Quota, C: Clock = QuantaClock, N: Counting = NoCounters> {
    state: CachePadded<AtomicU64>,
    pub(crate) quota: Q,
    pub(crate) lead: JudgingLead,
    pub(crate) clock: C,
    /// The checks' totals ([`Counters`], after [`with_counters`](Limiter::with_counters)), on
    /// striped lines of their own, off the state's; or nothing ([`NoCounters`]).
    counters: N,
}

impl<Q: Quota> Limiter<Q, QuantaClock> {
    /// A limiter on the default clock ([`QuantaClock`]).
    pub fn new(quota: Q) -> Self {
        Self::with_clock(quota, QuantaClock::new())
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
            state: CachePadded::new(AtomicU64::new(Q::FRESH)),
            lead: JudgingLead::new(&quota),
            quota,
            clock,
            counters: NoCounters,
        }
    }

    /// This limiter, counting its checks from here on: allowed and denied, calls and units
    /// ([`totals`](Limiter::totals)), on per-thread striped counters off the state's cache
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
    /// let totals = limiter.totals().unwrap();
    /// assert_eq!(totals.calls(), 200);
    /// assert_eq!(totals.allowed, 100);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[must_use = "with_counters returns the limiter that counts"]
    pub fn with_counters(self) -> Limiter<Q, C, Counters> {
        Limiter {
            state: self.state,
            quota: self.quota,
            lead: self.lead,
            clock: self.clock,
            counters: Counters::new(),
        }
    }
}

impl<Q: Quota, C: Clock, N: Counting> Limiter<Q, C, N> {
    /// The totals of the checks so far, or `None` for a limiter built without
    /// [`with_counters`](Limiter::with_counters). Exact once the checking threads are joined;
    /// see [the counters module](crate::counters) for what is counted.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    ///
    /// let plain = Limiter::new(Gcra::per_second(1)?);
    /// assert_eq!(plain.totals(), None);
    /// let counted = Limiter::new(Gcra::per_second(1)?).with_counters();
    /// let _ = counted.check();
    /// let _ = counted.check();
    /// let totals = counted.totals().unwrap();
    /// assert_eq!((totals.allowed, totals.denied), (1, 1));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn totals(&self) -> Option<Totals> {
        self.counters.totals()
    }

    /// Records this limiter's [`totals`](Self::totals) through the `metrics` facade (feature
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
        if let Some(totals) = self.totals() {
            counters::export::record_totals(name, &totals);
        }
    }

    /// The quota this limiter enforces.
    pub fn quota(&self) -> &Q {
        &self.quota
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
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
        self.clock.now()
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
    pub fn tier(&self, quota: Q) -> Result<Tier<Q>, QuotaError> {
        Tier::new(quota, &self.quota, &self.lead)
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
        self.check_at(self.clock.now())
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
    // Forced inline: with counters, the check is a little longer, and LLVM kept it out of line,
    // its `Decision` returned through memory (68 instructions per counted check at caller time,
    // 39 inline; the check without counters, 29, was inline either way).
    #[inline(always)]
    pub fn check_at(&self, now: Timestamp) -> Decision<Q> {
        // Every quota's limit is at least 1.
        self.check_core(&self.quota, 1, self.quota.instant(now))
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
        let resolved = request.resolve(&self.quota, &self.lead, &self.clock)?;
        Ok(self.check_core(&resolved.quota, resolved.cost, resolved.now))
    }

    /// The core every check funnels into: [`decide`](Self::decide) with the check's step, then
    /// counted (for [`NoCounters`], nothing: the check is the uncounted one).
    #[inline]
    fn check_core(&self, quota: &Q, cost: u64, now: Q::Instant) -> Decision<Q> {
        let decision = self.decide(Consume, quota, cost, now);
        self.counters.record(decision.is_allowed(), cost);
        decision
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
        self.peek_decision(&self.quota, 1, self.quota.instant(self.clock.now()))
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
        let resolved = request.resolve(&self.quota, &self.lead, &self.clock)?;
        Ok(self.peek_decision(&resolved.quota, resolved.cost, resolved.now))
    }

    /// The core every check and reservation funnels into: `operation` for `cost` (at most
    /// `quota`'s limit) at `now`. One compare-and-swap attempt; a lost race retries on the cold
    /// path.
    #[inline]
    pub(crate) fn decide(
        &self,
        operation: impl Operation<Q>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Decision<Q> {
        if cost == 0 {
            return self.peek_decision(quota, 0, now);
        }
        // ORDERING: Acquire, so that the word is examined with the same visibility the driver's
        // failed compare-and-swap gives (see `driver::apply`).
        let observed = self.state.load(Ordering::Acquire);
        let step = operation.step(quota, observed, now, cost);
        match driver::attempt(&self.state, observed, step) {
            // An admitted state leads `now` by at most the quota's own tolerance, or a booking
            // by what it raised the lead to: the judging lead cannot matter (see `JudgingLead`).
            Attempt::Allowed { current } => Decision::new(true, cost, current, now, *quota),
            Attempt::Denied => Decision::new(false, cost, observed, now, self.lead.judging(quota)),
            Attempt::Lost { actual } => {
                // The cold path hands back the outcome and the word, not a `Decision`: built
                // here, every arm's decision is made of registers, and the compiler keeps them
                // there. From a `Decision` returned through memory, it wrote the fast path's
                // decision to the stack too (13 instructions) once the counters' code followed
                // the check.
                let (allowed, word) = self.decide_contended(operation, quota, cost, now, actual);
                let judging = if allowed {
                    *quota
                } else {
                    self.lead.judging(quota)
                };
                Decision::new(allowed, cost, word, now, judging)
            }
        }
    }

    /// The first half of [`decide`](Self::decide) for a cost above zero: one compare-and-swap
    /// attempt with the check's step. The word written if it admitted at once; `None` if it
    /// denied or lost the race (nothing written).
    #[inline]
    pub(crate) fn admit_at_once(&self, quota: &Q, cost: u64, now: Q::Instant) -> Option<u64> {
        // ORDERING: Acquire, as in `decide`.
        let observed = self.state.load(Ordering::Acquire);
        match driver::attempt(&self.state, observed, quota.step(observed, now, cost)) {
            Attempt::Allowed { current } => Some(current),
            Attempt::Denied | Attempt::Lost { .. } => None,
        }
    }

    /// The state word now (Acquire, as in `decide`): what a striped limiter reports its
    /// decisions on.
    #[inline]
    pub(crate) fn state_word(&self) -> u64 {
        // ORDERING: Acquire, as in `decide`.
        self.state.load(Ordering::Acquire)
    }

    /// Consumes `cost` (at most the limit) at `now` under the limiter's own quota, through the
    /// shared driver: the word written if admitted (`Ok`), or the word that denied it (`Err`).
    /// What a striped limiter's lease is.
    #[inline]
    pub(crate) fn take_at(&self, cost: u64, now: Q::Instant) -> Result<u64, u64> {
        // ORDERING: Acquire, as in `decide`.
        let observed = self.state.load(Ordering::Acquire);
        match driver::apply(&self.state, observed, |word| {
            Some(self.quota.step(word, now, cost))
        }) {
            Applied::Allowed { current } => Ok(current),
            Applied::Denied { observed } => Err(observed),
            Applied::Aborted => unreachable!("a direct limiter's step never aborts"),
        }
    }

    /// [`decide`](Self::decide) after a lost race: the shared driver, from the word that won.
    /// Whether it admitted, and the word it wrote (admitted) or that denied it.
    #[cold]
    #[inline(never)]
    fn decide_contended(
        &self,
        operation: impl Operation<Q>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
        observed: u64,
    ) -> (bool, u64) {
        match driver::apply(&self.state, observed, |word| {
            Some(operation.step(quota, word, now, cost))
        }) {
            Applied::Allowed { current } => (true, current),
            Applied::Denied { observed } => (false, observed),
            Applied::Aborted => unreachable!("a direct limiter's step never aborts"),
        }
    }

    /// Applies `operation` until it is written or denied, without a decision: for
    /// cancellations, whose cost is not a request's.
    #[cold]
    pub(crate) fn apply(&self, operation: impl Operation<Q>, now: Q::Instant) {
        // ORDERING: Acquire, as in `decide`.
        let observed = self.state.load(Ordering::Acquire);
        let _ = driver::apply(&self.state, observed, |word| {
            Some(operation.step(&self.quota, word, now, 0))
        });
    }

    /// The core every peek funnels into.
    #[inline]
    pub(crate) fn peek_decision(&self, quota: &Q, cost: u64, now: Q::Instant) -> Decision<Q> {
        // ORDERING: Acquire, as in `decide`; nothing is written.
        let observed = self.state.load(Ordering::Acquire);
        let allowed = cost == 0 || matches!(quota.step(observed, now, cost), Step::Allow(_));
        Decision::new(allowed, cost, observed, now, self.lead.judging(quota))
    }
}

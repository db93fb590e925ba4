//! What the full form of every operation takes: a [`Request`] (cost, caller-supplied time, tier)
//! and the tier (a quota in the limiter's units) a request may carry.

use crate::clock::{Clock, Timestamp};
use crate::engine::error::RequestError;
use crate::quota::Quota;
use crate::quota::QuotaError;
use crate::sync::{AtomicU64, Ordering};
use core::time::Duration;

/// One request, for the full form of an operation (`check_with`, `peek_with`, `reserve_with`,
/// `wait_with`): its cost, the time to judge it at, and the tier whose quota applies; for
/// reservations and waits, how long it may wait and how much jitter to add. A small `Copy`
/// value, built inline:
///
/// | field | default | set with | used by |
/// |---|---|---|---|
/// | cost | 1 | [`Request::cost`] | every operation |
/// | time | a reading of the limiter's clock | [`at`](Self::at) | every operation |
/// | quota | the limiter's own | [`tier`](Self::tier) | every operation |
/// | longest wait | none (up to 4.5 years) | [`max_wait`](Self::max_wait) | reservations and waits |
/// | jitter | none | [`jitter`](Self::jitter) | waits |
///
/// The exact sliding log ([`SlidingLogLimiter`](crate::sliding_log::SlidingLogLimiter)) takes a
/// `Request<SlidingLog>`: cost and time only (its quota has no tiers).
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock, Request, Timestamp};
///
/// let limiter = Limiter::with_clock(Gcra::per_second(1_000)?, ManualClock::new());
/// let now = Timestamp::from_ns(5_000_000)?;
/// assert!(limiter.check_with(Request::cost(600).at(now))?.is_allowed());
/// assert!(limiter.check_with(Request::cost(600).at(now))?.is_denied());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use = "a request does nothing until a limiter judges it"]
pub struct Request<Q> {
    pub(crate) cost: u64,
    pub(crate) at: Option<Timestamp>,
    pub(crate) tier: Option<Q>,
    pub(crate) max_wait: Option<Duration>,
    pub(crate) jitter: Duration,
}

impl<Q> Request<Q> {
    /// One unit of cost, judged now, under the limiter's quota: what the shorthands check.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(1)?, ManualClock::new());
    /// assert!(limiter.check_with(Request::new())?.is_allowed());
    /// assert!(limiter.check().is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub const fn new() -> Self {
        Request::cost(1)
    }

    /// `cost` units, all or nothing (bytes of a packet, tokens of a request). A cost of zero
    /// always passes and changes nothing: a way to read the metadata. Start from here to set
    /// the cost, then add [`at`](Self::at) and [`tier`](Self::tier).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(10)?, ManualClock::new());
    /// let decision = limiter.check_with(Request::cost(4))?;
    /// assert_eq!((decision.cost(), decision.remaining()), (4, 6));
    /// let metadata = limiter.check_with(Request::cost(0))?;
    /// assert_eq!(metadata.remaining(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub const fn cost(cost: u64) -> Self {
        Request {
            cost,
            at: None,
            tier: None,
            max_wait: None,
            jitter: Duration::ZERO,
        }
    }

    /// Judged at `now` (a reading of the limiter's clock, or of a clock with the same origin)
    /// instead of a fresh reading: no clock read.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, Request, Timestamp};
    ///
    /// let limiter = Limiter::new(Gcra::per_second(1)?);
    /// let start = Timestamp::from_ns(1_000)?;
    /// assert!(limiter.check_with(Request::new().at(start))?.is_allowed());
    /// assert!(limiter.check_with(Request::new().at(start))?.is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub const fn at(mut self, now: Timestamp) -> Self {
        self.at = Some(now);
        self
    }
}

impl<Q: Quota> Request<Q> {
    /// Judged under the quota `tier` instead of the limiter's: a per-client tier (free, paid),
    /// or a quota that changes at runtime. The state is the same.
    ///
    /// A tier is made once by the limiter that uses it (its `tier(quota)`, e.g.
    /// [`Limiter::tier`](crate::Limiter::tier)), which expresses the quota in that limiter's
    /// state units, so checks under it pay nothing extra; a quota in other units is refused
    /// with [`RequestError::ForeignTier`]. A key's state carries over from one tier to another:
    /// GCRA keeps the debt a key has run up in time (the new rate and burst apply from the next
    /// check), windows keep their counts (the new limit applies at once).
    ///
    /// - GCRA tiers may have any rate. One whose emission interval is a whole number of
    ///   nanoseconds shares the limiter's units whenever the limiter's does; otherwise it is
    ///   expressed in the limiter's ticks, its interval rounded up to a whole tick (a tick is at
    ///   most 1/8 ns: relative rate error below 1/(8 × interval in ns), never faster than
    ///   configured).
    /// - Window tiers must have the limiter's window length
    ///   ([`QuotaError::IncompatibleQuota`]).
    ///
    /// A GCRA state written under a tier with a larger burst may run further ahead of the time
    /// it was written than the limiter's own burst allows. Making or using a tier tells the
    /// limiter so, and its decisions then count the wait from the true time rather than
    /// mistaking such a state for a reading from the past
    /// ([readings behind the state](crate::quota#readings-behind-the-state)).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(2)?, ManualClock::new());
    /// let burst_of_ten = limiter.tier(Gcra::per_second(2)?.with_burst(10)?)?;
    /// assert!(limiter.check_with(Request::cost(3)).is_err()); // above the limit of 2
    /// assert!(limiter.check_with(Request::cost(3).tier(burst_of_ten))?.is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub const fn tier(mut self, tier: Q) -> Self {
        self.tier = Some(tier);
        self
    }
}

impl<Q: Quota> Request<Q> {
    /// For a reservation or a wait: refused, writing nothing, if it would have to wait longer
    /// than `max_wait` to start (a wait's deadline; a queue's capacity, in time). A maximum
    /// wait of zero makes a reservation a check. Checks and peeks ignore it.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    /// use std::time::Duration;
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(10)?.with_burst(1)?, ManualClock::new());
    /// let within = Request::new().max_wait(Duration::from_millis(150));
    /// assert!(limiter.reserve_with(within)?.is_allowed()); // now
    /// assert!(limiter.reserve_with(within)?.is_allowed()); // in 100 ms
    /// let third = limiter.reserve_with(within)?; // would start in 200 ms
    /// assert!(third.is_denied());
    /// assert_eq!(third.delay(), Duration::from_millis(200));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub const fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// For a wait: start up to `jitter` later than the reservation allows (a uniformly random
    /// extra delay, never earlier), to spread a herd of waiters that were all scheduled for
    /// one instant. The reservation itself is unchanged, so jittered waiters may start out of
    /// reservation order. Checks, peeks and reservations ignore it.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, Request};
    /// use std::time::Duration;
    ///
    /// let limiter = Limiter::new(Gcra::per_second(100)?);
    /// // A fresh limiter admits at once; the jitter adds at most 1 ms to that.
    /// let start = limiter.wait_with(Request::new().jitter(Duration::from_millis(1)))?;
    /// assert!(limiter.now() >= start);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub const fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }
}

impl<Q: Quota> Request<Q> {
    /// This request with `other`'s tier (for the HTTP layer's peeks).
    #[cfg(all(feature = "http", feature = "tokio"))]
    pub(crate) fn tier_of(mut self, other: &Request<Q>) -> Self {
        self.tier = other.tier;
        self
    }
}

impl<Q> Default for Request<Q> {
    fn default() -> Self {
        Request::new()
    }
}

/// `quota`, expressed in the units of a limiter whose quota is `base` and judging lead is
/// `lead` (raised to the tier's): a tier for that limiter (see [`Request::tier`]).
pub(crate) fn tier<Q: Quota>(quota: Q, base: &Q, lead: &JudgingLead) -> Result<Q, QuotaError> {
    let quota = quota.rebase(base)?;
    lead.raise(&quota);
    Ok(quota)
}

/// A request resolved against a limiter: the quota to apply, a cost it can admit, and the time
/// to judge it at, in the quota's units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved<Q: Quota> {
    pub(crate) quota: Q,
    pub(crate) cost: u64,
    pub(crate) now: Q::Instant,
    /// The reading `now` was converted from.
    pub(crate) at: Timestamp,
}

impl<Q: Quota> Request<Q> {
    /// The quota, cost and time of this request on a limiter whose quota is `base`, judging lead
    /// `lead` and clock `clock` (read only if the request carries no time), or why it can never
    /// be judged there. What every full form (`check_with`, `peek_with`) starts with.
    #[inline]
    pub(crate) fn resolve(
        &self,
        base: &Q,
        lead: &JudgingLead,
        clock: &impl Clock,
    ) -> Result<Resolved<Q>, RequestError> {
        let quota = match self.tier {
            None => *base,
            Some(tier) if tier.shares_units_with(base) => {
                // A tier made by another limiter with the same units raises this one's lead.
                lead.raise(&tier);
                tier
            }
            Some(_) => return Err(RequestError::ForeignTier),
        };
        let limit = quota.limit();
        if self.cost > limit {
            return Err(RequestError::CostAboveLimit {
                cost: self.cost,
                limit,
            });
        }
        let now = self.at.unwrap_or_else(|| clock.now());
        Ok(Resolved {
            quota,
            cost: self.cost,
            now: quota.instant(now),
            at: now,
        })
    }
}

/// The largest lead (how far a state may run ahead of the reading that wrote it) of the quotas
/// sharing one limiter's state: its own and every tier made for it or used on it. A decision on
/// a GCRA state judges a reading behind the state against it, so that a state a larger-burst
/// tier wrote is not mistaken for a reading from the past (which would understate the wait).
/// An admission needs none of it: the state it writes leads `now` by at most the applied
/// quota's own lead, which the judging lead is never below.
#[derive(Debug)]
pub(crate) struct JudgingLead {
    lead_ticks: AtomicU64,
}

impl JudgingLead {
    pub(crate) fn new<Q: Quota>(quota: &Q) -> JudgingLead {
        JudgingLead {
            lead_ticks: AtomicU64::new(quota.lead_ticks()),
        }
    }

    /// Raises the lead to `quota`'s, before any state is written under it.
    #[inline]
    pub(crate) fn raise<Q: Quota>(&self, quota: &Q) {
        if !Q::JUDGES_BY_LEAD {
            return;
        }
        let lead_ticks = quota.lead_ticks();
        // ORDERING: Relaxed. The raise precedes, in this thread, the compare-and-swap of any
        // state written under `quota`; a thread that reads that state with Acquire (which
        // synchronises with the CAS's release) and loads the lead after it sees the raise.
        if lead_ticks > self.lead_ticks.load(Ordering::Relaxed) {
            // ORDERING: Relaxed, as above.
            self.lead_ticks.fetch_max(lead_ticks, Ordering::Relaxed);
        }
    }

    /// Raises the lead to `lead_ticks` (a reservation's booked word), before the word is
    /// written.
    #[inline]
    pub(crate) fn raise_ticks(&self, lead_ticks: u64) {
        // ORDERING: Relaxed, as in `raise`.
        if lead_ticks > self.lead_ticks.load(Ordering::Relaxed) {
            // ORDERING: Relaxed, as in `raise`.
            self.lead_ticks.fetch_max(lead_ticks, Ordering::Relaxed);
        }
    }

    /// `quota`, judging readings behind a state by this lead. Call it after loading the state
    /// the decision is made on.
    #[inline]
    pub(crate) fn judging<Q: Quota>(&self, quota: &Q) -> Q {
        if !Q::JUDGES_BY_LEAD {
            return *quota;
        }
        // ORDERING: Relaxed; loaded after the state's Acquire load (see `raise`).
        quota.judging_lead(self.lead_ticks.load(Ordering::Relaxed))
    }
}

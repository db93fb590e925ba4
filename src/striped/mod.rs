//! One budget across many threads: a global limiter that scales with cores. Units are leased
//! from one GCRA budget into per-thread stripes, and admitted from the stripe with no write to
//! the shared state.
//!
//! A [`Limiter`] shared by every thread admits with one compare-and-swap on one cache line, so
//! its throughput stops growing at two threads: every admission moves the line between cores.
//! [`StripedLimiter`] keeps the same GCRA budget but lets each thread admit from its own stripe,
//! a cache-padded word holding units leased from the budget in batches. Use it where many
//! threads share one budget and a small, stated over-admission is acceptable; with leases of one
//! unit it is exactly a [`Limiter`].
//!
//! ```
//! use nanolimit::striped::StripedLimiter;
//! use nanolimit::Gcra;
//! use std::sync::Arc;
//!
//! // 50,000 requests per second for the whole service, checked by every worker thread.
//! let limiter = Arc::new(StripedLimiter::new(Gcra::per_second(50_000)?));
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let limiter = Arc::clone(&limiter);
//!         std::thread::spawn(move || (0..100).filter(|_| limiter.check().is_allowed()).count())
//!     })
//!     .collect();
//! let served: usize = workers.into_iter().map(|worker| worker.join().unwrap()).sum();
//! assert_eq!(served, 400);
//! // What it may admit beyond the quota, in any interval: stripes × (max lease − 1), and no
//! // more than one lease lifetime (10 ms) of the rate.
//! assert!(limiter.over_admission_bound() <= 500);
//! limiter.give_back_unused(); // the workers went idle: unspent units back to the budget
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - **Defaults** ([`StripedLimiterBuilder`]): twice as many stripes as hardware threads
//!   (rounded up to a power of two), so that busy threads rarely share one; leases of 1 to
//!   `min(256, burst / (4 × stripes))` units; a lease lifetime of 10 ms.
//! - **Threads map to stripes** by a number each thread takes at its first check (no lock, no
//!   registry); a packet loop with numbered workers passes its own:
//!   [`check_at_stripe(worker, now)`](StripedLimiter::check_at_stripe).
//! - **Idle workers** call [`give_back_unused()`](StripedLimiter::give_back_unused), which
//!   returns the stripes' unspent units to the budget where that is exact.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | [`StripedLimiter`] and its operations; the accuracy contract |
//! | `options.rs` | [`StripedLimiterBuilder`], its limits and defaults |
//! | `stripe.rs` | a stripe's packed word (units, the lease's grain, the claim marker) and its pure steps |
//! | `lease.rs` | where leases come from (the shared word, or another store), and their sizing |
//!
//! # How a check runs
//!
//! 1. The calling thread's stripe (threads are numbered at their first check; the number
//!    modulo the stripe count picks the stripe) holds the unspent units of its latest lease
//!    and when the lease was taken, in one cache-padded word. A check that finds enough live units
//!    takes them with one compare-and-swap on that word: no write to any line another core
//!    uses, so admissions on different stripes do not contend.
//! 2. Otherwise one thread *claims* the stripe (a compare-and-swap to a marker), takes a lease
//!    of `k` units from the shared GCRA word (one compare-and-swap, the same step as a plain
//!    [`Limiter`]'s check of cost `k`), spends the request's cost from it and
//!    publishes the rest. While the stripe is claimed, its other threads check the shared word
//!    directly: nobody waits.
//! 3. When the budget cannot grant `k` units, the refill asks for just what the request needs;
//!    when it cannot grant that either, the request is denied. A denial is decided on loads
//!    only: nothing is written, neither to the stripe nor to the shared word (except when a
//!    race is lost between the read-only test and the lease).
//!
//! # Accuracy contract
//!
//! Every unit admitted was first admitted by the shared GCRA quota as part of a lease, so the
//! shared quota bounds the leases, and the stripes only move admissions later in time:
//!
//! - **Over-admission.** In any interval, the units admitted exceed what the quota itself
//!   admits in an interval of that length (`burst + length / emission interval`) by at most
//!   [`over_admission_bound`](StripedLimiter::over_admission_bound) =
//!   `min(stripes × (max lease − 1), ⌈lease lifetime / emission interval⌉)`: the units the
//!   stripes can hold when the interval starts (a refill keeps at most `max lease − 1`), and
//!   no more than the budget earns in one lease lifetime (a unit is spent at a reading less
//!   than a grain before its lease's reading and less than the lifetime less a grain after it,
//!   so the leases of the units admitted in an interval were taken within the interval widened
//!   by one lifetime). For readings that go backward across threads, the first term assumes
//!   the interval's readings are not behind those of the leases it spends; the second holds
//!   for any readings. With one stripe and leases of one unit, the limiter is exactly the plain
//!   GCRA limiter.
//! - **Expiry.** A lease's units may be spent at readings in the whole grains of its lifetime
//!   less one (a grain is 2^19 ns, about 0.52 ms), counting the grain the lease was taken in:
//!   never later than the lifetime after the lease's reading, nor a grain or more before it. A
//!   reading earlier than the lease (a timestamp taken before a preemption, a batch's cached
//!   reading) is judged on the shared budget instead, as a plain limiter would judge it. Units
//!   left when a lease lapses are given back at the stripe's next refill, or by
//!   [`give_back_unused`](StripedLimiter::give_back_unused), when that is exact: when no other
//!   lease or admission has been taken from the budget since (then the budget is as if the
//!   lease had been smaller). Otherwise they lapse.
//! - **Under-admission.** Units held by one stripe cannot serve another: a thread may be denied
//!   while other stripes hold up to `stripes × (max lease − 1)` units, for at most one lease
//!   lifetime. Leases adapt so that this matters little: a lease that lapsed with units
//!   unspent halves the stripe's next lease (down to the minimum); one spent within a quarter
//!   of its lifetime doubles it (up to the maximum). A slow stripe therefore holds little.
//!
//! # Decisions
//!
//! A decision reports the shared quota's limit, and as `remaining` what the shared budget could
//! still lease plus the units the caller's stripe holds (capped at the burst); other stripes'
//! units are not counted, since this caller cannot spend them. `retry_after` is the wait until
//! the budget can lease what the stripe lacks for the cost. `reset_after` is the shared
//! budget's, less the time the stripe's units are worth.

mod lease;
mod options;
mod rate_limit;
mod refill;
mod stripe;

pub use options::{StripedLimiterBuilder, MAX_STRIPES};

use crate::clock::{Clock, QuantaClock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::driver;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::limiter::direct::Limiter;
use crate::limiter::lease::LeasePolicy;
use crate::quota::{Gcra, GcraInstant, Quota, Step};
use crate::sync::Ordering;
use crate::thread_index;
use crossbeam_utils::CachePadded;
use std::time::Duration;
use stripe::Stripe;

/// One GCRA budget shared by every thread, checked without contention: each thread admits from
/// its own stripe of leased units, and only a refill writes the shared state. For a
/// service-wide limit on a many-core server (50,000 requests per second in all, an upstream's
/// quota, a link's byte budget) where a small, stated over-admission is acceptable.
///
/// The contract (how much it may over-admit, for how long units live, what a decision reports)
/// is in the [module documentation](self). Use a plain [`Limiter`] when every
/// unit must be exact, or when few threads check. As the global member of a
/// [`Composite`](crate::composite::Composite) (a per-client limit and one for the whole
/// service), put it last: there it admits from the thread's stripe.
///
/// | operation | shorthand | packet-loop form | full form |
/// |---|---|---|---|
/// | consume if it fits | [`check`](Self::check) | [`check_at`](Self::check_at), [`check_at_stripe`](Self::check_at_stripe) | [`check_with`](Self::check_with) |
/// | ask without consuming | [`peek`](Self::peek) | | [`peek_with`](Self::peek_with) |
///
/// ```
/// use nanolimit::striped::StripedLimiter;
/// use nanolimit::Gcra;
/// use std::sync::Arc;
///
/// let limiter = Arc::new(StripedLimiter::new(Gcra::per_second(1_000_000)?));
/// let workers: Vec<_> = (0..4)
///     .map(|_| {
///         let limiter = Arc::clone(&limiter);
///         std::thread::spawn(move || (0..1_000).filter(|_| limiter.check().is_allowed()).count())
///     })
///     .collect();
/// let admitted: usize = workers.into_iter().map(|worker| worker.join().unwrap()).sum();
/// assert_eq!(admitted, 4_000);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug)]
pub struct StripedLimiter<C: Clock = QuantaClock> {
    /// The budget: a plain limiter whose admissions are leases.
    shared: Limiter<Gcra, C>,
    stripes: Box<[CachePadded<Stripe>]>,
    /// `stripes.len() − 1` (a power of two less one).
    stripe_mask: usize,
    policy: LeasePolicy,
}

impl StripedLimiter<QuantaClock> {
    /// A striped limiter with the defaults: twice as many stripes as the machine has hardware threads,
    /// leases of 1 to `min(256, burst / (4 × stripes))` units living 10 ms, on the default clock.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::Gcra;
    ///
    /// let limiter = StripedLimiter::new(Gcra::per_second(50_000)?);
    /// assert!(limiter.check().is_allowed());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn new(quota: Gcra) -> Self {
        StripedLimiter::builder(quota)
            .build()
            .expect("the default configuration fits every quota")
    }

    /// A builder, to choose stripes, lease sizes, lease lifetime and clock.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::Gcra;
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(10_000)?).stripes(3).build()?;
    /// assert_eq!(limiter.stripes(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(quota: Gcra) -> StripedLimiterBuilder {
        StripedLimiterBuilder::new(quota)
    }
}

impl<C: Clock> StripedLimiter<C> {
    pub(crate) fn from_parts(quota: Gcra, stripes: usize, policy: LeasePolicy, clock: C) -> Self {
        StripedLimiter {
            shared: Limiter::with_clock(quota, clock),
            stripes: (0..stripes)
                .map(|_| CachePadded::new(Stripe::new(policy.min_units)))
                .collect(),
            stripe_mask: stripes - 1,
            policy,
        }
    }

    /// The quota the stripes lease from.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Clock, Gcra, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1_000)?)
    ///     .stripes(4)
    ///     .lease_units(1, 8)
    ///     .lease_lifetime(Duration::from_millis(5))
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.quota().limit(), 1_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quota(&self) -> &Gcra {
        self.shared.quota()
    }

    /// The clock this limiter reads.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Clock, Gcra, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1_000)?)
    ///     .stripes(4)
    ///     .lease_units(1, 8)
    ///     .lease_lifetime(Duration::from_millis(5))
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.clock().advance(Duration::from_millis(1));
    /// assert_eq!(limiter.now().as_ns(), 1_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock(&self) -> &C {
        self.shared.clock()
    }

    /// A reading of this limiter's clock, for [`check_at`](Self::check_at).
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Clock, Gcra, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1_000)?)
    ///     .stripes(4)
    ///     .lease_units(1, 8)
    ///     .lease_lifetime(Duration::from_millis(5))
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.check_at(limiter.now()).is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.shared.now()
    }

    /// The number of stripes (a power of two).
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Clock, Gcra, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1_000)?)
    ///     .stripes(4)
    ///     .lease_units(1, 8)
    ///     .lease_lifetime(Duration::from_millis(5))
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.stripes(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stripes(&self) -> usize {
        self.stripes.len()
    }

    /// The smallest and largest lease, in units.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Clock, Gcra, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1_000)?)
    ///     .stripes(4)
    ///     .lease_units(1, 8)
    ///     .lease_lifetime(Duration::from_millis(5))
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.lease_units(), (1, 8));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lease_units(&self) -> (u64, u64) {
        (self.policy.min_units, self.policy.max_units)
    }

    /// How long leased units may be spent after their lease.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Clock, Gcra, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1_000)?)
    ///     .stripes(4)
    ///     .lease_units(1, 8)
    ///     .lease_lifetime(Duration::from_millis(5))
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.lease_lifetime(), Duration::from_millis(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lease_lifetime(&self) -> Duration {
        Duration::from_nanos(self.policy.lifetime_ns)
    }

    /// The most units this limiter admits, in any interval, beyond what its quota admits in an
    /// interval of the same length: `min(stripes × (max lease − 1), ⌈lifetime / emission
    /// interval⌉)` (see the [module documentation](self)). Zero with leases of one unit.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::Gcra;
    ///
    /// let exact = StripedLimiter::builder(Gcra::per_second(100)?).lease_units(1, 1).build()?;
    /// assert_eq!(exact.over_admission_bound(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn over_admission_bound(&self) -> u64 {
        let quota = self.shared.quota();
        let held = (self.stripes.len() as u64).saturating_mul(self.policy.max_units - 1);
        // ⌈lifetime × count / period⌉: what the budget earns in one lifetime.
        let earned = (self.policy.lifetime_ns as u128 * quota.count() as u128)
            .div_ceil(quota.period().as_nanos());
        held.min(u64::try_from(earned).unwrap_or(u64::MAX))
    }

    /// Checks one unit now on the calling thread's stripe: consumes it if it fits.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Gcra, ManualClock};
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(2)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.check().is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check(&self) -> Decision<Gcra> {
        self.check_at(self.shared.now())
    }

    /// Checks one unit at `now`, a reading the caller already holds, on the calling thread's
    /// stripe.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::Gcra;
    ///
    /// let limiter = StripedLimiter::new(Gcra::per_second(1)?);
    /// let now = limiter.now();
    /// assert!(limiter.check_at(now).is_allowed());
    /// assert!(limiter.check_at(now).is_denied());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn check_at(&self, now: Timestamp) -> Decision<Gcra> {
        self.decide(thread_index::current(), 1, now)
    }

    /// Checks one unit at `now` on stripe `stripe` (modulo the stripe count), for callers that
    /// number their workers themselves (one worker per core in a packet loop): no thread-local
    /// lookup. Several threads may use one stripe; it stays correct.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Gcra, ManualClock};
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(8)?)
    ///     .stripes(2)
    ///     .lease_units(1, 2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// let now = limiter.now();
    /// let admitted = (0..20).filter(|worker| limiter.check_at_stripe(*worker, now).is_allowed());
    /// assert_eq!(admitted.count(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_at_stripe(&self, stripe: usize, now: Timestamp) -> Decision<Gcra> {
        self.decide(stripe, 1, now)
    }

    /// Checks `request` (cost and time; see [`Request`]) on the calling thread's stripe:
    /// consumes its cost, all or nothing, if it fits. A request with a [tier](Request::tier)
    /// is judged on the shared budget directly, under the tier's quota.
    ///
    /// Errors when the request can never pass: a cost above the burst.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Gcra, ManualClock, Request};
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1_500)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.check_with(Request::cost(1_000))?.is_allowed());
    /// assert!(limiter.check_with(Request::cost(1_000))?.is_denied());
    /// assert!(limiter.check_with(Request::cost(1_501)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_with(&self, request: Request<Gcra>) -> Result<Decision<Gcra>, RequestError> {
        if request.tier.is_some() {
            return self.shared.check_with(request);
        }
        let resolved =
            request.resolve(self.shared.quota(), &self.shared.core.lead, self.clock())?;
        Ok(self.decide(thread_index::current(), resolved.cost, resolved.at))
    }

    /// Whether one unit would pass now on the calling thread's stripe, consuming nothing.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Gcra, ManualClock};
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.peek().is_allowed());
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.peek().is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek(&self) -> Decision<Gcra> {
        self.peek_decision(thread_index::current(), 1, self.shared.now())
    }

    /// Whether `request` would pass on the calling thread's stripe, consuming nothing (a tiered
    /// request: on the shared budget, as [`check_with`](Self::check_with)).
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Gcra, ManualClock, Request};
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_minute(10)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.check_with(Request::cost(8))?.is_allowed());
    /// assert!(limiter.peek_with(Request::cost(2))?.is_allowed());
    /// assert!(limiter.peek_with(Request::cost(3))?.is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_with(&self, request: Request<Gcra>) -> Result<Decision<Gcra>, RequestError> {
        if request.tier.is_some() {
            return self.shared.peek_with(request);
        }
        let resolved =
            request.resolve(self.shared.quota(), &self.shared.core.lead, self.clock())?;
        Ok(self.peek_decision(thread_index::current(), resolved.cost, resolved.at))
    }

    /// Gives every stripe's unspent units back to the budget where that is exact (the stripe's
    /// lease is still the latest taken from the budget), and empties the stripes: for a server
    /// whose workers go idle or stop, so that the budget they held serves others at once rather
    /// than after the lease lifetime. Lock-free, and safe at any time; a check running at once
    /// on an emptied stripe takes a new lease.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Gcra, ManualClock};
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(100)?)
    ///     .lease_units(10, 10)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.check().is_allowed()); // leases 10, holds 9
    /// assert_eq!(limiter.peek().remaining(), 99);
    /// limiter.give_back_unused();
    /// assert_eq!(limiter.quota_remaining(), 99);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn give_back_unused(&self) {
        for stripe in self.stripes.iter() {
            // ORDERING: Relaxed: only a guess at the word; the claim below reads it again.
            let word = stripe.word.load(Ordering::Relaxed);
            if stripe::is_claimed(word) || stripe::units(word) == 0 {
                continue;
            }
            if self.claim(stripe, word) {
                self.give_back(stripe, stripe::units(word));
                // ORDERING: Release: publishes the empty stripe, ending the claim (pairs with the
                // next claim's Acquire).
                stripe
                    .word
                    .store(stripe::pack(0, stripe::start(word)), Ordering::Release);
            }
        }
    }

    /// What the shared budget could lease now, not counting any stripe's units.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{Gcra, ManualClock};
    ///
    /// let limiter = StripedLimiter::builder(Gcra::per_second(100)?)
    ///     .lease_units(10, 10)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.check().is_allowed());
    /// assert_eq!(limiter.quota_remaining(), 90);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quota_remaining(&self) -> u64 {
        let quota = self.shared.quota();
        quota.remaining(
            self.shared.core.store.load(),
            quota.instant(self.shared.now()),
        )
    }

    /// The units stripe `stripe` (modulo the stripe count) holds, live or expired (0 while
    /// claimed). For tests and models, which check that every leased unit is either admitted,
    /// held or given back; not part of the API.
    #[doc(hidden)]
    pub fn held_units(&self, stripe: usize) -> u64 {
        // ORDERING: Relaxed: a snapshot, meaningful once the checking threads are joined.
        let word = self.stripes[stripe & self.stripe_mask]
            .word
            .load(Ordering::Relaxed);
        if stripe::is_claimed(word) {
            0
        } else {
            stripe::units(word)
        }
    }

    /// The core every check funnels into: `cost` (at most the burst) at `now` on stripe
    /// `stripe_number` (reduced modulo the stripe count).
    // Forced inline: as a plain `#[inline]` the compiler keeps it out of line behind `check`,
    // and the call and the `Decision` written through memory are then a large part of the
    // check. The refill stays `#[cold]` and out of line.
    #[inline(always)]
    pub(crate) fn decide(&self, stripe_number: usize, cost: u64, now: Timestamp) -> Decision<Gcra> {
        let quota = self.shared.quota();
        let instant = quota.instant(now);
        if cost == 0 {
            return self.peek_decision(stripe_number, 0, now);
        }
        let stripe = &self.stripes[stripe_number & self.stripe_mask];
        let now_grain = stripe::grain(now);
        let lifetime_grains = self.policy.lifetime_grains;
        let spend = |word| match stripe::spend(word, now_grain, lifetime_grains, cost) {
            Some(spent) => Step::Allow(spent),
            None => Step::Deny,
        };
        loop {
            // ORDERING: Relaxed: spending needs only the word's atomicity (the driver's
            // compare-and-swap continues the release sequence of the refill that published the
            // lease, so the next claim still synchronises with that refill); a claim re-reads
            // the word with its own Acquire compare-and-swap.
            let observed = stripe.word.load(Ordering::Relaxed);
            let word = match driver::apply_unguarded(&stripe.word, observed, spend) {
                Ok(spent) => return self.admitted(stripe::units(spent), cost, instant),
                Err(word) => word,
            };
            if let Some(denied) = self.denied_at_once(word, now_grain, cost, instant) {
                return denied;
            }
            if let Some(decision) = self.refill(stripe, word, cost, now, instant) {
                return decision;
            }
        }
    }

    /// The common denial, decided inline: the stripe lacks units (none lapsed that a refill would
    /// give back) and the budget cannot lease what it lacks. Loads only, as a plain limiter's
    /// denial: a saturated striped limiter stays read-only. `None` otherwise (the refill path
    /// decides, and tests again).
    #[inline]
    fn denied_at_once(
        &self,
        word: u64,
        now_grain: u64,
        cost: u64,
        instant: GcraInstant,
    ) -> Option<Decision<Gcra>> {
        if stripe::is_claimed(word) || stripe::is_behind(word, now_grain) {
            return None;
        }
        let held = stripe::spendable(word, now_grain, self.policy.lifetime_grains);
        if stripe::units(word) != held {
            return None;
        }
        let observed = self.shared.core.store.load();
        match self.shared.quota().step(observed, instant, cost - held) {
            Step::Deny => Some(self.denied(observed, held, cost, instant)),
            Step::Allow(_) => None,
        }
    }

    /// The decision for an admission served from a stripe that holds `held` units after it.
    #[inline]
    fn admitted(&self, held: u64, cost: u64, instant: GcraInstant) -> Decision<Gcra> {
        self.admitted_on(self.shared.core.store.load(), held, cost, instant)
    }

    /// An admission reported on the shared word `shared_word`, with `held` units left in the
    /// stripe: reported as the shared state less what those units are worth, so that
    /// `remaining` counts them.
    #[inline]
    fn admitted_on(
        &self,
        shared_word: u64,
        held: u64,
        cost: u64,
        instant: GcraInstant,
    ) -> Decision<Gcra> {
        let quota = self.shared.quota();
        let state = shared_word.saturating_sub(quota.increment_ticks(held));
        Decision::new(true, cost, state, instant, *quota)
    }

    /// A denial with `held` units in the stripe: reported on the shared word `observed` less
    /// what they are worth, so that `retry_after` is the wait for what the stripe lacks.
    #[inline]
    fn denied(&self, observed: u64, held: u64, cost: u64, instant: GcraInstant) -> Decision<Gcra> {
        let quota = self.shared.quota();
        let state = observed.saturating_sub(quota.increment_ticks(held));
        Decision::new(
            false,
            cost,
            state,
            instant,
            self.shared.core.lead.judging(quota),
        )
    }

    /// The shared budget the stripes lease from: a plain limiter, checked directly where an
    /// admission must be exactly undoable (a composite member other than the last).
    pub(crate) fn shared(&self) -> &Limiter<Gcra, C> {
        &self.shared
    }

    /// The core every peek funnels into: loads only.
    pub(crate) fn peek_decision(
        &self,
        stripe_number: usize,
        cost: u64,
        now: Timestamp,
    ) -> Decision<Gcra> {
        let quota = self.shared.quota();
        let instant = quota.instant(now);
        let stripe = &self.stripes[stripe_number & self.stripe_mask];
        // ORDERING: Relaxed: a snapshot; nothing else is read through it.
        let word = stripe.word.load(Ordering::Relaxed);
        let now_grain = stripe::grain(now);
        let (held, lapsed) = if stripe::is_claimed(word) || stripe::is_behind(word, now_grain) {
            (0, 0)
        } else {
            let held = stripe::spendable(word, now_grain, self.policy.lifetime_grains);
            (held, stripe::units(word) - held)
        };
        let observed = self.budget_after_lapse(stripe, lapsed);
        let state = observed.saturating_sub(quota.increment_ticks(held));
        let allowed = held >= cost || quota.step(observed, instant, cost - held) != Step::Deny;
        Decision::new(
            allowed,
            cost,
            state,
            instant,
            self.shared.core.lead.judging(quota),
        )
    }
}

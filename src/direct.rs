//! Direct limiters: one quota, one state word, shared by every caller.

use crate::algorithm::Algorithm;
use crate::clock::{Clock, QuantaClock};
use crate::decision::Decision;
use crate::driver::{self, Applied};
use crate::error::InsufficientCapacity;
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// A rate limiter with one state: every check counts against the same quota.
///
/// Lock-free: a check is one load, the algorithm's arithmetic and (if allowed) one
/// compare-and-swap on a cache-padded `AtomicU64`; a denial writes nothing. No allocation.
///
/// ```
/// use nanolimit::{Gcra, Limiter};
///
/// let limiter = Limiter::new(Gcra::per_second(1_000)?);
/// if limiter.check().is_allowed() {
///     // handle the request
/// }
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug)]
pub struct Limiter<A: Algorithm, C: Clock = QuantaClock> {
    state: CachePadded<AtomicU64>,
    policy: A,
    clock: C,
}

impl<A: Algorithm> Limiter<A, QuantaClock> {
    /// A limiter on the default clock ([`QuantaClock`]).
    pub fn new(policy: A) -> Self {
        Self::with_clock(policy, QuantaClock::new())
    }
}

impl<A: Algorithm, C: Clock> Limiter<A, C> {
    /// A limiter reading time from `clock`.
    ///
    /// ```
    /// use nanolimit::{Limiter, ManualClock, SlidingWindow};
    ///
    /// let limiter = Limiter::with_clock(SlidingWindow::per_second(5)?, ManualClock::new());
    /// assert_eq!(limiter.policy().limit(), 5);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn with_clock(policy: A, clock: C) -> Self {
        Limiter {
            state: CachePadded::new(AtomicU64::new(A::FRESH)),
            policy,
            clock,
        }
    }

    /// The quota this limiter enforces.
    pub fn policy(&self) -> &A {
        &self.policy
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Checks one unit of cost now.
    #[inline]
    pub fn check(&self) -> Decision<A> {
        self.check_at(self.clock.now_ns())
    }

    /// Checks one unit of cost at `now_ns` (a reading of this limiter's clock).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(1)?, ManualClock::new());
    /// assert!(limiter.check_at(0).is_allowed());
    /// assert!(limiter.check_at(500_000_000).is_denied());
    /// assert!(limiter.check_at(1_000_000_000).is_allowed());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn check_at(&self, now_ns: u64) -> Decision<A> {
        // Every quota's capacity is at least 1.
        self.decide(1, self.policy.instant(now_ns))
    }

    /// Checks `cost` units now, all or nothing.
    ///
    /// Errors when `cost` exceeds the quota's capacity: such a request can never pass.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(1_500)?, ManualClock::new());
    /// assert!(limiter.check_n(1_000)?.is_allowed());
    /// assert!(limiter.check_n(1_000)?.is_denied());
    /// assert!(limiter.check_n(1_501).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_n(&self, cost: u64) -> Result<Decision<A>, InsufficientCapacity> {
        self.check_n_at(cost, self.clock.now_ns())
    }

    /// Checks `cost` units at `now_ns`, all or nothing.
    #[inline]
    pub fn check_n_at(&self, cost: u64, now_ns: u64) -> Result<Decision<A>, InsufficientCapacity> {
        InsufficientCapacity::check(&self.policy, cost)?;
        Ok(self.decide(cost, self.policy.instant(now_ns)))
    }

    /// Whether one unit would pass now, without consuming anything.
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
    pub fn peek(&self) -> Decision<A> {
        self.peek_at(self.clock.now_ns())
    }

    /// Whether one unit would pass at `now_ns`, without consuming anything.
    #[inline]
    pub fn peek_at(&self, now_ns: u64) -> Decision<A> {
        self.peek_decision(1, self.policy.instant(now_ns))
    }

    /// Whether `cost` units would pass now, without consuming anything.
    pub fn peek_n(&self, cost: u64) -> Result<Decision<A>, InsufficientCapacity> {
        self.peek_n_at(cost, self.clock.now_ns())
    }

    /// Whether `cost` units would pass at `now_ns`, without consuming anything.
    pub fn peek_n_at(&self, cost: u64, now_ns: u64) -> Result<Decision<A>, InsufficientCapacity> {
        InsufficientCapacity::check(&self.policy, cost)?;
        Ok(self.peek_decision(cost, self.policy.instant(now_ns)))
    }

    #[inline]
    fn decide(&self, cost: u64, now: A::Instant) -> Decision<A> {
        if cost == 0 {
            return self.peek_decision(0, now);
        }
        // ORDERING: Acquire, so that the word is examined with the same visibility the driver's
        // failed compare-and-swap gives (see `driver::apply`).
        let observed = self.state.load(Ordering::Acquire);
        match driver::apply(&self.state, observed, |word| {
            Some(self.policy.step(word, now, cost))
        }) {
            Applied::Allowed { current } => Decision::new(true, cost, current, now, self.policy),
            Applied::Denied { observed } => Decision::new(false, cost, observed, now, self.policy),
            Applied::Aborted => unreachable!("a direct limiter's step never aborts"),
        }
    }

    fn peek_decision(&self, cost: u64, now: A::Instant) -> Decision<A> {
        // ORDERING: Acquire, as in `decide`; nothing is written.
        let observed = self.state.load(Ordering::Acquire);
        let allowed =
            cost == 0 || matches!(self.policy.step(observed, now, cost), crate::Step::Allow(_));
        Decision::new(allowed, cost, observed, now, self.policy)
    }
}

//! The decision of a composite check: allowed only if every member allowed, and the member
//! that binds, whose values the headers report.

use super::members::MemberDecisions;
use crate::engine::decision::RateLimitHeaders;
use std::time::Duration;

/// The outcome of a composite check or peek: allowed only if every member allowed, each
/// member's own [`Decision`](crate::Decision) ([`members`](Self::members)), and the *binding*
/// member, whose values the limit, remaining, reset-after, retry-after and
/// [`headers`](Self::headers) report: when allowed, the member with the smallest remaining (the
/// one a client will run into first); when denied, the denying member with the longest
/// retry-after (the wait after which every member would admit, traffic aside). Ties go to the
/// earlier member. The binding member is found only when asked, from the decisions already
/// made, with no further atomic operation.
///
/// On a denial, the members other than the one that denied report a peek made after the
/// refunds (see the [protocol](super#the-protocol)), so every retry-after is counted on the
/// state the client will meet.
///
/// ```
/// use nanolimit::composite::Composite;
/// use nanolimit::{FixedWindow, Gcra, Limiter, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let per_second = Limiter::with_clock(Gcra::per_second(10)?, clock.clone());
/// let per_minute = Limiter::with_clock(FixedWindow::per_minute(12)?, clock.clone());
/// let both = Composite::new((&per_second, &per_minute));
/// for _ in 0..10 {
///     assert!(both.check(&()).is_allowed());
/// }
/// // 0 left of the 10 per second, 2 of the 12 per minute: the per-second limit binds.
/// assert_eq!(both.peek(&()).binding(), 0);
/// clock.advance(Duration::from_secs(1));
/// let decision = both.check(&());
/// assert!(decision.is_allowed());
/// assert_eq!((decision.binding(), decision.remaining()), (1, 1));
/// let _ = both.check(&());
/// let denied = both.check(&());
/// assert!(denied.is_denied());
/// assert_eq!(denied.binding(), 1);
/// assert_eq!(denied.headers().retry_after_seconds, Some(59));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use = "a decision says whether the request may proceed"]
pub struct CompositeDecision<D> {
    allowed: bool,
    members: D,
}

impl<D: MemberDecisions> CompositeDecision<D> {
    #[inline]
    pub(crate) fn new(allowed: bool, members: D) -> Self {
        CompositeDecision { allowed, members }
    }

    /// Whether the request may proceed: every member admitted it, and each consumed its cost.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let a = Limiter::with_clock(Gcra::per_second(1)?, clock.clone());
    /// let b = Limiter::with_clock(Gcra::per_second(5)?, clock);
    /// let limits = Composite::new((&a, &b));
    /// assert!(limits.check(&()).is_allowed());
    /// assert!(limits.check(&()).is_denied());
    /// assert_eq!(b.peek().remaining(), 4);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn is_allowed(&self) -> bool {
        self.allowed
    }

    /// Whether the request was rejected: a member denied it, and no member consumed anything
    /// (see the [protocol](super#the-protocol)).
    #[inline]
    pub fn is_denied(&self) -> bool {
        !self.allowed
    }

    /// Each member's decision, a tuple in the members' order.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{Gcra, KeyedLimiter, Limiter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let per_ip = KeyedLimiter::builder(Gcra::per_second(100)?).clock(clock.clone()).build()?;
    /// let global = Limiter::with_clock(Gcra::per_second(50_000)?, clock);
    /// let limits = Composite::new((&per_ip, &global));
    /// let decision = limits.check(&7u32);
    /// let (ip, all) = decision.members();
    /// assert_eq!((ip.remaining(), all.remaining()), (99, 49_999));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn members(&self) -> &D {
        &self.members
    }

    /// The position of the binding member: the smallest remaining if allowed, the longest
    /// retry-after among the denying members if denied (ties: the earlier member).
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{FixedWindow, Gcra, Limiter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let second = Limiter::with_clock(Gcra::per_second(2)?, clock.clone());
    /// let minute = Limiter::with_clock(FixedWindow::per_minute(3)?, clock);
    /// let limits = Composite::new((&second, &minute));
    /// // Remaining 1 of 2 and 2 of 3: the per-second limit binds.
    /// assert_eq!(limits.check(&()).binding(), 0);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn binding(&self) -> usize {
        let mut binding = 0;
        if self.allowed {
            let mut smallest = u64::MAX;
            for index in 0..D::COUNT {
                let remaining = self.members.remaining(index);
                if remaining < smallest {
                    (binding, smallest) = (index, remaining);
                }
            }
        } else {
            let mut longest = None;
            for index in 0..D::COUNT {
                if self.members.allowed(index) {
                    continue;
                }
                let retry_after = self.members.retry_after(index);
                if longest.is_none_or(|longest| retry_after > longest) {
                    (binding, longest) = (index, Some(retry_after));
                }
            }
        }
        binding
    }

    /// The binding member's limit.
    pub fn limit(&self) -> u64 {
        self.members.limit(self.binding())
    }

    /// The binding member's remaining: how many unit-cost requests would pass right after this
    /// decision (when allowed, the fewest of any member).
    pub fn remaining(&self) -> u64 {
        self.members.remaining(self.binding())
    }

    /// The binding member's reset-after.
    pub fn reset_after(&self) -> Duration {
        self.members.reset_after(self.binding())
    }

    /// How long until this request would pass every member, with no other traffic: zero when
    /// allowed, the longest retry-after of the denying members when denied.
    pub fn retry_after(&self) -> Duration {
        if self.allowed {
            return Duration::ZERO;
        }
        self.members.retry_after(self.binding())
    }

    /// The header values of the binding member, rounded as
    /// [`Decision::headers`](crate::Decision::headers) rounds them.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{Gcra, KeyedLimiter, Limiter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let per_ip = KeyedLimiter::builder(Gcra::per_second(100)?).clock(clock.clone()).build()?;
    /// let global = Limiter::with_clock(Gcra::per_minute(3)?, clock);
    /// let limits = Composite::new((&per_ip, &global));
    /// let _ = limits.check(&1u32);
    /// let headers = limits.check(&2u32).headers();
    /// // The global limit binds: 1 of its 3 left, for every client.
    /// assert_eq!((headers.limit, headers.remaining), (3, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn headers(&self) -> RateLimitHeaders {
        self.members.headers(self.binding())
    }
}

//! The result of a check, with everything a caller needs to answer a client.

use crate::algorithm::Algorithm;
use std::time::Duration;

/// The outcome of a check: allowed or denied, and — computed only if asked, from the state
/// word the check already observed, with no further atomic operation — the limit, what
/// remains, and when to come back.
///
/// These are the values behind the `RateLimit-Limit` / `X-RateLimit-Limit`,
/// `RateLimit-Remaining`, `RateLimit-Reset` and `Retry-After` headers; [`headers`](Self::headers)
/// rounds them the way those headers expect.
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock};
/// use std::time::Duration;
///
/// let limiter = Limiter::with_clock(Gcra::per_second(10)?, ManualClock::new());
/// let decision = limiter.check();
/// assert!(decision.is_allowed());
/// assert_eq!(decision.limit(), 10);
/// assert_eq!(decision.remaining(), 9);
/// assert_eq!(decision.reset_after(), Duration::from_millis(100));
/// assert_eq!(decision.retry_after(), Duration::ZERO);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use = "a decision says whether the request may proceed"]
pub struct Decision<A: Algorithm> {
    allowed: bool,
    cost: u64,
    /// The word after the check: the stored word if allowed, the observed one if denied.
    state: u64,
    now: A::Instant,
    policy: A,
    untracked: bool,
}

impl<A: Algorithm> Decision<A> {
    #[inline]
    pub(crate) fn new(allowed: bool, cost: u64, state: u64, now: A::Instant, policy: A) -> Self {
        Decision {
            allowed,
            cost,
            state,
            now,
            policy,
            untracked: false,
        }
    }

    /// A decision for a key the keyed table had no room to track (see
    /// [`WhenFull`](crate::WhenFull)): judged as a fresh key, nothing stored.
    #[inline]
    pub(crate) fn for_untracked_key(allowed: bool, cost: u64, now: A::Instant, policy: A) -> Self {
        Decision {
            allowed,
            cost,
            state: A::FRESH,
            now,
            policy,
            untracked: true,
        }
    }

    /// Whether a keyed table was full of live entries and did not track this key: the decision
    /// was made by its [`WhenFull`](crate::WhenFull) policy, not by the key's own state.
    /// Always false for direct limiters.
    pub fn is_untracked(&self) -> bool {
        self.untracked
    }

    /// Whether the request may proceed.
    #[inline]
    pub fn is_allowed(&self) -> bool {
        self.allowed
    }

    /// Whether the request was rejected.
    #[inline]
    pub fn is_denied(&self) -> bool {
        !self.allowed
    }

    /// The cost this decision was for.
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// The quota's capacity: the GCRA burst, or the limit per window.
    pub fn limit(&self) -> u64 {
        self.policy.capacity()
    }

    /// How many unit-cost requests would pass right after this decision.
    pub fn remaining(&self) -> u64 {
        self.policy.remaining(self.state, self.now)
    }

    /// How long until the full capacity is available again, with no further traffic.
    pub fn reset_after(&self) -> Duration {
        Duration::from_nanos(self.policy.reset_after_ns(self.state, self.now))
    }

    /// How long until this request would pass, with no other traffic: zero when allowed.
    pub fn retry_after(&self) -> Duration {
        if self.allowed || self.untracked {
            Duration::ZERO
        } else {
            Duration::from_nanos(self.policy.retry_after_ns(self.state, self.now, self.cost))
        }
    }

    /// The quota the decision was made under.
    pub fn policy(&self) -> &A {
        &self.policy
    }

    /// The raw state word after the decision (for diagnostics and simulations).
    pub fn state_word(&self) -> u64 {
        self.state
    }

    /// Header values, in whole seconds rounded up (so a client that waits that long succeeds).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_minute(1)?, ManualClock::new());
    /// let _ = limiter.check();
    /// let headers = limiter.check().headers();
    /// assert_eq!((headers.limit, headers.remaining), (1, 0));
    /// assert_eq!(headers.reset_seconds, 60);
    /// assert_eq!(headers.retry_after_seconds, Some(60));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn headers(&self) -> RateLimitHeaders {
        let ceil_seconds = |duration: Duration| duration.as_nanos().div_ceil(1_000_000_000) as u64;
        RateLimitHeaders {
            limit: self.limit(),
            remaining: self.remaining(),
            reset_seconds: ceil_seconds(self.reset_after()),
            retry_after_seconds: (!self.allowed).then(|| ceil_seconds(self.retry_after())),
        }
    }
}

/// The values of the `RateLimit-*` / `X-RateLimit-*` and `Retry-After` response headers.
///
/// ```
/// use nanolimit::{FixedWindow, Limiter, ManualClock};
///
/// let limiter = Limiter::with_clock(FixedWindow::per_second(5)?, ManualClock::new());
/// let headers = limiter.check().headers();
/// assert_eq!(headers.remaining, 4);
/// assert_eq!(headers.retry_after_seconds, None);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimitHeaders {
    /// `RateLimit-Limit`: the quota's capacity.
    pub limit: u64,
    /// `RateLimit-Remaining`: unit requests that would pass now.
    pub remaining: u64,
    /// `RateLimit-Reset`: seconds until the capacity is full again.
    pub reset_seconds: u64,
    /// `Retry-After`: seconds to wait, present only on a denial.
    pub retry_after_seconds: Option<u64>,
}

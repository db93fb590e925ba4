//! The result of every check and peek, of every limiter: the one [`Decision`], with everything
//! a caller needs to answer a client; and [`Judged`], what a store found, that it is made from.

use super::judge::{Judge, LogFigures, Observed};
use crate::clock::Timestamp;
use crate::quota::sliding_log::SlidingLog;
use crate::quota::Quota;
use core::time::Duration;

/// The outcome of a check or peek: allowed or denied, and (computed only if asked, from the
/// state word the check already observed, with no further atomic operation) the limit, what
/// remains, and when to come back.
///
/// These are the values behind the `RateLimit-Limit` / `X-RateLimit-Limit`,
/// `RateLimit-Remaining`, `RateLimit-Reset` and `Retry-After` headers; [`headers`](Self::headers)
/// rounds them the way those headers expect.
///
/// `Q` is what the decision was made under: a word quota ([`Gcra`](crate::Gcra),
/// [`SlidingWindow`](crate::SlidingWindow), [`FixedWindow`](crate::FixedWindow)), the exact
/// [`SlidingLog`] (whose figures are counted on its log when the
/// decision is made), or a tuple of them: a [`Composite`](crate::composite::Composite)'s
/// members, whose decision reports the [`binding`](Self::binding) member's figures and each
/// member's own decision ([`members`](Decision::members)).
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
pub struct Decision<Q: Judge> {
    pub(super) allowed: bool,
    pub(super) entry: Entry,
    pub(super) cost: u64,
    /// What the decision keeps of the state it was made on, to report from when asked.
    pub(super) basis: Q::Basis,
    pub(super) quota: Q,
}

/// Whether the decision was made on a state the limiter keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A direct limiter's state, or a key the table holds (or, for a peek of a new key, the
    /// state its insert would start from).
    Tracked,
    /// A key this decision inserted into the table (its first write, over a vacant, reclaimed
    /// or evicted slot): tracked from now on, as [`Tracked`](Self::Tracked).
    Inserted,
    /// A key a full table admitted without tracking it ([`WhenFull::Allow`](crate::WhenFull)):
    /// judged as a fresh key, nothing stored.
    Untracked,
    /// A new key a full table refused: it waits until `state` (the state of the slot that
    /// frees first) is fresh.
    RefusedUntilFresh,
    /// A new key a full table refused on the state it would inherit (an eviction that would
    /// not admit it): it waits until `state` admits its cost.
    RefusedUntilAdmitted,
    /// A shared store that holds the key's state (Redis) could not be reached in time, and the
    /// limiter's failure policy decided: reported as a fresh key would be after the decision
    /// when it fails open (`state` is that fresh state), as nothing left and "retry at once"
    /// when it fails closed.
    Fallback,
}

/// What a store found for one key: the outcome, the word it is judged on, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Judged<I> {
    pub(crate) outcome: Outcome,
    /// The word written (admitted), the word observed (denied, peeked), the state a new key
    /// starts from or inherits, or the state a refused new key waits on.
    pub(crate) word: u64,
    /// The time the word was judged at: the caller's reading, or for a new key no earlier
    /// than its shard's floor (the keyed table's "keys that come back").
    pub(crate) now: I,
}

/// What became of one key's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A key the store holds, admitted: `word` was stored.
    Allowed,
    /// A key the store holds, denied (or peeked and found wanting): `word` was observed.
    Denied,
    /// A new key admitted and inserted: its first state is `word`.
    Inserted,
    /// A new key a full table admitted without tracking it: `word` is what a fresh key would
    /// hold after the request.
    Untracked,
    /// A new key a full table refused: it waits until `word` (the state of the candidate that
    /// frees first, or the first state if none exists) is fresh.
    RefusedUntilFresh,
    /// A new key refused on the state it would inherit by eviction: it waits until `word`
    /// admits its cost.
    RefusedUntilAdmitted,
}

impl Outcome {
    /// Whether a request of `cost` with this outcome passed, and what its decision was made on.
    #[inline]
    fn entry(self, cost: u64) -> (bool, Entry) {
        match self {
            Outcome::Allowed => (true, Entry::Tracked),
            Outcome::Denied => (false, Entry::Tracked),
            Outcome::Inserted => (true, Entry::Inserted),
            Outcome::Untracked => (true, Entry::Untracked),
            Outcome::RefusedUntilFresh => (cost == 0, Entry::RefusedUntilFresh),
            Outcome::RefusedUntilAdmitted => (cost == 0, Entry::RefusedUntilAdmitted),
        }
    }
}

impl<I> Judged<I> {
    /// A judgement of `outcome` on `word` at `now`.
    #[inline]
    pub(crate) fn new(outcome: Outcome, word: u64, now: I) -> Judged<I> {
        Judged { outcome, word, now }
    }
}

impl<Q: Quota> Decision<Q> {
    /// A decision made on `state` (the stored word if allowed, the observed one otherwise).
    #[inline]
    pub(crate) fn new(allowed: bool, cost: u64, state: u64, now: Q::Instant, quota: Q) -> Self {
        Decision {
            allowed,
            entry: Entry::Tracked,
            cost,
            basis: Observed { word: state, now },
            quota,
        }
    }

    /// The decision a store's judgement of a request of `cost` stands for, under `quota`. A
    /// new key refused by a full table reports nothing remaining, and a wait of at least 1 ns
    /// (it never reads as "retry now"; computed only if asked); a cost of zero still passes
    /// (it asks for nothing).
    #[inline]
    pub(crate) fn judged(judged: Judged<Q::Instant>, cost: u64, quota: Q) -> Self {
        let (allowed, entry) = judged.outcome.entry(cost);
        Decision {
            allowed,
            entry,
            cost,
            basis: Observed {
                word: judged.word,
                now: judged.now,
            },
            quota,
        }
    }

    /// Whether this admission inserted its key (a keyed table's first write for it).
    #[inline]
    pub(crate) fn inserted_its_key(&self) -> bool {
        self.entry == Entry::Inserted
    }

    /// A decision the failure policy of a limiter on a shared store made, the store being out of
    /// reach: `allowed` (failing open) reports what a fresh key would after it, `state` being
    /// that fresh state after the cost; denied (failing closed) reports nothing left, and 1 ns
    /// as its waits (retry at once: the store may be back).
    #[cfg(feature = "redis")]
    #[cold]
    pub(crate) fn fallback(
        allowed: bool,
        cost: u64,
        state: u64,
        now: Q::Instant,
        quota: Q,
    ) -> Self {
        Decision {
            allowed,
            entry: Entry::Fallback,
            cost,
            basis: Observed { word: state, now },
            quota,
        }
    }

    /// The state the decision was made on and the time it was judged at (for reservations,
    /// which derive their start from them, and composites, which refund from them).
    #[inline]
    pub(crate) fn judged_state(&self) -> (u64, Q::Instant) {
        (self.basis.word, self.basis.now)
    }

    /// The raw state word after the decision (for diagnostics and simulations); the fresh
    /// state for a key the table did not track.
    pub fn state_word(&self) -> u64 {
        match self.entry {
            Entry::RefusedUntilFresh | Entry::RefusedUntilAdmitted => Q::FRESH,
            Entry::Tracked | Entry::Inserted | Entry::Untracked | Entry::Fallback => {
                self.basis.word
            }
        }
    }
}

impl Decision<SlidingLog> {
    /// A sliding log's decision of `outcome` for `cost`, on `figures` counted on its log (or,
    /// for a new key without a log, those of an empty one or of the slot it waits on).
    #[inline]
    pub(crate) fn of_log(
        outcome: Outcome,
        cost: u64,
        quota: SlidingLog,
        figures: LogFigures,
    ) -> Self {
        let (allowed, entry) = outcome.entry(cost);
        Decision {
            allowed,
            entry,
            cost,
            basis: figures,
            quota,
        }
    }

    /// A decision the failure policy of a log kept out of reach (Redis) made: `figures` are
    /// those a fresh log would report after it (failing open), or nothing left and 1 ns waits
    /// (failing closed).
    #[cfg(feature = "redis")]
    #[cold]
    pub(crate) fn log_fallback(
        allowed: bool,
        cost: u64,
        quota: SlidingLog,
        figures: LogFigures,
    ) -> Self {
        Decision {
            allowed,
            entry: Entry::Fallback,
            cost,
            basis: figures,
            quota,
        }
    }

    /// The time the decision was judged at: the request's reading, or the latest recorded
    /// unit's time if the reading was behind it (what an admitted unit is recorded at).
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    /// use nanolimit::Timestamp;
    ///
    /// let limiter = SlidingLogLimiter::new(SlidingLog::per_second(10)?)?;
    /// let later = Timestamp::from_ns(2_000)?;
    /// assert_eq!(limiter.check_at(later).judged_at(), later);
    /// // A reading behind the log is judged at the latest unit's time.
    /// assert_eq!(limiter.check_at(Timestamp::from_ns(1_000)?).judged_at(), later);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn judged_at(&self) -> Timestamp {
        Timestamp::saturating_from_ns(self.basis.now_ns)
    }
}

impl<Q: Judge> Decision<Q> {
    /// Whether the shared store that holds the key's state (Redis) could not be reached in
    /// time, so that the limiter's failure policy made this decision (allowed when it fails
    /// open, denied when it fails closed), not the key's state. Always false for in-process
    /// limiters.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(10)?, ManualClock::new());
    /// assert!(!limiter.check().is_fallback());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn is_fallback(&self) -> bool {
        self.entry == Entry::Fallback
    }

    /// For a refused new key: nanoseconds until it may retry, at least 1.
    fn refused_wait_ns(&self) -> Option<u64> {
        let wait_ns = match self.entry {
            Entry::Tracked | Entry::Inserted | Entry::Untracked => return None,
            Entry::Fallback if self.allowed => return None,
            Entry::Fallback => 1,
            Entry::RefusedUntilFresh => self.quota.reset_after_ns(&self.basis, self.cost),
            Entry::RefusedUntilAdmitted => self.quota.retry_after_ns(&self.basis, self.cost),
        };
        Some(wait_ns.max(1))
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

    /// Whether a keyed table was full of live entries and did not track this key: the decision
    /// was made by its [`WhenFull`](crate::WhenFull) policy, not by the key's own state (an
    /// allowed untracked key, or a refused new key). Always false for direct limiters.
    ///
    /// ```
    /// use nanolimit::{FixedWindow, KeyedLimiter, ManualClock};
    ///
    /// // One shard of one bucket: eight slots.
    /// let limiter = KeyedLimiter::builder(FixedWindow::per_minute(5)?)
    ///     .capacity(1)
    ///     .shards(1)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// for key in 0..8u32 {
    ///     assert!(limiter.check(&key).is_allowed());
    /// }
    /// let refused = limiter.check(&8);
    /// assert!(refused.is_denied() && refused.is_untracked());
    /// assert_eq!(refused.remaining(), 0);
    /// // Not "retry now": the first slot frees when its minute ends.
    /// assert_eq!(refused.retry_after().as_secs(), 60);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_untracked(&self) -> bool {
        !matches!(
            self.entry,
            Entry::Tracked | Entry::Inserted | Entry::Fallback
        )
    }

    /// The cost this decision was for.
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// The quota's limit: the GCRA burst, or the limit per window (the binding member's, for a
    /// composite).
    pub fn limit(&self) -> u64 {
        self.quota.limit(&self.basis, self.cost)
    }

    /// How many unit-cost requests would pass right after this decision.
    pub fn remaining(&self) -> u64 {
        match self.entry {
            Entry::RefusedUntilFresh | Entry::RefusedUntilAdmitted => 0,
            Entry::Fallback if !self.allowed => 0,
            Entry::Tracked | Entry::Inserted | Entry::Untracked | Entry::Fallback => {
                self.quota.remaining(&self.basis, self.cost)
            }
        }
    }

    /// How long until the whole limit is available again, with no further traffic.
    pub fn reset_after(&self) -> Duration {
        Duration::from_nanos(self.reset_after_ns())
    }

    /// How long until this request would pass, with no other traffic: zero when allowed.
    pub fn retry_after(&self) -> Duration {
        Duration::from_nanos(self.retry_after_ns())
    }

    /// [`reset_after`](Self::reset_after) in nanoseconds.
    pub(crate) fn reset_after_ns(&self) -> u64 {
        match self.refused_wait_ns() {
            Some(wait_ns) => wait_ns,
            None => self.quota.reset_after_ns(&self.basis, self.cost),
        }
    }

    /// [`retry_after`](Self::retry_after) in nanoseconds.
    pub(crate) fn retry_after_ns(&self) -> u64 {
        if self.allowed {
            return 0;
        }
        match self.refused_wait_ns() {
            Some(wait_ns) => wait_ns,
            None => self.quota.retry_after_ns(&self.basis, self.cost),
        }
    }

    /// The position of the member whose figures this decision reports: 0 but for a
    /// [`Composite`](crate::composite::Composite)'s decision, whose binding member is the one
    /// with the smallest remaining when every member admitted (the one a client will run into
    /// first), else the denying member with the longest retry-after (the wait after which every
    /// member would admit, traffic aside). Ties go to the earlier member. Found only when
    /// asked, from the decisions already made, with no further atomic operation.
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
    /// assert_eq!(second.check().binding(), 0);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn binding(&self) -> usize {
        self.quota.binding(&self.basis, self.cost)
    }

    /// What the decision keeps of the state it was made on.
    #[inline]
    pub(crate) fn basis(&self) -> &Q::Basis {
        &self.basis
    }

    /// The quota the decision was made under (the request's tier, if it had one; a tuple of the
    /// members' quotas, for a composite).
    pub fn quota(&self) -> &Q {
        &self.quota
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
        RateLimitHeaders::new(
            self.limit(),
            self.remaining(),
            self.reset_after(),
            (!self.allowed).then(|| self.retry_after()),
        )
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
    /// `RateLimit-Limit`: the quota's limit.
    pub limit: u64,
    /// `RateLimit-Remaining`: unit requests that would pass now.
    pub remaining: u64,
    /// `RateLimit-Reset`: seconds until the whole limit is available again.
    pub reset_seconds: u64,
    /// `Retry-After`: seconds to wait, present only on a denial.
    pub retry_after_seconds: Option<u64>,
}

impl RateLimitHeaders {
    /// The header values of a decision's metadata: times in whole seconds rounded up (so a
    /// client that waits that long succeeds); `retry_after` only for a denial.
    pub(crate) fn new(
        limit: u64,
        remaining: u64,
        reset_after: Duration,
        retry_after: Option<Duration>,
    ) -> RateLimitHeaders {
        let ceil_seconds = |duration: Duration| duration.as_nanos().div_ceil(1_000_000_000) as u64;
        RateLimitHeaders {
            limit,
            remaining,
            reset_seconds: ceil_seconds(reset_after),
            retry_after_seconds: retry_after.map(ceil_seconds),
        }
    }
}

//! A sliding log's decision, with the same metadata as every other limiter's.

use super::ring::{Log, View};
use super::SlidingLog;
use crate::clock::Timestamp;
use crate::engine::decision::RateLimitHeaders;
use crate::sync::AtomicU64;
use std::time::Duration;

/// The outcome of a sliding log's check or peek: allowed or denied, the limit, what remains,
/// and when to come back (the values of the `RateLimit-*` and `Retry-After` headers, as a
/// [`Decision`](crate::Decision) gives them).
///
/// Times count from the time the decision was judged at (the reading, or the latest unit's
/// time if the reading was behind it). `reset_after` and `retry_after` are exact for the log the
/// decision was made on; [`remaining`](Self::remaining) is counted when asked (a search of the
/// log, kept off the check itself), on the log as it is then, at the decision's time: units
/// admitted since, at that time or before, count too, so read it right after the check (for a
/// keyed log: the log of the key's slot, which, if the slot has passed to another key since,
/// is that key's). A new key that a full keyed table admitted untracked reports the metadata
/// of a fresh log; one it refused reports the time until a slot frees. A Redis log's decision
/// (`RedisSlidingLogLimiter`) has every figure counted by its script when it was made.
///
/// ```
/// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
/// use nanolimit::ManualClock;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = SlidingLogLimiter::with_clock(SlidingLog::per_minute(3)?, clock.clone())?;
/// let first = limiter.check();
/// assert_eq!((first.limit(), first.remaining()), (3, 2));
/// assert_eq!(first.reset_after(), Duration::from_secs(60));
/// clock.advance(Duration::from_secs(20));
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_allowed());
/// let denied = limiter.check();
/// assert_eq!(denied.retry_after(), Duration::from_secs(40));
/// assert_eq!(denied.headers().retry_after_seconds, Some(40));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use = "a decision says whether the request may proceed"]
pub struct SlidingLogDecision<'log> {
    allowed: bool,
    cost: u64,
    quota: SlidingLog,
    now_ns: u64,
    retry_after_ns: u64,
    reset_after_ns: u64,
    remaining: Remaining<'log>,
    untracked: bool,
    fallback: bool,
}

/// Where a decision's `remaining` comes from (kept small: every check returns a decision).
#[derive(Debug, Clone, Copy)]
enum Remaining<'log> {
    /// Counted when asked, on the log the decision was made on: its position word and records.
    Counted {
        next: &'log AtomicU64,
        records: &'log [AtomicU64],
    },
    /// Known when decided: a new key judged without a log of its own, or a log kept elsewhere
    /// (Redis) that reported it.
    Fixed(u64),
}

impl<'log> SlidingLogDecision<'log> {
    /// The decision made on `view` for `cost` units: `recorded` if a check admitted them (they
    /// are then the latest units), not for a denial or a peek.
    #[inline]
    pub(super) fn new<const KEYED: bool>(
        view: View,
        cost: u64,
        recorded: bool,
        quota: SlidingLog,
        log: Log<'log, KEYED>,
    ) -> Self {
        SlidingLogDecision {
            allowed: view.fits,
            cost,
            quota,
            now_ns: view.now_ns,
            retry_after_ns: view.retry_after_ns,
            reset_after_ns: match recorded {
                true => quota.window_ns(),
                false => view.reset_after_ns,
            },
            remaining: Remaining::Counted {
                next: log.next(),
                records: log.records(),
            },
            untracked: false,
            fallback: false,
        }
    }

    /// The decision for a new key judged without a log of its own at `now_ns`: on an empty log
    /// (a peek that found a slot free for it), or by a full keyed table's policy (`untracked`:
    /// admitted untracked, `recorded` if by a check, or refused with `retry_after_ns` until a
    /// slot frees).
    pub(super) fn without_log(
        allowed: bool,
        recorded: bool,
        untracked: bool,
        cost: u64,
        quota: SlidingLog,
        now_ns: u64,
        retry_after_ns: u64,
    ) -> Self {
        SlidingLogDecision {
            allowed,
            cost,
            quota,
            now_ns,
            retry_after_ns,
            // A refused new key gets its whole limit once a slot frees for it.
            reset_after_ns: match (recorded, allowed) {
                (true, _) => quota.window_ns(),
                (false, false) => retry_after_ns,
                (false, true) => 0,
            },
            remaining: Remaining::Fixed(match (allowed, recorded) {
                (false, _) => 0,
                (true, true) => quota.limit() - cost,
                (true, false) => quota.limit(),
            }),
            untracked,
            fallback: false,
        }
    }

    /// A decision whose figures were computed where the log is kept (a Redis sorted set):
    /// `remaining` counts the units in the window at `now_ns` after the request (its own units
    /// if admitted), `fallback` if the failure policy made it without the log.
    #[allow(clippy::too_many_arguments)]
    #[cfg(feature = "redis")]
    pub(crate) fn reported(
        allowed: bool,
        cost: u64,
        quota: SlidingLog,
        now_ns: u64,
        retry_after_ns: u64,
        reset_after_ns: u64,
        remaining: u64,
        fallback: bool,
    ) -> SlidingLogDecision<'static> {
        SlidingLogDecision {
            allowed,
            cost,
            quota,
            now_ns,
            retry_after_ns,
            reset_after_ns,
            remaining: Remaining::Fixed(remaining),
            untracked: false,
            fallback,
        }
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

    /// The quota's limit: the most units in any window.
    pub fn limit(&self) -> u64 {
        self.quota.limit()
    }

    /// How many unit-cost requests would pass at the decision's time: the limit less the units
    /// in the window, counted now (see the type's documentation).
    pub fn remaining(&self) -> u64 {
        let log = match self.remaining {
            // A direct log's position word is a keyed one without the reuse flag.
            Remaining::Counted { next, records } => Log::<true>::of(next, records),
            Remaining::Fixed(remaining) => return remaining,
        };
        let in_window =
            log.units_in_window(self.quota.limit(), self.quota.window_ns(), self.now_ns);
        self.quota.limit().saturating_sub(in_window)
    }

    /// Whether a keyed sliding log's table was full of live entries and did not track this key:
    /// the decision was made by its [`WhenFull`](crate::WhenFull) policy (an allowed untracked
    /// key, or a refused new key, whose `retry_after` is the time until a slot frees). Always
    /// false for a direct log.
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    /// use nanolimit::ManualClock;
    ///
    /// // One shard of one bucket: eight slots.
    /// let limiter = KeyedSlidingLogLimiter::<u32>::builder(SlidingLog::per_minute(5)?)
    ///     .capacity(1)
    ///     .shards(1)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// for key in 0..8 {
    ///     assert!(limiter.check(&key).is_allowed());
    /// }
    /// let refused = limiter.check(&8);
    /// assert!(refused.is_denied() && refused.is_untracked());
    /// assert_eq!(refused.retry_after().as_secs(), 60);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_untracked(&self) -> bool {
        self.untracked
    }

    /// Whether a Redis sliding log (`RedisSlidingLogLimiter`, feature `redis`) got no answer
    /// from Redis in time, so that its failure policy made this decision, not the key's log.
    /// Always false in process.
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    ///
    /// let limiter = SlidingLogLimiter::new(SlidingLog::per_minute(3)?)?;
    /// assert!(!limiter.check().is_fallback());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_fallback(&self) -> bool {
        self.fallback
    }

    /// How long until the whole limit is available again (the latest unit has left the
    /// window), with no further traffic.
    pub fn reset_after(&self) -> Duration {
        Duration::from_nanos(self.reset_after_ns)
    }

    /// How long until this request would pass, with no other traffic: zero when allowed; else
    /// the time until the unit that must leave the window for it to fit has left.
    pub fn retry_after(&self) -> Duration {
        match self.allowed {
            true => Duration::ZERO,
            false => Duration::from_nanos(self.retry_after_ns),
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
        Timestamp::saturating_from_ns(self.now_ns)
    }

    /// The quota the decision was made under.
    pub fn quota(&self) -> &SlidingLog {
        &self.quota
    }

    /// Header values, in whole seconds rounded up (so a client that waits that long succeeds).
    ///
    /// ```
    /// use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
    /// use nanolimit::ManualClock;
    ///
    /// let limiter = SlidingLogLimiter::with_clock(SlidingLog::per_hour(1)?, ManualClock::new())?;
    /// let _ = limiter.check();
    /// let headers = limiter.check().headers();
    /// assert_eq!((headers.limit, headers.remaining), (1, 0));
    /// assert_eq!((headers.reset_seconds, headers.retry_after_seconds), (3_600, Some(3_600)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
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

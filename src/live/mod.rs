//! Live control: limits that change while a server runs, without rebuilding a limiter or
//! special-casing a tier in the caller. An operator raises a limit, a tier is sold without a
//! limit, a trial allowance is spent for good, a user's failed logins are forgiven once one
//! succeeds:
//!
//! | need | use | what it does |
//! |---|---|---|
//! | change a direct limiter's quota at runtime (Go's `SetLimit` / `SetBurst`) | [`LiveLimiter::set_quota`] | from any thread while others check; each check applies the old quota or the new one wholly |
//! | no limit for a tier (Go's `rate.Inf`) | [`Gcra::unlimited()`](crate::Gcra::unlimited) | the fastest rate with the largest burst: denies nothing a real workload sends; a tier of any GCRA limiter |
//! | N ever, then none | [`FixedWindow::burst_then_never(n)`](crate::FixedWindow::burst_then_never), [`SlidingWindow::burst_then_never(n)`](crate::SlidingWindow::burst_then_never) | a window longer than the clock's horizon: the count never resets |
//! | forget one key (clear a login limiter after a successful login) | [`KeyedLimiter::remove(&key)`](crate::KeyedLimiter::remove) | the key's next check is a new key's; other keys, and checks of them, are untouched |
//!
//! ```
//! use nanolimit::{FixedWindow, Gcra, KeyedLimiter, ManualClock, Request};
//! use nanolimit::live::LiveLimiter;
//! use std::time::Duration;
//!
//! // An operator lowers the global limit while request threads keep checking.
//! let global = LiveLimiter::with_clock(Gcra::per_second(100)?, ManualClock::new());
//! assert!(global.check_with(Request::cost(100))?.is_allowed());
//! global.set_quota(Gcra::per_second(10)?)?;
//! // 100 units at 100 per second left a second of debt: at 10 per second, the whole burst.
//! let denied = global.check();
//! assert!(denied.is_denied());
//! assert_eq!(denied.retry_after(), Duration::from_millis(100));
//! assert_eq!(global.quota().limit(), 10);
//!
//! // A free tier limited, a premium tier unlimited, on one keyed table.
//! let per_key = KeyedLimiter::builder(Gcra::per_second(1)?)
//!     .clock(ManualClock::new())
//!     .build()?;
//! let premium = per_key.tier(Gcra::unlimited())?;
//! assert!(per_key.check("free").is_allowed());
//! assert!(per_key.check("free").is_denied());
//! for _ in 0..1_000 {
//!     assert!(per_key.check_with("paying", Request::new().tier(premium))?.is_allowed());
//! }
//!
//! // A user's failed logins forgotten after a successful one.
//! assert!(per_key.remove("free"));
//! assert!(per_key.check("free").is_allowed());
//!
//! // A trial of three requests, ever; upgraded to ten, ever: the three used still count.
//! let clock = ManualClock::new();
//! let trials = KeyedLimiter::builder(FixedWindow::burst_then_never(3)?)
//!     .clock(clock.clone())
//!     .build()?;
//! let upgraded = trials.tier(FixedWindow::burst_then_never(10)?)?;
//! for _ in 0..3 {
//!     assert!(trials.check("trial-user").is_allowed());
//! }
//! clock.advance(Duration::from_secs(5 * 365 * 86_400));
//! let spent = trials.check("trial-user");
//! assert!(spent.is_denied());
//! assert!(spent.retry_after() > Duration::from_secs(10 * 365 * 86_400));
//! let request = Request::cost(7).tier(upgraded);
//! assert!(trials.check_with("trial-user", request)?.is_allowed());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # A live limiter
//!
//! [`LiveLimiter`] has the vocabulary of [`Limiter`](crate::Limiter) for checks (`check`,
//! `check_at`, `check_with`, `peek`, `peek_with`, `now`, `tier`) and
//! [`quota()`](LiveLimiter::quota), which returns the current quota. Its checks read the current
//! quota from a quota cell (`src/live/quota_cell.rs`: a sequence lock over the quota's words)
//! instead of a field: one Acquire load of a sequence word, the quota's words, and the sequence
//! again, all on one read-mostly cache line apart from the state's. A change is rare and takes a
//! lock; a check never does, and waits only while a change is being written (seven stores). A
//! [`Limiter`](crate::Limiter) whose quota never changes pays nothing for this.
//!
//! The state carries over as it does between [tiers](crate::Request::tier): GCRA keeps the debt a
//! state has run up in time (a lowered rate makes the debt take longer to repay; the new rate
//! and burst apply from the next check), window quotas keep their counts (a lowered limit may
//! leave nothing in the current window). So a new quota is validated as a tier is: expressed in
//! the state's units (those of the quota the limiter was built with), and refused where it
//! cannot share the state ([`QuotaError::IncompatibleQuota`] for a window quota of another
//! window length: the counts are per window), leaving the quota unchanged.
//!
//! # Unlimited and "never again"
//!
//! [`Gcra::unlimited()`](crate::Gcra::unlimited) is a real quota (16·10^9 units per second,
//! bursts of 2^62 − 1), so it keeps every invariant and shares a keyed table with limited
//! tiers; [`Gcra::is_unlimited()`](crate::Gcra::is_unlimited) tells a server not to send
//! rate-limit headers for it. A "burst then never" denial reports a `retry_after` past the
//! clock's horizon (years): never zero, so `Retry-After` does not invite the client straight
//! back. GCRA has no such quota: its state is a debt in time, which a zero rate could never
//! repay, and a burst of `n` never refilled would share a state with no other GCRA quota.
//!
//! # Forgetting a key
//!
//! [`KeyedLimiter::remove(&key)`](crate::KeyedLimiter::remove) returns whether the table held
//! the key. It takes the key's shard insert lock, as an insert does, and never makes a check
//! wait or slow down; a check of the key racing it is decided on the old state or as a new
//! key's, never elsewhere (model-checked with loom). The removed entry keeps its slot until its
//! state would have been fresh, then is reused as a fresh entry is: a removal frees no capacity
//! sooner, and in a full table the key's next check is a new key's under the table's
//! [`WhenFull`](crate::WhenFull). Keyed sliding logs and keyed in-flight limiters have no
//! `remove`.

mod quota_cell;

use crate::clock::{Clock, QuantaClock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::operation::Consume;
use crate::engine::request::Request;
use crate::limiter::core::Core;
use crate::limiter::counters::NoCounters;
use crate::quota::Quota;
use crate::quota::QuotaError;
use crate::store::word::Word;
use crate::sync::Mutex;
use crossbeam_utils::CachePadded;
use quota_cell::QuotaCell;

/// A direct limiter whose quota can be changed at runtime with
/// [`set_quota`](Self::set_quota), from any thread, while others check.
///
/// The same vocabulary as [`Limiter`](crate::Limiter) for checks (`check`, `check_at`, `check_with`, `peek`,
/// `peek_with`, `now`, `tier`); each reads the current quota without a lock and judges the
/// request under it wholly, the old quota or the new one, never a mix. [`quota`](Self::quota)
/// returns the current quota by value. No reservations or waits: a booking made under one rate
/// would not be the same booking under the next.
///
/// A check costs more instructions than a [`Limiter`](crate::Limiter)'s (the quota's words are loaded and the
/// sequence checked; the figures are in the CHANGELOG); a [`Limiter`](crate::Limiter) whose quota never
/// changes pays nothing for this type.
///
/// ```
/// use nanolimit::{Gcra, ManualClock};
/// use nanolimit::live::LiveLimiter;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = Arc::new(LiveLimiter::with_clock(Gcra::per_second(2)?, clock.clone()));
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_denied());
///
/// // Another thread raises the limit (Go's SetLimit and SetBurst in one call).
/// let operator = Arc::clone(&limiter);
/// std::thread::spawn(move || operator.set_quota(Gcra::per_second(10)?))
///     .join()
///     .unwrap()?;
/// // The state carried over: two units of debt at the old rate (1 s), judged at the new one.
/// assert_eq!(limiter.quota().limit(), 10);
/// assert_eq!(limiter.peek().remaining(), 0);
/// clock.advance(Duration::from_millis(100));
/// assert!(limiter.check().is_allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LiveLimiter<Q: Quota, C: Clock = QuantaClock> {
    /// The state, the judging lead, the clock, and (as its quota) the one the limiter was
    /// built with, whose units the state counts in.
    core: Core<Q, Word, C, NoCounters>,
    /// The current quota, in the state's units.
    current: CachePadded<QuotaCell>,
    /// Serialises changes of the quota (the cell takes one writer at a time).
    changing: Mutex<()>,
}

impl<Q: Quota> LiveLimiter<Q, QuantaClock> {
    /// A live limiter on the default clock ([`QuantaClock`]), starting with `quota`.
    ///
    /// ```
    /// use nanolimit::SlidingWindow;
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::new(SlidingWindow::per_minute(100)?);
    /// assert!(limiter.check().is_allowed());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn new(quota: Q) -> Self {
        Self::with_clock(quota, QuantaClock::new())
    }
}

impl<Q: Quota, C: Clock> LiveLimiter<Q, C> {
    /// A live limiter reading time from `clock`, starting with `quota`, whose units its state
    /// keeps for good (later quotas are expressed in them, as tiers are).
    ///
    /// ```
    /// use nanolimit::{FixedWindow, ManualClock};
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::with_clock(FixedWindow::per_second(5)?, ManualClock::new());
    /// assert_eq!(limiter.quota().limit(), 5);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn with_clock(quota: Q, clock: C) -> Self {
        LiveLimiter {
            current: CachePadded::new(QuotaCell::new(&quota)),
            core: Core::new(Word::new(Q::FRESH), quota, clock, NoCounters),
            changing: Mutex::new(()),
        }
    }

    /// The quota checks apply now, in the state's units (as a [tier](Request::tier) is).
    ///
    /// ```
    /// use nanolimit::Gcra;
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::new(Gcra::per_second(5)?);
    /// limiter.set_quota(Gcra::per_minute(60)?.with_burst(3)?)?;
    /// assert_eq!((limiter.quota().count(), limiter.quota().limit()), (60, 3));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn quota(&self) -> Q {
        self.current.load()
    }

    /// Makes `quota` the one every later check applies, from any thread, while others check.
    /// The state carries over (see the [module](self)): a check that races this call is judged
    /// wholly under the old quota or wholly under the new one.
    ///
    /// Errors, changing nothing, when `quota` cannot share the state: a window quota of another
    /// window length ([`QuotaError::IncompatibleQuota`]), or a GCRA quota whose burst does not
    /// fit the state's scale (as [`Limiter::tier`](crate::Limiter::tier)). Raising a GCRA burst also raises how far
    /// ahead of the time it was written the limiter accepts a state to be, for good (see
    /// [`Request::tier`]).
    ///
    /// ```
    /// use nanolimit::{FixedWindow, ManualClock, QuotaError};
    /// use nanolimit::live::LiveLimiter;
    /// use std::time::Duration;
    ///
    /// let limiter = LiveLimiter::with_clock(FixedWindow::per_minute(3)?, ManualClock::new());
    /// for _ in 0..3 {
    ///     assert!(limiter.check().is_allowed());
    /// }
    /// assert!(limiter.check().is_denied());
    /// // The counts carry over: a limit of 5 admits two more in this window.
    /// limiter.set_quota(FixedWindow::per_minute(5)?)?;
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.check().is_denied());
    /// // Another window length cannot share the counts.
    /// let per_second = FixedWindow::new(5, Duration::from_secs(1))?;
    /// assert_eq!(limiter.set_quota(per_second), Err(QuotaError::IncompatibleQuota));
    /// assert_eq!(limiter.quota().limit(), 5);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn set_quota(&self, quota: Q) -> Result<(), QuotaError> {
        // A poisoned lock only means another change panicked (the cell never does by itself):
        // the cell's protocol does not depend on the lock's data.
        let _changing = self
            .changing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Validated and rebased as a tier is, which raises the judging lead before any state
        // is written under the new quota (the cell's Release stores publish the raise).
        let tier = self.core.tier(quota)?;
        self.current.store(&tier);
        Ok(())
    }

    /// The clock this limiter reads.
    ///
    /// ```
    /// use nanolimit::live::LiveLimiter;
    /// use nanolimit::{Clock, Gcra, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = LiveLimiter::with_clock(Gcra::per_second(5)?, ManualClock::new());
    /// limiter.clock().advance(Duration::from_secs(1));
    /// assert_eq!(limiter.clock().now().as_ns(), 1_000_000_000);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.core.clock
    }

    /// A reading of this limiter's clock, for [`check_at`](Self::check_at) and
    /// [`Request::at`].
    ///
    /// ```
    /// use nanolimit::Gcra;
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::new(Gcra::per_second(1)?);
    /// let now = limiter.now();
    /// assert!(limiter.check_at(now).is_allowed());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.core.clock.now()
    }

    /// `quota` made ready for requests to this limiter ([`Request::tier`]), as
    /// [`Limiter::tier`](crate::Limiter::tier): a tier keeps its own quota when the limiter's changes.
    ///
    /// ```
    /// use nanolimit::{Gcra, ManualClock, Request};
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::with_clock(Gcra::per_second(1)?, ManualClock::new());
    /// let bulk = limiter.tier(Gcra::per_second(1)?.with_burst(10)?)?;
    /// limiter.set_quota(Gcra::per_second(2)?)?;
    /// assert!(limiter.check_with(Request::cost(8).tier(bulk))?.is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tier(&self, quota: Q) -> Result<Q, QuotaError> {
        self.core.tier(quota)
    }

    /// Checks one unit now under the current quota: consumes it if it fits.
    ///
    /// ```
    /// use nanolimit::Gcra;
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::new(Gcra::per_second(2)?);
    /// assert!(limiter.check().is_allowed());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn check(&self) -> Decision<Q> {
        self.check_at(self.core.clock.now())
    }

    /// Checks one unit at `now`, a reading the caller already holds: no clock read.
    ///
    /// ```
    /// use nanolimit::Gcra;
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::new(Gcra::per_second(1)?);
    /// let now = limiter.now();
    /// assert!(limiter.check_at(now).is_allowed());
    /// assert!(limiter.check_at(now).is_denied());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn check_at(&self, now: Timestamp) -> Decision<Q> {
        let quota = self.quota();
        // Every quota's limit is at least 1.
        self.core.decide(Consume, (), &quota, 1, quota.instant(now))
    }

    /// Checks `request` (cost, time, tier; see [`Request`]) under the current quota, or its
    /// tier's: consumes its cost, all or nothing, if it fits. Errors when it can never pass
    /// there (a cost above the limit).
    ///
    /// ```
    /// use nanolimit::{Gcra, ManualClock, Request};
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::with_clock(Gcra::per_second(10)?, ManualClock::new());
    /// assert!(limiter.check_with(Request::cost(20)).is_err());
    /// limiter.set_quota(Gcra::per_second(10)?.with_burst(20)?)?;
    /// assert!(limiter.check_with(Request::cost(20))?.is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_with(&self, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        let quota = self.quota();
        let resolved = request.resolve(&quota, &self.core.lead, &self.core.clock)?;
        Ok(self
            .core
            .decide(Consume, (), &resolved.quota, resolved.cost, resolved.now))
    }

    /// Whether one unit would pass now under the current quota, consuming nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, ManualClock};
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::with_clock(Gcra::per_second(1)?, ManualClock::new());
    /// assert!(limiter.check().is_allowed());
    /// assert!(limiter.peek().is_denied());
    /// limiter.set_quota(Gcra::per_second(1)?.with_burst(2)?)?;
    /// assert!(limiter.peek().is_allowed());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn peek(&self) -> Decision<Q> {
        let quota = self.quota();
        let now = quota.instant(self.core.clock.now());
        self.core.peek((), &quota, 1, now)
    }

    /// Whether `request` would pass under the current quota (or its tier's), consuming
    /// nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, ManualClock, Request};
    /// use nanolimit::live::LiveLimiter;
    ///
    /// let limiter = LiveLimiter::with_clock(Gcra::per_minute(10)?, ManualClock::new());
    /// assert!(limiter.check_with(Request::cost(8))?.is_allowed());
    /// assert!(limiter.peek_with(Request::cost(3))?.is_denied());
    /// limiter.set_quota(Gcra::per_minute(20)?)?;
    /// assert!(limiter.peek_with(Request::cost(3))?.is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_with(&self, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        let quota = self.quota();
        let resolved = request.resolve(&quota, &self.core.lead, &self.core.clock)?;
        Ok(self
            .core
            .peek((), &resolved.quota, resolved.cost, resolved.now))
    }
}

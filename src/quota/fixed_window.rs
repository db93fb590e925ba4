//! Fixed-window counter: at most `limit` units per window, windows aligned to the clock's
//! origin.
//!
//! # State word
//!
//! | bits | field | constant |
//! |---|---|---|
//! | 0..24 | `count`: cost admitted in the stored window | `COUNT_SHIFT`, `COUNT_MASK` |
//! | 24..64 | `window_index`: the stored window's index, modulo 2^40 | `WINDOW_INDEX_SHIFT`, `WINDOW_INDEX_MASK` |
//!
//! # Readings behind the stored window
//!
//! Index differences are read as in the sliding window. A reading behind the stored window (a
//! clock that stepped back, or one taken before a preemption) is judged at the start of the
//! stored window: it admits nothing extra and writes no smaller word (see
//! [readings behind the state](crate::quota#readings-behind-the-state) for the bound and its
//! figures).

use super::window::{WindowInstant, WindowLength};
use super::{Encoded, Quota, Sealed, SlotState, Step, QUOTA_WORDS};
use crate::clock::Timestamp;
use crate::quota::QuotaError;
use core::time::Duration;

/// Width of `count`.
pub(crate) const COUNT_BITS: u32 = 24;
/// Position of `count`.
pub(crate) const COUNT_SHIFT: u32 = 0;
/// Mask of `count` once shifted down.
pub(crate) const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Position of `window_index`.
pub(crate) const WINDOW_INDEX_SHIFT: u32 = COUNT_BITS;
/// Mask of `window_index` once shifted down.
pub(crate) const WINDOW_INDEX_MASK: u64 = (1 << (64 - COUNT_BITS)) - 1;
/// For windows short enough that their index wraps (below about 0.53 ms), how many windows a
/// reading may lag behind the stored window and still be read as behind it, rather than as a
/// key idle for nearly 2^40 windows.
pub(crate) const BACKWARD_WINDOWS: u64 = 1 << 30;
/// The largest limit per window.
pub(crate) const MAX_LIMIT: u64 = COUNT_MASK - 15;
/// The shortest window.
pub(crate) const MIN_WINDOW_NS: u64 = 1_000;

/// A fixed-window-counter quota: at most `limit` units per window of length `window`, windows
/// starting at multiples of `window` from the clock's origin.
///
/// Cheapest of the three and easy to explain to clients (the counter resets at `reset_after`),
/// at the price of allowing up to `2 × limit` across a window boundary.
///
/// Limits, checked at construction: `1 <= limit <= 16,777,200`; `1 µs <= window <= ~18 years`.
///
/// # Rule
///
/// A request of cost `n` passes iff `count + n <= limit`, where `count` is 0 once the stored
/// window is over.
///
/// # Example
///
/// ```
/// use nanolimit::{FixedWindow, Limiter, ManualClock};
///
/// let limiter = Limiter::with_clock(FixedWindow::per_second(2)?, ManualClock::new());
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_denied());
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedWindow {
    limit: u64,
    length: WindowLength,
    /// The largest index distance read as time moving forward (see
    /// [`WindowLength::forward_windows`]).
    forward_windows: u64,
}

impl FixedWindow {
    /// The largest limit per window.
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// The shortest window.
    pub const MIN_WINDOW: Duration = Duration::from_nanos(MIN_WINDOW_NS);

    /// At most `limit` units per window of length `window`.
    pub const fn new(limit: u64, window: Duration) -> Result<FixedWindow, QuotaError> {
        match WindowLength::with_limit(limit, MAX_LIMIT, window, MIN_WINDOW_NS) {
            Ok(length) => Ok(FixedWindow {
                limit,
                length,
                forward_windows: length.forward_windows(WINDOW_INDEX_MASK, BACKWARD_WINDOWS),
            }),
            Err(error) => Err(error),
        }
    }

    /// At most `limit` units ever, then none: "burst then never", for a trial allowance or a
    /// tier whose allowance does not renew. Its window is longer than any clock's
    /// [horizon](crate::Timestamp::HORIZON), so a count never resets; its state is a count
    /// like any window quota's, so quotas made by this constructor (with different limits) are
    /// tiers of one another, and of nothing else (window tiers share a window length).
    ///
    /// A denial's [`retry_after`](crate::Decision::retry_after) (and `reset_after`) is at least
    /// the time to just past the horizon, about 18 years from the clock's origin: never zero,
    /// so an HTTP `Retry-After` tells the client not to come back. Errors as [`new`](Self::new) does
    /// for a limit of zero or above [`MAX_LIMIT`](Self::MAX_LIMIT) (16,777,200).
    ///
    /// ```
    /// use nanolimit::{FixedWindow, Limiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let trial = Limiter::with_clock(FixedWindow::burst_then_never(2)?, clock.clone());
    /// assert!(trial.check().is_allowed());
    /// clock.advance(Duration::from_secs(10 * 365 * 86_400));
    /// assert!(trial.check().is_allowed());
    /// let denied = trial.check();
    /// assert!(denied.is_denied());
    /// assert!(denied.retry_after() > Duration::from_secs(8 * 365 * 86_400));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn burst_then_never(limit: u64) -> Result<FixedWindow, QuotaError> {
        if limit == 0 {
            return Err(QuotaError::ZeroLimit);
        }
        if limit > MAX_LIMIT {
            return Err(QuotaError::LimitTooLarge {
                requested: limit,
                max: MAX_LIMIT,
            });
        }
        let length = WindowLength::BEYOND_HORIZON;
        Ok(FixedWindow {
            limit,
            length,
            forward_windows: length.forward_windows(WINDOW_INDEX_MASK, BACKWARD_WINDOWS),
        })
    }

    /// At most `limit` units per second.
    pub const fn per_second(limit: u64) -> Result<FixedWindow, QuotaError> {
        FixedWindow::new(limit, Duration::from_secs(1))
    }

    /// At most `limit` units per minute.
    pub const fn per_minute(limit: u64) -> Result<FixedWindow, QuotaError> {
        FixedWindow::new(limit, Duration::from_secs(60))
    }

    /// At most `limit` units per hour.
    pub const fn per_hour(limit: u64) -> Result<FixedWindow, QuotaError> {
        FixedWindow::new(limit, Duration::from_secs(3_600))
    }

    /// The limit per window, as configured.
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// The window length, as configured.
    pub const fn window(&self) -> Duration {
        Duration::from_nanos(self.length.window_ns)
    }

    /// How many windows a reading may lag behind a key's stored window and still be judged in
    /// it (granting no capacity): 2^30 for windows whose index wraps (below about 0.53 ms),
    /// more for longer ones ([figures](crate::quota#readings-behind-the-state)).
    ///
    /// ```
    /// use nanolimit::{FixedWindow, Timestamp};
    /// use std::time::Duration;
    ///
    /// let seconds_to_the_horizon = Timestamp::HORIZON.since_origin().as_secs();
    /// assert!(FixedWindow::per_second(10)?.backward_windows() > seconds_to_the_horizon);
    /// let per_microsecond = FixedWindow::new(10, Duration::from_micros(1))?;
    /// assert_eq!(per_microsecond.backward_windows(), 1 << 30);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn backward_windows(&self) -> u64 {
        WINDOW_INDEX_MASK - self.forward_windows
    }

    /// The window length and the largest index distance read as time moving forward: what a
    /// store outside the process needs to apply this quota's step (the Redis scripts,
    /// `src/redis/`).
    #[cfg(feature = "redis")]
    pub(crate) fn length_and_forward_windows(&self) -> (WindowLength, u64) {
        (self.length, self.forward_windows)
    }

    /// Unpacks `state` as seen at `now`, with the window roll-over, idle expiry and
    /// backward-clock rules applied.
    #[inline]
    fn view(&self, state: u64, now: WindowInstant) -> View {
        let stored_index = state >> WINDOW_INDEX_SHIFT;
        let count = (state >> COUNT_SHIFT) & COUNT_MASK;
        let now_index = now.window_index & WINDOW_INDEX_MASK;
        let distance = now_index.wrapping_sub(stored_index) & WINDOW_INDEX_MASK;
        if distance == 0 {
            View {
                index: stored_index,
                count,
                elapsed_ns: now.elapsed_ns,
            }
        } else if distance > self.forward_windows && count != 0 {
            // A reading behind the stored window: the stored window still counts, judged at its
            // start, the earliest time the state can have been written.
            View {
                index: stored_index,
                count,
                elapsed_ns: 0,
            }
        } else {
            View {
                index: now_index,
                count: 0,
                elapsed_ns: now.elapsed_ns,
            }
        }
    }
}

/// A state word unpacked at the time a decision is judged at.
#[derive(Debug, Clone, Copy)]
struct View {
    /// The window the decision is judged in.
    index: u64,
    /// Cost admitted in it.
    count: u64,
    /// How far into it the decision is judged.
    elapsed_ns: u64,
}

impl Encoded for FixedWindow {
    fn to_words(&self) -> [u64; QUOTA_WORDS] {
        self.length.quota_words(self.limit, self.forward_windows)
    }

    fn from_words(words: [u64; QUOTA_WORDS]) -> FixedWindow {
        let (limit, forward_windows, length) = WindowLength::from_quota_words(words);
        FixedWindow {
            limit,
            forward_windows,
            length,
        }
    }
}

impl Sealed for FixedWindow {
    fn rebase(&self, base: &FixedWindow) -> Result<FixedWindow, QuotaError> {
        self.length.rebase(*self, &base.length)
    }

    fn shares_units_with(&self, base: &FixedWindow) -> bool {
        self.length.shares_units_with(&base.length)
    }

    /// Counts add up whatever the order, so while the state still names the window `written`
    /// counted `cost` in, taking `cost` off its count is exact: the count the window would hold
    /// without that admission, and no lower than the word that admission replaced. Once the
    /// state names another window, the admission's units count nowhere any more: nothing to
    /// give back.
    #[inline]
    fn refund_step(&self, state: u64, written: u64, cost: u64) -> Step {
        let count = (state >> COUNT_SHIFT) & COUNT_MASK;
        if state >> WINDOW_INDEX_SHIFT != written >> WINDOW_INDEX_SHIFT || count < cost {
            return Step::Deny;
        }
        Step::Allow(state - (cost << COUNT_SHIFT))
    }
}

impl Quota for FixedWindow {
    #[inline]
    fn instant(&self, now: Timestamp) -> WindowInstant {
        self.length.instant(now)
    }

    #[inline]
    fn step(&self, state: u64, now: WindowInstant, cost: u64) -> Step {
        let view = self.view(state, now);
        if cost <= self.limit && view.count + cost <= self.limit {
            Step::Allow((view.index << WINDOW_INDEX_SHIFT) | ((view.count + cost) << COUNT_SHIFT))
        } else {
            Step::Deny
        }
    }

    #[inline]
    fn limit(&self) -> u64 {
        self.limit
    }

    fn limit_window(&self) -> Duration {
        self.window()
    }

    fn remaining(&self, state: u64, now: WindowInstant) -> u64 {
        self.limit.saturating_sub(self.view(state, now).count)
    }

    fn reset_after_ns(&self, state: u64, now: WindowInstant) -> u64 {
        let view = self.view(state, now);
        if view.count == 0 {
            0
        } else {
            self.length.window_ns - view.elapsed_ns
        }
    }

    fn retry_after_ns(&self, state: u64, now: WindowInstant, cost: u64) -> u64 {
        let view = self.view(state, now);
        if view.count.saturating_add(cost) <= self.limit {
            0
        } else {
            self.length.window_ns - view.elapsed_ns
        }
    }

    #[inline]
    fn is_fresh(&self, state: u64, now: WindowInstant) -> bool {
        self.view(state, now).count == 0
    }
}

impl SlotState for FixedWindow {
    type Instant = WindowInstant;

    /// The window judged in: a count resets when its window ends.
    #[inline]
    fn freshness_rank(&self, state: u64, now: WindowInstant) -> Option<u64> {
        let view = self.view(state, now);
        (view.count != 0).then_some(view.index)
    }

    #[inline]
    fn time_word(&self, now: WindowInstant) -> u64 {
        self.length.time_word(now)
    }

    #[inline]
    fn no_earlier_than(&self, now: WindowInstant, time_word: u64) -> WindowInstant {
        self.length.no_earlier_than(now, time_word)
    }

    /// A count is gone when its window ends: fresh from the start of the next window.
    #[inline]
    fn fresh_since_word(&self, state: u64, now: WindowInstant) -> u64 {
        let stored_index = state >> WINDOW_INDEX_SHIFT;
        let count = (state >> COUNT_SHIFT) & COUNT_MASK;
        let distance =
            (now.window_index & WINDOW_INDEX_MASK).wrapping_sub(stored_index) & WINDOW_INDEX_MASK;
        if count == 0 || distance == 0 || distance > self.forward_windows {
            // No count, or one idle for longer than the index tells: fresh for ever.
            return 0;
        }
        self.length.window_start_word(now, distance, 1)
    }
}

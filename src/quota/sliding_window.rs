//! Sliding-window counter: the previous window's count, weighted by the part of it still
//! inside the sliding window, plus the current window's count.
//!
//! # State word
//!
//! | bits | field | constant |
//! |---|---|---|
//! | 0..20 | `current_count`: cost admitted in the current window | `CURRENT_COUNT_SHIFT`, `COUNT_MASK` |
//! | 20..40 | `previous_count`: cost admitted in the window before it | `PREVIOUS_COUNT_SHIFT`, `COUNT_MASK` |
//! | 40..64 | `window_index`: the current window's index, modulo 2^24 | `WINDOW_INDEX_SHIFT`, `WINDOW_INDEX_MASK` |
//!
//! # Wrapped window indices, and readings behind the stored window
//!
//! The index is stored modulo 2^24. Reading the stored index against now's, a difference `d`
//! (mod 2^24) of 0 is the same window, 1 the next, and any other up to the quota's forward
//! limit is "long ago": the state is fresh. A larger difference is a reading behind the stored
//! window, judged at the start of the stored window, where the previous window weighs the
//! most: it admits nothing extra and writes no smaller word (see
//! [readings behind the state](crate::quota#readings-behind-the-state) for the bound and its
//! figures).

use super::window::{WindowInstant, WindowLength};
use super::{Encoded, Quota, Sealed, SlotState, Step, QUOTA_WORDS};
use crate::clock::Timestamp;
use crate::quota::QuotaError;
use core::time::Duration;

/// Width of each count field.
pub(crate) const COUNT_BITS: u32 = 20;
/// Mask of a count field once shifted down.
pub(crate) const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Position of `current_count`.
pub(crate) const CURRENT_COUNT_SHIFT: u32 = 0;
/// Position of `previous_count`.
pub(crate) const PREVIOUS_COUNT_SHIFT: u32 = COUNT_BITS;
/// Position of `window_index`.
pub(crate) const WINDOW_INDEX_SHIFT: u32 = 2 * COUNT_BITS;
/// Width of `window_index`.
pub(crate) const WINDOW_INDEX_BITS: u32 = 64 - WINDOW_INDEX_SHIFT;
/// Mask of `window_index` once shifted down.
pub(crate) const WINDOW_INDEX_MASK: u64 = (1 << WINDOW_INDEX_BITS) - 1;
/// For windows short enough that their index wraps (below about 34.5 s), how many windows a
/// reading may lag behind the stored window and still be read as behind it, rather than as a
/// key idle for nearly 2^24 windows.
pub(crate) const BACKWARD_WINDOWS: u64 = 1 << 16;
/// The largest limit per window (a few values are kept clear of the count field's maximum).
pub(crate) const MAX_LIMIT: u64 = COUNT_MASK - 15;
/// The shortest window.
pub(crate) const MIN_WINDOW_NS: u64 = 1_000_000;

/// A sliding-window-counter quota: at most `limit` units in any window of `window` length,
/// estimated by weighting the previous fixed window (the approach of Cloudflare's limiter), at
/// a fraction of the memory of an exact log.
///
/// Limits, checked at construction: `1 <= limit <= 1,048,560`; `1 ms <= window <= ~18 years`.
/// Across a window boundary it can admit up to about twice the limit in one window-long
/// interval (see [the overshoot](#overshoot) below).
///
/// # Rule
///
/// With `W` the window length, `e` the time elapsed in the current window and `L` the limit,
/// the estimate of the cost admitted in the last `W` is
/// `⌊previous_count × (W − e) / W⌋ + current_count`, and a request of cost `n` passes iff
/// `estimate + n <= L`. It is computed without division, exactly in integers:
/// `current_count + n <= L` and `previous_count × (W − e) < (L − current_count − n + 1) × W`.
///
/// Rounding the previous window's share down makes a saturated key admit exactly `L` per
/// window (with an exact fraction, the previous window's share never reaches 0 before the
/// window ends, and a saturated key would get `L − 1`), as long as the limit is below the
/// window length in nanoseconds (always, unless over 10^6 per 1 ms window); the exact weighted
/// count may then exceed `L` by less than one unit.
///
/// # Overshoot
///
/// The estimate assumes the previous window's traffic was spread evenly over it. When it was
/// not, the count in a window-long interval that straddles a boundary can approach twice the
/// limit: with [`SlidingWindow::per_second(10)`](SlidingWindow::per_second), 10 requests at
/// 0.9 s and then one attempt every 100 ms admit 18 requests in [0.9 s, 1.9 s) (the test
/// `the_overshoot_across_a_boundary_is_as_documented` replays it). Any sliding-window counter
/// does this; in any interval of one window length it admits less than `2 × L`. Bursty on/off
/// traffic is also admitted at less than `L` per window. When every window of length `W` must
/// hold at most `L`, pick an exact sliding log instead (one timestamp per admitted unit; not in
/// this version of the crate), or a fixed window of half the limit.
///
/// # Example
///
/// ```
/// use nanolimit::{Limiter, ManualClock, SlidingWindow};
///
/// let quota = SlidingWindow::per_minute(100)?;
/// let limiter = Limiter::with_clock(quota, ManualClock::new());
/// assert_eq!(limiter.check().remaining(), 99);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlidingWindow {
    limit: u64,
    length: WindowLength,
    /// The largest index distance read as time moving forward (see
    /// [`WindowLength::forward_windows`]).
    forward_windows: u64,
}

impl SlidingWindow {
    /// The largest limit per window.
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// The shortest window.
    pub const MIN_WINDOW: Duration = Duration::from_nanos(MIN_WINDOW_NS);

    /// At most `limit` units in any sliding window of length `window`.
    pub const fn new(limit: u64, window: Duration) -> Result<SlidingWindow, QuotaError> {
        match WindowLength::with_limit(limit, MAX_LIMIT, window, MIN_WINDOW_NS) {
            Ok(length) => Ok(SlidingWindow {
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
    /// for a limit of zero or above [`MAX_LIMIT`](Self::MAX_LIMIT) (1,048,560).
    ///
    /// ```
    /// use nanolimit::{SlidingWindow, Limiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let trial = Limiter::with_clock(SlidingWindow::burst_then_never(2)?, clock.clone());
    /// assert!(trial.check().is_allowed());
    /// clock.advance(Duration::from_secs(10 * 365 * 86_400));
    /// assert!(trial.check().is_allowed());
    /// let denied = trial.check();
    /// assert!(denied.is_denied());
    /// assert!(denied.retry_after() > Duration::from_secs(8 * 365 * 86_400));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn burst_then_never(limit: u64) -> Result<SlidingWindow, QuotaError> {
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
        Ok(SlidingWindow {
            limit,
            length,
            forward_windows: length.forward_windows(WINDOW_INDEX_MASK, BACKWARD_WINDOWS),
        })
    }

    /// At most `limit` units per sliding second.
    pub const fn per_second(limit: u64) -> Result<SlidingWindow, QuotaError> {
        SlidingWindow::new(limit, Duration::from_secs(1))
    }

    /// At most `limit` units per sliding minute.
    pub const fn per_minute(limit: u64) -> Result<SlidingWindow, QuotaError> {
        SlidingWindow::new(limit, Duration::from_secs(60))
    }

    /// At most `limit` units per sliding hour.
    pub const fn per_hour(limit: u64) -> Result<SlidingWindow, QuotaError> {
        SlidingWindow::new(limit, Duration::from_secs(3_600))
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
    /// it (granting no capacity): 2^16 for windows whose index wraps (below about 34.5 s), more
    /// for longer ones ([figures](crate::quota#readings-behind-the-state)).
    ///
    /// ```
    /// use nanolimit::SlidingWindow;
    ///
    /// let minutes_in_13_years = 13 * 365 * 24 * 60;
    /// assert!(SlidingWindow::per_minute(100)?.backward_windows() > minutes_in_13_years);
    /// assert_eq!(SlidingWindow::per_second(100)?.backward_windows(), 1 << 16);
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
        let previous = (state >> PREVIOUS_COUNT_SHIFT) & COUNT_MASK;
        let current = (state >> CURRENT_COUNT_SHIFT) & COUNT_MASK;
        let now_index = now.window_index & WINDOW_INDEX_MASK;
        let distance = now_index.wrapping_sub(stored_index) & WINDOW_INDEX_MASK;
        if distance == 0 {
            View {
                index: stored_index,
                previous,
                current,
                elapsed_ns: now.elapsed_ns,
            }
        } else if distance == 1 {
            View {
                index: now_index,
                previous: current,
                current: 0,
                elapsed_ns: now.elapsed_ns,
            }
        } else if distance > self.forward_windows && (previous | current) != 0 {
            // A reading behind the stored window: judged at the stored window's start, the
            // earliest time the state can have been written, where the previous window weighs
            // the most.
            View {
                index: stored_index,
                previous,
                current,
                elapsed_ns: 0,
            }
        } else {
            View {
                index: now_index,
                previous: 0,
                current: 0,
                elapsed_ns: now.elapsed_ns,
            }
        }
    }

    #[inline]
    fn pack(index: u64, previous: u64, current: u64) -> u64 {
        (index << WINDOW_INDEX_SHIFT)
            | (previous << PREVIOUS_COUNT_SHIFT)
            | (current << CURRENT_COUNT_SHIFT)
    }

    /// The elapsed time from which `previous × (W − e) < room × W` holds in a window whose
    /// previous count is `previous` (`room >= 1`), or `None` if it never holds in that window.
    fn earliest_elapsed(&self, previous: u64, room: u64) -> Option<u64> {
        let window_ns = self.length.window_ns as u128;
        if previous == 0 {
            return Some(0);
        }
        // The longest remaining time x = W − e with previous × x < room × W.
        let longest_remaining = (room as u128 * window_ns).div_ceil(previous as u128) - 1;
        if longest_remaining == 0 {
            return None;
        }
        Some(window_ns.saturating_sub(longest_remaining) as u64)
    }
}

/// A state word unpacked at the time a decision is judged at.
#[derive(Debug, Clone, Copy)]
struct View {
    /// The window the decision is judged in.
    index: u64,
    /// Cost admitted in the window before it.
    previous: u64,
    /// Cost admitted in it.
    current: u64,
    /// How far into it the decision is judged.
    elapsed_ns: u64,
}

impl Encoded for SlidingWindow {
    fn to_words(&self) -> [u64; QUOTA_WORDS] {
        self.length.quota_words(self.limit, self.forward_windows)
    }

    fn from_words(words: [u64; QUOTA_WORDS]) -> SlidingWindow {
        let (limit, forward_windows, length) = WindowLength::from_quota_words(words);
        SlidingWindow {
            limit,
            forward_windows,
            length,
        }
    }
}

impl Sealed for SlidingWindow {
    fn rebase(&self, base: &SlidingWindow) -> Result<SlidingWindow, QuotaError> {
        self.length.rebase(*self, &base.length)
    }

    fn shares_units_with(&self, base: &SlidingWindow) -> bool {
        self.length.shares_units_with(&base.length)
    }

    /// Counts add up whatever the order: while the state names the window `written` counted
    /// `cost` in, its current count drops by `cost`; once the state names the next window, its
    /// previous count does (a roll to the next window moves the current count there whole).
    /// Either way the counts are those the state would hold without that admission, and the
    /// word is no lower than the one that admission replaced. Further on, the admission's units
    /// weigh nothing any more: nothing to give back.
    #[inline]
    fn refund_step(&self, state: u64, written: u64, cost: u64) -> Step {
        let stored_index = state >> WINDOW_INDEX_SHIFT;
        let written_index = written >> WINDOW_INDEX_SHIFT;
        let shift = if stored_index == written_index {
            CURRENT_COUNT_SHIFT
        } else if stored_index == (written_index + 1) & WINDOW_INDEX_MASK {
            PREVIOUS_COUNT_SHIFT
        } else {
            return Step::Deny;
        };
        if (state >> shift) & COUNT_MASK < cost {
            return Step::Deny;
        }
        Step::Allow(state - (cost << shift))
    }
}

impl Quota for SlidingWindow {
    #[inline]
    fn instant(&self, now: Timestamp) -> WindowInstant {
        self.length.instant(now)
    }

    #[inline]
    fn step(&self, state: u64, now: WindowInstant, cost: u64) -> Step {
        let view = self.view(state, now);
        if cost > self.limit || view.current + cost > self.limit {
            return Step::Deny;
        }
        // The previous window's share is at most its whole count: when even that fits, the
        // weighted test below would pass too (the common case of a key under its limit).
        if view.previous + view.current + cost <= self.limit {
            return Step::Allow(Self::pack(view.index, view.previous, view.current + cost));
        }
        let room = self.limit - view.current - cost + 1;
        let previous_share_scaled =
            view.previous as u128 * (self.length.window_ns - view.elapsed_ns) as u128;
        if previous_share_scaled < room as u128 * self.length.window_ns as u128 {
            Step::Allow(Self::pack(view.index, view.previous, view.current + cost))
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
        let view = self.view(state, now);
        let window_ns = self.length.window_ns as u128;
        let previous_share =
            view.previous as u128 * (window_ns - view.elapsed_ns as u128) / window_ns;
        (self.limit as u128).saturating_sub(view.current as u128 + previous_share) as u64
    }

    fn reset_after_ns(&self, state: u64, now: WindowInstant) -> u64 {
        let view = self.view(state, now);
        let window_ns = self.length.window_ns;
        // The whole limit again once the current count has become the previous one and its share has
        // rounded down to zero (a share below one unit).
        if view.current > 0 {
            let at = self.earliest_elapsed(view.current, 1).unwrap_or(window_ns);
            (window_ns - view.elapsed_ns) + at
        } else {
            let at = self.earliest_elapsed(view.previous, 1).unwrap_or(window_ns);
            at.saturating_sub(view.elapsed_ns)
        }
    }

    fn retry_after_ns(&self, state: u64, now: WindowInstant, cost: u64) -> u64 {
        let view = self.view(state, now);
        let window_ns = self.length.window_ns;
        let in_this_window = (view.current.saturating_add(cost) <= self.limit)
            .then(|| self.earliest_elapsed(view.previous, self.limit - view.current - cost + 1))
            .flatten();
        match in_this_window {
            Some(at) => at.saturating_sub(view.elapsed_ns),
            None => {
                // In the next window `current` becomes the previous count; a cost of at most
                // the limit always fits before that window ends.
                let at = self
                    .earliest_elapsed(view.current, self.limit.saturating_sub(cost) + 1)
                    .unwrap_or(window_ns);
                (window_ns - view.elapsed_ns) + at
            }
        }
    }

    /// Fresh-equivalent: nothing in the current window, and the previous window's share already
    /// rounds down to zero (it only shrinks from here on).
    #[inline]
    fn is_fresh(&self, state: u64, now: WindowInstant) -> bool {
        let view = self.view(state, now);
        let window_ns = self.length.window_ns as u128;
        view.current == 0
            && (view.previous as u128 * (window_ns - view.elapsed_ns as u128)) < window_ns
    }
}

impl SlotState for SlidingWindow {
    type Instant = WindowInstant;

    /// Within the window judged in, a state with a current count resets after every state
    /// without one, and among either kind, the larger count resets later (see
    /// `reset_after_ns`); fresh as in `is_fresh`, from the same view.
    #[inline]
    fn freshness_rank(&self, state: u64, now: WindowInstant) -> Option<u64> {
        let view = self.view(state, now);
        if view.current > 0 {
            return Some((1 << (2 * COUNT_BITS)) | view.current);
        }
        let window_ns = self.length.window_ns as u128;
        let fresh = (view.previous as u128 * (window_ns - view.elapsed_ns as u128)) < window_ns;
        (!fresh).then_some(view.previous)
    }

    #[inline]
    fn time_word(&self, now: WindowInstant) -> u64 {
        self.length.time_word(now)
    }

    #[inline]
    fn no_earlier_than(&self, now: WindowInstant, time_word: u64) -> WindowInstant {
        self.length.no_earlier_than(now, time_word)
    }

    /// Both counts are gone two windows after the stored one starts; a state fresh sooner (its
    /// previous count's weight fell below one unit) is bounded by `now`.
    #[inline]
    fn fresh_since_word(&self, state: u64, now: WindowInstant) -> u64 {
        let stored_index = state >> WINDOW_INDEX_SHIFT;
        let counts = state & ((1 << WINDOW_INDEX_SHIFT) - 1);
        let distance =
            (now.window_index & WINDOW_INDEX_MASK).wrapping_sub(stored_index) & WINDOW_INDEX_MASK;
        if counts == 0 || distance > self.forward_windows {
            // No count, or counts idle for longer than the index tells: fresh for ever.
            return 0;
        }
        if distance < 2 {
            return self.length.time_word(now);
        }
        self.length.window_start_word(now, distance, 2)
    }
}

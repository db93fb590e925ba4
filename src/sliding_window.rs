//! Sliding-window counter: the previous window's count, weighted by the part of it still
//! inside the sliding window, plus the current window's count.
//!
//! # State word
//!
//! | bits | field | constant |
//! |---|---|---|
//! | 0..20 | `current_count`: cost admitted in the current window | [`CURRENT_COUNT_SHIFT`], [`COUNT_MASK`] |
//! | 20..40 | `previous_count`: cost admitted in the window before it | [`PREVIOUS_COUNT_SHIFT`], [`COUNT_MASK`] |
//! | 40..64 | `window_index`: the current window's index, modulo 2^24 | [`WINDOW_INDEX_SHIFT`], [`WINDOW_INDEX_MASK`] |
//!
//! # Rule
//!
//! With `W` the window length, `e` the time elapsed in the current window and `L` the limit,
//! the estimate of the cost admitted in the last `W` is
//! `⌊previous_count × (W − e) / W⌋ + current_count`, and a request of cost `n` passes iff
//! `estimate + n <= L`. It is computed without division, exactly in integers:
//! `current_count + n <= L` and `previous_count × (W − e) < (L − current_count − n + 1) × W`.
//!
//! Rounding the previous window's share down makes a saturated key admit exactly `L` per
//! window (with an exact fraction, the previous window's share never reaches 0 before the
//! window ends, and a saturated key would get `L − 1`), as long as the limit is below the
//! window length in nanoseconds (always, unless over 10^6 per 1 ms window); the exact weighted
//! count may then exceed `L` by less than one unit. Like every sliding-window counter, it assumes the
//! previous window's traffic was spread evenly: bursty on/off traffic is admitted at less than
//! `L` per window.
//!
//! # Wrapped window indices, and readings behind the stored window
//!
//! The index is stored modulo 2^24. Reading the stored index against now's, a difference `d`
//! (mod 2^24) of 0 is the same window, 1 the next, and any other up to the quota's forward
//! limit is "long ago": the state is fresh. A larger difference is a reading behind the stored
//! window (a clock that stepped back, or a reading taken before a preemption): the request is
//! judged in the stored window as if at its very start, which grants no capacity and writes no
//! smaller word, and `reset_after` / `retry_after` count from now.
//!
//! Windows of about 34.5 s or more never wrap their index before the time horizon: every idle
//! period reads as idle, and a reading behind the stored window reads as such up to
//! [`SlidingWindow::backward_windows`] windows behind (just above 2^16 windows, 26 days, at the
//! threshold; 13 years of per-minute windows; any lag at all from about 69 s up). Shorter windows
//! wrap every 2^24 windows (4.66 hours of 1 ms windows, 194 days of 1-second windows); for them a
//! reading up to [`BACKWARD_WINDOWS`] windows behind (65 s of 1 ms windows) is read as behind, a
//! key idle for fewer than 2^24 − 2^16 windows is correctly fresh, and longer idle periods may
//! alias: with a chance of 2^16 / 2^24 they read as a reading behind, and the key's old counts
//! apply for up to 2^16 windows. Windows are at least 1 ms long.

use crate::algorithm::{Algorithm, Sealed, Step};
use crate::error::QuotaError;
use crate::window::{WindowInstant, WindowLength};
use std::time::Duration;

/// Width of each count field.
pub const COUNT_BITS: u32 = 20;
/// Mask of a count field once shifted down.
pub const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Position of `current_count`.
pub const CURRENT_COUNT_SHIFT: u32 = 0;
/// Position of `previous_count`.
pub const PREVIOUS_COUNT_SHIFT: u32 = COUNT_BITS;
/// Position of `window_index`.
pub const WINDOW_INDEX_SHIFT: u32 = 2 * COUNT_BITS;
/// Width of `window_index`.
pub const WINDOW_INDEX_BITS: u32 = 64 - WINDOW_INDEX_SHIFT;
/// Mask of `window_index` once shifted down.
pub const WINDOW_INDEX_MASK: u64 = (1 << WINDOW_INDEX_BITS) - 1;
/// For windows short enough that their index wraps (below about 34.5 s), how many windows a
/// reading may lag behind the stored window and still be read as behind it, rather than as a
/// key idle for nearly 2^24 windows (see the module documentation).
pub const BACKWARD_WINDOWS: u64 = 1 << 16;
/// The largest limit per window (a few values are kept clear of the count field's maximum).
pub const MAX_LIMIT: u64 = COUNT_MASK - 15;
/// The shortest window.
pub const MIN_WINDOW_NS: u64 = 1_000_000;

/// A sliding-window-counter quota: at most `limit` units in any window of `window` length,
/// estimated by weighting the previous fixed window (the approach of Cloudflare's limiter), at
/// a fraction of the memory of an exact log. See the [module documentation](self) for the rule.
///
/// Limits, checked at construction: `1 <= limit <= 1,048,560`; `1 ms <= window <= ~18 years`.
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
    /// it (granting no capacity): [`BACKWARD_WINDOWS`] for windows whose index wraps (below
    /// about 34.5 s), more for longer ones (see the module documentation).
    ///
    /// ```
    /// use nanolimit::sliding_window::{SlidingWindow, BACKWARD_WINDOWS};
    ///
    /// let minutes_in_13_years = 13 * 365 * 24 * 60;
    /// assert!(SlidingWindow::per_minute(100)?.backward_windows() > minutes_in_13_years);
    /// assert_eq!(SlidingWindow::per_second(100)?.backward_windows(), BACKWARD_WINDOWS);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn backward_windows(&self) -> u64 {
        WINDOW_INDEX_MASK - self.forward_windows
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
        let (index, previous, current, elapsed_ns, delay_ns) = if distance == 0 {
            (stored_index, previous, current, now.elapsed_ns, 0)
        } else if distance == 1 {
            (now_index, current, 0, now.elapsed_ns, 0)
        } else if distance > self.forward_windows && (previous | current) != 0 {
            // A reading behind the stored window: stay in the stored window, at its start,
            // where the previous window weighs the most; that start is this far ahead.
            let windows_ahead = WINDOW_INDEX_MASK + 1 - distance;
            let delay_ns = windows_ahead
                .saturating_mul(self.length.window_ns)
                .saturating_sub(now.elapsed_ns);
            (stored_index, previous, current, 0, delay_ns)
        } else {
            (now_index, 0, 0, now.elapsed_ns, 0)
        };
        View {
            index,
            previous,
            current,
            elapsed_ns,
            delay_ns,
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

/// A state word unpacked at a given time.
#[derive(Debug, Clone, Copy)]
struct View {
    index: u64,
    previous: u64,
    current: u64,
    elapsed_ns: u64,
    /// Time from now to the moment the view describes (non-zero only after a backward step).
    delay_ns: u64,
}

impl Sealed for SlidingWindow {}

impl Algorithm for SlidingWindow {
    type Instant = WindowInstant;

    #[inline]
    fn instant(&self, now_ns: u64) -> WindowInstant {
        self.length.instant(now_ns)
    }

    #[inline]
    fn step(&self, state: u64, now: WindowInstant, cost: u64) -> Step {
        let view = self.view(state, now);
        if cost > self.limit || view.current + cost > self.limit {
            return Step::Deny;
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
    fn capacity(&self) -> u64 {
        self.limit
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
        // Full capacity once the current count has become the previous one and its share has
        // rounded down to zero (a share below one unit).
        let wait = if view.current > 0 {
            let at = self.earliest_elapsed(view.current, 1).unwrap_or(window_ns);
            (window_ns - view.elapsed_ns) + at
        } else {
            let at = self.earliest_elapsed(view.previous, 1).unwrap_or(window_ns);
            at.saturating_sub(view.elapsed_ns)
        };
        wait.saturating_add(view.delay_ns)
    }

    fn retry_after_ns(&self, state: u64, now: WindowInstant, cost: u64) -> u64 {
        let view = self.view(state, now);
        let window_ns = self.length.window_ns;
        let in_this_window = (view.current + cost <= self.limit)
            .then(|| self.earliest_elapsed(view.previous, self.limit - view.current - cost + 1))
            .flatten();
        let wait = match in_this_window {
            Some(at) => at.saturating_sub(view.elapsed_ns),
            None => {
                // In the next window `current` becomes the previous count; a cost of at most
                // the limit always fits before that window ends.
                let at = self
                    .earliest_elapsed(view.current, self.limit.saturating_sub(cost) + 1)
                    .unwrap_or(window_ns);
                (window_ns - view.elapsed_ns) + at
            }
        };
        wait.saturating_add(view.delay_ns)
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

    fn rebase(&self, table: &SlidingWindow) -> Result<SlidingWindow, QuotaError> {
        if self.length.window_ns == table.length.window_ns {
            Ok(*self)
        } else {
            Err(QuotaError::IncompatibleQuota)
        }
    }
}

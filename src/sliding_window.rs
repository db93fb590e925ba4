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
//! a request of cost `n` passes iff
//! `previous_count × (W − e) / W + current_count + n <= L`, computed exactly in integers as
//! `previous_count × (W − e) + (current_count + n) × W <= L × W`.
//!
//! # Wrapped window indices
//!
//! The index is stored modulo 2^24. Reading the stored index against now's, a difference `d`
//! (mod 2^24) of 0 is the same window, 1 the next, and anything up to
//! 2^24 − [`BACKWARD_WINDOWS`] is "long ago": the state is fresh. A difference above that is a
//! clock that stepped back (or a reading taken before a preemption): the request is judged in the
//! stored window as if at its very start, which grants no capacity. So a key idle for up to
//! (2^24 − 2^20) windows — 182 days of 1-second windows — is correctly seen as fresh; longer idle
//! periods may alias. Windows are at least 1 ms long.

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
/// How many windows back a stored index may be ahead of now and still be read as a clock that
/// stepped back rather than as a key idle for a very long time.
pub const BACKWARD_WINDOWS: u64 = 1 << 20;
/// The largest limit per window (a few values are kept clear of the count field's maximum).
pub const MAX_LIMIT: u64 = COUNT_MASK - 15;
/// The shortest window.
pub const MIN_WINDOW_NS: u64 = 1_000_000;

/// A sliding-window-counter quota: at most `limit` units in any window of `window` length,
/// approximated by weighting the previous fixed window (the approach of Cloudflare's and
/// nginx's limiters), at a fraction of the memory of an exact log.
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
}

impl SlidingWindow {
    /// At most `limit` units in any sliding window of length `window`.
    pub const fn new(limit: u64, window: Duration) -> Result<SlidingWindow, QuotaError> {
        if limit == 0 {
            return Err(QuotaError::ZeroBurst);
        }
        if limit > MAX_LIMIT {
            return Err(QuotaError::BurstTooLarge {
                requested: limit,
                max: MAX_LIMIT,
            });
        }
        match WindowLength::new(window, MIN_WINDOW_NS) {
            Ok(length) => Ok(SlidingWindow { limit, length }),
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

    /// Unpacks `state` as seen at `now`: (window index, previous, current, elapsed), with the
    /// window roll-over, idle expiry and backward-clock rules applied.
    #[inline]
    fn view(&self, state: u64, now: WindowInstant) -> (u64, u64, u64, u64) {
        let stored_index = state >> WINDOW_INDEX_SHIFT;
        let previous = (state >> PREVIOUS_COUNT_SHIFT) & COUNT_MASK;
        let current = (state >> CURRENT_COUNT_SHIFT) & COUNT_MASK;
        let now_index = now.window_index & WINDOW_INDEX_MASK;
        let distance = now_index.wrapping_sub(stored_index) & WINDOW_INDEX_MASK;
        if distance == 0 {
            (stored_index, previous, current, now.elapsed_ns)
        } else if distance == 1 {
            (now_index, current, 0, now.elapsed_ns)
        } else if distance > WINDOW_INDEX_MASK - BACKWARD_WINDOWS && (previous | current) != 0 {
            // The clock stepped back past a window boundary: stay in the stored window, at its
            // start, where the previous window weighs the most.
            (stored_index, previous, current, 0)
        } else {
            (now_index, 0, 0, now.elapsed_ns)
        }
    }

    #[inline]
    fn pack(index: u64, previous: u64, current: u64) -> u64 {
        (index << WINDOW_INDEX_SHIFT)
            | (previous << PREVIOUS_COUNT_SHIFT)
            | (current << CURRENT_COUNT_SHIFT)
    }

    /// `previous × (W − e) + current × W`, the weighted count scaled by `W`.
    #[inline]
    fn weighted_scaled(&self, previous: u64, current: u64, elapsed_ns: u64) -> u128 {
        let window_ns = self.length.window_ns as u128;
        previous as u128 * (window_ns - elapsed_ns as u128) + current as u128 * window_ns
    }
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
        let (index, previous, current, elapsed_ns) = self.view(state, now);
        if cost > self.limit {
            return Step::Deny;
        }
        let weighted = self.weighted_scaled(previous, current + cost, elapsed_ns);
        if weighted <= self.limit as u128 * self.length.window_ns as u128 {
            Step::Allow(Self::pack(index, previous, current + cost))
        } else {
            Step::Deny
        }
    }

    #[inline]
    fn capacity(&self) -> u64 {
        self.limit
    }

    fn remaining(&self, state: u64, now: WindowInstant) -> u64 {
        let (_, previous, current, elapsed_ns) = self.view(state, now);
        let capacity = self.limit as u128 * self.length.window_ns as u128;
        let used = self.weighted_scaled(previous, current, elapsed_ns);
        (capacity.saturating_sub(used) / self.length.window_ns as u128) as u64
    }

    fn reset_after_ns(&self, state: u64, now: WindowInstant) -> u64 {
        let (_, previous, current, elapsed_ns) = self.view(state, now);
        let to_window_end = self.length.window_ns - elapsed_ns;
        if current > 0 {
            to_window_end + self.length.window_ns
        } else if previous > 0 {
            to_window_end
        } else {
            0
        }
    }

    fn retry_after_ns(&self, state: u64, now: WindowInstant, cost: u64) -> u64 {
        let (_, previous, current, elapsed_ns) = self.view(state, now);
        let window_ns = self.length.window_ns as u128;
        // Earliest elapsed time `e` in a window with counts (previous, current) at which
        // previous × (W − e) + (current + cost) × W <= limit × W.
        let earliest = |previous: u64, current: u64| -> Option<u128> {
            let room =
                (self.limit as u128).checked_sub(current as u128 + cost as u128)? * window_ns;
            if previous == 0 {
                return Some(0);
            }
            // previous × (W − e) <= room  <=>  e >= W − room / previous
            Some(window_ns.saturating_sub(room / previous as u128))
        };
        let wait = match earliest(previous, current) {
            Some(at) if at < window_ns || previous == 0 => {
                at.saturating_sub(elapsed_ns as u128)
            }
            _ => {
                // Not in this window: in the next one, `current` becomes the previous count.
                let at = earliest(current, 0).unwrap_or(0);
                (window_ns - elapsed_ns as u128) + at
            }
        };
        u64::try_from(wait).unwrap_or(u64::MAX)
    }

    #[inline]
    fn is_fresh(&self, state: u64, now: WindowInstant) -> bool {
        let (_, previous, current, _) = self.view(state, now);
        (previous | current) == 0
    }

    fn rebase(&self, table: &SlidingWindow) -> Result<SlidingWindow, QuotaError> {
        if self.length.window_ns == table.length.window_ns {
            Ok(*self)
        } else {
            Err(QuotaError::IncompatibleQuota)
        }
    }
}

//! Fixed-window counter: at most `limit` units per window, windows aligned to the clock's
//! origin.
//!
//! # State word
//!
//! | bits | field | constant |
//! |---|---|---|
//! | 0..24 | `count`: cost admitted in the stored window | [`COUNT_SHIFT`], [`COUNT_MASK`] |
//! | 24..64 | `window_index`: the stored window's index, modulo 2^40 | [`WINDOW_INDEX_SHIFT`], [`WINDOW_INDEX_MASK`] |
//!
//! # Rule
//!
//! A request of cost `n` passes iff `count + n <= limit`, where `count` is 0 once the stored
//! window is over. Index differences are read as in the sliding window: above
//! 2^40 − [`BACKWARD_WINDOWS`] the clock stepped back and the stored window still counts.
//! Aliasing needs 2^40 − 2^20 windows of idleness: 34,000 years of 1-second windows, 12 days of
//! 1-microsecond windows (the shortest allowed).

use crate::algorithm::{Algorithm, Sealed, Step};
use crate::error::QuotaError;
use crate::window::{WindowInstant, WindowLength};
use std::time::Duration;

/// Width of `count`.
pub const COUNT_BITS: u32 = 24;
/// Position of `count`.
pub const COUNT_SHIFT: u32 = 0;
/// Mask of `count` once shifted down.
pub const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Position of `window_index`.
pub const WINDOW_INDEX_SHIFT: u32 = COUNT_BITS;
/// Mask of `window_index` once shifted down.
pub const WINDOW_INDEX_MASK: u64 = (1 << (64 - COUNT_BITS)) - 1;
/// See [`sliding_window::BACKWARD_WINDOWS`](crate::sliding_window::BACKWARD_WINDOWS).
pub const BACKWARD_WINDOWS: u64 = 1 << 20;
/// The largest limit per window.
pub const MAX_LIMIT: u64 = COUNT_MASK - 15;
/// The shortest window.
pub const MIN_WINDOW_NS: u64 = 1_000;

/// A fixed-window-counter quota: at most `limit` units per window of length `window`, windows
/// starting at multiples of `window` from the clock's origin.
///
/// Cheapest of the three and easy to explain to clients (the counter resets at `reset_after`),
/// at the price of allowing up to `2 × limit` across a window boundary.
///
/// Limits, checked at construction: `1 <= limit <= 16,777,200`; `1 µs <= window <= ~18 years`.
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
}

impl FixedWindow {
    /// At most `limit` units per window of length `window`.
    pub const fn new(limit: u64, window: Duration) -> Result<FixedWindow, QuotaError> {
        match WindowLength::with_limit(limit, MAX_LIMIT, window, MIN_WINDOW_NS) {
            Ok(length) => Ok(FixedWindow { limit, length }),
            Err(error) => Err(error),
        }
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

    /// Unpacks `state` at `now`: (window index, count, elapsed).
    #[inline]
    fn view(&self, state: u64, now: WindowInstant) -> (u64, u64, u64) {
        let stored_index = state >> WINDOW_INDEX_SHIFT;
        let count = (state >> COUNT_SHIFT) & COUNT_MASK;
        let now_index = now.window_index & WINDOW_INDEX_MASK;
        let distance = now_index.wrapping_sub(stored_index) & WINDOW_INDEX_MASK;
        if distance == 0 {
            (stored_index, count, now.elapsed_ns)
        } else if distance > WINDOW_INDEX_MASK - BACKWARD_WINDOWS && count != 0 {
            // The clock stepped back past a window boundary: the stored window still counts.
            (stored_index, count, 0)
        } else {
            (now_index, 0, now.elapsed_ns)
        }
    }
}

impl Sealed for FixedWindow {}

impl Algorithm for FixedWindow {
    type Instant = WindowInstant;

    #[inline]
    fn instant(&self, now_ns: u64) -> WindowInstant {
        self.length.instant(now_ns)
    }

    #[inline]
    fn step(&self, state: u64, now: WindowInstant, cost: u64) -> Step {
        let (index, count, _) = self.view(state, now);
        if cost <= self.limit && count + cost <= self.limit {
            Step::Allow((index << WINDOW_INDEX_SHIFT) | ((count + cost) << COUNT_SHIFT))
        } else {
            Step::Deny
        }
    }

    #[inline]
    fn capacity(&self) -> u64 {
        self.limit
    }

    fn remaining(&self, state: u64, now: WindowInstant) -> u64 {
        let (_, count, _) = self.view(state, now);
        self.limit.saturating_sub(count)
    }

    fn reset_after_ns(&self, state: u64, now: WindowInstant) -> u64 {
        let (_, count, elapsed_ns) = self.view(state, now);
        if count == 0 {
            0
        } else {
            self.length.window_ns - elapsed_ns
        }
    }

    fn retry_after_ns(&self, state: u64, now: WindowInstant, cost: u64) -> u64 {
        let (_, count, elapsed_ns) = self.view(state, now);
        if count + cost <= self.limit {
            0
        } else {
            self.length.window_ns - elapsed_ns
        }
    }

    #[inline]
    fn is_fresh(&self, state: u64, now: WindowInstant) -> bool {
        self.view(state, now).1 == 0
    }

    fn rebase(&self, table: &FixedWindow) -> Result<FixedWindow, QuotaError> {
        if self.length.window_ns == table.length.window_ns {
            Ok(*self)
        } else {
            Err(QuotaError::IncompatibleQuota)
        }
    }
}

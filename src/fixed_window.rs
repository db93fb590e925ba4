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
//! window is over.
//!
//! # Readings behind the stored window
//!
//! Index differences are read as in the sliding window. A reading behind the stored window (a clock
//! that stepped back, or one taken before a preemption) is judged in the stored window: it grants
//! no capacity, writes no smaller word, and its `reset_after` / `retry_after` count from now.
//! Windows of about 0.53 ms or more never wrap their 40-bit index before the time horizon: every
//! idle period reads as idle, and a reading behind the stored window reads as such up to
//! [`FixedWindow::backward_windows`] windows behind (just above 2^30 windows, 6.5 days, at the
//! threshold; 16 years of 1 ms windows; any lag at all from about 1.05 ms up). Shorter windows wrap
//! every 2^40 windows (12.7 days of 1 µs windows, the shortest allowed); for them a reading up to
//! [`BACKWARD_WINDOWS`] windows behind (18 minutes of 1 µs windows) is read as behind, and a key
//! idle for 2^40 − 2^30 windows or more may alias (its old count applies again for up to 2^30
//! windows).

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
/// For windows short enough that their index wraps (below about 0.53 ms), how many windows a
/// reading may lag behind the stored window and still be read as behind it, rather than as a
/// key idle for nearly 2^40 windows (see the module documentation).
pub const BACKWARD_WINDOWS: u64 = 1 << 30;
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
    /// The largest index distance read as time moving forward (see
    /// [`WindowLength::forward_windows`]).
    forward_windows: u64,
}

impl FixedWindow {
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
    /// it (granting no capacity): [`BACKWARD_WINDOWS`] for windows whose index wraps (below
    /// about 0.53 ms), more for longer ones (see the module documentation).
    ///
    /// ```
    /// use nanolimit::fixed_window::{FixedWindow, BACKWARD_WINDOWS};
    /// use nanolimit::TIME_HORIZON_NS;
    /// use std::time::Duration;
    ///
    /// let per_second = FixedWindow::per_second(10)?;
    /// assert!(per_second.backward_windows() > TIME_HORIZON_NS / 1_000_000_000);
    /// let per_microsecond = FixedWindow::new(10, Duration::from_micros(1))?;
    /// assert_eq!(per_microsecond.backward_windows(), BACKWARD_WINDOWS);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn backward_windows(&self) -> u64 {
        WINDOW_INDEX_MASK - self.forward_windows
    }

    /// Unpacks `state` at `now`: (window index, count, elapsed, delay), where `delay` is the time
    /// from now to the moment described (non-zero only for a reading behind the stored window).
    #[inline]
    fn view(&self, state: u64, now: WindowInstant) -> (u64, u64, u64, u64) {
        let stored_index = state >> WINDOW_INDEX_SHIFT;
        let count = (state >> COUNT_SHIFT) & COUNT_MASK;
        let now_index = now.window_index & WINDOW_INDEX_MASK;
        let distance = now_index.wrapping_sub(stored_index) & WINDOW_INDEX_MASK;
        if distance == 0 {
            (stored_index, count, now.elapsed_ns, 0)
        } else if distance > self.forward_windows && count != 0 {
            // A reading behind the stored window: the stored window still counts, judged at its
            // start, which is this far ahead of now.
            let windows_ahead = WINDOW_INDEX_MASK + 1 - distance;
            let delay_ns = windows_ahead
                .saturating_mul(self.length.window_ns)
                .saturating_sub(now.elapsed_ns);
            (stored_index, count, 0, delay_ns)
        } else {
            (now_index, 0, now.elapsed_ns, 0)
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
        let (index, count, _, _) = self.view(state, now);
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
        let (_, count, _, _) = self.view(state, now);
        self.limit.saturating_sub(count)
    }

    fn reset_after_ns(&self, state: u64, now: WindowInstant) -> u64 {
        let (_, count, elapsed_ns, delay_ns) = self.view(state, now);
        if count == 0 {
            0
        } else {
            (self.length.window_ns - elapsed_ns).saturating_add(delay_ns)
        }
    }

    fn retry_after_ns(&self, state: u64, now: WindowInstant, cost: u64) -> u64 {
        let (_, count, elapsed_ns, delay_ns) = self.view(state, now);
        if count + cost <= self.limit {
            0
        } else {
            (self.length.window_ns - elapsed_ns).saturating_add(delay_ns)
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

//! The contract every rate-limiting algorithm fulfils: a pure step function over one `u64` word.
//!
//! *What* an algorithm decides lives here and in its module ([`Gcra`](crate::Gcra),
//! [`SlidingWindow`](crate::SlidingWindow), [`FixedWindow`](crate::FixedWindow)); *how* the word
//! is updated under concurrency lives in one compare-and-swap driver shared by direct and keyed
//! limiters. Every method of [`Algorithm`] is a pure function of its arguments, so each
//! algorithm is tested exhaustively on its own, and the driver is model-checked once.

use crate::error::QuotaError;
use core::fmt::Debug;

/// What a step function decided for one request.
///
/// ```
/// use nanolimit::{Algorithm, Gcra, Step};
///
/// let quota = Gcra::per_second(1).unwrap();
/// let now = quota.instant(0);
/// assert!(matches!(quota.step(Gcra::FRESH, now, 1), Step::Allow(_)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Admit the request and store this word.
    Allow(u64),
    /// Reject the request; the word stays as it is (the deny path never writes).
    Deny,
}

mod private {
    pub trait Sealed {}
}
pub(crate) use private::Sealed;

/// A rate-limiting algorithm and its quota: a pure function from (state word, now, cost) to
/// (new state word, decision), plus the read-only views a [`Decision`](crate::Decision) needs.
///
/// Implemented by [`Gcra`](crate::Gcra), [`SlidingWindow`](crate::SlidingWindow) and
/// [`FixedWindow`](crate::FixedWindow); sealed, because limiters rely on the invariants below.
///
/// Invariants the limiters rely on (each implementation tests them):
/// - a state equal to [`FRESH`](Self::FRESH) is a key never seen;
/// - `step` never panics or wraps, for any word, time and cost;
/// - a written word is strictly greater, as an integer, than the word it replaces, and than any
///   word for which [`is_fresh`](Self::is_fresh) held at a time no later than `now`; this is
///   what makes keyed slots immune to ABA (see the keyed table's documentation). The window
///   algorithms store their window index modulo 2^24 resp. 2^40, so the word also becomes
///   smaller when the index wraps forward (only windows short enough to wrap it before the
///   time horizon do), and when a reading is more than the quota's `backward_windows()` behind
///   its stored window, which reads as a key idle for a very long time (for windows that never
///   wrap that takes a reading at least 2^16 resp. 2^30 windows behind, days to years, and
///   none at all from about 69 s resp. 1.05 ms up);
/// - a cost of at most [`capacity`](Self::capacity) is always admitted on a fresh state;
/// - the two largest `u64` values are never produced (keyed tables use them as slot markers).
///
/// # Reservations
///
/// Throttling (admit now, start later) fits the same shape: a reservation is another pure
/// function of the same word — for GCRA, always store `max(tat, now) + n·T` and tell the caller
/// to start after `max(tat, now) + n·T − tau − now` — applied by the same driver, so it needs no
/// change to the state layout or the concurrency protocol.
///
/// ```
/// use nanolimit::{Algorithm, FixedWindow, Step};
/// use std::time::Duration;
///
/// let quota = FixedWindow::new(2, Duration::from_secs(1)).unwrap();
/// let now = quota.instant(0);
/// let Step::Allow(word) = quota.step(FixedWindow::FRESH, now, 2) else { unreachable!() };
/// assert_eq!(quota.step(word, now, 1), Step::Deny);
/// assert_eq!(quota.remaining(word, now), 0);
/// ```
pub trait Algorithm: Copy + Send + Sync + Debug + 'static + Sealed {
    /// "Now" in the algorithm's own units, computed once per check from nanoseconds.
    type Instant: Copy + Debug + Send + Sync;

    /// The state word of a key never seen before.
    const FRESH: u64 = 0;

    /// Converts a clock reading (nanoseconds since the clock's origin) to the algorithm's time.
    /// Readings past [`TIME_HORIZON_NS`](crate::TIME_HORIZON_NS) are clamped to it.
    fn instant(&self, now_ns: u64) -> Self::Instant;

    /// The pure step: would a request of `cost` pass at `now` given `state`, and if so what is
    /// the new state.
    fn step(&self, state: u64, now: Self::Instant, cost: u64) -> Step;

    /// The most cost one request may have: the GCRA burst, or the limit per window. Also the
    /// `limit` a decision reports.
    fn capacity(&self) -> u64;

    /// How many unit-cost requests would pass right now, given `state`.
    fn remaining(&self, state: u64, now: Self::Instant) -> u64;

    /// Nanoseconds until `state` is as good as fresh (full capacity again), with no traffic.
    fn reset_after_ns(&self, state: u64, now: Self::Instant) -> u64;

    /// Nanoseconds until a request of `cost` would pass, with no other traffic (0 if it
    /// passes now). `cost` must be at most [`capacity`](Self::capacity).
    fn retry_after_ns(&self, state: u64, now: Self::Instant, cost: u64) -> u64;

    /// Whether `state` is equivalent at `now` to [`FRESH`](Self::FRESH): a keyed table may
    /// then reuse its slot for another key.
    fn is_fresh(&self, state: u64, now: Self::Instant) -> bool;

    /// Expresses this quota in the units of `table`'s state, so both can share stored state
    /// (keyed limiters with per-call quotas). Errors when the two cannot share state.
    fn rebase(&self, table: &Self) -> Result<Self, QuotaError>;
}

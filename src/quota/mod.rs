//! Quotas: what each rate-limiting algorithm decides, as a pure step function over one `u64`.
//!
//! *What* is decided lives here: the [`Quota`] trait and its three implementations, [`Gcra`],
//! [`SlidingWindow`] and [`FixedWindow`]. *How* a state word is updated under concurrency lives
//! in one compare-and-swap driver shared by direct and keyed limiters. Every method of [`Quota`]
//! is a pure function of its arguments, so each algorithm is tested exhaustively on its own, and
//! the driver is model-checked once.
//!
//! # Choosing a quota
//!
//! | quota | state word | limits (checked when the quota is built) | pick it when |
//! |---|---|---|---|
//! | [`Gcra`] (token bucket; the leaky bucket as a meter) | theoretical arrival time in sub-nanosecond ticks (64 bits) | 1 per ~18 years to 16·10^9 per second; burst below 2^62 | the default: a smooth rate with bursts up to a limit; byte rates; an exact `retry_after`; requests that may wait (reservations) |
//! | [`SlidingWindow`] | window index (24 bits), previous and current counts (20 bits each) | limit up to 1,048,560; windows of 1 ms or more | clients think in "N per minute", and bursts at window edges must stay small |
//! | [`FixedWindow`] | window index (40 bits), count (24 bits) | limit up to 16,777,200; windows of 1 µs or more | the cheapest; resets a client can read off a clock |
//! | [`SlidingLog`](crate::sliding_log::SlidingLog) (the exact sliding log) | one 8-byte record per unit of the limit and one word | limit up to 2^24 (keyed: 1,024); a request costs at most 16 units | every window of length `W` must hold at most `L`: small, strict limits (5 logins per 15 minutes) |
//!
//! - **GCRA** keeps the emission interval exact: whole-nanosecond intervals (1,000 per second,
//!   60 per minute) are counted in 1/16 ns ticks, others (3 per second, 12.5·10^9 bytes per
//!   second) in ticks of `interval / 2^k`, so no rounding error accumulates: over simulated
//!   runs from 1 per day (10 years) to 16·10^9 per second, the amount admitted matches the
//!   quota to within one request. In any interval of length `t` it admits at most
//!   `burst + rate × t`.
//! - **The sliding window** counts `⌊previous × (W − e) / W⌋ + current`, where `e` is the time
//!   elapsed in the current window: a saturated key gets exactly the limit per window. It
//!   assumes the previous window's traffic was spread evenly, so across a boundary it can admit
//!   up to about twice the limit in one window-long interval (below). Where that matters, use
//!   the exact sliding log, or a fixed window of half the limit.
//! - **The fixed window** admits up to twice its limit across a boundary: the end of one window
//!   and the start of the next.
//! - **The sliding log** is exact: a request of cost `n` at `t` passes iff the units admitted in
//!   `(t − W, t]` plus `n` are at most `L`. It keeps one record per admitted unit, so it suits
//!   small limits ([`sliding_log`](crate::sliding_log)).
//!
//! ```
//! use nanolimit::{Limiter, ManualClock, SlidingWindow, Timestamp};
//! use std::time::Duration;
//!
//! // 10 per second: 10 requests at 0.9 s, then one attempt every 100 ms.
//! let clock = ManualClock::starting_at(Timestamp::from_duration(Duration::from_millis(900))?);
//! let limiter = Limiter::with_clock(SlidingWindow::per_second(10)?, clock.clone());
//! let mut admitted = 0;
//! for _ in 0..10 {
//!     admitted += usize::from(limiter.check().is_allowed());
//! }
//! for _ in 0..9 {
//!     clock.advance(Duration::from_millis(100));
//!     admitted += usize::from(limiter.check().is_allowed());
//! }
//! // 18 admitted within [0.9 s, 1.9 s): the previous window's 10 weigh less as it slides away.
//! assert_eq!(admitted, 18);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every quota can be made live ([`LiveLimiter`](crate::live::LiveLimiter): its quota changed at
//! runtime) and used as a tier of a limiter whose state counts in the same units
//! ([`Limiter::tier`](crate::Limiter::tier)). [`Gcra::unlimited`] is a real quota that denies
//! nothing a real workload sends; `burst_then_never(n)` ([`FixedWindow::burst_then_never`],
//! [`SlidingWindow::burst_then_never`]) admits `n` units ever, then none.
//!
//! # Readings behind the state
//!
//! A reading can be earlier than one the state has already seen: a clock that stepped back (the
//! TSC across cores), or a timestamp taken before a preemption. Such a reading is judged at the
//! latest time the state proves it has seen, and every time a decision reports (remaining,
//! reset-after, retry-after) counts from that moment too, so the advice is the same as for a
//! reading at that time:
//!
//! - GCRA: a state `tat` was written at a time no earlier than `tat − lead`, where the lead is
//!   the largest tolerance (burst × emission interval) among the limiter's quota and the tiers
//!   made for it or used on it, so a reading before that is judged there. Any lag is recognised.
//! - Windows: a reading behind the stored window is judged at the start of the stored window.
//!   The packed window index tells "behind" from "idle for a very long time" only so far: up to
//!   the quota's `backward_windows()` windows behind ([`SlidingWindow::backward_windows`],
//!   [`FixedWindow::backward_windows`]). A reading further behind reads as a key idle for that
//!   long, and is judged on a fresh state.
//!
//! The figures, stated here once:
//!
//! | quota | windows whose index wraps before the horizon | their `backward_windows()` | longer windows |
//! |---|---|---|---|
//! | [`SlidingWindow`] (index mod 2^24) | shorter than about 34.5 s | 2^16 windows (65 s of 1 ms windows) | at least 2^16 windows (26 days at 34.5 s; 13 years of 1-minute windows); any lag at all from about 69 s |
//! | [`FixedWindow`] (index mod 2^40) | shorter than about 0.53 ms | 2^30 windows (18 minutes of 1 µs windows) | at least 2^30 windows (6.5 days at 0.53 ms; 16 years of 1 ms windows); any lag at all from about 1.05 ms |
//!
//! A reading *ahead* of the true time (a timestamp from another clock's origin, say) cannot be
//! told from the truth: it is trusted, the state it writes runs ahead, and later correct
//! readings are judged behind it, denied with retry-after counted from the time it wrote, until
//! the readings pass it. [`Timestamp`] rejects readings past the horizon
//! where they are made; within it, timestamps must come from the limiter's clock (or one with
//! the same origin).
//!
//! For windows whose index wraps, a key idle for nearly a whole wrap (2^24 − 2^16 windows: 4.6
//! hours of 1 ms sliding windows; 2^40 − 2^30 fixed windows) may alias a reading behind: with a
//! chance of 1/256 (sliding) or 1/1024 (fixed), its old counts apply again for up to
//! `backward_windows()` windows. Keys idle for less are correctly fresh.

pub(crate) mod concurrency;
mod error;
mod fixed_window;
mod gcra;
mod reservable;
pub(crate) mod sliding_log;
mod sliding_window;
mod state;
mod window;

pub(crate) use concurrency::Concurrency;
pub use error::QuotaError;
pub use fixed_window::FixedWindow;
pub use gcra::{Gcra, GcraInstant};
pub(crate) use reservable::Reservable;
pub use sliding_window::SlidingWindow;
pub use window::WindowInstant;
#[cfg(feature = "redis")]
pub(crate) use window::WindowLength;

use crate::clock::Timestamp;
use core::fmt::Debug;

/// What a step function decided for one request.
///
/// ```
/// use nanolimit::{Gcra, Quota, Timestamp};
/// use nanolimit::quota::Step;
///
/// let quota = Gcra::per_second(1)?;
/// let now = quota.instant(Timestamp::ORIGIN);
/// assert!(matches!(quota.step(Gcra::FRESH, now, 1), Step::Allow(_)));
/// assert_eq!(quota.step(Gcra::FRESH, now, 2), Step::Deny);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Admit the request and store this word.
    Allow(u64),
    /// Reject the request; the word stays as it is (the deny path never writes).
    Deny,
}

mod private {
    /// Seals [`Quota`](super::Quota), and holds what only the crate calls.
    pub trait Sealed: Sized {
        /// This quota expressed in the units of `base`'s state, so both can share stored state
        /// (tiers). Errors when the two cannot share state.
        fn rebase(&self, base: &Self) -> Result<Self, super::QuotaError>;

        /// Whether this quota's state words count in `base`'s units (true for any result of
        /// [`rebase`](Self::rebase) onto `base`).
        fn shares_units_with(&self, base: &Self) -> bool;

        /// The refund step of a composite check (`src/composite/`): gives back `cost` that an
        /// admission which wrote `written` consumed, applied to the current `state` after a
        /// later member of the composite denied the check. Allows only a word that decides, at
        /// any time no earlier than the admission's, as strictly as the state would without
        /// that admission (never looser: no member over-admits), and that is no lower than the
        /// word the admission replaced (keyed slots stay free of ABA); denies, giving nothing
        /// back, where it cannot tell (the units stay consumed until they refill). The default
        /// gives nothing back.
        fn refund_step(&self, _state: u64, _written: u64, _cost: u64) -> super::Step {
            super::Step::Deny
        }

        /// Whether a decision judges a reading behind a state by how far the quotas sharing the
        /// state let it lead the reading that wrote it (GCRA, whose state is a time), rather
        /// than by the state alone (windows, whose state names its window).
        const JUDGES_BY_LEAD: bool = false;

        /// How far ahead of the reading that wrote it a state written under this quota may be
        /// (GCRA: its tolerance), in the state's units.
        fn lead_ticks(&self) -> u64 {
            0
        }

        /// This quota, judging a reading behind a state by a lead of `lead_ticks` (the largest
        /// of the quotas sharing its state: a limiter's own and its tiers', so never below this
        /// quota's own) rather than by its own.
        fn judging_lead(self, _lead_ticks: u64) -> Self {
            self
        }
    }

    /// A quota as a few words, so that a [`LiveLimiter`](crate::live::LiveLimiter) can publish a
    /// new one to racing checks (`src/live/quota_cell.rs`): every [`Quota`](super::Quota) is.
    pub trait Encoded: Sized {
        /// Every field of the quota, in [`QUOTA_WORDS`](super::QUOTA_WORDS) words (unused ones
        /// zero).
        fn to_words(&self) -> [u64; super::QUOTA_WORDS];

        /// The quota [`to_words`](Self::to_words) made `words` of. Only ever given such words.
        fn from_words(words: [u64; super::QUOTA_WORDS]) -> Self;
    }
}
pub(crate) use private::{Encoded, Sealed};
pub(crate) use state::SlotState;

/// The most words a quota is encoded in, for a [`LiveLimiter`](crate::live::LiveLimiter) (GCRA's
/// seven fields).
pub(crate) const QUOTA_WORDS: usize = 7;

/// A rate-limiting algorithm and its quota: a pure function from (state word, now, cost) to
/// (new state word, decision), plus the read-only views a [`Decision`](crate::Decision) needs.
///
/// Implemented by [`Gcra`], [`SlidingWindow`] and [`FixedWindow`] (and, inside the crate, by the
/// per-key state of the keyed in-flight limiter, `src/quota/concurrency.rs`, which states how it
/// keeps these invariants without time); sealed, because limiters rely on the invariants below.
///
/// Invariants the limiters rely on (each implementation tests them):
/// - a state equal to [`FRESH`](Self::FRESH) is a key never seen;
/// - `step` never panics or wraps, for any word, time and cost, and denies every cost above
///   [`limit`](Self::limit);
/// - a written word is strictly greater, as an integer, than the word it replaces, and than any
///   word for which [`is_fresh`](Self::is_fresh) held at a time no later than `now`; this is
///   what makes keyed slots immune to ABA (see the keyed table's protocol). The one exception
///   is a cancelled reservation ([`Gcra::cancel_step`]), which lowers a word, but never
///   below the word its reservation replaced. The window
///   algorithms store their window index modulo 2^24 resp. 2^40, so the word also becomes
///   smaller when the index wraps forward, and when a reading is further behind than
///   [the module's bound](self#readings-behind-the-state);
/// - a cost of at most [`limit`](Self::limit) is always admitted on a fresh state;
/// - the two largest `u64` values are never produced (keyed tables use them as slot markers).
///
/// ```
/// use nanolimit::{FixedWindow, Quota, Timestamp};
/// use nanolimit::quota::Step;
/// use std::time::Duration;
///
/// let quota = FixedWindow::new(2, Duration::from_secs(1))?;
/// let now = quota.instant(Timestamp::ORIGIN);
/// let Step::Allow(word) = quota.step(FixedWindow::FRESH, now, 2) else { unreachable!() };
/// assert_eq!(quota.step(word, now, 1), Step::Deny);
/// assert_eq!(quota.remaining(word, now), 0);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
pub trait Quota: SlotState + Sealed + Encoded {
    /// The state word of a key never seen before.
    ///
    /// ```
    /// use nanolimit::{Gcra, Quota, Timestamp};
    ///
    /// let quota = Gcra::per_second(5)?;
    /// assert_eq!(quota.remaining(Gcra::FRESH, quota.instant(Timestamp::ORIGIN)), 5);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    const FRESH: u64 = 0;

    /// Converts a clock reading to the algorithm's time.
    ///
    /// ```
    /// use nanolimit::{FixedWindow, Quota, Timestamp};
    ///
    /// let quota = FixedWindow::per_second(10)?;
    /// let now = quota.instant(Timestamp::from_ns(2_500_000_000)?);
    /// assert_eq!(now.window_index(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn instant(&self, now: Timestamp) -> Self::Instant;

    /// The pure step: would a request of `cost` pass at `now` given `state`, and if so what is
    /// the new state.
    ///
    /// ```
    /// use nanolimit::{Gcra, Quota, Timestamp};
    /// use nanolimit::quota::Step;
    ///
    /// let quota = Gcra::per_second(1)?;
    /// let now = quota.instant(Timestamp::ORIGIN);
    /// let Step::Allow(word) = quota.step(Gcra::FRESH, now, 1) else { unreachable!() };
    /// assert_eq!(quota.step(word, now, 1), Step::Deny);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    fn step(&self, state: u64, now: Self::Instant, cost: u64) -> Step;

    /// The most cost one request may have: the GCRA burst, or the limit per window. Also the
    /// `limit` a decision reports.
    ///
    /// ```
    /// use nanolimit::{Gcra, Quota, SlidingWindow};
    ///
    /// assert_eq!(Gcra::per_second(10)?.with_burst(3)?.limit(), 3);
    /// assert_eq!(SlidingWindow::per_minute(100)?.limit(), 100);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    fn limit(&self) -> u64;

    /// How many unit-cost requests would pass right now, given `state`.
    ///
    /// ```
    /// use nanolimit::{FixedWindow, Quota, Timestamp};
    /// use nanolimit::quota::Step;
    ///
    /// let quota = FixedWindow::per_second(5)?;
    /// let now = quota.instant(Timestamp::ORIGIN);
    /// let Step::Allow(word) = quota.step(FixedWindow::FRESH, now, 2) else { unreachable!() };
    /// assert_eq!(quota.remaining(word, now), 3);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    fn remaining(&self, state: u64, now: Self::Instant) -> u64;

    /// Nanoseconds until `state` is as good as fresh (the whole limit again), with no traffic.
    ///
    /// ```
    /// use nanolimit::{Gcra, Quota, Timestamp};
    /// use nanolimit::quota::Step;
    ///
    /// // 10 per second: one unit comes back every 100 ms.
    /// let quota = Gcra::per_second(10)?;
    /// let now = quota.instant(Timestamp::ORIGIN);
    /// let Step::Allow(word) = quota.step(Gcra::FRESH, now, 2) else { unreachable!() };
    /// assert_eq!(quota.reset_after_ns(word, now), 200_000_000);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    fn reset_after_ns(&self, state: u64, now: Self::Instant) -> u64;

    /// Nanoseconds until a request of `cost` would pass, with no other traffic (0 if it passes
    /// now). `cost` must be at most [`limit`](Self::limit).
    ///
    /// ```
    /// use nanolimit::{Gcra, Quota, Timestamp};
    /// use nanolimit::quota::Step;
    ///
    /// let quota = Gcra::per_second(10)?.with_burst(1)?;
    /// let now = quota.instant(Timestamp::ORIGIN);
    /// let Step::Allow(word) = quota.step(Gcra::FRESH, now, 1) else { unreachable!() };
    /// assert_eq!(quota.retry_after_ns(word, now, 1), 100_000_000);
    /// assert_eq!(quota.retry_after_ns(Gcra::FRESH, now, 1), 0);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    fn retry_after_ns(&self, state: u64, now: Self::Instant, cost: u64) -> u64;

    /// The time over which [`limit`](Self::limit) applies, as the `w` of an IETF
    /// `RateLimit-Policy` header: the window of a window quota; for GCRA, the time an emptied
    /// burst takes to refill (burst × emission interval).
    ///
    /// ```
    /// use nanolimit::{Gcra, Quota, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// assert_eq!(SlidingWindow::per_minute(100)?.limit_window(), Duration::from_secs(60));
    /// let burst_of_50 = Gcra::per_second(10)?.with_burst(50)?;
    /// assert_eq!(burst_of_50.limit_window(), Duration::from_secs(5));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    fn limit_window(&self) -> core::time::Duration;

    /// Whether `state` is equivalent at `now` to [`FRESH`](Self::FRESH): a keyed table may then
    /// reuse its slot for another key.
    ///
    /// ```
    /// use nanolimit::{Gcra, Quota, Timestamp};
    /// use nanolimit::quota::Step;
    ///
    /// let quota = Gcra::per_second(1)?;
    /// let start = quota.instant(Timestamp::ORIGIN);
    /// let Step::Allow(word) = quota.step(Gcra::FRESH, start, 1) else { unreachable!() };
    /// assert!(!quota.is_fresh(word, start));
    /// assert!(quota.is_fresh(word, quota.instant(Timestamp::from_ns(1_000_000_000)?)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn is_fresh(&self, state: u64, now: Self::Instant) -> bool;
}

#[cfg(test)]
mod tests;

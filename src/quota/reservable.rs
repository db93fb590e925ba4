//! Quotas that can book capacity ahead of time: the pure steps behind reservations.

use super::Quota;
use super::Step;
use core::time::Duration;

/// A quota that can book capacity ahead of time: a request is given a start time in the future
/// instead of a refusal, and the state records the booking, so that later requests queue behind
/// it. Only [`Gcra`](super::Gcra) is reservable: its state is a time (`tat`), and booking ahead
/// moves it on (`tat := max(tat, now) + n·T`). A window's state counts within its current
/// window, and one word cannot hold bookings in windows to come, so limiters on window quotas
/// have no `reserve` at all: asking for one does not compile.
///
/// Like [`Quota`], every method is a pure function of its arguments; the limiters apply
/// [`reserve_step`](Self::reserve_step) and [`cancel_step`](Self::cancel_step) with the same
/// compare-and-swap driver as [`step`](Quota::step).
///
/// ```
/// use nanolimit::{Gcra, Quota, Reservable, Step, Timestamp};
/// use std::time::Duration;
///
/// // 10 per second, burst 1: a unit every 100 ms.
/// let quota = Gcra::per_second(10)?.with_burst(1)?;
/// let now = quota.instant(Timestamp::ORIGIN);
/// let no_wait = quota.max_wait_ticks(Duration::ZERO);
/// let Step::Allow(first) = quota.reserve_step(Gcra::FRESH, now, 1, no_wait) else { panic!() };
/// // The next unit may start 100 ms from now: refused without a wait, booked with one.
/// assert_eq!(quota.reserve_step(first, now, 1, no_wait), Step::Deny);
/// let a_second = quota.max_wait_ticks(Duration::from_secs(1));
/// let Step::Allow(second) = quota.reserve_step(first, now, 1, a_second) else { panic!() };
/// assert_eq!(quota.start_ns(second, now), 100_000_000);
/// // Cancelling the last booking before it starts gives its unit back.
/// assert_eq!(Gcra::cancel_step(second, second, quota.increment_ticks(1)), Step::Allow(first));
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
pub trait Reservable: Quota {
    /// `max_wait` in the state's units, rounded down (a reservation never waits longer than
    /// asked), and capped at the longest wait a state word can book (at least 4.5 years).
    fn max_wait_ticks(&self, max_wait: Duration) -> u64;

    /// The reservation step: books `cost` at the earliest start at or after `now` the quota
    /// allows, if that start is at most `max_wait_ticks` after `now`; else denies and nothing
    /// is written. With a maximum wait of zero it is [`step`](Quota::step): the same decisions
    /// and the same words.
    fn reserve_step(&self, state: u64, now: Self::Instant, cost: u64, max_wait_ticks: u64) -> Step;

    /// Nanoseconds from `now` until a request of `cost` could start on `state` (0 if it could
    /// start now): the wait a reservation would book, rounded up.
    fn wait_ns(&self, state: u64, now: Self::Instant, cost: u64) -> u64;

    /// When a reservation that wrote `booked` at `now` starts, in nanoseconds since the clock's
    /// origin, rounded up (never early).
    fn start_ns(&self, booked: u64, now: Self::Instant) -> u64;

    /// How much a request of `cost` moves the state on (`n·T`, in the state's units): what a
    /// cancellation may give back.
    fn increment_ticks(&self, cost: u64) -> u64;

    /// The cancellation step, for a reservation that wrote `booked` by adding
    /// `increment_ticks`, applied to the current `state` before the reservation starts.
    ///
    /// Undoes the booking exactly, giving back its whole cost, if it is still the latest one:
    /// the state is the word it wrote (nothing admitted since is still booked behind it).
    /// Otherwise denies, writing nothing: requests admitted since were scheduled behind it and
    /// keep their start times, so the time it held stays booked.
    ///
    /// Why the undo is never looser than if the reservation had not been made: it restores
    /// `booked − increment`, which is `max(previous, now)` for the word `previous` the
    /// reservation replaced and its reading `now`; every decision from then on, at a time no
    /// earlier than `now`, is the one `previous` would give. Cancelling several reservations
    /// latest first undoes them all; in any other order, each one that finds another booked
    /// behind it gives nothing back.
    ///
    /// Go's `x/time/rate` also gives back part of a cost when the requests admitted since used
    /// less than it: the cost less what they added. It measures that from the start of the
    /// latest reservation, which it keeps beside its tokens. Measured from the one state word
    /// instead, after another cancellation has lowered it, the part is overstated: with a rate
    /// of 1 per second and a burst of 4, booking 4, then A = 4, B = 4 and X = 1 at 0 s, then
    /// cancelling B and A, would give back 3 s and then 2 s, and the next bookings of 4 and 1
    /// would start at 8 s and 9 s beside X: 6 units where the quota allows 5. So partial
    /// returns are not made.
    ///
    /// The word a cancellation writes is lower than the one it replaces, but never a word the
    /// state held before the booking other than the one it replaced; keyed limiters never make
    /// a key's first booking (the one that inserted it, which replaced another key's word)
    /// cancellable, so a keyed slot's word never returns to a value it held under another key.
    fn cancel_step(state: u64, booked: u64, increment_ticks: u64) -> Step;

    /// How far a word a reservation booked at `now` leads `now`, in the state's units: the
    /// limiter's judging lead is raised to it before the word is written. Not part of the API.
    #[doc(hidden)]
    fn booked_lead_ticks(&self, booked: u64, now: Self::Instant) -> u64;
}

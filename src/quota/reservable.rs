//! Quotas that can book capacity ahead of time: the pure steps behind reservations, which the
//! limiters apply with the same compare-and-swap driver as checks.

use super::gcra::{Gcra, GcraInstant, TICKS_PER_NS_SHIFT};
use super::Quota;
use super::Step;
use crate::clock::Timestamp;
use core::time::Duration;

/// A quota that can book capacity ahead of time: what reservations ask of [`Gcra`],
/// the only such quota (its state is a time, which booking ahead moves on; a window's state
/// counts within its current window and cannot hold bookings in windows to come, so limiters on
/// window quotas have no `reserve` at all). Sealed, and named only inside the crate: the steps
/// are [`Gcra`]'s own methods, which this delegates to.
pub trait Reservable: Quota {
    /// See [`Gcra::max_wait_ticks`](super::Gcra::max_wait_ticks).
    fn max_wait_ticks(&self, max_wait: Duration) -> u64;

    /// See [`Gcra::reserve_step`](super::Gcra::reserve_step).
    fn reserve_step(&self, state: u64, now: Self::Instant, cost: u64, max_wait_ticks: u64) -> Step;

    /// See [`Gcra::wait_ns`](super::Gcra::wait_ns).
    fn wait_ns(&self, state: u64, now: Self::Instant, cost: u64) -> u64;

    /// See [`Gcra::start_ns`](super::Gcra::start_ns).
    fn start_ns(&self, booked: u64, now: Self::Instant) -> u64;

    /// See [`Gcra::increment_ticks`](super::Gcra::increment_ticks).
    fn increment_ticks(&self, cost: u64) -> u64;

    /// See [`Gcra::cancel_step`](super::Gcra::cancel_step).
    fn cancel_step(state: u64, booked: u64, increment_ticks: u64) -> Step;

    /// See [`Gcra::booked_lead_ticks`](super::Gcra::booked_lead_ticks).
    fn booked_lead_ticks(&self, booked: u64, now: Self::Instant) -> u64;
}

/// The longest wait a reservation may book, in ticks: with instants at most 2^63 and
/// tolerances below 2^62, a booked word stays below 2^63 + 2^62 + 2^61, clear of overflow and of
/// the keyed table's slot markers. At most 16 ticks per ns (the usual scale is 8 to 16), so this
/// is at least 4.5 years.
pub(crate) const MAX_WAIT_TICKS: u64 = 1 << 61;

/// Reservations: booking capacity ahead of time. A request is given a start time in the
/// future instead of a refusal, and the state records the booking, so that later requests queue
/// behind it (`tat := max(tat, now) + n·T`). Only GCRA can: a window's state counts within its
/// current window, and one word cannot hold bookings in windows to come, so limiters on window
/// quotas have no `reserve` at all (asking for one does not compile).
///
/// Like [`Quota`]'s, every method here is a pure function of its arguments; the limiters apply
/// [`reserve_step`](Self::reserve_step) and [`cancel_step`](Self::cancel_step) with the same
/// compare-and-swap driver as [`step`](Quota::step).
///
/// ```
/// use nanolimit::{Gcra, Quota, Timestamp};
/// use nanolimit::quota::Step;
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
impl Gcra {
    /// `max_wait` in the state's units, rounded down (a reservation never waits longer than
    /// asked), and capped at the longest wait a state word can book (at least 4.5 years).
    pub fn max_wait_ticks(&self, max_wait: Duration) -> u64 {
        let ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
        // Rounded down: a reservation never waits longer than asked.
        let ticks = (ns as u128 * self.ticks_per_ns_q59 as u128) >> TICKS_PER_NS_SHIFT;
        u64::try_from(ticks).unwrap_or(u64::MAX).min(MAX_WAIT_TICKS)
    }

    /// The reservation step: books `cost` at the earliest start at or after `now` the quota
    /// allows, if that start is at most `max_wait_ticks` after `now`; else denies and nothing
    /// is written. With a maximum wait of zero it is [`step`](Quota::step): the same decisions
    /// and the same words.
    #[inline]
    pub fn reserve_step(&self, tat: u64, now: GcraInstant, cost: u64, max_wait_ticks: u64) -> Step {
        let increment = cost.saturating_mul(self.emission_interval_ticks);
        if increment > self.tolerance_ticks {
            // Above the burst: no start time would ever admit it.
            return Step::Deny;
        }
        let base = if tat > now.0 { tat } else { now.0 };
        // The request starts when `max(tat, start) + n·T <= start + tau`: at `now` if that
        // holds, else at `tat + n·T − tau`. In time from now, saturating where a word books
        // far ahead of a reading far behind.
        let wait_ticks = (base - now.0)
            .saturating_add(increment)
            .saturating_sub(self.tolerance_ticks);
        if wait_ticks > max_wait_ticks.min(MAX_WAIT_TICKS) {
            return Step::Deny;
        }
        // A start past the time horizon could not be reported (nor waited for) on the clock:
        // refused, as a check there is. `now + wait` fits: both are below 2^63.
        if now.0 + wait_ticks > self.instant(Timestamp::HORIZON).0 {
            return Step::Deny;
        }
        // `base + n·T` is `now + wait + tau` when it waits, at most `now + tau` otherwise.
        Step::Allow(base + increment)
    }

    /// Nanoseconds from `now` until a request of `cost` could start on `state` (0 if it could
    /// start now): the wait a reservation would book, rounded up.
    pub fn wait_ns(&self, tat: u64, now: GcraInstant, cost: u64) -> u64 {
        let increment = cost.saturating_mul(self.emission_interval_ticks);
        let wait_ticks = tat
            .max(now.0)
            .saturating_sub(now.0)
            .saturating_add(increment)
            .saturating_sub(self.tolerance_ticks);
        self.ticks_to_ns(wait_ticks)
    }

    /// When a reservation that wrote `booked` at `now` starts, in nanoseconds since the clock's
    /// origin, rounded up (never early).
    #[inline]
    pub fn start_ns(&self, booked: u64, now: GcraInstant) -> u64 {
        self.ticks_to_ns(booked.saturating_sub(self.tolerance_ticks).max(now.0))
    }

    /// How much a request of `cost` moves the state on (`n·T`, in the state's units): what a
    /// cancellation may give back.
    #[inline]
    pub fn increment_ticks(&self, cost: u64) -> u64 {
        cost.saturating_mul(self.emission_interval_ticks)
    }

    /// How far a word a reservation booked at `now` leads `now`, in the state's units: the
    /// limiter's judging lead is raised to it before the word is written. Not part of the API.
    #[inline]
    pub(crate) fn booked_lead_ticks(&self, booked: u64, now: GcraInstant) -> u64 {
        booked.saturating_sub(now.0)
    }

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
    #[inline]
    pub fn cancel_step(state: u64, booked: u64, increment_ticks: u64) -> Step {
        if state != booked || increment_ticks == 0 {
            // Something admitted since is booked behind it (or there is nothing to give).
            return Step::Deny;
        }
        match booked.checked_sub(increment_ticks) {
            Some(restored) => Step::Allow(restored),
            // Not a word this booking can have written.
            None => Step::Deny,
        }
    }
}

impl Reservable for Gcra {
    #[inline]
    fn max_wait_ticks(&self, max_wait: Duration) -> u64 {
        Gcra::max_wait_ticks(self, max_wait)
    }

    #[inline]
    fn reserve_step(&self, tat: u64, now: GcraInstant, cost: u64, max_wait_ticks: u64) -> Step {
        Gcra::reserve_step(self, tat, now, cost, max_wait_ticks)
    }

    #[inline]
    fn wait_ns(&self, tat: u64, now: GcraInstant, cost: u64) -> u64 {
        Gcra::wait_ns(self, tat, now, cost)
    }

    #[inline]
    fn start_ns(&self, booked: u64, now: GcraInstant) -> u64 {
        Gcra::start_ns(self, booked, now)
    }

    #[inline]
    fn increment_ticks(&self, cost: u64) -> u64 {
        Gcra::increment_ticks(self, cost)
    }

    #[inline]
    fn cancel_step(state: u64, booked: u64, increment_ticks: u64) -> Step {
        Gcra::cancel_step(state, booked, increment_ticks)
    }

    #[inline]
    fn booked_lead_ticks(&self, booked: u64, now: GcraInstant) -> u64 {
        Gcra::booked_lead_ticks(self, booked, now)
    }
}

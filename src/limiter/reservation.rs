//! A reservation: a request booked for a start time, and how it is cancelled.

use super::core::Core;
use super::counters::Counting;
use crate::clock::{Clock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::operation::{Book, Consume, GiveBack};
use crate::engine::request::Request;
use crate::quota::Reservable;
use crate::store::KeyIdentity;
use crate::store::Store;
use core::fmt;
use core::time::Duration;

/// A request booked ahead: the limiter has admitted it for a start time, perhaps in the
/// future, and later requests queue behind it. Or, when the wait it needed was longer than the
/// request allowed (or a full keyed table had no room for its key), a refusal that booked
/// nothing and says how long it would have waited.
///
/// Made by `reserve` and `reserve_with` ([`Limiter`](crate::Limiter),
/// [`KeyedLimiter`](crate::KeyedLimiter)) and [`LeakyBucket::enqueue`](crate::LeakyBucket);
/// the waits (`wait`, `until_ready`) make one and wait for its start.
///
/// A caller that holds a granted reservation must not start before [`start`](Self::start):
/// the limiter has already counted the request there. One that will not use it at all calls
/// [`cancel`](Self::cancel) before then, which gives its cost back if no later request is
/// booked behind it.
/// Dropping a reservation does not cancel it (the async waits do cancel theirs when dropped).
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock};
/// use std::time::Duration;
///
/// let limiter = Limiter::with_clock(Gcra::per_second(10)?.with_burst(1)?, ManualClock::new());
/// let first = limiter.reserve();
/// let second = limiter.reserve();
/// assert_eq!((first.delay(), second.delay()), (Duration::ZERO, Duration::from_millis(100)));
/// // The second one is not needed after all: its 100 ms slot goes to the next request.
/// second.cancel();
/// assert_eq!(limiter.reserve().delay(), Duration::from_millis(100));
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[must_use = "a granted reservation has counted the request: start at `start()`, or cancel it"]
pub struct Reservation<'limiter> {
    outcome: Outcome,
    cost: u64,
    made_at: Timestamp,
    start: Timestamp,
    booking: Option<Booking<'limiter>>,
}

/// What became of a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Booked (or admitted at once, with nothing to give back).
    Granted,
    /// The wait it needed was longer than its maximum wait: nothing was booked.
    TooLong,
    /// A keyed table full of live keys had no slot for its key: nothing was booked.
    TableFull,
}

/// What a cancellation needs: where the booking was made and what it wrote.
#[derive(Clone, Copy)]
pub(crate) struct Booking<'limiter> {
    pub(crate) limiter: &'limiter dyn Cancel,
    pub(crate) key: KeyIdentity,
    pub(crate) booked: u64,
    pub(crate) increment_ticks: u64,
}

/// A limiter's side of a cancellation (object-safe, so a reservation need not name the
/// limiter's type).
pub(crate) trait Cancel: Sync {
    /// A reading of the limiter's clock.
    fn now(&self) -> Timestamp;
    /// Applies the cancellation step, at `now`, to the state of `key` (ignored by direct
    /// limiters).
    fn give_back(&self, key: &KeyIdentity, booked: u64, increment_ticks: u64, now: Timestamp);
}

impl<'limiter> Reservation<'limiter> {
    /// The reservation a decision of the booking operation stands for: `decision` was made at
    /// `at` on the state of `key` in `limiter`.
    #[inline]
    pub(crate) fn from_decision<Q: Reservable>(
        decision: &Decision<Q>,
        at: Timestamp,
        limiter: &'limiter dyn Cancel,
        key: KeyIdentity,
    ) -> Self {
        let cost = decision.cost();
        let (state, now) = decision.judged_state();
        let quota = decision.quota();
        if decision.is_allowed() {
            if decision.is_untracked() || cost == 0 {
                // Nothing was booked: it starts now, and there is nothing to give back.
                return Reservation::unbooked(Outcome::Granted, cost, at, at);
            }
            // The step refuses starts past the horizon: this is a reading of the clock.
            let start = Timestamp::saturating_from_ns(quota.start_ns(state, now).max(at.as_ns()));
            // A key's first booking replaced another key's word (or a vacant slot's): undoing
            // it could return the slot to a value it held under another key (see
            // `Gcra::cancel_step`), so it is not cancellable. It waits only when it
            // evicted a live entry; otherwise it starts at once, with nothing to give back.
            if decision.inserted_its_key() {
                return Reservation::unbooked(Outcome::Granted, cost, at, start);
            }
            return Reservation {
                outcome: Outcome::Granted,
                cost,
                made_at: at,
                start,
                booking: Some(Booking {
                    limiter,
                    key,
                    booked: state,
                    increment_ticks: quota.increment_ticks(cost),
                }),
            };
        }
        Reservation::refused(decision, at)
    }

    /// A direct limiter's booking that starts at once (`booked` written by the check's step
    /// at the reading `at`): it may start at `at` itself.
    #[inline]
    pub(crate) fn at_once(
        cost: u64,
        at: Timestamp,
        limiter: &'limiter dyn Cancel,
        booked: u64,
        increment_ticks: u64,
    ) -> Self {
        Reservation {
            outcome: Outcome::Granted,
            cost,
            made_at: at,
            start: at,
            booking: Some(Booking {
                limiter,
                key: KeyIdentity::default(),
                booked,
                increment_ticks,
            }),
        }
    }

    #[cold]
    fn refused<Q: Reservable>(decision: &Decision<Q>, at: Timestamp) -> Self {
        let (outcome, wait) = if decision.is_untracked() {
            (Outcome::TableFull, decision.retry_after())
        } else {
            let (state, now) = decision.judged_state();
            let wait_ns = decision.quota().wait_ns(state, now, decision.cost());
            (Outcome::TooLong, Duration::from_nanos(wait_ns))
        };
        Reservation::unbooked(outcome, decision.cost(), at, at.saturating_add(wait))
    }

    fn unbooked(outcome: Outcome, cost: u64, made_at: Timestamp, start: Timestamp) -> Self {
        Reservation {
            outcome,
            cost,
            made_at,
            start,
            booking: None,
        }
    }

    /// Whether the request was booked: it may start at [`start`](Self::start).
    #[inline]
    pub fn is_allowed(&self) -> bool {
        self.outcome == Outcome::Granted
    }

    /// Whether the request was refused, booking nothing: its wait would have been longer than
    /// its maximum wait ([`Request::max_wait`](crate::Request::max_wait)), or a full keyed table
    /// had no room for its key.
    #[inline]
    pub fn is_denied(&self) -> bool {
        !self.is_allowed()
    }

    pub(crate) fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The cost booked (or refused).
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// The reading of the limiter's clock the reservation was made at.
    pub fn made_at(&self) -> Timestamp {
        self.made_at
    }

    /// When the request may start, on the limiter's clock (rounded up to the nanosecond: never
    /// early). For a refusal, when it could have started (or, for a full keyed table, when a
    /// slot frees for its key).
    #[inline]
    pub fn start(&self) -> Timestamp {
        self.start
    }

    /// How long after [`made_at`](Self::made_at) the request may start: zero if at once. For a
    /// refusal, how long it would have had to wait.
    #[inline]
    pub fn delay(&self) -> Duration {
        self.start.saturating_duration_since(self.made_at)
    }

    /// How long from `now` (a reading of the limiter's clock) until the request may start: zero
    /// once it may.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Limiter::with_clock(Gcra::per_second(4)?.with_burst(1)?, clock.clone());
    /// let _first = limiter.reserve();
    /// let second = limiter.reserve();
    /// clock.advance(Duration::from_millis(100));
    /// assert_eq!(second.delay_from(limiter.now()), Duration::from_millis(150));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn delay_from(&self, now: Timestamp) -> Duration {
        self.start.saturating_duration_since(now)
    }

    /// Cancels the reservation at the limiter clock's current reading: see
    /// [`cancel_at`](Self::cancel_at).
    pub fn cancel(self) {
        if let Some(booking) = self.booking {
            self.cancel_at(booking.limiter.now());
        }
    }

    /// Cancels the reservation at `now`, a reading of the limiter's clock. If the reservation
    /// has not started yet (`now` is before [`start`](Self::start)) and is still the latest
    /// booking (nothing admitted since is booked behind it), undoes it, giving back its whole
    /// cost; otherwise gives nothing back: requests admitted since keep their start times, so
    /// the time it held stays booked. The rule, why it never leaves the limiter looser than if
    /// the reservation had not been made, and why it does not give back a part as Go's
    /// `x/time/rate` does: [`Gcra::cancel_step`](crate::Gcra::cancel_step). A reservation that has started, or a
    /// refused one, gives nothing back; nor, on a keyed limiter, does a key's first booking
    /// (the one that inserted it), one whose key the table no longer holds, or one made before
    /// the key's shard last gave a slot to another key (an eviction or a reclaim: the key may
    /// have left and come back, and its state is then not the one the booking wrote).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = Limiter::with_clock(Gcra::per_second(10)?.with_burst(1)?, ManualClock::new());
    /// let _now = limiter.reserve();
    /// let later = limiter.reserve(); // in 100 ms
    /// let latest = limiter.reserve(); // in 200 ms, behind `later`
    /// // `latest` depends on all of `later`'s slot: cancelling `later` gives nothing back.
    /// later.cancel();
    /// assert_eq!(limiter.reserve().delay(), Duration::from_millis(300));
    /// # drop(latest);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn cancel_at(self, now: Timestamp) {
        let Some(booking) = self.booking else {
            return;
        };
        if now >= self.start {
            return;
        }
        booking
            .limiter
            .give_back(&booking.key, booking.booked, booking.increment_ticks, now);
    }
}

impl fmt::Debug for Reservation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("outcome", &self.outcome)
            .field("cost", &self.cost)
            .field("made_at", &self.made_at)
            .field("start", &self.start)
            .field("booked", &self.booking.map(|booking| booking.booked))
            .finish()
    }
}

impl<Q: Reservable, S: Store, C: Clock, N: Counting> Core<Q, S, C, N> {
    /// Books one unit now for the key at `at`.
    #[inline]
    pub(crate) fn reserve_one(&self, at: S::At) -> Reservation<'_> {
        let reading = self.clock.now();
        self.reserve(at, &self.quota, 1, reading, u64::MAX)
    }

    /// Books `request` for the key at `at`, or says why it can never pass.
    #[inline]
    pub(crate) fn reserve_with(
        &self,
        at: S::At,
        request: Request<Q>,
    ) -> Result<Reservation<'_>, RequestError> {
        let resolved = self.resolve(&request)?;
        let max_wait_ticks = match request.max_wait {
            Some(max_wait) => resolved.quota.max_wait_ticks(max_wait),
            None => u64::MAX,
        };
        let (quota, cost) = (&resolved.quota, resolved.cost);
        Ok(self.reserve(at, quota, cost, resolved.at, max_wait_ticks))
    }

    /// The core every reservation funnels into: `cost` at the reading `reading`, waiting at
    /// most `max_wait_ticks`.
    #[inline]
    pub(crate) fn reserve(
        &self,
        at: S::At,
        quota: &Q,
        cost: u64,
        reading: Timestamp,
        max_wait_ticks: u64,
    ) -> Reservation<'_> {
        let now = quota.instant(reading);
        if cost > 0 {
            // Most reservations start at once: the check's admission, with no decision to
            // build (the start is the reading itself), where the store can tell cheaply.
            if let Some(booked) = self.store.admit_at_once(Consume, at, quota, cost, now) {
                let increment_ticks = quota.increment_ticks(cost);
                return Reservation::at_once(cost, reading, self, booked, increment_ticks);
            }
        }
        self.reserve_later(at, quota, cost, reading, max_wait_ticks)
    }

    /// [`reserve`](Self::reserve) for a reservation that waits, is refused, costs nothing,
    /// or lost its first race.
    #[cold]
    #[inline(never)]
    fn reserve_later(
        &self,
        at: S::At,
        quota: &Q,
        cost: u64,
        reading: Timestamp,
        max_wait_ticks: u64,
    ) -> Reservation<'_> {
        let book = Book {
            max_wait_ticks,
            lead: &self.lead,
        };
        // Named before the booking's compare-and-swap (see `Table::name`).
        let named = self.store.name(at);
        let decision = self.decide(book, at, quota, cost, quota.instant(reading));
        Reservation::from_decision(&decision, reading, self, named)
    }
}

impl<Q: Reservable, S: Store, C: Clock, N: Counting> Cancel for Core<Q, S, C, N> {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn give_back(&self, key: &KeyIdentity, booked: u64, increment_ticks: u64, now: Timestamp) {
        let give_back = GiveBack {
            booked,
            increment_ticks,
        };
        self.store
            .undo(give_back, key, &self.quota, self.quota.instant(now));
    }
}

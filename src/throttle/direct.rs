//! Reservations and waits on a direct limiter.

use super::reservation::{Cancel, KeyIdentity, Reservation};
use super::wait::{block_until_start, WaitError};
use crate::clock::{Clock, Timestamp};
use crate::counters::Counting;
use crate::direct::Limiter;
use crate::engine::error::RequestError;
use crate::engine::operation::{Book, GiveBack};
use crate::engine::request::Request;
use crate::quota::Reservable;

impl<Q: Reservable, C: Clock, N: Counting> Limiter<Q, C, N> {
    /// Books one unit now, for the earliest start the quota allows: at once if it fits, else
    /// later, with requests booked after it queued behind it. Granted unless the wait would be
    /// longer than a state word can book (at least about 4.5 years) or the start would lie
    /// past the clock's [horizon](Timestamp::HORIZON).
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// // 2 per second, bursts of 2.
    /// let limiter = Limiter::with_clock(Gcra::per_second(2)?, ManualClock::new());
    /// let delays: Vec<_> = (0..4).map(|_| limiter.reserve().delay()).collect();
    /// assert_eq!(delays, [0, 0, 500, 1_000].map(Duration::from_millis));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    #[inline]
    pub fn reserve(&self) -> Reservation<'_> {
        let at = self.clock.now();
        self.reserve_core(&self.quota, 1, at, u64::MAX)
    }

    /// Books `request` (cost, time, tier, longest wait; see [`Request`]) for the earliest start
    /// its quota allows, or refuses it, booking nothing, if that start is further away than
    /// its [`max_wait`](Request::max_wait).
    ///
    /// Errors when the request can never pass: a cost above the quota's limit.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request};
    /// use std::time::Duration;
    ///
    /// // 1,000 bytes per second, bursts of 1,500.
    /// let limiter = Limiter::with_clock(Gcra::per_second(1_000)?.with_burst(1_500)?, ManualClock::new());
    /// assert_eq!(limiter.reserve_with(Request::cost(1_500))?.delay(), Duration::ZERO);
    /// let packet = limiter.reserve_with(Request::cost(500))?;
    /// assert_eq!(packet.delay(), Duration::from_millis(500));
    /// assert!(limiter.reserve_with(Request::cost(2_000)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn reserve_with(&self, request: Request<Q>) -> Result<Reservation<'_>, RequestError> {
        let resolved = request.resolve(&self.quota, &self.lead, &self.clock)?;
        let max_wait_ticks = match request.max_wait {
            Some(max_wait) => resolved.quota.max_wait_ticks(max_wait),
            None => u64::MAX,
        };
        Ok(self.reserve_core(&resolved.quota, resolved.cost, resolved.at, max_wait_ticks))
    }

    /// Waits until one unit may start: books it ([`reserve`](Self::reserve)), then blocks the
    /// thread until its start ([`Clock::sleep_until`]: parked, spinning only for the last
    /// microsecond). Returns the start. Waiters start in the order they booked.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter};
    ///
    /// let limiter = Limiter::new(Gcra::per_second(1_000)?);
    /// let start = limiter.wait()?;
    /// assert!(limiter.now() >= start);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(&self) -> Result<Timestamp, WaitError> {
        self.wait_with(Request::new())
    }

    /// Waits until `request` may start: books it ([`reserve_with`](Self::reserve_with)), then
    /// blocks until its start, plus its [`jitter`](Request::jitter). The deadline form: with a
    /// [`max_wait`](Request::max_wait), a request that could not start within it returns
    /// [`WaitError::TooLong`] at once, booking nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, Limiter, Request, WaitError};
    /// use std::time::Duration;
    ///
    /// let limiter = Limiter::new(Gcra::per_minute(1)?);
    /// limiter.wait()?;
    /// let within_a_second = Request::new().max_wait(Duration::from_secs(1));
    /// assert!(matches!(limiter.wait_with(within_a_second), Err(WaitError::TooLong { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_with(&self, request: Request<Q>) -> Result<Timestamp, WaitError> {
        block_until_start(self.reserve_with(request), request.jitter, &self.clock)
    }

    /// The core every reservation funnels into.
    #[inline]
    pub(crate) fn reserve_core(
        &self,
        quota: &Q,
        cost: u64,
        at: Timestamp,
        max_wait_ticks: u64,
    ) -> Reservation<'_> {
        let now = quota.instant(at);
        if cost > 0 {
            // Most reservations start at once: the check's admission, with no decision to
            // build (the start is the reading itself).
            if let Some(booked) = self.admit_at_once(quota, cost, now) {
                let increment_ticks = quota.increment_ticks(cost);
                return Reservation::at_once(cost, at, self, booked, increment_ticks);
            }
        }
        self.reserve_later(quota, cost, at, now, max_wait_ticks)
    }

    /// [`reserve_core`](Self::reserve_core) for a reservation that waits, is refused, costs
    /// nothing, or lost its first race.
    #[cold]
    #[inline(never)]
    fn reserve_later(
        &self,
        quota: &Q,
        cost: u64,
        at: Timestamp,
        now: Q::Instant,
        max_wait_ticks: u64,
    ) -> Reservation<'_> {
        let book = Book {
            max_wait_ticks,
            lead: &self.lead,
        };
        let decision = self.decide(book, quota, cost, now);
        Reservation::from_decision(&decision, at, self, KeyIdentity::default())
    }
}

impl<Q: Reservable, C: Clock, N: Counting> Cancel for Limiter<Q, C, N> {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn give_back(&self, _key: &KeyIdentity, booked: u64, increment_ticks: u64, now: Timestamp) {
        let give_back = GiveBack {
            booked,
            increment_ticks,
        };
        self.apply(give_back, self.quota.instant(now));
    }
}

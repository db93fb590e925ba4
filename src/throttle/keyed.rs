//! Reservations and waits on a keyed limiter.

use super::reservation::{Cancel, KeyIdentity, Reservation};
use super::wait::{block_until_start, WaitError};
use crate::clock::{Clock, Timestamp};
use crate::counters::Counting;
use crate::engine::error::RequestError;
use crate::engine::operation::{Book, GiveBack};
use crate::engine::request::Request;
use crate::keyed::{KeyMode, KeyedLimiter};
use crate::quota::Reservable;

impl<K: ?Sized, Q: Reservable, C: Clock, M: KeyMode<K>, N: Counting> KeyedLimiter<K, Q, C, M, N> {
    /// Books one unit for `key` now, for the earliest start the quota allows: at once if it
    /// fits, else later, behind the key's earlier bookings. A key the table does not hold is
    /// inserted as a check would insert it; a full table may refuse it
    /// ([`WhenFull`](crate::WhenFull)).
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.reserve("alice").delay(), Duration::ZERO);
    /// assert_eq!(limiter.reserve("alice").delay(), Duration::from_secs(1));
    /// assert_eq!(limiter.reserve("bob").delay(), Duration::ZERO);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn reserve(&self, key: &K) -> Reservation<'_> {
        let at = self.clock.now();
        self.reserve_core(key, &self.quota, 1, at, u64::MAX)
    }

    /// Books `request` for `key` (cost, time, tier, longest wait; see [`Request`]), or refuses
    /// it, booking nothing, if its start is further away than its
    /// [`max_wait`](Request::max_wait) (or the table has no room for a new key).
    ///
    /// Errors when the request can never pass: a cost above its quota's limit, or a tier made
    /// by a limiter whose state counts in other units.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock, Request};
    /// use std::time::Duration;
    ///
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(10)?).clock(ManualClock::new()).build()?;
    /// let patient = Request::cost(10).max_wait(Duration::from_secs(1));
    /// assert!(limiter.reserve_with(&7u64, patient)?.is_granted()); // now
    /// assert!(limiter.reserve_with(&7, patient)?.is_granted()); // in 1 s
    /// assert!(limiter.reserve_with(&7, patient)?.is_refused()); // would be in 2 s
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn reserve_with(
        &self,
        key: &K,
        request: Request<Q>,
    ) -> Result<Reservation<'_>, RequestError> {
        let resolved = request.resolve(&self.quota, &self.lead, &self.clock)?;
        let max_wait_ticks = match request.max_wait {
            Some(max_wait) => resolved.quota.max_wait_ticks(max_wait),
            None => u64::MAX,
        };
        Ok(self.reserve_core(
            key,
            &resolved.quota,
            resolved.cost,
            resolved.at,
            max_wait_ticks,
        ))
    }

    /// Waits until one unit for `key` may start: books it ([`reserve`](Self::reserve)), then
    /// blocks the thread until its start. Returns the start.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<str, _>::new(Gcra::per_second(1_000)?, 1_000)?;
    /// let start = limiter.wait("tenant-1")?;
    /// assert!(limiter.now() >= start);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(&self, key: &K) -> Result<Timestamp, WaitError> {
        self.wait_with(key, Request::new())
    }

    /// Waits until `request` for `key` may start: books it
    /// ([`reserve_with`](Self::reserve_with)), then blocks until its start, plus its
    /// [`jitter`](Request::jitter). With a [`max_wait`](Request::max_wait), a request that
    /// could not start within it returns [`WaitError::TooLong`] at once, booking nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, Request, WaitError};
    /// use std::time::Duration;
    ///
    /// let limiter = KeyedLimiter::<u32, _>::new(Gcra::per_hour(1)?, 1_000)?;
    /// limiter.wait(&1)?;
    /// let request = Request::new().max_wait(Duration::from_secs(1));
    /// assert!(matches!(limiter.wait_with(&1, request), Err(WaitError::TooLong { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_with(&self, key: &K, request: Request<Q>) -> Result<Timestamp, WaitError> {
        block_until_start(self.reserve_with(key, request), request.jitter, &self.clock)
    }

    /// The core every keyed reservation funnels into.
    #[inline]
    pub(crate) fn reserve_core(
        &self,
        key: &K,
        quota: &Q,
        cost: u64,
        at: Timestamp,
        max_wait_ticks: u64,
    ) -> Reservation<'_> {
        let book = Book {
            max_wait_ticks,
            lead: &self.lead,
        };
        let (decision, named) = self.decide_naming_key(book, key, quota, cost, quota.instant(at));
        Reservation::from_decision(&decision, at, self, named)
    }
}

impl<K: ?Sized, Q: Reservable, C: Clock, M: KeyMode<K>, N: Counting> Cancel
    for KeyedLimiter<K, Q, C, M, N>
{
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn give_back(&self, key: &KeyIdentity, booked: u64, increment_ticks: u64, now: Timestamp) {
        let give_back = GiveBack {
            booked,
            increment_ticks,
        };
        self.undo_for_named_key(give_back, key, self.quota.instant(now));
    }
}

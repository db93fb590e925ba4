//! A striped limiter as a [`RateLimit`]: what a composite and the HTTP layer see of it.

use super::StripedLimiter;
use crate::clock::{Clock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::limiter::rate_limit::{Held, RateLimit, Sealed};
use crate::limiter::reservation::Reservation;
use crate::quota::Gcra;
use crate::thread_index;

/// A striped limiter admits from the calling thread's stripe only as the last member of a
/// composite, whose admission no refund follows. Before another member, it is checked on its
/// shared budget directly, as a plain [`Limiter`](crate::Limiter), and refunded as one
/// (exactly, unless something else was admitted on the shared word since: another check, or a
/// stripe's lease): a unit spent from a stripe has no word that giving it back would restore.
/// It is peeked the same way as it is checked in its position.
impl<K: ?Sized, C: Clock> Sealed<K> for StripedLimiter<C> {
    type Quota = Gcra;

    #[inline]
    fn limit(&self) -> u64 {
        self.quota().limit()
    }

    #[inline]
    fn consume(&self, key: &K, cost: u64, now: Timestamp, last: bool) -> (Decision<Gcra>, Held) {
        if last {
            let decision = self.decide(thread_index::current(), cost, now);
            (decision, Held::NOTHING)
        } else {
            Sealed::<K>::consume(self.shared(), key, cost, now, false)
        }
    }

    #[cold]
    fn refund(&self, held: Held, cost: u64, now: Timestamp) {
        Sealed::<K>::refund(self.shared(), held, cost, now);
    }

    #[inline]
    fn peek_at(&self, key: &K, cost: u64, now: Timestamp, last: bool) -> Decision<Gcra> {
        if last {
            self.peek_decision(thread_index::current(), cost, now)
        } else {
            Sealed::<K>::peek_at(self.shared(), key, cost, now, false)
        }
    }

    #[inline]
    fn record(&self, _allowed: bool, _cost: u64) {}
}

impl<K: ?Sized, C: Clock> RateLimit<K> for StripedLimiter<C> {
    #[inline]
    fn now(&self) -> Timestamp {
        StripedLimiter::now(self)
    }

    #[inline]
    fn check(&self, _key: &K) -> Decision<Gcra> {
        StripedLimiter::check(self)
    }

    #[inline]
    fn check_with(&self, _key: &K, request: Request<Gcra>) -> Result<Decision<Gcra>, RequestError> {
        StripedLimiter::check_with(self, request)
    }

    fn peek_with(&self, _key: &K, request: Request<Gcra>) -> Result<Decision<Gcra>, RequestError> {
        StripedLimiter::peek_with(self, request)
    }

    fn reserve_with(
        &self,
        _key: &K,
        request: Request<Gcra>,
    ) -> Result<Reservation<'_>, RequestError> {
        // A stripe's units cannot be booked ahead: the booking goes to the shared budget.
        self.shared().reserve_with(request)
    }
}

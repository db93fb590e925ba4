//! The limiters a layer can put in front of a service: direct and keyed, any quota.

use crate::clock::Clock;
use crate::counters::Counting;
use crate::direct::Limiter;
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::keyed::{KeyMode, KeyedLimiter};
use crate::quota::{Quota, Reservable};
use crate::throttle::Reservation;

/// A limiter an HTTP layer checks requests against: [`Limiter`] (which ignores the key) and
/// [`KeyedLimiter`].
pub trait HttpLimiter<K: ?Sized>: Send + Sync + 'static {
    /// The limiter's quota.
    type Quota: Quota;

    /// Checks `request` for `key`, as the limiter's `check_with` does.
    fn check_with(
        &self,
        key: &K,
        request: Request<Self::Quota>,
    ) -> Result<Decision<Self::Quota>, RequestError>;

    /// Checks one unit for `key` on the limiter's own quota and clock, as the limiter's
    /// `check` does.
    fn check_one(&self, key: &K) -> Decision<Self::Quota>;

    /// Judges `request` for `key` without consuming anything, as the limiter's `peek_with`
    /// does.
    fn peek_with(
        &self,
        key: &K,
        request: Request<Self::Quota>,
    ) -> Result<Decision<Self::Quota>, RequestError>;
}

/// A limiter that can also book requests ahead: what the layer's delay mode needs.
pub trait HttpReservingLimiter<K: ?Sized>: HttpLimiter<K>
where
    Self::Quota: Reservable,
{
    /// Books `request` for `key`, as the limiter's `reserve_with` does.
    fn reserve_with(
        &self,
        key: &K,
        request: Request<Self::Quota>,
    ) -> Result<Reservation<'_>, RequestError>;
}

impl<K: ?Sized, Q: Quota, C: Clock + 'static, N: Counting + 'static> HttpLimiter<K>
    for Limiter<Q, C, N>
{
    type Quota = Q;

    #[inline]
    fn check_with(&self, _key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        Limiter::check_with(self, request)
    }

    #[inline]
    fn check_one(&self, _key: &K) -> Decision<Q> {
        Limiter::check(self)
    }

    fn peek_with(&self, _key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        Limiter::peek_with(self, request)
    }
}

impl<K: ?Sized, Q: Reservable, C: Clock + 'static, N: Counting + 'static> HttpReservingLimiter<K>
    for Limiter<Q, C, N>
{
    fn reserve_with(&self, _key: &K, request: Request<Q>) -> Result<Reservation<'_>, RequestError> {
        Limiter::reserve_with(self, request)
    }
}

impl<K, Q, C, M, N> HttpLimiter<K> for KeyedLimiter<K, Q, C, M, N>
where
    K: ?Sized + 'static,
    Q: Quota,
    C: Clock + 'static,
    M: KeyMode<K> + 'static,
    N: Counting + 'static,
{
    type Quota = Q;

    #[inline]
    fn check_with(&self, key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        KeyedLimiter::check_with(self, key, request)
    }

    #[inline]
    fn check_one(&self, key: &K) -> Decision<Q> {
        KeyedLimiter::check(self, key)
    }

    fn peek_with(&self, key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        KeyedLimiter::peek_with(self, key, request)
    }
}

impl<K, Q, C, M, N> HttpReservingLimiter<K> for KeyedLimiter<K, Q, C, M, N>
where
    K: ?Sized + 'static,
    Q: Reservable,
    C: Clock + 'static,
    M: KeyMode<K> + 'static,
    N: Counting + 'static,
{
    fn reserve_with(&self, key: &K, request: Request<Q>) -> Result<Reservation<'_>, RequestError> {
        KeyedLimiter::reserve_with(self, key, request)
    }
}

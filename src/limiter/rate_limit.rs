//! [`RateLimit`]: a rate limit on requests for keys of one type, whatever the limiter behind
//! it. What a [`Composite`](crate::composite::Composite) combines and what the HTTP layer
//! checks, written once for every limiter through the core.

use super::core::Core;
use super::counters::Counting;
use super::direct::Limiter;
#[cfg(feature = "std")]
use super::keyed::KeyedLimiter;
use super::reservation::Reservation;
use crate::clock::{Clock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::operation::{Consume, Refund};
use crate::engine::request::Request;
use crate::quota::{Quota, Reservable};
#[cfg(feature = "std")]
use crate::store::table::KeyMode;
use crate::store::Store;
use alloc::sync::Arc;

pub(crate) mod private {
    use crate::clock::Timestamp;
    use crate::engine::decision::Decision;
    use crate::store::KeyIdentity;

    /// What a member's admission left to give back if a later member of a composite denies the
    /// check: the key as named before the admission, and the word it wrote. Opaque outside the
    /// crate.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Held(pub(crate) Option<(KeyIdentity, u64)>);

    impl Held {
        /// Nothing to give back.
        pub(crate) const NOTHING: Held = Held(None);
    }

    /// Seals [`RateLimit`](super::RateLimit), and holds what only the crate calls: a
    /// composite's protocol (`src/composite/`).
    pub trait Sealed<K: ?Sized> {
        /// The quota its decisions report.
        type Quota: crate::quota::Quota;

        /// The most cost one request may have.
        fn limit(&self) -> u64;

        /// A check of `cost` (at most the limit) at `now`, and what a refund would give back
        /// (nothing when `last`: no member follows it). Not counted: the composite counts its
        /// own outcome ([`record`](Self::record)).
        fn consume(
            &self,
            key: &K,
            cost: u64,
            now: Timestamp,
            last: bool,
        ) -> (Decision<Self::Quota>, Held);

        /// Gives back what `held` names, through the crate's one compare-and-swap driver.
        fn refund(&self, held: Held, cost: u64, now: Timestamp);

        /// Whether `cost` would pass at `now`, writing nothing, judged as `consume` with the
        /// same `last` would judge it.
        fn peek_at(&self, key: &K, cost: u64, now: Timestamp, last: bool) -> Decision<Self::Quota>;

        /// Counts a check of `cost` that was `allowed` (a composite's outcome), if the limiter
        /// counts.
        fn record(&self, allowed: bool, cost: u64);
    }
}
pub(crate) use private::{Held, Sealed};

/// A rate limit on requests for keys of type `K`: a [`Limiter`] or a
/// [`StripedLimiter`](crate::striped::StripedLimiter) (any key: they ignore it) or a [`KeyedLimiter`]
/// keyed by `K`, owned or behind a reference or an [`Arc`] (so that several users can share
/// one limiter, such as a global limit). What a [`Composite`](crate::composite::Composite)
/// combines, all or nothing, and what the HTTP layer puts in front of a service. Sealed.
///
/// ```
/// use nanolimit::{Gcra, KeyedLimiter, Limiter, RateLimit, Request};
///
/// fn admit<K: ?Sized, L: RateLimit<K>>(limit: &L, key: &K) -> bool {
///     limit.check(key).is_allowed()
/// }
/// let global = Limiter::new(Gcra::per_second(50_000)?);
/// let per_ip = KeyedLimiter::<u32, _>::new(Gcra::per_second(1)?, 1_000)?;
/// assert!(admit(&global, &7u32));
/// assert!(admit(&per_ip, &7));
/// assert!(!admit(&per_ip, &7));
/// assert!(per_ip.check_with(&8, Request::cost(2)).is_err()); // above the burst
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait RateLimit<K: ?Sized>: Sealed<K> + Send + Sync {
    /// A reading of the limiter's clock.
    fn now(&self) -> Timestamp;

    /// Checks one unit for `key` now, as the limiter's `check` does.
    fn check(&self, key: &K) -> Decision<Self::Quota>;

    /// Checks `request` for `key`, as the limiter's `check_with` does.
    fn check_with(
        &self,
        key: &K,
        request: Request<Self::Quota>,
    ) -> Result<Decision<Self::Quota>, RequestError>;

    /// Judges `request` for `key` without consuming anything, as the limiter's `peek_with`
    /// does.
    fn peek_with(
        &self,
        key: &K,
        request: Request<Self::Quota>,
    ) -> Result<Decision<Self::Quota>, RequestError>;

    /// Books `request` for `key`, as the limiter's `reserve_with` does (GCRA quotas).
    fn reserve_with(
        &self,
        key: &K,
        request: Request<Self::Quota>,
    ) -> Result<Reservation<'_>, RequestError>
    where
        Self::Quota: Reservable;
}

impl<Q: Quota, S: Store, C: Clock, N: Counting> Core<Q, S, C, N> {
    /// A composite's check of the key at `at`, and what its refund would give back: the key as
    /// named before the admission (see `Table::name`), and the word the admission wrote.
    #[inline]
    pub(crate) fn consume(
        &self,
        at: S::At,
        cost: u64,
        now: Timestamp,
        last: bool,
    ) -> (Decision<Q>, Held) {
        let now = self.quota.instant(now);
        if last {
            return (
                self.decide(Consume, at, &self.quota, cost, now),
                Held::NOTHING,
            );
        }
        let named = self.store.name(at);
        let decision = self.decide(Consume, at, &self.quota, cost, now);
        // The refund goes through the guarded driver only while the key's shard has reassigned
        // no slot since `named` was read, before this admission. So a key's first admission is
        // refunded only if it took a vacant slot (one that never held another key, whose words
        // no stale check can have observed); one that reclaimed or evicted another key's slot
        // counted that reassignment itself, and is not refunded, as a key's first booking is not
        // cancellable. An untracked admission stored nothing.
        let refundable = cost != 0 && decision.is_allowed() && !decision.is_untracked();
        let held = match refundable {
            true => Held(Some((named, decision.judged_state().0))),
            false => Held::NOTHING,
        };
        (decision, held)
    }

    /// Gives back what a composite's admission `held`.
    #[cold]
    pub(crate) fn refund(&self, held: Held, cost: u64, now: Timestamp) {
        if let Some((key, written)) = held.0 {
            let refund = Refund { written, cost };
            self.store
                .undo(refund, &key, &self.quota, self.quota.instant(now));
        }
    }
}

impl<K: ?Sized, Q: Quota, C: Clock, N: Counting> Sealed<K> for Limiter<Q, C, N> {
    type Quota = Q;

    #[inline]
    fn limit(&self) -> u64 {
        self.core.quota.limit()
    }

    #[inline]
    fn consume(&self, _key: &K, cost: u64, now: Timestamp, last: bool) -> (Decision<Q>, Held) {
        self.core.consume((), cost, now, last)
    }

    #[cold]
    fn refund(&self, held: Held, cost: u64, now: Timestamp) {
        self.core.refund(held, cost, now);
    }

    #[inline]
    fn peek_at(&self, _key: &K, cost: u64, now: Timestamp, _last: bool) -> Decision<Q> {
        let core = &self.core;
        core.peek((), &core.quota, cost, core.quota.instant(now))
    }

    #[inline]
    fn record(&self, allowed: bool, cost: u64) {
        self.core.counters.record(allowed, cost);
    }
}

impl<K: ?Sized, Q: Quota, C: Clock, N: Counting> RateLimit<K> for Limiter<Q, C, N> {
    #[inline]
    fn now(&self) -> Timestamp {
        self.core.clock.now()
    }

    #[inline]
    fn check(&self, _key: &K) -> Decision<Q> {
        Limiter::check(self)
    }

    #[inline]
    fn check_with(&self, _key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        Limiter::check_with(self, request)
    }

    fn peek_with(&self, _key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        Limiter::peek_with(self, request)
    }

    fn reserve_with(&self, _key: &K, request: Request<Q>) -> Result<Reservation<'_>, RequestError>
    where
        Q: Reservable,
    {
        self.core.reserve_with((), request)
    }
}

#[cfg(feature = "std")]
impl<K: ?Sized, Q: Quota, C: Clock, M: KeyMode<K>, N: Counting> Sealed<K>
    for KeyedLimiter<K, Q, C, M, N>
{
    type Quota = Q;

    #[inline]
    fn limit(&self) -> u64 {
        self.core.quota.limit()
    }

    #[inline]
    fn consume(&self, key: &K, cost: u64, now: Timestamp, last: bool) -> (Decision<Q>, Held) {
        self.core.consume(self.locate(key), cost, now, last)
    }

    #[cold]
    fn refund(&self, held: Held, cost: u64, now: Timestamp) {
        self.core.refund(held, cost, now);
    }

    #[inline]
    fn peek_at(&self, key: &K, cost: u64, now: Timestamp, _last: bool) -> Decision<Q> {
        let core = &self.core;
        core.peek(self.locate(key), &core.quota, cost, core.quota.instant(now))
    }

    #[inline]
    fn record(&self, allowed: bool, cost: u64) {
        self.core.counters.record(allowed, cost);
    }
}

#[cfg(feature = "std")]
impl<K: ?Sized, Q: Quota, C: Clock, M: KeyMode<K>, N: Counting> RateLimit<K>
    for KeyedLimiter<K, Q, C, M, N>
{
    #[inline]
    fn now(&self) -> Timestamp {
        self.core.clock.now()
    }

    #[inline]
    fn check(&self, key: &K) -> Decision<Q> {
        KeyedLimiter::check(self, key)
    }

    #[inline]
    fn check_with(&self, key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        KeyedLimiter::check_with(self, key, request)
    }

    fn peek_with(&self, key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        KeyedLimiter::peek_with(self, key, request)
    }

    fn reserve_with(&self, key: &K, request: Request<Q>) -> Result<Reservation<'_>, RequestError>
    where
        Q: Reservable,
    {
        self.core.reserve_with(self.locate(key), request)
    }
}

/// Forwards every operation to the limiter behind a reference or an [`Arc`].
macro_rules! forward_rate_limit {
    ($($pointer:ty),+) => {$(
        impl<K: ?Sized, T: RateLimit<K> + ?Sized> Sealed<K> for $pointer {
            type Quota = T::Quota;

            #[inline]
            fn limit(&self) -> u64 {
                (**self).limit()
            }

            #[inline]
            fn consume(
                &self,
                key: &K,
                cost: u64,
                now: Timestamp,
                last: bool,
            ) -> (Decision<Self::Quota>, Held) {
                (**self).consume(key, cost, now, last)
            }

            #[inline]
            fn refund(&self, held: Held, cost: u64, now: Timestamp) {
                (**self).refund(held, cost, now)
            }

            #[inline]
            fn peek_at(
                &self,
                key: &K,
                cost: u64,
                now: Timestamp,
                last: bool,
            ) -> Decision<Self::Quota> {
                (**self).peek_at(key, cost, now, last)
            }

            #[inline]
            fn record(&self, allowed: bool, cost: u64) {
                (**self).record(allowed, cost)
            }
        }

        impl<K: ?Sized, T: RateLimit<K> + ?Sized> RateLimit<K> for $pointer {
            #[inline]
            fn now(&self) -> Timestamp {
                (**self).now()
            }

            #[inline]
            fn check(&self, key: &K) -> Decision<Self::Quota> {
                (**self).check(key)
            }

            #[inline]
            fn check_with(
                &self,
                key: &K,
                request: Request<Self::Quota>,
            ) -> Result<Decision<Self::Quota>, RequestError> {
                (**self).check_with(key, request)
            }

            fn peek_with(
                &self,
                key: &K,
                request: Request<Self::Quota>,
            ) -> Result<Decision<Self::Quota>, RequestError> {
                (**self).peek_with(key, request)
            }

            fn reserve_with(
                &self,
                key: &K,
                request: Request<Self::Quota>,
            ) -> Result<Reservation<'_>, RequestError>
            where
                Self::Quota: Reservable,
            {
                (**self).reserve_with(key, request)
            }
        }
    )+};
}

forward_rate_limit!(&T, Arc<T>);

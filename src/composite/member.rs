//! What a limiter does as a member of a composite: consume for the composite, give back on a
//! later member's denial, and peek. Direct limiters ignore the key; keyed ones take it.

use crate::clock::{Clock, Timestamp};
use crate::direct::Limiter;
use crate::engine::decision::Decision;
use crate::engine::operation::{Consume, Refund};
use crate::keyed::{KeyMode, KeyedLimiter};
use crate::quota::{Gcra, Quota};
use crate::striped::StripedLimiter;
use crate::thread_index;
use std::sync::Arc;

mod private {
    use crate::clock::Timestamp;
    use crate::engine::decision::Decision;
    use crate::throttle::KeyIdentity;

    /// What a member's admission left to give back if a later member denies the check (opaque
    /// outside the crate).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Held(pub(crate) HeldUnits);

    /// What [`Held`] holds.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum HeldUnits {
        /// Nothing: the member did not admit, admitted at no cost, is the last one checked
        /// (never followed by a denial), or stored nothing (a key a full table did not track).
        Nothing,
        /// A direct limiter's admission, which wrote `written`.
        Direct { written: u64 },
        /// A keyed admission for `key`, which wrote `written`.
        Keyed { key: KeyIdentity, written: u64 },
    }

    impl Held {
        /// Nothing to give back.
        pub(crate) const NOTHING: Held = Held(HeldUnits::Nothing);
    }

    /// What a member does for a composite; sealed, and what only the crate calls.
    pub trait MemberCore<K: ?Sized> {
        /// The member's quota.
        type Quota: crate::Quota;

        /// A reading of the member's clock.
        fn member_now(&self) -> Timestamp;

        /// The most cost one request may have on this member.
        fn member_limit(&self) -> u64;

        /// A check of `cost` (at most the limit) at `now`, and what a refund would give back
        /// (nothing when `last`: no member follows it).
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
        fn member_peek(
            &self,
            key: &K,
            cost: u64,
            now: Timestamp,
            last: bool,
        ) -> Decision<Self::Quota>;
    }
}
pub(crate) use private::{Held, HeldUnits, MemberCore};

/// A limiter that can be a member of a [`Composite`](super::Composite): a direct [`Limiter`]
/// or [`StripedLimiter`] (any key: they ignore it) or a [`KeyedLimiter`] keyed by `K`, owned or
/// behind a reference or an [`Arc`] (so that several composites can share one member, such as
/// a global limit). Sealed. Sliding logs and in-flight limiters are not members (see the
/// [module documentation](super)).
///
/// ```
/// use nanolimit::composite::Member;
/// use nanolimit::{Gcra, KeyedLimiter, Limiter, StripedLimiter};
///
/// fn is_member<K: ?Sized, M: Member<K>>(_: &M) {}
/// let global = Limiter::new(Gcra::per_second(50_000)?);
/// let striped_global = StripedLimiter::new(Gcra::per_second(50_000)?);
/// let per_ip = KeyedLimiter::<u32, _>::new(Gcra::per_second(100)?, 1_000)?;
/// is_member::<u32, _>(&global);
/// is_member::<u32, _>(&striped_global);
/// is_member::<u32, _>(&per_ip);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Member<K: ?Sized>: MemberCore<K> {}

impl<K: ?Sized, T: MemberCore<K> + ?Sized> Member<K> for T {}

impl<K: ?Sized, Q: Quota, C: Clock> MemberCore<K> for Limiter<Q, C> {
    type Quota = Q;

    #[inline]
    fn member_now(&self) -> Timestamp {
        self.clock.now()
    }

    #[inline]
    fn member_limit(&self) -> u64 {
        self.quota.limit()
    }

    #[inline]
    fn consume(&self, _key: &K, cost: u64, now: Timestamp, last: bool) -> (Decision<Q>, Held) {
        let decision = self.decide(Consume, &self.quota, cost, self.quota.instant(now));
        let held = if last || cost == 0 || decision.is_denied() {
            Held::NOTHING
        } else {
            Held(HeldUnits::Direct {
                written: decision.judged_state().0,
            })
        };
        (decision, held)
    }

    #[cold]
    fn refund(&self, held: Held, cost: u64, now: Timestamp) {
        if let HeldUnits::Direct { written } = held.0 {
            self.apply(Refund { written, cost }, self.quota.instant(now));
        }
    }

    #[inline]
    fn member_peek(&self, _key: &K, cost: u64, now: Timestamp, _last: bool) -> Decision<Q> {
        self.peek_decision(&self.quota, cost, self.quota.instant(now))
    }
}

impl<K: ?Sized, Q: Quota, C: Clock, M: KeyMode<K>> MemberCore<K> for KeyedLimiter<K, Q, C, M> {
    type Quota = Q;

    #[inline]
    fn member_now(&self) -> Timestamp {
        self.clock.now()
    }

    #[inline]
    fn member_limit(&self) -> u64 {
        self.quota.limit()
    }

    #[inline]
    fn consume(&self, key: &K, cost: u64, now: Timestamp, last: bool) -> (Decision<Q>, Held) {
        let now = self.quota.instant(now);
        if last {
            return (
                self.decide(Consume, key, &self.quota, cost, now),
                Held::NOTHING,
            );
        }
        let (decision, named) = self.decide_naming_key(Consume, key, &self.quota, cost, now);
        // The refund goes through the guarded driver only while the key's shard has reassigned
        // no slot since `named` was read, before this admission. So a key's first admission is
        // refunded only if it took a vacant slot (one that never held another key, whose words
        // no stale check can have observed); one that reclaimed or evicted another key's slot
        // counted that reassignment itself, and is not refunded, as a key's first booking is not
        // cancellable. An untracked admission stored nothing.
        let refundable = cost != 0 && decision.is_allowed() && !decision.is_untracked();
        let held = if refundable {
            Held(HeldUnits::Keyed {
                key: named,
                written: decision.judged_state().0,
            })
        } else {
            Held::NOTHING
        };
        (decision, held)
    }

    #[cold]
    fn refund(&self, held: Held, cost: u64, now: Timestamp) {
        if let HeldUnits::Keyed { key, written } = held.0 {
            self.undo_for_named_key(Refund { written, cost }, &key, self.quota.instant(now));
        }
    }

    #[inline]
    fn member_peek(&self, key: &K, cost: u64, now: Timestamp, _last: bool) -> Decision<Q> {
        self.peek_decision(key, &self.quota, cost, self.quota.instant(now))
    }
}

/// A striped limiter admits from the calling thread's stripe only as the last member, whose
/// admission no refund follows. Before another member, it is checked on its shared budget
/// directly, as a plain [`Limiter`], and refunded as one (exactly, unless something else was
/// admitted on the shared word since: another check, or a stripe's lease): a unit spent from a
/// stripe has no word that giving it back would restore. It is peeked the same way as it is
/// checked in its position.
impl<K: ?Sized, C: Clock> MemberCore<K> for StripedLimiter<C> {
    type Quota = Gcra;

    #[inline]
    fn member_now(&self) -> Timestamp {
        self.now()
    }

    #[inline]
    fn member_limit(&self) -> u64 {
        self.quota().limit()
    }

    #[inline]
    fn consume(&self, key: &K, cost: u64, now: Timestamp, last: bool) -> (Decision<Gcra>, Held) {
        if last {
            (
                self.decide(thread_index::current(), cost, now),
                Held::NOTHING,
            )
        } else {
            MemberCore::<K>::consume(self.shared(), key, cost, now, false)
        }
    }

    #[cold]
    fn refund(&self, held: Held, cost: u64, now: Timestamp) {
        MemberCore::<K>::refund(self.shared(), held, cost, now);
    }

    #[inline]
    fn member_peek(&self, key: &K, cost: u64, now: Timestamp, last: bool) -> Decision<Gcra> {
        if last {
            self.peek_decision(thread_index::current(), cost, now)
        } else {
            MemberCore::<K>::member_peek(self.shared(), key, cost, now, false)
        }
    }
}

/// Forwards every operation to the member behind a reference or an [`Arc`].
macro_rules! forward_member {
    ($($pointer:ty),+) => {$(
        impl<K: ?Sized, T: MemberCore<K> + ?Sized> MemberCore<K> for $pointer {
            type Quota = T::Quota;

            #[inline]
            fn member_now(&self) -> Timestamp {
                (**self).member_now()
            }

            #[inline]
            fn member_limit(&self) -> u64 {
                (**self).member_limit()
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
            fn member_peek(
                &self,
                key: &K,
                cost: u64,
                now: Timestamp,
                last: bool,
            ) -> Decision<Self::Quota> {
                (**self).member_peek(key, cost, now, last)
            }
        }
    )+};
}

forward_member!(&T, Arc<T>);

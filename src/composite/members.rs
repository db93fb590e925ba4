//! A composite's members as a tuple: the one core of every composite check (consume in order,
//! give back on a later denial) and of every peek, and the members' decisions as a tuple.

use crate::clock::Timestamp;
use crate::engine::decision::{Decision, RateLimitHeaders};
use crate::limiter::rate_limit::{Held, RateLimit};
use std::time::Duration;

mod private {
    use crate::clock::Timestamp;
    use crate::engine::decision::RateLimitHeaders;
    use std::time::Duration;

    /// The core of a composite: sealed, and what only the crate calls.
    pub trait MembersCore<K: ?Sized> {
        /// The members' decisions, in the members' order.
        type Decisions: DecisionsCore;

        /// A reading of the first member's clock: the composite's one clock read per check.
        fn first_member_now(&self) -> Timestamp;

        /// The smallest of the members' limits: the most cost a request may have.
        fn smallest_limit(&self) -> u64;

        /// The composite check: whether every member admitted `cost` at `now` (then each
        /// consumed it; else none did), and each member's decision.
        fn check_all(&self, key: &K, cost: u64, now: Timestamp) -> (bool, Self::Decisions);

        /// Whether every member would admit `cost` at `now`, writing nothing.
        fn peek_all(&self, key: &K, cost: u64, now: Timestamp) -> (bool, Self::Decisions);
    }

    /// What a composite decision reads of its members' decisions, by position.
    pub trait DecisionsCore {
        /// How many members there are.
        const COUNT: usize;
        /// Whether member `index` admitted (or would admit).
        fn allowed(&self, index: usize) -> bool;
        /// Member `index`'s limit.
        fn limit(&self, index: usize) -> u64;
        /// Member `index`'s remaining.
        fn remaining(&self, index: usize) -> u64;
        /// Member `index`'s reset-after.
        fn reset_after(&self, index: usize) -> Duration;
        /// Member `index`'s retry-after.
        fn retry_after(&self, index: usize) -> Duration;
        /// Member `index`'s header values.
        fn headers(&self, index: usize) -> RateLimitHeaders;
    }
}
pub(crate) use private::{DecisionsCore, MembersCore};

/// The members of a [`Composite`](super::Composite) checked with keys of type `K`: a tuple of
/// two to four [`RateLimit`]s, checked in the tuple's order. Sealed.
///
/// ```
/// use nanolimit::composite::Members;
/// use nanolimit::{Gcra, KeyedLimiter, Limiter, SlidingWindow};
///
/// fn are_members<K: ?Sized, M: Members<K>>(_: &M) {}
/// let per_ip = KeyedLimiter::<u32, _>::new(Gcra::per_second(100)?, 1_000)?;
/// let global = Limiter::new(SlidingWindow::per_second(50_000)?);
/// are_members::<u32, _>(&(&per_ip, &global));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Members<K: ?Sized>: MembersCore<K> {}

impl<K: ?Sized, T: MembersCore<K>> Members<K> for T {}

/// The decisions of a composite's members, in the members' order: a tuple of
/// [`Decision`]s, one per member, read through
/// [`CompositeDecision::members`](super::CompositeDecision::members). Sealed.
///
/// ```
/// use nanolimit::composite::MemberDecisions;
/// use nanolimit::{Decision, FixedWindow, Gcra};
///
/// fn are_decisions<D: MemberDecisions>() {}
/// are_decisions::<(Decision<Gcra>, Decision<FixedWindow>)>();
/// ```
pub trait MemberDecisions: DecisionsCore {}

impl<T: DecisionsCore> MemberDecisions for T {}

/// Implements the core for tuples of members: `$count` members, at positions `$index`, of
/// types `$member`.
macro_rules! members_tuple {
    ($count:literal; $($index:tt $member:ident),+) => {
        impl<K: ?Sized, $($member: RateLimit<K>),+> MembersCore<K> for ($($member,)+) {
            type Decisions = ($(Decision<$member::Quota>,)+);

            #[inline]
            fn first_member_now(&self) -> Timestamp {
                self.0.now()
            }

            #[inline]
            fn smallest_limit(&self) -> u64 {
                let mut smallest = u64::MAX;
                $(smallest = smallest.min(self.$index.limit());)+
                smallest
            }

            // The last member's `held` is never read: nothing follows it to deny.
            #[allow(unused_assignments)]
            #[inline]
            fn check_all(&self, key: &K, cost: u64, now: Timestamp) -> (bool, Self::Decisions) {
                let mut held = [Held::NOTHING; $count];
                let decisions = ($(
                    {
                        let (decision, held_here) =
                            self.$index.consume(key, cost, now, $index + 1 == $count);
                        if decision.is_denied() {
                            let mut found = <Self as MembersRefund<K>>::nothing_found();
                            found.$index = Some(decision);
                            return (false, self.refund_and_peek($index, &held, found, key, cost, now));
                        }
                        held[$index] = held_here;
                        decision
                    },
                )+);
                $(self.$index.record(true, cost);)+
                (true, decisions)
            }

            #[inline]
            fn peek_all(&self, key: &K, cost: u64, now: Timestamp) -> (bool, Self::Decisions) {
                let decisions = ($(self.$index.peek_at(key, cost, now, $index + 1 == $count),)+);
                let allowed = true $(&& decisions.$index.is_allowed())+;
                (allowed, decisions)
            }
        }

        impl<$($member: RateLimit<K>),+, K: ?Sized> MembersRefund<K> for ($($member,)+) {
            type Found = ($(Option<Decision<$member::Quota>>,)+);

            #[inline]
            fn nothing_found() -> Self::Found {
                ($(None::<Decision<$member::Quota>>,)+)
            }

            #[cold]
            #[inline(never)]
            fn refund_and_peek(
                &self,
                denier: usize,
                held: &[Held],
                found: Self::Found,
                key: &K,
                cost: u64,
                now: Timestamp,
            ) -> <Self as MembersCore<K>>::Decisions {
                $(self.$index.record(false, cost);)+
                // Latest first: the members consumed before the denier, in reverse order (so a
                // limiter that is a member twice is undone as reservations are).
                for index in (0..denier).rev() {
                    match index {
                        $($index => self.$index.refund(held[$index], cost, now),)+
                        _ => {}
                    }
                }
                // Every other member as it stands after the refunds: the decisions the binding
                // member is chosen from.
                ($(match found.$index {
                    Some(decision) => decision,
                    None => self.$index.peek_at(key, cost, now, $index + 1 == $count),
                },)+)
            }
        }

        impl<$($member: crate::quota::Quota),+> DecisionsCore for ($(Decision<$member>,)+) {
            const COUNT: usize = $count;

            fn allowed(&self, index: usize) -> bool {
                match index {
                    $($index => self.$index.is_allowed(),)+
                    _ => false,
                }
            }

            fn limit(&self, index: usize) -> u64 {
                match index {
                    $($index => self.$index.limit(),)+
                    _ => 0,
                }
            }

            fn remaining(&self, index: usize) -> u64 {
                match index {
                    $($index => self.$index.remaining(),)+
                    _ => 0,
                }
            }

            fn reset_after(&self, index: usize) -> Duration {
                match index {
                    $($index => self.$index.reset_after(),)+
                    _ => Duration::ZERO,
                }
            }

            fn retry_after(&self, index: usize) -> Duration {
                match index {
                    $($index => self.$index.retry_after(),)+
                    _ => Duration::ZERO,
                }
            }

            fn headers(&self, index: usize) -> RateLimitHeaders {
                match index {
                    $($index => self.$index.headers(),)+
                    _ => self.0.headers(),
                }
            }
        }
    };
}

/// The cold half of a composite check: the refunds after a denial.
trait MembersRefund<K: ?Sized>: MembersCore<K> {
    /// The decision of the member that denied, at its position (the others `None`).
    type Found;

    /// No decision found at any position.
    fn nothing_found() -> Self::Found;

    /// Gives back what the members before `denier` consumed (`held`), then peeks every member
    /// but the denier.
    fn refund_and_peek(
        &self,
        denier: usize,
        held: &[Held],
        found: Self::Found,
        key: &K,
        cost: u64,
        now: Timestamp,
    ) -> Self::Decisions;
}

members_tuple!(2; 0 A, 1 B);
members_tuple!(3; 0 A, 1 B, 2 C);
members_tuple!(4; 0 A, 1 B, 2 C, 3 D);

//! A composite's members as a tuple: the one core of every composite check (consume in order,
//! give back on a later denial) and of every peek.

use crate::clock::Timestamp;
use crate::engine::decision::Decision;
use crate::limiter::rate_limit::{Held, RateLimit};

mod private {
    use crate::clock::Timestamp;
    use crate::engine::decision::Decision;
    use crate::engine::judge::Judge;

    /// The members of a [`Composite`](crate::composite::Composite) checked with keys of type
    /// `K`: a tuple of two to four [`RateLimit`](crate::RateLimit)s, checked in the tuple's
    /// order. Sealed and named only inside the crate: a composite's type names its tuple.
    pub trait Members<K: ?Sized> {
        /// The members' quotas, in the members' order: what a composite's decision judges.
        type Quotas: Judge;

        /// A reading of the first member's clock: the composite's one clock read per check.
        fn first_member_now(&self) -> Timestamp;

        /// The smallest of the members' limits: the most cost a request may have.
        fn smallest_limit(&self) -> u64;

        /// The composite check: allowed if every member admitted `cost` at `now` (then each
        /// consumed it; else none did), with each member's decision.
        fn check_all(&self, key: &K, cost: u64, now: Timestamp) -> Decision<Self::Quotas>;

        /// Whether every member would admit `cost` at `now`, writing nothing.
        fn peek_all(&self, key: &K, cost: u64, now: Timestamp) -> Decision<Self::Quotas>;
    }
}
pub(crate) use private::Members;

/// Implements the core for tuples of members: `$count` members, at positions `$index`, of
/// types `$member`.
macro_rules! members_tuple {
    ($count:literal; $($index:tt $member:ident),+) => {
        impl<K: ?Sized, $($member: RateLimit<K>),+> Members<K> for ($($member,)+) {
            type Quotas = ($($member::Quota,)+);

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
            fn check_all(&self, key: &K, cost: u64, now: Timestamp) -> Decision<Self::Quotas> {
                let mut held = [Held::NOTHING; $count];
                let decisions = ($(
                    {
                        let (decision, held_here) =
                            self.$index.consume(key, cost, now, $index + 1 == $count);
                        if decision.is_denied() {
                            let mut found = <Self as MembersRefund<K>>::nothing_found();
                            found.$index = Some(decision);
                            let members = self.refund_and_peek($index, &held, found, key, cost, now);
                            return Decision::<Self::Quotas>::of_members(members);
                        }
                        held[$index] = held_here;
                        decision
                    },
                )+);
                $(self.$index.record(true, cost);)+
                Decision::<Self::Quotas>::of_members(decisions)
            }

            #[inline]
            fn peek_all(&self, key: &K, cost: u64, now: Timestamp) -> Decision<Self::Quotas> {
                Decision::<Self::Quotas>::of_members(($(self.$index.peek_at(key, cost, now, $index + 1 == $count),)+))
            }
        }

        impl<$($member: RateLimit<K>),+, K: ?Sized> MembersRefund<K> for ($($member,)+) {
            type Decisions = ($(Decision<$member::Quota>,)+);
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
            ) -> Self::Decisions {
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
    };
}

/// The cold half of a composite check: the refunds after a denial.
trait MembersRefund<K: ?Sized>: Members<K> {
    /// The members' decisions, in the members' order.
    type Decisions;

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

//! Decisions on tuples of quotas, a composite's members: [`Judge`] for a tuple reports the
//! figures of the member that binds, and a composite's decision keeps each member's.

use super::decision::{Decision, Entry};
use super::judge::Judge;

/// What a composite's decision keeps of one member's decision.
#[derive(Debug, Clone, Copy)]
pub struct Member<Q: Judge> {
    pub(crate) allowed: bool,
    pub(crate) entry: Entry,
    pub(crate) basis: Q::Basis,
}

/// Implements [`Judge`] for tuples of quotas (a composite's members): the figures of the member
/// that binds. When every member admitted, the member with the smallest remaining (the one a
/// client will run into first); else the denying member with the longest retry-after (the wait
/// after which every member would admit, traffic aside). Ties go to the earlier member.
macro_rules! judge_tuple {
    ($($index:tt $member:ident),+) => {
        impl<$($member: Judge),+> Judge for ($($member,)+) {
            type Basis = ($(Member<$member>,)+);

            fn limit(&self, basis: &Self::Basis, cost: u64) -> u64 {
                match self.binding(basis, cost) {
                    $($index => Decision::of_member(self.$index, basis.$index, cost).limit(),)+
                    _ => unreachable!("a member's position"),
                }
            }

            fn remaining(&self, basis: &Self::Basis, cost: u64) -> u64 {
                match self.binding(basis, cost) {
                    $($index => Decision::of_member(self.$index, basis.$index, cost).remaining(),)+
                    _ => unreachable!("a member's position"),
                }
            }

            fn reset_after_ns(&self, basis: &Self::Basis, cost: u64) -> u64 {
                match self.binding(basis, cost) {
                    $($index => Decision::of_member(self.$index, basis.$index, cost).reset_after_ns(),)+
                    _ => unreachable!("a member's position"),
                }
            }

            fn retry_after_ns(&self, basis: &Self::Basis, cost: u64) -> u64 {
                match self.binding(basis, cost) {
                    $($index => Decision::of_member(self.$index, basis.$index, cost).retry_after_ns(),)+
                    _ => unreachable!("a member's position"),
                }
            }

            #[allow(unused_assignments)] // the last member's running choice is not read again
            fn binding(&self, basis: &Self::Basis, cost: u64) -> usize {
                let members = ($(Decision::of_member(self.$index, basis.$index, cost),)+);
                let mut binding = 0;
                if true $(&& members.$index.is_allowed())+ {
                    let mut smallest = u64::MAX;
                    $(
                        let remaining = members.$index.remaining();
                        if remaining < smallest {
                            (binding, smallest) = ($index, remaining);
                        }
                    )+
                } else {
                    let mut longest = None;
                    $(
                        if members.$index.is_denied() {
                            let retry_after = members.$index.retry_after_ns();
                            if longest.is_none_or(|longest| retry_after > longest) {
                                (binding, longest) = ($index, Some(retry_after));
                            }
                        }
                    )+
                }
                binding
            }
        }

        impl<$($member: Judge),+> Decision<($($member,)+)> {
            /// Each member's decision, a tuple in the members' order (a composite's decision).
            ///
            /// ```
            /// use nanolimit::composite::Composite;
            /// use nanolimit::{Gcra, KeyedLimiter, Limiter, ManualClock};
            ///
            /// let clock = ManualClock::new();
            /// let per_ip = KeyedLimiter::builder(Gcra::per_second(100)?).clock(clock.clone()).build()?;
            /// let global = Limiter::with_clock(Gcra::per_second(50_000)?, clock);
            /// let limits = Composite::new((&per_ip, &global));
            /// let decision = limits.check(&7u32);
            /// let (ip, all) = decision.members();
            /// assert_eq!((ip.remaining(), all.remaining()), (99, 49_999));
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn members(&self) -> ($(Decision<$member>,)+) {
                let (quotas, basis, cost) = (self.quota(), self.basis(), self.cost());
                ($(Decision::of_member(quotas.$index, basis.$index, cost),)+)
            }

            /// The decision of a composite whose members decided `members`: allowed only if every
            /// member allowed.
            pub(crate) fn of_members(members: ($(Decision<$member>,)+)) -> Self {
                let allowed = true $(&& members.$index.is_allowed())+;
                Decision::composite(
                    allowed,
                    members.0.cost(),
                    ($(*members.$index.quota(),)+),
                    ($(members.$index.as_member(),)+),
                )
            }
        }
    };
}

judge_tuple!(0 A, 1 B);
judge_tuple!(0 A, 1 B, 2 C);
judge_tuple!(0 A, 1 B, 2 C, 3 D);

impl<Q: Judge> Decision<Q> {
    /// This decision as a composite keeps it for its member.
    #[inline]
    pub(crate) fn as_member(&self) -> Member<Q> {
        Member {
            allowed: self.allowed,
            entry: self.entry,
            basis: self.basis,
        }
    }

    /// A member's decision of `cost` under `quota`, as a composite kept it.
    #[inline]
    pub(crate) fn of_member(quota: Q, member: Member<Q>, cost: u64) -> Self {
        Decision {
            allowed: member.allowed,
            entry: member.entry,
            cost,
            basis: member.basis,
            quota,
        }
    }

    /// A decision made on `basis` under `quota`, on a state the limiter keeps.
    #[inline]
    pub(crate) fn composite(allowed: bool, cost: u64, quota: Q, basis: Q::Basis) -> Self {
        Decision {
            allowed,
            entry: Entry::Tracked,
            cost,
            basis,
            quota,
        }
    }
}

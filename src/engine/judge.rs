//! What a [`Decision`] reports from: [`Judge`], implemented by every word quota (from the state
//! word the check observed), by the sliding log (from the figures its log gave), and by tuples
//! of quotas (a composite's members, from the member that binds).

use super::decision::{Decision, Entry};
use crate::quota::sliding_log::SlidingLog;
use crate::quota::Quota;
use core::fmt::Debug;

/// What a decision keeps of the state it was made on, and the figures it reports from it when
/// asked: the limit, what remains, the waits. A `pub` trait in a private module: the bound of
/// [`Decision`], nameable only inside the crate.
pub trait Judge: Copy + Debug + Send + Sync + 'static {
    /// What a decision keeps of the state it judged (held in registers on the hot path: a
    /// word quota's is the word and the instant).
    type Basis: Copy + Debug + Send + Sync;

    /// The limit a decision on `basis` for `cost` reports.
    fn limit(&self, basis: &Self::Basis, cost: u64) -> u64;

    /// How many unit-cost requests would pass right after the decision.
    fn remaining(&self, basis: &Self::Basis, cost: u64) -> u64;

    /// Nanoseconds until the whole limit is available again, with no traffic.
    fn reset_after_ns(&self, basis: &Self::Basis, cost: u64) -> u64;

    /// Nanoseconds until a request of `cost` would pass, with no other traffic.
    fn retry_after_ns(&self, basis: &Self::Basis, cost: u64) -> u64;

    /// The position of the member whose figures the decision reports: 0 but for a composite's.
    fn binding(&self, _basis: &Self::Basis, _cost: u64) -> usize {
        0
    }
}

/// What a decision on a word quota keeps: the word after the decision (the stored word if
/// allowed, the observed one if denied or peeked; for a refused new key, the state that says
/// when it may retry), and the time it was judged at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed<I> {
    pub(crate) word: u64,
    pub(crate) now: I,
}

impl<Q: Quota> Judge for Q {
    type Basis = Observed<Q::Instant>;

    #[inline]
    fn limit(&self, _basis: &Self::Basis, _cost: u64) -> u64 {
        Quota::limit(self)
    }

    #[inline]
    fn remaining(&self, basis: &Self::Basis, _cost: u64) -> u64 {
        Quota::remaining(self, basis.word, basis.now)
    }

    #[inline]
    fn reset_after_ns(&self, basis: &Self::Basis, _cost: u64) -> u64 {
        Quota::reset_after_ns(self, basis.word, basis.now)
    }

    #[inline]
    fn retry_after_ns(&self, basis: &Self::Basis, cost: u64) -> u64 {
        Quota::retry_after_ns(self, basis.word, basis.now, cost)
    }
}

/// What a sliding log's decision keeps: every figure, counted on the log when the decision was
/// made (its units are records beside a word, not the word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogFigures {
    /// The time the decision was judged at, in nanoseconds.
    pub(crate) now_ns: u64,
    pub(crate) remaining: u64,
    pub(crate) reset_after_ns: u64,
    pub(crate) retry_after_ns: u64,
}

impl Judge for SlidingLog {
    type Basis = LogFigures;

    #[inline]
    fn limit(&self, _basis: &LogFigures, _cost: u64) -> u64 {
        SlidingLog::limit(self)
    }

    #[inline]
    fn remaining(&self, basis: &LogFigures, _cost: u64) -> u64 {
        basis.remaining
    }

    #[inline]
    fn reset_after_ns(&self, basis: &LogFigures, _cost: u64) -> u64 {
        basis.reset_after_ns
    }

    #[inline]
    fn retry_after_ns(&self, basis: &LogFigures, _cost: u64) -> u64 {
        basis.retry_after_ns
    }
}

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

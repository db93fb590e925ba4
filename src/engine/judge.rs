//! What a [`Decision`](super::decision::Decision) reports from: [`Judge`], implemented by every
//! word quota (from the state word the check observed), by the sliding log (from the figures its
//! log gave), and by tuples of quotas (a composite's members: `tuple.rs`).

use crate::quota::sliding_log::SlidingLog;
use crate::quota::Quota;
use core::fmt::Debug;

/// What a decision keeps of the state it was made on, and the figures it reports from it when
/// asked: the limit, what remains, the waits. A `pub` trait in a private module: the bound of
/// [`Decision`](super::decision::Decision), nameable only inside the crate.
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

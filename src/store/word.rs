//! One state word, shared by every caller: the store of a direct limiter.

use crate::engine::decision::{Judged, Outcome};
use crate::engine::driver::{self, Applied, Attempt};
use crate::engine::operation::Operation;
use crate::quota::{SlotState, Step};
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// One cache-padded state word.
#[derive(Debug)]
pub(crate) struct Word {
    state: CachePadded<AtomicU64>,
}

impl Word {
    /// A word holding `first`, the state of a key never seen.
    pub(crate) fn new(first: u64) -> Word {
        Word {
            state: CachePadded::new(AtomicU64::new(first)),
        }
    }

    /// The word now.
    #[inline]
    pub(crate) fn load(&self) -> u64 {
        // ORDERING: Acquire, so that the word is examined with the same visibility the driver's
        // failed compare-and-swap gives (see `driver::apply`).
        self.state.load(Ordering::Acquire)
    }

    /// `operation` for `cost` (above zero, at most `quota`'s limit) at `now`: one
    /// compare-and-swap attempt; a lost race retries through the driver on the cold path.
    #[inline(always)]
    pub(crate) fn decide<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        let observed = self.load();
        let step = operation.step(quota, observed, now, cost);
        match driver::attempt(&self.state, observed, step) {
            Attempt::Allowed { current } => Judged::new(Outcome::Allowed, current, now),
            Attempt::Denied => Judged::new(Outcome::Denied, observed, now),
            Attempt::Lost { actual } => {
                // The cold path hands back the outcome and the word, in two registers.
                let (allowed, word) = self.decide_contended(operation, quota, cost, now, actual);
                let outcome = if allowed {
                    Outcome::Allowed
                } else {
                    Outcome::Denied
                };
                Judged::new(outcome, word, now)
            }
        }
    }

    /// [`decide`](Self::decide) after a lost race: the shared driver, from the word that won.
    /// Whether it admitted, and the word it wrote (admitted) or that denied it.
    #[cold]
    #[inline(never)]
    fn decide_contended<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
        observed: u64,
    ) -> (bool, u64) {
        match driver::apply(&self.state, observed, |word| {
            Some(operation.step(quota, word, now, cost))
        }) {
            Applied::Allowed { current } => (true, current),
            Applied::Denied { observed } => (false, observed),
            Applied::Aborted => unreachable!("a direct limiter's step never aborts"),
        }
    }

    /// One compare-and-swap attempt of `operation`: the word written if it admitted at once;
    /// `None` if it denied or lost the race (nothing written).
    #[inline]
    pub(crate) fn admit_at_once<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Option<u64> {
        let observed = self.load();
        match driver::attempt(
            &self.state,
            observed,
            operation.step(quota, observed, now, cost),
        ) {
            Attempt::Allowed { current } => Some(current),
            Attempt::Denied | Attempt::Lost { .. } => None,
        }
    }

    /// `operation` through the driver until it is written or denied: the word written
    /// (`Ok`) or the word that denied it (`Err`).
    #[inline]
    pub(crate) fn apply<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Result<u64, u64> {
        match driver::apply(&self.state, self.load(), |word| {
            Some(operation.step(quota, word, now, cost))
        }) {
            Applied::Allowed { current } => Ok(current),
            Applied::Denied { observed } => Err(observed),
            Applied::Aborted => unreachable!("a direct limiter's step never aborts"),
        }
    }

    /// What `operation` for `cost` at `now` would decide, writing nothing.
    #[inline]
    pub(crate) fn peek<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        let observed = self.load();
        let allowed =
            cost == 0 || matches!(operation.step(quota, observed, now, cost), Step::Allow(_));
        let outcome = if allowed {
            Outcome::Allowed
        } else {
            Outcome::Denied
        };
        Judged::new(outcome, observed, now)
    }
}

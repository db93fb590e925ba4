//! The keyed sliding log's per-key state word, as a crate-private quota, so that the keyed
//! table (its sizing, builder, hashing and slot markers) holds it: the position at which the
//! key's next request starts in its log, and the reuse flag (the layout is in `ring.rs`). The
//! records live beside the table, one ring per slot (`src/keyed/log_slots.rs` runs the log's
//! protocol on them).
//!
//! The table's generic check and insert paths never run on this quota: the keyed sliding log
//! has its own, which reads the records (freshness, for one, depends on the latest record's
//! time, not on the position). The trait's methods answer as the position alone allows, and
//! keep the [`Quota`] invariants as far as a step goes: it adds the cost and refuses to wrap, a
//! fresh word is 0, and no word reaches the two slot markers (bit 63 is never set). A reuse of
//! the slot flips the reuse flag, which may lower the word: why no word repeats all the same is
//! in `src/keyed/log_slots.rs`.

use super::SlidingLog;
use crate::clock::Timestamp;
use crate::quota::QuotaError;
use crate::quota::{Quota, Sealed, SlotState, Step};
use core::time::Duration;

/// A sliding log's next position, as the keyed table's state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogPositions {
    pub(crate) quota: SlidingLog,
}

impl Sealed for LogPositions {
    fn rebase(&self, _base: &LogPositions) -> Result<LogPositions, QuotaError> {
        Ok(*self)
    }

    fn shares_units_with(&self, _base: &LogPositions) -> bool {
        true
    }
}

impl Quota for LogPositions {
    fn instant(&self, _now: Timestamp) {}

    fn step(&self, state: u64, _now: (), cost: u64) -> Step {
        match state.checked_add(cost) {
            Some(next) if cost <= self.quota.max_cost() && next < u64::MAX - 1 => Step::Allow(next),
            _ => Step::Deny,
        }
    }

    fn limit(&self) -> u64 {
        self.quota.limit()
    }

    fn remaining(&self, _state: u64, _now: ()) -> u64 {
        self.quota.limit()
    }

    fn reset_after_ns(&self, _state: u64, _now: ()) -> u64 {
        0
    }

    fn retry_after_ns(&self, _state: u64, _now: (), _cost: u64) -> u64 {
        0
    }

    fn limit_window(&self) -> Duration {
        self.quota.window()
    }

    fn is_fresh(&self, state: u64, _now: ()) -> bool {
        state == Self::FRESH
    }
}

impl SlotState for LogPositions {
    type Instant = ();

    fn freshness_rank(&self, state: u64, _now: ()) -> Option<u64> {
        (state != Self::FRESH).then_some(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_only_grow_and_never_reach_the_slot_markers() {
        let positions = LogPositions {
            quota: SlidingLog::per_second(20).unwrap(),
        };
        assert_eq!(positions.step(0, (), 3), Step::Allow(3));
        assert_eq!(positions.step(5, (), 17), Step::Deny);
        assert_eq!(
            positions.step(u64::MAX - 3, (), 1),
            Step::Allow(u64::MAX - 2)
        );
        assert_eq!(positions.step(u64::MAX - 2, (), 1), Step::Deny);
        assert_eq!(positions.step(u64::MAX, (), 1), Step::Deny);
    }
}

//! The lease word's protocol alone, with no Redis, for the loom models
//! (`loom-tests/tests/leased.rs`): compiled only under `cfg(nanolimit_loom)`.

use super::table::LeaseCell;

/// One key's lease cell.
#[derive(Debug)]
pub struct LeaseWord(LeaseCell);

impl Default for LeaseWord {
    fn default() -> Self {
        LeaseWord(LeaseCell::new(1))
    }
}

impl LeaseWord {
    /// [`LeaseCell::spend`]: the units left, or `None`.
    pub fn spend(&self, now_grain: u64, cost: u64) -> Option<u64> {
        self.0.spend(now_grain, cost)
    }

    /// [`LeaseCell::claim`] at `now_grain`: the word before, or `None`.
    pub fn claim(&self, now_grain: u64) -> Option<u64> {
        self.0.claim(now_grain)
    }

    /// [`LeaseCell::publish`]: the units left.
    pub fn publish(&self, now_grain: u64, granted: u64, spent: u64, deadline_grain: u64) -> u64 {
        self.0.publish(now_grain, granted, spent, deadline_grain)
    }

    /// [`LeaseCell::claim_all`].
    pub fn claim_all(&self) -> Option<u64> {
        self.0.claim_all()
    }

    /// [`LeaseCell::release_empty`].
    pub fn release_empty(&self) {
        self.0.release_empty()
    }

    /// The units held.
    pub fn units(&self) -> u64 {
        self.0.units()
    }
}

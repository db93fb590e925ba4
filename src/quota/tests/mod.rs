//! White-box tests of the quotas: properties that need the packed state layouts, which are
//! internal to the crate.

use super::fixed_window as fixed;
use super::sliding_window as sliding;
use super::{FixedWindow, Quota, SlidingWindow, Step, WindowInstant};
use crate::clock::Timestamp;
use core::time::Duration;

pub(super) const HORIZON_NS: u64 = Timestamp::HORIZON.as_ns();
pub(super) const SECOND_NS: u64 = 1_000_000_000;

pub(super) fn at(ns: u64) -> Timestamp {
    Timestamp::from_ns(ns).unwrap()
}

/// A small xorshift generator: deterministic, and enough to spread test inputs.
pub(super) struct Xorshift(pub(super) u64);

impl Xorshift {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..=max`.
    pub(super) fn up_to(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(bound) => self.next() % bound,
            None => self.next(),
        }
    }
}

/// States reached by a random schedule of checks on `quota` (forward gaps from nothing to a few
/// windows), each paired with the reading it was written at.
pub(super) fn reachable_states<Q: Quota>(quota: Q, seed: u64, gap_ns: u64) -> Vec<(u64, u64)> {
    let mut random = Xorshift(seed);
    let mut state = Q::FRESH;
    let mut now_ns = random.up_to(1_000 * SECOND_NS);
    let mut states = Vec::new();
    for _ in 0..2_000 {
        now_ns += random.up_to(gap_ns);
        let cost = 1 + random.up_to(quota.limit() - 1);
        if let Step::Allow(word) = quota.step(state, quota.instant(at(now_ns)), cost) {
            state = word;
            states.push((state, now_ns));
        }
        if random.up_to(7) == 0 {
            state = Q::FRESH;
        }
    }
    states
}

mod freshness;
mod reservations;
mod windows;

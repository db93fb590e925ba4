//! The sliding log's reference model, shared by `tests/sliding_log/direct.rs` and
//! `tests/sliding_log/keyed.rs` (one reference per key): every admitted unit's time, oldest
//! first, judged the way the `sliding_log` module documents.

use nanolimit::sliding_log::SlidingLog;
use nanolimit::Decision;
use std::collections::VecDeque;
use std::time::Duration;

/// The reference for one key: every admitted unit's time, oldest first, judged the way the
/// module documents (a request of cost `n` at `t` passes iff the units in `(t − W, t]` plus `n`
/// are at most `L`; a reading behind the latest unit is judged at the latest unit's time). It
/// keeps the key's whole history, whatever the table does with the key's entry.
pub struct ReferenceLog {
    limit: u64,
    window_ns: u64,
    units: VecDeque<u64>,
}

/// What a decision says: (allowed, remaining, reset-after, retry-after, judged-at), in
/// nanoseconds.
pub type Expected = (bool, u64, u64, u64, u64);

impl ReferenceLog {
    pub fn new(quota: &SlidingLog) -> Self {
        ReferenceLog {
            limit: quota.limit(),
            window_ns: quota.window().as_nanos() as u64,
            units: VecDeque::new(),
        }
    }

    pub fn judged_at(&self, reading_ns: u64) -> u64 {
        self.units
            .back()
            .map_or(reading_ns, |&latest| latest.max(reading_ns))
    }

    /// The units in the window at `now_ns`, oldest first.
    pub fn in_window(&self, now_ns: u64) -> Vec<u64> {
        self.units
            .iter()
            .copied()
            .filter(|&time| time + self.window_ns > now_ns)
            .collect()
    }

    pub fn decide(&mut self, cost: u64, reading_ns: u64, record: bool) -> Expected {
        let now_ns = self.judged_at(reading_ns);
        let in_window = self.in_window(now_ns);
        let count = in_window.len() as u64;
        let allowed = count + cost <= self.limit;
        let retry_after_ns = if allowed {
            0
        } else {
            // The unit that must leave for `cost` more to fit.
            let must_leave = in_window[(count + cost - self.limit - 1) as usize];
            must_leave + self.window_ns - now_ns
        };
        if allowed && record {
            for _ in 0..cost {
                self.units.push_back(now_ns);
            }
        }
        let remaining = self.limit - self.in_window(now_ns).len() as u64;
        let reset_after_ns = self.units.back().map_or(0, |&latest| {
            (latest + self.window_ns).saturating_sub(now_ns)
        });
        (allowed, remaining, reset_after_ns, retry_after_ns, now_ns)
    }
}

pub fn observed(decision: &Decision<SlidingLog>) -> Expected {
    (
        decision.is_allowed(),
        decision.remaining(),
        decision.reset_after().as_nanos() as u64,
        decision.retry_after().as_nanos() as u64,
        decision.judged_at().as_ns(),
    )
}

pub fn quotas() -> Vec<SlidingLog> {
    vec![
        SlidingLog::new(1, Duration::from_nanos(1)).unwrap(),
        SlidingLog::new(1, Duration::from_nanos(100)).unwrap(),
        SlidingLog::new(3, Duration::from_nanos(1_000)).unwrap(),
        SlidingLog::new(4, Duration::from_nanos(1_000)).unwrap(),
        SlidingLog::new(5, Duration::from_nanos(777)).unwrap(),
        SlidingLog::new(16, Duration::from_nanos(5_000)).unwrap(),
        SlidingLog::new(37, Duration::from_nanos(10_000)).unwrap(),
        SlidingLog::per_minute(10).unwrap(),
    ]
}

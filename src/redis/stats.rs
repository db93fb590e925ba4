//! Counters of the calls that did not reach a decision in Redis, read into [`Stats`].

use crate::engine::stats::Stats;
use crate::sync::{AtomicU64, Ordering};

/// The limiter's counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    timeouts: AtomicU64,
    errors: AtomicU64,
}

impl Counters {
    #[cold]
    pub(crate) fn count_timeout(&self) {
        // ORDERING: Relaxed. A statistic: it orders nothing and pairs with nothing.
        self.timeouts.fetch_add(1, Ordering::Relaxed);
    }

    #[cold]
    pub(crate) fn count_error(&self) {
        // ORDERING: Relaxed, as in `count_timeout`.
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> Stats {
        Stats {
            // ORDERING: Relaxed, as in `count_timeout`.
            timeouts: self.timeouts.load(Ordering::Relaxed),
            // ORDERING: Relaxed, as in `count_timeout`.
            errors: self.errors.load(Ordering::Relaxed),
            ..Stats::default()
        }
    }
}

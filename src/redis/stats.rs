//! Counters of the calls that did not reach a decision in Redis, read as [`RedisStats`].

use crate::sync::{AtomicU64, Ordering};

/// How often a [`RedisLimiter`](super::RedisLimiter) could not get its decision from Redis,
/// since it was built; each such call was decided by the limiter's
/// [`FailurePolicy`](super::FailurePolicy) (a decision whose
/// [`is_fallback`](crate::Decision::is_fallback) is true).
///
/// ```
/// use nanolimit::redis::RedisStats;
///
/// let stats = RedisStats::default();
/// assert_eq!(stats.fallbacks(), 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RedisStats {
    /// Calls that got no reply within the limiter's timeout (a server down, unreachable or
    /// slow, or a reconnection still under way).
    pub timeouts: u64,
    /// Calls that failed before the timeout: a connection refused or lost, a script error (the
    /// server's clock outside the limiter's epoch and horizon, a key holding something that is
    /// not a state word), or a reply the limiter could not read.
    pub errors: u64,
}

impl RedisStats {
    /// Every call the failure policy decided: timeouts and errors.
    pub fn fallbacks(&self) -> u64 {
        self.timeouts + self.errors
    }
}

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

    pub(crate) fn read(&self) -> RedisStats {
        RedisStats {
            // ORDERING: Relaxed, as in `count_timeout`.
            timeouts: self.timeouts.load(Ordering::Relaxed),
            // ORDERING: Relaxed, as in `count_timeout`.
            errors: self.errors.load(Ordering::Relaxed),
        }
    }
}

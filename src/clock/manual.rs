//! A clock that moves only when told to.

use super::{Clock, Timestamp};
use crate::sync::{Arc, AtomicU64, Ordering};
use std::time::Duration;

/// A clock that only moves when told to: for tests and simulations.
///
/// Clones share the same time, so a test can hand one clone to a limiter and keep another to
/// advance it, from any thread.
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = Limiter::with_clock(Gcra::per_second(1)?, clock.clone());
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_denied());
/// clock.advance(Duration::from_secs(1));
/// assert!(limiter.check().is_allowed());
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now_ns: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading [`Timestamp::ORIGIN`].
    pub fn new() -> Self {
        Self::starting_at(Timestamp::ORIGIN)
    }

    /// A clock reading `now`.
    pub fn starting_at(now: Timestamp) -> Self {
        ManualClock {
            now_ns: Arc::new(AtomicU64::new(now.as_ns())),
        }
    }

    /// Sets the reading to `now` (earlier readings are allowed: clocks can step back).
    pub fn set(&self, now: Timestamp) {
        // ORDERING: Relaxed; the reading is a plain value and publishes nothing else.
        self.now_ns.store(now.as_ns(), Ordering::Relaxed);
    }

    /// Moves the clock forward by `by`, at most to [`Timestamp::HORIZON`].
    pub fn advance(&self, by: Duration) {
        let mut current = self.now();
        loop {
            let next = current.saturating_add(by);
            // ORDERING: Relaxed on both sides; only the value matters, and the loop retries on
            // interference from another thread advancing the same clock.
            match self.now_ns.compare_exchange_weak(
                current.as_ns(),
                next.as_ns(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => current = Timestamp::saturating_from_ns(actual),
            }
        }
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> Timestamp {
        // ORDERING: Relaxed; pairs with the Relaxed stores above, only the value matters.
        Timestamp::saturating_from_ns(self.now_ns.load(Ordering::Relaxed))
    }
}

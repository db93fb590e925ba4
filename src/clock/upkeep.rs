//! A coarse clock kept by a background thread.

use super::{Clock, QuantaClock, Timestamp};
use crate::sync::{Arc, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::time::Duration;

/// A coarse clock: an upkeep thread stores the [`QuantaClock`] time into one cache-padded atomic
/// every `interval`, and a reading is one relaxed load of it.
///
/// Cheaper per read than [`QuantaClock`], but time advances in steps of the interval: a
/// limiter sees the whole interval's refill at once, so admissions bunch at the step and
/// `retry_after` answers are late by up to one interval. The long-run admitted rate is
/// unchanged. Clones share one upkeep thread, which stops when the last clone is dropped.
///
/// ```
/// use nanolimit::{Clock, Gcra, Limiter};
/// use nanolimit::clock::UpkeepClock;
/// use std::time::Duration;
///
/// let clock = UpkeepClock::new(Duration::from_micros(100))?;
/// let limiter = Limiter::with_clock(Gcra::per_second(1_000)?, clock);
/// assert!(limiter.check().is_allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct UpkeepClock {
    shared: Arc<UpkeepShared>,
}

#[derive(Debug)]
struct UpkeepShared {
    now_ns: CachePadded<AtomicU64>,
    interval: Duration,
}

impl UpkeepClock {
    /// The default upkeep interval: 100 µs.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_micros(100);

    /// Starts an upkeep thread that refreshes the reading every `interval` (at least 1 µs).
    /// Errors only if the operating system cannot start a thread.
    pub fn new(interval: Duration) -> std::io::Result<Self> {
        let interval = interval.max(Duration::from_micros(1));
        let source = QuantaClock::new();
        let shared = Arc::new(UpkeepShared {
            now_ns: CachePadded::new(AtomicU64::new(source.now().as_ns())),
            interval,
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("nanolimit-upkeep".into())
            .spawn(move || loop {
                let Some(shared) = weak.upgrade() else { return };
                // ORDERING: Relaxed. The reading is a plain value: no other memory is published
                // with it, and readers only need some recent value (they tolerate staleness).
                shared.now_ns.store(source.now().as_ns(), Ordering::Relaxed);
                let interval = shared.interval;
                drop(shared);
                std::thread::sleep(interval);
            })?;
        Ok(UpkeepClock { shared })
    }

    /// The interval at which the reading is refreshed.
    pub fn interval(&self) -> Duration {
        self.shared.interval
    }
}

impl Clock for UpkeepClock {
    #[inline]
    fn now(&self) -> Timestamp {
        // ORDERING: Relaxed, pairs with the Relaxed store of the upkeep thread; only the value
        // matters.
        Timestamp::saturating_from_ns(self.shared.now_ns.load(Ordering::Relaxed))
    }
}

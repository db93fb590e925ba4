//! Clocks: where a limiter gets "now" from.
//!
//! A [`Clock`] returns monotonic nanoseconds since its own origin (the moment it was created).
//! Limiters only ever compare readings of the same clock, so the origin is arbitrary; it only
//! has to stay the same for the limiter's lifetime.
//!
//! | clock | cost per read | resolution | use it for |
//! |---|---|---|---|
//! | [`QuantaClock`] (the default) | one TSC read and a multiply (~7–20 ns, see README) | ~1 ns | everything, unless the read shows up in a profile |
//! | [`UpkeepClock`] | one relaxed atomic load (~1 ns) | the upkeep interval (default 100 µs) | hot loops that tolerate admission decisions quantised to the interval |
//! | [`ManualClock`] | one relaxed atomic load | whatever you set | tests and simulations |
//!
//! Every check also has an `_at(now_ns)` form: a packet loop that already holds a timestamp from
//! the same clock passes it in and pays for no read at all.
//!
//! Clocks may step backwards (the TSC can, across cores), and a reading taken before a
//! preemption arrives late. Limiters treat an earlier reading as "no time has passed": never a
//! panic, never an overflow, never extra capacity. The one bound is for window quotas, whose
//! packed window index tells "behind" from "idle for a very long time" only so far: a reading
//! more than the quota's `backward_windows()` behind reads as the latter (65 s of 1 ms sliding
//! windows, 18 minutes of 1 µs fixed windows; at least 26 days for sliding windows of 34.5 s
//! and 6.5 days for fixed windows of 0.53 ms, whose index never wraps; no bound at all for
//! sliding windows from about 69 s and fixed windows from about 1.05 ms).

use crate::sync::{Arc, AtomicU64, Ordering};
#[cfg(not(nanolimit_loom))]
use crossbeam_utils::CachePadded;
use std::time::Duration;

/// The latest clock reading the crate supports: 2^59 ns, about 18.3 years after the clock's
/// origin. Readings past it are clamped to it, so a limiter that outlives it fails closed (time
/// stops, nothing refills) rather than wrapping.
pub const TIME_HORIZON_NS: u64 = 1 << 59;

/// A monotonic source of nanoseconds since the clock's origin.
///
/// Implementations must be cheap and thread-safe; they need not be strictly monotonic across
/// threads (limiters tolerate small backward steps without granting capacity).
///
/// ```
/// use nanolimit::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// clock.advance(Duration::from_millis(5));
/// assert_eq!(clock.now_ns(), 5_000_000);
/// ```
pub trait Clock: Send + Sync {
    /// Nanoseconds since this clock's origin.
    fn now_ns(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
}

/// The default clock: reads the CPU's time-stamp counter through [`quanta`] on every call.
///
/// Precise to about a nanosecond, at the cost of one TSC read (`rdtsc`) plus a scaling multiply
/// per reading. quanta calibrates the counter against the OS monotonic clock once per process
/// and falls back to the OS clock where no usable TSC exists. If the counter reads earlier than
/// the origin (a core whose TSC lags), the reading is 0 rather than a wrapped huge value.
///
/// ```
/// use nanolimit::{Clock, QuantaClock};
///
/// let clock = QuantaClock::new();
/// let first = clock.now_ns();
/// assert!(clock.now_ns() >= first);
/// ```
#[derive(Debug, Clone)]
pub struct QuantaClock {
    clock: quanta::Clock,
    origin_raw: u64,
}

impl QuantaClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        let clock = quanta::Clock::new();
        let origin_raw = clock.raw();
        QuantaClock { clock, origin_raw }
    }
}

impl Default for QuantaClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for QuantaClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        // `delta_as_nanos` returns 0 when the counter reads at or before the origin, so a
        // lagging core never produces a wrapped reading.
        self.clock.delta_as_nanos(self.origin_raw, self.clock.raw())
    }
}

/// A coarse clock: an upkeep thread stores the [`QuantaClock`] time into one cache-padded atomic
/// every `interval`, and a reading is one relaxed load of it.
///
/// Cheaper per read than [`QuantaClock`], but time advances in steps of the interval: a
/// limiter sees the whole interval's refill at once, so admissions bunch at the step and
/// `retry_after` answers are late by up to one interval. The long-run admitted rate is
/// unchanged. Clones share one upkeep thread, which stops when the last clone is dropped.
///
/// ```
/// use nanolimit::{Clock, UpkeepClock};
/// use std::time::Duration;
///
/// let clock = UpkeepClock::new(Duration::from_micros(100));
/// let _ = clock.now_ns();
/// ```
#[cfg(not(nanolimit_loom))]
#[derive(Debug, Clone)]
pub struct UpkeepClock {
    shared: Arc<UpkeepShared>,
}

#[cfg(not(nanolimit_loom))]
#[derive(Debug)]
struct UpkeepShared {
    now_ns: CachePadded<AtomicU64>,
    interval: Duration,
}

#[cfg(not(nanolimit_loom))]
impl UpkeepClock {
    /// The default upkeep interval: 100 µs.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_micros(100);

    /// Starts an upkeep thread that refreshes the reading every `interval` (at least 1 µs).
    pub fn new(interval: Duration) -> Self {
        let interval = interval.max(Duration::from_micros(1));
        let source = QuantaClock::new();
        let shared = Arc::new(UpkeepShared {
            now_ns: CachePadded::new(AtomicU64::new(source.now_ns())),
            interval,
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("nanolimit-upkeep".into())
            .spawn(move || loop {
                let Some(shared) = weak.upgrade() else { return };
                // ORDERING: Relaxed. The reading is a plain value: no other memory is published
                // with it, and readers only need some recent value (they tolerate staleness).
                shared.now_ns.store(source.now_ns(), Ordering::Relaxed);
                let interval = shared.interval;
                drop(shared);
                std::thread::sleep(interval);
            })
            .expect("nanolimit: failed to spawn the upkeep clock thread");
        UpkeepClock { shared }
    }

    /// The interval at which the reading is refreshed.
    pub fn interval(&self) -> Duration {
        self.shared.interval
    }
}

#[cfg(not(nanolimit_loom))]
impl Default for UpkeepClock {
    fn default() -> Self {
        Self::new(Self::DEFAULT_INTERVAL)
    }
}

#[cfg(not(nanolimit_loom))]
impl Clock for UpkeepClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        // ORDERING: Relaxed, pairs with the Relaxed store of the upkeep thread; only the value
        // matters.
        self.shared.now_ns.load(Ordering::Relaxed)
    }
}

/// A clock that only moves when told to: for tests and simulations.
///
/// Clones share the same time, so a test can hand one clone to a limiter and keep another to
/// advance it, from any thread.
///
/// ```
/// use nanolimit::{Clock, Gcra, Limiter, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = Limiter::with_clock(Gcra::per_second(1).unwrap(), clock.clone());
/// assert!(limiter.check().is_allowed());
/// assert!(!limiter.check().is_allowed());
/// clock.advance(Duration::from_secs(1));
/// assert!(limiter.check().is_allowed());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now_ns: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading 0.
    pub fn new() -> Self {
        Self::starting_at(0)
    }

    /// A clock reading `now_ns`.
    pub fn starting_at(now_ns: u64) -> Self {
        ManualClock {
            now_ns: Arc::new(AtomicU64::new(now_ns)),
        }
    }

    /// Sets the reading to `now_ns` (earlier readings are allowed: clocks can step back).
    pub fn set_ns(&self, now_ns: u64) {
        // ORDERING: Relaxed; the reading is a plain value and publishes nothing else.
        self.now_ns.store(now_ns, Ordering::Relaxed);
    }

    /// Moves the clock forward by `by` (saturating at `u64::MAX` nanoseconds).
    pub fn advance(&self, by: Duration) {
        self.advance_ns(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Moves the clock forward by `by_ns` nanoseconds (saturating).
    pub fn advance_ns(&self, by_ns: u64) {
        let mut current = self.now_ns();
        loop {
            let next = current.saturating_add(by_ns);
            // ORDERING: Relaxed on both sides; only the value matters, and the loop retries on
            // interference from another thread advancing the same clock.
            match self.now_ns.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        // ORDERING: Relaxed; pairs with the Relaxed stores above, only the value matters.
        self.now_ns.load(Ordering::Relaxed)
    }
}

//! The default clock: the CPU's time-stamp counter, through `quanta`.

use super::{Clock, Timestamp};

/// The default clock: reads the CPU's time-stamp counter through [`quanta`] on every call.
///
/// Precise to about a nanosecond, at the cost of one TSC read (`rdtsc`) plus a scaling multiply
/// per reading. quanta calibrates the counter against the OS monotonic clock once per process
/// and falls back to the OS clock where no usable TSC exists. If the counter reads earlier than
/// the origin (a core whose TSC lags), the reading is the origin rather than a wrapped value.
/// Clones share the origin, so their readings are interchangeable.
///
/// ```
/// use nanolimit::{Clock, QuantaClock};
///
/// let clock = QuantaClock::new();
/// let first = clock.now();
/// assert!(clock.now() >= first);
/// assert!(clock.clone().now() >= first);
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
    fn now(&self) -> Timestamp {
        // `delta_as_nanos` returns 0 when the counter reads at or before the origin, so a
        // lagging core never produces a wrapped reading.
        Timestamp::saturating_from_ns(self.clock.delta_as_nanos(self.origin_raw, self.clock.raw()))
    }
}

//! The default clock: the CPU's time-stamp counter, through `quanta`.

use super::{Clock, Timestamp};
use std::sync::OnceLock;
use std::time::Instant;

/// The default clock: reads the CPU's time-stamp counter through [`quanta`] on every call.
///
/// Precise to about a nanosecond, at the cost of one TSC read (`rdtsc`) plus a scaling multiply
/// per reading. quanta calibrates the counter against the OS monotonic clock once per process
/// and falls back to the OS clock where no usable TSC exists. If the counter reads earlier than
/// the origin (a core whose TSC lags), the reading is the origin rather than a wrapped value.
///
/// Every `QuantaClock` of a process shares one origin (the first one's creation), so a
/// [`Timestamp`] read from any of them means the same moment to every limiter on this clock.
///
/// ```
/// use nanolimit::{Clock, QuantaClock};
///
/// let clock = QuantaClock::new();
/// let first = clock.now();
/// assert!(clock.now() >= first);
/// assert!(QuantaClock::new().now() >= first);
/// ```
#[derive(Debug, Clone)]
pub struct QuantaClock {
    clock: quanta::Clock,
    origin_raw: u64,
    origin: Instant,
}

/// The process's calibrated clock and its origin, made by the first `QuantaClock`.
static PROCESS_CLOCK: OnceLock<QuantaClock> = OnceLock::new();

impl QuantaClock {
    /// The process's clock (its origin is the first `QuantaClock`'s creation).
    pub fn new() -> Self {
        PROCESS_CLOCK
            .get_or_init(|| {
                let clock = quanta::Clock::new();
                let origin = Instant::now();
                let origin_raw = clock.raw();
                QuantaClock {
                    clock,
                    origin_raw,
                    origin,
                }
            })
            .clone()
    }
}

impl QuantaClock {
    /// The clock's origin as a [`std::time::Instant`] (read within a microsecond of it).
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// `at`, a [`std::time::Instant`] the caller holds (a packet's receive time, say), as a
    /// timestamp of this clock: the time from the origin to `at`, or the origin for an earlier
    /// `at`. quanta calibrates the TSC against the same monotonic clock, so the two agree to
    /// within the calibration's error.
    ///
    /// ```
    /// use nanolimit::{Clock, Gcra, Limiter, QuantaClock};
    /// use std::time::Instant;
    ///
    /// let limiter = Limiter::new(Gcra::per_second(100)?);
    /// let received = Instant::now();
    /// let now = limiter.clock().timestamp(received);
    /// assert!(limiter.check_at(now).is_allowed());
    /// assert!(now <= limiter.now() || now.saturating_duration_since(limiter.now()).as_micros() < 1_000);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn timestamp(&self, at: Instant) -> Timestamp {
        let since_origin = at.saturating_duration_since(self.origin);
        Timestamp::from_duration(since_origin).unwrap_or(Timestamp::HORIZON)
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

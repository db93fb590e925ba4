//! A quota as a rate and a burst, expressed for every limiter the benchmarks compare. Shared by
//! `benches/keyed.rs`, `benches/callgrind_keyed.rs` and `benches/contention.rs` (included by
//! `#[path]`), so that subjects built from one spec enforce the same quota whatever their
//! implementation.

use nanolimit::{FixedWindow, Gcra, Quota, SlidingWindow};
use std::num::NonZeroU32;
use std::time::Duration;

/// `count` units per `period`, bursts of up to `burst` units.
///
/// GCRA implementations (nanolimit's [`Gcra`], governor) take it as it is; the window algorithms
/// get the same long-run rate with a window holding exactly one burst: `limit = burst` per
/// `window = burst / rate`.
#[derive(Debug, Clone, Copy)]
pub struct QuotaSpec {
    /// Units per period.
    pub count: u64,
    /// The period `count` is counted over.
    pub period: Duration,
    /// Units a fresh state admits at once (GCRA burst, bucket size, limit per window).
    pub burst: u64,
}

impl QuotaSpec {
    /// `count` units per second, bursts of up to `burst`.
    pub const fn per_second(count: u64, burst: u64) -> QuotaSpec {
        QuotaSpec {
            count,
            period: Duration::from_secs(1),
            burst,
        }
    }

    /// `count` units per minute, bursts of up to `burst`.
    pub const fn per_minute(count: u64, burst: u64) -> QuotaSpec {
        QuotaSpec {
            count,
            period: Duration::from_secs(60),
            burst,
        }
    }

    /// `count` units per hour, bursts of up to `burst`.
    pub const fn per_hour(count: u64, burst: u64) -> QuotaSpec {
        QuotaSpec {
            count,
            period: Duration::from_secs(3_600),
            burst,
        }
    }

    /// Long-run admissions per second.
    pub fn rate_per_second(&self) -> f64 {
        self.count as f64 / self.period.as_secs_f64()
    }

    /// `period / count`, rounded down to whole nanoseconds: governor's replenish interval.
    pub fn emission_interval(&self) -> Duration {
        Duration::from_nanos(
            u64::try_from(self.period.as_nanos() / u128::from(self.count))
                .expect("the emission interval fits u64 nanoseconds"),
        )
    }

    /// `burst / rate`: the window of the window algorithms.
    pub fn window(&self) -> Duration {
        Duration::from_nanos(
            u64::try_from(u128::from(self.burst) * self.period.as_nanos() / u128::from(self.count))
                .expect("the window fits u64 nanoseconds"),
        )
    }

    /// nanolimit GCRA.
    pub fn gcra(&self) -> Gcra {
        Gcra::new(self.count, self.period)
            .and_then(|quota| quota.with_burst(self.burst))
            .expect("valid GCRA quota")
    }

    /// nanolimit sliding window.
    pub fn sliding_window(&self) -> SlidingWindow {
        SlidingWindow::new(self.burst, self.window()).expect("valid sliding-window quota")
    }

    /// nanolimit sliding log: at most one burst in any window.
    pub fn sliding_log(&self) -> nanolimit::sliding_log::SlidingLog {
        nanolimit::sliding_log::SlidingLog::new(self.burst, self.window())
            .expect("valid sliding-log quota")
    }

    /// nanolimit fixed window.
    pub fn fixed_window(&self) -> FixedWindow {
        FixedWindow::new(self.burst, self.window()).expect("valid fixed-window quota")
    }

    /// governor's quota (GCRA: one cell per emission interval, bursts of `burst`).
    pub fn governor(&self) -> governor::Quota {
        let burst = NonZeroU32::new(u32::try_from(self.burst).expect("burst fits u32"))
            .expect("burst is not zero");
        governor::Quota::with_period(self.emission_interval())
            .expect("period is not zero")
            .allow_burst(burst)
    }
}

/// A nanolimit quota made from a [`QuotaSpec`], so that one generic subject serves every
/// algorithm.
pub trait FromSpec: Quota {
    /// `spec` in this algorithm's terms.
    fn from_spec(spec: &QuotaSpec) -> Self;
}

impl FromSpec for Gcra {
    fn from_spec(spec: &QuotaSpec) -> Gcra {
        spec.gcra()
    }
}

impl FromSpec for SlidingWindow {
    fn from_spec(spec: &QuotaSpec) -> SlidingWindow {
        spec.sliding_window()
    }
}

impl FromSpec for FixedWindow {
    fn from_spec(spec: &QuotaSpec) -> FixedWindow {
        spec.fixed_window()
    }
}

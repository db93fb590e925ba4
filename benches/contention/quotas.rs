//! One quota, expressed for every limiter under test, and what it admits at most over a run.

use nanolimit::{FixedWindow, Gcra, SlidingWindow};
use std::num::NonZeroU32;
use std::time::Duration;

/// What a row's limiter does, as the CSV's `algorithm` column names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AlgorithmKind {
    /// Generic cell rate algorithm (nanolimit's `Gcra`, governor).
    Gcra,
    /// nanolimit's sliding-window counter.
    SlidingWindow,
    /// nanolimit's fixed-window counter.
    FixedWindow,
    /// A token bucket (the `ratelimit` crate, the mutex-hashmap).
    TokenBucket,
    /// Floor: one clock read.
    ClockRead,
    /// Floor: one uncontended compare-and-swap.
    Cas,
    /// Floor: one ahash of a key, then one uncontended compare-and-swap.
    AhashCas,
}

impl AlgorithmKind {
    /// The name in the CSV and the table.
    pub fn name(self) -> &'static str {
        match self {
            AlgorithmKind::Gcra => "gcra",
            AlgorithmKind::SlidingWindow => "sliding-window",
            AlgorithmKind::FixedWindow => "fixed-window",
            AlgorithmKind::TokenBucket => "token-bucket",
            AlgorithmKind::ClockRead => "clock-read",
            AlgorithmKind::Cas => "cas",
            AlgorithmKind::AhashCas => "ahash-cas",
        }
    }
}

/// A quota as a rate and a burst. The window algorithms get the same long-run rate with a
/// window holding exactly one burst: `limit = burst` per `window = burst / rate`.
#[derive(Debug, Clone, Copy)]
pub struct QuotaSpec {
    /// Long-run admissions per second.
    pub per_second: u64,
    /// Admissions a fresh state allows at once (GCRA burst, bucket size, limit per window).
    pub burst: u64,
}

impl QuotaSpec {
    /// `burst / per_second`: the window of the window algorithms.
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.burst * 1_000_000_000 / self.per_second)
    }

    /// `1 / per_second`: governor's replenish interval.
    fn emission_interval(&self) -> Duration {
        Duration::from_nanos(1_000_000_000 / self.per_second)
    }

    /// nanolimit GCRA.
    pub fn gcra(&self) -> Gcra {
        Gcra::per_second(self.per_second)
            .and_then(|quota| quota.with_burst(self.burst))
            .expect("valid GCRA quota")
    }

    /// nanolimit sliding window.
    pub fn sliding_window(&self) -> SlidingWindow {
        SlidingWindow::new(self.burst, self.window()).expect("valid sliding-window quota")
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

    /// The `ratelimit` crate's token bucket (version 2), starting full.
    pub fn ratelimit(&self) -> ratelimit::Ratelimiter {
        ratelimit::Ratelimiter::builder(self.per_second)
            .max_tokens(self.burst)
            .initial_available(self.burst)
            .build()
            .expect("valid ratelimit parameters")
    }

    /// What the policy admits for one key over `lifetime` under `algorithm`, when the key is
    /// checked continuously from the start of `lifetime` (for window algorithms: from the
    /// clock origin, where windows start) to its end:
    ///
    /// - GCRA and token buckets: `rate × lifetime + burst`, a strict upper bound.
    /// - Fixed window: `limit` per window touched, a strict upper bound.
    /// - Sliding-window counter: `limit × max(1, lifetime / window)`: the first window admits
    ///   the limit at once, then the weighted previous window admits `limit / window` per unit
    ///   of time. The counter approximates a sliding log by design, so a key checked
    ///   intermittently may get somewhat more; this is the saturated key's exact value.
    pub fn admitted_bound_per_key(&self, algorithm: AlgorithmKind, lifetime: Duration) -> f64 {
        let seconds = lifetime.as_secs_f64();
        let windows = seconds / self.window().as_secs_f64();
        let burst = self.burst as f64;
        match algorithm {
            AlgorithmKind::FixedWindow => burst * (windows.floor() + 1.0),
            AlgorithmKind::SlidingWindow => burst * windows.max(1.0),
            _ => self.per_second as f64 * seconds + burst,
        }
    }

    /// Whether the algorithm's windows are aligned to its clock's origin (so the span that
    /// bounds admissions starts there, not at the first check).
    pub fn windows_start_at_clock_origin(algorithm: AlgorithmKind) -> bool {
        matches!(
            algorithm,
            AlgorithmKind::FixedWindow | AlgorithmKind::SlidingWindow
        )
    }
}

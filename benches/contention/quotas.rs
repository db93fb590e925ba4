//! The algorithms of the rows, the `ratelimit` crate's expression of a quota, and what a quota
//! admits at most over a run.

use crate::quota_spec::QuotaSpec;
use std::time::Duration;

/// What a row's limiter does, as the CSV's `algorithm` column names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AlgorithmKind {
    /// Generic cell rate algorithm (nanolimit's `Gcra`, governor).
    Gcra,
    /// nanolimit's `StripedLimiter`: one GCRA budget leased into per-thread stripes.
    GcraStriped,
    /// nanolimit's GCRA limiter built with counters (`Limiter::with_counters`).
    GcraCounted,
    /// nanolimit's `LeasedRedisLimiter`: a Redis GCRA budget spent from local leases.
    GcraLeased,
    /// nanolimit's sliding-window counter.
    SlidingWindow,
    /// nanolimit's fixed-window counter.
    FixedWindow,
    /// nanolimit's exact sliding log (`SlidingLogLimiter`).
    SlidingLog,
    /// A token bucket (the `ratelimit` crate, the mutex-hashmap).
    TokenBucket,
    /// Floor: one clock read.
    ClockRead,
    /// Floor: one uncontended compare-and-swap.
    Cas,
    /// Floor: one ahash of a key, then one uncontended compare-and-swap.
    AhashCas,
    /// A many-key scenario's floor: one ahash of the key, then one compare-and-swap on the
    /// cache line it picks in an array as large as nanolimit's table for the scenario.
    RandomLineCas,
    /// http-layer's floor: the request sent to the inner service with no layer.
    NoLayer,
    /// http-layer's second floor: the least a keyed layer must add to the request (the
    /// client's address, a clock read, an ahash, one compare-and-swap on a line of an array as
    /// large as nanolimit's table), with no limiter.
    PeerIpCheck,
    /// inflight: nanolimit's `InFlightLimiter`, a permit taken and dropped.
    InFlight,
    /// inflight: tokio's `Semaphore`, a permit taken and dropped.
    Semaphore,
    /// inflight's floor: `fetch_add` then `fetch_sub` on one shared word.
    FetchAddPair,
    /// composite-2: nanolimit's `Composite` of a per-key GCRA and a global GCRA.
    GcraPlusGcra,
    /// composite-2: the same composite with the global GCRA a `StripedLimiter`, last.
    GcraPlusGcraStriped,
    /// composite-2's floor: a clock read, ahash and a compare-and-swap on the thread's own
    /// word, then one on a shared word.
    TwoCas,
    /// direct-allow-counted's floor: a compare-and-swap on one shared word, then a Relaxed
    /// `fetch_add` on the thread's own cache line.
    CasFetchAdd,
}

impl AlgorithmKind {
    /// The name in the CSV and the table.
    pub fn name(self) -> &'static str {
        match self {
            AlgorithmKind::Gcra => "gcra",
            AlgorithmKind::GcraStriped => "gcra-striped",
            AlgorithmKind::GcraCounted => "gcra-counted",
            AlgorithmKind::GcraLeased => "gcra-leased",
            AlgorithmKind::SlidingWindow => "sliding-window",
            AlgorithmKind::FixedWindow => "fixed-window",
            AlgorithmKind::SlidingLog => "sliding-log",
            AlgorithmKind::TokenBucket => "token-bucket",
            AlgorithmKind::ClockRead => "clock-read",
            AlgorithmKind::Cas => "cas",
            AlgorithmKind::AhashCas => "ahash-cas",
            AlgorithmKind::RandomLineCas => "random-line-cas",
            AlgorithmKind::NoLayer => "no-layer",
            AlgorithmKind::PeerIpCheck => "peer-ip-check",
            AlgorithmKind::InFlight => "in-flight",
            AlgorithmKind::Semaphore => "semaphore",
            AlgorithmKind::FetchAddPair => "fetch-add-pair",
            AlgorithmKind::GcraPlusGcra => "gcra+gcra",
            AlgorithmKind::GcraPlusGcraStriped => "gcra+gcra-striped",
            AlgorithmKind::TwoCas => "two-cas",
            AlgorithmKind::CasFetchAdd => "cas-fetch-add",
        }
    }
}

/// What the contention benchmark needs of a quota beyond building the limiters (which
/// `benches/shared/quota_spec.rs` does for nanolimit and governor).
impl QuotaSpec {
    /// The `ratelimit` crate's token bucket (version 2), starting full.
    pub fn ratelimit(&self) -> ratelimit::Ratelimiter {
        assert_eq!(
            self.period,
            Duration::from_secs(1),
            "the ratelimit crate takes a rate per second"
        );
        ratelimit::Ratelimiter::builder(self.count)
            .max_tokens(self.burst)
            .initial_available(self.burst)
            .build()
            .expect("valid ratelimit parameters")
    }

    /// What the quota admits for one key over `lifetime` under `algorithm`, when the key is
    /// checked continuously from the start of `lifetime` (for window algorithms, a window
    /// boundary) to its end:
    ///
    /// - GCRA and token buckets: `rate × lifetime + burst`, a strict upper bound.
    /// - Fixed window: `limit` per window touched, a strict upper bound.
    /// - Sliding log: `limit` in any window, so `limit × (⌊lifetime / window⌋ + 1)` over the
    ///   lifetime, a strict upper bound (the windows start at the first check).
    /// - Sliding-window counter: `limit × max(1, lifetime / window)`: the first window admits
    ///   the limit at once, then the weighted previous window admits `limit / window` per unit
    ///   of time. The counter approximates a sliding log by design, so a key checked
    ///   intermittently may get somewhat more; this is the saturated key's exact value.
    pub fn admitted_bound_per_key(&self, algorithm: AlgorithmKind, lifetime: Duration) -> f64 {
        let seconds = lifetime.as_secs_f64();
        let windows = seconds / self.window().as_secs_f64();
        let burst = self.burst as f64;
        match algorithm {
            AlgorithmKind::FixedWindow | AlgorithmKind::SlidingLog => {
                burst * (windows.floor() + 1.0)
            }
            AlgorithmKind::SlidingWindow => burst * windows.max(1.0),
            _ => self.rate_per_second() * seconds + burst,
        }
    }

    /// Whether the algorithm's windows are aligned to its clock's origin (so the span that
    /// bounds admissions starts at a window boundary, not at the first check).
    pub fn windows_start_at_clock_origin(algorithm: AlgorithmKind) -> bool {
        matches!(
            algorithm,
            AlgorithmKind::FixedWindow | AlgorithmKind::SlidingWindow
        )
    }
}

//! The quotas of the direct-limiter benchmarks, shared by `benches/direct.rs` and
//! `benches/callgrind_direct.rs` (included by `#[path]`), so both measure the same thing.

use nanolimit::{FixedWindow, Gcra, SlidingWindow};
use std::num::NonZeroU32;
use std::time::Duration;

/// One unit per nanosecond, bursts of 10^9: no single thread can exhaust it.
pub fn generous_gcra() -> Gcra {
    Gcra::per_second(1_000_000_000)
        .and_then(|quota| quota.with_burst(1_000_000_000))
        .expect("valid quota")
}

/// About 1,000 units per microsecond over 1 ms windows: no single thread can exhaust it.
pub fn generous_sliding_window() -> SlidingWindow {
    SlidingWindow::new(SlidingWindow::MAX_LIMIT, Duration::from_millis(1)).expect("valid quota")
}

/// About 16,000 units per microsecond over 1 ms windows: no single thread can exhaust it.
pub fn generous_fixed_window() -> FixedWindow {
    FixedWindow::new(FixedWindow::MAX_LIMIT, Duration::from_millis(1)).expect("valid quota")
}

/// governor's counterpart of [`generous_gcra`]: one unit per nanosecond.
pub fn governor_generous_quota() -> governor::Quota {
    governor::Quota::per_second(NonZeroU32::new(1_000_000_000).expect("non-zero"))
}

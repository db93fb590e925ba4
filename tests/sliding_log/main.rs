//! The exact sliding log (`nanolimit::sliding_log`), one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `direct` | `SlidingLogLimiter` makes the same decisions and reports the same metadata as a reference log of timestamps, on random schedules with backward readings; exact under threads; clear errors for bad input |
//! | `keyed` | `KeyedSlidingLogLimiter` decides per key as a reference log, on tables that never reuse an entry and on crowded ones that do; at most the limit in any window; exact per key under threads; each `WhenFull` policy; memory that grows with the limit |
//!
//! The reference log both use is `tests/common/sliding_log.rs`.

#[path = "../common/mod.rs"]
mod common;

mod direct;
mod keyed;

//! Helpers shared by the test binaries. An area binary includes this folder with
//! `#[path = "../common/mod.rs"] mod common;` and uses a part of it, one file per concern:
//!
//! | module | what it holds |
//! |---|---|
//! | `time` | nanosecond units, the horizon, [`Timestamp`](nanolimit::Timestamp)s from readings, the monotonic clock a schedule meant |
//! | `limiters` | direct limiters on a [`ManualClock`](nanolimit::ManualClock), checked and peeked at explicit readings, random schedules |
//! | `quota_assertions` | what a quota and a limiter decide, written once over [`Quota`](nanolimit::Quota): exact waits, `remaining`, fresh states, costs of zero and above the limit |
//! | `horizon` | readings past the horizon, a limiter there failing closed, rejected readings leaving the state alone |
//! | `properties` | the property tests' proptest configuration and strategies, and the invariants every quota keeps on any input |
//! | `window` | what the fixed- and sliding-window tests share, written once over their quotas |
//! | `keyed` | keyed tables built the same way in either key mode, and their assertions |
//! | `sliding_log` | the sliding log's reference model |
//!
//! The items of `time`, `limiters`, `quota_assertions`, `horizon` and `properties` are
//! re-exported here (tests name them `common::at`, `common::proptest_config`); `window`, `keyed`
//! and `sliding_log` are named by their module (`common::window::fill_window`).
// Each binary uses a part of the helpers.
#![allow(dead_code)]

mod horizon;
pub mod keyed;
mod limiters;
mod properties;
mod quota_assertions;
pub mod sliding_log;
mod time;
pub mod window;

// As with dead code: a binary that names none of one module's helpers leaves its glob unused.
#[allow(unused_imports)]
pub use {horizon::*, limiters::*, properties::*, quota_assertions::*, time::*};

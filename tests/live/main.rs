//! Live control (`nanolimit::live`), one module:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `control` | the unlimited and "burst then never" quotas keep the quota invariants and do what they say, as tiers too; a [`LiveLimiter`](nanolimit::live::LiveLimiter) decides as a limiter under its current quota, even with checks racing changes; a refused quota changes nothing; one key of a keyed table can be reset |

#[path = "../common/mod.rs"]
mod common;

mod control;

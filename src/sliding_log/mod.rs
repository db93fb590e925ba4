//! The exact sliding log: at most `L` units in any window of length `W`
//! ([`SlidingLogLimiter`], quota [`SlidingLog`]).
//!
//! The sliding-window counter ([`SlidingWindow`](crate::SlidingWindow)) approximates this limit
//! from two counts; GCRA and the fixed window shape traffic differently. The log keeps one
//! record per admitted unit, so it is exact: pick it for small, strict limits where one extra
//! admission matters (5 login attempts per 15 minutes, 3 password resets per hour, 10 SMS per
//! day), at the price of `L` records of memory instead of one word.
//!
//! # The rule, exactly
//!
//! A request of cost `n` judged at time `t` passes iff the units admitted in the window
//! `(t − W, t]` plus `n` are at most `L`. The window is open at its start: a unit admitted at
//! `t₀` counts at `t₀` and until `t₀ + W`, exclusive, and no longer from `t₀ + W` on.
//!
//! - A reading behind the latest admitted unit's time (a clock that stepped back, a timestamp
//!   taken before a preemption) is judged at that latest time, as the other quotas judge
//!   readings behind their state: so whatever the readings, at most `L` units are admitted in
//!   any window of the times the log records.
//! - Decision metadata (a [`Decision<SlidingLog>`](crate::Decision)): `remaining` is `L` minus the units in the window
//!   at the decision's time, `reset_after` the time until the latest unit leaves it, and
//!   `retry_after` the time until the unit that must leave for the request to fit has left.
//! - One request costs at most 16 units (and at most `L`): a request's units are written by
//!   whichever thread finishes them, and its first record says how many follow in 4 bits.
//!   Larger costs are an error ([`RequestError::CostAboveLimit`](crate::RequestError), with the
//!   smaller of the two as the limit).
//!
//! # Lock-free, and why
//!
//! A ring of `L` (rounded up to a power of two) 8-byte records, and one word naming the
//! position of the next request; a check reads three records and that word, an admission is
//! one compare-and-swap on a record and one on the word, a denial records nothing, and nothing
//! allocates after construction. A thread that finds a request half written finishes it, so no
//! thread waits for another. The protocol and why it is exact are in `ring.rs`; the record's
//! bit layout in `record.rs`.
//!
//! ```
//! use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
//! use nanolimit::ManualClock;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let logins = SlidingLogLimiter::with_clock(
//!     SlidingLog::new(5, Duration::from_secs(15 * 60))?,
//!     clock.clone(),
//! )?;
//! for _ in 0..5 {
//!     assert!(logins.check().is_allowed());
//!     clock.advance(Duration::from_secs(60));
//! }
//! let denied = logins.check();
//! assert!(denied.is_denied());
//! // The first attempt (at minute 0) leaves the window at minute 15: 10 minutes from now.
//! assert_eq!(denied.retry_after(), Duration::from_secs(10 * 60));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Per key
//!
//! [`KeyedSlidingLogLimiter`] keeps one log per key on the keyed limiters' bounded table, for
//! limits up to [`MAX_KEYED_LIMIT`] (each slot of the table has a ring of records beside it). A
//! check of a key the table holds runs the same protocol on the key's slot, whose state word is
//! the log's position; `src/sliding_log/slots.rs` says how a slot passes from one key to another
//! without a check ever counting in the wrong key's log.
//!
//! # Across servers
//!
//! `RedisLimiter<SlidingLog>` (feature `redis`, module `nanolimit::redis`) keeps each key's log
//! in a Redis sorted set, for a fleet of servers, and decides by the same rule.

mod decision;
mod keyed;
mod limiter;
mod record;
mod ring;
mod slots;

pub use keyed::{KeyedSlidingLogLimiter, MAX_KEYED_LIMIT};
pub use limiter::SlidingLogLimiter;

pub use crate::quota::sliding_log::{SlidingLog, MAX_COST, MAX_LIMIT};

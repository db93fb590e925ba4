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
//! - Decision metadata (a [`Decision<SlidingLog>`](crate::Decision)): `remaining` is `L` minus
//!   the units in the window at the decision's time, `reset_after` the time until the latest
//!   unit leaves it, and `retry_after` the time until the unit that must leave for the request
//!   to fit has left.
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
//! Admissions from several cores at once do not scale as GCRA's do: each moves a record's cache
//! line and the position word between cores. The log suits small, strict limits; for tens of
//! millions of admissions per second across cores, use GCRA or a
//! [`StripedLimiter`](crate::striped::StripedLimiter) (`docs/performance.md` measures both).
//!
//! # Per key
//!
//! [`KeyedSlidingLogLimiter`] keeps one log per key on the keyed limiters' bounded table (the
//! same capacity, shards, key modes and [`WhenFull`](crate::WhenFull) policies, built with the
//! same [`KeyedBuilder`](crate::KeyedBuilder)), for limits up to [`MAX_KEYED_LIMIT`] per window:
//!
//! ```
//! use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
//! use std::time::Duration;
//!
//! // 5 login attempts per 15 minutes per account, for up to 100,000 accounts at once.
//! let logins = KeyedSlidingLogLimiter::<str>::new(
//!     SlidingLog::new(5, Duration::from_secs(15 * 60))?,
//!     100_000,
//! )?;
//! for _ in 0..5 {
//!     assert!(logins.check("alice@example.com").is_allowed());
//! }
//! assert!(logins.check("alice@example.com").is_denied());
//! assert!(logins.check("bob@example.com").is_allowed());
//! println!("{} bytes for 100,000 accounts", logins.memory_bytes());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - **Memory**: every slot of the table has its ring, `8 × L` bytes (`L` rounded up to a power
//!   of two) beside the table's own, fixed at construction: `memory_bytes()` and
//!   `bytes_per_key()` report it.
//! - **Checks** of a key the table holds run the same lock-free protocol on the key's slot,
//!   whose state word is the log's position; a new key takes its shard's insert lock. A key's
//!   entry is reused by another key once every unit in its log has left the window (no
//!   sweeper). The inserter *seals* the position it takes, so a check of the old key racing the
//!   reuse either lands first (and the old key keeps its slot) or starts over: an admission
//!   always counts in its own key's log (`src/sliding_log/slots.rs`; loom models race it
//!   against a reclaim and an eviction).
//! - **Readings behind**: a key that comes back, after its entry was reclaimed, with a reading
//!   behind its old units is judged no earlier than the time they left the window, so a stale
//!   timestamp never gets a key more than `L` in a window. A new key in a reclaimed slot may
//!   see the old key's units for readings behind the reclaim: fewer admissions, never more.
//! - **Eviction** ([`WhenFull::EvictClosestToFresh`](crate::WhenFull::EvictClosestToFresh))
//!   takes the entry whose latest unit is oldest, only for a new key that the evicted log
//!   admits: the new key inherits its units, and the evicted key starts afresh if it comes
//!   back (its units in the window are forgotten).
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

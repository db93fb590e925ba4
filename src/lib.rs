//! # nanolimit
//!
//! Lock-free rate limiting for hot paths: packet loops, request loops in multi-threaded
//! servers, anywhere a mutex or an allocation per call is too expensive.
//!
//! - Algorithms: [`Gcra`] (token bucket / leaky bucket as a meter), [`SlidingWindow`] counter
//!   and [`FixedWindow`] counter. Each keeps its state in a single `u64`, updated by one
//!   compare-and-swap; a denial writes nothing.
//! - [`Limiter`]: one state shared by all callers. [`KeyedLimiter`]: one state per key, in a
//!   bounded, sharded, cache-padded table.
//! - Every check returns a [`Decision`]: allowed or not, and on demand the limit, what remains,
//!   reset-after and retry-after (the `RateLimit-*` and `Retry-After` header values).
//! - Time comes from a [`Clock`] ([`QuantaClock`] by default, [`ManualClock`] for tests), or
//!   from the caller: every check has an `_at(now_ns)` form.
//!
//! ```
//! use nanolimit::{Gcra, Limiter, ManualClock};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let limiter = Limiter::with_clock(Gcra::per_second(2)?, clock.clone());
//! assert!(limiter.check().is_allowed());
//! assert!(limiter.check().is_allowed());
//! let denied = limiter.check();
//! assert!(denied.is_denied());
//! assert_eq!(denied.retry_after(), Duration::from_millis(500));
//! clock.advance(Duration::from_millis(500));
//! assert!(limiter.check().is_allowed());
//! # Ok::<(), nanolimit::QuotaError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod algorithm;
mod clock;
mod decision;
mod direct;
mod driver;
mod error;
pub mod fixed_window;
pub mod gcra;
pub mod keyed;
pub mod sliding_window;
mod sync;
mod window;

pub use algorithm::{Algorithm, Step};
#[cfg(not(nanolimit_loom))]
pub use clock::UpkeepClock;
pub use clock::{Clock, ManualClock, QuantaClock, TIME_HORIZON_NS};
pub use decision::{Decision, RateLimitHeaders};
pub use direct::Limiter;
pub use error::{InsufficientCapacity, QuotaError};
pub use fixed_window::FixedWindow;
pub use gcra::Gcra;
pub use keyed::*;
pub use sliding_window::SlidingWindow;
pub use window::WindowInstant;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

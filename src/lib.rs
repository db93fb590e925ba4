//! # nanolimit
//!
//! Lock-free rate limiting for hot paths: packet loops, request loops in multi-threaded
//! servers, anywhere a mutex or an allocation per call is too expensive.
//!
//! - Quotas: [`Gcra`] (token bucket / leaky bucket as a meter), [`SlidingWindow`] counter and
//!   [`FixedWindow`] counter. Each keeps its state in a single `u64`, updated by one
//!   compare-and-swap; a denial writes nothing.
//! - [`Limiter`]: one state shared by all callers. [`KeyedLimiter`]: one state per key, in a
//!   bounded, sharded, cache-padded table.
//! - Every check returns a [`Decision`]: allowed or not, and on demand the limit, what remains,
//!   reset-after and retry-after (the `RateLimit-*` and `Retry-After` header values).
//! - Time comes from a [`Clock`] ([`QuantaClock`] by default, [`ManualClock`] for tests), or
//!   from the caller as a [`Timestamp`].
//!
//! Each operation has a shorthand for the common case and a full form taking a [`Request`]
//! (cost, caller-supplied time, [tier](Request::tier)); checks also have an infallible packet-loop form:
//!
//! | operation | direct: shorthand / full form | keyed: shorthand / full form |
//! |---|---|---|
//! | consume if it fits | [`check()`](Limiter::check) / [`check_with(request)`](Limiter::check_with) | [`check(&key)`](KeyedLimiter::check) / [`check_with(&key, request)`](KeyedLimiter::check_with) |
//! | the same, at a time the caller holds | [`check_at(now)`](Limiter::check_at) | [`check_at(&key, now)`](KeyedLimiter::check_at) |
//! | ask without consuming | [`peek()`](Limiter::peek) / [`peek_with(request)`](Limiter::peek_with) | [`peek(&key)`](KeyedLimiter::peek) / [`peek_with(&key, request)`](KeyedLimiter::peek_with) |
//! | book ahead ([`Gcra`] quotas) | [`reserve()`](Limiter::reserve) / [`reserve_with(request)`](Limiter::reserve_with) | [`reserve(&key)`](KeyedLimiter::reserve) / [`reserve_with(&key, request)`](KeyedLimiter::reserve_with) |
//! | block until the booked start | [`wait()`](Limiter::wait) / [`wait_with(request)`](Limiter::wait_with) | [`wait(&key)`](KeyedLimiter::wait) / [`wait_with(&key, request)`](KeyedLimiter::wait_with) |
//!
//! Reservations, waits (async ones with the `tokio` feature) and the [`LeakyBucket`] queue are
//! described in the [`Reservation`] documentation.
//!
//! ```
//! use nanolimit::{Gcra, Limiter, ManualClock, Request};
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
//! assert!(limiter.check_with(Request::cost(1))?.is_allowed());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`LiveLimiter`] is a direct limiter whose quota changes at runtime
//! ([`set_quota`](LiveLimiter::set_quota)) while other threads check (see [`live`]).
//!
//! [`StripedLimiter`] keeps one GCRA budget for every thread of a server while letting threads
//! admit without contending: each admits from its own stripe of units leased from the budget
//! (see [`striped`] for the bound on over-admission).
//!
//! [`InFlightLimiter`] limits concurrency rather than rate: at most N units of work in progress
//! at once, each held by a [`Permit`](inflight::Permit) until it is dropped, with blocking and
//! (feature `tokio`) async acquires served first come, first served; [`KeyedInFlightLimiter`]
//! keeps such a limit per key on the keyed table (see [`inflight`]).
//!
//! [`Composite`] checks several limiters as one, all or nothing (per key 10 per second and
//! 1,000 per day; per IP 100 per second and 50,000 per second in all): a request passes only if
//! every member admits it, a denial gives back what earlier members consumed, and the decision
//! reports the binding member (see [`composite`]).
//!
//! [`SlidingLogLimiter`] is the exact sliding log: one record per admitted unit, so no window of
//! length `W` ever holds more than `L` units; [`KeyedSlidingLogLimiter`](sliding_log::KeyedSlidingLogLimiter)
//! keeps such a log per key on the keyed table (see [`sliding_log`]).
//!
//! [`Limiter::with_counters`] and [`KeyedBuilder::with_counters`] make limiters that
//! count their checks, allowed and denied, in calls and units ([`Stats`]), on per-thread
//! striped lines off the state's; a limiter without them is compiled as if counters did not
//! exist. With the `metrics` feature, `record_metrics` exports them (see [`counters`]).
//!
//! The modules follow the layers: [`quota`] (pure step functions) → the compare-and-swap driver
//! and the operations it applies (check, reserve, cancel) → [`Decision`] and [`Request`] → the
//! limiters ([`Limiter`], [`keyed`], [`striped`], [`sliding_log`], [`inflight`]) (reservations
//! and waits) → [`clock`].
#![cfg_attr(not(any(feature = "std", test)), no_std)]
// Without `std`, the engine's parts that only the keyed, composite and sliding-log limiters use
// are compiled but unused.
#![cfg_attr(not(feature = "std"), allow(dead_code))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod engine;
mod limiter;
mod store;
mod sync;
#[cfg(feature = "std")]
mod thread_index;

pub mod clock;
#[cfg(feature = "std")]
pub mod composite;
#[cfg(feature = "std")]
pub mod inflight;
#[cfg(feature = "std")]
pub mod live;
pub mod quota;
#[cfg(feature = "std")]
pub mod sliding_log;
#[cfg(feature = "std")]
pub mod striped;

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "redis")]
pub mod redis;

pub use limiter::counters;
#[cfg(feature = "std")]
pub use limiter::keyed;

#[cfg(feature = "std")]
pub use clock::QuantaClock;
#[cfg(feature = "tokio")]
pub use clock::TokioClock;
#[cfg(all(feature = "std", not(nanolimit_loom)))]
pub use clock::UpkeepClock;
pub use clock::{Clock, ManualClock, Timestamp, TimestampError};
#[cfg(feature = "std")]
pub use composite::Composite;
pub use engine::decision::{Decision, RateLimitHeaders};
pub use engine::error::{BuildError, RequestError};
pub use engine::request::Request;
pub use engine::stats::Stats;
#[cfg(feature = "std")]
pub use inflight::{InFlightLimiter, KeyedInFlightLimiter};
#[cfg(feature = "std")]
pub use keyed::{Exact, ExactKey, Hashed, KeyMode, KeyedBuilder, KeyedLimiter, WhenFull};
pub use limiter::direct::Limiter;
#[cfg(feature = "std")]
pub use limiter::leaky_bucket::LeakyBucket;
pub use limiter::rate_limit::RateLimit;
pub use limiter::reservation::Reservation;
#[cfg(feature = "std")]
pub use live::LiveLimiter;
pub use quota::{FixedWindow, Gcra, Quota, QuotaError, SlidingWindow, Step};
#[cfg(feature = "std")]
pub use sliding_log::SlidingLogLimiter;
#[cfg(feature = "std")]
pub use striped::StripedLimiter;

/// The README's examples, compiled and run as doc tests (with the `tokio` feature, which one of
/// them uses; `bash .ci/test-all` turns every feature on).
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

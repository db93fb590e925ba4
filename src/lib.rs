//! # nanolimit
//!
//! Lock-free rate limiting for hot paths: packet loops, request loops in multi-threaded
//! servers, anywhere a mutex or an allocation per call is too expensive. A limit keeps a key's
//! whole state in one `u64`, updated by one compare-and-swap; a denial writes nothing, so a
//! saturated limiter is read-only and stays in every core's cache; nothing allocates after
//! construction.
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
//! # Where to start
//!
//! | you need | use | guide |
//! |---|---|---|
//! | one rate for the whole service | [`Limiter`] | [Operations](#operations) below |
//! | a rate per client, API key or flow | [`KeyedLimiter`] | [`keyed`] |
//! | one rate checked by many cores | [`StripedLimiter`](crate::striped::StripedLimiter) | [`striped`] |
//! | several limits at once, all or nothing | [`Composite`](crate::composite::Composite) | [`composite`] |
//! | a quota changed at runtime; unlimited tiers; forgetting a key | [`LiveLimiter`](crate::live::LiveLimiter), [`KeyedLimiter::remove`] | [`live`] |
//! | at most `L` in every window of length `W`, exactly | [`SlidingLogLimiter`](crate::sliding_log::SlidingLogLimiter), [`KeyedSlidingLogLimiter`](sliding_log::KeyedSlidingLogLimiter) | [`sliding_log`] |
//! | at most N units of work in progress | [`InFlightLimiter`](crate::inflight::InFlightLimiter), [`KeyedInFlightLimiter`](crate::inflight::KeyedInFlightLimiter) | [`inflight`] |
//! | requests that wait for their turn | `reserve`, `wait`, `until_ready`; [`LeakyBucket`] | [Throttling](#throttling-waiting-instead-of-rejecting) below |
//! | how many checks were allowed and denied | `with_counters()`, [`Stats`] | [`counters`] |
//! | an HTTP service (feature `http`) | `http::RateLimitLayer` | the `http` module |
//! | one limit across a fleet of servers (feature `redis`) | `redis::RedisLimiter`, `redis::LeasedRedisLimiter` | the `redis` module |
//!
//! Which quota to pick ([`Gcra`], [`SlidingWindow`], [`FixedWindow`]) and what each admits:
//! [`quota`]. Where "now" comes from, caller timestamps, and tests on a [`ManualClock`]:
//! [`clock`].
//!
//! # Operations
//!
//! Every operation has a shorthand for the common case and one full form taking a small `Copy`
//! [`Request`]; a check also has an infallible form for a caller that holds the time. Direct and
//! keyed limiters name them in parallel:
//!
//! | operation | direct: shorthand / full form | keyed: shorthand / full form |
//! |---|---|---|
//! | consume if it fits | [`check()`](Limiter::check) / [`check_with(request)`](Limiter::check_with) | [`check(&key)`](KeyedLimiter::check) / [`check_with(&key, request)`](KeyedLimiter::check_with) |
//! | the same, at a time the caller holds (packet loops) | [`check_at(now)`](Limiter::check_at) | [`check_at(&key, now)`](KeyedLimiter::check_at) |
//! | ask without consuming | [`peek()`](Limiter::peek) / [`peek_with(request)`](Limiter::peek_with) | [`peek(&key)`](KeyedLimiter::peek) / [`peek_with(&key, request)`](KeyedLimiter::peek_with) |
//! | book ahead ([`Gcra`] only) | [`reserve()`](Limiter::reserve) / [`reserve_with(request)`](Limiter::reserve_with) | [`reserve(&key)`](KeyedLimiter::reserve) / [`reserve_with(&key, request)`](KeyedLimiter::reserve_with) |
//! | block until the booked start | [`wait()`](Limiter::wait) / [`wait_with(request)`](Limiter::wait_with) | [`wait(&key)`](KeyedLimiter::wait) / [`wait_with(&key, request)`](KeyedLimiter::wait_with) |
//! | await the booked start (feature `tokio`) | `until_ready()` / `until_ready_with(request)` | `until_ready(&key)` / `until_ready_with(&key, request)` |
//! | make a tier: another quota on the same state | [`tier(quota)`](Limiter::tier) | [`tier(quota)`](KeyedLimiter::tier) |
//! | read the limiter's clock | [`now()`](Limiter::now) | [`now()`](KeyedLimiter::now) |
//!
//! - [`Request::new()`](Request::new) is one unit, now, under the limiter's quota;
//!   [`Request::cost(n)`](Request::cost) is `n` units, all or nothing;
//!   [`.at(timestamp)`](Request::at) judges it at a time the caller holds;
//!   [`.tier(quota)`](Request::tier) under a tier; [`.max_wait(d)`](Request::max_wait) and
//!   [`.jitter(d)`](Request::jitter) for reservations and waits.
//! - Checks and peeks answer a [`Decision`]: allowed or not, and, computed only when asked from
//!   the word the check already read, the limit, what remains, reset-after, retry-after and
//!   their header values ([`Decision::headers`]). The full forms return
//!   `Result<Decision, RequestError>`: an error only for a request that can never pass (a cost
//!   above the limit: tell the client to split it rather than to wait; a tier in other units).
//! - A tier is a quota that the limiter using it made with `tier(quota)`, which validates it and
//!   expresses it in the units of the limiter's state. A key's state carries over from one tier
//!   to another: GCRA keeps its debt in time, windows keep their counts.
//!
//! ```
//! use nanolimit::{Gcra, KeyedLimiter, Request};
//!
//! let limiter = KeyedLimiter::<str, _>::new(Gcra::per_second(10)?, 10_000)?;
//! let premium = limiter.tier(Gcra::per_second(100)?)?;
//!
//! assert!(limiter.check("free-user").is_allowed());
//! let bulk = limiter.check_with("premium-user", Request::cost(60).tier(premium))?;
//! assert!(bulk.is_allowed());
//! assert_eq!(bulk.remaining(), 40);
//! assert!(limiter.check_with("free-user", Request::cost(11)).is_err()); // above the burst
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Throttling: waiting instead of rejecting
//!
//! A check answers "now or never". A reservation answers "at this time": `reserve` books the
//! request for the earliest start the quota allows, and requests booked after it queue behind
//! it. The waits are built on it, so waiters start at their booked instant, in the order they
//! booked, with no re-checks. Only GCRA can book ahead (its state is a time): the reserving
//! operations are on `Limiter<Gcra>` and `KeyedLimiter<K, Gcra>`, and do not compile on a
//! window limiter.
//!
//! - A [`Reservation`] says when the request may start ([`start`](Reservation::start),
//!   [`delay`](Reservation::delay)), or that it was refused, booking nothing
//!   ([`is_denied`](Reservation::is_denied)): it would have waited longer than
//!   [`Request::max_wait`], or a full keyed table had no room for its key.
//! - [`Request::max_wait(d)`](Request::max_wait) refuses a request that would wait longer than
//!   `d`; for a wait it is the deadline. [`Request::jitter(d)`](Request::jitter) starts a wait up
//!   to `d` later (uniformly random, never earlier), to spread a herd scheduled for one instant.
//! - A blocking wait parks the thread ([`Clock::sleep_until`]: the thread sleeps for the
//!   remaining time and spins only for its last microsecond). On a [`ManualClock`] it blocks
//!   until another thread moves the clock, so tests of waits take no real time. A wait that
//!   cannot start is a [`RequestError`]: [`WaitTooLong`](RequestError::WaitTooLong) or
//!   [`TableFull`](RequestError::TableFull).
//! - The async waits (feature `tokio`) sleep on tokio's timer, and cancel their reservation
//!   when dropped before its start. `TokioClock` reads tokio's time, so under paused time
//!   (`#[tokio::test(start_paused = true)]`) the limiter and the timers agree to the nanosecond.
//! - Cancelling a reservation before its start ([`cancel`](Reservation::cancel)) gives back
//!   its whole cost if it is still the latest booking; if requests were booked behind it since,
//!   they keep their start times and it gives nothing back. The limiter is never left looser
//!   than if the reservation had not been made. (Go's `x/time/rate` also gives back a part when
//!   later requests used less; from one state word that rule over-gives when two reservations
//!   are cancelled out of order: [`Gcra::cancel_step`] has the example.) Dropping a reservation
//!   does not cancel it.
//!
//! ```
//! use nanolimit::{Gcra, Limiter, ManualClock, Request};
//! use std::time::Duration;
//!
//! // 10 per second, no bursts: one every 100 ms.
//! let limiter = Limiter::with_clock(Gcra::per_second(10)?.with_burst(1)?, ManualClock::new());
//! let first = limiter.reserve();
//! let second = limiter.reserve();
//! assert_eq!((first.delay(), second.delay()), (Duration::ZERO, Duration::from_millis(100)));
//!
//! // At most 150 ms of waiting: the third would wait 200 ms, so it is refused, booking nothing.
//! let third = limiter.reserve_with(Request::new().max_wait(Duration::from_millis(150)))?;
//! assert!(third.is_denied());
//!
//! // The second is not needed after all: its slot goes to the next request.
//! second.cancel();
//! assert_eq!(limiter.reserve().delay(), Duration::from_millis(100));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! An async worker throttled to 100 requests per second (feature `tokio`): each request starts
//! 10 ms after the one before, on time, where a loop that checks and then sleeps for the
//! retry-after loses every timer's lateness and, with several workers, races them for every
//! slot (the example `throttled_workers` measures both).
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use nanolimit::{Gcra, Limiter};
//!
//! let limiter = Limiter::new(Gcra::per_second(100)?.with_burst(1)?);
//! for _ in 0..5 {
//!     let start = limiter.until_ready().await?; // starts every 10 ms
//!     assert!(limiter.now() >= start);
//!     // send the request
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "tokio"))]
//! # fn main() {}
//! ```
//!
//! [`LeakyBucket`] is the traffic shaper: requests join a queue that holds at most `Q` waiting
//! requests and drains one every emission interval; a request that finds it full is dropped.
//! It is a GCRA limiter with a burst of 1 on which every request is a reservation with a
//! maximum wait of `Q` intervals, and it releases requests exactly when a queue would (a
//! property test compares the two to the nanosecond). The leaky bucket as a meter, which
//! rejects rather than queues, is [`Gcra`] itself.
//!
//! # Bad input
//!
//! An error, never a panic, an abort or a silent wrap:
//!
//! | error | when |
//! |---|---|
//! | [`QuotaError`] | a quota is built (a zero rate or window, a limit that does not fit its word, a rate or period out of range) or a tier made (a window tier of another length) |
//! | [`BuildError`] | a limiter cannot be built or allocated: a zero capacity, a shard count that is not a power of two, a size the allocator refuses, a lease above the burst, a zero in-flight limit, a Redis connection, an HTTP policy name |
//! | [`RequestError`] | a request can never pass: a cost above the limit, a tier made for a limiter counting in other units; a wait that cannot start |
//! | [`TimestampError`](crate::clock::TimestampError) | a reading past the horizon ([`Timestamp::HORIZON`], about 18.3 years), so a Unix-epoch time or an uninitialised `u64::MAX` fails where it is made, never inside a limiter |
//!
//! # Features
//!
//! `std` (on by default) brings the keyed table and every limiter on it, the striped, live,
//! composite, sliding-log and in-flight limiters, blocking waits, counters, and the clocks that
//! read the system's time. Without it the crate is `#![no_std]` with `alloc`: the quotas, the
//! engine, and the direct [`Limiter`] (check, peek, reserve) with [`ManualClock`] as its
//! default clock; its only dependency is `crossbeam-utils`. `tokio` adds the async waits and
//! `TokioClock`; `http` the tower layer (`nanolimit::http`); `axum` the peer address axum
//! records; `metrics` `record_metrics`, which exports counters; `redis` the Redis limiters
//! (`nanolimit::redis`). Each of them turns `std` on.
//!
//! # Layers
//!
//! The source is built in layers, lowest first. A module imports only from its own layer or
//! below, and the modules of one upper layer never import each other: `.ci/layers.py` checks
//! this order, and CI runs it.
//!
//! 1. **`sync` and [`clock`]**: every atomic and lock the crate uses in one place (loom's under
//!    the model checker), time ([`Clock`], [`Timestamp`]), and the number of the calling thread.
//! 2. **[`quota`]**: what a state word means. Each quota is a pure step function from (state
//!    word, now, cost) to (new word, decision); reserving, cancelling and refunding are more
//!    step functions, so each algorithm is tested exhaustively on its own.
//! 3. **The engine** (`src/engine/`): the one compare-and-swap driver that applies any step to a
//!    word (`driver`), the operations it applies (`operation`: check, peek, book, give back,
//!    release), what a request asks ([`Request`]), what a limiter answers ([`Decision`]), why a
//!    request or a build fails ([`RequestError`], [`BuildError`]), and what was counted
//!    ([`Stats`]).
//! 4. **The store** (`src/store/`): where words live, apart from what they mean: one word for a
//!    direct limiter, or the bounded keyed table with one word per key, its lock-free lookups,
//!    inserts under a shard's lock, and the slot protocol that keeps slots free of ABA.
//! 5. **The limiters** (`src/limiter/`): one core under every rate limiter, which writes each
//!    operation once for both stores; [`Limiter`], [`KeyedLimiter`] and its [`KeyedBuilder`];
//!    reservations ([`Reservation`]), waits and the [`LeakyBucket`]; [`counters`]. Then the
//!    limiter kinds, each a meaning or a policy over the layers below and none reaching into
//!    another: [`striped`], [`live`], [`composite`], [`sliding_log`], [`inflight`].
//! 6. **The integrations**, `http` and `redis`: nothing in the crate imports them.
//!
//! `cargo doc --document-private-items` shows the packed state layouts, the keyed slot protocol
//! and the argument for its correctness.
//!
//! How it is checked: unit tests of every step function on its edges; property tests of each
//! algorithm against a plain reference model with wide integers, of the keyed table against a
//! `HashMap`, and that no step panics, wraps or admits a cost above the limit for any word,
//! reading and cost; multi-thread tests on a frozen clock that admit exactly the limit; loom
//! models of the driver, the keyed slot protocol, reservations, refunds and counters
//! (`loom-tests/README.md` lists them and the bugs each was shown to catch); and, for the HTTP
//! layer, a real server and client.
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

// The types every user names, at the root. Those that live in a public module are listed there
// in the documentation (`no_inline`); the others (the engine's and the limiter core's) are
// documented here.
#[cfg(feature = "std")]
#[doc(no_inline)]
pub use clock::QuantaClock;
#[doc(no_inline)]
pub use clock::{Clock, ManualClock, Timestamp};
pub use engine::decision::{Decision, RateLimitHeaders};
pub use engine::error::{BuildError, RequestError};
pub use engine::request::Request;
pub use engine::stats::Stats;
#[cfg(feature = "std")]
#[doc(no_inline)]
pub use keyed::{KeyedBuilder, KeyedLimiter, WhenFull};
pub use limiter::direct::Limiter;
#[cfg(feature = "std")]
pub use limiter::leaky_bucket::LeakyBucket;
pub use limiter::rate_limit::RateLimit;
pub use limiter::reservation::Reservation;
#[doc(no_inline)]
pub use quota::{FixedWindow, Gcra, Quota, QuotaError, SlidingWindow};

/// The README's examples, compiled and run as doc tests (with the `tokio` feature, which one of
/// them uses; `bash .ci/test-all` turns every feature on).
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

//! Throttling: admitting a request later instead of rejecting it.
//!
//! A check ([`Limiter::check`](crate::Limiter::check)) answers "now or never". A reservation
//! answers "at this time": it books the request for the earliest start the quota allows, and
//! requests booked after it queue behind it. Waits build on reservations, so waiters start in
//! the order they booked, at their booked instant, with no re-checks:
//!
//! | operation | direct | keyed | returns |
//! |---|---|---|---|
//! | book ahead | `reserve()` / `reserve_with(request)` | `reserve(&key)` / `reserve_with(&key, request)` | a [`Reservation`]: its start, or a refusal |
//! | block until the start | `wait()` / `wait_with(request)` | `wait(&key)` / `wait_with(&key, request)` | the start, or a [`WaitError`] |
//! | await the start (feature `tokio`) | `until_ready()` / `until_ready_with(request)` | `until_ready(&key)` / `until_ready_with(&key, request)` | the same |
//!
//! A [`Request`](crate::Request) sets the longest a request may wait
//! ([`max_wait`](crate::Request::max_wait): a deadline; refused requests book nothing) and a
//! jitter for waits ([`jitter`](crate::Request::jitter)). A [`LeakyBucket`] is a queue of
//! bounded capacity that drains at a constant rate, made of the same parts.
//!
//! Only quotas that can book ahead offer these operations ([`Reservable`](crate::Reservable):
//! GCRA). A window's state counts within its current window and cannot hold bookings in the
//! windows to come, so `reserve` on a window limiter does not compile:
//!
//! ```compile_fail
//! use nanolimit::{FixedWindow, Limiter};
//!
//! let limiter = Limiter::new(FixedWindow::per_second(10).unwrap());
//! let _ = limiter.reserve();
//! ```
//!
//! # Cancellation
//!
//! A reservation that will not be used is cancelled before its start
//! ([`Reservation::cancel`]); the async waits cancel theirs when dropped. A cancellation undoes
//! the booking, giving back its whole cost, if it is still the latest one; if requests were
//! booked behind it since, they keep their start times, and it gives nothing back. The limiter
//! is never left looser than if the reservation had not been made
//! ([`Reservable::cancel_step`](crate::Reservable::cancel_step) states the rule, why, and why
//! it does not give back a part as Go's `x/time/rate` does).

mod direct;
mod keyed;
mod leaky_bucket;
mod reservation;
#[cfg(feature = "tokio")]
mod tokio;
mod wait;

pub use leaky_bucket::LeakyBucket;
pub(crate) use reservation::KeyIdentity;
pub use reservation::Reservation;
#[cfg(feature = "tokio")]
pub use tokio::TokioClock;
pub use wait::WaitError;

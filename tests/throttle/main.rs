//! Reservations and waits (`nanolimit::throttle`): booking a start time instead of being
//! denied, one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `reservations` | GCRA reservations and cancellations, direct and keyed, decide as a model of the documented rules; cancelling in any order never leaves a limiter looser than the quota; the longest wait and the horizon |
//! | `waits` | blocking waits start at their booked instants, in booking order, with no re-checks; a wait that cannot meet its deadline books nothing |
//! | `async_waits` | async waits on tokio's paused time start at their booked instants, achieve the configured rate, and give their slot back when dropped (feature `tokio`) |
//! | `leaky_bucket` | the leaky bucket as a queue admits, drops and releases exactly as a reference queue, to the nanosecond, up to the horizon |

#[path = "../common/mod.rs"]
mod common;

#[cfg(feature = "tokio")]
mod async_waits;
mod leaky_bucket;
mod reservations;
mod waits;

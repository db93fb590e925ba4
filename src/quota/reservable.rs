//! Quotas that can book capacity ahead of time: the pure steps behind reservations, which the
//! limiters apply with the same compare-and-swap driver as checks.

use super::Quota;
use super::Step;
use core::time::Duration;

/// A quota that can book capacity ahead of time: what reservations ask of [`Gcra`](super::Gcra),
/// the only such quota (its state is a time, which booking ahead moves on; a window's state
/// counts within its current window and cannot hold bookings in windows to come, so limiters on
/// window quotas have no `reserve` at all). Sealed, and named only inside the crate: the steps
/// are [`Gcra`](super::Gcra)'s own methods, which this delegates to.
pub trait Reservable: Quota {
    /// See [`Gcra::max_wait_ticks`](super::Gcra::max_wait_ticks).
    fn max_wait_ticks(&self, max_wait: Duration) -> u64;

    /// See [`Gcra::reserve_step`](super::Gcra::reserve_step).
    fn reserve_step(&self, state: u64, now: Self::Instant, cost: u64, max_wait_ticks: u64) -> Step;

    /// See [`Gcra::wait_ns`](super::Gcra::wait_ns).
    fn wait_ns(&self, state: u64, now: Self::Instant, cost: u64) -> u64;

    /// See [`Gcra::start_ns`](super::Gcra::start_ns).
    fn start_ns(&self, booked: u64, now: Self::Instant) -> u64;

    /// See [`Gcra::increment_ticks`](super::Gcra::increment_ticks).
    fn increment_ticks(&self, cost: u64) -> u64;

    /// See [`Gcra::cancel_step`](super::Gcra::cancel_step).
    fn cancel_step(state: u64, booked: u64, increment_ticks: u64) -> Step;

    /// See [`Gcra::booked_lead_ticks`](super::Gcra::booked_lead_ticks).
    fn booked_lead_ticks(&self, booked: u64, now: Self::Instant) -> u64;
}

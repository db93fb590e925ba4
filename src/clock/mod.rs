//! Clocks: where a limiter gets "now" from, and how to test code that uses a limiter.
//!
//! A [`Clock`] returns a [`Timestamp`]: monotonic nanoseconds since the clock's origin, at most
//! about 18.3 years ([`Timestamp::HORIZON`]). Limiters only compare readings of the same clock,
//! so the origin is arbitrary; it only has to stay the same for the limiter's lifetime.
//!
//! | clock | cost per read | resolution | use it for |
//! |---|---|---|---|
//! | [`QuantaClock`] (the default with `std`; one origin per process) | one TSC read and a multiply, as governor's default clock | ~1 ns | everything: an exact `retry_after` and smooth admission at any rate |
//! | [`UpkeepClock`] | one relaxed atomic load | its interval (default 100 µs) | hot loops that tolerate time in steps: admissions bunch at each step and `retry_after` is late by up to one interval; one background thread keeps it |
//! | [`ManualClock`] (the default without `std`) | one relaxed atomic load | whatever you set | tests and simulations; time fed by the caller |
//! | `TokioClock` (feature `tokio`) | a read of tokio's time | tokio's | async code tested under tokio's paused time |
//! | the caller's reading (`check_at(now)`, [`Request::at`](crate::Request::at)) | none | the caller's | packet loops that already hold a timestamp |
//!
//! The default is the precise clock: at high rates a 100 µs step would turn a smooth rate into
//! bursts. A hot loop that tolerates coarse time switches with
//! `Limiter::with_clock(quota, UpkeepClock::new(UpkeepClock::DEFAULT_INTERVAL)?)`.
//!
//! # Caller time
//!
//! Every limiter has a `check_at(now)` form, and every full form takes
//! [`Request::at(now)`](crate::Request::at): a caller that already holds a reading passes it in
//! and pays for no clock read. The reading comes from `limiter.now()`, from a
//! `std::time::Instant` through [`QuantaClock::timestamp`] (every `QuantaClock` of a process
//! shares one origin), or from a counter of the caller's own through [`Timestamp::from_ns`],
//! which is an error past the horizon: so a Unix-epoch time in nanoseconds, or an uninitialised
//! `u64::MAX`, fails where it is made and never reaches a limiter's state. Within the horizon a
//! timestamp is trusted: one from another origin, ahead of the true time, makes later correct
//! readings wait until they pass it, so keep one origin per limiter.
//!
//! A clock read can cost more inside a loop than alone: on some virtual machines a TSC read
//! waits for the loads before it, as a fenced read does. A loop that checks many keys at one
//! moment reads the clock once and passes the reading to each check.
//!
//! ```
//! use nanolimit::{Gcra, Limiter, Request};
//!
//! // 1 Gbit/s in bytes, bursts of 64 KiB: each packet costs its length.
//! let bytes = Limiter::new(Gcra::per_second(125_000_000)?.with_burst(65_536)?);
//! let now = bytes.now(); // once per batch of packets
//! for packet_len in [1_500, 64, 9_000] {
//!     assert!(bytes.check_with(Request::cost(packet_len).at(now))?.is_allowed());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Clocks that step back
//!
//! Clocks may step backwards (the TSC can, across cores), and a reading taken before a
//! preemption arrives late. Limiters judge such a reading at the latest time their state has
//! seen: never a panic, never an overflow, never an extra admission, and the decision's
//! remaining, reset-after and retry-after count from that time. On a keyed table that holds for
//! a key whose entry was reclaimed meanwhile: it is judged no earlier than the moment its old
//! entry became fresh. Window quotas tell "behind" from "idle for very long" only so far; the
//! bound is stated in [the quota module](crate::quota#readings-behind-the-state).
//!
//! # Testing code that uses a limiter
//!
//! [`ManualClock`] moves only when told to, and its clones share its time, so a test decides
//! exactly when units come back. A blocking wait on it blocks until another thread moves the
//! clock, so tests of waits take no real time ([`ManualClock::sleepers`] and
//! [`ManualClock::next_wake`] say who waits for what). Async code reads `TokioClock` and runs
//! under `#[tokio::test(start_paused = true)]`, where the limiter and tokio's timers agree to
//! the nanosecond.
//!
//! ```
//! use nanolimit::{Clock, Gcra, Limiter, ManualClock};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let limiter = Limiter::with_clock(Gcra::per_minute(1)?, clock.clone());
//! assert!(limiter.check().is_allowed());
//! let denied = limiter.check();
//! assert_eq!(denied.retry_after(), Duration::from_secs(60));
//! assert_eq!(denied.headers().retry_after_seconds, Some(60));
//!
//! clock.advance(Duration::from_secs(60));
//! assert!(limiter.check_at(clock.now()).is_allowed());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod human;
mod manual;
#[cfg(feature = "std")]
mod quanta;
mod timestamp;
#[cfg(feature = "tokio")]
mod tokio;
#[cfg(all(feature = "std", not(nanolimit_loom)))]
mod upkeep;

pub(crate) use human::HumanDuration;
pub use manual::ManualClock;
#[cfg(feature = "std")]
pub use quanta::QuantaClock;
pub use timestamp::{Timestamp, TimestampError};
#[cfg(feature = "tokio")]
pub use tokio::TokioClock;
#[cfg(all(feature = "std", not(nanolimit_loom)))]
pub use upkeep::UpkeepClock;

/// The clock a limiter reads unless given another: [`QuantaClock`] with `std`; without it,
/// [`ManualClock`], which the caller advances (or whose limiters are given their times).
#[cfg(feature = "std")]
pub(crate) type DefaultClock = QuantaClock;
/// The clock a limiter reads unless given another: [`QuantaClock`] with `std`; without it,
/// [`ManualClock`], which the caller advances (or whose limiters are given their times).
#[cfg(not(feature = "std"))]
pub(crate) type DefaultClock = ManualClock;

use crate::sync::Arc;

/// A monotonic source of [`Timestamp`]s since the clock's origin.
///
/// Implementations must be cheap and thread-safe; they need not be strictly monotonic across
/// threads (limiters tolerate backward steps without granting capacity). A clock built on a
/// counter of its own (a NIC's packet timestamps, say) subtracts the counter's value at its
/// origin and converts with [`Timestamp::saturating_from_ns`].
///
/// ```
/// use nanolimit::{Clock, ManualClock, Timestamp};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// clock.advance(Duration::from_millis(5));
/// assert_eq!(clock.now(), Timestamp::from_ns(5_000_000)?);
/// # Ok::<(), nanolimit::clock::TimestampError>(())
/// ```
pub trait Clock: Send + Sync {
    /// The time since this clock's origin.
    ///
    /// ```
    /// use nanolimit::{Clock, ManualClock, Timestamp};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// assert_eq!(clock.now(), Timestamp::ORIGIN);
    /// clock.advance(Duration::from_nanos(7));
    /// assert_eq!(clock.now().as_ns(), 7);
    /// ```
    fn now(&self) -> Timestamp;

    /// Blocks the calling thread until this clock reads `deadline` or later: what every blocking
    /// wait of a limiter on this clock calls.
    ///
    /// The default parks the thread for the remaining time (`std::thread::sleep`, which never
    /// wakes early and may wake late by the OS timer's slack, typically 50 µs on Linux), reads
    /// the clock again, and only spins (a busy loop of `spin_loop` hints) once less than
    /// [`SPIN_BELOW`] remains, so a wait costs no CPU until its last microsecond. A clock that
    /// moves otherwise than real time overrides it ([`ManualClock`] blocks until another thread
    /// moves it).
    ///
    /// ```
    /// use nanolimit::{Clock, QuantaClock};
    /// use std::time::Duration;
    ///
    /// let clock = QuantaClock::new();
    /// let deadline = clock.now().saturating_add(Duration::from_micros(200));
    /// clock.sleep_until(deadline);
    /// assert!(clock.now() >= deadline);
    /// ```
    fn sleep_until(&self, deadline: Timestamp) {
        loop {
            let now = self.now();
            if now >= deadline {
                return;
            }
            let remaining = deadline.saturating_duration_since(now);
            #[cfg(feature = "std")]
            if remaining >= SPIN_BELOW {
                std::thread::sleep(remaining);
                continue;
            }
            // Without `std` there is no thread to park: spin.
            let _ = remaining;
            core::hint::spin_loop();
        }
    }
}

/// The remaining wait below which [`Clock::sleep_until`]'s default spins rather than parks: a
/// thread parked for less would usually wake later than a spin ends.
pub const SPIN_BELOW: core::time::Duration = core::time::Duration::from_micros(1);

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now(&self) -> Timestamp {
        (**self).now()
    }

    fn sleep_until(&self, deadline: Timestamp) {
        (**self).sleep_until(deadline)
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn now(&self) -> Timestamp {
        (**self).now()
    }

    fn sleep_until(&self, deadline: Timestamp) {
        (**self).sleep_until(deadline)
    }
}

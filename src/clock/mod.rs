//! Clocks: where a limiter gets "now" from.
//!
//! A [`Clock`] returns a [`Timestamp`]: monotonic nanoseconds since the clock's origin.
//! Limiters only compare readings of the same clock, so the origin is arbitrary; it only has to
//! stay the same for the limiter's lifetime. (The README's "Time" section measures each clock.)
//!
//! | clock | cost per read | resolution | use it for |
//! |---|---|---|---|
//! | [`QuantaClock`] (the default; one origin per process) | one TSC read and a multiply | ~1 ns | everything, unless the read shows up in a profile |
//! | [`UpkeepClock`] | one relaxed atomic load | the upkeep interval (default 100 µs) | hot loops that tolerate admission decisions quantised to the interval |
//! | [`ManualClock`] | one relaxed atomic load | whatever you set | tests and simulations |
//!
//! Every limiter also has a `check_at(now)` form: a packet loop that already holds a timestamp
//! from the same clock passes it in and pays for no read at all.
//!
//! Clocks may step backwards (the TSC can, across cores), and a reading taken before a
//! preemption arrives late. Limiters judge such a reading at the latest time their state has
//! seen: never a panic, never an overflow, never an extra admission (the one bound, for window
//! quotas, is stated in [the quota module](crate::quota#readings-behind-the-state)).

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
/// # Ok::<(), nanolimit::TimestampError>(())
/// ```
pub trait Clock: Send + Sync {
    /// The time since this clock's origin.
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

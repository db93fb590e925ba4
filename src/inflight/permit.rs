//! The permit: units in flight until it is dropped.

use super::InFlightLimiter;
use core::mem::ManuallyDrop;

/// Units held from an [`InFlightLimiter`]; dropping the permit releases them (to the first
/// waiter, if any waits).
///
/// ```
/// use nanolimit::inflight::InFlightLimiter;
///
/// let limiter = InFlightLimiter::new(3)?;
/// {
///     let permit = limiter.try_acquire_many(2)?;
///     assert_eq!((permit.units(), limiter.in_flight()), (2, 2));
/// } // released here
/// assert_eq!(limiter.in_flight(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "a permit releases its units when dropped: hold it for as long as the work runs"]
pub struct Permit<'limiter> {
    limiter: &'limiter InFlightLimiter,
    units: u64,
}

impl<'limiter> Permit<'limiter> {
    /// A permit for `units` already taken from `limiter`.
    pub(crate) fn new(limiter: &'limiter InFlightLimiter, units: u64) -> Self {
        Permit { limiter, units }
    }

    /// The units this permit holds.
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The limiter the units came from.
    pub fn limiter(&self) -> &'limiter InFlightLimiter {
        self.limiter
    }

    /// Never releases the units: the limit shrinks by as many, for good (as tokio's
    /// `SemaphorePermit::forget`). [`add_permits`](InFlightLimiter::add_permits) raises it
    /// again. A waiter queued for more than the shrunk limit waits until it is raised.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(4)?;
    /// limiter.try_acquire()?.forget();
    /// assert_eq!((limiter.limit(), limiter.in_flight(), limiter.available()), (3, 0, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn forget(self) {
        let permit = ManuallyDrop::new(self);
        permit.limiter.forget_units(permit.units);
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.limiter.release(self.units);
    }
}

//! Async acquires (feature `tokio`): a future that queues like a blocking acquire and is woken
//! through its task's waker. It uses only `std::task`, so it runs on any executor; the feature
//! only groups it with the crate's other async waits. The methods return it as an
//! `impl Future`: its type is no part of the public interface.

use super::queue::{self, Entered, Wake};
use super::{AcquireError, InFlightLimiter, Permit};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

impl InFlightLimiter {
    /// Awaits one unit, served in queue order with blocking acquires (see the
    /// [module](super) documentation).
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = InFlightLimiter::new(2)?;
    /// let permit = limiter.acquire_async().await;
    /// assert_eq!(limiter.in_flight(), 1);
    /// drop(permit);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Cancellation
    ///
    /// Cancellation-safe: the future dropped while queued leaves the queue (letting the next
    /// waiter in if it was the head); dropped after being served but before being polled again,
    /// it releases the units taken for it (to the next waiter first).
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Waker};
    ///
    /// let limiter = InFlightLimiter::new(1)?;
    /// let held = limiter.try_acquire()?;
    /// {
    ///     let mut waiting = pin!(limiter.acquire_async());
    ///     let mut context = Context::from_waker(Waker::noop());
    ///     assert!(waiting.as_mut().poll(&mut context).is_pending());
    ///     assert_eq!(limiter.waiters(), 1);
    /// } // dropped: it leaves the queue
    /// assert_eq!(limiter.waiters(), 0);
    /// drop(held);
    /// assert_eq!(limiter.available(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Panics
    ///
    /// The future panics if polled again after it returned its permit, as futures may (the
    /// `Future` contract leaves that unspecified; `.await` never does it).
    pub fn acquire_async(&self) -> impl Future<Output = Permit<'_>> {
        Acquire::new(self, 1)
    }

    /// Awaits `units` at once, served in queue order; an error at once for more units than the
    /// limit ([`AcquireError::AboveLimit`], the only error it returns). Cancellation-safe, and
    /// panics if polled after completing, as [`acquire_async`](Self::acquire_async).
    ///
    /// ```
    /// use nanolimit::inflight::{AcquireError, InFlightLimiter};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = InFlightLimiter::new(4)?;
    /// let permit = limiter.acquire_many_async(3)?.await;
    /// assert_eq!(permit.units(), 3);
    /// assert_eq!(
    ///     limiter.acquire_many_async(5).err(),
    ///     Some(AcquireError::AboveLimit { units: 5, limit: 4 })
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn acquire_many_async(
        &self,
        units: u64,
    ) -> Result<impl Future<Output = Permit<'_>>, AcquireError> {
        self.check_fits(units)?;
        Ok(Acquire::new(self, units))
    }
}

/// Where an [`Acquire`] is.
#[derive(Debug)]
enum Progress {
    /// Not polled yet.
    Start,
    /// Queued under this number.
    Queued(u64),
    /// Its permit was returned.
    Done,
}

/// The future of [`InFlightLimiter::acquire_async`] and
/// [`acquire_many_async`](InFlightLimiter::acquire_many_async): a [`Permit`] once served.
///
/// Cancellation-safe (see `acquire_async`): its `Drop` leaves the queue, or releases the units
/// taken for it if it was served but never returned its permit.
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
struct Acquire<'limiter> {
    limiter: &'limiter InFlightLimiter,
    units: u64,
    progress: Progress,
}

impl<'limiter> Acquire<'limiter> {
    fn new(limiter: &'limiter InFlightLimiter, units: u64) -> Self {
        Acquire {
            limiter,
            units,
            progress: Progress::Start,
        }
    }
}

impl<'limiter> Future for Acquire<'limiter> {
    type Output = Permit<'limiter>;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Permit<'limiter>> {
        // `Acquire` holds no self-references: it is `Unpin`, and its fields are plain.
        let this = &mut *self;
        let limiter = this.limiter;
        match this.progress {
            Progress::Start => {
                if limiter.try_take(this.units).is_ok() {
                    this.progress = Progress::Done;
                    return Poll::Ready(Permit::new(limiter, this.units));
                }
                let entered = queue::lock(&limiter.queue).take_or_enqueue(
                    &limiter.state,
                    this.units,
                    Wake::Task(context.waker().clone()),
                );
                match entered {
                    Entered::Taken => {
                        this.progress = Progress::Done;
                        Poll::Ready(Permit::new(limiter, this.units))
                    }
                    Entered::Queued(number) => {
                        this.progress = Progress::Queued(number);
                        Poll::Pending
                    }
                }
            }
            Progress::Queued(number) => {
                let mut queue = queue::lock(&limiter.queue);
                if queue.is_served(number) {
                    drop(queue);
                    this.progress = Progress::Done;
                    return Poll::Ready(Permit::new(limiter, this.units));
                }
                queue.update_waker(number, context.waker());
                Poll::Pending
            }
            Progress::Done => panic!("`Acquire` polled after it returned its permit"),
        }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        if let Progress::Queued(number) = self.progress {
            let (was_served, served) =
                queue::lock(&self.limiter.queue).leave(&self.limiter.state, number);
            served.wake_all();
            if was_served {
                // Served, but never returned its permit: the units it took go back (to the next
                // waiter first).
                self.limiter.release(self.units);
            }
        }
    }
}

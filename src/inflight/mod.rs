//! The in-flight (concurrency) limiter: at most N units of work in progress at once, released
//! when the work ends ([`InFlightLimiter`]), or at most N per key ([`KeyedInFlightLimiter`]).
//!
//! A rate limit does not protect a slow backend: requests pile up inside it however evenly they
//! arrive. A concurrency limit does, as .NET's `ConcurrencyLimiter` and tokio's `Semaphore` do.
//!
//! | operation | returns |
//! |---|---|
//! | [`try_acquire`](InFlightLimiter::try_acquire) / [`try_acquire_many(units)`](InFlightLimiter::try_acquire_many) | a [`Permit`] now, or an [`AcquireError`]: [`Busy`](AcquireError::Busy) (and, for many, [`AboveLimit`](AcquireError::AboveLimit)) |
//! | [`acquire`](InFlightLimiter::acquire) / [`acquire_many(units)`](InFlightLimiter::acquire_many) | a [`Permit`], blocking the thread until it is served (for many, [`AboveLimit`](AcquireError::AboveLimit) at once if it never could be) |
//! | `acquire_async` / `acquire_many_async(units)` (feature `tokio`) | a future of a [`Permit`]; dropping it cancels the wait |
//! | [`Permit::forget`] / [`add_permits(units)`](InFlightLimiter::add_permits) | shrink / raise the limit |
//!
//! Four public types in all: the two limiters, one [`Permit`] for both (generic over the limiter
//! it releases to: `Permit<'_>` from the direct one, `Permit<'_, KeyedInFlightLimiter<K, M>>`
//! from the keyed one), and one [`AcquireError`] for both. A limit that cannot be kept, at
//! construction or raised by [`add_permits`](InFlightLimiter::add_permits), is the crate's
//! [`BuildError`].
//!
//! # The fast path
//!
//! State is one atomic word (see the table below). With nobody waiting, `try_acquire` is one
//! load and one compare-and-swap, and a release (a [`Permit`] dropped) one `fetch_add`: no lock.
//! The lock of the waiter queue is taken only when a request must wait, or when units free while
//! the word's `QUEUED` flag says somebody waits.
//!
//! # Fairness: first come, first served
//!
//! Waiters are served strictly in the order they queued, and a waiter is served all its units
//! at once: units that free go to the head of the queue until it is whole, and while anyone
//! waits, no acquire (`try_acquire` included) takes units past the queue, even units the head
//! does not need yet. So a large request at the head is never starved by later small ones; the
//! price is that small requests behind it wait too (a `try_acquire` then answers
//! [`Busy`](AcquireError::Busy) with `queued` set: [`is_queued`](AcquireError::is_queued)).
//! Units are not assigned to a waiter in part: while the head waits for more, the units it will
//! get stay available in the word, kept for it, so a cancelled wait has nothing to give back
//! unless it was served whole, and then gives back everything.
//!
//! # No retry-after
//!
//! A rate limit knows when it will admit again; a concurrency limit frees when work ends, which
//! no clock predicts, so [`Busy`](AcquireError::Busy) reports the limit, the units in flight
//! and what was requested, and nothing about time. An HTTP server refusing for it should answer
//! `503 Service Unavailable` (the service is saturated, not the client over its quota) without
//! a computed `Retry-After`, or wait for a permit instead.
//!
//! # State word
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0..31 | `available` | units no permit holds: what acquires may take |
//! | 31 | `QUEUED` | set while the waiter queue is not empty: available units belong to the queue first |
//! | 32..63 | `limit` | units held plus units available ([`Permit::forget`] lowers it, [`add_permits`](InFlightLimiter::add_permits) raises it) |
//! | 63 | (zero) | never set: the limit is at most [`MAX_IN_FLIGHT`] (2^31 − 1) |
//!
//! In flight is `limit − available`. Only a holder of the queue lock sets or clears `QUEUED`, and
//! it keeps the flag equal to "the queue holds a waiter". A release adds its units with one
//! `fetch_add` and learns from the same read-modify-write whether the flag was set; a request
//! that queues sets the flag with a compare-and-swap: the two are ordered on the word, so either
//! the request sees the released units or the release sees the flag and serves the queue. No
//! wakeup is lost.
//!
//! ```
//! use nanolimit::inflight::{AcquireError, InFlightLimiter};
//!
//! let limiter = InFlightLimiter::new(2)?;
//! let first = limiter.try_acquire()?;
//! let second = limiter.try_acquire()?;
//! assert_eq!(
//!     limiter.try_acquire().unwrap_err(),
//!     AcquireError::Busy { limit: 2, in_flight: 2, requested: 1, queued: false }
//! );
//! drop(first);
//! assert_eq!(limiter.available(), 1);
//! drop(second);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Per key: [`KeyedInFlightLimiter`]
//!
//! At most N units in flight per key (per client, per upstream), on the keyed rate limiters'
//! bounded table: `try_acquire(&key)` / `try_acquire_many(&key, units)` return a [`Permit`]
//! that releases on drop, or an [`AcquireError`] ([`Busy`](AcquireError::Busy) with the key's
//! figures, [`AboveLimit`](AcquireError::AboveLimit), or
//! [`TableFull`](AcquireError::TableFull), keyed only). Lock-free for a key the table holds: one
//! compare-and-swap to acquire, one lookup and one compare-and-swap to release. An entry with
//! nothing in flight is fresh, and its slot may be reused for another key; an entry with units
//! in flight never is, so a permit can never release into a slot reclaimed for another key
//! (`src/inflight/keyed.rs` gives the argument; the loom models check it). Not keyed: blocking
//! and async waits, `forget` and `add_permits` (the limit is one for all keys, fixed at build),
//! and eviction ([`WhenFull::EvictClosestToFresh`](crate::WhenFull::EvictClosestToFresh) is a
//! build error). Limits up to [`MAX_KEYED_IN_FLIGHT`] (2^24 − 3).
//!
//! ```
//! use nanolimit::inflight::KeyedInFlightLimiter;
//!
//! let per_client = KeyedInFlightLimiter::<str>::new(2, 10_000)?;
//! let _a = per_client.try_acquire("alice")?;
//! let _b = per_client.try_acquire("alice")?;
//! assert!(per_client.try_acquire("alice").is_err()); // alice has 2 in flight
//! assert!(per_client.try_acquire("bob").is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
#[cfg(feature = "tokio")]
mod future;
mod keyed;
mod permit;
mod queue;
mod word;

pub use error::AcquireError;
pub use keyed::{KeyedInFlightLimiter, MAX_KEYED_IN_FLIGHT};
pub use permit::Permit;
pub use word::MAX_IN_FLIGHT;

use crate::engine::driver;
use crate::engine::error::BuildError;
use crate::quota::Step;
use crate::sync::{self, AtomicU64, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use queue::{Entered, Queue, Wake};

/// At most a limit of units in flight at once: a permit holds units until it is dropped.
///
/// Lock-free when nobody waits (one compare-and-swap to acquire, one `fetch_add` to release);
/// waiters queue behind a lock, first come first served (see the [module](self) documentation
/// for the rule, the state word, and why a refusal carries no retry-after). Share it between
/// threads by reference or in an [`Arc`](std::sync::Arc).
///
/// ```
/// use nanolimit::inflight::InFlightLimiter;
/// use std::sync::Arc;
///
/// // At most 8 requests to the backend at once, from every worker.
/// let backend = Arc::new(InFlightLimiter::new(8)?);
/// let workers: Vec<_> = (0..4)
///     .map(|_| {
///         let backend = Arc::clone(&backend);
///         std::thread::spawn(move || {
///             let _permit = backend.acquire(); // waits while 8 are in flight
///             // call the backend
///         })
///     })
///     .collect();
/// for worker in workers {
///     worker.join().unwrap();
/// }
/// assert_eq!(backend.in_flight(), 0);
/// # Ok::<(), nanolimit::BuildError>(())
/// ```
#[derive(Debug)]
pub struct InFlightLimiter {
    /// The state word (see the module's table).
    state: CachePadded<AtomicU64>,
    /// The waiters, in arrival order: touched only on the slow path.
    queue: Mutex<Queue>,
}

impl InFlightLimiter {
    /// A limiter of `max_in_flight` units, none in flight. An error for 0
    /// ([`BuildError::ZeroLimit`]) or above [`MAX_IN_FLIGHT`] ([`BuildError::LimitTooLarge`]).
    ///
    /// ```
    /// use nanolimit::inflight::{InFlightLimiter, MAX_IN_FLIGHT};
    /// use nanolimit::BuildError;
    ///
    /// let limiter = InFlightLimiter::new(10)?;
    /// assert_eq!((limiter.limit(), limiter.in_flight(), limiter.available()), (10, 0, 10));
    /// assert_eq!(InFlightLimiter::new(0).unwrap_err(), BuildError::ZeroLimit);
    /// assert_eq!(
    ///     InFlightLimiter::new(MAX_IN_FLIGHT + 1).unwrap_err(),
    ///     BuildError::LimitTooLarge { limit: MAX_IN_FLIGHT + 1, max: MAX_IN_FLIGHT }
    /// );
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn new(max_in_flight: u64) -> Result<Self, BuildError> {
        if max_in_flight == 0 {
            return Err(BuildError::ZeroLimit);
        }
        if max_in_flight > MAX_IN_FLIGHT {
            return Err(BuildError::LimitTooLarge {
                limit: max_in_flight,
                max: MAX_IN_FLIGHT,
            });
        }
        Ok(InFlightLimiter {
            state: CachePadded::new(AtomicU64::new(word::fresh(max_in_flight))),
            queue: Mutex::new(Queue::default()),
        })
    }

    /// Takes one unit if it is free now and nobody waits: a permit, or
    /// [`Busy`](AcquireError::Busy) (never [`AboveLimit`](AcquireError::AboveLimit): one unit
    /// fits any limit but one forgotten down to 0, which is busy).
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(1)?;
    /// let permit = limiter.try_acquire()?;
    /// assert!(limiter.try_acquire().is_err());
    /// drop(permit);
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit<'_>, AcquireError> {
        self.try_take(1).map(|()| Permit::new(self, 1))
    }

    /// Takes `units` at once if they are free now and nobody waits: all or nothing. A request
    /// above the limit is [`AcquireError::AboveLimit`] (it could never pass); 0 units is an
    /// empty permit.
    ///
    /// ```
    /// use nanolimit::inflight::{AcquireError, InFlightLimiter};
    ///
    /// let limiter = InFlightLimiter::new(5)?;
    /// let three = limiter.try_acquire_many(3)?;
    /// let busy = limiter.try_acquire_many(3).unwrap_err();
    /// assert_eq!(
    ///     busy,
    ///     AcquireError::Busy { limit: 5, in_flight: 3, requested: 3, queued: false }
    /// );
    /// assert_eq!(busy.remaining(), Some(2));
    /// assert_eq!(three.units(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_many(&self, units: u64) -> Result<Permit<'_>, AcquireError> {
        self.check_fits(units)?;
        self.try_take(units)?;
        Ok(Permit::new(self, units))
    }

    /// Takes one unit, blocking the thread until it is served (in queue order; see the
    /// [module](self) documentation).
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    /// use std::thread;
    ///
    /// let limiter = InFlightLimiter::new(1)?;
    /// let held = limiter.acquire();
    /// thread::scope(|scope| {
    ///     let waiter = scope.spawn(|| limiter.acquire().units());
    ///     while limiter.waiters() == 0 {
    ///         thread::yield_now(); // until the waiter has queued
    ///     }
    ///     drop(held); // hands the unit to the waiter
    ///     assert_eq!(waiter.join().unwrap(), 1);
    /// });
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn acquire(&self) -> Permit<'_> {
        // One unit is never refused: even a limit lowered to 0 by forgotten permits may be
        // raised again by `add_permits`, which serves this wait.
        self.wait_for(1)
    }

    /// Takes `units` at once, blocking the thread until they are served (in queue order; see the
    /// [module](self) documentation). An error, at once, for more units than the limit
    /// ([`AcquireError::AboveLimit`], the only error it returns); 0 units is an empty permit.
    ///
    /// ```
    /// use nanolimit::inflight::{AcquireError, InFlightLimiter};
    ///
    /// let limiter = InFlightLimiter::new(4)?;
    /// assert_eq!(limiter.acquire_many(3).unwrap().units(), 3);
    /// assert_eq!(
    ///     limiter.acquire_many(5).unwrap_err(),
    ///     AcquireError::AboveLimit { units: 5, limit: 4 }
    /// );
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn acquire_many(&self, units: u64) -> Result<Permit<'_>, AcquireError> {
        self.check_fits(units)?;
        Ok(self.wait_for(units))
    }

    /// Raises the limit by `units`, which go to waiters first. An error if the limit would
    /// exceed [`MAX_IN_FLIGHT`] (the limit is then unchanged): the construction error for the
    /// same limit, [`BuildError::LimitTooLarge`], with the limit asked for saturated at
    /// `u64::MAX`. It is no [`AcquireError`]: nothing was acquired, and the limiter is as it
    /// was, as a limiter that was never built.
    ///
    /// ```
    /// use nanolimit::inflight::{InFlightLimiter, MAX_IN_FLIGHT};
    /// use nanolimit::BuildError;
    ///
    /// let limiter = InFlightLimiter::new(2)?;
    /// limiter.add_permits(3)?;
    /// assert_eq!((limiter.limit(), limiter.available()), (5, 5));
    /// assert_eq!(
    ///     limiter.add_permits(MAX_IN_FLIGHT),
    ///     Err(BuildError::LimitTooLarge { limit: MAX_IN_FLIGHT + 5, max: MAX_IN_FLIGHT })
    /// );
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn add_permits(&self, units: u64) -> Result<(), BuildError> {
        // Both fields fit when the new limit does: each is at most the new limit.
        let raise = |word: u64| match word::limit(word).saturating_add(units) {
            limit if limit > MAX_IN_FLIGHT => Step::Deny,
            _ => Step::Allow(word + word::limit_units(units) + units),
        };
        // ORDERING: Relaxed: a first guess, which the driver's compare-and-swap checks. Its
        // success ordering (AcqRel) includes the Release that pairs with the Acquire of whoever
        // takes these units, as a release's does (nothing is published with them, but it keeps
        // the rule uniform).
        let observed = self.state.load(Ordering::Relaxed);
        match driver::apply_unguarded(&self.state, observed, raise) {
            Ok(current) => {
                // The flag, unchanged by the raise (no field carries into it), is read from the
                // same read-modify-write, as in `release`.
                if word::is_queued(current) {
                    self.serve_queue();
                }
                Ok(())
            }
            Err(observed) => Err(BuildError::LimitTooLarge {
                limit: word::limit(observed).saturating_add(units),
                max: MAX_IN_FLIGHT,
            }),
        }
    }

    /// The limit: units in flight plus units available.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(4)?;
    /// let _held = limiter.try_acquire()?;
    /// assert_eq!(limiter.limit(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limit(&self) -> u64 {
        word::limit(self.load())
    }

    /// Units held by permits now.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(4)?;
    /// let _held = limiter.try_acquire_many(3)?;
    /// assert_eq!(limiter.in_flight(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight(&self) -> u64 {
        word::in_flight(self.load())
    }

    /// Units no permit holds now (kept for the waiters while any wait).
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(4)?;
    /// let _held = limiter.try_acquire_many(3)?;
    /// assert_eq!(limiter.available(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn available(&self) -> u64 {
        word::available(self.load())
    }

    /// Requests waiting in the queue now. Takes the queue's lock: for tests and monitoring, not
    /// for hot paths.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// assert_eq!(InFlightLimiter::new(1)?.waiters(), 0);
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn waiters(&self) -> usize {
        queue::lock(&self.queue).len()
    }

    /// The word, for the accessors.
    fn load(&self) -> u64 {
        // ORDERING: Relaxed: a snapshot for reporting; it orders nothing.
        self.state.load(Ordering::Relaxed)
    }

    /// An error for a request above the limit (read now).
    #[inline]
    fn check_fits(&self, units: u64) -> Result<(), AcquireError> {
        let limit = self.limit();
        if units > limit {
            return Err(AcquireError::AboveLimit { units, limit });
        }
        Ok(())
    }

    /// The fast path: takes `units` if they are available and nobody waits.
    #[inline]
    fn try_take(&self, units: u64) -> Result<(), AcquireError> {
        let take = |word: u64| match word::is_queued(word) || word::available(word) < units {
            true => Step::Deny,
            false => Step::Allow(word - units),
        };
        // ORDERING: Relaxed: a first guess, which the driver's compare-and-swap checks; its
        // success ordering (AcqRel) includes the Acquire that pairs with the Release of the
        // release that freed these units: the previous holder's work happens before ours.
        let observed = self.state.load(Ordering::Relaxed);
        match driver::apply_unguarded(&self.state, observed, take) {
            Ok(_) => Ok(()),
            Err(observed) => Err(AcquireError::Busy {
                limit: word::limit(observed),
                in_flight: word::in_flight(observed),
                requested: units,
                queued: word::is_queued(observed),
            }),
        }
    }

    /// Blocks until `units` are taken for this thread.
    fn wait_for(&self, units: u64) -> Permit<'_> {
        if self.try_take(units).is_ok() {
            return Permit::new(self, units);
        }
        self.wait_in_queue(units)
    }

    /// The blocking slow path: queue, then park until served.
    #[cold]
    fn wait_in_queue(&self, units: u64) -> Permit<'_> {
        let mut queue = queue::lock(&self.queue);
        let number =
            match queue.take_or_enqueue(&self.state, units, Wake::Thread(sync::current_thread())) {
                Entered::Taken => return Permit::new(self, units),
                Entered::Queued(number) => number,
            };
        while !queue.is_served(number) {
            drop(queue);
            // Served waiters are unparked after being taken out of the queue; a park that
            // returns early (spuriously, or for an unpark meant for an earlier wait) only
            // looks again.
            sync::park();
            queue = queue::lock(&self.queue);
        }
        Permit::new(self, units)
    }

    /// Gives `units` back (a permit dropped): one `fetch_add`; the queue's lock only if
    /// somebody waits.
    #[inline]
    pub(crate) fn release(&self, units: u64) {
        if units == 0 {
            return;
        }
        // ORDERING: Release pairs with the Acquire of whoever takes these units next (the fast
        // path's or the queue's compare-and-swap): our work under the permit happens before
        // theirs. A read-modify-write, so it reads the latest flag: a request that queued
        // before it is seen here, one that queues after it sees these units.
        let previous = self.state.fetch_add(units, Ordering::Release);
        if word::is_queued(previous) {
            self.serve_queue();
        }
    }

    /// Lowers the limit by `units` a permit held (it is forgotten): one `fetch_sub`.
    pub(crate) fn forget_units(&self, units: u64) {
        // ORDERING: Relaxed: no units become available, so nothing pairs with it. The field
        // cannot go below 0: the units were counted in it while held.
        self.state
            .fetch_sub(word::limit_units(units), Ordering::Relaxed);
    }

    /// Serves waiters with the units now available.
    #[cold]
    fn serve_queue(&self) {
        let served = queue::lock(&self.queue).serve(&self.state);
        served.wake_all();
    }
}

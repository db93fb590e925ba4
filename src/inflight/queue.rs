//! The waiter queue: the slow path, behind a lock, taken only when a request must wait or when
//! units free while somebody waits.
//!
//! Waiters are served strictly in arrival order: units that free go to the head until it is
//! whole, and while anyone waits (`QUEUED` in the word) no acquire takes units past the queue.
//! A waiter is served by taking its units from the word for it (the units are then in flight,
//! held by the waiter) and removing it from the queue: so a waiter whose number is older than
//! the queue's head, or who finds the queue empty, has been served. Units are never assigned to
//! a waiter in part: while the head waits for more, the units it will get stay `available` in
//! the word, kept for it by the flag; a cancelled head leaves them there for the next.

use super::word::{self, QUEUED};
use crate::sync::{AtomicU64, MutexGuard, Ordering, Thread};
use std::collections::VecDeque;

/// How to tell a waiter it was served.
#[derive(Debug)]
pub(crate) enum Wake {
    /// A blocked thread, to unpark.
    Thread(Thread),
    /// A pending future's task.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    Task(std::task::Waker),
}

impl Wake {
    fn wake(self) {
        match self {
            Wake::Thread(thread) => thread.unpark(),
            Wake::Task(waker) => waker.wake(),
        }
    }
}

/// One queued request.
#[derive(Debug)]
struct Waiter {
    /// Its number: numbers grow in arrival order, so the queue is sorted by them.
    number: u64,
    /// The units it waits for, all at once.
    units: u64,
    /// Whom to wake when it is served.
    wake: Wake,
}

/// The queue (what the limiter's lock guards).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    waiters: VecDeque<Waiter>,
    /// The number the next waiter gets.
    next_number: u64,
}

/// What [`Queue::take_or_enqueue`] did.
pub(crate) enum Entered {
    /// The units were free and nobody waited: they are taken.
    Taken,
    /// The request waits under this number.
    Queued(u64),
}

/// Waiters to wake once the lock is released (waking runs a task's waker, which may do
/// anything, so never under the lock).
#[must_use = "wake the served waiters"]
pub(crate) struct Served(Vec<Wake>);

impl Served {
    pub(crate) fn wake_all(self) {
        for wake in self.0 {
            wake.wake();
        }
    }
}

impl Queue {
    /// Takes `units` from `state` if they are free and nobody waits; otherwise queues the
    /// request behind every earlier one. Called with the lock held.
    pub(crate) fn take_or_enqueue(&mut self, state: &AtomicU64, units: u64, wake: Wake) -> Entered {
        // ORDERING: Relaxed: a first guess, which the compare-and-swap below checks.
        let mut current = state.load(Ordering::Relaxed);
        loop {
            let (next, entered) = if !word::is_queued(current) && word::available(current) >= units
            {
                (current - units, true)
            } else {
                (current | QUEUED, false)
            };
            // ORDERING: Acquire on success pairs with the Release of the releases that freed
            // the units taken (the holder's work happens before ours). Setting the flag needs no
            // ordering of its own, but it must be a read-modify-write: a release's fetch_add
            // either comes before it (and this loop sees the units, possibly enough to take) or
            // after it (and sees the flag, and serves the queue), so no release is missed.
            match state.compare_exchange_weak(current, next, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) if entered => return Entered::Taken,
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        let number = self.next_number;
        self.next_number += 1;
        self.waiters.push_back(Waiter {
            number,
            units,
            wake,
        });
        Entered::Queued(number)
    }

    /// Whether waiter `number` has been served: it is no longer queued, and since waiters are
    /// only served from the head, every waiter still queued is younger.
    pub(crate) fn is_served(&self, number: u64) -> bool {
        self.waiters.front().is_none_or(|head| head.number > number)
    }

    /// Replaces the waker of waiter `number` (still queued) if it would wake another task.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn update_waker(&mut self, number: u64, waker: &std::task::Waker) {
        if let Ok(index) = self.position(number) {
            if let Wake::Task(stored) = &mut self.waiters[index].wake {
                if !stored.will_wake(waker) {
                    stored.clone_from(waker);
                }
            }
        }
    }

    /// Takes waiter `number` out of the queue (a cancelled wait). If it was served already, its
    /// units are in flight: the caller gives them back. Returns whether it had been served.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn leave(&mut self, state: &AtomicU64, number: u64) -> (bool, Served) {
        match self.position(number) {
            Ok(index) => {
                self.waiters.remove(index);
                // The head's leaving may let the next one in with the units kept for it.
                let served = if index == 0 {
                    self.serve(state)
                } else {
                    Served(Vec::new())
                };
                (false, served)
            }
            Err(_) => (true, Served(Vec::new())),
        }
    }

    /// Where waiter `number` is, by binary search (the queue is sorted by number).
    fn position(&self, number: u64) -> Result<usize, usize> {
        self.waiters
            .binary_search_by_key(&number, |waiter| waiter.number)
    }

    /// Serves waiters from the head while the available units cover them, and clears the flag
    /// once the queue is empty. Called with the lock held, after units became available while
    /// the flag was set, or after the head left.
    pub(crate) fn serve(&mut self, state: &AtomicU64) -> Served {
        let mut served = Vec::new();
        // ORDERING: Relaxed: a first guess, which the compare-and-swap below checks.
        let mut current = state.load(Ordering::Relaxed);
        while let Some(head) = self.waiters.front() {
            if word::available(current) < head.units {
                return Served(served);
            }
            // ORDERING: Acquire on success pairs with the Release of the releases that freed
            // these units; the waiter then reads them through this lock (its unlock here, its
            // lock when it looks whether it was served), so the holders' work happens before
            // the waiter's.
            match state.compare_exchange_weak(
                current,
                current - head.units,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    current -= head.units;
                    if let Some(waiter) = self.waiters.pop_front() {
                        served.push(waiter.wake);
                    }
                }
                Err(actual) => current = actual,
            }
        }
        // ORDERING: Relaxed: the flag orders nothing by itself (only lock holders write it, and
        // the lock orders them); a read-modify-write, so a concurrent release's fetch_add is
        // kept and either saw the flag (and will serve an empty queue: nothing) or did not.
        state.fetch_and(!QUEUED, Ordering::Relaxed);
        Served(served)
    }

    /// Waiters queued.
    pub(crate) fn len(&self) -> usize {
        self.waiters.len()
    }
}

/// A locked queue, with poisoning ignored: nothing under the lock panics while the queue is
/// half-changed (wakers run after the lock is released).
pub(crate) fn lock(queue: &crate::sync::Mutex<Queue>) -> MutexGuard<'_, Queue> {
    queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

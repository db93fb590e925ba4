//! A clock that moves only when told to.

use super::{Clock, Timestamp};
use crate::sync::{Arc, AtomicU64, Ordering};
#[cfg(all(feature = "std", not(nanolimit_loom)))]
use crate::sync::{Condvar, Mutex};
use core::time::Duration;
#[cfg(all(feature = "std", not(nanolimit_loom)))]
use std::collections::BTreeMap;

/// A clock that only moves when told to: for tests and simulations.
///
/// Clones share the same time, so a test can hand one clone to a limiter and keep another to
/// advance it, from any thread. A thread that waits on it ([`Clock::sleep_until`], and so every
/// blocking wait of a limiter on this clock) blocks until another thread moves the time past
/// its deadline: no real time passes, and a test knows who is waiting for what
/// ([`sleepers`](Self::sleepers), [`next_wake`](Self::next_wake)).
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = Limiter::with_clock(Gcra::per_second(1)?, clock.clone());
/// assert!(limiter.check().is_allowed());
/// assert!(limiter.check().is_denied());
/// clock.advance(Duration::from_secs(1));
/// assert!(limiter.check().is_allowed());
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    now_ns: AtomicU64,
    /// How many threads wait in `sleep_until`: lets the clock's movers skip the lock when none.
    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    sleeping: AtomicU64,
    /// The deadlines of the waiting threads (deadline in ns → number of threads).
    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    deadlines: Mutex<BTreeMap<u64, usize>>,
    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    moved: Condvar,
}

impl ManualClock {
    /// A clock reading [`Timestamp::ORIGIN`].
    pub fn new() -> Self {
        Self::starting_at(Timestamp::ORIGIN)
    }

    /// A clock reading `now`.
    pub fn starting_at(now: Timestamp) -> Self {
        ManualClock {
            inner: Arc::new(Shared {
                now_ns: AtomicU64::new(now.as_ns()),
                #[cfg(all(feature = "std", not(nanolimit_loom)))]
                sleeping: AtomicU64::new(0),
                #[cfg(all(feature = "std", not(nanolimit_loom)))]
                deadlines: Mutex::new(BTreeMap::new()),
                #[cfg(all(feature = "std", not(nanolimit_loom)))]
                moved: Condvar::new(),
            }),
        }
    }

    /// Sets the reading to `now` (earlier readings are allowed: clocks can step back), and wakes
    /// the threads whose deadline it reaches.
    pub fn set(&self, now: Timestamp) {
        // ORDERING: SeqCst, with the SeqCst load of `sleeping` in `wake_sleepers`: pairs with a
        // sleeper's SeqCst increment of `sleeping` and SeqCst load of the time. Either this
        // thread sees the sleeper and wakes it, or the sleeper sees this reading.
        self.inner.now_ns.store(now.as_ns(), Ordering::SeqCst);
        self.wake_sleepers();
    }

    /// Moves the clock forward by `by`, at most to [`Timestamp::HORIZON`], and wakes the threads
    /// whose deadline it reaches.
    pub fn advance(&self, by: Duration) {
        let mut current = self.now();
        loop {
            let next = current.saturating_add(by);
            // ORDERING: SeqCst on success, as in `set`; Relaxed on failure: only the value
            // matters, and the loop retries on interference from another thread advancing the
            // same clock.
            match self.inner.now_ns.compare_exchange_weak(
                current.as_ns(),
                next.as_ns(),
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(actual) => current = Timestamp::saturating_from_ns(actual),
            }
        }
        self.wake_sleepers();
    }

    /// How many threads are blocked waiting for this clock to reach their deadline.
    ///
    /// ```
    /// use nanolimit::{Clock, ManualClock, Timestamp};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let deadline = Timestamp::from_ns(500)?;
    /// let sleeper = {
    ///     let clock = clock.clone();
    ///     std::thread::spawn(move || clock.sleep_until(deadline))
    /// };
    /// while clock.sleepers() == 0 {
    ///     std::thread::yield_now();
    /// }
    /// assert_eq!(clock.next_wake(), Some(deadline));
    /// clock.advance(Duration::from_nanos(500));
    /// sleeper.join().unwrap();
    /// assert_eq!(clock.sleepers(), 0);
    /// # Ok::<(), nanolimit::clock::TimestampError>(())
    /// ```
    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    pub fn sleepers(&self) -> usize {
        self.deadlines().values().sum()
    }

    /// The earliest deadline a blocked thread waits for, if any: a simulation advances the
    /// clock to it.
    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    pub fn next_wake(&self) -> Option<Timestamp> {
        let first = self.deadlines().keys().next().copied()?;
        Some(Timestamp::saturating_from_ns(first))
    }

    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    fn deadlines(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, usize>> {
        // A sleeper that panicked while holding the lock leaves the map consistent (every
        // update is one call), so a poisoned lock is still usable.
        self.inner
            .deadlines
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    fn wake_sleepers(&self) {
        // ORDERING: SeqCst, see `set`.
        if self.inner.sleeping.load(Ordering::SeqCst) > 0 {
            // Taken so that no sleeper is between its check of the time and its wait.
            let _deadlines = self.deadlines();
            self.inner.moved.notify_all();
        }
    }

    #[cfg(any(not(feature = "std"), nanolimit_loom))]
    fn wake_sleepers(&self) {}
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> Timestamp {
        // ORDERING: Relaxed; pairs with the stores above, only the value matters.
        Timestamp::saturating_from_ns(self.inner.now_ns.load(Ordering::Relaxed))
    }

    /// Blocks until another thread moves this clock to `deadline` or past it.
    #[cfg(all(feature = "std", not(nanolimit_loom)))]
    fn sleep_until(&self, deadline: Timestamp) {
        let mut deadlines = self.deadlines();
        *deadlines.entry(deadline.as_ns()).or_insert(0) += 1;
        // ORDERING: SeqCst, see `set`.
        self.inner.sleeping.fetch_add(1, Ordering::SeqCst);
        // ORDERING: SeqCst, see `set`.
        while self.inner.now_ns.load(Ordering::SeqCst) < deadline.as_ns() {
            deadlines = self
                .inner
                .moved
                .wait(deadlines)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        // ORDERING: Relaxed; a mover that still sees this sleeper only takes the lock in vain.
        self.inner.sleeping.fetch_sub(1, Ordering::Relaxed);
        if let Some(count) = deadlines.get_mut(&deadline.as_ns()) {
            *count -= 1;
            if *count == 0 {
                deadlines.remove(&deadline.as_ns());
            }
        }
    }
}

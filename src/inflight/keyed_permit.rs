//! The keyed permit: units of one key in flight until it is dropped.

use super::keyed::KeyedInFlightLimiter;
use crate::store::table::KeyIdentity;
use crate::store::table::{Hashed, KeyMode};
use core::fmt;

/// Units held for one key of a [`KeyedInFlightLimiter`]; dropping the permit releases them.
///
/// It keeps the key as the table identifies it (its hash and identity words, not the key
/// itself: no clone, no allocation) and releases by looking it up again. There is no `forget`
/// (see [`KeyedInFlightLimiter`]).
///
/// ```
/// use nanolimit::inflight::KeyedInFlightLimiter;
///
/// let limiter = KeyedInFlightLimiter::<str>::new(3, 100)?;
/// {
///     let permit = limiter.try_acquire_many("alice", 2)?;
///     assert_eq!((permit.units(), limiter.in_flight("alice")), (2, 2));
/// } // released here
/// assert_eq!(limiter.in_flight("alice"), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a permit releases its units when dropped: hold it for as long as the work runs"]
pub struct KeyedPermit<'limiter, K: ?Sized, M: KeyMode<K> = Hashed> {
    limiter: &'limiter KeyedInFlightLimiter<K, M>,
    /// The key's entry, if the units are counted there (`None`: untracked or empty).
    key: Option<KeyIdentity>,
    units: u64,
    /// The key's units in flight right after this permit's units were taken.
    in_flight: u64,
    untracked: bool,
}

impl<'limiter, K: ?Sized, M: KeyMode<K>> KeyedPermit<'limiter, K, M> {
    /// A permit for `units` counted in the entry of the key `key` names, which had `in_flight`
    /// units in flight (these included) once they were taken.
    pub(super) fn tracked(
        limiter: &'limiter KeyedInFlightLimiter<K, M>,
        key: KeyIdentity,
        units: u64,
        in_flight: u64,
    ) -> Self {
        KeyedPermit {
            limiter,
            key: Some(key),
            units,
            in_flight,
            untracked: false,
        }
    }

    /// A permit for `units` a full table admitted without tracking its key
    /// ([`WhenFull::Allow`](crate::WhenFull::Allow)): counted nowhere.
    pub(super) fn untracked(limiter: &'limiter KeyedInFlightLimiter<K, M>, units: u64) -> Self {
        KeyedPermit {
            limiter,
            key: None,
            units,
            in_flight: units,
            untracked: true,
        }
    }

    /// A permit of no units: touches nothing.
    pub(super) fn empty(limiter: &'limiter KeyedInFlightLimiter<K, M>) -> Self {
        KeyedPermit {
            limiter,
            key: None,
            units: 0,
            in_flight: 0,
            untracked: false,
        }
    }

    /// The units this permit holds.
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The key's units in flight right after this permit took its units (these included): the
    /// figure the acquire's compare-and-swap wrote. For an untracked permit, its own units.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// What the key had left right after this permit took its units: the limit less
    /// [`in_flight`](Self::in_flight).
    pub fn remaining(&self) -> u64 {
        self.limiter.limit() - self.in_flight
    }

    /// Whether the units are counted nowhere: a new key admitted by a full table under
    /// [`WhenFull::Allow`](crate::WhenFull::Allow). Dropping such a permit does nothing, and
    /// the key's other acquires are not limited by it.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    /// use nanolimit::WhenFull;
    ///
    /// let limiter = KeyedInFlightLimiter::<u32>::builder(1)
    ///     .capacity(1)
    ///     .shards(1)
    ///     .when_full(WhenFull::Allow)
    ///     .build()?;
    /// // One bucket of 8 slots: the ninth key with a unit in flight finds none free.
    /// let held: Vec<_> = (0..8).map(|key| limiter.try_acquire(&key).unwrap()).collect();
    /// let ninth = limiter.try_acquire(&8)?;
    /// assert!(ninth.is_untracked() && held.iter().all(|permit| !permit.is_untracked()));
    /// assert_eq!(limiter.in_flight(&8), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_untracked(&self) -> bool {
        self.untracked
    }

    /// The limiter the units came from.
    pub fn limiter(&self) -> &'limiter KeyedInFlightLimiter<K, M> {
        self.limiter
    }
}

impl<K: ?Sized, M: KeyMode<K>> fmt::Debug for KeyedPermit<'_, K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPermit")
            .field("units", &self.units)
            .field("in_flight", &self.in_flight)
            .field("untracked", &self.untracked)
            .finish_non_exhaustive()
    }
}

impl<K: ?Sized, M: KeyMode<K>> Drop for KeyedPermit<'_, K, M> {
    #[inline]
    fn drop(&mut self) {
        if let Some(key) = &self.key {
            let released = self.limiter.release(key, self.units);
            // The key's entry keeps its slot while these units are in flight (the module
            // documentation of `src/inflight/keyed.rs`), so the release always finds them.
            // Checked in debug builds and under the model checker, where a failure is a bug
            // (not while unwinding from another panic, which would abort the process).
            if cfg!(any(debug_assertions, nanolimit_loom)) && !std::thread::panicking() {
                assert!(
                    released,
                    "a keyed in-flight permit found its {} units nowhere to release",
                    self.units
                );
            }
        }
    }
}

//! The permit: units in flight until it is dropped, from either limiter.
//!
//! One type for both, generic over the limiter it releases to ([`Source`]): the direct limiter
//! keeps nothing besides the units (its release is one `fetch_add`, inlined: no branch on the
//! kind of limiter, no dynamic dispatch), the keyed one keeps its key's entry as the table names
//! it ([`KeyedHeld`]).

use super::keyed::KeyedInFlightLimiter;
use super::InFlightLimiter;
use crate::store::table::{KeyIdentity, KeyMode};
use core::fmt;
use core::mem::ManuallyDrop;

/// Units held from an in-flight limiter; dropping the permit releases them.
///
/// `Permit<'limiter>` (the default, `L` = [`InFlightLimiter`]) comes from the direct limiter
/// and releases to its first waiter, if any waits; `Permit<'limiter, KeyedInFlightLimiter<K, M>>`
/// comes from a [`KeyedInFlightLimiter`] and releases to its key's entry, which it finds again
/// by the key's hash and identity words (not the key itself: no clone, no allocation).
///
/// | method | direct | keyed |
/// |---|---|---|
/// | [`units`](Self::units), [`limiter`](Self::limiter) | yes | yes |
/// | [`forget`](Self::forget) | yes | no: a forgotten permit would keep its key live for good, pinning a slot of the bounded table |
/// | [`in_flight`](Self::in_flight), [`remaining`](Self::remaining) | no: read them from the limiter | yes: the key's figures right after this permit's acquire |
/// | [`is_untracked`](Self::is_untracked) | no: every direct permit is counted | yes |
///
/// ```
/// use nanolimit::inflight::{InFlightLimiter, KeyedInFlightLimiter, Permit};
///
/// let limiter = InFlightLimiter::new(3)?;
/// {
///     let permit: Permit<'_> = limiter.try_acquire_many(2)?;
///     assert_eq!((permit.units(), limiter.in_flight()), (2, 2));
/// } // released here
/// assert_eq!(limiter.in_flight(), 0);
///
/// let per_client = KeyedInFlightLimiter::<str>::new(3, 100)?;
/// {
///     let permit: Permit<'_, KeyedInFlightLimiter<str>> =
///         per_client.try_acquire_many("alice", 2)?;
///     assert_eq!((permit.units(), permit.in_flight(), permit.remaining()), (2, 2, 1));
/// } // released here
/// assert_eq!(per_client.in_flight("alice"), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a permit releases its units when dropped: hold it for as long as the work runs"]
pub struct Permit<'limiter, L: Source = InFlightLimiter> {
    limiter: &'limiter L,
    units: u64,
    /// What the limiter needs besides the units to release them.
    held: L::Held,
}

/// What a [`Permit`] releases to: [`InFlightLimiter`] or [`KeyedInFlightLimiter`].
///
/// Sealed: public only so that it may bound [`Permit`]'s parameter, in a module no user can
/// name, so no other type implements it and its methods cannot be called outside the crate.
pub trait Source {
    /// What a permit keeps, besides its units, to release them.
    type Held;

    /// Gives back `units` a permit holding `held` took from this limiter.
    fn release_permit(&self, held: &Self::Held, units: u64);

    /// Adds `held`'s fields to a permit's debug output.
    fn debug_held(held: &Self::Held, out: &mut fmt::DebugStruct<'_, '_>);
}

impl Source for InFlightLimiter {
    /// Nothing: the units go back to the one word.
    type Held = ();

    #[inline]
    fn release_permit(&self, _held: &(), units: u64) {
        self.release(units);
    }

    fn debug_held(_held: &(), _out: &mut fmt::DebugStruct<'_, '_>) {}
}

/// What a keyed permit keeps besides its units (the [`Source::Held`] of a
/// [`KeyedInFlightLimiter`]).
pub struct KeyedHeld {
    /// The key's entry, if the units are counted there (`None`: untracked or empty).
    key: Option<KeyIdentity>,
    /// The key's units in flight right after this permit's units were taken.
    in_flight: u64,
    /// Whether a full table admitted the units without counting them anywhere.
    untracked: bool,
}

impl<K: ?Sized, M: KeyMode<K>> Source for KeyedInFlightLimiter<K, M> {
    type Held = KeyedHeld;

    #[inline]
    fn release_permit(&self, held: &KeyedHeld, units: u64) {
        if let Some(key) = &held.key {
            let released = self.release(key, units);
            // The key's entry keeps its slot while these units are in flight (the module
            // documentation of `src/inflight/keyed.rs`), so the release always finds them.
            // Checked in debug builds and under the model checker, where a failure is a bug
            // (not while unwinding from another panic, which would abort the process).
            if cfg!(any(debug_assertions, nanolimit_loom)) && !std::thread::panicking() {
                assert!(
                    released,
                    "a keyed in-flight permit found its {units} units nowhere to release"
                );
            }
        }
    }

    fn debug_held(held: &KeyedHeld, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("in_flight", &held.in_flight)
            .field("untracked", &held.untracked);
    }
}

impl<'limiter, L: Source> Permit<'limiter, L> {
    /// The units this permit holds (0 for an empty permit, from a request of 0 units).
    ///
    /// ```
    /// use nanolimit::inflight::{InFlightLimiter, KeyedInFlightLimiter};
    ///
    /// let limiter = InFlightLimiter::new(4)?;
    /// assert_eq!(limiter.try_acquire_many(3)?.units(), 3);
    /// let per_key = KeyedInFlightLimiter::<u64>::new(4, 100)?;
    /// assert_eq!(per_key.try_acquire(&7)?.units(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The limiter the units came from, and go back to.
    ///
    /// ```
    /// use nanolimit::inflight::InFlightLimiter;
    ///
    /// let limiter = InFlightLimiter::new(4)?;
    /// let permit = limiter.try_acquire()?;
    /// assert!(std::ptr::eq(permit.limiter(), &limiter));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limiter(&self) -> &'limiter L {
        self.limiter
    }
}

impl<'limiter> Permit<'limiter, InFlightLimiter> {
    /// A permit for `units` already taken from `limiter`.
    #[inline]
    pub(crate) fn new(limiter: &'limiter InFlightLimiter, units: u64) -> Self {
        Permit {
            limiter,
            units,
            held: (),
        }
    }

    /// Never releases the units: the limit shrinks by as many, for good (as tokio's
    /// `SemaphorePermit::forget`). [`add_permits`](InFlightLimiter::add_permits) raises it
    /// again. A waiter queued for more than the shrunk limit waits until it is raised. Direct
    /// permits only.
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

impl<'limiter, K: ?Sized, M: KeyMode<K>> Permit<'limiter, KeyedInFlightLimiter<K, M>> {
    /// A permit for `units` counted in the entry of the key `key` names, which had `in_flight`
    /// units in flight (these included) once they were taken.
    pub(super) fn tracked(
        limiter: &'limiter KeyedInFlightLimiter<K, M>,
        key: KeyIdentity,
        units: u64,
        in_flight: u64,
    ) -> Self {
        Permit {
            limiter,
            units,
            held: KeyedHeld {
                key: Some(key),
                in_flight,
                untracked: false,
            },
        }
    }

    /// A permit for `units` a full table admitted without tracking its key
    /// ([`WhenFull::Allow`](crate::WhenFull::Allow)): counted nowhere.
    pub(super) fn untracked(limiter: &'limiter KeyedInFlightLimiter<K, M>, units: u64) -> Self {
        Permit {
            limiter,
            units,
            held: KeyedHeld {
                key: None,
                in_flight: units,
                untracked: true,
            },
        }
    }

    /// A permit of no units: touches nothing.
    pub(super) fn empty(limiter: &'limiter KeyedInFlightLimiter<K, M>) -> Self {
        Permit {
            limiter,
            units: 0,
            held: KeyedHeld {
                key: None,
                in_flight: 0,
                untracked: false,
            },
        }
    }

    /// The key's units in flight right after this permit took its units (these included): the
    /// figure the acquire's compare-and-swap wrote. For an untracked permit, its own units.
    /// Keyed permits only (a direct limiter's figure is
    /// [`InFlightLimiter::in_flight`], read when needed).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<str>::new(4, 100)?;
    /// let _first = limiter.try_acquire("a")?;
    /// assert_eq!(limiter.try_acquire_many("a", 2)?.in_flight(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight(&self) -> u64 {
        self.held.in_flight
    }

    /// What the key had left right after this permit took its units: the limit less
    /// [`in_flight`](Self::in_flight). Keyed permits only.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<str>::new(4, 100)?;
    /// assert_eq!(limiter.try_acquire_many("a", 3)?.remaining(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.limiter.limit() - self.held.in_flight
    }

    /// Whether the units are counted nowhere: a new key admitted by a full table under
    /// [`WhenFull::Allow`](crate::WhenFull::Allow). Dropping such a permit does nothing, and
    /// the key's other acquires are not limited by it. Keyed permits only (a direct permit is
    /// always counted).
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
        self.held.untracked
    }
}

impl<L: Source> fmt::Debug for Permit<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Permit");
        out.field("units", &self.units);
        L::debug_held(&self.held, &mut out);
        out.finish_non_exhaustive()
    }
}

impl<L: Source> Drop for Permit<'_, L> {
    #[inline]
    fn drop(&mut self) {
        self.limiter.release_permit(&self.held, self.units);
    }
}

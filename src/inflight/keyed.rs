//! The keyed in-flight limiter: at most N units in flight per key, on the keyed rate limiters'
//! bounded table ([`KeyedInFlightLimiter`]).
//!
//! # How it is built
//!
//! Each key's state is one word of the keyed table ([`keyed`](crate::keyed)), handled by the
//! table's slot protocol exactly as a rate limiter's: a crate-private quota, `Concurrency`
//! (`src/quota/concurrency.rs`), packs the units in flight (low 24 bits) and a release count
//! (high 40 bits, modulo 2^40). An acquire is the quota's step (in flight + units ≤ limit),
//! applied by the shared compare-and-swap driver: the lock-free fast path for a key the table
//! holds, the insert path (under the shard's insert lock) for a new key. A release is a
//! crate-private operation (`Release`, `src/operation.rs`) that takes the units off the units
//! in flight and adds one to the release count. The permit records its key as the table
//! identifies it (the hash and identity words, as a reservation does for its cancellation) and
//! releases by looking the key up again, never inserting it, then applying the release through
//! the same guarded driver a cancellation uses, whose guard re-checks the slot's identity after
//! every lost race.
//!
//! # Why a permit never releases into a slot reclaimed for another key
//!
//! 1. *The key's entry keeps its slot while any of its units are in flight.* A table reassigns
//!    a slot only by reclaiming an entry equivalent to fresh, or by evicting one. Here fresh
//!    means nothing in flight, and a [`WhenFull::EvictClosestToFresh`] limiter cannot be built
//!    ([`BuildError::EvictionNotSupported`]). A reclaim judges a word fresh and then
//!    claims the slot with a compare-and-swap *from that word*; an acquire that landed in
//!    between changed the word, so the claim fails and the inserter judges the slot again.
//! 2. *So the release's lookup finds the permit's own entry*, with at least the permit's units
//!    in flight, and the guarded driver applies the release to it. An identity match is
//!    trusted only as the protocol trusts it (confirmed by the compare-and-swap).
//! 3. *No acquire lands in another key's word.* An acquire that loaded its key's word, then lost
//!    the slot to a reclaim, compare-and-swaps from the word it loaded; every word the new key
//!    writes is greater than the reclaimed one (the new key's first word is stepped from it,
//!    the release count carrying on, and acquires and releases only raise the word), so the
//!    stale compare-and-swap fails: barring a wrap of the 40-bit release count (2^40 releases
//!    in that slot, whatever their sizes) between that thread's load and its compare-and-swap. Without the
//!    release count, an acquire and a release would return a word to an earlier value, and such
//!    a stale acquire could succeed on another key's entry (an ABA); the loom models show both.
//!
//! A key the full table refused under [`WhenFull::Allow`] gets an *untracked* permit, counted
//! nowhere, whose drop does nothing: while the table stays full, such a key has no limit at all
//! (fail open), and once it gets an entry its untracked permits are not counted in it.
//!
//! With [`Hashed`] keys (the default) the table identifies a key by its 64-bit hash: two keys
//! whose hashes are equal share one entry, so one limit of units in flight, as they share one
//! state in a keyed rate limiter (see the [`keyed`](crate::keyed) module's "Key identity and
//! collisions"). Use [`Exact`](crate::keyed::Exact) keys where that must never happen.
//!
//! [`WhenFull::EvictClosestToFresh`]: crate::WhenFull::EvictClosestToFresh
//! [`BuildError::EvictionNotSupported`]: crate::BuildError::EvictionNotSupported

use super::{AcquireError, Permit};
use crate::clock::{Clock, QuantaClock};
use crate::engine::decision::Outcome;
use crate::engine::error::BuildError;
use crate::engine::operation::{Consume, Release};
use crate::engine::stats::Stats;
use crate::limiter::counters::NoCounters;
use crate::limiter::keyed_builder::KeyedBuilder;
use crate::quota::Concurrency;
use crate::store::table::{Hashed, KeyIdentity, KeyMode, Located, SlotOps, Table, WhenFull};
use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;

pub use crate::quota::concurrency::MAX_KEYED_IN_FLIGHT;

/// At most a limit of units in flight per key (per client, per upstream): a permit holds units
/// of its key until it is dropped.
///
/// The keyed form of [`InFlightLimiter`](super::InFlightLimiter), on the bounded, sharded table
/// of [`KeyedLimiter`](crate::KeyedLimiter) (the same sizing, memory and [`WhenFull`] policies). Acquiring for a key
/// the table holds is lock-free (one compare-and-swap); a new key takes its shard's insert lock,
/// as in a keyed rate limiter; a release looks its key up again and makes one compare-and-swap.
/// An entry with nothing in flight is fresh: the table may reuse its slot for another key.
///
/// Differences from the direct limiter:
/// - **No waits**: `try_acquire` and `try_acquire_many` only, answering now (no blocking or
///   async acquire, no queue: nothing is kept for waiters).
/// - **No `forget` / `add_permits`**: the limit is the same for every key and fixed at build.
///   A forgotten permit would keep its key live for good, pinning a slot of the bounded table.
/// - **No eviction**: a live entry holds units of running work, which an eviction would lose
///   track of; building with [`WhenFull::EvictClosestToFresh`] is an error.
/// - **Full table**: a new key whose slots all hold keys with units in flight is refused
///   ([`AcquireError::TableFull`], under [`WhenFull::Deny`], the default) or admitted
///   untracked ([`WhenFull::Allow`]: an [untracked](Permit::is_untracked) permit, counted
///   nowhere: while the table stays full such a key has no limit, which is what failing open
///   means).
/// - **Hashed keys** (the default) are told apart by their 64-bit hash: two keys with equal
///   hashes share one entry and one limit, as in [`KeyedLimiter`](crate::KeyedLimiter); [`Exact`](crate::keyed::Exact) keys never do.
/// - **No retry-after**, as the direct limiter: [`AcquireError::Busy`] reports the limit, the
///   key's units in flight and what was requested.
///
/// Its permits are [`Permit`]`<'_, KeyedInFlightLimiter<K, M>>`: the direct limiter's permit
/// type, with the key's figures ([`in_flight`](Permit::in_flight),
/// [`remaining`](Permit::remaining), [`is_untracked`](Permit::is_untracked)) and no
/// [`forget`](Permit::forget).
///
/// The module `src/inflight/keyed.rs` explains why a permit can never release into a slot that
/// was reclaimed for another key (in these docs with `--document-private-items`).
///
/// ```
/// use nanolimit::inflight::{AcquireError, KeyedInFlightLimiter};
///
/// // At most 2 requests in flight per upstream host.
/// let upstreams = KeyedInFlightLimiter::<str>::new(2, 1_000)?;
/// let first = upstreams.try_acquire("db-1")?;
/// let _second = upstreams.try_acquire("db-1")?;
/// assert_eq!(
///     upstreams.try_acquire("db-1").unwrap_err(),
///     AcquireError::Busy { limit: 2, in_flight: 2, requested: 1, queued: false }
/// );
/// assert!(upstreams.try_acquire("db-2").is_ok()); // another key, its own limit
/// drop(first);
/// assert_eq!(upstreams.in_flight("db-1"), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedInFlightLimiter<K: ?Sized, M: KeyMode<K> = Hashed> {
    table: Table<M::Slot>,
    quota: Concurrency,
    key: PhantomData<fn(&K)>,
}

impl<K: ?Sized, M: KeyMode<K>> fmt::Debug for KeyedInFlightLimiter<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedInFlightLimiter")
            .field("limit", &self.limit())
            .field("capacity", &self.capacity())
            .field("shards", &self.shards())
            .finish_non_exhaustive()
    }
}

impl<K: Hash + ?Sized> KeyedInFlightLimiter<K, Hashed> {
    /// A limiter of `max_in_flight` units per key, for up to `capacity` keys, with default
    /// shards and [`WhenFull::Deny`]. An error for a limit of 0 or above
    /// [`MAX_KEYED_IN_FLIGHT`], or a table that cannot be built.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    /// use nanolimit::BuildError;
    ///
    /// let limiter = KeyedInFlightLimiter::<u64>::new(8, 10_000)?;
    /// assert_eq!(limiter.limit(), 8);
    /// assert_eq!(
    ///     KeyedInFlightLimiter::<u64>::new(0, 10_000).unwrap_err(),
    ///     BuildError::ZeroLimit
    /// );
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn new(max_in_flight: u64, capacity: usize) -> Result<Self, BuildError> {
        Self::builder(max_in_flight).capacity(capacity).build()
    }

    /// A builder for a limiter of `max_in_flight` units per key, with the default capacity
    /// (65,536 keys) and shards, [`WhenFull::Deny`] and [`Hashed`] keys.
    /// The limit is checked by [`build`](KeyedBuilder::build).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    /// use nanolimit::WhenFull;
    ///
    /// let limiter = KeyedInFlightLimiter::<u64>::builder(4)
    ///     .capacity(1_000)
    ///     .when_full(WhenFull::Allow)
    ///     .exact_keys()
    ///     .build()?;
    /// assert_eq!((limiter.limit(), limiter.capacity()), (4, 1_000));
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn builder(max_in_flight: u64) -> KeyedBuilder<K, Concurrency, QuantaClock, Hashed> {
        KeyedBuilder::with_defaults(Concurrency::new(max_in_flight), QuantaClock::new())
    }
}

impl<K: ?Sized, M: KeyMode<K>> KeyedInFlightLimiter<K, M> {
    /// Takes one unit of `key` if it is free now: a permit, or why not
    /// ([`Busy`](AcquireError::Busy), or [`TableFull`](AcquireError::TableFull) for a new key a
    /// full table refused; never [`AboveLimit`](AcquireError::AboveLimit), the limit being at
    /// least 1).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<u32>::new(1, 100)?;
    /// let permit = limiter.try_acquire(&7)?;
    /// assert!(limiter.try_acquire(&7).is_err());
    /// drop(permit);
    /// assert!(limiter.try_acquire(&7).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire(
        &self,
        key: &K,
    ) -> Result<Permit<'_, KeyedInFlightLimiter<K, M>>, AcquireError> {
        self.try_take(key, 1)
    }

    /// Takes `units` of `key` at once if they are free now: all or nothing. A request above the
    /// limit is [`AcquireError::AboveLimit`] (it could never pass); 0 units is an empty permit
    /// (which touches nothing, and is not [untracked](Permit::is_untracked)).
    ///
    /// ```
    /// use nanolimit::inflight::{AcquireError, KeyedInFlightLimiter};
    ///
    /// let limiter = KeyedInFlightLimiter::<str>::new(5, 100)?;
    /// let three = limiter.try_acquire_many("tenant-a", 3)?;
    /// assert_eq!((three.units(), three.in_flight(), three.remaining()), (3, 3, 2));
    /// let busy = limiter.try_acquire_many("tenant-a", 3).unwrap_err();
    /// assert_eq!(
    ///     busy,
    ///     AcquireError::Busy { limit: 5, in_flight: 3, requested: 3, queued: false }
    /// );
    /// assert_eq!(busy.remaining(), Some(2));
    /// assert_eq!(
    ///     limiter.try_acquire_many("tenant-a", 6).unwrap_err(),
    ///     AcquireError::AboveLimit { units: 6, limit: 5 }
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_many(
        &self,
        key: &K,
        units: u64,
    ) -> Result<Permit<'_, KeyedInFlightLimiter<K, M>>, AcquireError> {
        let limit = self.limit();
        if units > limit {
            return Err(AcquireError::AboveLimit { units, limit });
        }
        if units == 0 {
            return Ok(Permit::empty(self));
        }
        self.try_take(key, units)
    }

    /// The limit: the most units one key may have in flight.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// assert_eq!(KeyedInFlightLimiter::<u64>::new(8, 100)?.limit(), 8);
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        self.quota.limit()
    }

    /// Units `key`'s permits hold now: 0 for a key the table does not hold. Inserts nothing.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<str>::new(3, 100)?;
    /// let _permit = limiter.try_acquire_many("a", 2)?;
    /// assert_eq!((limiter.in_flight("a"), limiter.in_flight("b")), (2, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight(&self, key: &K) -> u64 {
        match self.peek(key) {
            Some(word) => Concurrency::in_flight(word),
            None => 0,
        }
    }

    /// Units `key` could take now: the limit less its units in flight; for a key the table does
    /// not hold, the limit if it would get a slot (or, under [`WhenFull::Allow`], an untracked
    /// permit), else 0 (a full table would refuse it). Inserts nothing.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<str>::new(3, 100)?;
    /// let _permit = limiter.try_acquire("a")?;
    /// assert_eq!((limiter.remaining("a"), limiter.remaining("b")), (2, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self, key: &K) -> u64 {
        match self.peek(key) {
            Some(word) => self.quota.remaining(word),
            None => 0,
        }
    }

    /// How many live keys the table was sized for (as requested at construction).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// assert_eq!(KeyedInFlightLimiter::<u64>::new(8, 10_000)?.capacity(), 10_000);
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// How many slots the table has (see [`KeyedLimiter::slots`](crate::KeyedLimiter::slots)).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<u64>::new(8, 10_000)?;
    /// assert!(limiter.slots() >= limiter.capacity());
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn slots(&self) -> usize {
        self.table.slot_count()
    }

    /// The number of shards.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<u64>::builder(8).capacity(10_000).shards(4).build()?;
    /// assert_eq!(limiter.shards(), 4);
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn shards(&self) -> usize {
        self.table.shard_count()
    }

    /// Total bytes the table occupies, fixed at construction.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<u64>::new(8, 10_000)?;
    /// assert!(limiter.memory_bytes() >= limiter.slots() * 8); // a word per slot at least
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.table.memory_bytes()
    }

    /// Bytes per key of capacity, all overhead included, rounded to the nearest byte (the
    /// keyed rate limiters' figures: 25.5 for [`Hashed`] keys, 31.25 for [`Exact`](crate::keyed::Exact) ones).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let hashed = KeyedInFlightLimiter::<u64>::new(8, 65_536)?;
    /// let exact = KeyedInFlightLimiter::<u64>::builder(8).exact_keys().build()?;
    /// assert!(hashed.bytes_per_key() < exact.bytes_per_key());
    /// # Ok::<(), nanolimit::BuildError>(())
    /// ```
    pub fn bytes_per_key(&self) -> usize {
        (self.memory_bytes() + self.capacity() / 2) / self.capacity()
    }

    /// How many slots hold an entry, with units in flight or fresh (entries are never removed,
    /// only reused). Scans the whole table: for monitoring, not for the hot path.
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<u64>::new(1, 1_000)?;
    /// drop(limiter.try_acquire(&1)?);
    /// assert_eq!((limiter.entries(), limiter.in_flight(&1)), (1, 0)); // fresh: reusable
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entries(&self) -> usize {
        self.table.entries()
    }

    /// Slow-path event counters of the table (never an eviction).
    ///
    /// ```
    /// use nanolimit::inflight::KeyedInFlightLimiter;
    ///
    /// let limiter = KeyedInFlightLimiter::<u64>::new(2, 1_000)?;
    /// let _first = limiter.try_acquire(&1)?; // a new key: inserted
    /// let _second = limiter.try_acquire(&1)?; // a present key: the fast path
    /// let stats = limiter.stats();
    /// assert_eq!((stats.inserts, stats.evictions), (1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.table.stats()
    }

    /// Takes `units` (1 to the limit) of `key`.
    #[inline]
    fn try_take(
        &self,
        key: &K,
        units: u64,
    ) -> Result<Permit<'_, KeyedInFlightLimiter<K, M>>, AcquireError> {
        let at = self.locate(key);
        // Named before the acquire's compare-and-swap (see `Table::name`).
        let named = self.table.name(&at);
        let judged = self.table.decide(Consume, at, &self.quota, units, ());
        let in_flight = Concurrency::in_flight(judged.word);
        match judged.outcome {
            Outcome::Allowed | Outcome::Inserted => {
                Ok(Permit::tracked(self, named, units, in_flight))
            }
            Outcome::Untracked => Ok(Permit::untracked(self, units)),
            Outcome::Denied => Err(AcquireError::Busy {
                limit: self.limit(),
                in_flight,
                requested: units,
                queued: false,
            }),
            Outcome::RefusedUntilFresh | Outcome::RefusedUntilAdmitted => {
                Err(AcquireError::TableFull)
            }
        }
    }

    /// Gives back `units` a tracked permit of the key `named` holds: whether they were found
    /// in flight there (always, unless an invariant of the module documentation is broken).
    #[inline]
    pub(super) fn release(&self, named: &KeyIdentity, units: u64) -> bool {
        let at = self.table.locate_named(named);
        self.table
            .apply_if_present(Release { units }, &at, &self.quota, ())
    }

    /// The word of `key` as a check of one unit would judge it now, writing and inserting
    /// nothing; `None` for a new key a full table would refuse.
    fn peek(&self, key: &K) -> Option<u64> {
        let judged = self
            .table
            .peek(Consume, &self.locate(key), &self.quota, 1, ());
        match judged.outcome {
            Outcome::RefusedUntilFresh | Outcome::RefusedUntilAdmitted => None,
            _ => Some(judged.word),
        }
    }

    /// Where `key` lives in the table.
    #[inline]
    fn locate(&self, key: &K) -> Located<<M::Slot as SlotOps>::Identity> {
        self.table.locate::<K, M>(key)
    }
}

/// A keyed in-flight limiter is built by the keyed limiters' one builder, [`KeyedBuilder`]
/// ([`KeyedInFlightLimiter::builder`]), whose clock it does not read (a concurrency limit has no
/// time).
impl<K: ?Sized, C: Clock, M: KeyMode<K>> KeyedBuilder<K, Concurrency, C, M, NoCounters> {
    /// Checks the limit and the full-table policy (no eviction: an entry with units in flight
    /// keeps its slot), then allocates the table, or says why not.
    ///
    /// ```
    /// use nanolimit::inflight::{KeyedInFlightLimiter, MAX_KEYED_IN_FLIGHT};
    /// use nanolimit::{BuildError, WhenFull};
    ///
    /// let too_many = KeyedInFlightLimiter::<u64>::builder(MAX_KEYED_IN_FLIGHT + 1).build();
    /// assert_eq!(
    ///     too_many.unwrap_err(),
    ///     BuildError::LimitTooLarge { limit: MAX_KEYED_IN_FLIGHT + 1, max: MAX_KEYED_IN_FLIGHT }
    /// );
    /// let no_keys = KeyedInFlightLimiter::<u64>::builder(1).capacity(0).build();
    /// assert_eq!(no_keys.unwrap_err(), BuildError::ZeroCapacity);
    /// let evicting = KeyedInFlightLimiter::<u64>::builder(4)
    ///     .when_full(WhenFull::EvictClosestToFresh)
    ///     .build();
    /// assert_eq!(evicting.unwrap_err(), BuildError::EvictionNotSupported);
    /// ```
    pub fn build(self) -> Result<KeyedInFlightLimiter<K, M>, BuildError> {
        let (quota, options, _clock, NoCounters) = self.into_parts();
        let limit = quota.limit();
        if limit == 0 {
            return Err(BuildError::ZeroLimit);
        }
        if limit > MAX_KEYED_IN_FLIGHT {
            return Err(BuildError::LimitTooLarge {
                limit,
                max: MAX_KEYED_IN_FLIGHT,
            });
        }
        if options.when_full == WhenFull::EvictClosestToFresh {
            return Err(BuildError::EvictionNotSupported);
        }
        Ok(KeyedInFlightLimiter {
            table: Table::new(&options)?,
            quota,
            key: PhantomData,
        })
    }
}

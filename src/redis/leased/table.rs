//! The process's leases, one entry per key: a bounded table of shards, each a map behind a
//! reader-writer lock. A check of a key the process holds takes its shard's lock shared (never
//! waiting for another check) and then works on the key's own [`LeaseCell`] with atomics only;
//! the lock is taken exclusively only to add a key, or to drop idle entries from a full shard.

use super::word;
use crate::engine::driver;
use crate::quota::Step;
use crate::sync::{Arc, AtomicU64, Ordering, RwLock};
use ahash::RandomState;
use core::cell::Cell;
use crossbeam_utils::CachePadded;
use std::collections::HashMap;

/// One key's lease and what its refills need.
#[derive(Debug)]
pub(crate) struct LeaseCell {
    /// The packed lease ([`word`]).
    pub(crate) word: AtomicU64,
    /// The size of this key's next lease, adapted by each refill (written under the refilling
    /// flag).
    pub(crate) lease_units: AtomicU64,
    /// The shared word the latest lease wrote in Redis: a give-back is exact only while Redis
    /// still holds it (written under the refilling flag).
    pub(crate) token: AtomicU64,
    /// What the shared budget could still lease after the latest refill, for decisions served
    /// locally (an estimate: other processes lease meanwhile).
    pub(crate) shared_remaining: AtomicU64,
}

impl LeaseCell {
    pub(crate) fn new(lease_units: u64) -> LeaseCell {
        LeaseCell {
            word: AtomicU64::new(word::EMPTY),
            lease_units: AtomicU64::new(lease_units),
            token: AtomicU64::new(0),
            shared_remaining: AtomicU64::new(0),
        }
    }
}

/// The lease word's protocol: every change of a key's word is one of these, each a
/// compare-and-swap loop around a pure step of [`word`].
///
/// - A spend takes units and keeps the refilling flag; it never waits.
/// - A claim sets the flag: one refill (or give-back) of the key at a time.
/// - A publish clears it, adding the refill's units to those still spendable; it retries
///   against concurrent spends, so no spend is lost and no unit counted twice.
///
/// Only the holder of the flag writes the cell's other fields (token, lease size, shared
/// remaining): the claim's Acquire pairs with the previous holder's publish (Release), so each
/// holder reads what the last one wrote.
impl LeaseCell {
    /// Spends `cost` at `now_grain` if that many units are spendable: the units left, or
    /// `None` (nothing written).
    #[inline]
    pub(crate) fn spend(&self, now_grain: u64, cost: u64) -> Option<u64> {
        // The units left spendable by the step the driver applied last: the one that landed.
        let held = Cell::new(0);
        let step = |observed| match word::spend(observed, now_grain, cost) {
            word::Spend::Taken { word, held: left } => {
                held.set(left);
                Step::Allow(word)
            }
            word::Spend::Short { .. } => Step::Deny,
        };
        // ORDERING: Relaxed: a spend reads and writes only the units, which the word itself
        // carries; the driver's compare-and-swap orders it against every other change of the
        // word (its stronger success ordering adds nothing a spend needs).
        let observed = self.word.load(Ordering::Relaxed);
        driver::apply_unguarded(&self.word, observed, step).ok()?;
        Some(held.get())
    }

    /// Claims the key for a refill at `now_grain` ([`word::claim`]: lapsed units go): the word
    /// before the claim, or `None` when a refill is in flight (or a spend moved the word
    /// meanwhile: the caller goes on without a refill).
    #[inline]
    pub(crate) fn claim(&self, now_grain: u64) -> Option<u64> {
        // ORDERING: Relaxed: the compare-and-swap below is the synchronising access.
        let observed = self.word.load(Ordering::Relaxed);
        let claimed = word::claim(observed, now_grain)?;
        // ORDERING: Acquire on success pairs with the Release of the publish that ended the
        // key's last refill: its token and lease size are visible to this holder.
        self.word
            .compare_exchange(observed, claimed, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| observed)
    }

    /// Claims the key and takes every unit (spends then find none): the word before, or `None`
    /// as [`claim`](Self::claim). Ended by [`release_empty`](Self::release_empty).
    pub(crate) fn claim_all(&self) -> Option<u64> {
        // ORDERING: Relaxed: the compare-and-swap below is the synchronising access.
        let observed = self.word.load(Ordering::Relaxed);
        let claimed = word::claim(observed, 0)? & !word::MAX_UNITS;
        // ORDERING: Acquire on success, as in `claim`.
        self.word
            .compare_exchange(observed, claimed, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| observed)
    }

    /// Ends a [`claim_all`](Self::claim_all): nothing held, no refill in flight.
    pub(crate) fn release_empty(&self) {
        // ORDERING: Release: the holder's writes happen-before the next claim (Acquire).
        // A plain store: under a `claim_all` the word holds no units, so no spend can move it.
        self.word.store(word::EMPTY, Ordering::Release);
    }

    /// Ends a refill claimed by [`claim`](Self::claim) that was granted `granted` units, of
    /// which its request spends `spent`, at `now_grain`, the new units spendable until
    /// `deadline_grain`: the units left.
    pub(crate) fn publish(
        &self,
        now_grain: u64,
        granted: u64,
        spent: u64,
        deadline_grain: u64,
    ) -> u64 {
        let step = |observed| {
            Step::Allow(word::publish(observed, now_grain, granted, spent, deadline_grain).word)
        };
        // ORDERING: Relaxed load; the driver's compare-and-swap publishes: its success ordering
        // (AcqRel) includes the Release by which the token, lease size and shared remaining
        // written under the claim happen-before the next claim (its Acquire) reads them.
        let observed = self.word.load(Ordering::Relaxed);
        match driver::apply_unguarded(&self.word, observed, step) {
            Ok(published) | Err(published) => word::units(published),
        }
    }

    /// The units held (spendable or not).
    #[cfg_attr(not(nanolimit_loom), allow(dead_code))]
    pub(crate) fn units(&self) -> u64 {
        // ORDERING: Relaxed: a snapshot.
        word::units(self.word.load(Ordering::Relaxed))
    }
}

type Shard = HashMap<Box<str>, Arc<LeaseCell>, RandomState>;

/// The bounded table of leases.
#[derive(Debug)]
pub(crate) struct LeaseTable {
    shards: Box<[CachePadded<RwLock<Shard>>]>,
    /// `shards.len() − 1`.
    shard_mask: usize,
    /// The most entries a shard holds.
    shard_capacity: usize,
    hasher: RandomState,
}

/// Shards of a table (a power of two): enough that threads checking different keys rarely
/// share a lock word.
const SHARDS: usize = 64;

impl LeaseTable {
    /// A table for about `capacity` keys (at least one per shard).
    pub(crate) fn new(capacity: usize) -> LeaseTable {
        let shard_capacity = capacity.div_ceil(SHARDS).max(1);
        let hasher = RandomState::new();
        let shards = (0..SHARDS)
            .map(|_| CachePadded::new(RwLock::new(HashMap::with_hasher(hasher.clone()))))
            .collect();
        LeaseTable {
            shards,
            shard_mask: SHARDS - 1,
            shard_capacity,
            hasher,
        }
    }

    /// The most keys the table holds.
    pub(crate) fn capacity(&self) -> usize {
        self.shard_capacity * SHARDS
    }

    fn shard(&self, key: &str) -> &RwLock<Shard> {
        let hash = self.hasher.hash_one(key) as usize;
        // The map hashes the low bits; the shard takes high ones.
        &self.shards[(hash >> 58) & self.shard_mask]
    }

    /// Runs `with` on `key`'s cell under the shard's shared lock, if the table holds the key.
    #[inline]
    pub(crate) fn with_cell<R>(
        &self,
        key: &str,
        with: impl FnOnce(&Arc<LeaseCell>) -> R,
    ) -> Option<R> {
        // A poisoned lock only means a panic elsewhere while it was held; the map is intact
        // (no operation under it can leave it half-updated).
        let shard = self
            .shard(key)
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        shard.get(key).map(with)
    }

    /// `key`'s cell, added (with `lease_units` as its first lease size) if the table has room,
    /// after dropping the shard's idle entries when it is full; `None` when the shard is full
    /// of live leases.
    #[cold]
    pub(crate) fn cell_or_insert(
        &self,
        key: &str,
        lease_units: u64,
        now_grain: u64,
    ) -> Option<Arc<LeaseCell>> {
        let mut shard = self
            .shard(key)
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(cell) = shard.get(key) {
            return Some(Arc::clone(cell));
        }
        if shard.len() >= self.shard_capacity {
            // ORDERING: Relaxed: an entry whose lease has lapsed and that no refill holds may
            // go; a check that found it before it went spends nothing from it (nothing is
            // spendable), and a refill racing in would find it claimed: only its units lapse.
            shard.retain(|_, cell| {
                Arc::strong_count(cell) > 1
                    || !word::is_idle(cell.word.load(Ordering::Relaxed), now_grain)
            });
            if shard.len() >= self.shard_capacity {
                return None;
            }
        }
        let cell = Arc::new(LeaseCell::new(lease_units));
        shard.insert(key.into(), Arc::clone(&cell));
        Some(cell)
    }

    /// Every cell, for a give-back of the unused units.
    pub(crate) fn cells(&self) -> Vec<(Box<str>, Arc<LeaseCell>)> {
        self.shards
            .iter()
            .flat_map(|shard| {
                let shard = shard
                    .read()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                shard
                    .iter()
                    .map(|(key, cell)| (key.clone(), Arc::clone(cell)))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Keys held.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                shard
                    .read()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .len()
            })
            .sum()
    }
}

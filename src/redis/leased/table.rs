//! The process's leases, one entry per key: a bounded table of shards, each a map behind a
//! reader-writer lock. A check of a key the process holds takes its shard's lock shared (never
//! waiting for another check) and then works on the key's own [`LeaseCell`] with atomics only;
//! the lock is taken exclusively only to add a key, or to drop idle entries from a full shard.

use super::word;
use crate::sync::{Arc, AtomicU64, Ordering, RwLock};
use ahash::RandomState;
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
    fn new(lease_units: u64) -> LeaseCell {
        LeaseCell {
            word: AtomicU64::new(word::EMPTY),
            lease_units: AtomicU64::new(lease_units),
            token: AtomicU64::new(0),
            shared_remaining: AtomicU64::new(0),
        }
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

//! The bounded keyed table: one state word per key in shards of cache-line buckets, allocated
//! once, with lock-free lookups and checks, and inserts under a shard's lock. It knows nothing
//! of what a word means beyond [`SlotState`](crate::quota::SlotState), and nothing of the
//! limiters built on it.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the table: shards, buckets, hint words, lookups, counts |
//! | `key.rs` | [`KeyMode`]: [`Hashed`], [`Exact`], [`ExactKey`]; a key's hash and identity words |
//! | `placement.rs`, `hints.rs` | where a key may live; one-byte lookup hints |
//! | `slot.rs` | a slot's identity and state words |
//! | `protocol.rs` | checks, peeks, undos and removals on shared slots, and why they are ABA-free |
//! | `guarded.rs` | the driver applied to a slot behind its identity re-check |
//! | `insert.rs` | the one insert protocol, for every kind of state: the survey, the claim, the publication |
//! | `choose.rs` | where a new key goes: the survey of its slots |
//! | `layout.rs` | a table's shape from its capacity and shards, checked before anything is allocated |
//! | `lowered.rs` | the slots whose words an undo lowered, judged by the highest word they held |
//!
//! # Table layout
//!
//! The table is a power of two of shards, each a fixed run of 64-byte-aligned buckets of 8
//! slots in one array. A key hashes (ahash, with a random seed per table, so clients cannot aim
//! keys at one bucket) to two candidate buckets of one shard: the key may live in any of those
//! 16 slots. Nothing is ever allocated after construction, whatever the number of distinct keys
//! seen. A slot is its key's state word followed by its identity words, and each bucket has a
//! word of one-byte lookup hints, so a lookup usually reads one word of hints and one slot.
//!
//! # Concurrency
//!
//! Checks of a present key are lock-free; inserts of new keys, and removals of keys, take their
//! shard's insert lock, which checks never take. `src/store/table/protocol.rs` states the protocol and why it is free of
//! ABA (in these docs with `cargo doc --document-private-items`); `loom-tests/` model-checks it.

mod choose;
mod guarded;
mod hints;
mod insert;
mod key;
mod layout;
mod lowered;
mod options;
mod placement;
mod protocol;
mod slot;

pub(crate) use crate::store::KeyIdentity;
pub(crate) use choose::{Candidate, Full};
pub(crate) use insert::{Insertion, Taken, Verdict};
pub use key::{Exact, ExactKey, Hashed, KeyMode};
pub(crate) use key::{KeyMarker, Located};
pub use options::WhenFull;
pub(crate) use options::{TableOptions, DEFAULT_CAPACITY};
pub(crate) use placement::Placement;
pub(crate) use slot::{SlotOps, RESERVED, VACANT};

use crate::engine::stats::Stats;
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use crossbeam_utils::CachePadded;
use hints::HintMatches;
use lowered::LoweredSlots;

/// Slots per bucket: with [`Hashed`] keys a bucket is two 64-byte cache lines,
/// each holding four (state, identity) pairs.
pub(crate) const SLOTS_PER_BUCKET: usize = 8;

/// The most shards a table may have: a shard is the top bits of the 32 that draw the first
/// bucket (see [`Placement`]), and at least 8 of them must be left to draw the bucket within
/// the shard.
const MAX_SHARDS: usize = 1 << 24;

/// One cache-line-aligned bucket of slots.
#[derive(Debug)]
#[repr(align(64))]
pub(crate) struct Bucket<S> {
    pub(super) slots: [S; SLOTS_PER_BUCKET],
}

/// What inserts write in a shard, on a cache line of its own.
#[derive(Debug)]
struct ShardWriter {
    /// The insert lock, and the shard's slots whose words an undo lowered, which only its
    /// holders read or write.
    insert_lock: Mutex<LoweredSlots>,
    inserts: AtomicU64,
    reclaims: AtomicU64,
    refused_new_keys: AtomicU64,
    untracked_new_keys: AtomicU64,
    evictions: AtomicU64,
    /// Keys removed ([`KeyedLimiter::remove`](crate::KeyedLimiter::remove)): counted with a
    /// Release increment after the removed entry's hint is cleared (see
    /// [`Table::reassignments`]).
    removals: AtomicU64,
    /// The earliest time a new key of this shard is judged at, as the quota's time word
    /// ([`Quota::time_word`](crate::quota::SlotState::time_word)): raised by every reclaim to when the
    /// reclaimed entry became fresh, so a key that comes back behind its reclaimed entry is
    /// judged no earlier than its old state left it (`protocol.rs`, "Keys that come back").
    new_key_floor: AtomicU64,
}

/// A shard's insert lock, held until dropped, and which shard's it is: what
/// [`Table::count`] takes as proof that its caller is the shard's only writer of its counts.
pub(crate) struct InsertLock<'table> {
    shard: usize,
    lowered: MutexGuard<'table, LoweredSlots>,
}

impl InsertLock<'_> {
    /// The shard whose lock this is.
    pub(crate) fn shard(&self) -> usize {
        self.shard
    }

    /// The shard's lowered slots.
    pub(crate) fn lowered(&self) -> &LoweredSlots {
        &self.lowered
    }

    /// The shard's lowered slots, to change.
    pub(crate) fn lowered_mut(&mut self) -> &mut LoweredSlots {
        &mut self.lowered
    }
}

/// Where a slot is among a key's candidates: its bucket in the key's shard and its index in
/// the bucket. Carried from the insert path's survey to the hint write, so that neither
/// searches the buckets for the slot again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotPosition {
    pub(super) bucket: usize,
    pub(super) index: usize,
}

/// A slow-path event a shard counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TableEvent {
    Insert,
    Reclaim,
    RefusedNewKey,
    UntrackedNewKey,
    Eviction,
}

/// The table: shards of buckets of slots.
pub(crate) struct Table<S> {
    /// Every shard's buckets, shard after shard.
    buckets: Box<[Bucket<S>]>,
    /// One word of one-byte hints per bucket ([`hints`]), written under the bucket's shard's
    /// insert lock before the slot is published.
    hints: Box<[AtomicU64]>,
    /// Per shard, what inserts write.
    writers: Box<[CachePadded<ShardWriter>]>,
    /// 32 less the number of bits that pick the shard (see [`Placement`]).
    shard_shift: u32,
    buckets_per_shard: u64,
    /// The live keys the table was sized for (as requested).
    capacity: usize,
    /// What a new key gets when every slot it may use is live.
    when_full: WhenFull,
    /// Hashes keys for placement (and, for [`Hashed`] keys, identity), with a seed of its own.
    hasher: ahash::RandomState,
}

impl<S> core::fmt::Debug for Table<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Table")
            .field("capacity", &self.capacity)
            .field("shards", &self.writers.len())
            .field("when_full", &self.when_full)
            .finish_non_exhaustive()
    }
}

impl<S: SlotOps> Table<S> {
    #[inline]
    pub(crate) fn place(&self, hash: u64) -> Placement {
        Placement::of(
            hash,
            self.buckets.len() as u64,
            self.shard_shift,
            self.buckets_per_shard,
        )
    }

    /// The slot at `at`.
    #[inline]
    pub(crate) fn slot_at(&self, at: SlotPosition) -> &S {
        &self.bucket(at.bucket)[at.index]
    }

    /// The slots of `bucket` (a bucket of the table, as [`Placement`] names them).
    #[inline]
    pub(crate) fn bucket(&self, bucket: usize) -> &[S; SLOTS_PER_BUCKET] {
        &self.buckets[bucket].slots
    }

    /// The number of `slot` (one of `shard`'s) among all the table's slots, `0..slot_count()`:
    /// where side storage kept per slot (a keyed sliding log's records) finds its part.
    #[inline]
    pub(crate) fn slot_number(&self, shard: usize, slot: &S) -> usize {
        let offset = core::ptr::from_ref(slot).addr() - self.buckets.as_ptr().addr();
        let bucket_bytes = core::mem::size_of::<Bucket<S>>();
        let number = offset / bucket_bytes * SLOTS_PER_BUCKET
            + offset % bucket_bytes / core::mem::size_of::<S>();
        debug_assert_eq!(
            number / (self.buckets_per_shard as usize * SLOTS_PER_BUCKET),
            shard,
            "a slot of another shard"
        );
        number
    }

    /// The slot holding `identity` and the state observed in it, if any, reading only the slots
    /// whose hint matches (the lock-free lookup). A removed key's entry, whose hint is cleared,
    /// is not read (but by a lookup that reads a hint word from before the removal: see the
    /// protocol, "Removal").
    ///
    /// A bucket's first slot is read together with its hint word rather than after it. A key
    /// goes to the first free slot of its emptier bucket, ties going to its first bucket, so in
    /// a table below its capacity most checks find their key there. Its state and identity
    /// then do not wait for the hint word (its address is not computed from the hint word), and
    /// in a table larger than the caches its line and the hint's are fetched at once rather
    /// than one after the other. The reads are those of the general path, in the same order for slot 0: hint
    /// word, then state, then identity; when slot 0's hint does not match, its state was read
    /// and is not used.
    #[inline]
    pub(crate) fn find(&self, placement: Placement, identity: &S::Identity) -> Option<(&S, u64)> {
        placement.probe(|bucket| {
            let slots = &self.buckets[bucket].slots;
            // ORDERING: Relaxed; a hint only filters (see `hints`): a stale one sends the check
            // to the locked slow path, where the lock makes every hint word exact.
            let hint_word = self.hints[bucket].load(Ordering::Relaxed);
            // ORDERING: Acquire, pairs with the Release store that published slot 0's identity
            // or a later CAS in its release sequence, as `holding`'s load, which this is for slot 0.
            let first_state = slots[0].state().load(Ordering::Acquire);
            if hints::hint_at(hint_word, 0) == placement.hint {
                if let Some(found) = Self::holding_observed(&slots[0], first_state, identity) {
                    return Some(found);
                }
            }
            HintMatches::of(hint_word, placement.hint)
                .find_map(|index| Self::holding(&slots[index], identity))
        })
    }

    /// Starts fetching the last line of each of a new key's candidate buckets (the lookup
    /// that missed the key fetched their hint words and first lines; with `Hashed` keys a
    /// bucket is those two lines), before the insert path takes the shard's insert lock: in a
    /// table with no vacant slot the survey under the lock reads every slot of the first bucket,
    /// and of the second unless every slot of the first is reclaimable, and misses served while
    /// the lock is held make every other inserter of the shard wait for them. A hint to the processor, not a step of the protocol: compiled out of the loom
    /// models, whose interleavings it would only multiply.
    #[inline(always)]
    pub(crate) fn start_fetching_candidates(&self, placement: Placement) {
        #[cfg(not(nanolimit_loom))]
        {
            let buckets = &self.buckets;
            // In a shard of one bucket the second bucket is the first: fetched twice, harmlessly.
            for bucket in [placement.first_bucket, placement.second_bucket()] {
                // ORDERING: Relaxed, and the value unused: no other access is ordered by this
                // load.
                let _ = buckets[bucket].slots[SLOTS_PER_BUCKET - 1]
                    .state()
                    .load(Ordering::Relaxed);
            }
        }
        #[cfg(nanolimit_loom)]
        let _ = placement;
    }

    /// `slot` and its observed state, if it holds a live entry for `identity`.
    #[inline]
    fn holding<'slot>(slot: &'slot S, identity: &S::Identity) -> Option<(&'slot S, u64)> {
        // ORDERING: Acquire, pairs with the Release store that published the slot's identity
        // (`publish`) or a later CAS in its release sequence, so the identity words read next
        // are at least as new as this state.
        let state = slot.state().load(Ordering::Acquire);
        Self::holding_observed(slot, state, identity)
    }

    /// `slot` and `state`, if `state` (read from `slot` by an Acquire load, as in
    /// [`holding`](Self::holding)) is a live entry's and the identity read after it is
    /// `identity`.
    #[inline(always)]
    fn holding_observed<'slot>(
        slot: &'slot S,
        state: u64,
        identity: &S::Identity,
    ) -> Option<(&'slot S, u64)> {
        (state < RESERVED && slot.holds(identity)).then_some((slot, state))
    }

    /// The hint word of `bucket`: exact under its shard's insert lock, which every hint writer
    /// holds; without it, a recent value (a filter only).
    #[inline]
    pub(crate) fn hint_word(&self, bucket: usize) -> u64 {
        // ORDERING: Relaxed; under the insert lock, the lock orders every write (see
        // `write_hint`); a lock-free reader confirms every slot it uses by its state word.
        self.hints[bucket].load(Ordering::Relaxed)
    }

    /// Records `placement`'s hint for the slot `at`, one of its candidates. Under the insert
    /// lock, before the slot is published.
    pub(crate) fn set_hint(&self, placement: Placement, at: SlotPosition) {
        self.write_hint(at, placement.hint);
    }

    /// Writes `hint` as the hint byte of the slot `at`. Under its shard's insert lock.
    fn write_hint(&self, at: SlotPosition, hint: u8) {
        let hints = &self.hints[at.bucket];
        // ORDERING: Relaxed load and store: only insert-lock holders write hints, and the lock
        // orders them; readers are published to by the slot's Release store (or, for a cleared
        // hint, by the removal count's Release increment, see `detach`).
        let word = hints.load(Ordering::Relaxed);
        // ORDERING: Relaxed, as above.
        hints.store(hints::with_hint(word, at.index, hint), Ordering::Relaxed);
    }

    /// Whether the slot `at` (a key's candidate, not vacant) holds a removed
    /// key's entry: its hint byte is cleared (a key's hint is never 0). Exact under the shard's
    /// insert lock, which every hint writer holds.
    pub(crate) fn is_detached(&self, at: SlotPosition) -> bool {
        hints::hint_at(self.hint_word(at.bucket), at.index) == 0
    }

    /// The slot holding a live entry for `identity`, read under the shard's insert lock, where
    /// the hint words are exact: the entry is among the slots whose byte is the key's hint, and
    /// a removed key's entry (byte 0) is never one of them. The slot keeps its key while the
    /// lock is held.
    pub(crate) fn find_locked(
        &self,
        placement: Placement,
        identity: &S::Identity,
    ) -> Option<SlotPosition> {
        placement.buckets().find_map(|bucket| {
            let slots = self.bucket(bucket);
            HintMatches::of(self.hint_word(bucket), placement.hint)
                .find(|&index| {
                    // ORDERING: Relaxed: under the insert lock, which orders every write of a
                    // slot's identity, and of its word from a marker to a key's state.
                    let state = slots[index].state().load(Ordering::Relaxed);
                    state < RESERVED && slots[index].holds(identity)
                })
                .map(|index| SlotPosition { bucket, index })
        })
    }

    /// Detaches the entry at `at` (found by [`find_locked`](Self::find_locked) for a key of
    /// `placement`) from its key: clears its hint, which no key has, so that no lookup that
    /// reads the hint word from now on reads the slot, nor the locked paths take it for the
    /// key's; then counts the removal. The state word and the identity are left as they are.
    /// Under the shard's insert lock.
    pub(crate) fn detach(&self, placement: Placement, at: SlotPosition) {
        self.write_hint(at, 0);
        // ORDERING: Release, after the hint is cleared: a reservation that reads this count
        // with Acquire before its lookup (`decide_naming_key` in the protocol) reads the cleared
        // hint, so it cannot book on the detached entry and name the count that follows its
        // removal. Later increments (RMWs) continue the release sequence.
        self.writers[placement.shard()]
            .removals
            .fetch_add(1, Ordering::Release);
    }

    /// Takes `shard`'s insert lock.
    pub(crate) fn lock(&self, shard: usize) -> InsertLock<'_> {
        // A poisoned lock only means another inserter panicked (which the table never does by
        // itself); the slots it guards are still consistent, since every slot write is atomic.
        let guard = self.writers[shard]
            .insert_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        InsertLock {
            shard,
            lowered: guard,
        }
    }

    /// The time word no new key of `shard` is judged before (see `ShardWriter::new_key_floor`).
    /// Exact under the shard's insert lock; without it (a peek of a new key), a recent value.
    #[inline]
    pub(crate) fn new_key_floor(&self, shard: usize) -> u64 {
        // ORDERING: Relaxed. Inserts read and write the floor under the insert lock, whose
        // acquire and release order it; a peek without the lock only needs some recent value
        // (it decides nothing).
        self.writers[shard].new_key_floor.load(Ordering::Relaxed)
    }

    /// Raises `shard`'s new-key floor to `time_word`. Under the shard's insert lock.
    pub(crate) fn raise_new_key_floor(&self, shard: usize, time_word: u64) {
        let floor = &self.writers[shard].new_key_floor;
        // ORDERING: Relaxed, under the insert lock (see `new_key_floor`): no other writer runs.
        if time_word > floor.load(Ordering::Relaxed) {
            // ORDERING: Relaxed, as above.
            floor.store(time_word, Ordering::Relaxed);
        }
    }

    /// Counts `event` in the shard whose insert lock `lock` holds: these counts are written
    /// only by that lock's holders.
    pub(crate) fn count(&self, lock: &InsertLock<'_>, event: TableEvent) {
        let writer = &self.writers[lock.shard];
        let counter = match event {
            TableEvent::Insert => &writer.inserts,
            TableEvent::Reclaim => &writer.reclaims,
            TableEvent::RefusedNewKey => &writer.refused_new_keys,
            TableEvent::UntrackedNewKey => &writer.untracked_new_keys,
            TableEvent::Eviction => &writer.evictions,
        };
        // ORDERING: Relaxed load and store, not a read-modify-write: every writer of these
        // counts holds the shard's insert lock, whose acquire and release order the writes, so
        // the load reads the latest count. Readers load with Relaxed (`stats`), or, for
        // `reassignments`, after an Acquire load of a state published after the count.
        let count = counter.load(Ordering::Relaxed);
        counter.store(count.wrapping_add(1), Ordering::Relaxed);
    }

    /// How many times an entry of `shard` has left its key: reclaims, evictions and removals.
    /// A reclaim or eviction is counted after its slot is claimed and before the new key's
    /// first state is published; a removal after its entry's hint is cleared, before the
    /// insert lock is released (so before the key's next entry is published).
    #[inline]
    pub(crate) fn reassignments(&self, shard: usize) -> u64 {
        let writer = &self.writers[shard];
        // ORDERING: Relaxed. A caller that has loaded (with Acquire) a state published after a
        // reassignment sees its count, the count being sequenced before that Release store
        // (for a removal: before the insert lock's release, which the next insert's acquire of
        // it follows); one that loads before its own compare-and-swap on a slot cannot see a
        // reassignment that claims the slot from the value that CAS wrote (read-write coherence
        // through the slot's release sequence).
        writer.reclaims.load(Ordering::Relaxed)
            + writer.evictions.load(Ordering::Relaxed)
            // ORDERING: Acquire, pairs with the Release increment of `detach`: a reader that
            // sees a removal then reads the hint word it cleared (see `detach`).
            + writer.removals.load(Ordering::Acquire)
    }

    pub(crate) fn stats(&self) -> Stats {
        // ORDERING: Relaxed loads of statistics; no other memory depends on them.
        let sum = |counter: fn(&ShardWriter) -> &AtomicU64| {
            self.writers
                .iter()
                .map(|writer| counter(writer).load(Ordering::Relaxed))
                .sum()
        };
        Stats {
            entries: self.entries() as u64,
            inserts: sum(|writer| &writer.inserts),
            reclaims: sum(|writer| &writer.reclaims),
            refused_new_keys: sum(|writer| &writer.refused_new_keys),
            untracked_new_keys: sum(|writer| &writer.untracked_new_keys),
            evictions: sum(|writer| &writer.evictions),
            removals: sum(|writer| &writer.removals),
            ..Stats::default()
        }
    }

    pub(crate) fn entries(&self) -> usize {
        self.buckets
            .iter()
            .zip(self.hints.iter())
            .map(|(bucket, hints)| {
                // ORDERING: Relaxed; a monitoring count, no memory is read through it.
                let hint_word = hints.load(Ordering::Relaxed);
                bucket
                    .slots
                    .iter()
                    .enumerate()
                    // A removed key's entry (its hint cleared) is no longer an entry.
                    .filter(|&(index, _)| hints::hint_at(hint_word, index) != 0)
                    // ORDERING: Relaxed; as above.
                    .filter(|(_, slot)| slot.state().load(Ordering::Relaxed) != VACANT)
                    .count()
            })
            .sum()
    }

    pub(crate) fn shard_count(&self) -> usize {
        self.writers.len()
    }

    pub(crate) fn slot_count(&self) -> usize {
        self.buckets.len() * SLOTS_PER_BUCKET
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.buckets.len() * (core::mem::size_of::<Bucket<S>>() + core::mem::size_of::<AtomicU64>())
            + self.writers.len() * Self::SHARD_OVERHEAD_BYTES
            + core::mem::size_of::<Self>()
    }
}

impl<S> Table<S> {
    /// How many live keys the table was sized for (as requested at construction).
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// What a new key gets when every slot it may use is live.
    pub(crate) fn when_full(&self) -> WhenFull {
        self.when_full
    }

    /// The key hasher (seeded per table).
    #[inline]
    pub(crate) fn hasher(&self) -> &ahash::RandomState {
        &self.hasher
    }
}

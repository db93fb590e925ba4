//! A table's shape: how many buckets its capacity and shard count make, and the bytes they
//! take, checked (with every size that cannot be addressed) before anything is allocated; and
//! allocation that reports a refusal instead of aborting.

use super::lowered::LoweredSlots;
use super::options::TableOptions;
use super::slot::SlotOps;
use super::{Bucket, ShardWriter, Table, MAX_SHARDS, SLOTS_PER_BUCKET};
use crate::engine::error::BuildError;
use crate::sync::{AtomicU64, Mutex};
use alloc::boxed::Box;
use alloc::vec::Vec;
use crossbeam_utils::CachePadded;

impl<S: SlotOps> Table<S> {
    /// Allocates the table `options` describe (and writes every slot's marker, so its memory
    /// is resident from here on), or says why it cannot.
    pub(crate) fn new(options: &TableOptions) -> Result<Self, BuildError> {
        let capacity = options.capacity;
        let shards = options.shards();
        let (buckets_per_shard, bucket_count, total_bytes) = Self::layout(capacity, shards)?;
        let buckets = try_boxed_slice(bucket_count, total_bytes, || Bucket {
            slots: core::array::from_fn(|_| S::vacant()),
        })?;
        let hints = try_boxed_slice(bucket_count, total_bytes, || AtomicU64::new(0))?;
        let writers = try_boxed_slice(shards, total_bytes, || {
            CachePadded::new(ShardWriter {
                insert_lock: Mutex::new(LoweredSlots::default()),
                inserts: AtomicU64::new(0),
                reclaims: AtomicU64::new(0),
                refused_new_keys: AtomicU64::new(0),
                untracked_new_keys: AtomicU64::new(0),
                evictions: AtomicU64::new(0),
                removals: AtomicU64::new(0),
                new_key_floor: AtomicU64::new(0),
            })
        })?;
        Ok(Table {
            buckets,
            hints,
            writers,
            shard_shift: 32 - shards.ilog2(),
            buckets_per_shard: buckets_per_shard as u64,
            capacity,
            when_full: options.when_full,
            hasher: options.hasher(),
        })
    }

    /// The largest capacity a table may have: placement draws a bucket from 32 hash bits, so at
    /// most 2^32 − 1 buckets of slots, less the headroom (the allocator may refuse far less).
    pub(crate) const MAX_CAPACITY: usize = {
        let slots = (u32::MAX as usize).saturating_mul(SLOTS_PER_BUCKET);
        slots / (S::HEADROOM_DIVISOR + 1) * S::HEADROOM_DIVISOR
    };

    /// Bytes a shard costs beyond its buckets and hints.
    pub(super) const SHARD_OVERHEAD_BYTES: usize = core::mem::size_of::<CachePadded<ShardWriter>>();

    /// The shape of a table of `capacity` keys in `shards` shards: buckets per shard, buckets
    /// in all, and the bytes they and the shards' writers take; or why it cannot be built.
    /// Checked before any allocation.
    fn layout(capacity: usize, shards: usize) -> Result<(usize, usize, usize), BuildError> {
        if capacity == 0 {
            return Err(BuildError::ZeroCapacity);
        }
        if shards == 0 || !shards.is_power_of_two() {
            return Err(BuildError::ShardsNotPowerOfTwo { shards });
        }
        let too_large = || BuildError::CapacityTooLarge {
            capacity,
            max: Self::MAX_CAPACITY,
        };
        // Headroom, so that the requested number of live keys fits before a new key finds both
        // its buckets full (see the module documentation).
        let slots = capacity
            .checked_add(capacity / S::HEADROOM_DIVISOR)
            .ok_or_else(too_large)?;
        // At most one shard per bucket's worth of slots (at least one: `slots >= 1`), a power of
        // two.
        let max_shards = 1 << slots.div_ceil(SLOTS_PER_BUCKET).min(MAX_SHARDS).ilog2();
        if shards > max_shards {
            return Err(BuildError::TooManyShards {
                shards,
                max: max_shards,
            });
        }
        let slots_per_shard = slots.div_ceil(shards);
        let buckets_per_shard = slots_per_shard.div_ceil(SLOTS_PER_BUCKET).max(1);
        // Placement maps a 32-bit half of the hash onto the table's buckets.
        let bucket_count = buckets_per_shard
            .checked_mul(shards)
            .filter(|&count| count <= u32::MAX as usize)
            .ok_or_else(too_large)?;
        let total_bytes = bucket_count
            .checked_mul(core::mem::size_of::<Bucket<S>>() + core::mem::size_of::<AtomicU64>())
            .and_then(|bytes| bytes.checked_add(shards * Self::SHARD_OVERHEAD_BYTES))
            .filter(|&bytes| bytes <= isize::MAX as usize)
            .ok_or_else(too_large)?;
        Ok((buckets_per_shard, bucket_count, total_bytes))
    }
}

/// `len` values made by `make`, in one allocation, or the table's failed allocation of
/// `table_bytes` if the allocator cannot provide it (rather than aborting the process).
fn try_boxed_slice<T>(
    len: usize,
    table_bytes: usize,
    make: impl FnMut() -> T,
) -> Result<Box<[T]>, BuildError> {
    let mut values = Vec::new();
    values
        .try_reserve_exact(len)
        .map_err(|_| BuildError::AllocationFailed { bytes: table_bytes })?;
    values.extend(core::iter::repeat_with(make).take(len));
    Ok(values.into_boxed_slice())
}

//! Placement: from a key's hash to the shard, the two candidate buckets and the one-byte hint.
//!
//! The shard comes from the hash's low bits; the buckets from two (nearly) independent high
//! halves, mapped onto the shard's bucket count by multiply-shift (no division, no power-of-two
//! rounding); the hint from bits 24..32, which pick neither the shard (in tables of fewer than
//! 2^24 shards) nor the first bucket, so the hints of one bucket's keys are independent.

/// A multiplier that spreads a hash's low bits into its high bits (odd, so bijective).
const SECOND_BUCKET_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// Where a key may live: 16 slots, the 8 of each of its two buckets in one shard.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placement {
    /// The key's one-byte hint (never 0).
    pub(super) hint: u8,
    pub(super) shard: usize,
    pub(super) first_bucket: usize,
    pub(super) second_bucket: usize,
}

impl Placement {
    /// The placement of `hash` in a table of `shard_mask + 1` shards of `buckets_per_shard`
    /// buckets.
    #[inline]
    pub(super) fn of(hash: u64, shard_mask: u64, buckets_per_shard: u64) -> Placement {
        let first = ((hash >> 32) * buckets_per_shard) >> 32;
        let second = ((hash.wrapping_mul(SECOND_BUCKET_MIX) >> 32) * buckets_per_shard) >> 32;
        Placement {
            hint: ((hash >> 24) as u8).max(1),
            shard: (hash & shard_mask) as usize,
            first_bucket: first as usize,
            second_bucket: second as usize,
        }
    }

    /// The first `Some` that `look` returns for the candidate buckets, in probe order.
    #[inline]
    pub(super) fn probe<T>(self, mut look: impl FnMut(usize) -> Option<T>) -> Option<T> {
        if let Some(found) = look(self.first_bucket) {
            return Some(found);
        }
        if self.second_bucket != self.first_bucket {
            return look(self.second_bucket);
        }
        None
    }

    /// The candidate buckets, in probe order, without repeats.
    #[inline]
    pub(super) fn buckets(self) -> impl Iterator<Item = usize> {
        let second = (self.second_bucket != self.first_bucket).then_some(self.second_bucket);
        core::iter::once(self.first_bucket).chain(second)
    }
}

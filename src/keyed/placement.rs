//! Placement: from a key's hash to the shard, the two candidate buckets and the one-byte hint.
//!
//! The shard comes from the hash's low bits; the buckets from two (nearly) independent high
//! halves, mapped by multiply-shift (no division, no power-of-two rounding) onto the shard's
//! buckets for the first and onto the others for the second, so the two always differ; the hint from bits 24..32, which pick neither the shard (in tables of fewer than
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
    /// What the second bucket is drawn from (see [`second_bucket`](Self::second_bucket)),
    /// computed only when a lookup misses in the first.
    second_draw: u64,
    /// The other buckets of the shard the second is drawn among: its bucket count less one.
    other_buckets: u64,
}

impl Placement {
    /// The placement of `hash` in a table of `shard_mask + 1` shards of `buckets_per_shard`
    /// buckets.
    #[inline]
    pub(super) fn of(hash: u64, shard_mask: u64, buckets_per_shard: u64) -> Placement {
        let first = ((hash >> 32) * buckets_per_shard) >> 32;
        Placement {
            hint: ((hash >> 24) as u8).max(1),
            shard: (hash & shard_mask) as usize,
            first_bucket: first as usize,
            second_draw: hash.wrapping_mul(SECOND_BUCKET_MIX) >> 32,
            other_buckets: buckets_per_shard - 1,
        }
    }

    /// The second candidate bucket: drawn uniformly among the shard's other buckets, so a key
    /// has 16 slots whenever its shard has two buckets or more (a second bucket drawn among all
    /// of them, the first included, left one key in `buckets` with only 8: the first refusals
    /// of small tables below their capacity). The first bucket itself in a one-bucket shard.
    #[inline]
    pub(super) fn second_bucket(self) -> usize {
        let drawn = ((self.second_draw * self.other_buckets) >> 32) as usize;
        // Skips the first bucket: `drawn` ranges over `other_buckets` values.
        drawn + usize::from(drawn >= self.first_bucket && self.other_buckets != 0)
    }

    /// The first `Some` that `look` returns for the candidate buckets, in probe order.
    #[inline]
    pub(super) fn probe<T>(self, mut look: impl FnMut(usize) -> Option<T>) -> Option<T> {
        if let Some(found) = look(self.first_bucket) {
            return Some(found);
        }
        if self.other_buckets != 0 {
            return look(self.second_bucket());
        }
        None
    }

    /// The candidate buckets, in probe order, without repeats.
    #[inline]
    pub(super) fn buckets(self) -> impl Iterator<Item = usize> + Clone {
        let second = (self.other_buckets != 0).then(|| self.second_bucket());
        core::iter::once(self.first_bucket).chain(second)
    }
}

//! Placement: from a key's hash to the shard, the two candidate buckets and the one-byte hint.
//!
//! The first bucket is drawn over all the table's buckets from the hash's high half by
//! multiply-shift (no division, no power-of-two rounding), so a lookup finds it from the hash
//! and the bucket count alone. The shard is the top bits of that same half: with `2^b` shards
//! of `n` buckets each, `⌊x·2^b / 2^32⌋` is the shard whose range `⌊x·2^b·n / 2^32⌋` falls in,
//! so the two agree without a division. The second bucket is drawn from a nearly independent
//! half among the shard's other buckets, so the two always differ and one insert lock covers
//! both. The hint comes from bits 24..32, which pick neither, so the hints of one bucket's keys
//! are independent.

/// A multiplier that spreads a hash's low bits into its high bits (odd, so bijective).
const SECOND_BUCKET_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// Where a key may live: 16 slots, the 8 of each of its two buckets in one shard. Buckets are
/// numbered over the whole table.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placement {
    /// The key's one-byte hint (never 0).
    pub(super) hint: u8,
    pub(super) first_bucket: usize,
    /// The hash's high half, which drew the first bucket and names the shard.
    high: u64,
    shard_shift: u32,
    /// What the second bucket is drawn from (see [`second_bucket`](Self::second_bucket)),
    /// computed only when a lookup misses in the first.
    second_draw: u64,
    /// The other buckets of the shard the second is drawn among: its bucket count less one.
    other_buckets: u64,
}

impl Placement {
    /// The placement of `hash` in a table of `bucket_count` buckets (at most 2^32), in shards
    /// of `buckets_per_shard` buckets picked by the top `32 - shard_shift` bits of the hash's
    /// high half.
    #[inline]
    pub(super) fn of(
        hash: u64,
        bucket_count: u64,
        shard_shift: u32,
        buckets_per_shard: u64,
    ) -> Placement {
        let high = hash >> 32;
        Placement {
            hint: ((hash >> 24) as u8).max(1),
            first_bucket: ((high * bucket_count) >> 32) as usize,
            high,
            shard_shift,
            second_draw: hash.wrapping_mul(SECOND_BUCKET_MIX) >> 32,
            other_buckets: buckets_per_shard - 1,
        }
    }

    /// The key's shard, whose range of buckets holds the first bucket.
    #[inline]
    pub(super) fn shard(self) -> usize {
        (self.high >> self.shard_shift) as usize
    }

    /// The second candidate bucket: drawn uniformly among the shard's other buckets, so a key
    /// has 16 slots whenever its shard has two buckets or more (a second bucket drawn among all
    /// of them, the first included, left one key in `buckets` with only 8: the first refusals
    /// of small tables below their capacity). The first bucket itself in a one-bucket shard.
    #[inline]
    pub(super) fn second_bucket(self) -> usize {
        let drawn = ((self.second_draw * self.other_buckets) >> 32) as usize;
        // Skips the first bucket: `drawn` ranges over `other_buckets` values.
        let shard_start = self.shard() * (self.other_buckets as usize + 1);
        let first_in_shard = self.first_bucket - shard_start;
        shard_start + drawn + usize::from(drawn >= first_in_shard && self.other_buckets != 0)
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

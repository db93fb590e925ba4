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
pub(crate) struct Placement {
    /// The key's one-byte hint (never 0).
    pub(crate) hint: u8,
    pub(crate) first_bucket: usize,
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
    pub(crate) fn of(
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
    pub(crate) fn shard(self) -> usize {
        (self.high >> self.shard_shift) as usize
    }

    /// The second candidate bucket: drawn uniformly among the shard's other buckets, so a key
    /// has 16 slots whenever its shard has two buckets or more (a second bucket drawn among all
    /// of them, the first included, left one key in `buckets` with only 8: the first refusals
    /// of small tables below their capacity). The first bucket itself in a one-bucket shard.
    #[inline]
    pub(crate) fn second_bucket(self) -> usize {
        let drawn = ((self.second_draw * self.other_buckets) >> 32) as usize;
        // Skips the first bucket: `drawn` ranges over `other_buckets` values.
        let shard_start = self.shard() * (self.other_buckets as usize + 1);
        let first_in_shard = self.first_bucket - shard_start;
        shard_start + drawn + usize::from(drawn >= first_in_shard && self.other_buckets != 0)
    }

    /// The first `Some` that `look` returns for the candidate buckets, in probe order.
    #[inline]
    pub(crate) fn probe<T>(self, mut look: impl FnMut(usize) -> Option<T>) -> Option<T> {
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
    pub(crate) fn buckets(self) -> impl Iterator<Item = usize> + Clone {
        let second = (self.other_buckets != 0).then(|| self.second_bucket());
        core::iter::once(self.first_bucket).chain(second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes to place: edge values of the high half, and a xorshift sequence.
    fn hashes() -> impl Iterator<Item = u64> {
        let edges = [
            0,
            u64::MAX,
            0xFFFF_FFFF,
            0xFFFF_FFFF_0000_0000,
            1 << 63,
            1 << 32,
        ];
        let mut state = 0x243F_6A88_85A3_08D3u64;
        let random = core::iter::repeat_with(move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        });
        edges.into_iter().chain(random.take(20_000))
    }

    #[test]
    fn both_buckets_lie_in_the_shard_its_top_bits_name_and_differ() {
        for shard_bits in [0u32, 1, 3, 8, 16, 24] {
            let shards = 1u64 << shard_bits;
            for buckets_per_shard in [1u64, 2, 3, 7, 8, 100, 255] {
                let bucket_count = shards * buckets_per_shard;
                if bucket_count > u64::from(u32::MAX) {
                    continue;
                }
                for hash in hashes() {
                    let placement =
                        Placement::of(hash, bucket_count, 32 - shard_bits, buckets_per_shard);
                    let shard = placement.shard() as u64;
                    assert!(shard < shards);
                    let range = shard * buckets_per_shard..(shard + 1) * buckets_per_shard;
                    let first = placement.first_bucket as u64;
                    let second = placement.second_bucket() as u64;
                    assert!(
                        range.contains(&first),
                        "{hash:#x}: first {first} outside {range:?}"
                    );
                    assert!(
                        range.contains(&second),
                        "{hash:#x}: second {second} outside {range:?}"
                    );
                    assert_eq!(first == second, buckets_per_shard == 1, "{hash:#x}");
                    let candidates: Vec<usize> = placement.buckets().collect();
                    assert_eq!(candidates.len(), if buckets_per_shard == 1 { 1 } else { 2 });
                }
            }
        }
    }

    #[test]
    fn every_bucket_is_a_first_bucket_about_equally_often() {
        // 4 shards of 5 buckets: 20 buckets, each drawn from a 1/20 share of the high half.
        let mut counts = [0u32; 20];
        for hash in hashes() {
            counts[Placement::of(hash, 20, 30, 5).first_bucket] += 1;
        }
        let expected = 20_006.0 / 20.0;
        for (bucket, &count) in counts.iter().enumerate() {
            assert!(
                (f64::from(count) - expected).abs() < expected * 0.1,
                "bucket {bucket}: {count} of 20,006"
            );
        }
    }
}

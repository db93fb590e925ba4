//! Construction: the errors a table can be refused with, the sizes it reports, and when a table
//! of live keys first refuses a new key (the figures of the `keyed` module documentation).

use crate::common::keyed::{table, TableShape};
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{BuildError, Gcra, KeyedLimiter, ManualClock, Timestamp};

/// What building a table of `u64` keys in key mode `M` gives: its shard count, or the error.
fn built_shards<M: KeyMode<u64>>(capacity: usize, shards: usize) -> Result<usize, BuildError> {
    KeyedLimiter::<u64, _>::builder(Gcra::per_second(1).unwrap())
        .capacity(capacity)
        .shards(shards)
        .clock(ManualClock::new())
        .key_mode::<M>()
        .build()
        .map(|limiter| limiter.shards())
}

fn table_construction_errors<M: KeyMode<u64>>() {
    let build = built_shards::<M>;
    assert_eq!(build(0, 1), Err(BuildError::ZeroCapacity));
    for shards in [0, 3, 6, 12, 1_000] {
        assert_eq!(
            build(1_000, shards),
            Err(BuildError::ShardsNotPowerOfTwo { shards })
        );
    }
    for capacity in [usize::MAX, usize::MAX / 2] {
        match build(capacity, 4) {
            Err(BuildError::CapacityTooLarge {
                capacity: asked,
                max,
            }) => {
                assert_eq!(asked, capacity);
                // Placement draws a bucket of 8 slots from 32 bits of the hash.
                assert!(max < 8 << 32);
            }
            other => panic!("capacity {capacity}: {other:?}"),
        }
    }
    for shards in [1, 2, 4, 64, 128] {
        assert_eq!(build(1_000, shards), Ok(shards));
    }
    // At most one shard per bucket of 8 slots: 1,000 keys have 1,500 (hashed) or 1,250
    // (exact) slots, 188 or 157 buckets, so at most 128 shards; one key has one bucket.
    assert_eq!(
        build(1_000, 256),
        Err(BuildError::TooManyShards {
            shards: 256,
            max: 128
        })
    );
    assert_eq!(build(1, 1), Ok(1));
    assert_eq!(
        build(1, 16),
        Err(BuildError::TooManyShards { shards: 16, max: 1 })
    );
    // And never more than 2^24, however large the table (checked before any allocation).
    assert_eq!(
        build(1 << 40, 1 << 25),
        Err(BuildError::TooManyShards {
            shards: 1 << 25,
            max: 1 << 24
        })
    );
}

#[test]
fn table_construction_errors_hashed() {
    table_construction_errors::<Hashed>();
    assert_eq!(
        KeyedLimiter::new(Gcra::per_second(1).unwrap(), 0)
            .map(|limiter: KeyedLimiter<u64, _>| limiter.capacity()),
        Err(BuildError::ZeroCapacity)
    );
    assert!(BuildError::ShardsNotPowerOfTwo { shards: 3 }
        .to_string()
        .contains('3'));
    assert!(BuildError::ZeroCapacity.to_string().contains("zero"));
}

#[test]
fn table_construction_errors_exact() {
    table_construction_errors::<Exact>();
}

#[test]
fn a_table_reports_its_size() {
    let clock = ManualClock::new();
    let quota = Gcra::per_second(1).unwrap();
    let hashed = table::<Hashed, _>(quota, TableShape::capacity(1_000), &clock);
    assert_eq!(hashed.capacity(), 1_000);
    assert!(hashed.slots() >= 1_000 + 1_000 / 3);
    assert_eq!(hashed.slots() % 8, 0);
    assert!(hashed.bytes_per_key() <= 32);
    assert!(hashed.memory_bytes() >= hashed.slots() * 16);
    let exact = table::<Exact, _>(quota, TableShape::capacity(1_000), &clock);
    assert!(exact.memory_bytes() >= exact.slots() * 24);
    // The most shards the default rule gives a 100,000-key table, whatever the core count
    // (at least 2,048 keys per shard: 32), cost no more than a byte per key over one shard.
    for shards in [1, 32] {
        let shape = TableShape::capacity(100_000).shards(shards);
        let hashed = table::<Hashed, _>(quota, shape, &clock);
        assert_eq!(hashed.bytes_per_key(), 26, "{shards} shards");
        let exact = table::<Exact, _>(quota, shape, &clock);
        assert_eq!(exact.bytes_per_key(), 31, "{shards} shards");
    }
    let default_shards = KeyedLimiter::<u64, _>::new(quota, 100_000)
        .unwrap()
        .shards();
    assert!(default_shards <= 32, "{default_shards} shards");
    // A single key in a table of one: it fits, and is limited.
    let smallest = table::<Hashed, _>(quota, TableShape::capacity(1), &clock);
    assert!(smallest.check(&5).is_allowed());
    assert!(smallest.check(&5).is_denied());
}

/// Fills a table of key mode `M` (capacity `capacity`, hash seed `seed`) with distinct live
/// keys (one unit of a one-per-hour quota each, at one instant: none is reclaimable) until the
/// first new key is refused; returns how many were stored, as a fraction of the capacity.
fn first_refusal<M: KeyMode<u64>>(capacity: usize, seed: u64) -> f64 {
    let shape = TableShape::capacity(capacity).seed(seed);
    let limiter = table::<M, _>(Gcra::per_hour(1).unwrap(), shape, &ManualClock::new());
    // Scattered keys (an odd multiplier is a bijection on u64).
    let mut stored = 0u64;
    for index in 0.. {
        let key = (index as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if limiter.check_at(&key, Timestamp::ORIGIN).is_untracked() {
            break;
        }
        stored += 1;
    }
    assert_eq!(limiter.stats().refused_new_keys, 1);
    assert_eq!(limiter.entries() as u64, stored);
    stored as f64 / capacity as f64
}

/// The module documentation's figures for when a table full of live keys first refuses a new
/// key: `Hashed` tables hold at least their capacity, `Exact` ones at least 85 % of it.
#[test]
fn a_table_of_live_keys_first_refuses_a_new_key_where_documented() {
    for capacity in [1_000, 100_000] {
        for seed in 1..=5u64 {
            let hashed = first_refusal::<Hashed>(capacity, seed);
            assert!(
                hashed >= 1.0,
                "hashed, {capacity} keys, seed {seed}: {hashed}"
            );
            let exact = first_refusal::<Exact>(capacity, seed);
            assert!(
                exact >= 0.85,
                "exact, {capacity} keys, seed {seed}: {exact}"
            );
            eprintln!(
                "{capacity} keys, seed {seed}: first refusal at {hashed:.3} (hashed), \
                 {exact:.3} (exact) of capacity"
            );
        }
    }
}

/// Small hashed tables hold their capacity on every seed: issue 15 found a few in 10^4 tables
/// of 16, 64 and 256 keys refusing a new key below capacity (16 tables of 16 keys in 20,000
/// seeds, one as early as 81 %), where a key's second bucket happened to be its first and left
/// it 8 slots instead of 16. The second bucket is now drawn among the others.
#[test]
fn small_hashed_tables_hold_their_capacity_on_every_seed() {
    for (capacity, seeds) in [(16usize, 20_000u64), (64, 20_000), (256, 5_000)] {
        for seed in 0..seeds {
            let stored = first_refusal::<Hashed>(capacity, seed);
            assert!(
                stored >= 1.0,
                "{capacity} keys, seed {seed}: first refusal at {stored:.3} of capacity"
            );
        }
    }
}

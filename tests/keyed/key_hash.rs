//! A flow hash the caller holds (a NIC's RSS hash, a 5-tuple hash) is a `u64` key: the table
//! hashes it again with its own seed, so hashes with few varying bits (a 32-bit RSS hash has no
//! high bits at all) still spread over the whole table and fill it to its capacity.

use crate::common::keyed::{clock_at, table, TableShape};
use nanolimit::keyed::Hashed;
use nanolimit::Gcra;

/// Fills a table of capacity 20,000 with the live keys `hashes` names, asserting none is refused:
/// a table holds its capacity in caller hashes however few of their bits vary.
fn assert_hashes_fill_the_table(hashes: impl Iterator<Item = u64>, what: &str) {
    let clock = clock_at(0);
    let limiter = table::<Hashed, _>(
        Gcra::per_minute(1).unwrap(),
        TableShape::capacity(20_000).seed(3),
        &clock,
    );
    let mut count = 0;
    for hash in hashes {
        let decision = limiter.check(&hash);
        assert!(decision.is_allowed(), "{what}: hash {hash:#x}");
        assert!(limiter.check(&hash).is_denied(), "{what}: hash {hash:#x}");
        count += 1;
    }
    let stats = limiter.stats();
    assert_eq!(stats.refused_new_keys, 0, "{what}: {stats:?}");
    assert_eq!(stats.inserts, count, "{what}: {stats:?}");
    assert_eq!(limiter.entries(), count as usize, "{what}");
}

#[test]
fn hashes_with_only_low_bits_set_fill_the_table_to_its_capacity() {
    // A 32-bit RSS hash of sequential flows: nothing above bit 15 varies.
    assert_hashes_fill_the_table(0..20_000, "sequential");
}

#[test]
fn hashes_with_only_high_bits_set_fill_the_table_to_its_capacity() {
    assert_hashes_fill_the_table((0..20_000u64).map(|index| index << 48), "high bits");
}

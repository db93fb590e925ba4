//! The key flood of `tests/keyed/flood.rs`, measured as the operating system sees it: 10 million
//! distinct keys through a table of capacity 100,000, with a legitimate hot key interleaved,
//! while the process's resident set size (RSS) is read before the table is built, after, and
//! after the flood.
//!
//! What a user relies on: the process holds no more memory for the table than its capacity
//! times its bytes per key plus a small constant, however many distinct keys arrive, and the
//! hot key keeps its exact limit throughout.
//!
//! This binary holds this one test, so no other test allocates in the process while it
//! measures: the resident set size is the whole process's, and the test harness runs a binary's
//! tests in parallel threads of one process. That is why it is not a module of `tests/keyed/`,
//! where the other keyed tests' tables would count in its figures. Linux only (the RSS comes
//! from `/proc/self/status`); elsewhere the test checks the limits and skips the RSS figures.

mod common;

use common::at;
use common::keyed::{assert_same_decision, table, TableShape};
use nanolimit::keyed::Hashed;
use nanolimit::{Gcra, Limiter, ManualClock};

const CAPACITY: usize = 100_000;
const FLOOD_KEYS: u64 = 100 * CAPACITY as u64;
/// The goal, every key mode: at most 32 bytes per key, all overhead included.
const MAX_BYTES_PER_KEY: usize = 32;
/// Memory beyond capacity × bytes per key that the table may use (shard headers, rounding to
/// whole buckets), plus what the process may touch besides (stack, allocator bookkeeping):
/// RSS moves by whole pages.
const SMALL_CONSTANT_BYTES: usize = 256 * 1024;
/// Time between two flood keys: about twice the capacity stays live (an entry is live for one
/// emission interval), so the table is saturated and entries keep expiring.
const EMISSION_INTERVAL_NS: u64 = 100_000_000;
const STEP_NS: u64 = EMISSION_INTERVAL_NS / (2 * CAPACITY as u64);
const HOT_KEY: u64 = 0;
const HOT_KEY_EVERY: u64 = 100;

/// The resident set size in bytes, where the platform reports it.
fn resident_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kilobytes: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kilobytes * 1024)
}

#[test]
fn a_flood_of_ten_million_keys_keeps_resident_memory_within_capacity_times_bytes_per_key() {
    let quota = Gcra::per_second(10).unwrap().with_burst(10).unwrap();
    let clock = ManualClock::new();
    let reference = Limiter::with_clock(quota, clock.clone());
    let before_build = resident_bytes();
    let limiter = table::<Hashed, _>(quota, TableShape::capacity(CAPACITY), &clock);
    let after_build = resident_bytes();
    let bound = CAPACITY * limiter.bytes_per_key() + SMALL_CONSTANT_BYTES;
    assert!(limiter.bytes_per_key() <= MAX_BYTES_PER_KEY);
    assert!(limiter.memory_bytes() <= CAPACITY * MAX_BYTES_PER_KEY + SMALL_CONSTANT_BYTES);

    let (mut hot_checks, mut hot_admitted) = (0u64, 0u64);
    for index in 0..FLOOD_KEYS {
        let now_ns = index * STEP_NS;
        clock.set(at(now_ns));
        if index % HOT_KEY_EVERY == 0 {
            let keyed = limiter.check(&HOT_KEY);
            let direct = reference.check();
            assert_same_decision(&keyed, &direct, format_args!("hot key at {now_ns} ns"));
            hot_checks += 1;
            hot_admitted += u64::from(keyed.is_allowed());
        }
        let _ = limiter.check(&((1 << 40) + index));
    }
    let after_flood = resident_bytes();
    let stats = limiter.stats();
    eprintln!(
        "RSS before build {before_build:?}, after build {after_build:?}, after {FLOOD_KEYS} \
         flood keys {after_flood:?}; table {} bytes ({} per key); hot key {hot_admitted}/{hot_checks}; \
         {stats:?}",
        limiter.memory_bytes(),
        limiter.bytes_per_key()
    );
    // The flood really saturated the table and went through its slow paths.
    assert!(
        stats.refused_new_keys > 0 && stats.reclaims > 0,
        "{stats:?}"
    );
    // The hot key kept its exact limit: its burst, then one per emission interval.
    let last_hot_check_ns = (FLOOD_KEYS - 1) / HOT_KEY_EVERY * HOT_KEY_EVERY * STEP_NS;
    assert_eq!(hot_admitted, 10 + last_hot_check_ns / EMISSION_INTERVAL_NS);

    if let (Some(before_build), Some(after_build), Some(after_flood)) =
        (before_build, after_build, after_flood)
    {
        // Building touches every slot (they start vacant), so the table is resident from here.
        assert!(
            after_build.saturating_sub(before_build) <= bound,
            "building took {} bytes of RSS, bound {bound}",
            after_build - before_build
        );
        assert!(
            after_build - before_build >= limiter.memory_bytes() / 2,
            "the table should be resident after building: RSS grew by {} bytes",
            after_build - before_build
        );
        // Ten million distinct keys later, the process holds no more than the table's bound.
        assert!(
            after_flood.saturating_sub(before_build) <= bound,
            "RSS grew by {} bytes over the flood and build, bound {bound}",
            after_flood.saturating_sub(before_build)
        );
        assert!(
            after_flood.saturating_sub(after_build) <= SMALL_CONSTANT_BYTES,
            "RSS grew by {} bytes during the flood",
            after_flood.saturating_sub(after_build)
        );
    } else {
        eprintln!("no RSS on this platform: memory checked through memory_bytes() only");
    }
}

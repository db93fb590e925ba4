//! The keyed in-flight limiter (`nanolimit::inflight::KeyedInFlightLimiter`): sequences of
//! acquires and releases against a sequential model (a map of units in flight per key, and, for
//! a table of one bucket, its eight slots), threads on a few keys that never exceed the limit
//! and return every unit, full tables under each `WhenFull` policy, and reclaims only of
//! entries whose permits are all dropped.

use nanolimit::inflight::{AcquireError, KeyedInFlightLimiter, Permit, MAX_KEYED_IN_FLIGHT};
use nanolimit::keyed::{Hashed, KeyMode};
use nanolimit::{BuildError, WhenFull};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

/// Slots of a table of capacity 1 and one shard: one bucket, which every key shares.
const ONE_BUCKET: usize = 8;

/// A table of one bucket of 8 slots (capacity 1, one shard), with `when_full`.
fn one_bucket(limit: u64, when_full: WhenFull) -> KeyedInFlightLimiter<u32> {
    let limiter = KeyedInFlightLimiter::builder(limit)
        .capacity(1)
        .shards(1)
        .seed(7)
        .when_full(when_full)
        .build()
        .unwrap();
    assert_eq!(limiter.slots(), ONE_BUCKET);
    limiter
}

// --- Bad input -------------------------------------------------------------------------------

#[test]
fn limits_outside_one_to_the_maximum_are_errors() {
    let build = |limit| KeyedInFlightLimiter::<u64>::new(limit, 100);
    assert_eq!(build(0).unwrap_err(), BuildError::ZeroLimit);
    assert_eq!(
        build(MAX_KEYED_IN_FLIGHT + 1).unwrap_err(),
        BuildError::LimitTooLarge {
            limit: MAX_KEYED_IN_FLIGHT + 1,
            max: MAX_KEYED_IN_FLIGHT
        }
    );
    assert_eq!(
        build(u64::MAX).unwrap_err(),
        BuildError::LimitTooLarge {
            limit: u64::MAX,
            max: MAX_KEYED_IN_FLIGHT
        }
    );
    let largest = build(MAX_KEYED_IN_FLIGHT).unwrap();
    let all = largest.try_acquire_many(&1, MAX_KEYED_IN_FLIGHT).unwrap();
    assert_eq!((all.in_flight(), all.remaining()), (MAX_KEYED_IN_FLIGHT, 0));
    assert!(largest.try_acquire(&1).unwrap_err().is_busy());
    drop(all);
    assert_eq!(largest.remaining(&1), MAX_KEYED_IN_FLIGHT);
    assert_eq!(
        KeyedInFlightLimiter::<u64>::new(1, 0).unwrap_err(),
        BuildError::ZeroCapacity
    );
    assert_eq!(
        KeyedInFlightLimiter::<u64>::builder(1)
            .shards(3)
            .build()
            .unwrap_err(),
        BuildError::ShardsNotPowerOfTwo { shards: 3 }
    );
}

#[test]
fn zero_units_is_an_empty_permit_and_above_the_limit_is_an_error() {
    let limiter = KeyedInFlightLimiter::<str>::new(2, 100).unwrap();
    let _both = limiter.try_acquire_many("k", 2).unwrap();
    let empty = limiter.try_acquire_many("k", 0).unwrap();
    assert_eq!((empty.units(), empty.is_untracked()), (0, false));
    drop(empty);
    assert_eq!(limiter.in_flight("k"), 2);
    assert_eq!(
        limiter.try_acquire_many("k", 3).unwrap_err(),
        AcquireError::AboveLimit { units: 3, limit: 2 }
    );
    let busy = limiter.try_acquire("k").unwrap_err();
    assert_eq!(busy.to_string(), "2 of 2 units in flight; 1 requested");
    assert!(!busy.is_table_full() && busy.is_busy() && !busy.is_queued());
}

// --- Full tables -----------------------------------------------------------------------------

#[test]
fn a_full_table_refuses_under_deny_admits_untracked_under_allow_and_never_evicts() {
    assert_eq!(
        KeyedInFlightLimiter::<u32>::builder(2)
            .when_full(WhenFull::EvictClosestToFresh)
            .build()
            .unwrap_err(),
        BuildError::EvictionNotSupported
    );

    let deny = one_bucket(2, WhenFull::Deny);
    let held: Vec<_> = (0..8).map(|key| deny.try_acquire(&key).unwrap()).collect();
    let full = deny.try_acquire(&100).unwrap_err();
    assert_eq!(full, AcquireError::TableFull);
    assert!(full.is_table_full() && !full.is_busy() && full.remaining().is_none());
    assert_eq!(deny.remaining(&100), 0); // it would be refused
    assert_eq!(deny.in_flight(&100), 0);
    // Present keys still take their second unit.
    let second = deny.try_acquire(&3).unwrap();
    assert_eq!((second.in_flight(), second.remaining()), (2, 0));
    let stats = deny.stats();
    assert_eq!(
        (stats.inserts, stats.refused_new_keys, stats.evictions),
        (8, 1, 0)
    );
    drop((held, second));

    let allow = one_bucket(2, WhenFull::Allow);
    let held: Vec<_> = (0..8).map(|key| allow.try_acquire(&key).unwrap()).collect();
    assert_eq!(allow.remaining(&100), 2); // it would be admitted, untracked
    let untracked: Vec<_> = (0..3)
        .map(|_| allow.try_acquire_many(&100, 2).unwrap())
        .collect();
    assert!(untracked
        .iter()
        .all(|permit| permit.is_untracked() && permit.in_flight() == 2));
    assert_eq!(allow.in_flight(&100), 0);
    drop(untracked); // releases nothing: no key's count moves
    assert!((0..8).all(|key| allow.in_flight(&key) == 1));
    assert_eq!(allow.stats().untracked_new_keys, 3);
    assert_eq!(allow.stats().evictions, 0);
    drop(held);
    // With the units dropped, the new key takes a slot again.
    assert!(!allow.try_acquire(&100).unwrap().is_untracked());
}

#[test]
fn an_entry_is_reclaimed_for_another_key_only_once_its_permits_are_all_dropped() {
    let limiter = one_bucket(3, WhenFull::Deny);
    let first_of_0 = limiter.try_acquire(&0).unwrap();
    let second_of_0 = limiter.try_acquire_many(&0, 2).unwrap();
    let others: Vec<_> = (1..8)
        .map(|key| limiter.try_acquire(&key).unwrap())
        .collect();
    assert!(limiter.try_acquire(&8).unwrap_err().is_table_full());
    drop(first_of_0);
    assert_eq!(limiter.in_flight(&0), 2);
    assert!(limiter.try_acquire(&8).unwrap_err().is_table_full());
    drop(second_of_0);
    assert_eq!(limiter.entries(), ONE_BUCKET); // key 0's entry is still there, fresh
    let eight = limiter.try_acquire(&8).unwrap();
    assert_eq!(limiter.stats().reclaims, 1);
    assert_eq!((limiter.in_flight(&8), limiter.in_flight(&0)), (1, 0));
    // Key 0 left the table: with it full again, key 0 is a refused new key.
    assert!(limiter.try_acquire(&0).unwrap_err().is_table_full());
    drop(eight);
    let zero = limiter.try_acquire(&0).unwrap();
    assert_eq!(limiter.stats().reclaims, 2);
    drop((zero, others));
    assert!((0..9).all(|key| limiter.remaining(&key) == 3));
}

#[test]
fn a_permit_released_on_another_thread_returns_its_units() {
    let limiter = KeyedInFlightLimiter::<u64>::new(1, 100).unwrap();
    let permit = limiter.try_acquire(&5).unwrap();
    thread::scope(|scope| {
        scope.spawn(move || drop(permit)).join().unwrap();
    });
    assert_eq!(limiter.in_flight(&5), 0);
}

// --- Sequential model ------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Step {
    Acquire {
        key: u32,
        units: u64,
    },
    /// Drops the held permit at this index (modulo how many are held), if any.
    Release(usize),
}

fn step(keys: u32, max_units: u64) -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..keys, 0..=max_units).prop_map(|(key, units)| Step::Acquire { key, units }),
        2 => any::<usize>().prop_map(Step::Release),
    ]
}

/// The model of a table with room for every key: units in flight per key.
fn roomy_table_matches_the_model<M: KeyMode<u32>>(
    limiter: &KeyedInFlightLimiter<u32, M>,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let limit = limiter.limit();
    let mut in_flight: HashMap<u32, u64> = HashMap::new();
    let mut held: Vec<(u32, Permit<'_, KeyedInFlightLimiter<u32, M>>)> = Vec::new();
    for step in steps {
        match *step {
            Step::Acquire { key, units } => {
                let before = in_flight.get(&key).copied().unwrap_or(0);
                let outcome = limiter.try_acquire_many(&key, units);
                if units > limit {
                    prop_assert_eq!(
                        outcome.unwrap_err(),
                        AcquireError::AboveLimit { units, limit }
                    );
                } else if before + units > limit {
                    let busy = outcome.unwrap_err();
                    prop_assert_eq!(
                        busy,
                        AcquireError::Busy {
                            limit,
                            in_flight: before,
                            requested: units,
                            queued: false,
                        }
                    );
                    prop_assert_eq!(busy.remaining(), Some(limit - before));
                } else {
                    let permit = outcome.unwrap();
                    prop_assert!(!permit.is_untracked());
                    prop_assert_eq!(permit.units(), units);
                    if units > 0 {
                        prop_assert_eq!(permit.in_flight(), before + units);
                        prop_assert_eq!(permit.remaining(), limit - before - units);
                    }
                    *in_flight.entry(key).or_default() += units;
                    held.push((key, permit));
                }
            }
            Step::Release(index) => {
                if !held.is_empty() {
                    let (key, permit) = held.swap_remove(index % held.len());
                    *in_flight.get_mut(&key).unwrap() -= permit.units();
                }
            }
        }
        for (key, &units) in &in_flight {
            prop_assert_eq!(limiter.in_flight(key), units);
            prop_assert_eq!(limiter.remaining(key), limit - units);
        }
    }
    drop(held);
    for key in in_flight.keys() {
        prop_assert_eq!(limiter.remaining(key), limit);
    }
    Ok(())
}

/// A slot of the one-bucket model: its key and units in flight.
type ModelSlot = Option<(u32, u64)>;

/// The model of a table of one bucket: 8 slots in the table's order. A new key takes the first
/// vacant slot, else the first slot with nothing in flight (reclaimed), else the `WhenFull`
/// policy applies (as the keyed table's `choose_slot` does).
fn one_bucket_table_matches_the_model(
    limiter: &KeyedInFlightLimiter<u32>,
    allow: bool,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let limit = limiter.limit();
    let mut slots: [ModelSlot; ONE_BUCKET] = [None; ONE_BUCKET];
    // Held permits: their key and whether they are counted in a slot.
    let mut held: Vec<(u32, bool, Permit<'_, KeyedInFlightLimiter<u32>>)> = Vec::new();
    let (mut reclaims, mut refused, mut untracked) = (0, 0, 0);
    for step in steps {
        match *step {
            Step::Acquire { key, units } => {
                let outcome = limiter.try_acquire_many(&key, units);
                let present = slots
                    .iter()
                    .position(|slot| matches!(slot, Some((k, _)) if *k == key));
                if units > limit {
                    prop_assert!(outcome.unwrap_err().is_above_limit());
                    continue;
                }
                if units == 0 {
                    prop_assert_eq!(outcome.unwrap().units(), 0);
                    continue;
                }
                let target = match present {
                    Some(index) => Some(index),
                    None => {
                        let vacant = slots.iter().position(Option::is_none);
                        let fresh = slots.iter().position(|slot| matches!(slot, Some((_, 0))));
                        if vacant.is_none() && fresh.is_some() {
                            reclaims += 1;
                        }
                        vacant.or(fresh)
                    }
                };
                match target {
                    Some(index) => {
                        let before = if present.is_some() {
                            slots[index].unwrap().1
                        } else {
                            0
                        };
                        if before + units > limit {
                            let busy = outcome.unwrap_err();
                            prop_assert_eq!(
                                busy,
                                AcquireError::Busy {
                                    limit,
                                    in_flight: before,
                                    requested: units,
                                    queued: false,
                                }
                            );
                            prop_assert_eq!(busy.remaining(), Some(limit - before));
                        } else {
                            let permit = outcome.unwrap();
                            prop_assert!(!permit.is_untracked());
                            prop_assert_eq!(permit.in_flight(), before + units);
                            slots[index] = Some((key, before + units));
                            held.push((key, true, permit));
                        }
                    }
                    None if allow => {
                        let permit = outcome.unwrap();
                        prop_assert!(permit.is_untracked());
                        untracked += 1;
                        held.push((key, false, permit));
                    }
                    None => {
                        prop_assert_eq!(outcome.unwrap_err(), AcquireError::TableFull);
                        refused += 1;
                    }
                }
            }
            Step::Release(index) => {
                if !held.is_empty() {
                    let (key, tracked, permit) = held.swap_remove(index % held.len());
                    if tracked {
                        let slot = slots
                            .iter_mut()
                            .flatten()
                            .find(|(k, _)| *k == key)
                            .expect("a key with units in flight keeps its slot");
                        slot.1 -= permit.units();
                    }
                }
            }
        }
        for (key, units) in slots.iter().flatten() {
            prop_assert_eq!(limiter.in_flight(key), *units);
        }
        let stats = limiter.stats();
        prop_assert_eq!(
            (
                stats.reclaims,
                stats.refused_new_keys,
                stats.untracked_new_keys,
                stats.evictions
            ),
            (reclaims, refused, untracked, 0)
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn hashed_keys_match_a_counter_model(
        limit in 1u64..6,
        steps in proptest::collection::vec(step(4, 7), 1..80),
    ) {
        let limiter = KeyedInFlightLimiter::<u32, Hashed>::new(limit, 1_000).unwrap();
        roomy_table_matches_the_model(&limiter, &steps)?;
    }

    #[test]
    fn exact_keys_match_a_counter_model(
        limit in 1u64..6,
        steps in proptest::collection::vec(step(4, 7), 1..80),
    ) {
        let limiter = KeyedInFlightLimiter::<u32>::builder(limit)
            .capacity(1_000)
            .exact_keys()
            .build()
            .unwrap();
        roomy_table_matches_the_model(&limiter, &steps)?;
    }

    #[test]
    fn a_one_bucket_table_matches_a_slot_model(
        limit in 1u64..4,
        allow in any::<bool>(),
        steps in proptest::collection::vec(step(12, 4), 1..120),
    ) {
        let when_full = if allow { WhenFull::Allow } else { WhenFull::Deny };
        let limiter = one_bucket(limit, when_full);
        one_bucket_table_matches_the_model(&limiter, allow, &steps)?;
    }
}

// --- Threads ---------------------------------------------------------------------------------

/// Threads acquire and release random units of a few keys, holding up to three permits each;
/// inside each permit a per-key atomic counter of units in use never exceeds the limit, and at
/// the end every unit is back: every key fresh, with the whole limit remaining.
fn threads_never_exceed_the_limit<M: KeyMode<u64>>(
    limiter: &KeyedInFlightLimiter<u64, M>,
    keys: u64,
    threads: u64,
    rounds: u64,
) -> u64 {
    let limit = limiter.limit();
    let inside: Vec<AtomicU64> = (0..keys).map(|_| AtomicU64::new(0)).collect();
    let served = AtomicU64::new(0);
    thread::scope(|scope| {
        for thread in 0..threads {
            let (inside, served) = (&inside, &served);
            scope.spawn(move || {
                // A small xorshift per thread: reproducible, no shared state.
                let mut random = 0x9E37_79B9_7F4A_7C15_u64 ^ (thread + 1);
                let mut next = move || {
                    random ^= random << 13;
                    random ^= random >> 7;
                    random ^= random << 17;
                    random
                };
                let mut held: Vec<(u64, Permit<'_, KeyedInFlightLimiter<u64, M>>)> = Vec::new();
                for _ in 0..rounds {
                    let key = next() % keys;
                    let units = 1 + next() % 2;
                    if let Ok(permit) = limiter.try_acquire_many(&key, units) {
                        assert!(!permit.is_untracked());
                        let now = inside[key as usize].fetch_add(units, Ordering::SeqCst) + units;
                        assert!(
                            now <= limit,
                            "{now} units of key {key} in use, limit {limit}"
                        );
                        served.fetch_add(1, Ordering::Relaxed);
                        held.push((key, permit));
                    }
                    if held.len() > 3 || (!held.is_empty() && next() % 2 == 0) {
                        let index = next() as usize % held.len();
                        let (key, permit) = held.swap_remove(index);
                        // Leave the section before the units are released.
                        inside[key as usize].fetch_sub(permit.units(), Ordering::SeqCst);
                        drop(permit);
                    }
                }
                for (key, permit) in held {
                    inside[key as usize].fetch_sub(permit.units(), Ordering::SeqCst);
                    drop(permit);
                }
            });
        }
    });
    for key in 0..keys {
        assert_eq!(limiter.in_flight(&key), 0, "key {key}");
        assert_eq!(limiter.remaining(&key), limit, "key {key}");
    }
    served.load(Ordering::Relaxed)
}

#[test]
fn threads_on_a_few_keys_never_exceed_the_limit_and_return_every_unit() {
    let limiter = KeyedInFlightLimiter::<u64>::new(3, 1_000).unwrap();
    let served = threads_never_exceed_the_limit(&limiter, 4, 4, 200_000);
    assert!(served > 1_000);
    assert_eq!(limiter.stats().inserts, 4);
}

#[test]
fn threads_on_more_keys_than_a_one_bucket_table_holds_reclaim_only_fresh_entries() {
    // 12 keys in 8 slots: new keys are refused while 8 keys have units in flight, and reclaim
    // slots as entries go fresh, while other threads acquire and release those very keys.
    let limiter = KeyedInFlightLimiter::<u64>::builder(2)
        .capacity(1)
        .shards(1)
        .exact_keys()
        .build()
        .unwrap();
    let served = threads_never_exceed_the_limit(&limiter, 12, 4, 200_000);
    assert!(served > 1_000);
    let stats = limiter.stats();
    assert!(stats.reclaims > 0, "{stats:?}");
    assert_eq!(stats.evictions, 0);
}

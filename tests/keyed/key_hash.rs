//! Checks by a hash the caller holds (`KeyHash`): a caller's hash names one key, decided exactly
//! as the same key checked by value; hashes with no high bits (a 32-bit RSS hash) still spread
//! over the whole table; concurrent checks of caller hashes admit exactly the limit.

use crate::common::keyed::{assert_same_decision, clock_at, table, TableShape, MILLISECOND_NS};
use crate::common::{at, proptest_config};
use nanolimit::{FixedWindow, Gcra, Hashed, KeyHash, Quota, Request, SlidingWindow};
use proptest::prelude::*;
use std::sync::Barrier;

/// Replays `schedule` (key, cost, reading in ms) on two tables of one quota: one checked by key,
/// one by the key's value as a caller's hash. Every decision must agree: a caller's hash is a
/// key like any other, whatever the algorithm.
fn assert_hash_checks_decide_as_key_checks<Q: Quota + PartialEq>(
    quota: Q,
    schedule: &[(u64, u64, u64)],
) {
    let clock = clock_at(0);
    let shape = TableShape::capacity(64).seed(7);
    let by_key = table::<Hashed, Q>(quota, shape, &clock);
    let by_hash = table::<Hashed, Q>(quota, shape, &clock);
    for (step, &(key, cost, reading_ms)) in schedule.iter().enumerate() {
        let request = Request::cost(cost).at(at(reading_ms * MILLISECOND_NS));
        let context = format_args!("step {step}: key {key}, cost {cost}, at {reading_ms} ms");
        let expected = by_key.check_with(&key, request);
        let actual = by_hash.check_hash_with(KeyHash::new(key), request);
        match (actual, expected) {
            (Ok(actual), Ok(expected)) => assert_same_decision(&actual, &expected, context),
            (Err(actual), Err(expected)) => assert_eq!(actual, expected, "{context}"),
            (actual, expected) => panic!("{context}: {actual:?} against {expected:?}"),
        }
        let peeked = by_hash.peek_hash_with(
            KeyHash::new(key),
            Request::new().at(at(reading_ms * MILLISECOND_NS)),
        );
        let expected_peek =
            by_key.peek_with(&key, Request::new().at(at(reading_ms * MILLISECOND_NS)));
        assert_same_decision(&peeked.unwrap(), &expected_peek.unwrap(), context);
    }
    assert_eq!(by_hash.stats(), by_key.stats());
    assert_eq!(by_hash.entries(), by_key.entries());
}

/// Schedules over 6 keys, costs 0 to 6 (the limits below are 5: some costs are errors), and
/// readings that mostly move forward by up to 400 ms and sometimes step back.
fn schedules() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    prop::collection::vec(
        (0..6u64, 0..=6u64, 0..400u64, prop::bool::weighted(0.1)),
        1..80,
    )
    .prop_map(|steps| {
        let mut reading_ms = 1_000u64;
        steps
            .into_iter()
            .map(|(key, cost, advance_ms, backwards)| {
                reading_ms = if backwards {
                    reading_ms.saturating_sub(advance_ms)
                } else {
                    reading_ms + advance_ms
                };
                (key, cost, reading_ms)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(proptest_config(64))]

    #[test]
    fn gcra_hash_checks_decide_as_key_checks(schedule in schedules()) {
        let quota = Gcra::per_second(5).unwrap();
        assert_hash_checks_decide_as_key_checks(quota, &schedule);
    }

    #[test]
    fn sliding_window_hash_checks_decide_as_key_checks(schedule in schedules()) {
        let quota = SlidingWindow::per_second(5).unwrap();
        assert_hash_checks_decide_as_key_checks(quota, &schedule);
    }

    #[test]
    fn fixed_window_hash_checks_decide_as_key_checks(schedule in schedules()) {
        let quota = FixedWindow::per_second(5).unwrap();
        assert_hash_checks_decide_as_key_checks(quota, &schedule);
    }
}

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
        let decision = limiter.check_hash(KeyHash::new(hash));
        assert!(decision.is_allowed(), "{what}: hash {hash:#x}");
        assert!(
            limiter.check_hash(KeyHash::new(hash)).is_denied(),
            "{what}: hash {hash:#x}"
        );
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

#[test]
fn a_cost_above_the_limit_is_an_error_and_consumes_nothing() {
    let clock = clock_at(0);
    let limiter = table::<Hashed, _>(
        FixedWindow::per_second(4).unwrap(),
        TableShape::capacity(16),
        &clock,
    );
    let flow = KeyHash::new(0xabcd);
    assert!(limiter.check_hash_with(flow, Request::cost(5)).is_err());
    assert!(limiter.peek_hash_with(flow, Request::cost(5)).is_err());
    assert_eq!(limiter.entries(), 0);
    assert!(limiter
        .check_hash_with(flow, Request::cost(4))
        .unwrap()
        .is_allowed());
    assert!(limiter.check_hash(flow).is_denied());
}

#[test]
fn concurrent_checks_of_caller_hashes_admit_exactly_the_limit() {
    const THREADS: usize = 4;
    const FLOWS: u64 = 256;
    const LIMIT: u64 = 10;
    let clock = clock_at(0);
    let limiter = table::<Hashed, _>(
        Gcra::per_second(LIMIT).unwrap().with_burst(LIMIT).unwrap(),
        TableShape::capacity(1_000),
        &clock,
    );
    let start = Barrier::new(THREADS);
    let admitted: u64 = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (limiter, start) = (&limiter, &start);
                scope.spawn(move || {
                    start.wait();
                    let mut admitted = 0;
                    // Every thread tries each flow's whole limit; threads start at different
                    // flows, so inserts and checks of one flow race from several threads.
                    for offset in 0..FLOWS {
                        let flow = (offset + thread as u64 * 64) % FLOWS;
                        for _ in 0..LIMIT {
                            admitted +=
                                u64::from(limiter.check_hash(KeyHash::new(flow)).is_allowed());
                        }
                    }
                    admitted
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .sum()
    });
    assert_eq!(admitted, FLOWS * LIMIT);
    for flow in 0..FLOWS {
        assert_eq!(
            limiter.peek_hash(KeyHash::new(flow)).remaining(),
            0,
            "flow {flow}"
        );
    }
    assert_eq!(limiter.stats().inserts, FLOWS);
}

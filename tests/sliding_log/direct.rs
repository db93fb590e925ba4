//! The exact sliding log (`nanolimit::sliding_log`): the same decisions and metadata as a
//! reference log of timestamps on random schedules (backward readings, costs from 0 to the most
//! a request may cost, checks and peeks), exactness under threads on a frozen clock and on a
//! moving one, and clear errors for bad input.

use crate::common;
use crate::common::sliding_log::{observed, quotas, ReferenceLog};
use crate::common::{at, DAY_NS, HORIZON_NS, SECOND_NS};
use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter, MAX_LIMIT};
use nanolimit::{ManualClock, QuotaError, Request, RequestError, Timestamp};
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
enum Operation {
    /// `check_with` of a cost.
    Check(u64),
    /// `check_at` (one unit).
    Unit,
    /// `peek_with` of a cost.
    Peek(u64),
}

/// Steps between readings, as a signed nanosecond offset scaled to the window: mostly forward,
/// sometimes backward, sometimes far.
fn schedules() -> impl Strategy<Value = Vec<(i64, u8, u64)>> {
    proptest::collection::vec((-400i64..1_200, 0u8..10, 0u64..17), 1..120)
}

fn run_schedule(quota: SlidingLog, schedule: &[(i64, u8, u64)], start_ns: u64) {
    let limiter = SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap();
    let mut reference = ReferenceLog::new(&quota);
    let window_ns = quota.window().as_nanos() as i128;
    let mut reading_ns = start_ns as i128;
    for (index, &(step, kind, cost)) in schedule.iter().enumerate() {
        // Offsets in thousandths of a window, so every quota sees readings in and out of it.
        reading_ns = (reading_ns + (step as i128 * window_ns) / 1_000).max(0);
        let now = at(reading_ns as u64);
        let cost = cost % (quota.max_cost() + 1);
        let operation = match kind {
            0..=4 => Operation::Check(cost),
            5..=7 => Operation::Unit,
            _ => Operation::Peek(cost),
        };
        let (decision, expected) = match operation {
            Operation::Check(cost) => (
                limiter
                    .check_with(Request::cost(cost).at(now))
                    .expect("a cost within the most a request may cost"),
                reference.decide(cost, now.as_ns(), true),
            ),
            Operation::Unit => (
                limiter.check_at(now),
                reference.decide(1, now.as_ns(), true),
            ),
            Operation::Peek(cost) => (
                limiter.peek_with(Request::cost(cost).at(now)).unwrap(),
                reference.decide(cost, now.as_ns(), false),
            ),
        };
        assert_eq!(
            observed(&decision),
            expected,
            "step {index}: {operation:?} at {} ns on {quota:?}",
            now.as_ns()
        );
        assert_eq!(
            decision.judged_at().as_ns(),
            reference.judged_at(now.as_ns()),
            "step {index}: judged at"
        );
    }
}

proptest! {
    #![proptest_config(common::proptest_config(2_000))]

    /// Decisions and metadata equal the reference log's, readings backward included.
    #[test]
    fn decides_as_the_reference_log(
        quota in proptest::sample::select(quotas()),
        schedule in schedules(),
        start_ns in prop_oneof![Just(0u64), 0..DAY_NS, Just(HORIZON_NS / 2)],
    ) {
        run_schedule(quota, &schedule, start_ns);
    }
}

#[test]
fn a_window_is_open_at_its_start_and_closed_at_its_end() {
    let quota = SlidingLog::new(2, Duration::from_nanos(100)).unwrap();
    let limiter = SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap();
    assert!(limiter.check_at(at(1_000)).is_allowed());
    assert!(limiter.check_at(at(1_050)).is_allowed());
    // At 1_099 both are in (999, 1_099]; at 1_100 the first has left (1_000 + 100).
    let denied = limiter.check_at(at(1_099));
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_nanos(1));
    assert!(limiter.check_at(at(1_100)).is_allowed());
    assert!(limiter.check_at(at(1_100)).is_denied());
}

#[test]
fn a_reading_at_the_origin_is_a_unit_not_an_empty_slot() {
    let quota = SlidingLog::new(1, Duration::from_secs(1)).unwrap();
    let limiter = SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap();
    assert!(limiter.check_at(Timestamp::ORIGIN).is_allowed());
    assert!(limiter.check_at(Timestamp::ORIGIN).is_denied());
    assert!(limiter.check_at(at(SECOND_NS - 1)).is_denied());
    assert!(limiter.check_at(at(SECOND_NS)).is_allowed());
}

#[test]
fn a_clock_that_steps_back_is_judged_at_the_latest_time_seen() {
    let quota = SlidingLog::new(3, Duration::from_secs(10)).unwrap();
    let limiter = SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap();
    assert!(limiter.check_at(at(100 * SECOND_NS)).is_allowed());
    // A reading 50 s behind would see an empty window at 50 s; it is judged at 100 s.
    let behind = limiter.check_at(at(50 * SECOND_NS));
    assert!(behind.is_allowed());
    assert_eq!(behind.judged_at(), at(100 * SECOND_NS));
    assert!(limiter.check_at(at(50 * SECOND_NS)).is_allowed());
    let denied = limiter.check_at(at(0));
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_secs(10));
    assert_eq!(denied.remaining(), 0);
}

#[test]
fn readings_at_the_horizon_are_clamped_not_wrapped() {
    let quota = SlidingLog::new(1, Duration::from_secs(1)).unwrap();
    let limiter = SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap();
    let horizon = Timestamp::HORIZON;
    let first = limiter.check_at(horizon);
    assert!(first.is_allowed());
    assert_eq!(first.judged_at().as_ns(), HORIZON_NS - 2);
    let denied = limiter.check_at(horizon);
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_secs(1));
}

#[test]
fn a_request_of_several_units_is_all_or_nothing_with_exact_metadata() {
    let quota = SlidingLog::per_minute(10).unwrap();
    let clock = ManualClock::new();
    let limiter = SlidingLogLimiter::with_clock(quota, clock.clone()).unwrap();
    assert!(limiter.check_with(Request::cost(6)).unwrap().is_allowed());
    clock.advance(Duration::from_secs(30));
    let allowed = limiter.check_with(Request::cost(4)).unwrap();
    assert_eq!((allowed.is_allowed(), allowed.remaining()), (true, 0));
    assert_eq!(allowed.reset_after(), Duration::from_secs(60));
    let denied = limiter.check_with(Request::cost(5)).unwrap();
    assert!(denied.is_denied());
    // Five must leave: the six units at 0 s leave at 60 s, 30 s from now.
    assert_eq!(denied.retry_after(), Duration::from_secs(30));
    clock.advance(Duration::from_secs(30));
    let after = limiter.check_with(Request::cost(6)).unwrap();
    assert_eq!((after.is_allowed(), after.remaining()), (true, 0));
}

#[test]
fn bad_quotas_and_costs_are_clear_errors() {
    assert_eq!(
        SlidingLog::new(0, Duration::from_secs(1)),
        Err(QuotaError::ZeroLimit)
    );
    assert_eq!(
        SlidingLog::new(MAX_LIMIT + 1, Duration::from_secs(1)),
        Err(QuotaError::LimitTooLarge {
            requested: MAX_LIMIT + 1,
            max: MAX_LIMIT
        })
    );
    assert_eq!(
        SlidingLog::new(1, Duration::ZERO),
        Err(QuotaError::ZeroPeriod)
    );
    assert!(matches!(
        SlidingLog::new(1, Duration::from_secs(u64::MAX)),
        Err(QuotaError::PeriodTooLong { .. })
    ));
    let limiter =
        SlidingLogLimiter::with_clock(SlidingLog::per_minute(100).unwrap(), ManualClock::new())
            .unwrap();
    assert_eq!(
        limiter.check_with(Request::cost(17)).unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 17,
            limit: 16
        }
    );
    assert!(limiter.peek_with(Request::cost(u64::MAX)).is_err());
    // Nothing was recorded by the errors.
    assert_eq!(
        limiter.check_with(Request::cost(16)).unwrap().remaining(),
        84
    );
}

#[test]
fn memory_grows_with_the_limit() {
    let small = SlidingLogLimiter::new(SlidingLog::per_minute(5).unwrap()).unwrap();
    let large = SlidingLogLimiter::new(SlidingLog::per_minute(5_000).unwrap()).unwrap();
    assert!(small.memory_bytes() >= 8 * 8);
    assert!(large.memory_bytes() >= 8 * 8_192);
    assert!(large.memory_bytes() - small.memory_bytes() == 8 * (8_192 - 8));
}

/// On a frozen clock, threads racing over one log admit exactly the limit, whatever the costs.
#[test]
fn threads_on_a_frozen_clock_admit_exactly_the_limit() {
    for (limit, threads, max_cost) in [
        (1, 4, 1),
        (5, 4, 1),
        (37, 3, 4),
        (200, 4, 16),
        (1_000, 2, 3),
    ] {
        let quota = SlidingLog::new(limit, Duration::from_secs(60)).unwrap();
        for round in 0..20u64 {
            let limiter =
                Arc::new(SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap());
            let admitted = Arc::new(AtomicU64::new(0));
            let barrier = Arc::new(Barrier::new(threads));
            let workers: Vec<_> = (0..threads as u64)
                .map(|thread| {
                    let (limiter, admitted, barrier) =
                        (limiter.clone(), admitted.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        let now = at(DAY_NS);
                        for attempt in 0..(limit * 2) {
                            let cost = 1 + (attempt + thread + round) % max_cost;
                            let decision = limiter.check_with(Request::cost(cost).at(now)).unwrap();
                            if decision.is_allowed() {
                                admitted.fetch_add(cost, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            for worker in workers {
                worker.join().unwrap();
            }
            let admitted = admitted.load(Ordering::Relaxed);
            // Costs above one may leave a few units unused, never one too many.
            assert!(admitted <= limit, "{admitted} admitted of {limit}");
            if max_cost == 1 {
                assert_eq!(admitted, limit);
            } else {
                assert!(
                    admitted + max_cost > limit,
                    "{admitted} admitted of {limit}"
                );
            }
            // Every unit left is refused to everyone afterwards.
            assert_eq!(limiter.check_at(at(DAY_NS)).is_allowed(), admitted < limit);
        }
    }
}

/// Window after window on a frozen clock per window: each round the threads together ask for
/// exactly the limit at an instant when every earlier unit has left, so every check must pass.
/// The checks read the previous window's records while other threads write the next lap's
/// over them (a check that judged such a record as its position's would wrongly deny).
#[test]
fn threads_admit_the_whole_limit_window_after_window() {
    let window_ns = 1_000;
    for (limit, threads) in [(2u64, 2u64), (4, 2), (16, 4), (12, 3)] {
        let quota = SlidingLog::new(limit, Duration::from_nanos(window_ns)).unwrap();
        let limiter = Arc::new(SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap());
        let barrier = Arc::new(Barrier::new(threads as usize));
        let rounds = 3_000u64;
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (limiter, barrier) = (limiter.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut denied = 0u64;
                    for round in 0..rounds {
                        barrier.wait();
                        let now = at(SECOND_NS + round * window_ns);
                        for _ in 0..limit / threads {
                            denied += u64::from(limiter.check_at(now).is_denied());
                        }
                    }
                    denied
                })
            })
            .collect();
        let denied: u64 = workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .sum();
        assert_eq!(
            denied, 0,
            "limit {limit}, {threads} threads: {denied} checks denied"
        );
    }
}

/// Threads reading a shared clock that moves (and whose readings reach the log out of order):
/// in any window of the times the decisions were judged at, at most the limit is admitted.
#[test]
fn threads_on_a_moving_clock_never_admit_more_than_the_limit_in_any_window() {
    let window_ns = 2_000;
    for (limit, max_cost) in [(1, 1), (4, 2), (16, 5)] {
        let quota = SlidingLog::new(limit, Duration::from_nanos(window_ns)).unwrap();
        let limiter = Arc::new(SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap());
        let ticks = Arc::new(AtomicU64::new(SECOND_NS));
        let workers: Vec<_> = (0..4u64)
            .map(|thread| {
                let (limiter, ticks) = (limiter.clone(), ticks.clone());
                std::thread::spawn(move || {
                    let mut admitted = Vec::new();
                    for attempt in 0..20_000u64 {
                        let reading = ticks.fetch_add(1 + attempt % 3, Ordering::Relaxed);
                        let cost = 1 + (attempt + thread) % max_cost;
                        let decision = limiter
                            .check_with(Request::cost(cost).at(at(reading)))
                            .unwrap();
                        assert!(decision.judged_at().as_ns() >= reading);
                        if decision.is_allowed() {
                            admitted.push((decision.judged_at().as_ns(), cost));
                        }
                    }
                    admitted
                })
            })
            .collect();
        let mut admitted: Vec<(u64, u64)> = workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect();
        admitted.sort_unstable();
        assert!(!admitted.is_empty());
        // A sliding sum over (t − W, t] at every admitted time t.
        let mut first = 0;
        let mut in_window = 0;
        for last in 0..admitted.len() {
            in_window += admitted[last].1;
            while admitted[first].0 + window_ns <= admitted[last].0 {
                in_window -= admitted[first].1;
                first += 1;
            }
            assert!(
                in_window <= limit,
                "{in_window} units in the window ending at {} (limit {limit})",
                admitted[last].0
            );
        }
    }
}

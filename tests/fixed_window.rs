//! Edge cases of the fixed-window counter, through the public API: the pure [`Algorithm`]
//! methods and [`Limiter`] driven by [`ManualClock`] or the `_at(now_ns)` forms.

use nanolimit::fixed_window::{
    BACKWARD_WINDOWS, MAX_LIMIT, MIN_WINDOW_NS, WINDOW_INDEX_MASK, WINDOW_INDEX_SHIFT,
};
use nanolimit::{
    Algorithm, Clock, FixedWindow, InsufficientCapacity, Limiter, ManualClock, QuotaError,
    RateLimitHeaders, Step, TIME_HORIZON_NS,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

const MICROSECOND_NS: u64 = 1_000;
const MILLISECOND_NS: u64 = 1_000_000;
const SECOND_NS: u64 = 1_000_000_000;
const DAY_NS: u64 = 86_400 * SECOND_NS;
const YEAR_NS: u64 = 365 * DAY_NS;
/// Stored window indices wrap at this many windows.
const INDEX_WRAP: u64 = WINDOW_INDEX_MASK + 1;

fn limiter(quota: FixedWindow) -> Limiter<FixedWindow, ManualClock> {
    Limiter::with_clock(quota, ManualClock::new())
}

fn window_ns(quota: &FixedWindow) -> u64 {
    quota.window().as_nanos() as u64
}

fn assorted_quotas() -> Vec<FixedWindow> {
    vec![
        FixedWindow::per_second(1).unwrap(),
        FixedWindow::per_second(10).unwrap(),
        FixedWindow::per_minute(100).unwrap(),
        FixedWindow::per_hour(3).unwrap(),
        FixedWindow::new(7, Duration::from_nanos(MIN_WINDOW_NS)).unwrap(),
        FixedWindow::new(MAX_LIMIT, Duration::from_nanos(MIN_WINDOW_NS)).unwrap(),
        FixedWindow::new(MAX_LIMIT, Duration::from_secs(1)).unwrap(),
        FixedWindow::new(1_000, Duration::from_nanos(1_000_000_007)).unwrap(),
    ]
}

#[test]
fn every_invalid_quota_is_rejected_with_its_own_error() {
    assert_eq!(MAX_LIMIT, 16_777_200);
    assert_eq!(MIN_WINDOW_NS, 1_000);
    assert_eq!(FixedWindow::per_second(0), Err(QuotaError::ZeroBurst));
    assert_eq!(
        FixedWindow::per_minute(MAX_LIMIT + 1),
        Err(QuotaError::BurstTooLarge {
            requested: MAX_LIMIT + 1,
            max: MAX_LIMIT
        })
    );
    assert_eq!(
        FixedWindow::per_hour(u64::MAX),
        Err(QuotaError::BurstTooLarge {
            requested: u64::MAX,
            max: MAX_LIMIT
        })
    );
    assert_eq!(
        FixedWindow::new(5, Duration::ZERO),
        Err(QuotaError::ZeroPeriod)
    );
    for too_short in [1, 500, MIN_WINDOW_NS - 1] {
        assert_eq!(
            FixedWindow::new(5, Duration::from_nanos(too_short)),
            Err(QuotaError::WindowTooShort {
                min_ns: MIN_WINDOW_NS
            })
        );
    }
    let period_too_long = Err(QuotaError::PeriodTooLong {
        max_ns: TIME_HORIZON_NS,
    });
    assert_eq!(
        FixedWindow::new(5, Duration::from_nanos(TIME_HORIZON_NS + 1)),
        period_too_long
    );
    assert_eq!(FixedWindow::new(5, Duration::MAX), period_too_long);
    let shortest = FixedWindow::new(MAX_LIMIT, Duration::from_nanos(MIN_WINDOW_NS)).unwrap();
    assert_eq!(shortest.limit(), MAX_LIMIT);
    assert_eq!(shortest.capacity(), MAX_LIMIT);
    assert_eq!(shortest.window(), Duration::from_micros(1));
    let longest = FixedWindow::new(1, Duration::from_nanos(TIME_HORIZON_NS)).unwrap();
    assert_eq!(longest.window(), Duration::from_nanos(TIME_HORIZON_NS));
    assert!(limiter(longest).check_at(u64::MAX).is_allowed());
}

#[test]
fn the_count_starts_over_exactly_at_each_window_boundary() {
    let quota = FixedWindow::per_second(3).unwrap();
    let limiter = limiter(quota);
    assert!(limiter.check_n_at(2, 7 * SECOND_NS).unwrap().is_allowed());
    assert!(limiter.check_at(8 * SECOND_NS - 1).is_allowed());
    assert!(limiter.check_at(8 * SECOND_NS - 1).is_denied());
    assert_eq!(limiter.peek_at(8 * SECOND_NS - 1).remaining(), 0);
    // The next window starts empty: the 2 × limit burst across a boundary fixed windows allow.
    assert_eq!(limiter.peek_at(8 * SECOND_NS).remaining(), 3);
    assert!(limiter.check_n_at(3, 8 * SECOND_NS).unwrap().is_allowed());
    assert!(limiter.check_at(9 * SECOND_NS - 1).is_denied());
    assert!(limiter.check_at(9 * SECOND_NS).is_allowed());
}

#[test]
fn the_largest_limit_is_counted_exactly() {
    for window in [Duration::from_nanos(MIN_WINDOW_NS), Duration::from_secs(1)] {
        let quota = FixedWindow::new(MAX_LIMIT, window).unwrap();
        let window_ns = window_ns(&quota);
        let limiter = limiter(quota);
        let start = 12_345 * window_ns;
        assert!(limiter
            .check_n_at(MAX_LIMIT - 1, start)
            .unwrap()
            .is_allowed());
        assert_eq!(limiter.peek_at(start).remaining(), 1);
        assert!(limiter.check_n_at(2, start).unwrap().is_denied());
        assert!(limiter.check_at(start + window_ns - 1).is_allowed());
        assert!(limiter.check_at(start + window_ns - 1).is_denied());
        assert_eq!(limiter.peek_at(start + window_ns).remaining(), MAX_LIMIT);
        assert!(limiter
            .check_n_at(MAX_LIMIT, start + window_ns)
            .unwrap()
            .is_allowed());
        assert_eq!(limiter.peek_at(start + window_ns).remaining(), 0);
    }
}

#[test]
fn a_full_window_passes_on_a_fresh_state() {
    for quota in assorted_quotas() {
        let limit = quota.limit();
        for now_ns in [0, 1, SECOND_NS, 10 * YEAR_NS, TIME_HORIZON_NS, u64::MAX] {
            let now = quota.instant(now_ns);
            assert!(matches!(
                quota.step(FixedWindow::FRESH, now, limit),
                Step::Allow(_)
            ));
            assert!(quota.is_fresh(FixedWindow::FRESH, now));
            assert_eq!(quota.remaining(FixedWindow::FRESH, now), limit);
            assert_eq!(quota.reset_after_ns(FixedWindow::FRESH, now), 0);
            assert_eq!(quota.retry_after_ns(FixedWindow::FRESH, now, limit), 0);
        }
        let limiter = limiter(quota);
        let decision = limiter.check_n_at(limit, 3 * SECOND_NS + 17).unwrap();
        assert!(decision.is_allowed());
        assert_eq!(decision.remaining(), 0);
        assert!(limiter.check_at(3 * SECOND_NS + 17).is_denied());
    }
}

#[test]
fn a_cost_above_the_limit_is_an_error_not_a_denial() {
    let quota = FixedWindow::per_second(4).unwrap();
    let limiter = limiter(quota);
    let too_much = InsufficientCapacity {
        cost: 5,
        capacity: 4,
    };
    assert_eq!(limiter.check_n_at(5, 0).unwrap_err(), too_much);
    assert_eq!(limiter.peek_n_at(5, 0).unwrap_err(), too_much);
    assert!(limiter.check_n_at(4, 0).unwrap().is_allowed());
    assert!(limiter.check_n_at(4, 0).unwrap().is_denied());
    assert_eq!(limiter.check_n_at(5, 0).unwrap_err(), too_much);
    for state in [FixedWindow::FRESH, u64::MAX, 1 << WINDOW_INDEX_SHIFT] {
        for cost in [5, u64::MAX] {
            assert_eq!(quota.step(state, quota.instant(0), cost), Step::Deny);
        }
    }
}

#[test]
fn a_cost_of_zero_passes_and_changes_nothing() {
    let quota = FixedWindow::per_second(2).unwrap();
    let limiter = limiter(quota);
    assert!(limiter.check_n_at(2, 0).unwrap().is_allowed());
    let spent = limiter.check_at(0);
    assert!(spent.is_denied());
    let zero = limiter.check_n_at(0, 0).unwrap();
    assert!(zero.is_allowed());
    assert_eq!(zero.retry_after(), Duration::ZERO);
    assert_eq!(zero.remaining(), 0);
    assert_eq!(zero.state_word(), spent.state_word());
    assert!(limiter.check_at(0).is_denied());
    let state = spent.state_word();
    assert_eq!(quota.step(state, quota.instant(5), 0), Step::Allow(state));
}

#[test]
fn remaining_reset_after_and_headers_follow_the_window() {
    let quota = FixedWindow::per_minute(3).unwrap();
    let clock = ManualClock::starting_at(120 * SECOND_NS + 20 * SECOND_NS);
    let limiter = Limiter::with_clock(quota, clock.clone());
    for used in 1..=3 {
        let decision = limiter.check();
        assert!(decision.is_allowed());
        assert_eq!(decision.limit(), 3);
        assert_eq!(decision.remaining(), 3 - used);
        assert_eq!(decision.reset_after(), Duration::from_secs(40));
        assert_eq!(
            decision.headers(),
            RateLimitHeaders {
                limit: 3,
                remaining: 3 - used,
                reset_seconds: 40,
                retry_after_seconds: None,
            }
        );
    }
    clock.advance(Duration::from_millis(250));
    let denied = limiter.check_n(2).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_millis(39_750));
    assert_eq!(denied.reset_after(), Duration::from_millis(39_750));
    assert_eq!(
        denied.headers(),
        RateLimitHeaders {
            limit: 3,
            remaining: 0,
            reset_seconds: 40,
            retry_after_seconds: Some(40),
        }
    );
    clock.advance(Duration::from_secs(40));
    let decision = limiter.check_n(2).unwrap();
    assert!(decision.is_allowed());
    assert_eq!(decision.remaining(), 1);
    assert_eq!(decision.reset_after(), Duration::from_millis(59_750));
}

/// Drives a limiter with a random schedule of random costs; calls `visit` after every check.
fn random_schedule(
    quota: FixedWindow,
    seed: u64,
    checks: usize,
    mut visit: impl FnMut(
        &Limiter<FixedWindow, ManualClock>,
        u64,
        u64,
        &nanolimit::Decision<FixedWindow>,
    ),
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let limiter = limiter(quota);
    let window_ns = window_ns(&quota);
    let unit_ns = (window_ns / quota.limit()).max(1);
    let mut now = rng.gen_range(0..YEAR_NS);
    for _ in 0..checks {
        now += match rng.gen_range(0..8) {
            0 => 0,
            1 => rng.gen_range(0..=3),
            2 | 3 => rng.gen_range(0..=unit_ns * 2),
            4 | 5 => rng.gen_range(0..=window_ns / 3),
            6 => rng.gen_range(0..=window_ns * 3),
            _ => window_ns - now % window_ns - rng.gen_range(0..=1),
        };
        let cost = match rng.gen_range(0..3) {
            0 => 1,
            1 => rng.gen_range(1..=quota.limit()),
            _ => rng.gen_range(1..=quota.limit().div_ceil(8)),
        };
        let decision = limiter.check_n_at(cost, now).unwrap();
        visit(&limiter, now, cost, &decision);
    }
}

#[test]
fn waiting_exactly_retry_after_passes_and_not_a_nanosecond_sooner() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        let mut denials = 0;
        random_schedule(
            quota,
            index as u64,
            4_000,
            |limiter, now, cost, decision| {
                if decision.is_allowed() {
                    assert_eq!(decision.retry_after(), Duration::ZERO);
                    return;
                }
                denials += 1;
                let wait = decision.retry_after().as_nanos() as u64;
                assert!(wait > 0);
                assert!(limiter.peek_n_at(cost, now + wait).unwrap().is_allowed());
                assert!(limiter.peek_n_at(cost, now + wait - 1).unwrap().is_denied());
                let state = decision.state_word();
                assert_eq!(quota.retry_after_ns(state, quota.instant(now), cost), wait);
            },
        );
        assert!(denials > 100, "{quota:?}: only {denials} denials");
    }
}

#[test]
fn waiting_exactly_reset_after_restores_the_full_limit() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        random_schedule(
            quota,
            100 + index as u64,
            2_000,
            |limiter, now, _, decision| {
                let wait = decision.reset_after().as_nanos() as u64;
                let state = decision.state_word();
                assert!(quota.is_fresh(state, quota.instant(now + wait)));
                assert_eq!(limiter.peek_at(now + wait).remaining(), quota.limit());
                if wait > 0 {
                    assert!(!quota.is_fresh(state, quota.instant(now + wait - 1)));
                } else {
                    assert!(quota.is_fresh(state, quota.instant(now)));
                }
                let remaining = decision.remaining();
                let instant = quota.instant(now);
                if remaining > 0 {
                    assert!(matches!(
                        quota.step(state, instant, remaining),
                        Step::Allow(_)
                    ));
                }
                if remaining < quota.limit() {
                    assert_eq!(quota.step(state, instant, remaining + 1), Step::Deny);
                }
            },
        );
    }
}

fn stored_index(state: u64) -> u64 {
    state >> WINDOW_INDEX_SHIFT
}

#[test]
fn a_written_state_is_greater_than_the_one_it_replaces_unless_the_index_wrapped() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut wrapped = 0;
    for quota in assorted_quotas() {
        let window_ns = window_ns(&quota);
        for _ in 0..20_000 {
            let now_ns = rng.gen_range(0..=TIME_HORIZON_NS);
            let now = quota.instant(now_ns);
            let written_at = match rng.gen_range(0..3) {
                0 => now_ns.saturating_sub(rng.gen_range(0..=3 * window_ns)),
                1 => now_ns + rng.gen_range(0..=3 * window_ns),
                _ => rng.gen_range(0..=TIME_HORIZON_NS),
            };
            let mut state = FixedWindow::FRESH;
            for _ in 0..rng.gen_range(0..3) {
                let cost = rng.gen_range(1..=quota.limit());
                if let Step::Allow(next) = quota.step(state, quota.instant(written_at), cost) {
                    state = next;
                }
            }
            let cost = rng.gen_range(1..=quota.limit());
            let Step::Allow(written) = quota.step(state, now, cost) else {
                continue;
            };
            // The two largest words are keyed tables' slot markers.
            assert!(written < u64::MAX - 1);
            if written > state {
                continue;
            }
            // Only a window index that wrapped past 2^40 may make the word smaller.
            wrapped += 1;
            let now_index = now.window_index() & WINDOW_INDEX_MASK;
            assert!(
                now_index < stored_index(state),
                "{quota:?}: {state:#x} -> {written:#x}"
            );
            assert_eq!(stored_index(written), now_index);
            let forward = now_index.wrapping_sub(stored_index(state)) & WINDOW_INDEX_MASK;
            assert!(forward <= WINDOW_INDEX_MASK - BACKWARD_WINDOWS);
        }
    }
    assert!(wrapped > 0, "no wrapped index was exercised");
}

#[test]
fn no_input_from_any_clock_reading_makes_a_step_panic() {
    let mut rng = StdRng::seed_from_u64(8);
    let extremes = [
        0,
        1,
        TIME_HORIZON_NS - 1,
        TIME_HORIZON_NS,
        1 << 62,
        u64::MAX,
    ];
    for quota in assorted_quotas() {
        let limit = quota.limit();
        let mut states: Vec<u64> = vec![0, 1, u64::MAX, u64::MAX - 1, WINDOW_INDEX_MASK];
        states.extend((0..200).map(|_| rng.gen::<u64>()));
        let mut readings: Vec<u64> = extremes.to_vec();
        readings.extend((0..200).map(|_| rng.gen::<u64>()));
        for &state in &states {
            for &reading in &readings {
                let now = quota.instant(reading);
                for cost in [0, 1, limit, limit + 1, u64::MAX] {
                    let _ = quota.step(state, now, cost);
                }
                let _ = quota.remaining(state, now);
                let _ = quota.reset_after_ns(state, now);
                let _ = quota.is_fresh(state, now);
                for cost in [0, 1, limit] {
                    let _ = quota.retry_after_ns(state, now, cost);
                }
            }
        }
    }
}

#[test]
fn readings_at_and_past_the_time_horizon_are_clamped() {
    for quota in assorted_quotas() {
        let at_horizon = quota.instant(TIME_HORIZON_NS);
        for past in [TIME_HORIZON_NS + 1, 1 << 60, u64::MAX] {
            assert_eq!(quota.instant(past), at_horizon);
        }
        assert_eq!(
            (at_horizon.window_index(), at_horizon.elapsed_ns()),
            (
                TIME_HORIZON_NS / window_ns(&quota),
                TIME_HORIZON_NS % window_ns(&quota),
            )
        );
        let clock = ManualClock::starting_at(TIME_HORIZON_NS);
        let limiter = Limiter::with_clock(quota, clock.clone());
        assert!(limiter.check_n(quota.limit()).unwrap().is_allowed());
        for step_ns in [1, SECOND_NS, YEAR_NS, u64::MAX] {
            clock.advance_ns(step_ns);
            let decision = limiter.check();
            assert!(decision.is_denied(), "{quota:?} at {}", clock.now_ns());
            let _ = decision.headers();
        }
    }
}

#[test]
fn ten_years_after_the_origin_the_limiter_behaves_as_at_the_origin() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        let window_ns = window_ns(&quota);
        let offset = 10 * YEAR_NS / window_ns * window_ns;
        let origin = limiter(quota);
        let shifted = limiter(quota);
        let mut rng = StdRng::seed_from_u64(200 + index as u64);
        let mut now = 0;
        for _ in 0..3_000 {
            now += match rng.gen_range(0..4) {
                0 => 0,
                1 => rng.gen_range(0..=window_ns / quota.limit()),
                2 => rng.gen_range(0..=window_ns / 4),
                _ => rng.gen_range(0..=2 * window_ns),
            };
            let cost = rng.gen_range(1..=quota.limit().div_ceil(4));
            let expected = origin.check_n_at(cost, now).unwrap();
            let actual = shifted.check_n_at(cost, offset + now).unwrap();
            assert_eq!(
                actual.is_allowed(),
                expected.is_allowed(),
                "{quota:?} at {now}"
            );
            assert_eq!(actual.remaining(), expected.remaining());
            assert_eq!(actual.retry_after(), expected.retry_after());
            assert_eq!(actual.reset_after(), expected.reset_after());
        }
    }
}

fn fill_window(limiter: &Limiter<FixedWindow, ManualClock>, index: u64) -> u64 {
    let quota = limiter.policy();
    let at = index * window_ns(quota) + window_ns(quota) / 3;
    assert!(limiter.check_n_at(quota.limit(), at).unwrap().is_allowed());
    at
}

#[test]
fn a_key_idle_for_any_number_of_windows_below_the_wrap_margin_is_fresh() {
    // 1 µs windows: the 2^40 window indices wrap after 12.7 days.
    let quota = FixedWindow::new(50, Duration::from_nanos(MICROSECOND_NS)).unwrap();
    let window_ns = window_ns(&quota);
    let longest_idle = INDEX_WRAP - BACKWARD_WINDOWS - 1;
    for start in [
        0,
        5,
        INDEX_WRAP - 3,
        INDEX_WRAP - 1,
        INDEX_WRAP,
        3 * INDEX_WRAP - 2,
    ] {
        for idle in [1, 2, 1_000, BACKWARD_WINDOWS, 1 << 39, longest_idle] {
            let limiter = limiter(quota);
            fill_window(&limiter, start);
            let state = limiter.peek_at(start * window_ns).state_word();
            let index = start + idle;
            for at in [index * window_ns, index * window_ns + window_ns - 1] {
                let now = quota.instant(at);
                assert!(
                    quota.is_fresh(state, now),
                    "idle {idle} from window {start}"
                );
                assert_eq!(quota.remaining(state, now), 50);
                assert_eq!(quota.reset_after_ns(state, now), 0);
            }
            assert!(limiter
                .check_n_at(50, index * window_ns)
                .unwrap()
                .is_allowed());
        }
    }
    // A hundred days of 1-second windows, through the clock.
    let quota = FixedWindow::per_second(50).unwrap();
    let clock = ManualClock::starting_at(3 * YEAR_NS);
    let limiter = Limiter::with_clock(quota, clock.clone());
    assert!(limiter.check_n(50).unwrap().is_allowed());
    clock.advance(Duration::from_secs(100 * 86_400));
    assert!(limiter.check_n(50).unwrap().is_allowed());
    // A hundred days of 1 ms windows.
    let quota = FixedWindow::new(50, Duration::from_millis(1)).unwrap();
    let clock = ManualClock::starting_at(3 * YEAR_NS + MILLISECOND_NS / 2);
    let limiter = Limiter::with_clock(quota, clock.clone());
    assert!(limiter.check_n(50).unwrap().is_allowed());
    clock.advance(Duration::from_secs(100 * 86_400));
    assert!(limiter.check_n(50).unwrap().is_allowed());
}

#[test]
fn a_window_index_ahead_of_now_is_a_clock_that_stepped_back() {
    let quota = FixedWindow::new(50, Duration::from_nanos(MICROSECOND_NS)).unwrap();
    let window_ns = window_ns(&quota);
    for start in [
        3,
        BACKWARD_WINDOWS + 7,
        INDEX_WRAP + 1,
        5 * INDEX_WRAP + 100,
    ] {
        let limiter = limiter(quota);
        let filled_at = fill_window(&limiter, start);
        let state = limiter.peek_at(filled_at).state_word();
        for back in [1, 2, 1_000, BACKWARD_WINDOWS] {
            let Some(index) = start.checked_sub(back) else {
                continue;
            };
            for at in [index * window_ns, index * window_ns + window_ns - 1] {
                let now = quota.instant(at);
                assert!(!quota.is_fresh(state, now));
                assert_eq!(quota.remaining(state, now), 0);
                assert!(limiter.check_at(at).is_denied(), "back {back} from {start}");
            }
        }
        assert!(limiter.check_at(start * window_ns).is_denied());
        if let Some(index) = start.checked_sub(BACKWARD_WINDOWS + 1) {
            assert!(quota.is_fresh(state, quota.instant(index * window_ns)));
        }
        // Idle for exactly 2^40 − BACKWARD_WINDOWS windows is 2^20 windows back: aliased.
        let index = start + INDEX_WRAP - BACKWARD_WINDOWS;
        assert!(!quota.is_fresh(state, quota.instant(index * window_ns)));
    }
}

#[test]
fn a_clock_stepping_back_grants_nothing() {
    let quota = FixedWindow::per_second(10).unwrap();
    let limiter = limiter(quota);
    let at = 5 * SECOND_NS + SECOND_NS / 2;
    assert!(limiter.check_n_at(10, at).unwrap().is_allowed());
    for reading in [at - 1, 5 * SECOND_NS, 5 * SECOND_NS - 1, 4 * SECOND_NS, 0] {
        let decision = limiter.check_at(reading);
        assert!(decision.is_denied(), "at {reading}");
        assert_eq!(decision.remaining(), 0);
    }
    assert!(limiter.check_at(6 * SECOND_NS - 1).is_denied());
    assert!(limiter.check_n_at(10, 6 * SECOND_NS).unwrap().is_allowed());
}

fn monotonic(readings: &[u64]) -> Vec<u64> {
    let mut latest = 0;
    readings
        .iter()
        .map(|&reading| {
            latest = latest.max(reading);
            latest
        })
        .collect()
}

#[test]
fn after_a_backward_step_no_more_is_admitted_than_with_a_monotonic_clock() {
    let mut rng = StdRng::seed_from_u64(9);
    for quota in assorted_quotas() {
        let window_ns = window_ns(&quota);
        let unit_ns = (window_ns / quota.limit()).max(1);
        let cost = quota.limit().div_ceil(20);
        for _ in 0..40 {
            let mut readings = Vec::new();
            let mut latest = rng.gen_range(0..YEAR_NS);
            for _ in 0..300 {
                if rng.gen_ratio(1, 5) {
                    let back = match rng.gen_range(0..3) {
                        0 => rng.gen_range(0..=3),
                        1 => rng.gen_range(0..=2 * window_ns),
                        _ => rng.gen_range(0..=BACKWARD_WINDOWS * window_ns),
                    };
                    readings.push(latest.saturating_sub(back));
                } else {
                    latest += rng.gen_range(0..=unit_ns * cost * 2);
                    readings.push(latest);
                }
            }
            let stepping = limiter(quota);
            let steady = limiter(quota);
            let (mut admitted_stepping, mut admitted_steady) = (0u64, 0u64);
            for (reading, monotonic_reading) in readings.iter().zip(monotonic(&readings)) {
                if stepping.check_n_at(cost, *reading).unwrap().is_allowed() {
                    admitted_stepping += cost;
                }
                if steady
                    .check_n_at(cost, monotonic_reading)
                    .unwrap()
                    .is_allowed()
                {
                    admitted_steady += cost;
                }
                assert!(
                    admitted_stepping <= admitted_steady,
                    "{quota:?}: {admitted_stepping} admitted with backward steps, \
                     {admitted_steady} with a monotonic clock"
                );
            }
        }
    }
}

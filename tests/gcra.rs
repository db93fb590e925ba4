//! Edge cases of the GCRA step function, through the public API: the pure [`Algorithm`] methods
//! and [`Limiter`] driven by [`ManualClock`] or the `_at(now_ns)` forms.

mod common;

use common::{
    assert_a_cost_above_a_capacity_of_four_is_an_error,
    assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing,
    assert_a_fresh_limiter_admits_the_capacity_once, assert_a_fresh_state_admits_the_capacity,
    assert_remaining_matches_step, assert_reset_after_restores_the_capacity,
    assert_retry_after_is_exact, assert_the_step_denies_costs_above_the_capacity,
    call_every_method, limiter, monotonic, random_schedule, DAY_NS, SECOND_NS, YEAR_NS,
};
use nanolimit::{
    Algorithm, Clock, Gcra, InsufficientCapacity, Limiter, ManualClock, QuotaError,
    RateLimitHeaders, Step, TIME_HORIZON_NS,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// Quotas of every shape: whole-nanosecond and fractional emission intervals, the slowest and
/// fastest rates, bursts of one and large bursts.
fn assorted_quotas() -> Vec<Gcra> {
    vec![
        Gcra::per_second(1).unwrap(),
        Gcra::per_second(3).unwrap(),
        Gcra::per_minute(7).unwrap().with_burst(3).unwrap(),
        Gcra::per_second(100).unwrap().with_burst(10).unwrap(),
        Gcra::per_day(1).unwrap(),
        Gcra::per_day(5).unwrap().with_burst(2).unwrap(),
        Gcra::new(999_983, 1_000_000_007)
            .unwrap()
            .with_burst(1_000)
            .unwrap(),
        Gcra::per_second(1_000_000_000)
            .unwrap()
            .with_burst(1_000_000)
            .unwrap(),
        Gcra::per_second(12_500_000_000)
            .unwrap()
            .with_burst(1_250_000)
            .unwrap(),
        Gcra::new(7, 3).unwrap(),
        Gcra::new(16, 1).unwrap().with_burst(100).unwrap(),
        Gcra::with_period(Duration::from_millis(250)).unwrap(),
    ]
}

/// `period / count` in nanoseconds, as an exact fraction (numerator, denominator).
fn emission_interval_fraction(quota: &Gcra) -> (u128, u128) {
    (quota.period().as_nanos(), quota.count() as u128)
}

#[test]
fn every_invalid_quota_is_rejected_with_its_own_error() {
    assert_eq!(Gcra::per_second(0), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::per_day(0), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::new(0, SECOND_NS), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::new(5, 0), Err(QuotaError::ZeroPeriod));
    assert_eq!(
        Gcra::per_period(5, Duration::ZERO),
        Err(QuotaError::ZeroPeriod)
    );
    assert_eq!(
        Gcra::with_period(Duration::ZERO),
        Err(QuotaError::ZeroPeriod)
    );
    assert_eq!(
        Gcra::per_second(5).unwrap().with_burst(0),
        Err(QuotaError::ZeroBurst)
    );

    let rate_too_high = Err(QuotaError::RateTooHigh {
        max_per_second: 16_000_000_000,
    });
    assert_eq!(Gcra::per_second(16_000_000_001), rate_too_high);
    assert_eq!(Gcra::new(17, 1), rate_too_high);
    assert_eq!(Gcra::new(33, 2), rate_too_high);
    assert_eq!(Gcra::new(u64::MAX, SECOND_NS), rate_too_high);
    assert_eq!(Gcra::per_minute(960_000_000_001), rate_too_high);

    let period_too_long = Err(QuotaError::PeriodTooLong {
        max_ns: TIME_HORIZON_NS,
    });
    assert_eq!(Gcra::new(1, TIME_HORIZON_NS + 1), period_too_long);
    assert_eq!(Gcra::new(1_000, u64::MAX), period_too_long);
    assert_eq!(
        Gcra::per_period(1, Duration::from_nanos(TIME_HORIZON_NS + 1)),
        period_too_long
    );
    assert_eq!(Gcra::per_period(1, Duration::MAX), period_too_long);
    assert_eq!(Gcra::with_period(Duration::MAX), period_too_long);

    // The burst must stay below 2^62; long tolerances coarsen the tick instead of failing.
    let Err(QuotaError::BurstTooLarge { requested, max }) =
        Gcra::per_second(1).unwrap().with_burst(u64::MAX)
    else {
        panic!("a burst of u64::MAX must be too large");
    };
    assert_eq!(requested, u64::MAX);
    let largest = Gcra::per_second(1).unwrap().with_burst(max).unwrap();
    assert_eq!(largest.burst(), max);
    assert_eq!(max, (1 << 62) - 1);
    // Even the largest burst admits exactly itself at once, and nothing more.
    let now = largest.instant(0);
    let Step::Allow(word) = largest.step(Gcra::FRESH, now, max) else {
        panic!("a fresh key admits its whole burst");
    };
    assert_eq!(largest.step(word, now, 1), Step::Deny);
    // A period of more than 9 years with a burst of 1 is valid (it once was not).
    assert!(Gcra::new(1, TIME_HORIZON_NS).is_ok());
    assert_eq!(
        Gcra::per_second(1).unwrap().with_burst(max + 1),
        Err(QuotaError::BurstTooLarge {
            requested: max + 1,
            max
        })
    );
    // With one unit per period the tolerance is the period itself, up to the whole horizon.
    for period_ns in [(1 << 58) - 1, 1 << 58, TIME_HORIZON_NS] {
        let quota = Gcra::new(1, period_ns).unwrap();
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        assert!(limiter.check_at(0).is_allowed());
        assert!(limiter.check_at(period_ns - 1).is_denied());
        assert!(limiter.check_at(period_ns).is_allowed());
    }
    // Every error has a message.
    for error in [
        QuotaError::ZeroRate,
        QuotaError::ZeroPeriod,
        QuotaError::ZeroBurst,
        QuotaError::RateTooHigh { max_per_second: 1 },
        QuotaError::PeriodTooLong { max_ns: 1 },
        QuotaError::BurstTooLarge {
            requested: 2,
            max: 1,
        },
    ] {
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn configured_values_are_reported_back() {
    let quota = Gcra::per_minute(600).unwrap().with_burst(25).unwrap();
    assert_eq!(quota.count(), 600);
    assert_eq!(quota.period(), Duration::from_secs(60));
    assert_eq!(quota.burst(), 25);
    assert_eq!(quota.capacity(), 25);
    assert_eq!(quota.emission_interval(), Duration::from_millis(100));
    assert_eq!(quota.rate_per_second(), 10.0);
    let with_period = Gcra::with_period(Duration::from_millis(40)).unwrap();
    assert_eq!((with_period.count(), with_period.burst()), (1, 1));
    assert_eq!(with_period.emission_interval(), Duration::from_millis(40));
}

#[test]
fn maximum_rates_admit_exactly_their_rate() {
    // (count per second, units admitted per nanosecond after the burst is spent, exactly)
    let cases: [(u64, &[u64]); 3] = [
        (1_000_000_000, &[1, 1, 1, 1]),
        // 12.5 units per nanosecond: 12 in the first, 13 in the second, and so on.
        (12_500_000_000, &[12, 13, 12, 13]),
        (16_000_000_000, &[16, 16, 16, 16]),
    ];
    for (count, per_nanosecond) in cases {
        let burst = 1_000;
        let quota = Gcra::per_second(count).unwrap().with_burst(burst).unwrap();
        let limiter = limiter(quota);
        let start = 5 * SECOND_NS;
        assert!(limiter.check_n_at(burst, start).unwrap().is_allowed());
        assert!(limiter.check_at(start).is_denied());
        for (offset, &expected) in per_nanosecond.iter().enumerate() {
            let now = start + offset as u64 + 1;
            let mut admitted = 0;
            while limiter.check_at(now).is_allowed() {
                admitted += 1;
            }
            assert_eq!(admitted, expected, "{count}/s at {now} ns");
        }
        // One second later, exactly `count` units have refilled (capped by the burst).
        let later = start + per_nanosecond.len() as u64 + SECOND_NS;
        assert!(limiter.check_n_at(burst, later).unwrap().is_allowed());
        assert!(limiter.check_at(later).is_denied());
    }
}

#[test]
fn a_full_burst_passes_on_a_fresh_state() {
    for quota in assorted_quotas() {
        assert_a_fresh_state_admits_the_capacity(&quota);
        assert_a_fresh_limiter_admits_the_capacity_once(quota, 3 * SECOND_NS);
    }
    // The largest burst a quota accepts passes on a fresh state too.
    let Err(QuotaError::BurstTooLarge { max, .. }) =
        Gcra::per_second(1_000).unwrap().with_burst(u64::MAX)
    else {
        unreachable!()
    };
    let quota = Gcra::per_second(1_000).unwrap().with_burst(max).unwrap();
    let limiter = limiter(quota);
    assert!(limiter.check_n_at(max, 0).unwrap().is_allowed());
    assert!(limiter.check_at(0).is_denied());
}

#[test]
fn a_cost_above_the_burst_is_an_error_not_a_denial() {
    let quota = Gcra::per_second(10).unwrap().with_burst(4).unwrap();
    let limiter = limiter(quota);
    // On a fresh state the largest cost is an error too, and consumes nothing either.
    assert_eq!(
        limiter.check_n_at(u64::MAX, 0).unwrap_err(),
        InsufficientCapacity {
            cost: u64::MAX,
            capacity: 4
        }
    );
    let retry_after = assert_a_cost_above_a_capacity_of_four_is_an_error(&limiter);
    assert_eq!(retry_after, Duration::from_millis(400));
    let too_much = InsufficientCapacity {
        cost: 5,
        capacity: 4,
    };
    assert!(!too_much.to_string().is_empty());
    // The pure step denies such costs without panicking, whatever the state.
    assert_the_step_denies_costs_above_the_capacity(
        &quota,
        &[Gcra::FRESH, 1, u64::MAX],
        &[5, u64::MAX / 2, u64::MAX],
    );
}

#[test]
fn a_cost_of_zero_passes_and_changes_nothing() {
    let quota = Gcra::per_second(2).unwrap();
    let limiter = limiter(quota);
    let spent = assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing(&limiter);
    assert!(limiter.peek_n_at(0, 0).unwrap().is_allowed());
    assert!(limiter.check_at(0).is_denied());
    // The pure step admits a cost of zero without moving the state forward when it is ahead.
    let tat = spent.state_word();
    assert_eq!(quota.step(tat, quota.instant(0), 0), Step::Allow(tat));
    assert_eq!(quota.retry_after_ns(tat, quota.instant(0), 0), 0);
}

#[test]
fn remaining_reset_after_and_headers_follow_the_quota() {
    // 10 per minute: one unit every 6 seconds.
    let quota = Gcra::per_minute(10).unwrap();
    let clock = ManualClock::starting_at(7 * SECOND_NS);
    let limiter = Limiter::with_clock(quota, clock.clone());
    for used in 1..=10u64 {
        let decision = limiter.check();
        assert!(decision.is_allowed());
        assert_eq!(decision.limit(), 10);
        assert_eq!(decision.cost(), 1);
        assert_eq!(decision.remaining(), 10 - used);
        assert_eq!(decision.reset_after(), Duration::from_secs(6 * used));
        assert_eq!(decision.retry_after(), Duration::ZERO);
        assert_eq!(
            decision.headers(),
            RateLimitHeaders {
                limit: 10,
                remaining: 10 - used,
                reset_seconds: 6 * used,
                retry_after_seconds: None,
            }
        );
    }
    let denied = limiter.check();
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_secs(6));
    assert_eq!(
        denied.headers(),
        RateLimitHeaders {
            limit: 10,
            remaining: 0,
            reset_seconds: 60,
            retry_after_seconds: Some(6),
        }
    );
    // Half a second later the header values round up to whole seconds.
    clock.advance(Duration::from_millis(500));
    let denied = limiter.check_n(3).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.reset_after(), Duration::from_millis(59_500));
    assert_eq!(denied.retry_after(), Duration::from_millis(17_500));
    assert_eq!(
        denied.headers(),
        RateLimitHeaders {
            limit: 10,
            remaining: 0,
            reset_seconds: 60,
            retry_after_seconds: Some(18),
        }
    );
    // A client that waits the header's whole seconds passes.
    clock.advance(Duration::from_secs(18));
    assert!(limiter.check_n(3).unwrap().is_allowed());
    // peek reports without consuming.
    let peeked = limiter.peek();
    assert_eq!(peeked.remaining(), limiter.peek().remaining());
}

/// [`random_schedule`] with gaps from none to the whole burst's refill time (at most a year) and
/// costs from one to the whole burst, staying clear of the time horizon, where time stops and
/// nothing refills.
fn random_gcra_schedule(
    quota: Gcra,
    seed: u64,
    checks: usize,
    visit: impl FnMut(&Limiter<Gcra, ManualClock>, u64, u64, &nanolimit::Decision<Gcra>),
) {
    let (numerator, denominator) = emission_interval_fraction(&quota);
    let interval_ns = (numerator / denominator).max(1) as u64;
    let next = |rng: &mut StdRng, now: u64| {
        if now > 15 * YEAR_NS {
            return None;
        }
        let gap_ns = match rng.gen_range(0..8) {
            0 => 0,
            1 => rng.gen_range(0..=3),
            2..=5 => rng.gen_range(0..=interval_ns.saturating_mul(2)),
            6 => rng.gen_range(0..=interval_ns.saturating_mul(quota.burst()).min(YEAR_NS)),
            _ => rng.gen_range(0..=interval_ns / 8 + 1),
        };
        let cost = rng.gen_range(1..=quota.burst());
        Some((gap_ns, cost))
    };
    random_schedule(quota, seed, checks, next, visit);
}

#[test]
fn waiting_exactly_retry_after_passes_and_not_much_sooner() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        let mut denials = 0;
        random_gcra_schedule(
            quota,
            index as u64,
            4_000,
            |limiter, now, cost, decision| {
                // The clock conversion may admit up to one tick (1/8 ns) early, so the answer is
                // exact to within a nanosecond: two nanoseconds sooner is too soon.
                let Some(wait) = assert_retry_after_is_exact(limiter, now, cost, decision, 1)
                else {
                    return;
                };
                denials += 1;
                // The pure step agrees.
                assert!(matches!(
                    quota.step(decision.state_word(), quota.instant(now + wait), cost),
                    Step::Allow(_)
                ));
            },
        );
        assert!(denials > 100, "{quota:?}: only {denials} denials");
    }
}

#[test]
fn waiting_exactly_reset_after_restores_the_full_burst() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        random_gcra_schedule(
            quota,
            100 + index as u64,
            2_000,
            |limiter, now, _, decision| {
                // Exact to within the clock conversion's nanosecond, as for retry_after.
                let wait = assert_reset_after_restores_the_capacity(limiter, now, decision, 1);
                let state = decision.state_word();
                let later = quota.instant(now + wait);
                assert!(quota.is_fresh(state, later), "{quota:?} at {now}+{wait}");
                assert!(limiter
                    .peek_n_at(quota.burst(), now + wait)
                    .unwrap()
                    .is_allowed());
                if wait >= 2 {
                    let sooner = quota.instant(now + wait - 2);
                    assert!(quota.remaining(state, sooner) < quota.burst());
                }
                // remaining counts the unit requests that pass now.
                assert_remaining_matches_step(&quota, state, now, decision.remaining());
            },
        );
    }
}

#[test]
fn a_written_state_is_greater_than_the_one_it_replaces_and_than_any_fresh_one() {
    let mut rng = StdRng::seed_from_u64(7);
    for quota in assorted_quotas() {
        for _ in 0..20_000 {
            let state = match rng.gen_range(0..3) {
                0 => rng.gen(),
                1 => Gcra::FRESH,
                _ => quota.instant(rng.gen_range(0..=TIME_HORIZON_NS)),
            };
            let now_ns = rng.gen_range(0..=TIME_HORIZON_NS);
            let now = quota.instant(now_ns);
            let cost = rng.gen_range(1..=quota.burst());
            if let Step::Allow(written) = quota.step(state, now, cost) {
                assert!(written > state, "{quota:?}: {state} -> {written}");
                // The two largest words are keyed tables' slot markers.
                assert!(written < u64::MAX - 1);
                // Any state fresh at a time no later than now is below the written one.
                let earlier = quota.instant(rng.gen_range(0..=now_ns));
                let fresh = rng.gen_range(0..=earlier);
                assert!(quota.is_fresh(fresh, earlier));
                assert!(written > fresh);
            }
        }
    }
}

#[test]
fn no_input_makes_a_step_panic() {
    let mut rng = StdRng::seed_from_u64(8);
    let extremes = [
        0,
        1,
        TIME_HORIZON_NS - 1,
        TIME_HORIZON_NS,
        1 << 62,
        1 << 63,
        u64::MAX,
    ];
    for quota in assorted_quotas() {
        let mut states: Vec<u64> = extremes.to_vec();
        states.extend((0..200).map(|_| rng.gen::<u64>()));
        // Instants from any clock reading, and raw instants of any value.
        let mut instants: Vec<u64> = extremes.iter().map(|&ns| quota.instant(ns)).collect();
        instants.extend(extremes);
        instants.extend((0..200).map(|_| rng.gen::<u64>()));
        for &state in &states {
            for &now in &instants {
                call_every_method(&quota, state, now);
            }
        }
    }
}

#[test]
fn readings_at_and_past_the_time_horizon_are_clamped() {
    for quota in assorted_quotas() {
        let at_horizon = quota.instant(TIME_HORIZON_NS);
        for past in [TIME_HORIZON_NS + 1, 1 << 60, 1 << 63, u64::MAX] {
            assert_eq!(quota.instant(past), at_horizon, "{quota:?}");
        }
        assert!(quota.instant(TIME_HORIZON_NS - 1) <= at_horizon);
        // A limiter past the horizon admits one burst and then fails closed: time has stopped.
        let clock = ManualClock::starting_at(TIME_HORIZON_NS - 1);
        let limiter = Limiter::with_clock(quota, clock.clone());
        assert!(limiter.check_n(quota.burst()).unwrap().is_allowed());
        // At the horizon itself: what the last nanosecond refilled (16 units at most).
        clock.advance_ns(1);
        let mut at_horizon_admitted = 0;
        while limiter.check().is_allowed() {
            at_horizon_admitted += 1;
        }
        assert!(at_horizon_admitted <= 16);
        for step_ns in [1, SECOND_NS, YEAR_NS, u64::MAX] {
            clock.advance_ns(step_ns);
            let decision = limiter.check();
            assert!(decision.is_denied(), "{quota:?} at {}", clock.now_ns());
            assert_eq!(decision.remaining(), 0);
            let _ = decision.headers();
        }
        assert_eq!(clock.now_ns(), u64::MAX);
        assert!(limiter.check_at(u64::MAX).is_denied());
    }
}

#[test]
fn ten_years_after_the_origin_the_limiter_behaves_as_at_the_origin() {
    // Whole-nanosecond emission intervals: decisions are exact at any offset.
    let quotas = [
        Gcra::per_second(100).unwrap().with_burst(10).unwrap(),
        Gcra::per_second(1_000_000_000)
            .unwrap()
            .with_burst(64)
            .unwrap(),
        Gcra::per_minute(6).unwrap(),
        Gcra::per_day(2).unwrap().with_burst(3).unwrap(),
    ];
    for (index, quota) in quotas.into_iter().enumerate() {
        let interval_ns = quota.period().as_nanos() as u64 / quota.count();
        let mut rng = StdRng::seed_from_u64(200 + index as u64);
        let origin = limiter(quota);
        let shifted = limiter(quota);
        let offset = 10 * YEAR_NS + rng.gen_range(0..SECOND_NS);
        let mut now = 0;
        for _ in 0..5_000 {
            now += match rng.gen_range(0..4) {
                0 => 0,
                1 => interval_ns,
                _ => rng.gen_range(0..=2 * interval_ns),
            };
            let cost = rng.gen_range(1..=quota.burst());
            let expected = origin.check_n_at(cost, now).unwrap();
            let actual = shifted.check_n_at(cost, offset + now).unwrap();
            assert_eq!(
                actual.is_allowed(),
                expected.is_allowed(),
                "{quota:?} at {now}"
            );
            assert_eq!(actual.remaining(), expected.remaining());
            let retry_difference = actual
                .retry_after()
                .as_nanos()
                .abs_diff(expected.retry_after().as_nanos());
            assert!(retry_difference <= 1);
        }
    }
}

#[test]
fn a_key_idle_for_a_hundred_days_is_fresh() {
    for quota in assorted_quotas() {
        let limiter = limiter(quota);
        let start = 3 * YEAR_NS;
        assert!(limiter
            .check_n_at(quota.burst(), start)
            .unwrap()
            .is_allowed());
        let state = limiter.peek_at(start).state_word();
        // A day's quota needs a day per unit: wait for its burst to refill first.
        let idle = 100 * DAY_NS + quota.period().as_nanos() as u64 * quota.burst() / quota.count();
        assert!(quota.is_fresh(state, quota.instant(start + idle)));
        let decision = limiter.check_n_at(quota.burst(), start + idle).unwrap();
        assert!(decision.is_allowed(), "{quota:?}");
    }
}

#[test]
fn a_clock_stepping_back_grants_nothing() {
    let quota = Gcra::per_second(10).unwrap();
    let limiter = limiter(quota);
    let at = 50 * SECOND_NS;
    assert!(limiter.check_n_at(10, at).unwrap().is_allowed());
    // Back by any amount, down to the origin: still spent, and no panic.
    for back in [1, 100_000_000, SECOND_NS, at] {
        let decision = limiter.check_at(at - back);
        assert!(decision.is_denied());
        assert_eq!(decision.remaining(), 0);
        // Exact to within the clock conversion's nanosecond.
        let exact = 100_000_000 + back;
        let retry_after_ns = decision.retry_after().as_nanos() as u64;
        assert!(
            (exact..=exact + 1).contains(&retry_after_ns),
            "back {back}: retry_after {retry_after_ns}"
        );
    }
    // The clock comes forward again: the limiter refills from the latest reading it kept.
    assert!(limiter.check_at(at + 99_999_999).is_denied());
    assert!(limiter.check_at(at + 100_000_000).is_allowed());
}

#[test]
fn after_a_backward_step_no_more_is_admitted_than_with_a_monotonic_clock() {
    let mut rng = StdRng::seed_from_u64(9);
    for quota in assorted_quotas() {
        let interval_ns = (quota.period().as_nanos() / quota.count() as u128).max(1) as u64;
        for _ in 0..40 {
            let mut readings = Vec::new();
            let mut latest = rng.gen_range(0..YEAR_NS);
            for _ in 0..300 {
                if rng.gen_ratio(1, 5) {
                    // A step back, up to the full distance to the origin.
                    let back = match rng.gen_range(0..3) {
                        0 => rng.gen_range(0..=latest.min(3)),
                        1 => rng.gen_range(0..=latest.min(interval_ns * 4)),
                        _ => rng.gen_range(0..=latest),
                    };
                    readings.push(latest - back);
                } else {
                    latest += rng.gen_range(0..=interval_ns.saturating_mul(2));
                    readings.push(latest);
                }
            }
            let stepping = limiter(quota);
            let steady = limiter(quota);
            let (mut admitted_stepping, mut admitted_steady) = (0u64, 0u64);
            for (reading, monotonic_reading) in readings.iter().zip(monotonic(&readings)) {
                admitted_stepping += u64::from(stepping.check_at(*reading).is_allowed());
                admitted_steady += u64::from(steady.check_at(monotonic_reading).is_allowed());
                assert!(
                    admitted_stepping <= admitted_steady,
                    "{quota:?}: {admitted_stepping} admitted with backward steps, \
                     {admitted_steady} with a monotonic clock"
                );
            }
        }
    }
}

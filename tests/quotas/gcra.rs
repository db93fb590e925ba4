//! Edge cases of the GCRA step function, through the public API: the pure [`Quota`] methods and
//! [`Limiter`] driven by [`ManualClock`] or caller-supplied [`Timestamp`]s.

use crate::common::{
    any_cost, any_reading, any_state, assert_a_cost_above_a_limit_of_four_is_an_error,
    assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing,
    assert_a_fresh_limiter_admits_the_limit_once, assert_a_fresh_state_admits_the_limit,
    assert_a_limiter_at_the_horizon_fails_closed,
    assert_a_rejected_timestamp_leaves_the_state_alone,
    assert_readings_past_the_horizon_cannot_be_made, assert_remaining_matches_step,
    assert_reset_after_restores_the_limit, assert_retry_after_is_exact,
    assert_the_step_denies_costs_above_the_limit, at, call_every_method, check_cost_at,
    check_every_method_on_any_input, limiter, monotonic, peek_at, peek_cost_at, proptest_config,
    random_schedule, DAY_NS, HORIZON_NS, SECOND_NS, YEAR_NS,
};
use nanolimit::quota::Step;
use nanolimit::{
    Clock, Decision, Gcra, Limiter, ManualClock, Quota, QuotaError, RateLimitHeaders, Request,
    RequestError, Timestamp,
};
use proptest::prelude::*;
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
        Gcra::new(999_983, Duration::from_nanos(1_000_000_007))
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
        Gcra::new(7, Duration::from_nanos(3)).unwrap(),
        Gcra::new(16, Duration::from_nanos(1))
            .unwrap()
            .with_burst(100)
            .unwrap(),
        Gcra::every(Duration::from_millis(250)).unwrap(),
    ]
}

/// `period / count` in nanoseconds, as an exact fraction (numerator, denominator).
fn emission_interval_fraction(quota: &Gcra) -> (u128, u128) {
    (quota.period().as_nanos(), quota.count() as u128)
}

/// The largest burst `quota`'s rate accepts.
fn largest_burst(quota: Gcra) -> u64 {
    let Err(QuotaError::LimitTooLarge { max, .. }) = quota.with_burst(u64::MAX) else {
        panic!("a burst of u64::MAX must be too large");
    };
    max
}

#[test]
fn every_invalid_quota_is_rejected_with_its_own_error() {
    let second = Duration::from_secs(1);
    assert_eq!(Gcra::per_second(0), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::per_minute(0), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::per_hour(0), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::per_day(0), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::new(0, second), Err(QuotaError::ZeroRate));
    assert_eq!(Gcra::new(5, Duration::ZERO), Err(QuotaError::ZeroPeriod));
    assert_eq!(Gcra::every(Duration::ZERO), Err(QuotaError::ZeroPeriod));
    assert_eq!(
        Gcra::per_second(5).unwrap().with_burst(0),
        Err(QuotaError::ZeroLimit)
    );

    let rate_too_high = Err(QuotaError::RateTooHigh {
        max_per_second: 16_000_000_000,
    });
    assert_eq!(Gcra::per_second(16_000_000_001), rate_too_high);
    assert_eq!(Gcra::new(17, Duration::from_nanos(1)), rate_too_high);
    assert_eq!(Gcra::new(33, Duration::from_nanos(2)), rate_too_high);
    assert_eq!(Gcra::new(u64::MAX, second), rate_too_high);
    assert_eq!(Gcra::per_minute(960_000_000_001), rate_too_high);
    assert!(Gcra::per_second(16_000_000_000).is_ok());

    let horizon = Timestamp::HORIZON.since_origin();
    let period_too_long = Err(QuotaError::PeriodTooLong { max: horizon });
    assert_eq!(
        Gcra::new(1, Duration::from_nanos(HORIZON_NS + 1)),
        period_too_long
    );
    assert_eq!(
        Gcra::new(1_000, Duration::from_nanos(u64::MAX)),
        period_too_long
    );
    assert_eq!(Gcra::new(1, Duration::MAX), period_too_long);
    assert_eq!(Gcra::every(Duration::MAX), period_too_long);
    // The longest period reads as a duration, not as a count of nanoseconds.
    let message = Gcra::every(Duration::MAX).unwrap_err().to_string();
    assert_eq!(
        message,
        "quota period or window is longer than the supported maximum of 18.3 years"
    );
    assert!(!message.contains(&HORIZON_NS.to_string()));

    // The burst must stay below 2^62; long tolerances coarsen the tick instead of failing.
    let max = largest_burst(Gcra::per_second(1).unwrap());
    assert_eq!(
        Gcra::per_second(1).unwrap().with_burst(u64::MAX),
        Err(QuotaError::LimitTooLarge {
            requested: u64::MAX,
            max
        })
    );
    let largest = Gcra::per_second(1).unwrap().with_burst(max).unwrap();
    assert_eq!(largest.limit(), max);
    assert_eq!(max, (1 << 62) - 1);
    // Even the largest burst admits exactly itself at once, and nothing more.
    let now = largest.instant(Timestamp::ORIGIN);
    let Step::Allow(word) = largest.step(Gcra::FRESH, now, max) else {
        panic!("a fresh key admits its whole burst");
    };
    assert_eq!(largest.step(word, now, 1), Step::Deny);
    // A period of more than 9 years with a burst of 1 is valid (it once was not).
    assert!(Gcra::new(1, horizon).is_ok());
    assert_eq!(
        Gcra::per_second(1).unwrap().with_burst(max + 1),
        Err(QuotaError::LimitTooLarge {
            requested: max + 1,
            max
        })
    );
    // With one unit per period the tolerance is the period itself, up to the whole horizon.
    for period_ns in [(1 << 58) - 1, 1 << 58, HORIZON_NS] {
        let quota = Gcra::new(1, Duration::from_nanos(period_ns)).unwrap();
        let limiter = limiter(quota);
        assert!(limiter.check_at(Timestamp::ORIGIN).is_allowed());
        assert!(limiter.check_at(at(period_ns - 1)).is_denied());
        assert!(limiter.check_at(at(period_ns)).is_allowed());
    }
    // Every error has a message.
    for error in [
        QuotaError::ZeroRate,
        QuotaError::ZeroPeriod,
        QuotaError::ZeroLimit,
        QuotaError::RateTooHigh { max_per_second: 1 },
        QuotaError::PeriodTooLong { max: horizon },
        QuotaError::LimitTooLarge {
            requested: 2,
            max: 1,
        },
        QuotaError::WindowTooShort {
            min: Duration::from_millis(1),
        },
        QuotaError::IncompatibleQuota,
    ] {
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn configured_values_are_reported_back() {
    let quota = Gcra::per_minute(600).unwrap().with_burst(25).unwrap();
    assert_eq!(quota.count(), 600);
    assert_eq!(quota.period(), Duration::from_secs(60));
    assert_eq!(quota.limit(), 25);
    assert_eq!(Quota::limit(&quota), 25);
    assert_eq!(quota.emission_interval(), Duration::from_millis(100));
    assert_eq!(quota.rate_per_second(), 10.0);
    let every = Gcra::every(Duration::from_millis(40)).unwrap();
    assert_eq!((every.count(), every.limit()), (1, 1));
    assert_eq!(every.emission_interval(), Duration::from_millis(40));
    assert_eq!(
        Gcra::new(600, Duration::from_secs(60)).unwrap(),
        Gcra::per_minute(600).unwrap()
    );
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
        assert!(check_cost_at(&limiter, burst, start).is_allowed());
        assert!(limiter.check_at(at(start)).is_denied());
        for (offset, &expected) in per_nanosecond.iter().enumerate() {
            let now = start + offset as u64 + 1;
            let mut admitted = 0;
            while limiter.check_at(at(now)).is_allowed() {
                admitted += 1;
            }
            assert_eq!(admitted, expected, "{count}/s at {now} ns");
        }
        // One second later, exactly `count` units have refilled (capped by the burst).
        let later = start + per_nanosecond.len() as u64 + SECOND_NS;
        assert!(check_cost_at(&limiter, burst, later).is_allowed());
        assert!(limiter.check_at(at(later)).is_denied());
    }
}

#[test]
fn a_full_burst_passes_on_a_fresh_state() {
    for quota in assorted_quotas() {
        assert_a_fresh_state_admits_the_limit(&quota);
        assert_a_fresh_limiter_admits_the_limit_once(quota, 3 * SECOND_NS);
    }
    // The largest burst a quota accepts passes on a fresh state too.
    let max = largest_burst(Gcra::per_second(1_000).unwrap());
    let quota = Gcra::per_second(1_000).unwrap().with_burst(max).unwrap();
    let limiter = limiter(quota);
    assert!(check_cost_at(&limiter, max, 0).is_allowed());
    assert!(limiter.check_at(Timestamp::ORIGIN).is_denied());
}

#[test]
fn a_cost_above_the_burst_is_an_error_not_a_denial() {
    let quota = Gcra::per_second(10).unwrap().with_burst(4).unwrap();
    let limiter = limiter(quota);
    // On a fresh state the largest cost is an error too, and consumes nothing either.
    assert_eq!(
        limiter
            .check_with(Request::cost(u64::MAX).at(Timestamp::ORIGIN))
            .unwrap_err(),
        RequestError::CostAboveLimit {
            cost: u64::MAX,
            limit: 4
        }
    );
    let retry_after = assert_a_cost_above_a_limit_of_four_is_an_error(&limiter);
    assert_eq!(retry_after, Duration::from_millis(400));
    let too_much = RequestError::CostAboveLimit { cost: 5, limit: 4 };
    assert!(!too_much.to_string().is_empty());
}

#[test]
fn the_step_denies_a_cost_above_the_burst_on_any_state() {
    // On a fresh state, on an idle one and on a spent one, at the origin, later and at the
    // horizon (an idle key once admitted such a cost).
    for quota in assorted_quotas() {
        let Step::Allow(spent) = quota.step(
            Gcra::FRESH,
            quota.instant(at(10 * SECOND_NS)),
            quota.limit(),
        ) else {
            panic!("a fresh state admits the whole burst");
        };
        let above = quota.limit() + 1;
        assert_the_step_denies_costs_above_the_limit(
            &quota,
            &[Gcra::FRESH, 1, spent, 1 << 63, u64::MAX],
            &[0, 10 * SECOND_NS, YEAR_NS, HORIZON_NS],
            &[above, above + 1, 576_460_753, u64::MAX / 2, u64::MAX],
        );
    }
}

#[test]
fn a_cost_of_two_on_a_burst_of_one_is_denied_on_an_idle_key() {
    let quota = Gcra::per_second(1).unwrap();
    assert_eq!(
        quota.step(Gcra::FRESH, quota.instant(at(10 * SECOND_NS)), 2),
        Step::Deny
    );
}

#[test]
fn a_huge_cost_at_the_horizon_neither_panics_nor_passes() {
    // 576,460,753 emission intervals of one second are just past 2^63 ticks: the request's
    // increment alone exceeds the horizon's instant.
    let quota = Gcra::per_second(1).unwrap();
    let now = quota.instant(Timestamp::HORIZON);
    for state in [Gcra::FRESH, now.ticks(), now.ticks() - 1, u64::MAX] {
        assert_eq!(quota.step(state, now, 576_460_753), Step::Deny);
        call_every_method(&quota, state, now);
    }
    for quota in assorted_quotas() {
        let now = quota.instant(Timestamp::HORIZON);
        assert!(quota.limit() < 576_460_753);
        assert_eq!(quota.step(Gcra::FRESH, now, 576_460_753), Step::Deny);
    }
}

#[test]
fn a_cost_of_zero_passes_and_changes_nothing() {
    let quota = Gcra::per_second(2).unwrap();
    let limiter = limiter(quota);
    let spent = assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing(&limiter);
    assert!(peek_cost_at(&limiter, 0, 0).is_allowed());
    assert!(limiter.check_at(Timestamp::ORIGIN).is_denied());
    // The pure step admits a cost of zero without moving the state forward when it is ahead.
    let tat = spent.state_word();
    let origin = quota.instant(Timestamp::ORIGIN);
    assert_eq!(quota.step(tat, origin, 0), Step::Allow(tat));
    assert_eq!(quota.retry_after_ns(tat, origin, 0), 0);
}

#[test]
fn remaining_reset_after_and_headers_follow_the_quota() {
    // 10 per minute: one unit every 6 seconds.
    let quota = Gcra::per_minute(10).unwrap();
    let clock = ManualClock::starting_at(at(7 * SECOND_NS));
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
    let denied = limiter.check_with(Request::cost(3)).unwrap();
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
    assert!(limiter.check_with(Request::cost(3)).unwrap().is_allowed());
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
    visit: impl FnMut(&Limiter<Gcra, ManualClock>, u64, u64, &Decision<Gcra>),
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
            6 => rng.gen_range(0..=interval_ns.saturating_mul(quota.limit()).min(YEAR_NS)),
            _ => rng.gen_range(0..=interval_ns / 8 + 1),
        };
        let cost = rng.gen_range(1..=quota.limit());
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
                    quota.step(decision.state_word(), quota.instant(at(now + wait)), cost),
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
                let wait = assert_reset_after_restores_the_limit(limiter, now, decision, 1);
                let state = decision.state_word();
                let later = quota.instant(at(now + wait));
                assert!(quota.is_fresh(state, later), "{quota:?} at {now}+{wait}");
                assert!(peek_cost_at(limiter, quota.limit(), now + wait).is_allowed());
                if wait >= 2 {
                    let sooner = quota.instant(at(now + wait - 2));
                    assert!(quota.remaining(state, sooner) < quota.limit());
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
                _ => quota.instant(at(rng.gen_range(0..=HORIZON_NS))).ticks(),
            };
            let now_ns = rng.gen_range(0..=HORIZON_NS);
            let now = quota.instant(at(now_ns));
            let cost = rng.gen_range(1..=quota.limit());
            if let Step::Allow(written) = quota.step(state, now, cost) {
                assert!(written > state, "{quota:?}: {state} -> {written}");
                // The two largest words are keyed tables' slot markers.
                assert!(written < u64::MAX - 1);
                // Any state fresh at a time no later than now is below the written one.
                let earlier = quota.instant(at(rng.gen_range(0..=now_ns)));
                let fresh = rng.gen_range(0..=earlier.ticks());
                assert!(quota.is_fresh(fresh, earlier));
                assert!(written > fresh);
            }
        }
    }
}

#[test]
fn no_input_makes_a_step_panic() {
    let mut rng = StdRng::seed_from_u64(8);
    let extreme_readings = [0, 1, HORIZON_NS - 1, HORIZON_NS];
    for quota in assorted_quotas() {
        let mut states: Vec<u64> = vec![0, 1, HORIZON_NS, 1 << 62, 1 << 63, u64::MAX - 1, u64::MAX];
        states.extend(
            extreme_readings
                .iter()
                .map(|&ns| quota.instant(at(ns)).ticks()),
        );
        states.extend((0..200).map(|_| rng.gen::<u64>()));
        let mut readings: Vec<u64> = extreme_readings.to_vec();
        readings.extend((0..200).map(|_| rng.gen_range(0..=HORIZON_NS)));
        for &state in &states {
            for &reading in &readings {
                call_every_method(&quota, state, quota.instant(at(reading)));
            }
        }
    }
}

/// Any valid quota: fractional and whole-nanosecond emission intervals, rates from one per
/// 18 years to 16 per nanosecond, bursts up to the largest.
fn any_gcra_quota() -> impl Strategy<Value = Gcra> {
    let period_ns = prop_oneof![
        1u64..=64,
        1u64..=1_000_000_000,
        1u64..=HORIZON_NS,
        Just(1_000_000_000u64),
        Just(HORIZON_NS),
    ];
    let burst = prop_oneof![Just(1u64), 1u64..=256, 1u64..1 << 62];
    let generated = (period_ns, any::<u64>(), 0u32..64, burst).prop_filter_map(
        "valid quota",
        |(period_ns, random, shift, burst)| {
            let max_count = period_ns.saturating_mul(16);
            let count = 1 + ((random % max_count) >> shift);
            Gcra::new(count, Duration::from_nanos(period_ns))
                .ok()?
                .with_burst(burst)
                .ok()
        },
    );
    prop_oneof![
        1 => proptest::sample::select(assorted_quotas()),
        2 => generated,
        1 => Just(Gcra::unlimited()),
    ]
}

proptest! {
    #![proptest_config(proptest_config(20_000))]

    /// `step` denies every cost above the burst and never writes a slot marker, and no pure
    /// method panics (overflow checks are on), for any state word, reading and cost.
    #[test]
    fn no_state_reading_or_cost_makes_a_method_panic_or_admit_above_the_burst(
        (quota, cost) in any_gcra_quota().prop_flat_map(|quota| (Just(quota), any_cost(quota.limit()))),
        state in any_state(),
        now in any_reading(),
    ) {
        check_every_method_on_any_input(&quota, state, now, cost)?;
        // States the quota itself writes, near the reading.
        let near = quota.instant(now).ticks().wrapping_add(state % (1 << 40));
        check_every_method_on_any_input(&quota, near, now, cost)?;
    }
}

proptest! {
    #![proptest_config(proptest_config(20_000))]

    /// `step` is GCRA's inequality, evaluated here without overflow: a request of `n` units
    /// passes on `tat` at `now` iff `max(tat, now) + n·T <= now + tau`, and writes
    /// `max(tat, now) + n·T`. For any quota, state word, reading and cost (0 included), so the
    /// way the step arranges the bound (the one-unit form among them) is checked against the
    /// definition.
    #[test]
    fn the_step_is_the_gcra_inequality(
        (quota, cost) in any_gcra_quota().prop_flat_map(|quota| (Just(quota), any_cost(quota.limit()))),
        state in any_state(),
        now in any_reading(),
    ) {
        let Step::Allow(interval_ticks) =
            quota.step(Gcra::FRESH, quota.instant(Timestamp::ORIGIN), 1)
        else {
            panic!("a fresh state admits a unit");
        };
        let now = quota.instant(now);
        let tolerance_ticks = u128::from(interval_ticks) * u128::from(quota.limit());
        // States the quota itself writes, near the reading, as well as any word.
        let near = now.ticks().wrapping_add(state % (1 << 40));
        for tat in [state, near] {
            let base = u128::from(tat.max(now.ticks()));
            let written = base + u128::from(cost) * u128::from(interval_ticks);
            let expected = if written <= u128::from(now.ticks()) + tolerance_ticks {
                Step::Allow(written as u64)
            } else {
                Step::Deny
            };
            prop_assert_eq!(quota.step(tat, now, cost), expected, "tat {} cost {}", tat, cost);
        }
    }
}

#[test]
fn readings_past_the_horizon_cannot_be_made_and_a_limiter_there_fails_closed() {
    for quota in assorted_quotas() {
        assert_readings_past_the_horizon_cannot_be_made(&quota);
        assert!(quota.instant(at(HORIZON_NS - 1)) <= quota.instant(Timestamp::HORIZON));
        assert!(quota.instant(Timestamp::HORIZON).ticks() <= 1 << 63);
        // A limiter a nanosecond before the horizon admits one burst; at the horizon what the
        // last nanosecond refilled (16 units at most); then it fails closed: time has stopped.
        let clock = assert_a_limiter_at_the_horizon_fails_closed(quota, 1, 16);
        assert_eq!(clock.now(), Timestamp::HORIZON);
    }
}

#[test]
fn a_rejected_timestamp_leaves_the_state_alone() {
    for quota in assorted_quotas() {
        assert_a_rejected_timestamp_leaves_the_state_alone(quota);
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
            let cost = rng.gen_range(1..=quota.limit());
            let expected = check_cost_at(&origin, cost, now);
            let actual = check_cost_at(&shifted, cost, offset + now);
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
        assert!(check_cost_at(&limiter, quota.limit(), start).is_allowed());
        let state = peek_at(&limiter, start).state_word();
        // A day's quota needs a day per unit: wait for its burst to refill first.
        let idle = 100 * DAY_NS + quota.period().as_nanos() as u64 * quota.limit() / quota.count();
        assert!(quota.is_fresh(state, quota.instant(at(start + idle))));
        let decision = check_cost_at(&limiter, quota.limit(), start + idle);
        assert!(decision.is_allowed(), "{quota:?}");
    }
}

#[test]
fn a_clock_stepping_back_grants_nothing_and_is_judged_at_the_latest_time_seen() {
    let quota = Gcra::per_second(10).unwrap();
    let limiter = limiter(quota);
    let reading = 50 * SECOND_NS;
    assert!(check_cost_at(&limiter, 10, reading).is_allowed());
    // Back by any amount, down to the origin: still spent, no panic, and judged at the latest
    // time the state has seen (tat − tau = `reading`): the next unit is 100 ms away, the whole
    // burst a second away, however far back the reading is.
    for back in [1, 100_000_000, SECOND_NS, reading] {
        let decision = limiter.check_at(at(reading - back));
        assert!(decision.is_denied());
        assert_eq!(decision.remaining(), 0);
        assert_eq!(decision.retry_after(), Duration::from_millis(100), "{back}");
        assert_eq!(decision.reset_after(), Duration::from_secs(1), "{back}");
    }
    // The clock comes forward again: the limiter refills from the latest reading it kept.
    assert!(limiter.check_at(at(reading + 99_999_999)).is_denied());
    assert!(limiter.check_at(at(reading + 100_000_000)).is_allowed());
}

#[test]
fn a_reading_behind_the_state_is_judged_at_the_latest_time_the_state_has_seen() {
    // 5 per second, bursts of 1 (T = 200 ms): a check at 10 s leaves tat = 10.2 s.
    let quota = Gcra::per_second(5).unwrap().with_burst(1).unwrap();
    let limiter = limiter(quota);
    assert!(limiter.check_at(at(10 * SECOND_NS)).is_allowed());
    // A reading at 5 s is judged at tat − tau = 10 s.
    let late = limiter.check_at(at(5 * SECOND_NS));
    assert!(late.is_denied());
    assert_eq!(late.retry_after(), Duration::from_millis(200));
    assert_eq!(late.reset_after(), Duration::from_millis(200));
    assert_eq!(late.remaining(), 0);
    // The request passes at 10.2 s, and not a nanosecond sooner.
    assert!(limiter.check_at(at(10_200_000_000 - 1)).is_denied());
    assert!(limiter.check_at(at(10_200_000_000)).is_allowed());
}

/// What a peek of `cost` at `now_ns` reports: (allowed, remaining, retry_after, reset_after).
fn peek_report(
    limiter: &Limiter<Gcra, ManualClock>,
    cost: u64,
    now_ns: u64,
) -> (bool, u64, Duration, Duration) {
    let decision = peek_cost_at(limiter, cost, now_ns);
    (
        decision.is_allowed(),
        decision.remaining(),
        decision.retry_after(),
        decision.reset_after(),
    )
}

/// Quotas whose emission interval is a whole number of nanoseconds, where `tat − tau` is a whole
/// nanosecond.
fn whole_nanosecond_gcra_quota() -> impl Strategy<Value = Gcra> {
    let interval_ns = prop_oneof![1u64..=20, 1u64..=1_000_000, 1u64..=100_000_000_000];
    (
        interval_ns,
        1u64..=1_000,
        prop_oneof![Just(1u64), 1u64..=64, 1u64..=100_000],
    )
        .prop_filter_map("valid quota", |(interval_ns, count, burst)| {
            Gcra::new(count, Duration::from_nanos(interval_ns * count))
                .ok()?
                .with_burst(burst)
                .ok()
        })
}

proptest! {
    #![proptest_config(proptest_config(2_000))]

    /// After checks up to `t`, a peek at any reading `s < t` reports what a peek at
    /// `max(s, tat − tau)` reports (the latest time the state proves it has seen), and from
    /// `tat − tau` on each reading is judged at itself.
    #[test]
    fn a_reading_behind_the_state_reports_as_at_tat_minus_tau(
        quota in prop_oneof![whole_nanosecond_gcra_quota(), any_gcra_quota()],
        start_ns in 0..=YEAR_NS,
        steps in prop::collection::vec((0u64..=4, any::<u64>(), any::<u64>()), 1..20),
        back in (any::<u64>(), 0u8..4),
    ) {
        let limiter = limiter(quota);
        let interval_ns = (quota.period().as_nanos() / quota.count() as u128).max(1) as u64;
        let span_ns = interval_ns.saturating_mul(quota.limit()).min(YEAR_NS);
        let mut now = start_ns;
        for (gap_kind, gap_random, cost_random) in steps {
            let gap_ns = match gap_kind {
                0 => 0,
                1 => gap_random % (interval_ns.saturating_mul(2) + 1),
                2 => gap_random % (span_ns + 1),
                _ => gap_random % 4,
            };
            // Clear of the horizon, where time stops.
            now = (now + gap_ns).min(15 * YEAR_NS);
            let _ = check_cost_at(&limiter, 1 + cost_random % quota.limit(), now);
        }
        let tat = peek_at(&limiter, now).state_word();
        // tau in ticks: the step a unit makes on a fresh state, times the burst.
        let origin = quota.instant(Timestamp::ORIGIN);
        let Step::Allow(interval_ticks) = quota.step(Gcra::FRESH, origin, 1) else {
            panic!("a fresh state admits a unit");
        };
        let latest_seen = tat.saturating_sub(interval_ticks * quota.limit());
        // The latest reading judged at tat − tau: every reading up to it is judged there.
        let boundary = {
            let (mut low, mut high) = (0, now);
            while low < high {
                let middle = low + (high - low).div_ceil(2);
                if quota.instant(at(middle)).ticks() <= latest_seen {
                    low = middle;
                } else {
                    high = middle - 1;
                }
            }
            low
        };
        // Where a reading converts to a whole number of ticks per nanosecond and the emission
        // interval is a whole number of nanoseconds (the case of every quota of whole units per
        // round period, unless its burst spans years), tat − tau is a whole nanosecond.
        let ticks_per_ns = quota.instant(at(1)).ticks();
        let is_whole_nanosecond = ticks_per_ns > 0
            && Some(quota.instant(Timestamp::HORIZON).ticks()) == HORIZON_NS.checked_mul(ticks_per_ns)
            && interval_ticks % ticks_per_ns == 0;
        if is_whole_nanosecond && latest_seen > 0 {
            // tat − tau is a reading of its own.
            prop_assert_eq!(quota.instant(at(boundary)).ticks(), latest_seen);
        }
        let (random, kind) = back;
        let reading = match kind {
            0 => random % (now + 1),
            1 => boundary.saturating_sub(random % 4),
            2 => (boundary + random % 4).min(now),
            _ => random % (boundary + 1),
        };
        let judged_at = reading.max(boundary);
        for cost in [1, quota.limit()] {
            prop_assert_eq!(
                peek_report(&limiter, cost, reading),
                peek_report(&limiter, cost, judged_at),
                "cost {} at {} (tat − tau at {}, latest {})", cost, reading, boundary, now
            );
            let state = tat;
            prop_assert_eq!(
                quota.retry_after_ns(state, quota.instant(at(reading)), cost),
                quota.retry_after_ns(state, quota.instant(at(judged_at)), cost)
            );
        }
        // Past tat − tau, a reading is judged at itself: the full burst is a nanosecond nearer.
        if is_whole_nanosecond && latest_seen > 0 && boundary < now {
            let at_boundary = peek_at(&limiter, boundary).reset_after();
            let after = peek_at(&limiter, boundary + 1).reset_after();
            prop_assert_eq!(after + Duration::from_nanos(1), at_boundary);
        }
    }
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
                admitted_stepping += u64::from(stepping.check_at(at(*reading)).is_allowed());
                admitted_steady += u64::from(steady.check_at(at(monotonic_reading)).is_allowed());
                assert!(
                    admitted_stepping <= admitted_steady,
                    "{quota:?}: {admitted_stepping} admitted with backward steps, \
                     {admitted_steady} with a monotonic clock"
                );
            }
        }
    }
}

/// A reading within the horizon but far ahead of the true time (a timestamp from another clock's
/// origin) cannot be told from the truth: it is trusted, and later correct readings are judged
/// behind the state it wrote, denied until they pass it, with retry-after counted from the time
/// that state was written (the documented rule, pinned here).
#[test]
fn a_reading_far_ahead_is_trusted_until_correct_readings_pass_it() {
    let quota = Gcra::per_second(5).unwrap().with_burst(1).unwrap();
    let limiter = limiter(quota);
    let ahead_ns = 10 * YEAR_NS;
    assert!(limiter.check_at(at(ahead_ns)).is_allowed());
    for correct_ns in [SECOND_NS, DAY_NS, YEAR_NS] {
        let denied = limiter.check_at(at(correct_ns));
        assert!(denied.is_denied());
        assert_eq!(denied.remaining(), 0);
        assert_eq!(denied.retry_after(), Duration::from_millis(200));
    }
    assert!(limiter.check_at(at(ahead_ns + 200_000_000)).is_allowed());
}

//! Edge cases of the fixed-window counter, through the public API: the pure [`Quota`] methods
//! and [`Limiter`] driven by [`ManualClock`] or caller-supplied [`Timestamp`]s.

use crate::common::window::{
    any_window_quota, assert_a_backward_step_admits_no_more_than_a_monotonic_clock,
    assert_a_reading_behind_the_stored_window_grants_nothing,
    assert_a_written_state_grows_unless_the_index_wrapped,
    assert_an_earlier_reading_sees_no_more_than_the_latest,
    assert_an_index_ahead_of_now_is_a_clock_that_stepped_back, assert_backward_windows_are,
    assert_every_invalid_window_quota_is_rejected, assert_no_input_makes_a_step_panic,
    assert_readings_past_the_horizon_cannot_be_made,
    assert_ten_years_later_behaves_as_at_the_origin, fill_window, random_window_schedule,
    WindowQuota,
};
use crate::common::{
    any_cost, any_reading, any_state, assert_a_cost_above_a_limit_of_four_is_an_error,
    assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing,
    assert_a_fresh_limiter_admits_the_limit_once, assert_a_fresh_state_admits_the_limit,
    assert_a_rejected_timestamp_leaves_the_state_alone, assert_remaining_matches_step,
    assert_reset_after_restores_the_limit, assert_retry_after_is_exact,
    assert_the_step_denies_costs_above_the_limit, at, check_cost_at,
    check_every_method_on_any_input, limiter, peek_at, proptest_config, HORIZON_NS, SECOND_NS,
    YEAR_NS,
};
use nanolimit::quota::Step;
use nanolimit::{
    Clock, FixedWindow, Limiter, ManualClock, Quota, QuotaError, RateLimitHeaders, Request,
    Timestamp,
};
use proptest::prelude::*;
use std::time::Duration;

const MICROSECOND_NS: u64 = 1_000;
const MILLISECOND_NS: u64 = 1_000_000;
const MAX_LIMIT: u64 = FixedWindow::MAX_LIMIT;
const MIN_WINDOW_NS: u64 = FixedWindow::MIN_WINDOW.as_nanos() as u64;
/// Stored window indices wrap at this many windows (documented in `nanolimit::quota`).
const INDEX_WRAP: u64 = 1 << 40;
/// How many windows a reading may lag behind the stored window, for windows whose index wraps.
const WRAPPING_BACKWARD_WINDOWS: u64 = 1 << 30;

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
        // Just long enough that the index never wraps: readings years behind still count.
        FixedWindow::new(3, Duration::from_millis(1)).unwrap(),
    ]
}

#[test]
fn every_invalid_quota_is_rejected_with_its_own_error() {
    assert_eq!(MAX_LIMIT, 16_777_200);
    assert_eq!(FixedWindow::MIN_WINDOW, Duration::from_micros(1));
    // The shortest window, 1 µs, is accepted with the largest limit.
    let longest =
        assert_every_invalid_window_quota_is_rejected::<FixedWindow>(&[1, 500, MIN_WINDOW_NS - 1]);
    assert!(limiter(longest).check_at(Timestamp::ORIGIN).is_allowed());
    assert_eq!(
        QuotaError::WindowTooShort {
            min: FixedWindow::MIN_WINDOW
        }
        .to_string(),
        "quota window is shorter than the supported minimum of 1 µs"
    );
}

#[test]
fn the_count_starts_over_exactly_at_each_window_boundary() {
    let quota = FixedWindow::per_second(3).unwrap();
    let limiter = limiter(quota);
    assert!(check_cost_at(&limiter, 2, 7 * SECOND_NS).is_allowed());
    assert!(limiter.check_at(at(8 * SECOND_NS - 1)).is_allowed());
    assert!(limiter.check_at(at(8 * SECOND_NS - 1)).is_denied());
    assert_eq!(peek_at(&limiter, 8 * SECOND_NS - 1).remaining(), 0);
    // The next window starts empty: the 2 × limit burst across a boundary fixed windows allow.
    assert_eq!(peek_at(&limiter, 8 * SECOND_NS).remaining(), 3);
    assert!(check_cost_at(&limiter, 3, 8 * SECOND_NS).is_allowed());
    assert!(limiter.check_at(at(9 * SECOND_NS - 1)).is_denied());
    assert!(limiter.check_at(at(9 * SECOND_NS)).is_allowed());
}

#[test]
fn the_largest_limit_is_counted_exactly() {
    for window in [Duration::from_nanos(MIN_WINDOW_NS), Duration::from_secs(1)] {
        let quota = FixedWindow::new(MAX_LIMIT, window).unwrap();
        let window_ns = quota.window_ns();
        let limiter = limiter(quota);
        let start = 12_345 * window_ns;
        assert!(check_cost_at(&limiter, MAX_LIMIT - 1, start).is_allowed());
        assert_eq!(peek_at(&limiter, start).remaining(), 1);
        assert!(check_cost_at(&limiter, 2, start).is_denied());
        assert!(limiter.check_at(at(start + window_ns - 1)).is_allowed());
        assert!(limiter.check_at(at(start + window_ns - 1)).is_denied());
        assert_eq!(peek_at(&limiter, start + window_ns).remaining(), MAX_LIMIT);
        assert!(check_cost_at(&limiter, MAX_LIMIT, start + window_ns).is_allowed());
        assert_eq!(peek_at(&limiter, start + window_ns).remaining(), 0);
    }
}

#[test]
fn a_full_window_passes_on_a_fresh_state() {
    for quota in assorted_quotas() {
        assert_a_fresh_state_admits_the_limit(&quota);
        assert_a_fresh_limiter_admits_the_limit_once(quota, 3 * SECOND_NS + 17);
    }
}

#[test]
fn a_cost_above_the_limit_is_an_error_not_a_denial() {
    let quota = FixedWindow::per_second(4).unwrap();
    let limiter = limiter(quota);
    assert_a_cost_above_a_limit_of_four_is_an_error(&limiter);
    // The pure step denies such costs without panicking, on a spent state, on one written in a
    // later window, and on any word.
    let spent = peek_at(&limiter, 0).state_word();
    let Step::Allow(later) = quota.step(spent, quota.instant(at(SECOND_NS)), 1) else {
        panic!("the next window admits a unit");
    };
    assert_the_step_denies_costs_above_the_limit(
        &quota,
        &[FixedWindow::FRESH, spent, later, u64::MAX],
        &[0, SECOND_NS, HORIZON_NS],
        &[5, 6, u64::MAX],
    );
}

#[test]
fn a_cost_of_zero_passes_and_changes_nothing() {
    let quota = FixedWindow::per_second(2).unwrap();
    let spent = assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing(&limiter(quota));
    let state = spent.state_word();
    assert_eq!(
        quota.step(state, quota.instant(at(5)), 0),
        Step::Allow(state)
    );
}

#[test]
fn remaining_reset_after_and_headers_follow_the_window() {
    let quota = FixedWindow::per_minute(3).unwrap();
    let clock = ManualClock::starting_at(at(120 * SECOND_NS + 20 * SECOND_NS));
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
    let denied = limiter.check_with(Request::cost(2)).unwrap();
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
    let decision = limiter.check_with(Request::cost(2)).unwrap();
    assert!(decision.is_allowed());
    assert_eq!(decision.remaining(), 1);
    assert_eq!(decision.reset_after(), Duration::from_millis(59_750));
}

#[test]
fn waiting_exactly_retry_after_passes_and_not_a_nanosecond_sooner() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        let mut denials = 0;
        random_window_schedule(
            quota,
            index as u64,
            4_000,
            |limiter, now, cost, decision| {
                if assert_retry_after_is_exact(limiter, now, cost, decision, 0).is_some() {
                    denials += 1;
                }
            },
        );
        assert!(denials > 100, "{quota:?}: only {denials} denials");
    }
}

#[test]
fn waiting_exactly_reset_after_restores_the_full_limit() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        random_window_schedule(
            quota,
            100 + index as u64,
            2_000,
            |limiter, now, _, decision| {
                let wait = assert_reset_after_restores_the_limit(limiter, now, decision, 0);
                let state = decision.state_word();
                assert!(quota.is_fresh(state, quota.instant(at(now + wait))));
                if wait == 0 {
                    assert!(quota.is_fresh(state, quota.instant(at(now))));
                }
                assert_remaining_matches_step(&quota, state, now, decision.remaining());
            },
        );
    }
}

#[test]
fn a_written_state_is_greater_than_the_one_it_replaces_unless_the_index_wrapped() {
    assert_a_written_state_grows_unless_the_index_wrapped(assorted_quotas());
}

#[test]
fn no_input_from_any_clock_reading_makes_a_step_panic() {
    assert_no_input_makes_a_step_panic(assorted_quotas());
}

#[test]
fn readings_past_the_horizon_cannot_be_made_and_a_limiter_there_fails_closed() {
    for quota in assorted_quotas() {
        let clock = assert_readings_past_the_horizon_cannot_be_made(quota);
        assert_eq!(clock.now(), Timestamp::HORIZON);
    }
}

#[test]
fn a_rejected_timestamp_leaves_the_state_alone() {
    for quota in assorted_quotas() {
        assert_a_rejected_timestamp_leaves_the_state_alone(quota);
    }
}

proptest! {
    #![proptest_config(proptest_config(20_000))]

    /// `step` denies every cost above the limit and never writes a slot marker, and no pure
    /// method panics (overflow checks are on), for any state word, reading and cost.
    #[test]
    fn no_state_reading_or_cost_makes_a_method_panic_or_admit_above_the_limit(
        (quota, cost) in prop_oneof![
            1 => proptest::sample::select(assorted_quotas()),
            2 => any_window_quota::<FixedWindow>(),
        ]
        .prop_flat_map(|quota| (Just(quota), any_cost(quota.limit()))),
        state in any_state(),
        now in any_reading(),
    ) {
        check_every_method_on_any_input(&quota, state, now, cost)?;
    }
}

#[test]
fn ten_years_after_the_origin_the_limiter_behaves_as_at_the_origin() {
    for (index, quota) in assorted_quotas().into_iter().enumerate() {
        assert_ten_years_later_behaves_as_at_the_origin(quota, 200 + index as u64);
    }
}

#[test]
fn a_key_idle_for_any_number_of_windows_below_the_wrap_margin_is_fresh() {
    // 1 µs windows: the 2^40 window indices wrap after 12.7 days.
    let quota = FixedWindow::new(50, Duration::from_nanos(MICROSECOND_NS)).unwrap();
    let window_ns = quota.window_ns();
    assert_eq!(quota.backward_windows(), WRAPPING_BACKWARD_WINDOWS);
    let longest_idle = INDEX_WRAP - WRAPPING_BACKWARD_WINDOWS - 1;
    for start in [
        0,
        5,
        INDEX_WRAP - 3,
        INDEX_WRAP - 1,
        INDEX_WRAP,
        3 * INDEX_WRAP - 2,
    ] {
        for idle in [
            1,
            2,
            1_000,
            WRAPPING_BACKWARD_WINDOWS,
            1 << 39,
            longest_idle,
        ] {
            let limiter = limiter(quota);
            fill_window(&limiter, start);
            let state = peek_at(&limiter, start * window_ns).state_word();
            let index = start + idle;
            for reading in [index * window_ns, index * window_ns + window_ns - 1] {
                let now = quota.instant(at(reading));
                assert!(
                    quota.is_fresh(state, now),
                    "idle {idle} from window {start}"
                );
                assert_eq!(quota.remaining(state, now), 50);
                assert_eq!(quota.reset_after_ns(state, now), 0);
            }
            assert!(check_cost_at(&limiter, 50, index * window_ns).is_allowed());
        }
    }
    // A hundred days of 1-second windows, through the clock.
    let quota = FixedWindow::per_second(50).unwrap();
    let clock = ManualClock::starting_at(at(3 * YEAR_NS));
    let limiter = Limiter::with_clock(quota, clock.clone());
    assert!(limiter.check_with(Request::cost(50)).unwrap().is_allowed());
    clock.advance(Duration::from_secs(100 * 86_400));
    assert!(limiter.check_with(Request::cost(50)).unwrap().is_allowed());
    // A hundred days of 1 ms windows.
    let quota = FixedWindow::new(50, Duration::from_millis(1)).unwrap();
    let clock = ManualClock::starting_at(at(3 * YEAR_NS + MILLISECOND_NS / 2));
    let limiter = Limiter::with_clock(quota, clock.clone());
    assert!(limiter.check_with(Request::cost(50)).unwrap().is_allowed());
    clock.advance(Duration::from_secs(100 * 86_400));
    assert!(limiter.check_with(Request::cost(50)).unwrap().is_allowed());
}

#[test]
fn a_window_index_ahead_of_now_is_a_clock_that_stepped_back() {
    assert_an_index_ahead_of_now_is_a_clock_that_stepped_back(
        FixedWindow::new(50, Duration::from_nanos(MICROSECOND_NS)).unwrap(),
    );
}

#[test]
fn a_reading_behind_the_stored_window_grants_nothing_and_reports_as_at_its_start() {
    assert_a_reading_behind_the_stored_window_grants_nothing(assorted_quotas());
}

#[test]
fn backward_windows_are_the_documented_figures() {
    // 1 µs windows wrap their index: the band. 1 ms and 1 s never do: everything the 40-bit
    // index leaves above the last window before the horizon (16.6 years of 1 ms windows).
    assert_backward_windows_are::<FixedWindow>(&[
        (Duration::from_micros(1), 1 << 30),
        (Duration::from_millis(1), 523_050_875_472),
        (Duration::from_secs(1), 1_098_935_167_023),
    ]);
}

#[test]
fn a_clock_stepping_back_grants_nothing_and_waits_count_from_the_stored_window() {
    let quota = FixedWindow::per_second(10).unwrap();
    let limiter = limiter(quota);
    let latest = 5 * SECOND_NS + SECOND_NS / 2;
    assert!(check_cost_at(&limiter, 10, latest).is_allowed());
    // A reading in window 5 is judged at itself; one behind it is judged at window 5's start, so
    // the window ends a whole window from then.
    let window_start = 5 * SECOND_NS;
    for reading in [latest - 1, window_start, window_start - 1, 4 * SECOND_NS, 0] {
        let judged_at = reading.max(window_start);
        let decision = limiter.check_at(at(reading));
        assert!(decision.is_denied(), "at {reading}");
        assert_eq!(decision.remaining(), 0);
        let wait = Duration::from_nanos(6 * SECOND_NS - judged_at);
        assert_eq!(decision.retry_after(), wait, "at {reading}");
        assert_eq!(decision.reset_after(), wait, "at {reading}");
    }
    assert!(limiter.check_at(at(6 * SECOND_NS - 1)).is_denied());
    assert!(check_cost_at(&limiter, 10, 6 * SECOND_NS).is_allowed());
}

#[test]
fn an_earlier_reading_sees_no_more_than_the_latest_and_waits_count_from_when_it_is_judged() {
    assert_an_earlier_reading_sees_no_more_than_the_latest(assorted_quotas());
}

#[test]
fn after_a_backward_step_no_more_is_admitted_than_with_a_monotonic_clock() {
    assert_a_backward_step_admits_no_more_than_a_monotonic_clock(assorted_quotas());
}

//! Edge cases of the sliding-window counter, through the public API: the pure [`Quota`] methods
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
    check_every_method_on_any_input, limiter, peek_at, proptest_config, DAY_NS, HORIZON_NS,
    SECOND_NS, YEAR_NS,
};
use nanolimit::quota::Step;
use nanolimit::{
    Clock, Limiter, ManualClock, Quota, QuotaError, RateLimitHeaders, Request, SlidingWindow,
    Timestamp,
};
use proptest::prelude::*;
use std::time::Duration;

const MILLISECOND_NS: u64 = 1_000_000;
const MAX_LIMIT: u64 = SlidingWindow::MAX_LIMIT;
const MIN_WINDOW_NS: u64 = SlidingWindow::MIN_WINDOW.as_nanos() as u64;
/// Stored window indices wrap at this many windows (documented in `nanolimit::quota`).
const INDEX_WRAP: u64 = 1 << 24;
/// How many windows a reading may lag behind the stored window, for windows whose index wraps.
const WRAPPING_BACKWARD_WINDOWS: u64 = 1 << 16;

fn assorted_quotas() -> Vec<SlidingWindow> {
    vec![
        SlidingWindow::per_second(1).unwrap(),
        SlidingWindow::per_second(2).unwrap(),
        SlidingWindow::per_second(10).unwrap(),
        SlidingWindow::per_minute(100).unwrap(),
        SlidingWindow::new(7, Duration::from_nanos(MIN_WINDOW_NS)).unwrap(),
        SlidingWindow::new(MAX_LIMIT, Duration::from_nanos(MIN_WINDOW_NS)).unwrap(),
        SlidingWindow::new(MAX_LIMIT, Duration::from_secs(1)).unwrap(),
        SlidingWindow::new(1_000, Duration::from_nanos(1_000_000_007)).unwrap(),
        SlidingWindow::per_hour(3).unwrap(),
    ]
}

#[test]
fn every_invalid_quota_is_rejected_with_its_own_error() {
    assert_eq!(MAX_LIMIT, 1_048_560);
    assert_eq!(SlidingWindow::MIN_WINDOW, Duration::from_millis(1));
    // The shortest window, 1 ms, is accepted with the largest limit.
    let longest = assert_every_invalid_window_quota_is_rejected::<SlidingWindow>(&[
        1,
        999,
        MIN_WINDOW_NS - 1,
    ]);
    assert!(limiter(longest).check_at(Timestamp::ORIGIN).is_allowed());
    assert_eq!(
        SlidingWindow::new(5, Duration::from_nanos(999_999)),
        Err(QuotaError::WindowTooShort {
            min: Duration::from_millis(1)
        })
    );
    assert_eq!(
        QuotaError::WindowTooShort {
            min: SlidingWindow::MIN_WINDOW
        }
        .to_string(),
        "quota window is shorter than the supported minimum of 1 ms"
    );
}

#[test]
fn the_previous_window_weighs_by_the_part_still_inside_the_sliding_window() {
    // 10 per second.
    let quota = SlidingWindow::per_second(10).unwrap();
    let limiter = limiter(quota);
    assert!(check_cost_at(&limiter, 10, SECOND_NS / 2).is_allowed());
    assert!(limiter.check_at(at(SECOND_NS - 1)).is_denied());
    // 300 ms into the next window, 70 % of the previous window's 10 still count: 3 pass.
    let middle = SECOND_NS + 300 * MILLISECOND_NS;
    assert_eq!(peek_at(&limiter, middle).remaining(), 3);
    assert!(check_cost_at(&limiter, 3, middle).is_allowed());
    assert!(limiter.check_at(at(middle)).is_denied());
    assert_eq!(peek_at(&limiter, middle).remaining(), 0);
    // The share is rounded down: a nanosecond later it is 6.99999999, counted as 6, and
    // 6 + 3 + 1 = 10 passes.
    assert_eq!(peek_at(&limiter, middle + 1).remaining(), 1);
    assert!(limiter.check_at(at(middle + 1)).is_allowed());
    // The next unit waits for the share to drop below 6: not at 400 ms (exactly 6), but a
    // nanosecond after.
    assert!(limiter
        .check_at(at(middle + 50 * MILLISECOND_NS))
        .is_denied());
    assert!(limiter
        .check_at(at(middle + 100 * MILLISECOND_NS))
        .is_denied());
    assert!(limiter
        .check_at(at(middle + 100 * MILLISECOND_NS + 1))
        .is_allowed());
    assert!(limiter
        .check_at(at(middle + 100 * MILLISECOND_NS + 1))
        .is_denied());
    // The window after: the previous window is the one with 5, and the one before is gone.
    let next = 2 * SECOND_NS;
    assert_eq!(peek_at(&limiter, next).remaining(), 5);
    // Half of 5 is 2.5, counted as 2.
    assert_eq!(peek_at(&limiter, next + SECOND_NS / 2).remaining(), 8);
    assert_eq!(
        peek_at(&limiter, next + 600 * MILLISECOND_NS).remaining(),
        8
    );
    assert_eq!(
        peek_at(&limiter, next + 600 * MILLISECOND_NS + 1).remaining(),
        9
    );
    // Two windows later everything is forgotten.
    assert_eq!(peek_at(&limiter, 3 * SECOND_NS).remaining(), 10);
}

#[test]
fn the_largest_limit_is_counted_exactly() {
    for window in [Duration::from_nanos(MIN_WINDOW_NS), Duration::from_secs(1)] {
        let quota = SlidingWindow::new(MAX_LIMIT, window).unwrap();
        let window_ns = quota.window_ns();
        let limiter = limiter(quota);
        let start = 12_345 * window_ns;
        assert!(check_cost_at(&limiter, MAX_LIMIT, start).is_allowed());
        assert!(limiter.check_at(at(start + window_ns - 1)).is_denied());
        // Half way through the next window, half the previous count has slid out.
        let half = start + window_ns + window_ns / 2;
        assert_eq!(peek_at(&limiter, half).remaining(), MAX_LIMIT / 2);
        assert!(check_cost_at(&limiter, MAX_LIMIT / 2, half).is_allowed());
        assert!(limiter.check_at(at(half)).is_denied());
        // At the end of that window, the previous count still weighs 1/W per nanosecond left,
        // rounded down: 1 unit with 1 ms windows, none with 1 s windows.
        let last = start + 2 * window_ns - 1;
        let weight_of_last_nanosecond = MAX_LIMIT / window_ns;
        assert_eq!(
            weight_of_last_nanosecond,
            u64::from(window_ns == MIN_WINDOW_NS)
        );
        let expected = MAX_LIMIT - MAX_LIMIT / 2 - weight_of_last_nanosecond;
        assert_eq!(peek_at(&limiter, last).remaining(), expected);
        assert!(check_cost_at(&limiter, expected, last).is_allowed());
        assert!(limiter.check_at(at(last)).is_denied());
        // Both count fields now hold values near the maximum, and still decode correctly:
        // MAX_LIMIT − that weight is now the previous count.
        let next = start + 2 * window_ns;
        let previous = MAX_LIMIT - weight_of_last_nanosecond;
        for (elapsed_ns, expected) in [
            (0, weight_of_last_nanosecond),
            (window_ns / 4, MAX_LIMIT - previous * 3 / 4),
            (window_ns / 2, MAX_LIMIT - previous / 2),
            (window_ns - 1, MAX_LIMIT - previous / window_ns),
        ] {
            assert_eq!(peek_at(&limiter, next + elapsed_ns).remaining(), expected);
        }
        assert_eq!(peek_at(&limiter, next + window_ns).remaining(), MAX_LIMIT);
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
    let quota = SlidingWindow::per_second(4).unwrap();
    let limiter = limiter(quota);
    assert_a_cost_above_a_limit_of_four_is_an_error(&limiter);
    // The pure step denies such costs without panicking, on a spent state, on one written in a
    // later window, and on any word.
    let spent = peek_at(&limiter, 0).state_word();
    let Step::Allow(later) = quota.step(spent, quota.instant(at(2 * SECOND_NS)), 1) else {
        panic!("two windows later a unit passes");
    };
    assert_the_step_denies_costs_above_the_limit(
        &quota,
        &[SlidingWindow::FRESH, spent, later, u64::MAX],
        &[0, SECOND_NS, HORIZON_NS],
        &[5, 6, u64::MAX],
    );
}

#[test]
fn a_cost_of_zero_passes_and_changes_nothing() {
    let quota = SlidingWindow::per_second(2).unwrap();
    let spent = assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing(&limiter(quota));
    let state = spent.state_word();
    assert_eq!(
        quota.step(state, quota.instant(at(5)), 0),
        Step::Allow(state)
    );
}

#[test]
fn remaining_reset_after_and_headers_follow_the_windows() {
    // 4 per minute, from 15 s into window 1.
    let quota = SlidingWindow::per_minute(4).unwrap();
    let clock = ManualClock::starting_at(at(60 * SECOND_NS + 15 * SECOND_NS));
    let limiter = Limiter::with_clock(quota, clock.clone());
    // The full limit is back once the count has slid into the previous window (45 s from now)
    // and its share there, ⌊used × (60 s − e) / 60 s⌋, has rounded down to zero: a nanosecond
    // after e = 60 s − 60 s / used.
    for (used, reset_after_s, reset_seconds) in [(1, 45, 46), (2, 75, 76), (3, 85, 86), (4, 90, 91)]
    {
        let decision = limiter.check();
        assert!(decision.is_allowed());
        assert_eq!(decision.limit(), 4);
        assert_eq!(decision.remaining(), 4 - used);
        assert_eq!(
            decision.reset_after(),
            Duration::from_secs(reset_after_s) + Duration::from_nanos(1)
        );
        assert_eq!(
            decision.headers(),
            RateLimitHeaders {
                limit: 4,
                remaining: 4 - used,
                reset_seconds,
                retry_after_seconds: None,
            }
        );
    }
    let denied = limiter.check();
    assert!(denied.is_denied());
    // One unit passes once the previous window's 4 count as 3: a nanosecond into the next window.
    assert_eq!(
        denied.retry_after(),
        Duration::from_secs(45) + Duration::from_nanos(1)
    );
    assert_eq!(
        denied.headers(),
        RateLimitHeaders {
            limit: 4,
            remaining: 0,
            reset_seconds: 91,
            retry_after_seconds: Some(46),
        }
    );
    // 14.5 s into window 2: the previous 4 weigh 4 × 45.5 / 60 = 3.03, counted as 3.
    clock.advance(Duration::from_millis(59_500));
    assert!(limiter.peek().is_allowed());
    let denied = limiter.check_with(Request::cost(2)).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 1);
    // The 4 count as 0 once less than 15 s of their window remains in the sliding window
    // (after 45 s); 2 units pass once they count as 2, after 15 s.
    assert_eq!(
        denied.reset_after(),
        Duration::from_millis(30_500) + Duration::from_nanos(1)
    );
    assert_eq!(
        denied.retry_after(),
        Duration::from_millis(500) + Duration::from_nanos(1)
    );
    assert_eq!(
        denied.headers(),
        RateLimitHeaders {
            limit: 4,
            remaining: 1,
            reset_seconds: 31,
            retry_after_seconds: Some(1),
        }
    );
    // At 15 s the 4 still count as 3; a nanosecond later, as 2.
    clock.advance(Duration::from_millis(500));
    let denied = limiter.check_with(Request::cost(2)).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_nanos(1));
    clock.advance(Duration::from_nanos(1));
    assert!(limiter.check_with(Request::cost(2)).unwrap().is_allowed());
    // 2 (of 4) + 2: nothing remains, and the 2 count as 0 once less than 30 s of this window
    // remains in the sliding window: 45 s − 1 ns + 30 s + 1 ns from now.
    let decision = limiter.peek();
    assert_eq!(decision.remaining(), 0);
    assert_eq!(decision.reset_after(), Duration::from_secs(75));
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
                let limit = quota.limit();
                // The full limit is back after `wait` (through the limiter, and not yet a
                // nanosecond sooner): the previous window's share has rounded down to zero and
                // nothing counts in the current one.
                let wait = assert_reset_after_restores_the_limit(limiter, now, decision, 0);
                let state = decision.state_word();
                let then = quota.instant(at(now + wait));
                assert_eq!(quota.remaining(state, then), limit);
                assert!(matches!(quota.step(state, then, limit), Step::Allow(_)));
                assert_eq!(quota.reset_after_ns(state, then), 0);
                // And not a nanosecond sooner.
                if wait > 0 {
                    let sooner = quota.instant(at(now + wait - 1));
                    assert!(
                        quota.remaining(state, sooner) < limit,
                        "{quota:?} at {now}+{wait}"
                    );
                    assert_eq!(quota.step(state, sooner, limit), Step::Deny);
                }
                // A fresh state has nothing to wait for; a full one is fresh from the next
                // window on (a keyed table may then reuse its slot).
                if quota.is_fresh(state, quota.instant(at(now))) {
                    assert_eq!(wait, 0);
                }
                let next_window = ((now + wait) / quota.window_ns() + 1) * quota.window_ns();
                assert!(quota.is_fresh(state, quota.instant(at(next_window))));
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
            2 => any_window_quota::<SlidingWindow>(),
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
    let quota = SlidingWindow::per_second(50).unwrap();
    let window_ns = quota.window_ns();
    assert_eq!(quota.backward_windows(), WRAPPING_BACKWARD_WINDOWS);
    let longest_idle = INDEX_WRAP - WRAPPING_BACKWARD_WINDOWS - 1;
    let hundred_days = 100 * DAY_NS / window_ns;
    // Start windows on both sides of a multiple of 2^24, so the stored residue wraps.
    for start in [
        0,
        5,
        INDEX_WRAP - 3,
        INDEX_WRAP - 1,
        INDEX_WRAP,
        3 * INDEX_WRAP - 2,
    ] {
        for idle in [
            2,
            3,
            1_000,
            WRAPPING_BACKWARD_WINDOWS,
            hundred_days,
            1 << 23,
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
    // The same through the clock: a hundred days later.
    let clock = ManualClock::starting_at(at(3 * YEAR_NS));
    let limiter = Limiter::with_clock(quota, clock.clone());
    assert!(limiter.check_with(Request::cost(50)).unwrap().is_allowed());
    clock.advance(Duration::from_secs(100 * 86_400));
    assert!(limiter.check_with(Request::cost(50)).unwrap().is_allowed());
    // With the shortest windows, idle times up to the margin are 4.6 hours.
    let quota = SlidingWindow::new(10, Duration::from_nanos(MIN_WINDOW_NS)).unwrap();
    let clock = ManualClock::starting_at(at(YEAR_NS));
    let limiter = Limiter::with_clock(quota, clock.clone());
    assert!(limiter.check_with(Request::cost(10)).unwrap().is_allowed());
    clock.advance(Duration::from_nanos(longest_idle * MIN_WINDOW_NS));
    assert!(limiter.check_with(Request::cost(10)).unwrap().is_allowed());
}

#[test]
fn a_window_index_ahead_of_now_is_a_clock_that_stepped_back() {
    assert_an_index_ahead_of_now_is_a_clock_that_stepped_back(
        SlidingWindow::per_second(50).unwrap(),
    );
}

#[test]
fn a_reading_behind_the_stored_window_grants_nothing_and_reports_as_at_its_start() {
    assert_a_reading_behind_the_stored_window_grants_nothing(assorted_quotas());
}

#[test]
fn backward_windows_are_the_documented_figures() {
    // 1 ms and 1 s windows wrap their index: the band (65 s resp. 18 hours). A minute and an
    // hour never do: everything the 24-bit index leaves above the last window before the
    // horizon (13.6 years of minutes; more hours than the horizon holds).
    assert_backward_windows_are::<SlidingWindow>(&[
        (Duration::from_millis(1), 1 << 16),
        (Duration::from_secs(1), 1 << 16),
        (Duration::from_secs(60), 7_169_536),
        (Duration::from_secs(3_600), 16_617_088),
    ]);
}

#[test]
fn a_clock_stepping_back_grants_nothing_and_waits_count_from_the_stored_window() {
    let quota = SlidingWindow::per_second(10).unwrap();
    // The same requests on a clock that stepped back and on one that never does.
    let stepping = limiter(quota);
    let steady = limiter(quota);
    // 10 in window 4, then 5 in window 5 at 500 ms (the previous 10 weigh 5).
    let latest = 5 * SECOND_NS + SECOND_NS / 2;
    for each in [&stepping, &steady] {
        assert!(check_cost_at(each, 10, 4 * SECOND_NS + 1).is_allowed());
        assert!(check_cost_at(each, 5, latest).is_allowed());
        assert!(each.check_at(at(latest)).is_denied());
    }
    // With no traffic, one unit passes a nanosecond after `latest`, once the 10 count as 4; the
    // full limit is back once window 5's 5 count as 0 in window 6, a nanosecond after 800 ms.
    let passes_at = latest + 1;
    let full_at = 6 * SECOND_NS + 800 * MILLISECOND_NS + 1;
    // Back into window 5's start, into window 4, five windows back to the origin: nothing
    // passes and no panic. A reading in window 5 is judged at itself; one behind it is judged at
    // window 5's start (where the 10 weigh in full), so its waits count from there.
    let window_start = 5 * SECOND_NS;
    for reading in [latest - 1, window_start, window_start - 1, 4 * SECOND_NS, 0] {
        let judged_at = reading.max(window_start);
        let decision = stepping.check_at(at(reading));
        assert!(decision.is_denied(), "at {reading}");
        assert_eq!(decision.remaining(), 0);
        assert_eq!(
            decision.retry_after(),
            Duration::from_nanos(passes_at - judged_at),
            "at {reading}"
        );
        assert_eq!(
            decision.reset_after(),
            Duration::from_nanos(full_at - judged_at),
            "at {reading}"
        );
        // The monotonic clock still reads `latest`, and denies too.
        assert!(steady.check_at(at(latest)).is_denied());
    }
    // Forward again: the previous window slides out on schedule, exactly as with the monotonic
    // clock. One unit a nanosecond after `latest` (4 + 5 + 1), the next a nanosecond after
    // 600 ms (3 + 6 + 1).
    for (reading, allowed) in [
        (latest, false),
        (passes_at, true),
        (passes_at, false),
        (latest + 100 * MILLISECOND_NS, false),
        (latest + 100 * MILLISECOND_NS + 1, true),
        (latest + 100 * MILLISECOND_NS + 1, false),
    ] {
        assert_eq!(
            stepping.check_at(at(reading)).is_allowed(),
            allowed,
            "at {reading}"
        );
        assert_eq!(
            steady.check_at(at(reading)).is_allowed(),
            allowed,
            "at {reading}"
        );
    }
}

#[test]
fn an_earlier_reading_sees_no_more_than_the_latest_and_waits_count_from_when_it_is_judged() {
    assert_an_earlier_reading_sees_no_more_than_the_latest(assorted_quotas());
}

#[test]
fn after_a_backward_step_no_more_is_admitted_than_with_a_monotonic_clock() {
    assert_a_backward_step_admits_no_more_than_a_monotonic_clock(assorted_quotas());
}

/// The module documentation's overshoot example: 10 requests at 0.9 s, then one attempt every
/// 100 ms from 1.0 s. Each attempt from 1.1 s on finds the previous window's 10 weighing one
/// unit less, so one more passes each time: 10 + 8 requests in [0.9 s, 1.9 s), a window-long
/// interval.
#[test]
fn the_overshoot_across_a_boundary_is_as_documented() {
    let quota = SlidingWindow::per_second(10).unwrap();
    let limiter = limiter(quota);
    let mut admitted_ns = Vec::new();
    for _ in 0..10 {
        assert!(limiter.check_at(at(900 * MILLISECOND_NS)).is_allowed());
        admitted_ns.push(900 * MILLISECOND_NS);
    }
    assert!(limiter.check_at(at(900 * MILLISECOND_NS)).is_denied());
    for attempt in 0..20 {
        let reading = SECOND_NS + attempt * 100 * MILLISECOND_NS;
        if limiter.check_at(at(reading)).is_allowed() {
            admitted_ns.push(reading);
        }
    }
    let in_interval = admitted_ns
        .iter()
        .filter(|&&reading| (900 * MILLISECOND_NS..1_900 * MILLISECOND_NS).contains(&reading))
        .count();
    assert_eq!(in_interval, 18);
    // The attempt at 1.0 s is denied (the 10 weigh in full), each from 1.1 s to 1.8 s passes.
    let expected: Vec<u64> = std::iter::repeat_n(900 * MILLISECOND_NS, 10)
        .chain((11..=18).map(|tenth| tenth * 100 * MILLISECOND_NS))
        .collect();
    assert_eq!(&admitted_ns[..18], &expected[..]);
    // However the boundary falls, any window-long interval holds less than twice the limit.
    assert!(in_interval < 2 * quota.limit() as usize);
}

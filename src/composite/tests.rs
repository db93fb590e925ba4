//! The refund steps, on their own: a refund never leaves a state looser than the same
//! admissions without the refunded one, gives back exactly where the docs say it does, and
//! never writes below the word the refunded admission replaced.

use crate::clock::Timestamp;
use crate::quota::{FixedWindow, Gcra, Quota, Sealed, SlidingWindow, Step};
use proptest::prelude::*;
use std::time::Duration;

/// One admission attempt: after `advance_ns`, `cost` units.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    advance_ns: u64,
    cost: u64,
}

fn attempts(limit: u64, max_advance_ns: u64) -> impl Strategy<Value = Vec<Attempt>> {
    prop::collection::vec(
        (0..=max_advance_ns, 1..=limit).prop_map(|(advance_ns, cost)| Attempt { advance_ns, cost }),
        0..8,
    )
}

/// Applies the admissions that pass, from `state` at `now_ns`; returns the state, the time,
/// and the attempts admitted (with their times).
fn run<Q: Quota>(
    quota: &Q,
    mut state: u64,
    mut now_ns: u64,
    plan: &[Attempt],
) -> (u64, u64, Vec<(u64, u64)>) {
    let mut admitted = Vec::new();
    for attempt in plan {
        now_ns += attempt.advance_ns;
        let now = quota.instant(Timestamp::from_ns(now_ns).unwrap());
        if let Step::Allow(word) = quota.step(state, now, attempt.cost) {
            state = word;
            admitted.push((now_ns, attempt.cost));
        }
    }
    (state, now_ns, admitted)
}

/// The refund property for `quota`: before, then admission `refunded` at `refunded_at_ns`
/// later, then `after`; the refund of `refunded` on the final state is never looser, at any
/// probe time from the last reading on, than the state the same admissions make without it.
/// Returns whether the refund gave back anything, and whether it was then exact at every probe.
fn check_refund<Q: Quota>(
    quota: Q,
    before: &[Attempt],
    refunded: Attempt,
    after: &[Attempt],
    probes: &[(u64, u64)],
) -> Result<(bool, bool), TestCaseError> {
    let (previous, start_ns, _) = run(&quota, Q::FRESH, 0, before);
    let admission_ns = start_ns + refunded.advance_ns;
    let now = quota.instant(Timestamp::from_ns(admission_ns).unwrap());
    let Step::Allow(written) = quota.step(previous, now, refunded.cost) else {
        return Ok((false, true));
    };
    let (with, last_ns, admitted) = run(&quota, written, admission_ns, after);
    // The same admissions, without the refunded one (each still passes: fewer units are used).
    let mut without = previous;
    for &(at_ns, cost) in &admitted {
        let now = quota.instant(Timestamp::from_ns(at_ns).unwrap());
        match quota.step(without, now, cost) {
            Step::Allow(word) => without = word,
            Step::Deny => {
                return Err(TestCaseError::fail(
                    "an admission denied without the refunded one",
                ))
            }
        }
    }
    let (refunded_state, gave_back) = match quota.refund_step(with, written, refunded.cost) {
        Step::Allow(word) => {
            prop_assert!(word >= previous, "refund wrote {word} below {previous}");
            (word, true)
        }
        Step::Deny => (with, false),
    };
    let mut exact = true;
    for &(probe_after_ns, cost) in probes {
        let probe = quota.instant(Timestamp::from_ns(last_ns + probe_after_ns).unwrap());
        let cost = cost.min(quota.limit());
        let looser = matches!(quota.step(refunded_state, probe, cost), Step::Allow(_))
            && quota.step(without, probe, cost) == Step::Deny;
        prop_assert!(
            !looser,
            "refunded state {refunded_state} looser than {without}"
        );
        exact &= quota.remaining(refunded_state, probe) == quota.remaining(without, probe);
    }
    Ok((gave_back, exact))
}

fn probes(max_ns: u64, limit: u64) -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0..=max_ns, 1..=limit), 1..6)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_gcra_refund_is_never_looser_and_exact_when_nothing_came_after(
        count in 1..20u64, burst in 1..20u64, period_ms in 1..2_000u64,
        before in attempts(20, 400_000_000), refunded_at in 0..400_000_000u64, refunded_cost in 1..20u64,
        after in attempts(20, 400_000_000), probes in probes(3_000_000_000, 20),
    ) {
        let quota = Gcra::new(count, Duration::from_millis(period_ms)).unwrap().with_burst(burst).unwrap();
        let refunded = Attempt { advance_ns: refunded_at, cost: refunded_cost.min(burst) };
        let (gave_back, exact) = check_refund(quota, &before, refunded, &after, &probes)?;
        if after.is_empty() && gave_back {
            prop_assert!(exact);
        }
    }

    #[test]
    fn a_fixed_window_refund_is_never_looser_and_exact(
        limit in 1..30u64, window_ms in 1..2_000u64,
        before in attempts(30, 700_000_000), refunded_at in 0..700_000_000u64, refunded_cost in 1..30u64,
        after in attempts(30, 700_000_000), probes in probes(3_000_000_000, 30),
    ) {
        let quota = FixedWindow::new(limit, Duration::from_millis(window_ms)).unwrap();
        let refunded = Attempt { advance_ns: refunded_at, cost: refunded_cost.min(limit) };
        let (_, exact) = check_refund(quota, &before, refunded, &after, &probes)?;
        prop_assert!(exact);
    }

    #[test]
    fn a_sliding_window_refund_is_never_looser_and_exact(
        limit in 1..30u64, window_ms in 1..2_000u64,
        before in attempts(30, 700_000_000), refunded_at in 0..700_000_000u64, refunded_cost in 1..30u64,
        after in attempts(30, 700_000_000), probes in probes(3_000_000_000, 30),
    ) {
        let quota = SlidingWindow::new(limit, Duration::from_millis(window_ms)).unwrap();
        let refunded = Attempt { advance_ns: refunded_at, cost: refunded_cost.min(limit) };
        let (_, exact) = check_refund(quota, &before, refunded, &after, &probes)?;
        prop_assert!(exact);
    }
}

#[test]
fn a_gcra_refund_gives_nothing_back_once_another_admission_moved_the_state_on() {
    let quota = Gcra::per_second(10).unwrap();
    let now = quota.instant(Timestamp::ORIGIN);
    let Step::Allow(written) = quota.step(Gcra::FRESH, now, 1) else {
        unreachable!()
    };
    let Step::Allow(moved_on) = quota.step(written, now, 1) else {
        unreachable!()
    };
    assert_eq!(quota.refund_step(moved_on, written, 1), Step::Deny);
    assert!(matches!(
        quota.refund_step(written, written, 1),
        Step::Allow(_)
    ));
}

#[test]
fn a_window_refund_gives_nothing_back_once_its_units_count_nowhere() {
    let fixed = FixedWindow::per_second(5).unwrap();
    let first = fixed.instant(Timestamp::ORIGIN);
    let next = fixed.instant(Timestamp::from_ns(1_000_000_000).unwrap());
    let Step::Allow(written) = fixed.step(FixedWindow::FRESH, first, 2) else {
        unreachable!()
    };
    let Step::Allow(later) = fixed.step(written, next, 1) else {
        unreachable!()
    };
    assert_eq!(fixed.refund_step(later, written, 2), Step::Deny);

    let sliding = SlidingWindow::per_second(5).unwrap();
    let Step::Allow(written) = sliding.step(SlidingWindow::FRESH, first, 2) else {
        unreachable!()
    };
    let Step::Allow(next_window) = sliding.step(written, next, 1) else {
        unreachable!()
    };
    let Step::Allow(refunded) = sliding.refund_step(next_window, written, 2) else {
        unreachable!()
    };
    assert_eq!(sliding.remaining(refunded, next), 4);
    let two_on = sliding.instant(Timestamp::from_ns(2_000_000_000).unwrap());
    let Step::Allow(two_windows_on) = sliding.step(next_window, two_on, 1) else {
        unreachable!()
    };
    assert_eq!(sliding.refund_step(two_windows_on, written, 2), Step::Deny);
}

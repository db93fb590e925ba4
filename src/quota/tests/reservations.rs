//! GCRA's reservation steps: with no wait a reservation is a check; cancelling the latest
//! booking is an exact undo.

use super::*;

/// States a random schedule of bookings (reservations with random maximum waits, up to many
/// tolerances) leaves on `quota`.
fn booked_states(quota: crate::quota::Gcra, seed: u64) -> Vec<u64> {
    let mut random = Xorshift(seed);
    let tolerance_ns = quota.period().as_nanos() as u64 * quota.limit() / quota.count();
    let longest = quota.max_wait_ticks(Duration::from_nanos(10 * tolerance_ns + 1));
    let mut state = crate::quota::Gcra::FRESH;
    let mut now_ns = random.up_to(1_000 * SECOND_NS);
    let mut states = Vec::new();
    for _ in 0..2_000 {
        now_ns += random.up_to(tolerance_ns / 2);
        let cost = 1 + random.up_to(quota.limit() - 1);
        let max_wait = random.up_to(longest);
        if let Step::Allow(word) =
            quota.reserve_step(state, quota.instant(at(now_ns)), cost, max_wait)
        {
            state = word;
            states.push(state);
        }
    }
    states
}

/// With a maximum wait of zero, a reservation is a check: `reserve_step(state, now, cost, 0)`
/// is `step(state, now, cost)`, the same decision and the same word, on states reached by
/// checks and by bookings ahead, words at the edges of the range, readings from the origin to
/// the horizon and at a nanosecond either side of the instant a cost becomes admissible, and
/// costs on both sides of the limit.
#[test]
fn a_reservation_with_no_wait_is_a_check() {
    use crate::quota::Gcra;
    let quotas = [
        Gcra::per_second(10).unwrap(),
        Gcra::per_second(3).unwrap().with_burst(7).unwrap(),
        Gcra::new(999_983, Duration::from_nanos(1_000_000_007))
            .unwrap()
            .with_burst(1_000)
            .unwrap(),
        Gcra::per_second(12_500_000_000)
            .unwrap()
            .with_burst(1_250_000)
            .unwrap(),
        Gcra::new(16, Duration::from_nanos(1))
            .unwrap()
            .with_burst(100)
            .unwrap(),
        Gcra::per_day(1).unwrap().with_burst(2).unwrap(),
    ];
    let mut random = Xorshift(0x5eed_0005);
    let (mut allowed, mut denied) = (0, 0);
    for quota in quotas {
        assert_eq!(quota.max_wait_ticks(Duration::ZERO), 0);
        let mut states: Vec<u64> = reachable_states(quota, 0x5eed_0006, SECOND_NS)
            .into_iter()
            .map(|(state, _)| state)
            .collect();
        states.extend(booked_states(quota, 0x5eed_0007));
        states.extend([0, 1, u64::MAX, u64::MAX - 1, u64::MAX - 2, 1 << 63, 3 << 62]);
        for _ in 0..20_000 {
            match assert_reservation_with_no_wait(quota, &states, &mut random) {
                Step::Allow(_) => allowed += 1,
                Step::Deny => denied += 1,
            }
        }
    }
    assert!(
        allowed > 10_000 && denied > 10_000,
        "{allowed} allowed, {denied} denied"
    );
}

/// One case of [`a_reservation_with_no_wait_is_a_check`]: a state among `states` (or a random
/// word), a cost on either side of the limit, a reading near when it becomes admissible; what
/// the check decided.
fn assert_reservation_with_no_wait(
    quota: crate::quota::Gcra,
    states: &[u64],
    random: &mut Xorshift,
) -> Step {
    let limit = quota.limit();
    let state = match random.up_to(3) {
        0 => random.next(),
        _ => states[random.up_to(states.len() as u64 - 1) as usize],
    };
    let cost = match random.up_to(5) {
        0 => 0,
        1 => limit + random.up_to(1),
        2 => u64::MAX - random.up_to(1),
        _ => 1 + random.up_to(limit - 1),
    };
    let now_ns = match random.up_to(3) {
        0 => random.up_to(HORIZON_NS),
        // Around the instant the cost becomes admissible, from a random reading.
        _ => {
            let from_ns = random.up_to(HORIZON_NS / 2);
            let wait_ns = quota.wait_ns(state, quota.instant(at(from_ns)), cost.min(limit));
            (from_ns.saturating_add(wait_ns) + random.up_to(2))
                .saturating_sub(1)
                .min(HORIZON_NS)
        }
    };
    let now = quota.instant(at(now_ns));
    let checked = quota.step(state, now, cost);
    assert_eq!(
        quota.reserve_step(state, now, cost, 0),
        checked,
        "{quota:?}: {state:#x} at {now_ns} ns, cost {cost}"
    );
    checked
}

/// Cancelling a booking while it is still the latest is an exact undo: it restores
/// `max(state, now)` for the word `state` the booking replaced at the reading `now`, and from
/// then on, at any reading no earlier than `now`, every check and booking decides as on
/// `state` and writes the same word (so the limiter is as if the booking had never been made).
/// Behind a later booking, or on a word it did not write, it gives nothing back. A granted
/// booking never starts past the horizon. On states reached by checks and bookings, words at
/// the edges, readings from the origin to the horizon.
#[test]
fn a_cancellation_of_the_latest_booking_is_an_exact_undo() {
    use crate::quota::Gcra;
    let quotas = [
        Gcra::per_second(10).unwrap(),
        Gcra::per_second(3).unwrap().with_burst(7).unwrap(),
        Gcra::new(999_983, Duration::from_nanos(1_000_000_007))
            .unwrap()
            .with_burst(1_000)
            .unwrap(),
        Gcra::new(16, Duration::from_nanos(1))
            .unwrap()
            .with_burst(100)
            .unwrap(),
        Gcra::per_day(1).unwrap().with_burst(2).unwrap(),
    ];
    let mut random = Xorshift(0x5eed_0008);
    let (mut undone, mut kept) = (0, 0);
    for quota in quotas {
        let mut states: Vec<u64> = reachable_states(quota, 0x5eed_0009, SECOND_NS)
            .into_iter()
            .map(|(state, _)| state)
            .collect();
        states.extend(booked_states(quota, 0x5eed_000a));
        states.extend([0, 1, 1 << 62, 1 << 63]);
        for _ in 0..20_000 {
            match assert_cancellation(quota, &states, &mut random) {
                Some(behind_a_later_one) => {
                    undone += 1;
                    kept += u64::from(behind_a_later_one);
                }
                None => continue,
            }
        }
    }
    assert!(
        undone > 10_000 && kept > 10_000,
        "{undone} undone, {kept} kept"
    );
}

/// One case of [`a_cancellation_of_the_latest_booking_is_an_exact_undo`]: a booking on a state
/// among `states` (or a random word), then its cancellation behind a later booking, on words
/// it did not write, and as the latest; `None` if the booking was refused, else whether a later
/// booking was made (and the cancellation behind it gave nothing back).
fn assert_cancellation(
    quota: crate::quota::Gcra,
    states: &[u64],
    random: &mut Xorshift,
) -> Option<bool> {
    use crate::quota::Gcra;
    let tolerance_ns = quota.period().as_nanos() as u64 * quota.limit() / quota.count();
    let state = match random.up_to(4) {
        0 => random.next() >> 1,
        _ => states[random.up_to(states.len() as u64 - 1) as usize],
    };
    let now_ns = match random.up_to(3) {
        0 => HORIZON_NS - random.up_to(10 * tolerance_ns).min(HORIZON_NS),
        _ => random.up_to(HORIZON_NS),
    };
    let now = quota.instant(at(now_ns));
    let cost = 1 + random.up_to(quota.limit() - 1);
    let max_wait = match random.up_to(2) {
        0 => u64::MAX,
        _ => random.up_to(quota.max_wait_ticks(Duration::from_nanos(3 * tolerance_ns))),
    };
    let Step::Allow(booked) = quota.reserve_step(state, now, cost, max_wait) else {
        return None;
    };
    assert!(quota.start_ns(booked, now) <= HORIZON_NS, "{quota:?}");
    let increment = quota.increment_ticks(cost);
    // Behind a later booking (or a check), and on a word it did not write: nothing.
    let later_booking = quota.reserve_step(booked, now, 1, u64::MAX);
    if let Step::Allow(later) = later_booking {
        assert_eq!(Gcra::cancel_step(later, booked, increment), Step::Deny);
    }
    assert_eq!(Gcra::cancel_step(booked + 1, booked, increment), Step::Deny);
    assert_eq!(Gcra::cancel_step(booked - 1, booked, increment), Step::Deny);
    assert_eq!(Gcra::cancel_step(booked, booked, 0), Step::Deny);
    // The latest: undone, and from then on every decision is the one `state` would give.
    let restored = state.max(now.ticks());
    assert_eq!(
        Gcra::cancel_step(booked, booked, increment),
        Step::Allow(restored),
        "{quota:?}: {state:#x} at {now_ns} ns, cost {cost}"
    );
    for _ in 0..4 {
        let later = quota.instant(at((now_ns + random.up_to(3 * tolerance_ns)).min(HORIZON_NS)));
        let cost = random.up_to(quota.limit());
        assert_eq!(
            quota.step(restored, later, cost),
            quota.step(state, later, cost)
        );
        assert_eq!(
            quota.reserve_step(restored, later, cost, max_wait),
            quota.reserve_step(state, later, cost, max_wait)
        );
    }
    Some(matches!(later_booking, Step::Allow(_)))
}

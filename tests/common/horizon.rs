//! Assertions at and past the clock's horizon: readings past it cannot be made, a limiter there
//! fails closed, and a rejected reading leaves a limiter's state alone.

use super::limiters::limiter;
use super::time::{at, HORIZON_NS, SECOND_NS, YEAR_NS};
use nanolimit::clock::TimestampError;
use nanolimit::{Clock, Limiter, ManualClock, Quota, Request, Timestamp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// Asserts that readings past the horizon cannot be made (`from_ns` reports them), that a
/// clock's own reading is clamped to the horizon instead, and that the horizon is the largest
/// instant a quota has.
pub fn assert_readings_past_the_horizon_cannot_be_made<Q: Quota>(quota: &Q)
where
    Q::Instant: PartialEq,
{
    for past in [HORIZON_NS + 1, 1 << 60, 1_800_000_000_000_000_000, u64::MAX] {
        assert_eq!(
            Timestamp::from_ns(past),
            Err(TimestampError::PastHorizon { ns: past })
        );
        let clamped = Timestamp::saturating_from_ns(past);
        assert_eq!(clamped, Timestamp::HORIZON);
        assert_eq!(
            quota.instant(clamped),
            quota.instant(Timestamp::HORIZON),
            "{quota:?}"
        );
    }
    assert_eq!(Timestamp::from_ns(HORIZON_NS), Ok(Timestamp::HORIZON));
}

/// Asserts, on a limiter whose clock starts `before_ns` before the horizon and has used its
/// whole limit there, that the clock stops at the horizon however far it is advanced, and that
/// the limiter, judged there, admits nothing more than `at_horizon_at_most` units (what the last
/// `before_ns` refilled) and then fails closed. Returns the clock.
pub fn assert_a_limiter_at_the_horizon_fails_closed<Q: Quota>(
    quota: Q,
    before_ns: u64,
    at_horizon_at_most: u64,
) -> ManualClock {
    let clock = ManualClock::starting_at(at(HORIZON_NS - before_ns));
    let limiter = Limiter::with_clock(quota, clock.clone());
    assert!(limiter
        .check_with(Request::cost(quota.limit()))
        .unwrap()
        .is_allowed());
    clock.advance(Duration::from_nanos(before_ns));
    assert_eq!(clock.now(), Timestamp::HORIZON);
    let mut at_horizon_admitted = 0;
    while limiter.check().is_allowed() {
        at_horizon_admitted += 1;
        assert!(
            at_horizon_admitted <= at_horizon_at_most,
            "{quota:?}: {at_horizon_admitted} admitted at the horizon"
        );
    }
    for step in [
        Duration::from_nanos(1),
        Duration::from_secs(1),
        Duration::from_nanos(YEAR_NS),
        Duration::MAX,
    ] {
        clock.advance(step);
        assert_eq!(clock.now(), Timestamp::HORIZON);
        let decision = limiter.check();
        assert!(decision.is_denied(), "{quota:?} after {step:?} more");
        assert_eq!(decision.remaining(), 0);
        let _ = decision.headers();
    }
    assert!(limiter.check_at(Timestamp::HORIZON).is_denied());
    clock
}

/// Asserts that raw readings rejected as timestamps (past the horizon) leave a limiter's state
/// alone: a limiter fed a schedule with such readings mixed in decides, at every correct reading,
/// exactly as a fresh limiter fed only the correct ones.
pub fn assert_a_rejected_timestamp_leaves_the_state_alone<Q: Quota>(quota: Q) {
    let mut rng = StdRng::seed_from_u64(11);
    let with_rejected = limiter(quota);
    let correct_only = limiter(quota);
    let mut now = rng.gen_range(0..YEAR_NS);
    let (mut rejected, mut checked) = (0, 0);
    for _ in 0..2_000 {
        let raw_ns = match rng.gen_range(0..4) {
            // A Unix-epoch time in nanoseconds, an uninitialised value, just past the horizon.
            0 => [1_800_000_000_000_000_000, u64::MAX, HORIZON_NS + 1][rng.gen_range(0..3)],
            _ => {
                now += rng.gen_range(0..=SECOND_NS);
                now
            }
        };
        let cost = rng.gen_range(1..=quota.limit());
        let Ok(reading) = Timestamp::from_ns(raw_ns) else {
            assert_eq!(
                Timestamp::from_ns(raw_ns),
                Err(TimestampError::PastHorizon { ns: raw_ns })
            );
            rejected += 1;
            continue;
        };
        checked += 1;
        let request = Request::cost(cost).at(reading);
        let actual = with_rejected.check_with(request).unwrap();
        let expected = correct_only.check_with(request).unwrap();
        assert_eq!(actual.is_allowed(), expected.is_allowed(), "{quota:?}");
        assert_eq!(actual.state_word(), expected.state_word());
        assert_eq!(actual.remaining(), expected.remaining());
        assert_eq!(actual.retry_after(), expected.retry_after());
        assert_eq!(actual.reset_after(), expected.reset_after());
    }
    assert!(rejected > 100 && checked > 100);
}

//! Time handling that no quota owns: [`Timestamp`] (valid by construction: a reading past the
//! horizon is an error where it is made) and [`ManualClock`].

use crate::common::{at, HORIZON_NS};
use nanolimit::clock::TimestampError;
use nanolimit::{Clock, ManualClock, Timestamp};
use std::time::Duration;

#[test]
fn a_timestamp_past_the_horizon_is_an_error_and_the_horizon_itself_is_not() {
    let epoch_ns = 1_800_000_000_000_000_000;
    for past in [epoch_ns, u64::MAX, HORIZON_NS + 1] {
        assert_eq!(
            Timestamp::from_ns(past),
            Err(TimestampError::PastHorizon { ns: past })
        );
        assert!(!TimestampError::PastHorizon { ns: past }
            .to_string()
            .is_empty());
    }
    assert!(matches!(
        Timestamp::from_ns(epoch_ns),
        Err(TimestampError::PastHorizon { .. })
    ));
    let horizon = Timestamp::from_ns(Timestamp::HORIZON.as_ns()).unwrap();
    assert_eq!(horizon, Timestamp::HORIZON);
    assert_eq!(Timestamp::HORIZON.as_ns(), 1 << 59);
    assert_eq!(Timestamp::from_ns(0), Ok(Timestamp::ORIGIN));
    assert_eq!(
        Timestamp::from_duration(Duration::from_nanos(HORIZON_NS)),
        Ok(Timestamp::HORIZON)
    );
    assert_eq!(
        Timestamp::from_duration(Duration::MAX),
        Err(TimestampError::PastHorizon { ns: u64::MAX })
    );
    assert_eq!(
        Timestamp::try_from(Duration::from_nanos(HORIZON_NS + 1)),
        Err(TimestampError::PastHorizon { ns: HORIZON_NS + 1 })
    );
    assert_eq!(Timestamp::saturating_from_ns(u64::MAX), Timestamp::HORIZON);
    assert_eq!(
        Timestamp::saturating_from_ns(HORIZON_NS),
        Timestamp::HORIZON
    );
    assert_eq!(Timestamp::saturating_from_ns(17), at(17));
    assert_eq!(Duration::from(at(1_500)), Duration::from_nanos(1_500));
}

#[test]
fn timestamp_arithmetic_saturates_at_the_origin_and_the_horizon() {
    let one_ns = Duration::from_nanos(1);
    let horizon = Timestamp::HORIZON;
    let before_horizon = at(HORIZON_NS - 1);
    // saturating_add: up to the horizon and no further.
    assert_eq!(before_horizon.saturating_add(one_ns), horizon);
    assert_eq!(before_horizon.saturating_add(2 * one_ns), horizon);
    assert_eq!(horizon.saturating_add(one_ns), horizon);
    assert_eq!(Timestamp::ORIGIN.saturating_add(Duration::MAX), horizon);
    assert_eq!(at(5).saturating_add(Duration::ZERO), at(5));
    assert_eq!(at(5).saturating_add(one_ns), at(6));
    // checked_add: the horizon itself is a reading, one past it is not.
    assert_eq!(before_horizon.checked_add(one_ns), Some(horizon));
    assert_eq!(before_horizon.checked_add(2 * one_ns), None);
    assert_eq!(horizon.checked_add(Duration::ZERO), Some(horizon));
    assert_eq!(horizon.checked_add(one_ns), None);
    assert_eq!(
        Timestamp::ORIGIN.checked_add(horizon.since_origin()),
        Some(horizon)
    );
    assert_eq!(Timestamp::ORIGIN.checked_add(Duration::MAX), None);
    // saturating_sub: down to the origin and no further.
    assert_eq!(at(1).saturating_sub(one_ns), Timestamp::ORIGIN);
    assert_eq!(at(1).saturating_sub(2 * one_ns), Timestamp::ORIGIN);
    assert_eq!(Timestamp::ORIGIN.saturating_sub(one_ns), Timestamp::ORIGIN);
    assert_eq!(horizon.saturating_sub(Duration::MAX), Timestamp::ORIGIN);
    assert_eq!(horizon.saturating_sub(one_ns), before_horizon);
    // saturating_duration_since: zero when `earlier` is later.
    assert_eq!(
        horizon.saturating_duration_since(Timestamp::ORIGIN),
        Duration::from_nanos(HORIZON_NS)
    );
    assert_eq!(
        Timestamp::ORIGIN.saturating_duration_since(horizon),
        Duration::ZERO
    );
    assert_eq!(at(7).saturating_duration_since(at(7)), Duration::ZERO);
    assert_eq!(at(8).saturating_duration_since(at(7)), one_ns);
}

#[test]
fn the_manual_clock_stops_at_the_horizon() {
    let clock = ManualClock::starting_at(at(HORIZON_NS - 10));
    clock.advance(Duration::from_nanos(9));
    assert_eq!(clock.now(), at(HORIZON_NS - 1));
    clock.advance(Duration::from_nanos(5));
    assert_eq!(clock.now(), Timestamp::HORIZON);
    clock.advance(Duration::MAX);
    assert_eq!(clock.now(), Timestamp::HORIZON);
    // A clone shares the reading; setting it earlier is allowed (clocks can step back).
    let clone = clock.clone();
    clone.set(at(5));
    assert_eq!(clock.now(), at(5));
    clock.advance(Duration::MAX);
    assert_eq!(clone.now(), Timestamp::HORIZON);
    assert_eq!(ManualClock::new().now(), Timestamp::ORIGIN);
}

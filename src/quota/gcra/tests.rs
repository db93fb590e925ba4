//! Unit tests of the GCRA quota's constructors and step.

use super::*;
use crate::quota::reservable::MAX_WAIT_TICKS;
use crate::quota::Sealed;

#[test]
fn emission_interval_is_an_exact_number_of_ticks() {
    let quotas = [
        (1, 86_400_000_000_000u64),
        (3, 1_000_000_000),
        (1_000, 1_000_000_000),
        (12_500_000_000, 1_000_000_000),
    ];
    for (count, period) in quotas {
        let quota = Gcra::new(count, Duration::from_nanos(period)).unwrap();
        if period % count == 0 {
            assert_eq!(quota.ticks_per_ns_q59, NANOSECOND_GRID_TICKS_PER_NS_Q59);
            assert_eq!(quota.emission_interval_ticks, period / count * 16);
        } else {
            assert!(quota.emission_interval_ticks.is_power_of_two());
        }
        // The horizon fits 2^63 ticks, and the shift agrees with the multiply.
        assert!(quota.instant(Timestamp::HORIZON).0 <= 1 << 63);
        for now_ns in [0, 1, 999, 1 << 40, HORIZON_NS] {
            let multiplied =
                (now_ns as u128 * quota.ticks_per_ns_q59 as u128) >> TICKS_PER_NS_SHIFT;
            let now = Timestamp::from_ns(now_ns).unwrap();
            assert_eq!(quota.instant(now).0 as u128, multiplied);
        }
    }
}

#[test]
fn the_unlimited_quota_is_the_fastest_rate_with_the_largest_burst() {
    let unlimited = Gcra::unlimited();
    assert_eq!(unlimited.ticks_per_ns_q59, NANOSECOND_GRID_TICKS_PER_NS_Q59);
    assert_eq!(unlimited.emission_interval_ticks, 1);
    assert_eq!(unlimited.tolerance_ticks, MAX_TOLERANCE_TICKS - 1);
    // On any other scale it stays one tick per unit (ticks are never shorter than 1/16 ns).
    for base in [Gcra::per_second(3).unwrap(), Gcra::per_day(7).unwrap()] {
        let rebased = unlimited.rebase(&base).unwrap();
        assert_eq!(rebased.emission_interval_ticks, 1, "{base:?}");
        assert!(rebased.is_unlimited());
    }
    // A fresh state admits the largest cost; a state as far ahead as a booking can put it
    // (the longest wait plus a year-long burst) still admits 2^60 at once.
    let now = unlimited.instant(Timestamp::HORIZON);
    let year_ticks = (365 * 86_400 * 1_000_000_000) << NANOSECOND_GRID_SHIFT;
    let booked_far_ahead = now.0 + MAX_WAIT_TICKS + year_ticks;
    for state in [Gcra::FRESH, now.0] {
        assert!(matches!(
            unlimited.step(state, now, unlimited.limit()),
            Step::Allow(_)
        ));
    }
    assert!(matches!(
        unlimited.step(booked_far_ahead, now, 1 << 60),
        Step::Allow(_)
    ));
}

#[test]
fn words_stay_clear_of_the_keyed_slot_markers() {
    // The largest word a step can write: the largest instant plus the largest tolerance.
    let widest = Gcra::per_day(1)
        .unwrap()
        .with_burst(MAX_TOLERANCE_TICKS / (86_400_000_000_000 << NANOSECOND_GRID_SHIFT))
        .unwrap();
    let now = widest.instant(Timestamp::HORIZON);
    let Step::Allow(word) = widest.step(Gcra::FRESH, now, 1) else {
        panic!("a fresh state admits one unit");
    };
    assert!(word < u64::MAX - 1, "{word}");
    assert!(now.0 + widest.tolerance_ticks < u64::MAX - 1);
}

//! Readings in nanoseconds from the clock's origin: the units the tests count in, the horizon,
//! and [`Timestamp`]s made from them.

use nanolimit::Timestamp;

pub const SECOND_NS: u64 = 1_000_000_000;
pub const DAY_NS: u64 = 86_400 * SECOND_NS;
pub const YEAR_NS: u64 = 365 * DAY_NS;
/// [`Timestamp::HORIZON`] in nanoseconds.
pub const HORIZON_NS: u64 = Timestamp::HORIZON.as_ns();

/// The reading `ns` nanoseconds after the clock's origin (`ns` must not be past the horizon).
pub fn at(ns: u64) -> Timestamp {
    Timestamp::from_ns(ns).unwrap()
}

/// Replaces each reading by the latest one so far: the monotonic clock the schedule meant.
pub fn monotonic(readings: &[u64]) -> Vec<u64> {
    let mut latest = 0;
    readings
        .iter()
        .map(|&reading| {
            latest = latest.max(reading);
            latest
        })
        .collect()
}

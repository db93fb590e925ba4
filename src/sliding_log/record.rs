//! One ring slot's word: the record of one admitted unit, as pure functions.
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0–58 | `stamp` | the unit's time, in nanoseconds since the clock's origin, plus one; 0 in a slot never written (a unit that left the window long ago) |
//! | 59–62 | `rest` | how many units of the same request follow this one (0–15): what a helper needs to finish writing a request of several units |
//! | 63 | `parity` | the lap of the position the record holds, modulo 2 (position `p` of a ring of `R` slots is on lap `p / R`) |
//!
//! The stamp is one more than the time so that a reading of 0 is not taken for an empty slot.
//! It has 59 bits, so the times a record can hold stop 2 ns short of the [horizon](crate::Timestamp::HORIZON):
//! [`stamp_of`] clamps the last two readings (after 18.3 years of uptime) to the last time
//! it holds, which judges them 2 ns earlier.
//!
//! A slot's successive records have strictly increasing stamps: a record replaces one whose time
//! is at least one window (≥ 1 ns) before the new record's (it has left the window). So a slot
//! never holds the same word twice, and a compare-and-swap from a word read earlier succeeds only if nobody wrote the slot
//! since (no ABA).

/// Bits of the stamp field.
const STAMP_BITS: u32 = 59;
/// The stamp field's mask.
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;
/// Where the `rest` field starts.
const REST_SHIFT: u32 = STAMP_BITS;
/// The `rest` field's mask, once shifted down.
const REST_MASK: u64 = 0b1111;
/// The parity bit.
const PARITY_BIT: u64 = 1 << 63;

/// The most units one request may cost: `rest` counts the units after the first in 4 bits.
pub(crate) const MAX_UNITS_PER_REQUEST: u64 = REST_MASK + 1;
const _: () = assert!(MAX_UNITS_PER_REQUEST == crate::quota::sliding_log::MAX_COST);

/// The latest time, in nanoseconds, a record holds.
pub(crate) const MAX_TIME_NS: u64 = STAMP_MASK - 1;

/// The word of a slot never written, as the record of the lap before position 0's (parity 1),
/// so that position 0 replaces it like any other.
pub(crate) const EMPTY: u64 = PARITY_BIT;

/// The record of a unit at `time_ns` (at most [`MAX_TIME_NS`]) in position `position` of a ring
/// of `2^ring_bits` slots, with `rest` units of the same request after it (at most 15).
#[inline]
pub(crate) const fn record(position: u64, ring_bits: u32, time_ns: u64, rest: u64) -> u64 {
    debug_assert!(time_ns <= MAX_TIME_NS && rest <= REST_MASK);
    parity_of(position, ring_bits) | (rest << REST_SHIFT) | (time_ns + 1)
}

/// The parity bit that a record of `position` carries.
#[inline]
pub(crate) const fn parity_of(position: u64, ring_bits: u32) -> u64 {
    ((position >> ring_bits) & 1) << 63
}

/// Whether `word` is the record of `position` (rather than of the position a lap before or
/// after it). Meaningful only where the caller knows the slot holds one of those two.
#[inline]
pub(crate) const fn holds(word: u64, position: u64, ring_bits: u32) -> bool {
    word & PARITY_BIT == parity_of(position, ring_bits)
}

/// The units of the same request after this record's.
#[inline]
pub(crate) const fn rest(word: u64) -> u64 {
    (word >> REST_SHIFT) & REST_MASK
}

/// `word` with another `rest` field: the same unit, as far as a finished request's record says
/// (a keyed inserter's seal, `ring.rs`).
#[inline]
pub(crate) const fn with_other_rest(word: u64) -> u64 {
    word ^ (1 << REST_SHIFT)
}

/// The record's time in nanoseconds; `None` for a slot never written.
#[inline]
pub(crate) const fn time_ns(word: u64) -> Option<u64> {
    match word & STAMP_MASK {
        0 => None,
        stamp => Some(stamp - 1),
    }
}

/// A reading clamped to what a record holds (see the module's layout).
#[inline]
pub(crate) const fn stamp_of(reading_ns: u64) -> u64 {
    if reading_ns > MAX_TIME_NS {
        MAX_TIME_NS
    } else {
        reading_ns
    }
}

/// Whether the unit `word` records is outside the window `(now_ns − window_ns, now_ns]`: a slot
/// never written always is.
#[inline]
pub(crate) const fn has_left(word: u64, window_ns: u64, now_ns: u64) -> bool {
    match time_ns(word) {
        None => true,
        // Both below 2^60: no overflow.
        Some(time_ns) => time_ns + window_ns <= now_ns,
    }
}

/// Nanoseconds from `now_ns` until the unit `word` records leaves the window (0 if it has).
#[inline]
pub(crate) const fn leaves_after_ns(word: u64, window_ns: u64, now_ns: u64) -> u64 {
    match time_ns(word) {
        None => 0,
        Some(time_ns) => (time_ns + window_ns).saturating_sub(now_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_their_extremes() {
        for ring_bits in [0, 1, 5, 20] {
            for position in [0, 1, (1 << ring_bits) - 1, 1 << ring_bits, u64::MAX >> 2] {
                for time in [0, 1, 12_345, MAX_TIME_NS] {
                    for rest_units in [0, 1, 15] {
                        let word = record(position, ring_bits, time, rest_units);
                        assert_eq!(time_ns(word), Some(time));
                        assert_eq!(rest(word), rest_units);
                        assert!(holds(word, position, ring_bits));
                        assert!(!holds(word, position + (1 << ring_bits), ring_bits));
                        assert!(holds(word, position + (2 << ring_bits), ring_bits));
                    }
                }
            }
        }
    }

    #[test]
    fn the_empty_slot_is_the_lap_before_position_zero_and_has_always_left() {
        assert!(!holds(EMPTY, 0, 3));
        assert!(holds(EMPTY, 8, 3));
        assert_eq!(time_ns(EMPTY), None);
        assert!(has_left(EMPTY, 1, 0));
        assert!(has_left(EMPTY, MAX_TIME_NS, 0));
        assert_eq!(leaves_after_ns(EMPTY, 1_000, 0), 0);
        assert_eq!(rest(EMPTY), 0);
    }

    #[test]
    fn a_unit_is_in_the_window_for_exactly_the_window_length() {
        let word = record(7, 2, 1_000, 0);
        // In (now − W, now]: at 1_000..=1_099 for W = 100, left from 1_100.
        assert!(!has_left(word, 100, 1_000));
        assert!(!has_left(word, 100, 1_099));
        assert!(has_left(word, 100, 1_100));
        assert_eq!(leaves_after_ns(word, 100, 1_000), 100);
        assert_eq!(leaves_after_ns(word, 100, 1_099), 1);
        assert_eq!(leaves_after_ns(word, 100, 1_100), 0);
        // A reading at 0 is a record, not an empty slot.
        let at_origin = record(0, 2, 0, 0);
        assert!(!has_left(at_origin, 1, 0));
        assert!(has_left(at_origin, 1, 1));
    }

    #[test]
    fn the_last_readings_before_the_horizon_are_clamped_not_wrapped() {
        let horizon = crate::clock::Timestamp::HORIZON.as_ns();
        assert_eq!(stamp_of(horizon), MAX_TIME_NS);
        assert_eq!(stamp_of(horizon - 1), MAX_TIME_NS);
        assert_eq!(stamp_of(horizon - 2), horizon - 2);
        assert_eq!(MAX_TIME_NS, horizon - 2);
        let word = record(1, 0, stamp_of(horizon), 15);
        assert_eq!(time_ns(word), Some(MAX_TIME_NS));
        // The largest time plus the largest window does not overflow.
        assert!(!has_left(word, horizon, MAX_TIME_NS));
    }
}

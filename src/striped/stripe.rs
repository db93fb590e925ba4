//! One stripe: the units a lease put within reach of the threads that use it, and the packed word
//! that holds them.
//!
//! # Stripe word
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0..24 | `units` | units of the current lease not yet spent; [`CLAIMED_UNITS`] while one thread refills or empties the stripe |
//! | 24..64 | `start` | the grain of the clock (ns >> [`GRAIN_SHIFT`], about 0.52 ms) in which the lease was taken |
//!
//! A lease's units may be spent at readings in its first `lifetime_grains` grains:
//! `start <= grain(now) < start + lifetime_grains`. A limiter's `lifetime_grains` is its lease
//! lifetime in whole grains, less one, so that a reading that spends a unit lies within one
//! lifetime of its lease's reading whichever way: less than a grain before it (a reading in the
//! lease's grain but earlier), and at most the lifetime less a grain after it.
//!
//! A claim is exclusive: only the thread whose compare-and-swap wrote [`CLAIMED_UNITS`] may
//! write the stripe's other fields ([`Stripe::booked`], [`Stripe::lease_units`]) and then
//! publish a new word. While the stripe is claimed, its other threads go to the shared state
//! directly, so nobody waits for a claim.

use crate::clock::Timestamp;
use crate::sync::AtomicU64;

/// Bits of the `units` field.
pub(crate) const UNITS_BITS: u32 = 24;
/// The `units` field's mask.
pub(crate) const UNITS_MASK: u64 = (1 << UNITS_BITS) - 1;
/// The `units` value that marks a claimed stripe.
pub(crate) const CLAIMED_UNITS: u64 = UNITS_MASK;
/// The most units one lease may hold (every value of the field but the claim marker).
pub(crate) const MAX_LEASE_UNITS: u64 = CLAIMED_UNITS - 1;
/// A grain is `2^GRAIN_SHIFT` ns, about 0.52 ms. The horizon (2^59 ns) is 2^40 grains, so
/// every reading's grain but the horizon's own fits the 40-bit field (which clamps it).
pub(crate) const GRAIN_SHIFT: u32 = 19;
/// Where the `start` field starts.
const START_SHIFT: u32 = UNITS_BITS;
/// The largest grain the field holds.
const MAX_START_GRAIN: u64 = (1 << (64 - START_SHIFT)) - 1;

/// The word of a stripe that holds nothing.
pub(crate) const EMPTY: u64 = 0;

/// A stripe's state. Cache-padded by its owner, so that stripes do not share lines.
#[derive(Debug)]
pub(crate) struct Stripe {
    /// The stripe word (see the module's table).
    pub(crate) word: AtomicU64,
    /// The shared state word the current lease wrote (what giving its units back undoes).
    /// Written only under a claim, before the word that publishes the lease.
    pub(crate) booked: AtomicU64,
    /// The size of the next lease (adapted at each refill), within the limiter's bounds.
    /// Read and written only under a claim.
    pub(crate) lease_units: AtomicU64,
}

impl Stripe {
    pub(crate) fn new(lease_units: u64) -> Stripe {
        Stripe {
            word: AtomicU64::new(EMPTY),
            booked: AtomicU64::new(0),
            lease_units: AtomicU64::new(lease_units),
        }
    }
}

/// The grain of a reading, clamped to the field (only the horizon itself is clamped).
#[inline]
pub(crate) fn grain(now: Timestamp) -> u64 {
    (now.as_ns() >> GRAIN_SHIFT).min(MAX_START_GRAIN)
}

/// The whole grains of a lease lifetime less one: how many grains, counting the lease's own, its
/// units may be spent in (see the module documentation).
pub(crate) const fn lifetime_grains(lifetime_ns: u64) -> u64 {
    (lifetime_ns >> GRAIN_SHIFT).saturating_sub(1)
}

/// The word holding `units` (at most [`MAX_LEASE_UNITS`], or [`CLAIMED_UNITS`]) of a lease
/// taken in grain `start`.
#[inline]
pub(crate) const fn pack(units: u64, start: u64) -> u64 {
    (start << START_SHIFT) | units
}

/// The `units` field.
#[inline]
pub(crate) const fn units(word: u64) -> u64 {
    word & UNITS_MASK
}

/// The `start` field: the grain the lease was taken in.
#[inline]
pub(crate) const fn start(word: u64) -> u64 {
    word >> START_SHIFT
}

/// Whether a thread holds the stripe's claim.
#[inline]
pub(crate) const fn is_claimed(word: u64) -> bool {
    units(word) == CLAIMED_UNITS
}

/// The word a claim writes over `word`: the marker, the start kept (it tells the claim holder
/// when the lease it replaces was taken).
#[inline]
pub(crate) const fn claimed(word: u64) -> u64 {
    pack(CLAIMED_UNITS, start(word))
}

/// Whether a reading in grain `now_grain` is earlier than the grain of `word`'s lease: it may
/// not spend the lease, and it is judged on the shared state instead.
#[inline]
pub(crate) const fn is_behind(word: u64, now_grain: u64) -> bool {
    now_grain < start(word)
}

/// Whether `word`'s lease has ended at a reading in grain `now_grain` (not behind it).
#[inline]
pub(crate) const fn has_lapsed(word: u64, now_grain: u64, lifetime_grains: u64) -> bool {
    now_grain >= start(word).saturating_add(lifetime_grains)
}

/// The units of an unclaimed `word` that a reading in grain `now_grain` may spend: none at a
/// reading behind the lease or after it lapsed.
#[inline]
pub(crate) const fn spendable(word: u64, now_grain: u64, lifetime_grains: u64) -> u64 {
    // One comparison for both ends: a reading behind the start wraps to a large difference.
    if now_grain.wrapping_sub(start(word)) < lifetime_grains {
        units(word)
    } else {
        0
    }
}

/// The pure step of a check on a stripe: the word after spending `cost` units at a reading in
/// grain `now_grain`, or `None` if the stripe is claimed, holds fewer than `cost` units the
/// reading may spend.
#[inline]
pub(crate) const fn spend(
    word: u64,
    now_grain: u64,
    lifetime_grains: u64,
    cost: u64,
) -> Option<u64> {
    if is_claimed(word) || spendable(word, now_grain, lifetime_grains) < cost {
        return None;
    }
    // Units are the low field: subtracting at most `units` never borrows from the start.
    Some(word - cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIFETIME_GRAINS: u64 = 3;

    #[test]
    fn fields_round_trip_at_their_extremes() {
        for units_value in [0, 1, MAX_LEASE_UNITS, CLAIMED_UNITS] {
            for start_value in [0, 1, MAX_START_GRAIN] {
                let word = pack(units_value, start_value);
                assert_eq!(units(word), units_value);
                assert_eq!(start(word), start_value);
                assert_eq!(is_claimed(word), units_value == CLAIMED_UNITS);
            }
        }
    }

    #[test]
    fn the_horizon_is_clamped_into_the_start_field_without_wrapping() {
        // The horizon is 2^59 ns: 2^40 grains, one past the field.
        assert_eq!(
            Timestamp::HORIZON.as_ns() >> GRAIN_SHIFT,
            MAX_START_GRAIN + 1
        );
        assert_eq!(grain(Timestamp::HORIZON), MAX_START_GRAIN);
        let word = pack(5, grain(Timestamp::HORIZON));
        assert_eq!(
            spendable(word, grain(Timestamp::HORIZON), LIFETIME_GRAINS),
            5
        );
        assert!(!has_lapsed(word, MAX_START_GRAIN, u64::MAX));
    }

    #[test]
    fn a_unit_is_spent_within_one_lifetime_of_its_lease_reading() {
        let lifetime_ns = 4 << GRAIN_SHIFT;
        let lifetime_grains = lifetime_grains(lifetime_ns);
        assert_eq!(lifetime_grains, LIFETIME_GRAINS);
        let grain_ns = 1 << GRAIN_SHIFT;
        for taken_ns in [0, 1, grain_ns - 1, grain_ns, 123_456_789] {
            let word = pack(1, grain(Timestamp::from_ns(taken_ns).unwrap()));
            let first_ns = start(word) * grain_ns;
            let last_ns = (start(word) + lifetime_grains) * grain_ns - 1;
            // Less than a grain before the lease's reading, and less than the lifetime after.
            assert!(first_ns + grain_ns > taken_ns && last_ns < taken_ns + lifetime_ns);
            for (reading_ns, spends) in [
                (first_ns, true),
                (last_ns, true),
                (last_ns + 1, false),
                (first_ns.wrapping_sub(1), false),
            ] {
                let Ok(reading) = Timestamp::from_ns(reading_ns) else {
                    continue;
                };
                let spent = spend(word, grain(reading), lifetime_grains, 1);
                assert_eq!(
                    spent.is_some(),
                    spends,
                    "lease at {taken_ns}, reading {reading_ns}"
                );
            }
        }
    }

    #[test]
    fn spending_takes_units_only_from_an_unclaimed_live_stripe() {
        let word = pack(3, 10);
        assert_eq!(spend(word, 12, LIFETIME_GRAINS, 3), Some(pack(0, 10)));
        assert_eq!(spend(word, 10, LIFETIME_GRAINS, 4), None);
        assert_eq!(spend(word, 13, LIFETIME_GRAINS, 1), None);
        assert_eq!(spend(word, 9, LIFETIME_GRAINS, 1), None);
        assert_eq!(spend(claimed(word), 11, LIFETIME_GRAINS, 1), None);
        assert_eq!(start(claimed(word)), 10);
        assert!(is_behind(word, 9) && !is_behind(word, 10));
        assert!(has_lapsed(word, 13, LIFETIME_GRAINS) && !has_lapsed(word, 12, LIFETIME_GRAINS));
        assert_eq!(spend(EMPTY, 0, LIFETIME_GRAINS, 1), None);
    }
}

//! One stripe: the units a lease put within reach of the threads that use it, and the packed word
//! that holds them.
//!
//! # Stripe word
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0..24 | `units` | units of the current lease not yet spent; [`CLAIMED_UNITS`] while one thread refills or empties the stripe |
//! | 24..64 | `expiry` | the lease's expiry, in [`COARSE_SHIFT`] units of the clock (ns >> 19, about 0.52 ms): the units may be spent while the coarse reading is below it |
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
/// A coarse reading is `ns >> COARSE_SHIFT`: 2^19 ns, about 0.52 ms. The horizon (2^59 ns)
/// is 2^40 coarse units, so every expiry fits the 40-bit field.
pub(crate) const COARSE_SHIFT: u32 = 19;
/// Where the `expiry` field starts.
const EXPIRY_SHIFT: u32 = UNITS_BITS;
/// The largest coarse expiry the field holds.
const MAX_EXPIRY_COARSE: u64 = (1 << (64 - EXPIRY_SHIFT)) - 1;

/// The word of a stripe that holds nothing: no units, expired since the origin.
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

/// A reading in the stripe word's coarse units.
#[inline]
pub(crate) fn coarse(now: Timestamp) -> u64 {
    now.as_ns() >> COARSE_SHIFT
}

/// The coarse expiry of a lease taken at `now` that lives `lifetime_ns`: rounded down, so that a
/// unit is never spent later than `lifetime_ns` after its lease.
#[inline]
pub(crate) fn expiry_after(now: Timestamp, lifetime_ns: u64) -> u64 {
    (now.as_ns().saturating_add(lifetime_ns) >> COARSE_SHIFT).min(MAX_EXPIRY_COARSE)
}

/// The word holding `units` (at most [`MAX_LEASE_UNITS`], or [`CLAIMED_UNITS`]) until
/// `expiry` (coarse).
#[inline]
pub(crate) const fn pack(units: u64, expiry: u64) -> u64 {
    (expiry << EXPIRY_SHIFT) | units
}

/// The `units` field.
#[inline]
pub(crate) const fn units(word: u64) -> u64 {
    word & UNITS_MASK
}

/// The `expiry` field (coarse).
#[inline]
pub(crate) const fn expiry(word: u64) -> u64 {
    word >> EXPIRY_SHIFT
}

/// Whether a thread holds the stripe's claim.
#[inline]
pub(crate) const fn is_claimed(word: u64) -> bool {
    units(word) == CLAIMED_UNITS
}

/// The word a claim writes over `word`: the marker, the expiry kept (it tells the claim holder
/// when the lease it replaces started).
#[inline]
pub(crate) const fn claimed(word: u64) -> u64 {
    pack(CLAIMED_UNITS, expiry(word))
}

/// The units of an unclaimed `word` that may still be spent at the coarse reading `now_coarse`:
/// none once the lease has expired.
#[inline]
pub(crate) const fn spendable(word: u64, now_coarse: u64) -> u64 {
    if now_coarse < expiry(word) {
        units(word)
    } else {
        0
    }
}

/// The pure step of a check on a stripe: the word after spending `cost` units at `now_coarse`,
/// or `None` if the stripe is claimed, expired, or holds fewer than `cost` units.
#[inline]
pub(crate) const fn spend(word: u64, now_coarse: u64, cost: u64) -> Option<u64> {
    if is_claimed(word) || spendable(word, now_coarse) < cost {
        return None;
    }
    // Units are the low field: subtracting at most `units` never borrows from the expiry.
    Some(word - cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_their_extremes() {
        for units_value in [0, 1, MAX_LEASE_UNITS, CLAIMED_UNITS] {
            for expiry_value in [0, 1, MAX_EXPIRY_COARSE] {
                let word = pack(units_value, expiry_value);
                assert_eq!(units(word), units_value);
                assert_eq!(expiry(word), expiry_value);
                assert_eq!(is_claimed(word), units_value == CLAIMED_UNITS);
            }
        }
    }

    #[test]
    fn expiries_saturate_at_the_horizon_without_wrapping() {
        // The horizon is 2^59 ns: 2^40 coarse units, one past the field.
        assert_eq!(coarse(Timestamp::HORIZON), MAX_EXPIRY_COARSE + 1);
        assert_eq!(expiry_after(Timestamp::HORIZON, u64::MAX), MAX_EXPIRY_COARSE);
        let word = pack(5, expiry_after(Timestamp::HORIZON, 1));
        assert_eq!(units(word), 5);
        assert_eq!(expiry(word), MAX_EXPIRY_COARSE);
    }

    #[test]
    fn a_lease_is_never_spent_after_its_lifetime() {
        let lifetime_ns = 3 << COARSE_SHIFT;
        for taken_ns in [0, 1, (1 << COARSE_SHIFT) - 1, 1 << COARSE_SHIFT, 123_456_789] {
            let taken = Timestamp::from_ns(taken_ns).unwrap();
            let word = pack(1, expiry_after(taken, lifetime_ns));
            let last_spendable_ns = (expiry(word) << COARSE_SHIFT) - 1;
            assert!(last_spendable_ns < taken_ns + lifetime_ns);
            let last = Timestamp::from_ns(last_spendable_ns).unwrap();
            assert_eq!(spend(word, coarse(last), 1), Some(pack(0, expiry(word))));
            let expired = Timestamp::from_ns(last_spendable_ns + 1).unwrap();
            assert_eq!(spend(word, coarse(expired), 1), None);
        }
    }

    #[test]
    fn spending_takes_units_only_from_an_unclaimed_live_stripe() {
        let word = pack(3, 10);
        assert_eq!(spend(word, 9, 3), Some(pack(0, 10)));
        assert_eq!(spend(word, 9, 4), None);
        assert_eq!(spend(word, 10, 1), None);
        assert_eq!(spend(claimed(word), 9, 1), None);
        assert_eq!(expiry(claimed(word)), 10);
        assert_eq!(spendable(word, 9), 3);
        assert_eq!(spendable(word, 10), 0);
        assert_eq!(spend(EMPTY, 0, 1), None);
    }
}

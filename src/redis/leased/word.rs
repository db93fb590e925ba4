//! A key's local lease, packed in one `u64`, and its pure steps. The CAS loops in `mod.rs` apply
//! them; every decision about units and lifetimes is made here.
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0..20 ([`UNITS_BITS`]) | units | leased units not yet spent (at most [`MAX_UNITS`]) |
//! | 20..63 ([`DEADLINE_SHIFT`], 43 bits) | deadline | the grain from which the units may no longer be spent |
//! | 63 ([`REFILLING`]) | refilling | a refill of this key is in flight (one at a time) |
//!
//! A grain is 2^[`GRAIN_SHIFT`] ns (65.5 µs) of the limiter's readings; 43 bits of grains cover
//! the [`Timestamp`] range (2^59 ns) but its last grain, where deadlines saturate (lapse early). Deadlines round down: a refill's units may be spent until no later than
//! the lease lifetime after the reading the refill started from. Units still spendable at that
//! reading join the new lease under its deadline (a key's held units never exceed its lease
//! size, which is what bounds the fleet's over-admission), and units lapsed at it are dropped
//! by the refill's claim.

use crate::clock::Timestamp;

/// Bits of the units field.
pub(crate) const UNITS_BITS: u32 = 20;
/// The most units a key's lease holds (1,048,575).
pub(crate) const MAX_UNITS: u64 = (1 << UNITS_BITS) - 1;
/// Where the deadline field starts.
pub(crate) const DEADLINE_SHIFT: u32 = UNITS_BITS;
/// Bits of the deadline field.
const DEADLINE_BITS: u32 = 43;
/// The deadline field, in place.
const DEADLINE_MASK: u64 = ((1 << DEADLINE_BITS) - 1) << DEADLINE_SHIFT;
/// The refilling flag.
pub(crate) const REFILLING: u64 = 1 << 63;
/// A key that holds nothing and is not being refilled.
pub(crate) const EMPTY: u64 = 0;
/// A grain is 2^16 ns.
pub(crate) const GRAIN_SHIFT: u32 = 16;

/// The grain holding `reading`.
#[inline]
pub(crate) fn grain(reading: Timestamp) -> u64 {
    reading.as_ns() >> GRAIN_SHIFT
}

/// Whole grains in `lifetime_ns`, at least one.
pub(crate) fn lifetime_grains(lifetime_ns: u64) -> u64 {
    (lifetime_ns >> GRAIN_SHIFT).max(1)
}

/// The units field.
#[inline]
pub(crate) fn units(word: u64) -> u64 {
    word & MAX_UNITS
}

/// The deadline field, in grains.
#[inline]
pub(crate) fn deadline(word: u64) -> u64 {
    (word & DEADLINE_MASK) >> DEADLINE_SHIFT
}

/// Whether a refill is in flight.
#[inline]
pub(crate) fn is_refilling(word: u64) -> bool {
    word & REFILLING != 0
}

/// The units that may still be spent at `now_grain`: all of them before the deadline, none
/// from it on.
#[inline]
pub(crate) fn spendable(word: u64, now_grain: u64) -> u64 {
    if now_grain < deadline(word) {
        units(word)
    } else {
        0
    }
}

/// What a spend of `cost` units decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spend {
    /// Taken: store `word`; `held` units are left.
    Taken { word: u64, held: u64 },
    /// Not enough spendable units: `held` are.
    Short { held: u64 },
}

/// Spends `cost` units at `now_grain`, if the lease holds that many and has not lapsed. The
/// refilling flag is kept: a spend never waits for a refill.
#[inline]
pub(crate) fn spend(word: u64, now_grain: u64, cost: u64) -> Spend {
    let held = spendable(word, now_grain);
    if held < cost {
        return Spend::Short { held };
    }
    // `cost <= units`: only the units field changes.
    Spend::Taken {
        word: word - cost,
        held: held - cost,
    }
}

/// Claims the key for a refill at `now_grain`: the word with the flag set and, if its lease
/// has lapsed, its units dropped (so that a spend with an earlier reading can no longer take
/// units the refill gives back); `None` if a refill is in flight.
#[inline]
pub(crate) fn claim(word: u64, now_grain: u64) -> Option<u64> {
    if is_refilling(word) {
        return None;
    }
    let claimed = word | REFILLING;
    if now_grain >= deadline(word) {
        return Some(claimed & !MAX_UNITS);
    }
    Some(claimed)
}

/// What a refill publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Published {
    /// The word to store (flag cleared).
    pub(crate) word: u64,
    /// Units of the previous lease that lapsed unspent (no longer spendable at `now_grain`).
    pub(crate) lapsed: u64,
}

/// Ends a refill that was granted `granted` units (0 when it got none), of which the refilling
/// request spends `spent` (`spent <= granted`), at `now_grain`, with the new units spendable
/// until `deadline_grain`: the units still spendable join the new ones under the new deadline,
/// lapsed ones are dropped, and the flag is cleared. When nothing was granted, the word keeps
/// its units and deadline.
pub(crate) fn publish(
    word: u64,
    now_grain: u64,
    granted: u64,
    spent: u64,
    deadline_grain: u64,
) -> Published {
    let held = spendable(word, now_grain);
    let lapsed = units(word) - held;
    if granted == 0 {
        return Published {
            word: word & !REFILLING,
            lapsed: 0,
        };
    }
    let units = (held + granted - spent).min(MAX_UNITS);
    let deadline = deadline_grain.min((1 << DEADLINE_BITS) - 1);
    Published {
        word: units | (deadline << DEADLINE_SHIFT),
        lapsed,
    }
}

/// Whether an idle key's entry can be dropped from the local table: it holds nothing spendable
/// and no refill is in flight.
#[inline]
pub(crate) fn is_idle(word: u64, now_grain: u64) -> bool {
    !is_refilling(word) && spendable(word, now_grain) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(units: u64, deadline: u64) -> u64 {
        units | (deadline << DEADLINE_SHIFT)
    }

    #[test]
    fn the_fields_do_not_overlap() {
        let word = lease(MAX_UNITS, (1 << DEADLINE_BITS) - 1) | REFILLING;
        assert_eq!(word, u64::MAX);
        assert_eq!(units(word), MAX_UNITS);
        assert_eq!(deadline(word), (1 << DEADLINE_BITS) - 1);
        assert!(is_refilling(word));
        // Deadlines past the field saturate: a lease taken in the horizon's last grains lapses
        // early (at the field's last grain), never late.
        assert_eq!(grain(Timestamp::HORIZON), 1 << DEADLINE_BITS);
        let last = publish(REFILLING, 0, 1, 0, grain(Timestamp::HORIZON) + 10).word;
        assert_eq!(deadline(last), (1 << DEADLINE_BITS) - 1);
        assert_eq!(spendable(last, grain(Timestamp::HORIZON)), 0);
    }

    #[test]
    fn a_spend_takes_units_before_the_deadline_only() {
        let word = lease(5, 100);
        assert_eq!(
            spend(word, 99, 2),
            Spend::Taken {
                word: lease(3, 100),
                held: 3
            }
        );
        assert_eq!(
            spend(word, 99, 5),
            Spend::Taken {
                word: lease(0, 100),
                held: 0
            }
        );
        assert_eq!(spend(word, 99, 6), Spend::Short { held: 5 });
        assert_eq!(spend(word, 100, 1), Spend::Short { held: 0 });
        assert_eq!(spend(EMPTY, 0, 1), Spend::Short { held: 0 });
        // A cost of zero passes on any word.
        assert!(matches!(spend(EMPTY, 7, 0), Spend::Taken { held: 0, .. }));
    }

    #[test]
    fn a_spend_keeps_the_refilling_flag() {
        let word = lease(5, 100) | REFILLING;
        let Spend::Taken { word, held } = spend(word, 10, 1) else {
            panic!("5 units before the deadline")
        };
        assert_eq!((units(word), held), (4, 4));
        assert!(is_refilling(word));
    }

    #[test]
    fn one_refill_at_a_time() {
        let claimed = claim(lease(2, 100), 50).unwrap();
        assert!(is_refilling(claimed));
        assert_eq!(units(claimed), 2);
        assert_eq!(claim(claimed, 50), None);
    }

    #[test]
    fn a_claim_drops_lapsed_units_so_no_stale_reading_spends_them() {
        let claimed = claim(lease(2, 100), 100).unwrap();
        assert_eq!(units(claimed), 0);
        // A spend with a reading before the deadline finds nothing left.
        assert_eq!(spend(claimed, 99, 1), Spend::Short { held: 0 });
    }

    #[test]
    fn a_refill_adds_to_the_spendable_units_and_drops_lapsed_ones() {
        let claimed = lease(3, 100) | REFILLING;
        // Before the deadline: 3 held + 10 granted − 4 spent, under the new deadline.
        assert_eq!(
            publish(claimed, 50, 10, 4, 200),
            Published {
                word: lease(9, 200),
                lapsed: 0
            }
        );
        // From the deadline: the 3 lapsed.
        assert_eq!(
            publish(claimed, 100, 10, 4, 200),
            Published {
                word: lease(6, 200),
                lapsed: 3
            }
        );
        // Nothing granted: the flag goes, the lease stays as it was.
        assert_eq!(
            publish(claimed, 50, 0, 0, 200),
            Published {
                word: lease(3, 100),
                lapsed: 0
            }
        );
    }

    #[test]
    fn units_and_deadlines_saturate_in_their_fields() {
        let published = publish(lease(MAX_UNITS, 10) | REFILLING, 0, 10, 0, u64::MAX);
        assert_eq!(units(published.word), MAX_UNITS);
        assert_eq!(deadline(published.word), (1 << DEADLINE_BITS) - 1);
        assert!(!is_refilling(published.word));
    }

    #[test]
    fn lifetimes_are_whole_grains_rounded_down_but_never_zero() {
        assert_eq!(lifetime_grains(0), 1);
        assert_eq!(lifetime_grains((1 << GRAIN_SHIFT) - 1), 1);
        assert_eq!(lifetime_grains(3 << GRAIN_SHIFT), 3);
        assert_eq!(lifetime_grains((3 << GRAIN_SHIFT) + 5), 3);
    }

    #[test]
    fn idle_entries_hold_nothing_and_are_not_refilling() {
        assert!(is_idle(EMPTY, 0));
        assert!(is_idle(lease(5, 100), 100));
        assert!(!is_idle(lease(5, 100), 99));
        assert!(!is_idle(REFILLING, 0));
    }
}

//! The in-flight limiter's packed state word.
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0..31 | `available` | units no permit holds: what acquires may take |
//! | 31 | `QUEUED` | set while the waiter queue is not empty: the available units belong to the queue's head first |
//! | 32..63 | `limit` | the limit: units held plus units available (forgetting a permit lowers it, `add_permits` raises it) |
//! | 63 | (zero) | never set: `limit` is at most [`MAX_IN_FLIGHT`], so additions never carry into it |
//!
//! Units in flight are `limit − available`, read from one load, so every figure a caller sees
//! comes from one consistent word. Only a holder of the queue's lock sets or clears `QUEUED`,
//! and it keeps the flag equal to "the queue holds a waiter".

/// The largest limit an in-flight limiter takes: every field of the word holds it (2^31 − 1).
///
/// ```
/// use nanolimit::inflight::{InFlightLimiter, MAX_IN_FLIGHT};
///
/// assert_eq!(MAX_IN_FLIGHT, (1 << 31) - 1);
/// assert!(InFlightLimiter::new(MAX_IN_FLIGHT).is_ok());
/// assert!(InFlightLimiter::new(MAX_IN_FLIGHT + 1).is_err());
/// ```
pub const MAX_IN_FLIGHT: u64 = (1 << AVAILABLE_BITS) - 1;

/// Bits of the `available` field.
const AVAILABLE_BITS: u32 = 31;
/// The `available` field's mask.
const AVAILABLE_MASK: u64 = MAX_IN_FLIGHT;
/// The flag set while waiters are queued.
pub(crate) const QUEUED: u64 = 1 << AVAILABLE_BITS;
/// Where the `limit` field starts.
const LIMIT_SHIFT: u32 = 32;

/// The word of a limiter of `limit` units with none in flight and nobody waiting.
#[inline]
pub(crate) const fn fresh(limit: u64) -> u64 {
    (limit << LIMIT_SHIFT) | limit
}

/// The `available` field.
#[inline]
pub(crate) const fn available(word: u64) -> u64 {
    word & AVAILABLE_MASK
}

/// The `limit` field.
#[inline]
pub(crate) const fn limit(word: u64) -> u64 {
    word >> LIMIT_SHIFT
}

/// Units held by permits (a forgotten permit's units are no longer counted anywhere).
#[inline]
pub(crate) const fn in_flight(word: u64) -> u64 {
    // A word always has `available <= limit`: units enter `available` only by a release of
    // units taken from it or by `add_permits`, which raises the limit by as many.
    limit(word) - available(word)
}

/// Whether waiters are queued.
#[inline]
pub(crate) const fn is_queued(word: u64) -> bool {
    word & QUEUED != 0
}

/// `units` (at most [`MAX_IN_FLIGHT`]) as an amount of the `limit` field.
#[inline]
pub(crate) const fn limit_units(units: u64) -> u64 {
    units << LIMIT_SHIFT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_hold_the_maximum_without_touching_each_other() {
        let word = fresh(MAX_IN_FLIGHT) | QUEUED;
        assert_eq!(available(word), MAX_IN_FLIGHT);
        assert_eq!(limit(word), MAX_IN_FLIGHT);
        assert!(is_queued(word));
        assert_eq!(in_flight(word), 0);
        assert_eq!(word >> 63, 0);
        let taken = word - 5;
        assert_eq!((available(taken), in_flight(taken)), (MAX_IN_FLIGHT - 5, 5));
        assert_eq!(limit(taken - limit_units(5)), MAX_IN_FLIGHT - 5);
        assert_eq!(limit_units(1), 1 << 32);
    }
}

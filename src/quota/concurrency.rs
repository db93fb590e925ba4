//! The keyed in-flight limiter's per-key state: units in flight and a release counter in one
//! word, a [`SlotState`] the keyed table keeps as it keeps a rate quota's
//! ([`KeyedInFlightLimiter`](crate::inflight::KeyedInFlightLimiter)).
//!
//! # State word
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0..24 | `in_flight` | units held by the key's permits now |
//! | 24..64 | `released` | releases in the slot since it was first assigned (a reclaiming key carries the count on), modulo 2^40 |
//!
//! An acquire of `n` adds `n` to `in_flight` ([`Concurrency::acquire_step`]); a release of `n`
//! ([`Concurrency::release_step`]) subtracts `n` from `in_flight` and adds one to `released`,
//! which adds `2^24 − n` (at least 3) to the word. So every word written is numerically greater
//! than the one it replaces, except when `released` wraps (after 2^40 releases), exactly as a
//! fixed window's index wraps: the keyed protocol's ABA argument holds "barring a full wrap
//! between one thread's load and its compare-and-swap", 2^40 releases in the slot while a
//! thread sits between the two. `released` counts releases, not units: counting units, a key
//! whose permits each hold 2^24 − 3 units would wrap it after 65,537 releases, milliseconds of
//! traffic, and a stalled acquire could then land in another key's entry.
//!
//! # The [`SlotState`] invariants, for a state without time
//!
//! Time plays no part: its [`Instant`](SlotState::Instant) is `()` (no clock predicts when work
//! ends), and it is no [`Quota`](super::Quota): no decision reports a time from it.
//!
//! - [`FIRST`](SlotState::FIRST) (0) is a key never seen: nothing in flight, nothing released.
//! - the acquire step never panics or wraps, for any word and cost: it denies every cost above the limit,
//!   and every word whose `in_flight` field is already above the limit (no limiter writes one).
//! - A written word is strictly greater than the word it replaces (cost ≥ 1; no limiter writes a
//!   zero-cost step, which would leave the word unchanged), barring the wrap of `released`
//!   above. The invariant's second clause ("and than any word fresh at `now`") is about time,
//!   which this state does not have; what the keyed protocol needs of it is that a slot
//!   reclaimed from a fresh word `w` gets a first word greater than `w`, and it does: the table
//!   steps the new key's first word from the reclaimed word itself (`released` carries over),
//!   so the new key's words all lie above `w` and every word its old key wrote.
//! - A cost of at most the limit is always admitted on a fresh state (a word with nothing in
//!   flight, whatever `released` holds).
//! - The two slot markers, `u64::MAX` and `u64::MAX − 1`, have `in_flight` fields of 2^24 − 1
//!   and 2^24 − 2; the limit is at most [`MAX_KEYED_IN_FLIGHT`] (2^24 − 3), so no word with at
//!   most the limit in flight is either.
//!
//! A word is as good as fresh when nothing is in flight, and [`freshness_rank`] ranks a word by
//! its units in flight: a table reclaims only entries with nothing in flight, and the keyed
//! in-flight limiter refuses to be built with eviction, so an entry with units in flight keeps
//! its slot until its permits are all released.
//!
//! [`freshness_rank`]: SlotState::freshness_rank

use super::{SlotState, Step};

/// The largest limit of a [`KeyedInFlightLimiter`](crate::inflight::KeyedInFlightLimiter): 2^24
/// − 3 (16,777,213) units in flight per key (the state word keeps 24 bits for them, and its two
/// largest values are the table's slot markers).
///
/// ```
/// use nanolimit::inflight::{KeyedInFlightLimiter, MAX_KEYED_IN_FLIGHT};
///
/// assert_eq!(MAX_KEYED_IN_FLIGHT, 16_777_213);
/// assert!(KeyedInFlightLimiter::<u64>::new(MAX_KEYED_IN_FLIGHT, 100).is_ok());
/// assert!(KeyedInFlightLimiter::<u64>::new(MAX_KEYED_IN_FLIGHT + 1, 100).is_err());
/// ```
pub const MAX_KEYED_IN_FLIGHT: u64 = (1 << 24) - 3;

/// Width of `in_flight`.
const IN_FLIGHT_BITS: u32 = 24;
/// Mask of `in_flight`.
const IN_FLIGHT_MASK: u64 = (1 << IN_FLIGHT_BITS) - 1;
/// One unit of `released`.
const RELEASED_UNIT: u64 = 1 << IN_FLIGHT_BITS;

// The largest limit leaves the two largest `in_flight` values, the slot markers', unreachable.
const _: () = assert!(MAX_KEYED_IN_FLIGHT == IN_FLIGHT_MASK - 2);

/// At most `limit` units in flight per key (see the [module](self) documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Concurrency {
    limit: u64,
}

impl Concurrency {
    /// The quota of `limit` units, which the caller has checked is in `1..=MAX_KEYED_IN_FLIGHT`.
    pub(crate) const fn new(limit: u64) -> Self {
        Concurrency { limit }
    }

    /// Units in flight in `state`.
    #[inline]
    pub(crate) const fn in_flight(state: u64) -> u64 {
        state & IN_FLIGHT_MASK
    }

    /// The release of `units` held by a permit of the key whose word is `state`: `in_flight`
    /// down by `units`, `released` up by one (modulo 2^40). Denies (writes nothing) a word
    /// with fewer units in flight than released, which only a release into another key's word
    /// could meet: the keyed limiter treats that as a broken invariant.
    #[inline]
    pub(crate) const fn release_step(state: u64, units: u64) -> Step {
        if units == 0 || units > IN_FLIGHT_MASK || Self::in_flight(state) < units {
            return Step::Deny;
        }
        // Stays within `in_flight` (no borrow from `released`), then wraps `released` alone.
        Step::Allow((state - units).wrapping_add(RELEASED_UNIT))
    }
}

impl Concurrency {
    /// The acquire step: `cost` more units in flight, if they fit the limit. Denies every cost
    /// above the limit, and every word whose `in_flight` field is already above it (no limiter
    /// writes one).
    #[inline]
    pub(crate) fn acquire_step(&self, state: u64, cost: u64) -> Step {
        let in_flight = Self::in_flight(state);
        // `in_flight <= limit` first, so the subtraction cannot wrap.
        if in_flight <= self.limit && cost <= self.limit - in_flight {
            // The sum stays within `in_flight`'s field: no carry into `released`.
            Step::Allow(state + cost)
        } else {
            Step::Deny
        }
    }

    /// The limit: the most units one key may have in flight.
    #[inline]
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Units a key whose word is `state` could take now.
    pub(crate) fn remaining(&self, state: u64) -> u64 {
        self.limit.saturating_sub(Self::in_flight(state))
    }
}

impl SlotState for Concurrency {
    type Instant = ();

    #[inline]
    fn freshness_rank(&self, state: u64, _now: ()) -> Option<u64> {
        match Self::in_flight(state) {
            0 => None,
            in_flight => Some(in_flight),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyed table's slot markers (`src/store/table/slot.rs`).
    const VACANT: u64 = u64::MAX;
    const RESERVED: u64 = u64::MAX - 1;

    const QUOTA: Concurrency = Concurrency::new(5);

    #[test]
    fn acquires_count_up_to_the_limit_and_no_further() {
        let Step::Allow(three) = QUOTA.acquire_step(Concurrency::FIRST, 3) else {
            panic!("a fresh key admits up to its limit")
        };
        assert_eq!(Concurrency::in_flight(three), 3);
        assert_eq!(QUOTA.acquire_step(three, 3), Step::Deny);
        assert_eq!(QUOTA.acquire_step(three, 2), Step::Allow(5));
        assert_eq!(QUOTA.acquire_step(5, 1), Step::Deny);
        assert_eq!(QUOTA.acquire_step(0, 6), Step::Deny);
        assert_eq!(QUOTA.remaining(three), 2);
        assert!(QUOTA.freshness_rank(three, ()).is_some());
        assert_eq!(QUOTA.freshness_rank(three, ()), Some(3));
    }

    #[test]
    fn a_release_lowers_in_flight_and_raises_the_word() {
        let Step::Allow(released) = Concurrency::release_step(3, 2) else {
            panic!("3 in flight release 2")
        };
        assert_eq!(Concurrency::in_flight(released), 1);
        assert_eq!(released >> IN_FLIGHT_BITS, 1);
        assert!(released > 3);
        let Step::Allow(fresh) = Concurrency::release_step(released, 1) else {
            panic!("1 in flight releases 1")
        };
        assert!(fresh > released && QUOTA.freshness_rank(fresh, ()).is_none());
        assert_eq!(QUOTA.freshness_rank(fresh, ()), None);
        // An acquire from a fresh word keeps its release count: the word keeps growing.
        assert_eq!(QUOTA.acquire_step(fresh, 1), Step::Allow(fresh + 1));
        assert_eq!(Concurrency::release_step(fresh, 1), Step::Deny);
        assert_eq!(Concurrency::release_step(3, 0), Step::Deny);
    }

    /// Releases of the largest permits still take 2^40 releases to wrap the count: the word
    /// after 65,537 of them (2^40 units at most) is still above every earlier one.
    #[test]
    fn the_release_count_counts_releases_not_units() {
        let limit = MAX_KEYED_IN_FLIGHT;
        let quota = Concurrency::new(limit);
        let mut word = Concurrency::FIRST;
        for _ in 0..65_537 {
            let Step::Allow(held) = quota.acquire_step(word, limit) else {
                panic!("a fresh word admits the limit")
            };
            let Step::Allow(released) = Concurrency::release_step(held, limit) else {
                panic!("releases what is in flight")
            };
            assert!(held > word && released > held);
            word = released;
        }
        assert_eq!(word >> IN_FLIGHT_BITS, 65_537);
    }

    #[test]
    fn the_release_count_wraps_alone_and_no_marker_is_ever_written() {
        let limit = MAX_KEYED_IN_FLIGHT;
        let quota = Concurrency::new(limit);
        let top = u64::MAX - IN_FLIGHT_MASK; // `released` all ones, nothing in flight
        let Step::Allow(full) = quota.acquire_step(top, limit) else {
            panic!("a fresh word admits the limit")
        };
        assert!(full < RESERVED); // so below VACANT too
        assert_eq!(Concurrency::in_flight(full), limit);
        assert_eq!(quota.acquire_step(full, 1), Step::Deny);
        // `released` wraps to 0; in flight: 1.
        let Step::Allow(wrapped) = Concurrency::release_step(full, limit - 1) else {
            panic!("releases what is in flight")
        };
        assert_eq!(Concurrency::in_flight(wrapped), 1);
        assert_eq!(wrapped >> IN_FLIGHT_BITS, 0);
        // Markers and garbage words are denied, never wrapped.
        for word in [VACANT, RESERVED, IN_FLIGHT_MASK] {
            assert_eq!(quota.acquire_step(word, 1), Step::Deny);
        }
        assert_eq!(
            Concurrency::release_step(full, IN_FLIGHT_MASK + 1),
            Step::Deny
        );
    }

    proptest::proptest! {
        /// For any word, limit and units: no panic, no wrap; an admitted or released word is
        /// greater than the one it replaces (unless `released` wraps), within the limit, and
        /// never a slot marker.
        #[test]
        fn steps_never_wrap_shrink_or_write_a_marker(
            word in proptest::prelude::any::<u64>(),
            limit in 1..=MAX_KEYED_IN_FLIGHT,
            units in 0..=IN_FLIGHT_MASK + 2,
        ) {
            let quota = Concurrency::new(limit);
            if let Step::Allow(next) = quota.acquire_step(word, units) {
                proptest::prop_assert!(Concurrency::in_flight(next) <= limit);
                proptest::prop_assert!(units == 0 || next > word);
                proptest::prop_assert!(next < RESERVED);
                proptest::prop_assert_eq!(next >> IN_FLIGHT_BITS, word >> IN_FLIGHT_BITS);
            } else {
                proptest::prop_assert!(
                    units > limit || Concurrency::in_flight(word) + units > limit
                );
            }
            if let Step::Allow(next) = Concurrency::release_step(word, units) {
                proptest::prop_assert_eq!(
                    Concurrency::in_flight(next),
                    Concurrency::in_flight(word) - units
                );
                let released = (word >> IN_FLIGHT_BITS) + 1;
                proptest::prop_assert_eq!(next >> IN_FLIGHT_BITS, released % (1 << 40));
                proptest::prop_assert!(next > word || released >= 1 << 40);
                proptest::prop_assert!(
                    Concurrency::in_flight(word) > limit || next < RESERVED
                );
            }
        }
    }
}

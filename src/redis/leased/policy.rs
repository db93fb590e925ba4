//! What a key's lease word allows a lease, and how its last lease went: what the shared lease
//! policy (`src/limiter/lease.rs`) needs to size the next.

use super::word;
use crate::limiter::lease::{LastLease, LeaseWord};
use std::time::Duration;

/// What a lease word allows a lease: units up to its units field, lifetimes of at least 1 ms (a
/// few of its 65.5 µs grains).
pub(crate) const KEY_LEASES: LeaseWord = LeaseWord {
    max_units: word::MAX_UNITS,
    min_lifetime: Duration::from_millis(1),
    lifetime_grains: word::lifetime_grains,
};

/// How a key's last lease went, from the lease word its refill claimed, for the shared lease
/// policy ([`LeasePolicy::next_units`](crate::limiter::lease::LeasePolicy::next_units)):
///
/// - lapsed with units unspent: the key's rate is below what its leases hold;
/// - spent to the last unit (before it lapsed or after), or half spent, starting a refill in
///   the background, within the first quarter of its lifetime: the key's rate is above what
///   its leases hold;
/// - otherwise (and for a key that never held a lease), steady.
///
/// A key with a steady rate settles about where one lease lasts one lifetime.
pub(crate) fn last_lease(previous: u64, now_grain: u64, lifetime_grains: u64) -> LastLease {
    let deadline = word::deadline(previous);
    if deadline == 0 {
        return LastLease::Never;
    }
    let unspent = word::units(previous);
    if now_grain >= deadline {
        return match unspent {
            0 => LastLease::UsedUpQuickly,
            _ => LastLease::LapsedUnspent,
        };
    }
    let started = deadline.saturating_sub(lifetime_grains);
    if unspent == 0 || now_grain.saturating_sub(started) <= lifetime_grains / 4 {
        return LastLease::UsedUpQuickly;
    }
    LastLease::Steady
}

#[cfg(test)]
mod tests {
    use super::super::word::{self, DEADLINE_SHIFT, REFILLING};
    use super::*;
    use crate::limiter::lease::LeasePolicy;

    /// Leases of 2 to 64 units living 40 grains.
    const POLICY: Policy = Policy(LeasePolicy {
        min_units: 2,
        max_units: 64,
        lifetime_ns: 40 << word::GRAIN_SHIFT,
        lifetime_grains: 40,
    });

    struct Policy(LeasePolicy);

    impl Policy {
        /// The size of a key's next lease after its lease word `previous`, at `now_grain`.
        fn next_units(&self, current: u64, previous: u64, now_grain: u64) -> u64 {
            let last = last_lease(previous, now_grain, self.0.lifetime_grains);
            self.0.next_units(current, last)
        }
    }

    /// A lease word holding `units` until grain `deadline` (taken at `deadline − 40`).
    fn lease(units: u64, deadline: u64) -> u64 {
        units | (deadline << DEADLINE_SHIFT) | REFILLING
    }

    #[test]
    fn a_key_that_never_leased_starts_at_its_size_clamped() {
        assert_eq!(POLICY.next_units(8, word::EMPTY, 500), 8);
        assert_eq!(POLICY.next_units(1, word::EMPTY, 500), 2);
        assert_eq!(POLICY.next_units(100, word::EMPTY, 500), 64);
    }

    #[test]
    fn a_lease_spent_to_the_last_unit_doubles_the_next_up_to_the_maximum() {
        // Taken at grain 100, empty at 130 (still live) or found empty after it lapsed.
        assert_eq!(POLICY.next_units(8, lease(0, 140), 130), 16);
        assert_eq!(POLICY.next_units(8, lease(0, 140), 500), 16);
        assert_eq!(POLICY.next_units(40, lease(0, 140), 130), 64);
    }

    #[test]
    fn a_lease_half_spent_in_its_first_quarter_doubles_the_next() {
        assert_eq!(POLICY.next_units(8, lease(3, 140), 110), 16);
        // Later in its life: kept.
        assert_eq!(POLICY.next_units(8, lease(3, 140), 111), 8);
    }

    #[test]
    fn a_lease_that_lapsed_with_units_halves_the_next_down_to_the_minimum() {
        assert_eq!(POLICY.next_units(8, lease(5, 140), 140), 4);
        assert_eq!(POLICY.next_units(3, lease(5, 140), 900), 2);
    }
}

//! How big a key's leases are and how long they live: a leased limiter's configuration, and
//! the rule that adapts each key's lease size to its rate.

use super::word;

/// Lease sizes and lifetimes, checked when the limiter is built.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeasePolicy {
    pub(crate) min_units: u64,
    pub(crate) max_units: u64,
    pub(crate) lifetime_grains: u64,
}

impl LeasePolicy {
    /// The size of a key's next lease, from its current size and the lease word the refill
    /// claimed:
    ///
    /// - halved (down to the minimum) when the previous lease lapsed with units unspent: the
    ///   key's rate is below what its leases hold, so they only widen the bound;
    /// - doubled (up to the maximum) when the previous lease was spent to the last unit before
    ///   it lapsed, or when the refill starts (at half the lease, in the background) within the
    ///   first quarter of its lifetime: the key's rate is above what its leases hold, so larger
    ///   ones save round trips;
    /// - kept otherwise (and for a key that never held a lease).
    ///
    /// A key with a steady rate settles about where one lease lasts one lifetime.
    pub(crate) fn next_units(&self, current: u64, previous: u64, now_grain: u64) -> u64 {
        let current = current.clamp(self.min_units, self.max_units);
        let deadline = word::deadline(previous);
        if deadline == 0 {
            return current;
        }
        let unspent = word::units(previous);
        let grow = current.saturating_mul(2).min(self.max_units);
        if now_grain >= deadline {
            return if unspent > 0 {
                (current / 2).max(self.min_units)
            } else {
                grow
            };
        }
        let started = deadline.saturating_sub(self.lifetime_grains);
        if unspent == 0 || now_grain.saturating_sub(started) <= self.lifetime_grains / 4 {
            return grow;
        }
        current
    }
}

#[cfg(test)]
mod tests {
    use super::super::word::{self, DEADLINE_SHIFT, REFILLING};
    use super::*;

    /// Leases of 2 to 64 units living 40 grains.
    const POLICY: LeasePolicy = LeasePolicy {
        min_units: 2,
        max_units: 64,
        lifetime_grains: 40,
    };

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

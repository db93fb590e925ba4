//! Leases: units taken from a shared budget in one operation, to be spent locally, and the rule
//! that sizes them.
//!
//! A lease is an admission of its whole size by the shared quota at the time it is taken, so
//! the shared quota's own guarantee bounds the leases; the stripes only decide *when* leased
//! units are spent, never how many exist. [`LeaseSource`] is the one interface a striped limiter
//! needs of the budget, two operations on a GCRA word:
//!
//! | operation | in-process word (here) | a store shared by a fleet (Redis: one script each) |
//! |---|---|---|
//! | take `n` units at `now` | the GCRA step of cost `n` through the CAS driver; the word written is the lease's token | the same step on the stored word inside one script; the script returns the word it stored |
//! | give `u` units of a lease back | `tat := token − u·T` if the word still equals the token, else nothing | the same comparison and subtraction inside one script |
//!
//! The token (the word a lease wrote) is what makes a give-back exact without a lock: the word
//! still equals it only if no lease or admission came after, and then the budget is exactly as
//! if the lease had been smaller. The over-admission bound of the striped limiter follows from
//! the quota's own bound on leases, whatever the store, with processes in place of stripes.

use super::stripe;
use crate::clock::{Clock, Timestamp};
use crate::engine::operation::{Consume, GiveBack};
use crate::limiter::direct::Limiter;
use crate::quota::{Gcra, Quota, Reservable};

/// A shared budget that grants leases.
pub(crate) trait LeaseSource {
    /// Takes `units` (at most the quota's burst) at `now`, all or nothing: the shared word the
    /// lease wrote (`Ok`, what [`give_back`](Self::give_back) later names), or the word that
    /// denied it (`Err`, nothing written).
    fn take(&self, units: u64, now: Timestamp) -> Result<u64, u64>;

    /// Gives `units` of the lease that wrote `booked` back to the budget, if no other lease or
    /// admission has been taken since (then the budget is exactly as if the lease had been
    /// `units` smaller); otherwise gives nothing, and the units lapse. Never gives more than the
    /// lease took.
    fn give_back(&self, booked: u64, units: u64);
}

impl<C: Clock> LeaseSource for Limiter<Gcra, C> {
    #[inline]
    fn take(&self, units: u64, now: Timestamp) -> Result<u64, u64> {
        let core = &self.core;
        core.store
            .apply(Consume, &core.quota, units, core.quota.instant(now))
    }

    #[cold]
    fn give_back(&self, booked: u64, units: u64) {
        let quota = &self.core.quota;
        let give_back = GiveBack {
            booked,
            increment_ticks: quota.increment_ticks(units),
        };
        // The cancellation step ignores the time: the origin avoids a clock read.
        let _ = self
            .core
            .store
            .apply(give_back, quota, 0, quota.instant(Timestamp::ORIGIN));
    }
}

/// How big leases are and how long they live: a striped limiter's configuration, checked when
/// it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeasePolicy {
    /// The smallest lease a refill takes (unless the request needs more).
    pub(crate) min_units: u64,
    /// The largest lease a refill takes (unless the request needs more).
    pub(crate) max_units: u64,
    /// The configured lease lifetime.
    pub(crate) lifetime_ns: u64,
    /// The grains, counting the lease's own, in which its units may be spent
    /// ([`stripe::lifetime_grains`] of the lifetime).
    pub(crate) lifetime_grains: u64,
}

impl LeasePolicy {
    pub(crate) fn new(min_units: u64, max_units: u64, lifetime_ns: u64) -> LeasePolicy {
        LeasePolicy {
            min_units,
            max_units,
            lifetime_ns,
            lifetime_grains: stripe::lifetime_grains(lifetime_ns),
        }
    }

    /// The size of the lease a refill takes, given the word the refill claimed (the previous
    /// lease's units and start) and the size `current` that lease was taken at:
    ///
    /// - halved (down to `min_units`) when the previous lease lapsed with units unspent: the
    ///   stripe's rate is below what its leases hold, so they only widen the bound;
    /// - doubled (up to `max_units`) when the previous lease was spent within the first quarter
    ///   of its lifetime: the stripe refills often, so larger leases save shared writes;
    /// - kept otherwise (and for a stripe that never held a lease).
    pub(crate) fn next_units(&self, current: u64, previous_word: u64, now_grain: u64) -> u64 {
        let current = current.clamp(self.min_units, self.max_units);
        let unspent = stripe::units(previous_word);
        if unspent > 0 && stripe::has_lapsed(previous_word, now_grain, self.lifetime_grains) {
            return (current / 2).max(self.min_units);
        }
        let spent_quickly = unspent == 0
            && previous_word != stripe::EMPTY
            && now_grain.saturating_sub(stripe::start(previous_word)) <= self.lifetime_grains / 4;
        if spent_quickly {
            return current.saturating_mul(2).min(self.max_units);
        }
        current
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::striped::stripe::{pack, GRAIN_SHIFT};

    /// 41 grains of lifetime: units live 40 grains, a quarter of which is 10.
    fn policy() -> LeasePolicy {
        LeasePolicy::new(2, 64, 41 << GRAIN_SHIFT)
    }

    #[test]
    fn a_lease_spent_quickly_doubles_up_to_the_maximum() {
        let policy = policy();
        assert_eq!(policy.lifetime_grains, 40);
        // Taken in grain 100, emptied by grain 110.
        let emptied = pack(0, 100);
        assert_eq!(policy.next_units(8, emptied, 105), 16);
        assert_eq!(policy.next_units(8, emptied, 110), 16);
        assert_eq!(policy.next_units(40, emptied, 110), 64);
        assert_eq!(policy.next_units(64, emptied, 110), 64);
    }

    #[test]
    fn a_lease_spent_slowly_keeps_its_size() {
        let policy = policy();
        let emptied = pack(0, 100);
        assert_eq!(policy.next_units(8, emptied, 111), 8);
        assert_eq!(policy.next_units(8, emptied, 200), 8);
        // A request that needed more than the stripe held, before the lease lapsed.
        assert_eq!(policy.next_units(8, pack(3, 100), 120), 8);
    }

    #[test]
    fn a_lease_that_lapsed_with_units_halves_down_to_the_minimum() {
        let policy = policy();
        let lapsed = pack(5, 100);
        assert_eq!(policy.next_units(8, lapsed, 140), 4);
        assert_eq!(policy.next_units(3, lapsed, 500), 2);
        assert_eq!(policy.next_units(2, lapsed, 500), 2);
    }

    #[test]
    fn a_stripe_never_leased_starts_at_its_current_size() {
        let policy = policy();
        assert_eq!(policy.next_units(2, stripe::EMPTY, 0), 2);
        assert_eq!(policy.next_units(2, stripe::EMPTY, 1 << 30), 2);
        // Out-of-bounds sizes are clamped first.
        assert_eq!(policy.next_units(1, stripe::EMPTY, 0), 2);
        assert_eq!(policy.next_units(1_000, stripe::EMPTY, 0), 64);
    }
}

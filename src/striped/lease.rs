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
use crate::limiter::lease::{LastLease, LeaseWord};
use crate::quota::{Gcra, Quota};
use std::time::Duration;

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

/// How a stripe's last lease went, from the word its refill claimed (the previous lease's units
/// and start), for the shared lease policy ([`LeasePolicy::next_units`](crate::limiter::lease::LeasePolicy::next_units)).
pub(crate) fn last_lease(previous_word: u64, now_grain: u64, lifetime_grains: u64) -> LastLease {
    let unspent = stripe::units(previous_word);
    if unspent > 0 && stripe::has_lapsed(previous_word, now_grain, lifetime_grains) {
        return LastLease::LapsedUnspent;
    }
    if previous_word == stripe::EMPTY {
        return LastLease::Never;
    }
    let spent_quickly = unspent == 0
        && now_grain.saturating_sub(stripe::start(previous_word)) <= lifetime_grains / 4;
    match spent_quickly {
        true => LastLease::UsedUpQuickly,
        false => LastLease::Steady,
    }
}

/// What a stripe word allows a lease: units below its claim marker, lifetimes of at least four
/// grains (units are spent in the whole grains of the lifetime less one, counting the lease's
/// own, so they live at least two grains).
pub(crate) const STRIPE_LEASES: LeaseWord = LeaseWord {
    max_units: stripe::MAX_LEASE_UNITS,
    min_lifetime: Duration::from_nanos(4 << stripe::GRAIN_SHIFT),
    lifetime_grains: stripe::lifetime_grains,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::lease::LeasePolicy;
    use crate::striped::stripe::{pack, GRAIN_SHIFT};

    /// Leases of 2 to 64 units; 41 grains of lifetime: units live 40 grains, a quarter of which
    /// is 10.
    struct Policy(LeasePolicy);

    impl Policy {
        /// The next lease's size after a stripe's `previous_word`, at grain `now_grain`.
        fn next_units(&self, current: u64, previous_word: u64, now_grain: u64) -> u64 {
            let last = last_lease(previous_word, now_grain, self.0.lifetime_grains);
            self.0.next_units(current, last)
        }
    }

    fn policy() -> Policy {
        let lifetime = Duration::from_nanos(41 << GRAIN_SHIFT);
        Policy(LeasePolicy::new(2, 64, lifetime, 1_000, STRIPE_LEASES).unwrap())
    }

    #[test]
    fn a_lease_spent_quickly_doubles_up_to_the_maximum() {
        let policy = policy();
        assert_eq!(policy.0.lifetime_grains, 40);
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

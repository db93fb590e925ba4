//! The striped limiter's slow path: a stripe that cannot spend refills from the shared budget
//! under its claim, giving lapsed units back when that is exact (the protocol: the module
//! documentation).

use super::lease::{last_lease, LeaseSource};
use super::stripe::{self, Stripe};
use super::StripedLimiter;
use crate::clock::{Clock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::operation::Consume;
use crate::quota::{Gcra, GcraInstant, Quota, Step};
use crate::sync::Ordering;

impl<C: Clock> StripedLimiter<C> {
    /// The slow path of [`decide`](Self::decide): the stripe is claimed by another thread, or
    /// holds less than `cost` live units. `None` when the stripe changed under it (the caller
    /// starts over).
    #[cold]
    #[inline(never)]
    pub(super) fn refill(
        &self,
        stripe: &Stripe,
        word: u64,
        cost: u64,
        now: Timestamp,
        instant: GcraInstant,
    ) -> Option<Decision<Gcra>> {
        let quota = self.shared.quota();
        let now_grain = stripe::grain(now);
        if stripe::is_claimed(word) || stripe::is_behind(word, now_grain) {
            // Another thread is refilling this stripe, or the reading is earlier than the
            // stripe's lease and may not spend it: the shared budget directly, no waiting.
            return Some(self.shared.core.decide(Consume, (), quota, cost, instant));
        }
        let held = stripe::spendable(word, now_grain, self.policy.lifetime_grains);
        let lapsed = stripe::units(word) - held;
        let needed = cost - held;
        // The read-only test (a denial writes nothing), on the budget as it will be once the
        // refill gives the lapsed units back, if it will.
        let budget = self.budget_after_lapse(stripe, lapsed);
        if quota.step(budget, instant, needed) == Step::Deny {
            return Some(self.denied(budget, held, cost, instant));
        }
        if !self.claim(stripe, word) {
            return None;
        }
        if lapsed > 0 {
            self.give_back(stripe, lapsed);
        }
        Some(self.lease_under_claim(stripe, word, held, needed, cost, now))
    }

    /// Under the stripe's claim (taken over `word`, holding `held` live units): sizes the next
    /// lease, takes it from the shared budget (or just the `needed` units if a full lease does
    /// not fit), and ends the claim, publishing the lease; or, if the budget changed since the
    /// test, restores the stripe and denies.
    fn lease_under_claim(
        &self,
        stripe: &Stripe,
        word: u64,
        held: u64,
        needed: u64,
        cost: u64,
        now: Timestamp,
    ) -> Decision<Gcra> {
        let now_grain = stripe::grain(now);
        let instant = self.shared.quota().instant(now);
        // ORDERING: Relaxed: written only under a claim; this claim's Acquire made the last
        // claim holder's write visible.
        let current = stripe.lease_units.load(Ordering::Relaxed);
        let last = last_lease(word, now_grain, self.policy.lifetime_grains);
        let lease_units = self.policy.next_units(current, last);
        // ORDERING: Relaxed, as above.
        stripe.lease_units.store(lease_units, Ordering::Relaxed);
        let wanted = lease_units.max(needed);
        let lease = match LeaseSource::take(&self.shared, wanted, now) {
            Ok(booked) => Ok((booked, wanted)),
            Err(_) if wanted > needed => {
                LeaseSource::take(&self.shared, needed, now).map(|booked| (booked, needed))
            }
            Err(observed) => Err(observed),
        };
        match lease {
            Ok((booked, leased)) => {
                let left = leased - needed;
                // ORDERING: Relaxed: published by the Release store of the word below.
                stripe.booked.store(booked, Ordering::Relaxed);
                // ORDERING: Release: publishes the lease and ends the claim; pairs with the next
                // claim's Acquire, which then reads `booked` and `lease_units` as written here.
                stripe
                    .word
                    .store(stripe::pack(left, now_grain), Ordering::Release);
                self.admitted_on(booked, left, cost, instant)
            }
            Err(observed) => {
                // The budget changed since the test: restore what the stripe held (its lapsed
                // units are gone), and deny.
                // ORDERING: Release, as above (ends the claim).
                stripe
                    .word
                    .store(stripe::pack(held, stripe::start(word)), Ordering::Release);
                self.denied(observed, held, cost, instant)
            }
        }
    }

    /// The shared word, less the `lapsed` units of the stripe's lease if giving them back would
    /// be exact (the lease is still the latest): what a refill would find after its give-back.
    /// Read outside the claim, so only a guess for the read-only test: a refill claims and
    /// decides again on what it finds.
    #[inline]
    pub(super) fn budget_after_lapse(&self, stripe: &Stripe, lapsed: u64) -> u64 {
        let observed = self.shared.core.store.load();
        // ORDERING: Relaxed: a guess (see above); the claim's Acquire orders the exact read.
        if lapsed > 0 && stripe.booked.load(Ordering::Relaxed) == observed {
            let quota = self.shared.quota();
            observed.saturating_sub(quota.increment_ticks(lapsed))
        } else {
            observed
        }
    }

    /// Takes the stripe's claim over `word`; false if the word changed.
    #[inline]
    pub(super) fn claim(&self, stripe: &Stripe, word: u64) -> bool {
        // ORDERING: success Acquire: pairs with the Release store that ended the previous claim
        // (through the release sequence of the spends since), so `booked` and `lease_units` read
        // under this claim are the ones that claim wrote. Failure Relaxed: nothing is read.
        stripe
            .word
            .compare_exchange(
                word,
                stripe::claimed(word),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Under a claim: gives `units` of the stripe's lease back to the budget, if exact.
    #[cold]
    pub(super) fn give_back(&self, stripe: &Stripe, units: u64) {
        // ORDERING: Relaxed: read under the claim (see `claim`).
        let booked = stripe.booked.load(Ordering::Relaxed);
        LeaseSource::give_back(&self.shared, booked, units);
    }
}

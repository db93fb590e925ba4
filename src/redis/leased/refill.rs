//! A key's refill and the calls to Redis: the claim a refill holds (released if its future is
//! dropped), the refill itself (give back lapsed units, take the next lease, publish), the
//! script call of a check that goes to Redis directly, and the give-back script.

use super::policy::last_lease;
use super::table::LeaseCell;
use super::word;
use super::{held_estimate, Counters, Inner};
use crate::clock::{Clock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::request::Request;
use crate::limiter::lease::LeasePolicy;
use crate::quota::Gcra;
use crate::redis::quota::hex;
use crate::sync::{Arc, Ordering};
use ::redis::Script;
use std::sync::LazyLock;

/// A refill's claim on a key's word, made when the claim succeeds and owned by the refill: if
/// the refill's future is dropped before it publishes (a cancelled request, a background task
/// its runtime drops unpolled), the claim ends with nothing granted. A key is never left
/// claimed.
pub(super) struct Claim {
    cell: Arc<LeaseCell>,
    now_grain: u64,
    deadline: u64,
    published: bool,
}

impl Claim {
    pub(super) fn new(cell: Arc<LeaseCell>, now_grain: u64, policy: &LeasePolicy) -> Claim {
        Claim {
            cell,
            now_grain,
            deadline: now_grain + policy.lifetime_grains,
            published: false,
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.published {
            self.cell.publish(self.now_grain, 0, 0, self.deadline);
        }
    }
}

/// A give-back's claim of every unit of a key ([`LeaseCell::claim_all`]), ended on drop, so a
/// cancelled `give_back_unused` leaves no key claimed.
pub(super) struct ClaimAll<'cell>(pub(super) &'cell LeaseCell);

impl Drop for ClaimAll<'_> {
    fn drop(&mut self) {
        self.0.release_empty();
    }
}

/// The give-back script: lowers the key's word by a lease's unused units if Redis still holds
/// the word that lease wrote.
static GIVE_BACK_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../lua/give_back.lua")));

impl<C: Clock + 'static> Inner<C> {
    /// One refill of `key`, claimed from the word `previous`: gives back the previous lease's
    /// lapsed units (while Redis holds its token), takes the next lease (topping the key up to its
    /// lease size, and at least `cost`), spends `cost` from it for the refilling request, and publishes the
    /// rest. The request's decision (`None` for a background refill, which has no request).
    pub(super) async fn refill(
        &self,
        key: &str,
        mut claim: Claim,
        previous: u64,
        cost: u64,
        now: Timestamp,
        at: Option<Timestamp>,
    ) -> Option<Decision<Gcra>> {
        let cell = Arc::clone(&claim.cell);
        let cell = &*cell;
        let (now_grain, deadline) = (claim.now_grain, claim.deadline);
        // ORDERING: Relaxed: written only under the claim, which this refill holds (its
        // Acquire ordered the previous refill's writes before these reads).
        let current_units = cell.lease_units.load(Ordering::Relaxed);
        let last = last_lease(previous, now_grain, self.policy.lifetime_grains);
        let lease_units = self.policy.next_units(current_units, last);
        let held = word::spendable(previous, now_grain);
        let lapsed = word::units(previous) - held;
        if lapsed > 0 {
            self.give_back(key, cell, lapsed).await;
        }
        let want = lease_units.saturating_sub(held).max(cost);
        let mut granted = 0;
        let mut decision = None;
        if want > 0 {
            let taken = self.take(key, want, at).await;
            if taken.is_allowed() && !taken.is_fallback() {
                granted = want;
                self.granted(cell, &taken, want);
            } else if cost > 0 && want > cost && !taken.is_fallback() {
                // Not the whole lease: just the request's cost, or its denial.
                let just_cost = self.take(key, cost, at).await;
                if just_cost.is_allowed() && !just_cost.is_fallback() {
                    granted = cost;
                    self.granted(cell, &just_cost, cost);
                } else {
                    decision = Some(just_cost);
                }
            } else if cost > 0 {
                decision = Some(if taken.is_fallback() {
                    self.shared.fallback(cost, at)
                } else {
                    taken
                });
            }
        }
        let spent = if granted >= cost && cost > 0 { cost } else { 0 };
        // ORDERING: Relaxed: read again by the next refill, after its Acquire claim pairs
        // with the Release publish below.
        cell.lease_units.store(lease_units, Ordering::Relaxed);
        claim.published = true;
        let held_after = cell.publish(now_grain, granted, spent, deadline);
        if spent > 0 {
            return Some(self.served_locally(held_after, held_estimate(cell), cost, now));
        }
        decision
    }

    /// Records a lease Redis granted: its token (the word it wrote) and what remains.
    pub(super) fn granted(&self, cell: &LeaseCell, taken: &Decision<Gcra>, units: u64) {
        // ORDERING: Relaxed: under the claim; published by the refill's Release.
        cell.token.store(taken.state_word(), Ordering::Relaxed);
        // ORDERING: Relaxed: an estimate (see `held_estimate`).
        cell.shared_remaining
            .store(taken.remaining(), Ordering::Relaxed);
        Counters::add(&self.counters.leases, 1);
        Counters::add(&self.counters.leased_units, units);
    }

    /// Takes `units` of `key`'s shared budget: the shared limiter's check of that cost.
    pub(super) async fn take(
        &self,
        key: &str,
        units: u64,
        at: Option<Timestamp>,
    ) -> Decision<Gcra> {
        let mut request = Request::cost(units);
        if let Some(at) = at {
            request = request.at(at);
        }
        match self.shared.check_with(key, request).await {
            Ok(decision) => decision,
            // Unreachable: `units` is at most the largest lease (checked against the burst at
            // build) or a validated cost; answered as a failure would be, never a panic.
            Err(_) => self.shared.fallback(units, at),
        }
    }

    /// One script call for the request, exactly as the shared limiter decides.
    #[cold]
    pub(super) async fn direct(
        &self,
        key: &str,
        cost: u64,
        at: Option<Timestamp>,
    ) -> Decision<Gcra> {
        Counters::add(&self.counters.direct_checks, 1);
        self.take(key, cost, at).await
    }

    /// Gives `units` of the key's latest lease back, if Redis still holds the word it wrote.
    /// Whether it did.
    pub(super) async fn give_back(&self, key: &str, cell: &LeaseCell, units: u64) -> bool {
        // ORDERING: Relaxed: under the claim (see `refill`).
        let token = cell.token.load(Ordering::Relaxed);
        if token == 0 {
            return false;
        }
        let decrement = self.shared.quota().increment_ticks(units);
        let mut invocation = GIVE_BACK_SCRIPT.prepare_invoke();
        invocation
            .key(self.shared.key_name(key))
            .arg("")
            .arg(self.shared.store.epoch_unix_seconds.to_string())
            .arg("1")
            .arg(hex(token))
            .arg(hex(decrement));
        let mut connection = self.shared.store.connection.clone();
        let call = invocation.invoke_async::<i64>(&mut connection);
        let given = matches!(
            tokio::time::timeout(self.shared.store.timeout, call).await,
            Ok(Ok(1))
        );
        if given {
            Counters::add(&self.counters.units_given_back, units);
        }
        given
    }
}

//! What a limiter's core does to a state word: consume (check), book ahead (reserve), give a
//! booking back (cancel), or release units a keyed in-flight permit held. Each limiter has one
//! core, generic over the operation, so every operation shares its lookups, its compare-and-swap
//! driver and its protocol; each operation is a pure step of the quota's (see [`Quota`] and
//! [`Reservable`]).

use crate::engine::request::JudgingLead;
use crate::quota::{Concurrency, Quota, Reservable, SlotState, Step};

/// One operation on a state word: the step the driver applies.
pub(crate) trait Operation<Q: SlotState>: Copy {
    /// The step for `cost` at `now` on `state`, under `quota`.
    fn step(&self, quota: &Q, state: u64, now: Q::Instant, cost: u64) -> Step;
}

/// A check: consume the cost now, or deny.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Consume;

impl<Q: Quota> Operation<Q> for Consume {
    #[inline]
    fn step(&self, quota: &Q, state: u64, now: Q::Instant, cost: u64) -> Step {
        quota.step(state, now, cost)
    }
}

/// A reservation: book the cost at its earliest start, if that is at most `max_wait_ticks`
/// away.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Book<'limiter> {
    pub(crate) max_wait_ticks: u64,
    /// Raised to how far a booked word leads `now`, before the word is written (a booking may
    /// lead its reading by more than any quota's tolerance).
    pub(crate) lead: &'limiter JudgingLead,
}

impl<Q: Reservable> Operation<Q> for Book<'_> {
    #[inline]
    fn step(&self, quota: &Q, state: u64, now: Q::Instant, cost: u64) -> Step {
        // A booking that starts at once is the check's admission: the same word (at most
        // `now + tau`), which leads `now` by no more than the quota's own tolerance, so the
        // judging lead needs no raise.
        match quota.step(state, now, cost) {
            Step::Allow(word) => Step::Allow(word),
            Step::Deny => self.book_ahead(quota, state, now, cost),
        }
    }
}

impl Book<'_> {
    /// A booking that waits: the reservation step, and the lead raised to the booked word's.
    #[cold]
    fn book_ahead<Q: Reservable>(&self, quota: &Q, state: u64, now: Q::Instant, cost: u64) -> Step {
        let step = quota.reserve_step(state, now, cost, self.max_wait_ticks);
        if let Step::Allow(booked) = step {
            self.lead.raise_ticks(quota.booked_lead_ticks(booked, now));
        }
        step
    }
}

/// A cancellation: give back what no later admission depends on of a booking that wrote
/// `booked` by adding `increment_ticks`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GiveBack {
    pub(crate) booked: u64,
    pub(crate) increment_ticks: u64,
}

impl<Q: Reservable> Operation<Q> for GiveBack {
    #[inline]
    fn step(&self, _quota: &Q, state: u64, _now: Q::Instant, _cost: u64) -> Step {
        Q::cancel_step(state, self.booked, self.increment_ticks)
    }
}

/// A composite check's refund: give back `cost` that an admission which wrote `written`
/// consumed, because a later member of the composite denied the check (see
/// [`Sealed::refund_step`](crate::quota::Sealed::refund_step)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refund {
    pub(crate) written: u64,
    pub(crate) cost: u64,
}

impl<Q: Quota> Operation<Q> for Refund {
    #[inline]
    fn step(&self, quota: &Q, state: u64, _now: Q::Instant, _cost: u64) -> Step {
        quota.refund_step(state, self.written, self.cost)
    }
}

/// A keyed in-flight acquire: `cost` more units in flight, if they fit.
impl Operation<Concurrency> for Consume {
    #[inline]
    fn step(&self, quota: &Concurrency, state: u64, _now: (), cost: u64) -> Step {
        quota.acquire_step(state, cost)
    }
}

/// A keyed in-flight permit's release: `units` leave the key's units in flight, and its count
/// of releases goes up by one, so the word still grows (see `Concurrency::release_step`). Applied only
/// through the keyed table's guarded driver, to the slot a fresh lookup finds holding the
/// permit's key, never inserting it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Release {
    pub(crate) units: u64,
}

impl Operation<Concurrency> for Release {
    #[inline]
    fn step(&self, _quota: &Concurrency, state: u64, _now: (), _cost: u64) -> Step {
        Concurrency::release_step(state, self.units)
    }
}

//! The one core under every rate limiter: a quota, its judging lead, a clock, counters, and a
//! `Store` of state words. Every operation (check, peek, reserve, cancel, wait) is written
//! once here, for the one-word store of [`Limiter`](crate::Limiter) and the keyed table of
//! [`KeyedLimiter`](crate::KeyedLimiter) alike; the public types only locate the key.

use super::counters::Counting;
use crate::clock::{Clock, Timestamp};
use crate::engine::decision::{Decision, Judged, Outcome};
use crate::engine::error::RequestError;
use crate::engine::operation::{Consume, Operation};
use crate::engine::request::{self, JudgingLead, Request, Resolved};
use crate::quota::{Quota, QuotaError};
use crate::store::Store;

/// A quota on a store of state words, read on a clock, with counters (or none).
#[derive(Debug)]
pub(crate) struct Core<Q: Quota, S, C: Clock, N: Counting> {
    pub(crate) store: S,
    pub(crate) quota: Q,
    /// How far a state may lead the reading that wrote it, under this quota and every tier
    /// used on it (see [`JudgingLead`]).
    pub(crate) lead: JudgingLead,
    pub(crate) clock: C,
    /// The checks' totals, on striped lines of their own, off the state's; or nothing.
    pub(crate) counters: N,
}

impl<Q: Quota, S: Store, C: Clock, N: Counting> Core<Q, S, C, N> {
    /// A core over `store`, whose words start as a key never seen.
    pub(crate) fn new(store: S, quota: Q, clock: C, counters: N) -> Self {
        Core {
            store,
            lead: JudgingLead::new(&quota),
            quota,
            clock,
            counters,
        }
    }

    /// `quota` made ready for requests to this limiter: validated and expressed in its state's
    /// units once, here.
    pub(crate) fn tier(&self, quota: Q) -> Result<Q, QuotaError> {
        request::tier(quota, &self.quota, &self.lead)
    }

    /// The quota, cost and time of `request` on this limiter, or why it can never pass.
    #[inline]
    pub(crate) fn resolve(&self, request: &Request<Q>) -> Result<Resolved<Q>, RequestError> {
        request.resolve(&self.quota, &self.lead, &self.clock)
    }

    /// One unit for the key at `at`, at `now`: the packet-loop check. Forced inline, so that
    /// every arm's decision is built from registers in the caller.
    #[inline(always)]
    pub(crate) fn check_at(&self, at: S::At, now: Timestamp) -> Decision<Q> {
        // Every quota's limit is at least 1.
        self.check(at, &self.quota, 1, self.quota.instant(now))
    }

    /// `request` for the key at `at`.
    #[inline]
    pub(crate) fn check_with(
        &self,
        at: S::At,
        request: Request<Q>,
    ) -> Result<Decision<Q>, RequestError> {
        let resolved = self.resolve(&request)?;
        Ok(self.check(at, &resolved.quota, resolved.cost, resolved.now))
    }

    /// The core every check funnels into: [`decide`](Self::decide) with the check's step, then
    /// counted (for no counters, nothing: the check is the uncounted one).
    #[inline(always)]
    pub(crate) fn check(&self, at: S::At, quota: &Q, cost: u64, now: Q::Instant) -> Decision<Q> {
        let decision = self.decide(Consume, at, quota, cost, now);
        self.counters.record(decision.is_allowed(), cost);
        decision
    }

    /// The core every check and reservation funnels into: `operation` for `cost` (at most
    /// `quota`'s limit) at `now`.
    #[inline(always)]
    pub(crate) fn decide(
        &self,
        operation: impl Operation<Q>,
        at: S::At,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Decision<Q> {
        if cost == 0 {
            return self.peek(at, quota, 0, now);
        }
        let judged = self.store.decide(operation, at, quota, cost, now);
        self.decision(judged, cost, quota)
    }

    /// Whether `request` would pass for the key at `at`, writing nothing.
    #[inline]
    pub(crate) fn peek_with(
        &self,
        at: S::At,
        request: Request<Q>,
    ) -> Result<Decision<Q>, RequestError> {
        let resolved = self.resolve(&request)?;
        Ok(self.peek(at, &resolved.quota, resolved.cost, resolved.now))
    }

    /// Whether one unit would pass now for the key at `at`, writing nothing.
    #[inline]
    pub(crate) fn peek_one(&self, at: S::At) -> Decision<Q> {
        let now = self.quota.instant(self.clock.now());
        self.peek(at, &self.quota, 1, now)
    }

    /// The core every peek funnels into.
    #[inline]
    pub(crate) fn peek(&self, at: S::At, quota: &Q, cost: u64, now: Q::Instant) -> Decision<Q> {
        let judged = self.store.peek(Consume, at, quota, cost, now);
        // A peek decides on a word it did not write: judged by the lead, as a denial is.
        Decision::judged(judged, cost, self.lead.judging(quota))
    }

    /// The decision a store's judgement stands for. An admission's word leads its reading by at
    /// most the applied quota's own tolerance (or, for a booking, by what it raised the lead
    /// to), so only words the call did not write are judged by the lead.
    #[inline(always)]
    pub(crate) fn decision(&self, judged: Judged<Q::Instant>, cost: u64, quota: &Q) -> Decision<Q> {
        match judged.outcome {
            Outcome::Allowed => Decision::new(true, cost, judged.word, judged.now, *quota),
            Outcome::Denied => Decision::new(
                false,
                cost,
                judged.word,
                judged.now,
                self.lead.judging(quota),
            ),
            _ => self.new_key_decision(judged, cost, quota),
        }
    }

    /// [`decision`](Self::decision) for a key the store did not hold.
    #[cold]
    fn new_key_decision(&self, judged: Judged<Q::Instant>, cost: u64, quota: &Q) -> Decision<Q> {
        if judged.outcome == Outcome::Inserted {
            return Decision::judged(judged, cost, *quota);
        }
        Decision::judged(judged, cost, self.lead.judging(quota))
    }
}

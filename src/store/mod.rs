//! Where state words live, apart from what they mean: one word ([`word`]) for a direct limiter,
//! or the bounded keyed table ([`table`]) with one word per key. A store applies an
//! `Operation`'s pure step to a key's word through the
//! one compare-and-swap driver, and says what it found ([`Judged`]); what the word means
//! ([`SlotState`](crate::quota::SlotState)) is the caller's, and so is turning a judgement
//! into a [`Decision`](crate::Decision).
//!
//! A store reports what it found as a `Judged`: the
//! engine's vocabulary for an outcome, which a decision is built from.

#[cfg(feature = "std")]
pub(crate) mod table;
pub(crate) mod word;

use crate::engine::decision::Judged;
use crate::engine::operation::Operation;
use crate::quota::Quota;
#[cfg(feature = "std")]
use table::{Located, SlotOps, Table};
use word::Word;

/// A key as a later undo names it (a reservation's cancellation, a composite's refund, an
/// in-flight permit's release): its hash and identity words, and how many slots its shard had
/// reassigned just before the booking (an undo gives nothing back once that changes: the key
/// may have left the table and come back, and its state is no longer the one the booking wrote
/// to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct KeyIdentity {
    pub(crate) hash: u64,
    pub(crate) words: [u64; 2],
    pub(crate) reassignments: u64,
}

/// What a limiter needs of a store: apply an operation to one key's word, judge a key without
/// writing, and name a key for a later undo, then undo. Implemented by the one-word store (whose
/// key is `()`) and by the keyed table.
pub(crate) trait Store: Send + Sync {
    /// A key, located once per call.
    type At: Copy;

    /// `operation` for `cost` (above zero, at most `quota`'s limit) at `now` on the key's word.
    fn decide<Q: Quota>(
        &self,
        operation: impl Operation<Q>,
        at: Self::At,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant>;

    /// One compare-and-swap attempt of `operation` for `cost` (above zero), with no decision
    /// to build: the word written if it admitted at once. Stores that cannot tell cheaply
    /// answer `None`, and the caller goes through [`decide`](Self::decide).
    #[inline]
    fn admit_at_once<Q: Quota>(
        &self,
        _operation: impl Operation<Q>,
        _at: Self::At,
        _quota: &Q,
        _cost: u64,
        _now: Q::Instant,
    ) -> Option<u64> {
        None
    }

    /// What `operation` for `cost` at `now` would decide for the key, writing nothing.
    fn peek<Q: Quota>(
        &self,
        operation: impl Operation<Q>,
        at: Self::At,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant>;

    /// How an undo names the key later (read before the admission it may undo).
    fn name(&self, at: Self::At) -> KeyIdentity;

    /// Applies `undo` to the word of the key `key` names, if the store still holds it as it
    /// was named.
    fn undo<Q: Quota>(
        &self,
        undo: impl Operation<Q>,
        key: &KeyIdentity,
        quota: &Q,
        now: Q::Instant,
    );
}

impl Store for Word {
    type At = ();

    #[inline(always)]
    fn decide<Q: Quota>(
        &self,
        operation: impl Operation<Q>,
        _at: (),
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        Word::decide(self, operation, quota, cost, now)
    }

    #[inline]
    fn admit_at_once<Q: Quota>(
        &self,
        operation: impl Operation<Q>,
        _at: (),
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Option<u64> {
        Word::admit_at_once(self, operation, quota, cost, now)
    }

    #[inline]
    fn peek<Q: Quota>(
        &self,
        operation: impl Operation<Q>,
        _at: (),
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        Word::peek(self, operation, quota, cost, now)
    }

    #[inline]
    fn name(&self, _at: ()) -> KeyIdentity {
        KeyIdentity::default()
    }

    #[cold]
    fn undo<Q: Quota>(
        &self,
        undo: impl Operation<Q>,
        _key: &KeyIdentity,
        quota: &Q,
        now: Q::Instant,
    ) {
        // Nothing to do when nothing was given back.
        let _ = self.apply(undo, quota, 0, now);
    }
}

#[cfg(feature = "std")]
impl<S: SlotOps> Store for Table<S> {
    type At = Located<S::Identity>;

    #[inline(always)]
    fn decide<Q: Quota>(
        &self,
        operation: impl Operation<Q>,
        at: Self::At,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        Table::decide(self, operation, at, quota, cost, now)
    }

    #[inline]
    fn peek<Q: Quota>(
        &self,
        operation: impl Operation<Q>,
        at: Self::At,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        Table::peek(self, operation, &at, quota, cost, now)
    }

    #[inline]
    fn name(&self, at: Self::At) -> KeyIdentity {
        Table::name(self, &at)
    }

    #[cold]
    fn undo<Q: Quota>(
        &self,
        undo: impl Operation<Q>,
        key: &KeyIdentity,
        quota: &Q,
        now: Q::Instant,
    ) {
        Table::undo(self, undo, key, quota, now);
    }
}

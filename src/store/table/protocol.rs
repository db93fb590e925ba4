//! The slot protocol: how checks, peeks and inserts share slots without a lock on the check
//! path, and why a check never acts on a slot that was given to another key.
//!
//! # The protocol
//!
//! A slot's state word doubles as its control word ([`slot`](super::slot)): `VACANT`,
//! `RESERVED` (being (re)assigned under the shard's insert lock), or a live state.
//!
//! - **Check of a present key** (lock-free, no allocation, no key clone): load the state with
//!   Acquire; skip markers; compare the identity words; step, and make one compare-and-swap
//!   attempt from the loaded state. If that attempt is lost, a cold path looks the key up again
//!   and runs the shared CAS driver, whose guard re-reads the identity after every lost race
//!   before stepping again, and aborts (the lookup starts over) if the slot was reassigned.
//!   An admission is confirmed by its CAS; a denial or a peek, which write nothing, re-read the
//!   state after the identity (behind an Acquire fence that pairs with a Release fence the
//!   inserter issues before rewriting a claimed slot's identity) and count only if it is
//!   unchanged: else the identity they matched may have been half rewritten (an
//!   [`Exact`](super::Exact) key's two words), or belong to a key inserted since.
//! - **Insert of a new key** (slow path): take the shard's insert lock, look again (another
//!   thread may just have inserted it, or a stale read of a hint word hid it: under the lock,
//!   which every hint writer holds, the hint words are exact), then claim a slot: a vacant one,
//!   else one whose state is [equivalent to fresh](crate::Quota::is_fresh) (claimed by CAS from
//!   that state to `RESERVED`, which fails if a checker touched it meanwhile, then a Release
//!   fence), else what [`WhenFull`] says (an eviction claims a live slot the same way). Write
//!   the hint and the identity, then publish the key's first state with a Release store.
//!
//! - **Reservation and cancellation**: a reservation is a check whose step books ahead
//!   ([`Gcra::reserve_step`](crate::Gcra::reserve_step)): the same fast path, slow
//!   path and insert. A cancellation takes the shard's insert lock, looks its key up again
//!   (never inserting it), records the word it is about to lower (see "Why it is free of
//!   ABA"), and applies the cancellation step through the same guarded driver as a check's slow
//!   path: it only ever changes a state while the slot holds its key.
//! - **Release of a keyed in-flight permit** ([`KeyedInFlightLimiter`]): applied as a
//!   cancellation is (a fresh lookup, never an insert, then the guarded driver). Its key's entry
//!   cannot have left its slot meanwhile: an entry with units in flight is never fresh, and that
//!   limiter is never built to evict.
//!
//! [`KeyedInFlightLimiter`]: crate::inflight::KeyedInFlightLimiter
//!
//! - **Removal** ([`KeyedLimiter::remove`](crate::KeyedLimiter::remove)): take the shard's insert lock, find the key's
//!   slot among every slot of its buckets, and clear its hint byte (a key's hint is never 0),
//!   then count the removal. Nothing else is written: the state word and the identity stay as
//!   they were, and the entry, *detached*, is no longer the key's (see "Removal" below).
//!
//! - **Keyed sliding logs** run their own checks on the same table, and insert through the same
//!   protocol (`src/sliding_log/slots.rs` says what their words mean to it): the state word is
//!   a log's position, and freshness is read from the records beside the table. Their words
//!   are not monotonic across a reuse; `src/sliding_log/slots.rs` shows why none repeats. They
//!   have no undo.
//!
//! The insert lock serialises inserts within one shard only; checks never take it, so a check of
//! a present key never waits for an insert. The lock exists so that two threads inserting the
//! same new key produce one entry: both look again under it, and the second finds the first's.
//!
//! # Keys that come back
//!
//! A reclaim forgets a key whose entry was fresh, which is harmless for any reading at or after
//! the moment it became fresh. A reading from before that moment (a timestamp taken before a
//! preemption, a caller's time) would find no entry and start the key fresh behind the units
//! it had spent. So each shard keeps a floor, the latest moment a reclaimed entry of the shard
//! became fresh (`SlotState::fresh_since_word`, never later than the reclaimer's reading), and an
//! insert judges its new key no earlier than the floor: as if read then, where its old state
//! was as good as fresh. A key the insert finds after all is judged at its own reading. The
//! floor is read and raised under the insert lock (a peek of a new key reads it without, as a
//! recent value), so it adds no atomic protocol. Evictions set no floor: an evicted key's
//! state is forgotten by the policy's choice, and its successor inherits that state.
//!
//! The floor is the shard's, not the key's: a new key of the shard with a reading behind it is
//! judged at it too, which only delays the time its first state counts from. A reading ahead
//! of the true time that reclaims an entry can raise the floor no further than that entry's
//! own fresh moment.
//!
//! # Removal
//!
//! A removal must leave no check of a later moment on the key's state, and must not lower the
//! slot's word (the ABA argument below needs words that never return to an earlier key's). It
//! changes neither word: it only hides the entry from the key. Under the insert lock it clears
//! the slot's hint byte, which no key's placement produces, so:
//!
//! - the lock-free lookup (hint-filtered) no longer reads the slot, for any lookup whose read of
//!   the bucket's hint word comes after the clear in that word's modification order: every
//!   check that happens after the removal (and, on most hardware, every later one). Only
//!   insert-lock holders write hint words, each from the latest value, and the byte stays 0
//!   until the slot is given to another key (with its own identity);
//! - the locked paths (inserts, removals), whose hint words are exact, never take a slot whose
//!   hint byte is 0 for the key's live entry: the key's next check misses and inserts the key
//!   as a new one (below: it may take that detached entry back, as a new key's), and a second
//!   removal finds nothing;
//! - a check that read the hint word before the clear may still find the slot, holding the
//!   key's identity and state: it is decided on them, through the same one attempt, guarded
//!   driver and `unchanged_since` as any check, as a check made before the removal (its
//!   interval overlaps it). It changes only that entry's word (or, once the key has taken the
//!   slot back, the key's new entry's, below).
//!
//! To any other key, a detached entry is an entry like any other to the slot choice: reused
//! once its state is [equivalent to fresh](crate::Quota::is_fresh) (claimed from that state,
//! first state stepped from it: the reclaim rule, which raises the shard's floor as a reclaim
//! does) or evicted under [`WhenFull::EvictClosestToFresh`] (the new key inheriting its state),
//! so the slot's word never returns to a value it held under the removed key, and a check
//! still deciding on the detached entry loses its compare-and-swap to the claim, as a check of
//! a reclaimed key does. Making the slot reusable by another key at once would let that key's
//! first word equal a word a stalled check of the removed key loaded. Such a reuse counts as
//! an insert only ([`Stats`](crate::Stats): the entry was no longer a key's).
//!
//! The removed key itself takes its detached entry back at once, as a new key's, from a fresh
//! state judged no earlier than the shard's floor (before a vacant slot: a key removed again
//! and again keeps one slot rather than filling its buckets with detached entries). Its word
//! then goes back, but only to values of its own key: a stalled check of the removed key that
//! lands on it is decided on the value it replaces, as any check of the key (the step is a
//! function of the value alone), and counts in the new entry, made after the removal. Every
//! word the slot held under an earlier key is below that fresh state: that key's entry was
//! fresh when the slot was taken from it (a reclaim, or the reuse of a detached entry, both of
//! which raise the floor to that moment, or the slot was vacant), and a written word is
//! greater than any word fresh at its time. An eviction breaks this (the evicted state may be
//! live, far above a fresh one), so a table that evicts does not restart a removed key in its
//! own slot: there, its detached entry waits to be fresh or evicted as any other's. Either way
//! a removal frees no capacity sooner than the entry's state allows. A peek of a new key
//! chooses its slot without the lock and without its identity, so it does not see the key's
//! own detached entry: in a shard whose other candidate slots are all live, a peek of a key
//! just removed reports what a new key would get there, though its check takes its entry back.
//! (Matching an identity there would need the torn-read checks of the lookup.)
//!
//! A reservation's cancellation looks its key up again: after the removal it finds the key's
//! next entry, if any, never the detached one. Its step gives nothing back once the shard has
//! counted a reassignment since the booking, and removals count
//! ([`Table::reassignments`]): the count is raised with a Release increment after the hint is
//! cleared, and read with Acquire before a booking's lookup, so a booking that names a count
//! including a removal reads the cleared hint and cannot land on the entry that removal
//! detached. Keyed sliding logs and keyed in-flight limiters offer no removal (a permit's
//! release must find its key's units).
//!
//! # Why it is free of ABA
//!
//! A check's CAS succeeds only if the state word still holds the value it observed while the
//! identity was its key's. Every algorithm writes only values strictly greater than the value
//! they replace, and a slot is reassigned only from a state that was fresh at the inserter's
//! time, with a first state greater than it (the invariants of [`Quota`](crate::Quota)); so a state word never
//! returns to a value observed under a previous key. An undo (a cancellation, a composite's
//! refund) lowers a word, but never below the word its booking replaced, which the same key
//! wrote: the word may return to a value its own key held (harmless: the step is a function of
//! the value alone). Lowered, the entry may also be fresh at a time some value it held is not,
//! and a new key reclaiming it from there could write that value again, under which a check of
//! the old key that loaded it before the undo would land. So each undo records, under the
//! shard's insert lock, the word it lowered (`lowered.rs`), and the insert judges such a slot
//! by the highest word it held since its last claim: reclaimed only once that word is fresh,
//! the new key's first word stepped from it (and the shard's floor raised to its fresh moment),
//! or, evicted, inherited from it. An undo with no room for its record gives nothing back.
//! A removal writes no word (its entry keeps its slot until it is reused by these same
//! rules), so it neither adds to this nor closes it. An eviction keeps this by letting the new
//! key inherit the evicted state, which it only increases. For window quotas this holds barring
//! a full wrap of the stored index between one thread's load and its CAS, and barring readings
//! further behind than the quota's [backward bound](crate::quota#readings-behind-the-state),
//! which read a live entry as idle for a very long time. GCRA has no bound: a reading behind a
//! key's state, by any amount, is judged in that state, so it neither reclaims a live entry nor
//! writes a smaller word.

use super::guarded::apply_to_slot;
use super::insert::StepInsertion;
use super::key::Located;
use super::placement::Placement;
use super::slot::{SlotOps, RESERVED};
use super::{Candidate, Full, SlotPosition, Table, WhenFull};
use crate::engine::decision::{Judged, Outcome};
use crate::engine::driver::{self, Attempt};
use crate::engine::operation::Operation;
use crate::quota::{SlotState, Step};
use crate::store::KeyIdentity;
use crate::sync::Ordering;
use core::cell::Cell;

impl<S: SlotOps> Table<S> {
    /// The fast path every check funnels into, for a cost above zero: find the key's slot and
    /// make one compare-and-swap attempt on it. Everything else (a key not in the table, a lost
    /// race) goes to the cold [`decide_slow`](Self::decide_slow), which keeps this path short.
    /// Forced inline: called from several limiters, it would otherwise be kept out of line,
    /// and its judgement returned through memory.
    #[inline(always)]
    pub(crate) fn decide<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        at: Located<S::Identity>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        // A cost of 0 is a peek, which every caller sends to `peek` (the slow path's refusals
        // are denials, true only of a cost above 0).
        debug_assert!(cost > 0, "a keyed check of cost 0 must go to the peek");
        let found = self.find(self.place(at.hash), &at.identity);
        let missed = found.is_none();
        if let Some((slot, observed)) = found {
            // `find` checked the identity after loading `observed`; a successful attempt
            // replaces that very value, so the slot was still this key's.
            let step = operation.step(quota, observed, now, cost);
            match driver::attempt(slot.state(), observed, step) {
                Attempt::Allowed { current } => {
                    return Judged::new(Outcome::Allowed, current, now);
                }
                Attempt::Denied if slot.unchanged_since(observed) => {
                    return Judged::new(Outcome::Denied, observed, now);
                }
                Attempt::Denied | Attempt::Lost { .. } => {}
            }
        }
        self.decide_slow(operation, at, quota, cost, now, missed)
    }

    /// The slow path of [`decide`](Self::decide): for a key its lookup `missed`, the insert;
    /// else (its one attempt did not decide) look again, then run the shared CAS driver (whose
    /// guard re-checks the slot's identity after every lost race), or insert the key if it is
    /// gone.
    #[cold]
    #[inline(never)]
    fn decide_slow<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        at: Located<S::Identity>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
        missed: bool,
    ) -> Judged<Q::Instant> {
        let placement = self.place(at.hash);
        // A key the lookup missed goes straight to the insert, which looks again under the
        // lock anyway: a second lock-free lookup would mostly repeat the miss.
        if !missed {
            while let Some((slot, observed)) = self.find(placement, &at.identity) {
                let applied =
                    apply_to_slot(operation, slot, &at.identity, observed, quota, cost, now);
                if let Some(tracked) = applied {
                    return tracked;
                }
                // The slot was reassigned while we raced for it: look again.
            }
        }
        let mut insertion = StepInsertion {
            operation,
            identity: &at.identity,
            quota,
            cost,
            reading: now,
            now,
            first: Q::FIRST,
        };
        self.insert(placement, &at.identity, &mut insertion)
    }

    /// The core every peek funnels into: the key's state as it is, judged by `operation`'s
    /// step for `cost` without writing or inserting anything. A key the table does not hold is
    /// judged as a check would judge it: fresh if a slot is free for it, else as the table's
    /// [`WhenFull`] policy says.
    pub(crate) fn peek<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        at: &Located<S::Identity>,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        let placement = self.place(at.hash);
        let state = loop {
            match self.find(placement, &at.identity) {
                Some((slot, state)) if slot.unchanged_since(state) => break state,
                // The slot changed while we read it: look again.
                Some(_) => {}
                None => return self.peek_new_key(operation, placement, quota, cost, now),
            }
        };
        let allowed =
            cost == 0 || matches!(operation.step(quota, state, now, cost), Step::Allow(_));
        Judged::new(allowed_or_denied(allowed), state, now)
    }

    /// A peek of a key the table does not hold: what its insert would decide now, from the same
    /// choice of slot, made without the insert lock (nothing is claimed, so nothing needs it).
    #[cold]
    fn peek_new_key<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        placement: Placement,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Judged<Q::Instant> {
        // Judged as the insert would be: no earlier than the shard's floor.
        let now = quota.no_earlier_than(now, self.new_key_floor(placement.shard()));
        let rank = |_: &S, _, state| quota.freshness_rank(state, now);
        let chosen = self.choose_slot(placement, None, rank);
        let inherited = match chosen {
            // Never without an identity to look for.
            Ok(Candidate::Holding { state, .. }) => state,
            Ok(
                Candidate::Vacant { .. }
                | Candidate::Reclaimable { .. }
                | Candidate::Removed { .. },
            ) => Q::FIRST,
            Ok(Candidate::Evictable { state, .. }) => state,
            Err(Full { .. }) if self.when_full() == WhenFull::Allow => {
                return Judged::new(Outcome::Untracked, Q::FIRST, now);
            }
            Err(Full { soonest_fresh, .. }) => {
                let waits_on = soonest_fresh.unwrap_or(Q::FIRST);
                return Judged::new(Outcome::RefusedUntilFresh, waits_on, now);
            }
        };
        match operation.step(quota, inherited, now, cost) {
            _ if cost == 0 => Judged::new(Outcome::Allowed, inherited, now),
            Step::Allow(_) => Judged::new(Outcome::Allowed, inherited, now),
            Step::Deny => Judged::new(Outcome::RefusedUntilAdmitted, inherited, now),
        }
    }

    /// How a later undo names the key at `at` (see [`KeyIdentity`]): read before the booking's
    /// or admission's compare-and-swap, so a reassignment of the key's slot after it is counted
    /// after this read (see [`reassignments`](Self::reassignments)).
    #[inline]
    pub(crate) fn name(&self, at: &Located<S::Identity>) -> KeyIdentity {
        KeyIdentity {
            hash: at.hash,
            words: S::identity_words(&at.identity),
            reassignments: self.reassignments(self.place(at.hash).shard()),
        }
    }

    /// Applies `undo` (a reservation's cancellation, or a composite check's refund) to the state
    /// of the key a booking or an admission named, if the table still holds it and its shard has
    /// reassigned no slot since that booking or admission (a key evicted or removed while its
    /// reservation was pending may come back with a state that happens to equal the word the
    /// booking wrote; undoing it then could return the slot to a value another key held).
    ///
    /// Under the shard's insert lock, which makes the reassignment count exact and keeps the
    /// key in its slot, and which guards the record of the word the undo lowers
    /// (`lowered.rs`): an undo with no room for that record gives nothing back.
    #[cold]
    pub(crate) fn undo<Q: SlotState>(
        &self,
        undo: impl Operation<Q>,
        key: &KeyIdentity,
        quota: &Q,
        now: Q::Instant,
    ) {
        let at = self.locate_named(key);
        let placement = self.place(key.hash);
        let shard = placement.shard();
        let mut lock = self.lock(shard);
        if self.reassignments(shard) != key.reassignments {
            return;
        }
        let Some(position) = self.find_locked(placement, &at.identity) else {
            return;
        };
        let obsolete = |marked: SlotPosition, high: u64| {
            // ORDERING: Relaxed: under the insert lock, whose acquire orders this load after
            // the undo that recorded the mark (the value read is its slot's word since then).
            let state = self.slot_at(marked).state().load(Ordering::Relaxed);
            if state < RESERVED && state >= high {
                // The slot's word rose to its mark again: it is judged by that word.
                return true;
            }
            if quota.freshness_rank(high, now).is_some() {
                return false;
            }
            // Its highest word is fresh: no new key is judged before it was, so none starts
            // at or below it.
            self.raise_new_key_floor(shard, quota.fresh_since_word(high, now));
            true
        };
        if lock.lowered_mut().make_room(position, obsolete).is_err() {
            return;
        }
        let slot = self.slot_at(position);
        let replaced = Cell::new(0);
        let recording = Recording {
            undo,
            replaced: &replaced,
        };
        // ORDERING: Acquire, as the lookup's load: the driver updates the slot from this
        // observation.
        let observed = slot.state().load(Ordering::Acquire);
        let applied = apply_to_slot(recording, slot, &at.identity, observed, quota, 0, now);
        if applied.is_some_and(|judged| judged.outcome == Outcome::Allowed) {
            lock.lowered_mut().record(position, replaced.get());
        }
    }

    /// Where the key `key` names lives.
    #[inline]
    pub(crate) fn locate_named(&self, key: &KeyIdentity) -> Located<S::Identity> {
        Located {
            hash: key.hash,
            identity: S::identity_from_words(key.words),
        }
    }

    /// Applies `operation` to the state of the key at `at`, if the table holds it (never
    /// inserting it), through the same guarded driver as a check's slow path: for undos and
    /// in-flight releases, whose cost is not a request's. Whether the step was applied (the
    /// key was found and the step allowed).
    pub(crate) fn apply_if_present<Q: SlotState>(
        &self,
        operation: impl Operation<Q>,
        at: &Located<S::Identity>,
        quota: &Q,
        now: Q::Instant,
    ) -> bool {
        let placement = self.place(at.hash);
        loop {
            let Some((slot, observed)) = self.find(placement, &at.identity) else {
                return false;
            };
            let applied = apply_to_slot(operation, slot, &at.identity, observed, quota, 0, now);
            if let Some(tracked) = applied {
                return tracked.outcome == Outcome::Allowed;
            }
        }
    }

    /// Removes the key at `at` (module docs, "Removal"): under its shard's insert lock,
    /// detaches its entry from it, writing nothing to the state word. Whether the table held
    /// the key.
    pub(crate) fn remove(&self, at: &Located<S::Identity>) -> bool {
        let placement = self.place(at.hash);
        let _lock = self.lock(placement.shard());
        let Some(position) = self.find_locked(placement, &at.identity) else {
            return false;
        };
        self.detach(placement, position);
        true
    }

    /// The one-byte lookup hint of the key hashed to `hash`: for the loom models, which need
    /// keys whose hints collide to reach some interleavings.
    #[cfg(nanolimit_loom)]
    pub(crate) fn lookup_hint(&self, hash: u64) -> u8 {
        self.place(hash).hint
    }
}

/// [`Outcome::Allowed`] or [`Outcome::Denied`].
#[inline]
fn allowed_or_denied(allowed: bool) -> Outcome {
    if allowed {
        Outcome::Allowed
    } else {
        Outcome::Denied
    }
}

/// An undo that notes the word its step replaces: once the driver's compare-and-swap lands,
/// the last word stepped on is the one it lowered.
struct Recording<'call, O> {
    undo: O,
    replaced: &'call Cell<u64>,
}

impl<O: Copy> Clone for Recording<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O: Copy> Copy for Recording<'_, O> {}

impl<Q: SlotState, O: Operation<Q>> Operation<Q> for Recording<'_, O> {
    #[inline]
    fn step(&self, quota: &Q, state: u64, now: Q::Instant, cost: u64) -> Step {
        self.replaced.set(state);
        self.undo.step(quota, state, now, cost)
    }
}

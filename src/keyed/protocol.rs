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
//!   ([`Reservable::reserve_step`](crate::Reservable::reserve_step)): the same fast path, slow
//!   path and insert. A cancellation looks its key up again (never inserting it) and applies
//!   the cancellation step through the same guarded driver as a check's slow path, so it only
//!   ever changes a state while the slot holds its key.
//! - **Release of a keyed in-flight permit** ([`KeyedInFlightLimiter`]): applied as a
//!   cancellation is (a fresh lookup, never an insert, then the guarded driver). Its key's entry
//!   cannot have left its slot meanwhile: an entry with units in flight is never fresh, and that
//!   limiter is never built to evict.
//!
//! [`KeyedInFlightLimiter`]: crate::inflight::KeyedInFlightLimiter
//!
//! - **Removal** ([`KeyedLimiter::remove`]): take the shard's insert lock, find the key's
//!   slot among every slot of its buckets, and clear its hint byte (a key's hint is never 0),
//!   then count the removal. Nothing else is written: the state word and the identity stay as
//!   they were, and the entry, *detached*, is no longer the key's (see "Removal" below).
//!
//! - **Keyed sliding logs** run their own check and insert paths on the same table
//!   (`log_slots.rs`): the state word is a log's position, and freshness is read from the
//!   records beside the table ([`choose_slot_by`](KeyedLimiter::choose_slot_by)). Their words
//!   are not monotonic across a reuse; `log_slots.rs` shows why none repeats.
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
//! became fresh ([`Quota::fresh_since_word`], never later than the reclaimer's reading), and an
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
//! an insert only ([`KeyedStats`](super::KeyedStats): the entry was no longer a key's).
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
//! time, with a first state greater than it (the invariants of [`Quota`]); so a state word never
//! returns to a value observed under a previous key. A cancellation lowers a word, but never
//! below the word its reservation replaced, which the same key wrote: the word may return to
//! a value its own key held (harmless: the step is a function of the value alone), never to one
//! of a previous key. One order escapes this argument (found in review, not yet closed): a
//! check of key A loads the booked word `b`, A's reservation is cancelled back to `b0 < b`, and
//! A's entry, fresh from `b0` on, is reclaimed by key B at a time before `b`; B's words start
//! below `b` and may later equal it exactly, and A's stalled compare-and-swap would then land on
//! B's entry. It needs that stall across a cancellation and a reclaim and B's word meeting `b`
//! to the tick; closing it (a reclaim that starts above every word the slot held) is open
//! work. A removal writes no word (its entry keeps its slot until it is reused by these same
//! rules), so it neither adds to this nor closes it. An eviction keeps this by letting the new
//! key inherit the evicted state, which it only increases. For window quotas this holds barring
//! a full wrap of the stored index between one thread's load and its CAS, and barring readings
//! further behind than the quota's [backward bound](crate::quota#readings-behind-the-state),
//! which read a live entry as idle for a very long time. GCRA has no bound: a reading behind a
//! key's state, by any amount, is judged in that state, so it neither reclaims a live entry nor
//! writes a smaller word.

use super::key_mode::KeyMode;
use super::placement::Placement;
use super::slot::{SlotOps, RESERVED};
use super::slot_choice::{claim, publish, Candidate, Full};
use super::table::{Table, TableEvent};
use super::{KeyedLimiter, WhenFull};
use crate::clock::Clock;
use crate::counters::Counting;
use crate::engine::decision::{Decision, Refusal};
use crate::engine::driver::{self, Applied, Attempt};
use crate::engine::operation::Operation;
use crate::quota::{Quota, Step};
use crate::sync::Ordering;
use crate::throttle::KeyIdentity;

impl<K: ?Sized, Q: Quota, C: Clock, M: KeyMode<K>, N: Counting> KeyedLimiter<K, Q, C, M, N> {
    /// The fast path every check funnels into: find the key's slot and make one compare-and-swap
    /// attempt on it. Everything else (a key not in the table, a lost race) goes to the cold
    /// [`decide_slow`](Self::decide_slow), which keeps this path short.
    #[inline]
    pub(crate) fn decide(
        &self,
        operation: impl Operation<Q>,
        key: &K,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Decision<Q> {
        if cost == 0 {
            return self.peek_decision(key, quota, 0, now);
        }
        let (hash, identity) = M::identify(&self.hasher, key);
        self.decide_identified(operation, hash, identity, quota, cost, now)
    }

    /// [`decide`](Self::decide) for a key already identified (hashed), with a cost above zero.
    /// Forced inline: called from several public forms (by key, by a caller's hash), it would
    /// otherwise be kept out of line, and its `Decision` returned through memory
    /// (`docs/performance.md`, "0.4: checks by a caller's hash").
    #[inline(always)]
    pub(crate) fn decide_identified(
        &self,
        operation: impl Operation<Q>,
        hash: u64,
        identity: <M::Slot as SlotOps>::Identity,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Decision<Q> {
        // A cost of 0 is a peek, which every caller sends to `peek_identified` (the slow path's
        // refusals are restated as denials, true only of a cost above 0).
        debug_assert!(cost > 0, "a keyed check of cost 0 must go to the peek");
        let found = self.table.find(self.table.place(hash), &identity);
        let missed = found.is_none();
        if let Some((slot, observed)) = found {
            // `find` checked the identity after loading `observed`; a successful attempt
            // replaces that very value, so the slot was still this key's.
            let step = operation.step(quota, observed, now, cost);
            match driver::attempt(slot.state(), observed, step) {
                // An admitted state leads `now` by at most the quota's own tolerance: the
                // judging lead cannot matter (see `JudgingLead`).
                Attempt::Allowed { current } => {
                    return Decision::new(true, cost, current, now, *quota);
                }
                Attempt::Denied if slot.unchanged_since(observed) => {
                    return Decision::new(false, cost, observed, now, self.lead.judging(quota));
                }
                Attempt::Denied | Attempt::Lost { .. } => {}
            }
        }
        // The cold path hands back a tracked key's outcome and word, not a `Decision`: built
        // here, those arms' decisions are made of registers, and every arm's outcome is a
        // constant. From a `Decision` returned through memory for every outcome, the compiler
        // wrote the fast path's decision to the stack too once the counters' code followed the
        // check.
        match self.decide_slow(operation, hash, identity, quota, cost, now, missed) {
            SlowDecision::Allowed { current } => Decision::new(true, cost, current, now, *quota),
            SlowDecision::Denied { observed } => {
                Decision::new(false, cost, observed, now, self.lead.judging(quota))
            }
            SlowDecision::NewKeyAllowed(decision) => decision.with_allowed(true),
            SlowDecision::NewKeyRefused(decision) => decision.with_allowed(false),
        }
    }

    /// The core every peek funnels into: the key's state as it is, judged without writing or
    /// inserting anything. A key the table does not hold is judged as a check would judge it:
    /// fresh if a slot is free for it, else as its [`WhenFull`] policy says.
    pub(crate) fn peek_decision(
        &self,
        key: &K,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Decision<Q> {
        let (hash, identity) = M::identify(&self.hasher, key);
        self.peek_identified(hash, &identity, quota, cost, now)
    }

    /// [`peek_decision`](Self::peek_decision) for a key already identified (hashed).
    pub(super) fn peek_identified(
        &self,
        hash: u64,
        identity: &<M::Slot as SlotOps>::Identity,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Decision<Q> {
        let placement = self.table.place(hash);
        let state = loop {
            match self.table.find(placement, identity) {
                Some((slot, state)) if slot.unchanged_since(state) => break state,
                // The slot changed while we read it: look again.
                Some(_) => {}
                None => return self.peek_new_key(placement, quota, cost, now),
            }
        };
        let allowed = cost == 0 || matches!(quota.step(state, now, cost), Step::Allow(_));
        Decision::new(allowed, cost, state, now, self.lead.judging(quota))
    }

    /// A peek of a key the table does not hold: what its insert would decide now, from the same
    /// choice of slot, made without the insert lock (nothing is claimed, so nothing needs it).
    #[cold]
    fn peek_new_key(
        &self,
        placement: Placement,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> Decision<Q> {
        // Judged as the insert would be: no earlier than the shard's floor.
        let now = quota.no_earlier_than(now, self.table.new_key_floor(placement.shard()));
        let inherited = match self.choose_slot(placement, None, now) {
            // Never without an identity to look for.
            Ok(Candidate::Holding { state, .. }) => state,
            Ok(
                Candidate::Vacant { .. }
                | Candidate::Reclaimable { .. }
                | Candidate::Removed { .. },
            ) => Q::FRESH,
            Ok(Candidate::Evictable { state, .. }) => state,
            Err(Full { .. }) if self.when_full == WhenFull::Allow => {
                return Decision::untracked(cost, Q::FRESH, now, self.lead.judging(quota));
            }
            Err(Full { soonest_fresh, .. }) => {
                let judging = self.lead.judging(quota);
                return Decision::refused(cost, Refusal::UntilFresh(soonest_fresh), now, judging);
            }
        };
        let judging = self.lead.judging(quota);
        match quota.step(inherited, now, cost) {
            _ if cost == 0 => Decision::new(true, 0, inherited, now, judging),
            Step::Allow(_) => Decision::new(true, cost, inherited, now, judging),
            Step::Deny => Decision::refused(cost, Refusal::UntilAdmitted(inherited), now, judging),
        }
    }

    /// The slow path of [`decide`](Self::decide): for a key its lookup `missed`, the insert;
    /// else (its one attempt did not decide) look again, then run the shared CAS driver (whose
    /// guard re-checks the slot's identity after every lost race), or insert the key if it is
    /// gone.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn decide_slow(
        &self,
        operation: impl Operation<Q>,
        hash: u64,
        identity: <M::Slot as SlotOps>::Identity,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
        missed: bool,
    ) -> SlowDecision<Q> {
        let placement = self.table.place(hash);
        // A key the lookup missed goes straight to the insert, which looks again under the
        // lock anyway: a second lock-free lookup would mostly repeat the miss.
        if !missed {
            while let Some((slot, observed)) = self.table.find(placement, &identity) {
                let applied = apply_to_slot(operation, slot, &identity, observed, quota, cost, now);
                if let Some(tracked) = applied {
                    return tracked;
                }
                // The slot was reassigned while we raced for it: look again.
            }
        }
        self.insert(operation, placement, &identity, quota, cost, now)
    }

    /// [`decide`](Self::decide), also naming the key as a reservation records it for a later
    /// cancellation.
    #[inline]
    pub(crate) fn decide_naming_key(
        &self,
        operation: impl Operation<Q>,
        key: &K,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> (Decision<Q>, KeyIdentity) {
        let (hash, identity) = M::identify(&self.hasher, key);
        let named = KeyIdentity {
            hash,
            words: M::Slot::identity_words(&identity),
            // Read before the booking's compare-and-swap: a reassignment of the key's slot
            // after the booking is counted after this read (see `Table::reassignments`).
            reassignments: self.table.reassignments(self.table.place(hash).shard()),
        };
        let decision = if cost == 0 {
            self.peek_decision(key, quota, 0, now)
        } else {
            self.decide_identified(operation, hash, identity, quota, cost, now)
        };
        (decision, named)
    }

    /// Applies `undo` (a reservation's cancellation, or a composite check's refund) to the state
    /// of the key a booking or an admission named, if the table still holds it and its shard has
    /// reassigned no slot since that booking or admission.
    #[cold]
    pub(crate) fn undo_for_named_key(
        &self,
        undo: impl Operation<Q>,
        key: &KeyIdentity,
        now: Q::Instant,
    ) {
        let identity = M::Slot::identity_from_words(key.words);
        let shard = self.table.place(key.hash).shard();
        let within_stay = UndoWithinStay {
            undo,
            table: &self.table,
            shard,
            reassignments: key.reassignments,
        };
        // Nothing to do when nothing was given back (see `UndoWithinStay`).
        let _ = self.apply_if_present(within_stay, key.hash, identity, now);
    }

    /// Applies `operation` to the state of the key `key` names, if the table holds it (never
    /// inserting it), through the same guarded driver as a cancellation: for a keyed in-flight
    /// permit's release. Whether the step was applied (found the key and allowed).
    #[inline]
    pub(crate) fn apply_for_named_key(
        &self,
        operation: impl Operation<Q>,
        key: &KeyIdentity,
        now: Q::Instant,
    ) -> bool {
        let identity = M::Slot::identity_from_words(key.words);
        self.apply_if_present(operation, key.hash, identity, now)
    }

    /// Removes the key identified by `hash` and `identity` (module docs, "Removal"): under
    /// its shard's insert lock, detaches its entry from it, writing nothing to the state word.
    /// Whether the table held the key.
    pub(crate) fn remove_identified(
        &self,
        hash: u64,
        identity: &<M::Slot as SlotOps>::Identity,
    ) -> bool {
        let placement = self.table.place(hash);
        let _lock = self.table.lock(placement.shard());
        let Some(at) = self.table.find_locked(placement, identity) else {
            return false;
        };
        self.table.detach(placement, at);
        true
    }

    /// Applies `operation` to the state of the key identified by `hash` and `identity`, if the
    /// table holds it (never inserting it): for cancellations and releases, whose cost is not a
    /// request's. Whether the step was applied.
    fn apply_if_present(
        &self,
        operation: impl Operation<Q>,
        hash: u64,
        identity: <M::Slot as SlotOps>::Identity,
        now: Q::Instant,
    ) -> bool {
        let placement = self.table.place(hash);
        loop {
            let Some((slot, observed)) = self.table.find(placement, &identity) else {
                return false;
            };
            let applied = apply_to_slot(operation, slot, &identity, observed, &self.quota, 0, now);
            if let Some(tracked) = applied {
                return matches!(tracked, SlowDecision::Allowed { .. });
            }
        }
    }

    /// The slowest path: a key not in the table (unless it is found here after all: then a
    /// tracked decision, as [`decide_slow`](Self::decide_slow)'s). Inlined into its one
    /// caller, so that its outcome is written once, not copied on the way back.
    #[inline(always)]
    fn insert(
        &self,
        operation: impl Operation<Q>,
        placement: Placement,
        identity: &<M::Slot as SlotOps>::Identity,
        quota: &Q,
        cost: u64,
        now: Q::Instant,
    ) -> SlowDecision<Q> {
        let shard = placement.shard();
        self.table.start_fetching_candidates(placement);
        let lock = self.table.lock(shard);
        // A new key is judged no earlier than the shard's floor (module docs, "Keys that come
        // back"); a key found here after all is judged at its own reading, as any present key.
        let reading = now;
        let now = quota.no_earlier_than(reading, self.table.new_key_floor(shard));
        // Slots of this shard are only reassigned under the lock we hold: from here on, a slot
        // holding our identity keeps it, and no other thread claims a slot. The key is looked
        // for again (the lock-free lookup may have read a stale hint word; the lock makes them
        // exact), in the same survey that chooses a slot for it.
        loop {
            let candidate = match self.choose_slot(placement, Some(identity), now) {
                Ok(Candidate::Holding { slot, state }) => {
                    // Judged at its own reading, as the caller's `now` is.
                    let applied =
                        apply_to_slot(operation, slot, identity, state, quota, cost, reading);
                    return applied.expect(
                        "slots are not reassigned while their shard's insert lock is held",
                    );
                }
                Ok(candidate) => candidate,
                Err(Full { soonest_fresh, .. }) => {
                    return if self.when_full == WhenFull::Allow {
                        self.table.count(&lock, TableEvent::UntrackedNewKey);
                        // A fresh state admits any cost up to the limit: never `Deny`.
                        let state = match quota.step(Q::FRESH, now, cost) {
                            Step::Allow(state) => state,
                            Step::Deny => Q::FRESH,
                        };
                        let judging = self.lead.judging(quota);
                        SlowDecision::NewKeyAllowed(Decision::untracked(cost, state, now, judging))
                    } else {
                        self.table.count(&lock, TableEvent::RefusedNewKey);
                        let judging = self.lead.judging(quota);
                        let refusal = Refusal::UntilFresh(soonest_fresh);
                        SlowDecision::NewKeyRefused(Decision::refused(cost, refusal, now, judging))
                    };
                }
            };
            // A vacant slot starts fresh; a reclaimed one from its fresh-equivalent state (the
            // same decision, by definition); an evicted one inherits the evicted state. Either
            // way the first stored word is greater than the previous one, which is what keeps
            // stale checkers out (module docs). Another key's removed entry is reused the same
            // way (from its state, once fresh, or evicted), but counted as neither: it was no
            // longer a key's. The key's own removed entry starts fresh: every word its slot
            // held since another key's was this key's (module docs, "Removal").
            let raises_floor = matches!(candidate, Candidate::Reclaimable { .. });
            let (slot, at, previous, inherited, event) = match candidate {
                Candidate::Holding { .. } => unreachable!("handled above"),
                Candidate::Vacant { slot, at } => (slot, at, None, Q::FRESH, None),
                Candidate::Removed { slot, at, state } => (slot, at, Some(state), Q::FRESH, None),
                Candidate::Reclaimable { slot, at, state } => {
                    let event = (!self.table.is_detached(at)).then_some(TableEvent::Reclaim);
                    (slot, at, Some(state), state, event)
                }
                Candidate::Evictable { slot, at, state } => {
                    let event = (!self.table.is_detached(at)).then_some(TableEvent::Eviction);
                    (slot, at, Some(state), state, event)
                }
            };
            let Step::Allow(first_state) = operation.step(quota, inherited, now, cost) else {
                // Only an inherited (evicted) state can deny: then nothing is evicted, and the
                // new key is refused, until that state would admit it.
                self.table.count(&lock, TableEvent::RefusedNewKey);
                let judging = self.lead.judging(quota);
                let refusal = Refusal::UntilAdmitted(inherited);
                return SlowDecision::NewKeyRefused(Decision::refused(cost, refusal, now, judging));
            };
            if let Some(previous) = previous {
                if !claim(slot, previous) {
                    // A checker updated the entry since we judged it: choose again.
                    continue;
                }
            }
            if raises_floor {
                // Its key, should it come back with a reading from before its entry became
                // fresh, must not start over from a fresh state there (nor, for a removed
                // entry, a key that took it and is removed in turn: module docs, "Removal").
                let inherited_fresh_since = quota.fresh_since_word(inherited, now);
                self.table.raise_new_key_floor(shard, inherited_fresh_since);
            }
            self.table.count(&lock, TableEvent::Insert);
            if let Some(event) = event {
                self.table.count(&lock, event);
            }
            self.table.set_hint(placement, at);
            publish(slot, identity, first_state);
            let inserted = Decision::inserted(cost, first_state, now, *quota);
            return SlowDecision::NewKeyAllowed(inserted);
        }
    }

    /// The one-byte lookup hint `key` gets in this table: for the loom models, which need keys
    /// whose hints collide to reach some interleavings.
    #[cfg(nanolimit_loom)]
    pub fn lookup_hint(&self, key: &K) -> u8 {
        let (hash, _) = M::identify(&self.hasher, key);
        self.table.place(hash).hint
    }
}

/// A cancellation (or a composite check's refund) on a keyed slot: undoes the booking (the
/// admission) only while the key's shard has reassigned no slot and removed no key since it (a
/// key evicted or removed while
/// its reservation was pending may come back with a state that happens to equal the word the
/// booking wrote; undoing it then could return the slot to a value another key held).
struct UndoWithinStay<'table, S, O> {
    undo: O,
    table: &'table Table<S>,
    shard: usize,
    reassignments: u64,
}

impl<S, O: Copy> Clone for UndoWithinStay<'_, S, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S, O: Copy> Copy for UndoWithinStay<'_, S, O> {}

impl<S: SlotOps, Q: Quota, O: Operation<Q>> Operation<Q> for UndoWithinStay<'_, S, O> {
    #[inline]
    fn step(&self, quota: &Q, state: u64, now: Q::Instant, cost: u64) -> Step {
        // Called on a state loaded with Acquire ordering (see `Table::reassignments`).
        if self.table.reassignments(self.shard) != self.reassignments {
            return Step::Deny;
        }
        self.undo.step(quota, state, now, cost)
    }
}

/// What the slow path of a check (of a cost above zero) decided
/// ([`KeyedLimiter::decide_slow`]). On the state of a key the table holds: the outcome and the
/// word, from which the fast path builds the `Decision`. The outcome is the variant, never a
/// `bool` field: a `bool` read back from memory costs the fast path an instruction where the
/// paths meet.
enum SlowDecision<Q: Quota> {
    /// A tracked key admitted: the word the check wrote.
    Allowed { current: u64 },
    /// A tracked key denied: the word that denied it.
    Denied { observed: u64 },
    /// A key the table did not hold, admitted: inserted, or untracked by a full table.
    NewKeyAllowed(Decision<Q>),
    /// A key the table did not hold, refused by a full table.
    NewKeyRefused(Decision<Q>),
}

/// Runs the shared CAS driver on a slot found holding `identity` with state `observed`:
/// [`SlowDecision::Allowed`] or [`SlowDecision::Denied`]. Returns `None` if the slot was
/// reassigned to another key before our update landed.
#[inline]
fn apply_to_slot<S: SlotOps, Q: Quota>(
    operation: impl Operation<Q>,
    slot: &S,
    identity: &S::Identity,
    mut observed: u64,
    quota: &Q,
    cost: u64,
    now: Q::Instant,
) -> Option<SlowDecision<Q>> {
    // `find` already checked the identity for the first observed value; after a lost race, or
    // a denial the state did not confirm, the new value may belong to another key.
    let mut identity_checked = true;
    loop {
        let guard = |state: u64| {
            if !identity_checked && (state >= RESERVED || !slot.holds(identity)) {
                return None;
            }
            identity_checked = false;
            Some(operation.step(quota, state, now, cost))
        };
        match driver::apply(slot.state(), observed, guard) {
            Applied::Allowed { current } => return Some(SlowDecision::Allowed { current }),
            Applied::Denied {
                observed: denied_on,
            } if slot.unchanged_since(denied_on) => {
                return Some(SlowDecision::Denied {
                    observed: denied_on,
                });
            }
            Applied::Denied { .. } => {
                // ORDERING: Acquire, as the lookup's load: the identity is checked against
                // this value next.
                observed = slot.state().load(Ordering::Acquire);
            }
            Applied::Aborted => return None,
        }
    }
}

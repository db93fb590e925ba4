//! Where a new key goes: the insert path's survey of a key's candidate slots, and the claim and
//! publication of the slot it takes. Called under the shard's insert lock (the protocol and its
//! argument: `protocol.rs`), but for the survey a peek of a new key makes, which names no
//! identity and claims nothing.

use super::hints::HintMatches;
use super::placement::Placement;
use super::slot::{SlotOps, RESERVED, VACANT};
use super::{SlotPosition, Table, WhenFull, SLOTS_PER_BUCKET};
use crate::sync::{fence, Ordering};

/// What the insert path finds for a key: its own slot after all, or the slot to take for it.
pub(crate) enum Candidate<'table, S> {
    /// The key's own entry (the lock-free lookup missed it: inserted meanwhile, or a stale
    /// hint), whose state was loaded as `state`.
    Holding { slot: &'table S, state: u64 },
    /// The key's own entry, removed (a removal) and not reused since, whose
    /// state was loaded as `state`: the key takes it back as a new key's, from a fresh state
    /// (module docs, "Removal").
    Removed {
        slot: &'table S,
        at: SlotPosition,
        state: u64,
    },
    /// A slot that never held a key.
    Vacant { slot: &'table S, at: SlotPosition },
    /// A slot whose entry is equivalent to fresh, judged on `state`.
    Reclaimable {
        slot: &'table S,
        at: SlotPosition,
        state: u64,
    },
    /// The live entry closest to fresh ([`WhenFull::EvictClosestToFresh`]), judged on `state`.
    Evictable {
        slot: &'table S,
        at: SlotPosition,
        state: u64,
    },
}

/// Every slot a new key may use holds a live entry.
pub(crate) struct Full {
    /// The state of the one that becomes fresh (reclaimable) first, and its freshness rank.
    pub(crate) soonest_fresh: Option<u64>,
    pub(crate) soonest_rank: Option<u64>,
}

impl<S: SlotOps> Table<S> {
    /// Surveys a key's 16 slots: the key's own slot if `identity` is given and one holds it;
    /// else its own removed entry, if one is there; else the slot for it: a vacant one if
    /// either bucket has one (in the bucket with more vacant slots: "power of two choices"
    /// keeps buckets even and delays the first refusal), else an entry equivalent to fresh (in
    /// the bucket with more of them), else, if evicting, the live entry closest to fresh. When
    /// none is to be had, how soon one frees. Only that last choice ranks entries, in a second
    /// pass over the slots, once the first (through the hint words) found no slot to take.
    ///
    /// Freshness is judged by `rank` (of a slot, its position and its state: `None` if
    /// equivalent to fresh, else a rank as
    /// [`SlotState::freshness_rank`](crate::quota::SlotState::freshness_rank)), which a state
    /// whose freshness is not a function of its word alone answers from the slot (a keyed
    /// sliding log's, whose records live beside the table) or from its position (a slot an undo
    /// lowered, judged by the highest word it held: `lowered.rs`).
    #[inline]
    pub(crate) fn choose_slot<'table>(
        &'table self,
        placement: Placement,
        identity: Option<&S::Identity>,
        rank: impl Fn(&'table S, SlotPosition, u64) -> Option<u64>,
    ) -> Result<Candidate<'table, S>, Full> {
        if let Some(candidate) = self.own_or_vacant(placement, identity) {
            return Ok(candidate);
        }
        self.reclaimable_or_closest(placement, rank)
    }

    /// The first pass: the key's own entry (live or removed) and the vacant slots, none of which
    /// needs a rank, found through the hint words: under the insert lock, which every hint
    /// writer holds, a slot's hint byte is the key's hint if it holds that key's entry, and 0
    /// if it is vacant or holds a removed key's entry. (A lock-free peek names no identity and
    /// reads every slot's state.)
    #[inline]
    fn own_or_vacant<'table>(
        &'table self,
        placement: Placement,
        identity: Option<&S::Identity>,
    ) -> Option<Candidate<'table, S>> {
        let mut vacant: Option<(SlotPosition, usize)> = None;
        let mut removed: Option<(&'table S, SlotPosition, u64)> = None;
        for bucket in placement.buckets() {
            let slots = self.bucket(bucket);
            let hint_word = self.hint_word(bucket);
            if let Some(identity) = identity {
                for index in HintMatches::of(hint_word, placement.hint) {
                    let slot = &slots[index];
                    // ORDERING: Acquire, as the lock-free lookup's load: the driver then
                    // updates the slot on this observation.
                    let state = slot.state().load(Ordering::Acquire);
                    if state < RESERVED && slot.holds(identity) {
                        return Some(Candidate::Holding { slot, state });
                    }
                }
            }
            let (first_vacant, vacant_count) =
                self.vacant_or_removed(bucket, hint_word, identity, &mut removed);
            if let Some(index) = first_vacant {
                if vacant.is_none_or(|(_, most)| vacant_count > most) {
                    vacant = Some((SlotPosition { bucket, index }, vacant_count));
                }
            }
        }
        // Before a vacant slot: so a key removed again and again keeps one slot.
        if let Some((slot, at, state)) = removed {
            return Some(Candidate::Removed { slot, at, state });
        }
        let (at, _) = vacant?;
        Some(Candidate::Vacant {
            slot: self.slot_at(at),
            at,
        })
    }

    /// In `bucket` (hint word `hint_word`): its first vacant slot and how many are vacant; and
    /// the key's own removed entry, into `removed` if none was found before.
    #[inline]
    fn vacant_or_removed<'table>(
        &'table self,
        bucket: usize,
        hint_word: u64,
        identity: Option<&S::Identity>,
        removed: &mut Option<(&'table S, SlotPosition, u64)>,
    ) -> (Option<usize>, usize) {
        let slots = self.bucket(bucket);
        let mut first_vacant = None;
        let mut vacant_count = 0;
        // A lock-free peek reads every slot's state for vacancy: its hint word may already
        // name a slot whose key is not yet published (its state still `VACANT`), a marker the
        // second pass must not rank.
        let maybe_vacant = match identity {
            Some(_) => HintMatches::of(hint_word, 0),
            None => HintMatches::ALL,
        };
        for index in maybe_vacant {
            let slot = &slots[index];
            // ORDERING: Acquire, as above: a vacant slot is only judged here and taken under
            // the lock; a removed entry's state is the value its claim's CAS expects.
            let state = slot.state().load(Ordering::Acquire);
            if state == VACANT {
                first_vacant = first_vacant.or(Some(index));
                vacant_count += 1;
                continue;
            }
            // A removed key's entry: the key's own is retaken, but not in a table that evicts
            // (an evicted key's words may be above the fresh state the key would restart from:
            // module docs, "Removal"); there it is ranked as any other entry.
            if let Some(identity) = identity {
                if self.when_full != WhenFull::EvictClosestToFresh
                    && state < RESERVED
                    && slot.holds(identity)
                {
                    let at = SlotPosition { bucket, index };
                    *removed = removed.or(Some((slot, at, state)));
                }
            }
        }
        (first_vacant, vacant_count)
    }

    /// The second pass, once every slot is taken: the first entry equivalent to fresh of the
    /// bucket with the most of them, and the live entry soonest fresh. (Under the insert lock
    /// no slot changes hands between the passes; a lock-free peek judges what it reads.) The
    /// running choices are positions and words, not references in options, so that the loop
    /// keeps them in registers; the slot is looked up once, at the end.
    #[inline]
    fn reclaimable_or_closest<'table>(
        &'table self,
        placement: Placement,
        rank: impl Fn(&'table S, SlotPosition, u64) -> Option<u64>,
    ) -> Result<Candidate<'table, S>, Full> {
        let mut reclaimable: Option<(SlotPosition, u64)> = None;
        let mut reclaimable_most = 0;
        // The live entry soonest fresh: position, state, freshness rank.
        let mut closest: Option<(SlotPosition, u64, u64)> = None;
        for bucket in placement.buckets() {
            let mut first_reclaimable = (0, 0);
            let mut reclaimable_count = 0;
            for (index, slot) in self.bucket(bucket).iter().enumerate() {
                // ORDERING: Acquire, as the lock-free lookup's load; these states are only
                // judged here, and claimed by a CAS that fails if they changed.
                let state = slot.state().load(Ordering::Acquire);
                match rank(slot, SlotPosition { bucket, index }, state) {
                    None => {
                        if reclaimable_count == 0 {
                            first_reclaimable = (index, state);
                        }
                        reclaimable_count += 1;
                    }
                    Some(rank) => {
                        if closest.is_none_or(|(_, _, soonest)| rank < soonest) {
                            closest = Some((SlotPosition { bucket, index }, state, rank));
                        }
                    }
                }
            }
            if reclaimable_count > reclaimable_most {
                reclaimable_most = reclaimable_count;
                let (index, state) = first_reclaimable;
                reclaimable = Some((SlotPosition { bucket, index }, state));
                // No other bucket can have more: the choice is made, and the other bucket's
                // lines need not be read under the lock.
                if reclaimable_count == SLOTS_PER_BUCKET {
                    break;
                }
            }
        }
        if let Some((at, state)) = reclaimable {
            let slot = self.slot_at(at);
            return Ok(Candidate::Reclaimable { slot, at, state });
        }
        match closest {
            Some((at, state, _)) if self.when_full == WhenFull::EvictClosestToFresh => {
                let slot = self.slot_at(at);
                Ok(Candidate::Evictable { slot, at, state })
            }
            closest => Err(Full {
                soonest_fresh: closest.map(|(_, state, _)| state),
                soonest_rank: closest.map(|(_, _, rank)| rank),
            }),
        }
    }
}

/// Claims `slot`, judged on `previous`, for a new key: `RESERVED` replaces `previous` unless a
/// checker changed the entry meanwhile. Under the insert lock.
pub(crate) fn claim<S: SlotOps>(slot: &S, previous: u64) -> bool {
    // ORDERING: AcqRel on success: Acquire orders our identity writes after every update of the
    // old entry; Release is unneeded (RESERVED publishes nothing) but harmless. Relaxed on
    // failure: the slot is simply judged again.
    if slot
        .state()
        .compare_exchange(previous, RESERVED, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    // ORDERING: Release fence before the identity words are rewritten: pairs with the Acquire
    // fence of `SlotOps::unchanged_since`, so a checker that reads any new identity word also
    // sees the slot claimed, and does not trust a match made of the old key's state and (part
    // of) the new key's identity.
    fence(Ordering::Release);
    true
}

/// Writes a new key's identity into a vacant or claimed slot, then publishes its first state.
pub(crate) fn publish<S: SlotOps>(slot: &S, identity: &S::Identity, state: u64) {
    slot.set_identity(identity);
    // ORDERING: Release, pairs with the Acquire loads of lookups and of the driver: a thread
    // that observes this state (or any later CAS of it) sees the identity written above.
    slot.state().store(state, Ordering::Release);
}

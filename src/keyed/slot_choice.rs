//! Where a new key goes: the insert path's survey of a key's candidate slots, and the claim and
//! publication of the slot it takes. Called only under the shard's insert lock (the protocol
//! and its argument: [`protocol`](super::protocol)).

use super::key_mode::KeyMode;
use super::placement::Placement;
use super::slot::{SlotOps, RESERVED, VACANT};
use super::{KeyedLimiter, WhenFull};
use crate::clock::Clock;
use crate::counters::Counting;
use crate::quota::Quota;
use crate::sync::{fence, Ordering};

/// What the insert path finds for a key: its own slot after all, or the slot to take for it.
pub(super) enum Candidate<'table, S> {
    /// The key's own entry (the lock-free lookup missed it: inserted meanwhile, or a stale
    /// hint), whose state was loaded as `state`.
    Holding { slot: &'table S, state: u64 },
    /// The key's own entry, removed ([`KeyedLimiter::remove`]) and not reused since, whose
    /// state was loaded as `state`: the key takes it back as a new key's, from a fresh state
    /// (module docs, "Removal").
    Removed { slot: &'table S, state: u64 },
    /// A slot that never held a key.
    Vacant(&'table S),
    /// A slot whose entry is equivalent to fresh, judged on `state`.
    Reclaimable { slot: &'table S, state: u64 },
    /// The live entry closest to fresh ([`WhenFull::EvictClosestToFresh`]), judged on `state`.
    Evictable { slot: &'table S, state: u64 },
}

/// Every slot a new key may use holds a live entry.
pub(super) struct Full {
    /// The state of the one that becomes fresh (reclaimable) first, and its freshness rank.
    pub(super) soonest_fresh: Option<u64>,
    pub(super) soonest_rank: Option<u64>,
}

impl<K: ?Sized, Q: Quota, C: Clock, M: KeyMode<K>, N: Counting> KeyedLimiter<K, Q, C, M, N> {
    /// Surveys a key's 16 slots in one pass: the key's own slot if `identity` is given and one
    /// holds it; else its own removed entry, if one is there; else the slot for it: a vacant one
    /// if either bucket has one (in the bucket with more vacant slots: "power of two choices" keeps buckets even and delays the first
    /// refusal), else an entry equivalent to fresh (in the bucket with more of them), else, if
    /// evicting, the live entry closest to fresh. When none is to be had, how soon one frees.
    #[inline]
    pub(super) fn choose_slot(
        &self,
        placement: Placement,
        identity: Option<&<M::Slot as SlotOps>::Identity>,
        now: Q::Instant,
    ) -> Result<Candidate<'_, M::Slot>, Full> {
        self.choose_slot_by(placement, identity, |_, state| {
            self.quota.freshness_rank(state, now)
        })
    }

    /// [`choose_slot`](Self::choose_slot) with freshness judged by `rank` (of a slot and its
    /// state: `None` if equivalent to fresh, else a rank as [`Quota::freshness_rank`]): for
    /// limiters whose freshness is not a function of the state word alone (the keyed sliding
    /// log's, whose records live beside the table).
    #[inline]
    pub(super) fn choose_slot_by(
        &self,
        placement: Placement,
        identity: Option<&<M::Slot as SlotOps>::Identity>,
        rank: impl Fn(&M::Slot, u64) -> Option<u64>,
    ) -> Result<Candidate<'_, M::Slot>, Full> {
        // The first vacant (resp. reclaimable) slot of the bucket with the most of them.
        let mut vacant: Option<(&M::Slot, usize)> = None;
        let mut reclaimable: Option<(&M::Slot, u64, usize)> = None;
        // The live entry soonest fresh: slot, state, freshness rank.
        let mut closest: Option<(&M::Slot, u64, u64)> = None;
        // The key's own removed entry.
        let mut removed: Option<(&M::Slot, u64)> = None;
        for bucket in placement.buckets() {
            let (mut vacant_here, mut vacant_count) = (None, 0);
            let (mut reclaimable_here, mut reclaimable_count) = (None, 0);
            for slot in self.table.bucket(placement, bucket) {
                // ORDERING: Acquire, as the lock-free lookup's load: if the slot holds our
                // identity, the driver then updates it on this observation. Other states are
                // only judged here, and claimed by a CAS that fails if they changed.
                let state = slot.state().load(Ordering::Acquire);
                if state == VACANT {
                    vacant_here = vacant_here.or(Some(slot));
                    vacant_count += 1;
                    continue;
                }
                if let Some(identity) = identity {
                    // Under the insert lock (the only callers that name an identity): a removed
                    // key's entry still holds its identity, but is no longer the key's.
                    if state < RESERVED && slot.holds(identity) {
                        if !self.table.is_detached(placement, slot) {
                            return Ok(Candidate::Holding { slot, state });
                        }
                        // Not in a table that evicts: an evicted key's words may be above the
                        // fresh state the key would restart from (module docs, "Removal").
                        if self.when_full != WhenFull::EvictClosestToFresh {
                            removed = removed.or(Some((slot, state)));
                            continue;
                        }
                    }
                }
                match rank(slot, state) {
                    None => {
                        reclaimable_here = reclaimable_here.or(Some((slot, state)));
                        reclaimable_count += 1;
                    }
                    Some(rank) => {
                        if closest.is_none_or(|(_, _, soonest)| rank < soonest) {
                            closest = Some((slot, state, rank));
                        }
                    }
                }
            }
            if let Some(slot) = vacant_here {
                if vacant.is_none_or(|(_, most)| vacant_count > most) {
                    vacant = Some((slot, vacant_count));
                }
            }
            if let Some((slot, state)) = reclaimable_here {
                if reclaimable.is_none_or(|(_, _, most)| reclaimable_count > most) {
                    reclaimable = Some((slot, state, reclaimable_count));
                }
            }
        }
        // Before a vacant slot: so a key removed again and again keeps one slot.
        if let Some((slot, state)) = removed {
            return Ok(Candidate::Removed { slot, state });
        }
        if let Some((slot, _)) = vacant {
            return Ok(Candidate::Vacant(slot));
        }
        if let Some((slot, state, _)) = reclaimable {
            return Ok(Candidate::Reclaimable { slot, state });
        }
        match closest {
            Some((slot, state, _)) if self.when_full == WhenFull::EvictClosestToFresh => {
                Ok(Candidate::Evictable { slot, state })
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
pub(super) fn claim<S: SlotOps>(slot: &S, previous: u64) -> bool {
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
pub(super) fn publish<S: SlotOps>(slot: &S, identity: &S::Identity, state: u64) {
    slot.set_identity(identity);
    // ORDERING: Release, pairs with the Acquire loads of lookups and of the driver: a thread
    // that observes this state (or any later CAS of it) sees the identity written above.
    slot.state().store(state, Ordering::Release);
}

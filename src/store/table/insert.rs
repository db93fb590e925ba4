//! The one insert protocol, for every kind of state a table keeps (rate quotas, in-flight
//! counts, sliding logs' positions): under the shard's insert lock, look for the key once more,
//! choose a slot for it, claim it, raise the shard's floor, count, and publish the key's first
//! state. What depends on what a word means (how fresh a slot is, whether the new key may take
//! it, what its first word is) is asked of an [`Insertion`]; the protocol and why it is sound are
//! in `protocol.rs`.

use super::choose::{claim, publish};
use super::guarded::apply_to_slot;
use super::slot::SlotOps;
use super::{Candidate, Full, InsertLock, Placement, SlotPosition, Table, TableEvent, WhenFull};
use crate::engine::decision::{Judged, Outcome};
use crate::engine::operation::Operation;
use crate::quota::{SlotState, Step};

/// The slot an insert is about to take, and the word it held.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Taken {
    /// A slot that never held a key.
    Vacant,
    /// The key's own removed entry, holding `previous`: it restarts from a key never seen.
    Removed { previous: u64 },
    /// An entry equivalent to fresh (another key's, or another key's removed entry), holding
    /// `previous`, and judged by `judged`: the highest word the slot held since it was last
    /// claimed (`previous`, unless an undo lowered it: `lowered.rs`).
    Reclaimed { previous: u64, judged: u64 },
    /// A live entry evicted for the new key, holding `previous`; the new key inherits `judged`
    /// (as above).
    Evicted { previous: u64, judged: u64 },
}

impl Taken {
    /// The word the claim expects, for a slot that held a key.
    fn previous(self) -> Option<u64> {
        match self {
            Taken::Vacant => None,
            Taken::Removed { previous }
            | Taken::Reclaimed { previous, .. }
            | Taken::Evicted { previous, .. } => Some(previous),
        }
    }
}

/// Whether a new key may take the slot the survey chose.
#[derive(Debug)]
pub(crate) enum Verdict<D> {
    /// Take it.
    Take,
    /// Refuse the key (an evicted state that would not admit it): nothing is taken.
    Refuse(D),
    /// The slot changed as it was judged: survey again.
    ChooseAgain,
}

/// What an insert asks of the kind of state it inserts, at the steps that depend on what a
/// word means. Called under the shard's insert lock, in this order: [`judge_from`], then per
/// survey [`rank`] (or [`found`], or [`full`]), [`judge`], after the claim [`seal`], and last
/// [`first`].
///
/// [`judge_from`]: Insertion::judge_from
/// [`rank`]: Insertion::rank
/// [`found`]: Insertion::found
/// [`full`]: Insertion::full
/// [`judge`]: Insertion::judge
/// [`seal`]: Insertion::seal
/// [`first`]: Insertion::first
pub(crate) trait Insertion<'table, S: SlotOps> {
    /// What the insert decides.
    type Decided;

    /// The shard's floor for new keys is `floor` (a time word): judge the new key no earlier.
    fn judge_from(&mut self, floor: u64);

    /// The key is in the table after all, in `slot`, whose word was `state`: decide there (the
    /// slot keeps its key while the lock is held).
    fn found(&mut self, slot: &'table S, state: u64) -> Self::Decided;

    /// How soon `slot`, judged by the word `state`, frees at the judging time: `None` if it is
    /// equivalent to a slot that never held a key, else a rank (smaller frees sooner).
    fn rank(&self, slot: &'table S, state: u64) -> Option<u64>;

    /// Every slot the key may use is live, and the table does not evict: what `when_full`
    /// decides (counted by the table).
    fn full(&mut self, full: Full, when_full: WhenFull) -> Self::Decided;

    /// Whether the new key may take `slot` as `taken` says.
    fn judge(&mut self, slot: &'table S, taken: Taken) -> Verdict<Self::Decided>;

    /// After the claim of a slot that held `previous`: whether it may go to the new key. If
    /// not, the implementation has given the slot back to its key, and the survey runs again.
    fn seal(&mut self, _slot: &'table S, _previous: u64) -> bool {
        true
    }

    /// For a reclaimed slot: a time word from which its `judged` word was as good as fresh,
    /// no later than the judging time (the shard's floor is raised to it).
    fn fresh_since(&self, slot: &'table S, judged: u64) -> u64;

    /// The new key's first word, to publish, and the decision; or no decision, when the key
    /// is to be decided as any present key is once its word is published.
    fn first(&mut self, slot: &'table S, taken: Taken) -> (u64, Option<Self::Decided>);
}

impl<S: SlotOps> Table<S> {
    /// The slowest path: a key not in the table (unless it is found here after all). Takes the
    /// shard's insert lock, looks for the key again in the same survey that chooses a slot for
    /// it, claims the slot, and publishes the key's first state.
    pub(crate) fn insert<'table, I: Insertion<'table, S>>(
        &'table self,
        placement: Placement,
        identity: &S::Identity,
        insertion: &mut I,
    ) -> I::Decided {
        let shard = placement.shard();
        self.start_fetching_candidates(placement);
        let mut lock = self.lock(shard);
        // A new key is judged no earlier than the shard's floor (`protocol.rs`, "Keys that come
        // back"); a key found here after all is judged at its own reading.
        insertion.judge_from(self.new_key_floor(shard));
        // Slots of this shard are only reassigned under the lock we hold: from here on, a slot
        // holding our identity keeps it, and no other thread claims a slot. The key is looked
        // for again (the lock-free lookup may have read a stale hint word; the lock makes them
        // exact), in the same survey that chooses a slot for it.
        loop {
            let (slot, at, taken) = match self.survey(placement, identity, &lock, insertion) {
                Ok(chosen) => chosen,
                Err(decided) => return decided,
            };
            match insertion.judge(slot, taken) {
                Verdict::Take => {}
                Verdict::Refuse(decided) => {
                    self.count(&lock, TableEvent::RefusedNewKey);
                    return decided;
                }
                Verdict::ChooseAgain => continue,
            }
            if let Some(previous) = taken.previous() {
                // A checker updated the entry since we judged it: choose again.
                if !claim(slot, previous) || !insertion.seal(slot, previous) {
                    continue;
                }
                // The new key starts above every word the slot held: its mark is spent.
                lock.lowered_mut().clear(at);
            }
            self.count_taken(&lock, at, taken, slot, insertion);
            let (first, decided) = insertion.first(slot, taken);
            // The hint just before the publication, with nothing between them that could fail:
            // the survey under the lock reads vacancy from the hint words, so a slot's byte must
            // not be set unless its key is published.
            self.set_hint(placement, at);
            publish(slot, identity, first);
            return match decided {
                Some(decided) => decided,
                None => insertion.found(slot, first),
            };
        }
    }

    /// One survey of the key's slots under the insert `lock`: the slot to take and how, or what
    /// the insertion decided (the key found after all, or a full table's answer, counted).
    fn survey<'table, I: Insertion<'table, S>>(
        &'table self,
        placement: Placement,
        identity: &S::Identity,
        lock: &InsertLock<'table>,
        insertion: &mut I,
    ) -> Result<(&'table S, SlotPosition, Taken), I::Decided> {
        // A slot an undo lowered is judged by the highest word it held (`lowered.rs`).
        let lowered = lock.lowered();
        let rank = |slot: &'table S, at, state| match lowered.is_empty() {
            true => insertion.rank(slot, state),
            false => insertion.rank(slot, lowered.judged_word(at, state)),
        };
        let chosen = match self.choose_slot(placement, Some(identity), rank) {
            Ok(Candidate::Holding { slot, state }) => return Err(insertion.found(slot, state)),
            Ok(Candidate::Vacant { slot, at }) => (slot, at, Taken::Vacant),
            Ok(Candidate::Removed { slot, at, state }) => {
                (slot, at, Taken::Removed { previous: state })
            }
            Ok(Candidate::Reclaimable { slot, at, state }) => {
                let judged = lowered.judged_word(at, state);
                let taken = Taken::Reclaimed {
                    previous: state,
                    judged,
                };
                (slot, at, taken)
            }
            Ok(Candidate::Evictable { slot, at, state }) => {
                let judged = lowered.judged_word(at, state);
                let taken = Taken::Evicted {
                    previous: state,
                    judged,
                };
                (slot, at, taken)
            }
            Err(full) => {
                let event = match self.when_full() {
                    WhenFull::Allow => TableEvent::UntrackedNewKey,
                    _ => TableEvent::RefusedNewKey,
                };
                self.count(lock, event);
                return Err(insertion.full(full, self.when_full()));
            }
        };
        Ok(chosen)
    }

    /// Counts the insert of a key into the slot at `at`, taken as `taken`, and raises the
    /// shard's floor for a reclaim. Under the insert `lock`, after the claim.
    fn count_taken<'table, I: Insertion<'table, S>>(
        &'table self,
        lock: &InsertLock<'table>,
        at: SlotPosition,
        taken: Taken,
        slot: &'table S,
        insertion: &I,
    ) {
        // A reused entry that was another key's is counted as what reused it; a removed key's
        // (its hint cleared) was no longer a key's, and counts as an insert only.
        let event = match taken {
            Taken::Reclaimed { .. } if !self.is_detached(at) => Some(TableEvent::Reclaim),
            Taken::Evicted { .. } if !self.is_detached(at) => Some(TableEvent::Eviction),
            _ => None,
        };
        if let Taken::Reclaimed { judged, .. } = taken {
            // Its key, should it come back with a reading from before its entry became fresh,
            // must not start over from a fresh state there (nor, for a removed entry, a key that
            // took it and is removed in turn: `protocol.rs`, "Removal").
            let floor = insertion.fresh_since(slot, judged);
            self.raise_new_key_floor(lock.shard(), floor);
        }
        self.count(lock, TableEvent::Insert);
        if let Some(event) = event {
            self.count(lock, event);
        }
    }
}

/// The insertion of a key whose state a step writes (rate quotas, in-flight counts): the
/// operation's step judges the new key on the state it starts from (a key never seen, or an
/// evicted entry's), and writes its first word.
pub(super) struct StepInsertion<'call, Q: SlotState, O, I> {
    pub(super) operation: O,
    pub(super) identity: &'call I,
    pub(super) quota: &'call Q,
    pub(super) cost: u64,
    /// The caller's reading: a key found after all is judged there.
    pub(super) reading: Q::Instant,
    /// When a new key is judged: the reading, or the shard's floor if that is later.
    pub(super) now: Q::Instant,
    /// The first word [`judge`](Insertion::judge) stepped to, for [`first`](Insertion::first).
    pub(super) first: u64,
}

impl<S, Q, O> Insertion<'_, S> for StepInsertion<'_, Q, O, S::Identity>
where
    S: SlotOps,
    Q: SlotState,
    O: Operation<Q>,
{
    type Decided = Judged<Q::Instant>;

    fn judge_from(&mut self, floor: u64) {
        self.now = self.quota.no_earlier_than(self.reading, floor);
    }

    fn found(&mut self, slot: &S, state: u64) -> Judged<Q::Instant> {
        let (operation, quota, cost) = (self.operation, self.quota, self.cost);
        apply_to_slot(
            operation,
            slot,
            self.identity,
            state,
            quota,
            cost,
            self.reading,
        )
        .expect("slots are not reassigned while their shard's insert lock is held")
    }

    #[inline]
    fn rank(&self, _slot: &S, state: u64) -> Option<u64> {
        self.quota.freshness_rank(state, self.now)
    }

    fn full(&mut self, full: Full, when_full: WhenFull) -> Judged<Q::Instant> {
        if when_full == WhenFull::Allow {
            // A fresh state admits any cost up to the limit: never `Deny`.
            let state = match self.step(Q::FIRST) {
                Step::Allow(state) => state,
                Step::Deny => Q::FIRST,
            };
            return Judged::new(Outcome::Untracked, state, self.now);
        }
        let waits_on = full.soonest_fresh.unwrap_or(Q::FIRST);
        Judged::new(Outcome::RefusedUntilFresh, waits_on, self.now)
    }

    fn judge(&mut self, _slot: &S, taken: Taken) -> Verdict<Judged<Q::Instant>> {
        // Only an inherited (evicted) state can deny: then nothing is evicted, and the new key
        // is refused, until that state would admit it.
        let inherited = self.inherited(taken);
        match self.step(inherited) {
            Step::Allow(first) => {
                self.first = first;
                Verdict::Take
            }
            Step::Deny => Verdict::Refuse(Judged::new(
                Outcome::RefusedUntilAdmitted,
                inherited,
                self.now,
            )),
        }
    }

    fn fresh_since(&self, _slot: &S, judged: u64) -> u64 {
        self.quota.fresh_since_word(judged, self.now)
    }

    fn first(&mut self, _slot: &S, _taken: Taken) -> (u64, Option<Judged<Q::Instant>>) {
        // Stepped by `judge` from the state `inherited` names: a vacant slot starts fresh; a
        // reclaimed one from its fresh-equivalent state (the same decision, by definition); an
        // evicted one inherits the evicted state. Either way the first word is greater than
        // every word the slot held, which keeps stale checkers out (`protocol.rs`). The key's own removed
        // entry starts fresh: every word its slot held since another key's was this key's
        // (`protocol.rs`, "Removal").
        let first = self.first;
        (first, Some(Judged::new(Outcome::Inserted, first, self.now)))
    }
}

impl<Q: SlotState, O: Operation<Q>, I> StepInsertion<'_, Q, O, I> {
    /// The state the new key starts from in the slot `taken` names.
    fn inherited(&self, taken: Taken) -> u64 {
        match taken {
            Taken::Vacant | Taken::Removed { .. } => Q::FIRST,
            Taken::Reclaimed { judged, .. } | Taken::Evicted { judged, .. } => judged,
        }
    }

    /// The operation's step on `state` at the judging time.
    fn step(&self, state: u64) -> Step {
        self.operation.step(self.quota, state, self.now, self.cost)
    }
}

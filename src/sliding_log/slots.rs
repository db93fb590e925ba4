//! Keyed sliding logs on the table: each slot's state word is the `next` position of a log
//! whose records live beside the table, one ring per slot
//! ([`KeyedSlidingLogLimiter`](crate::sliding_log::KeyedSlidingLogLimiter)).
//!
//! # The protocol
//!
//! The log's own protocol (`src/sliding_log/ring.rs`) runs on a slot as on a direct log, with
//! the slot's state word as `next`: a check snapshots the log at the position it loaded with
//! the key's identity, and admits by compare-and-swapping the record at that position (the
//! *head*: the record a lap before), then advancing the state word. What the table adds is
//! that a slot changes keys:
//!
//! - **Reuse.** The table's one insert protocol (`src/store/table/insert.rs`) runs it, with
//!   this file's [`Insertion`] answering for the log. An inserter (under the shard's insert
//!   lock) may take a slot whose latest record
//!   has left the window at its reading (reclaim) or, under
//!   [`WhenFull::EvictClosestToFresh`], the slot whose latest record is oldest (eviction, only
//!   if the new key's check fits the log it inherits, as the other keyed limiters evict). It
//!   claims the state word from the word `s` it judged (position `k`) to `RESERVED`, then
//!   **seals** position `k`: it compare-and-swaps the head at `k` to the same record with
//!   another `rest` field, which nothing reads once that record's request is finished. The log
//!   is unchanged, but a request that read the old head can no longer start at `k`. Then, while
//!   the state word is still reserved, it makes the new key's first check itself
//!   (`Log::admit_held`): the check fits (an empty log, one whose units have all left the window
//!   at this time, or an evicted log judged to admit it), so it writes the new key's records
//!   from position `k`. Last, it writes the new key's identity and publishes the position after
//!   those records, with the *reuse flag* flipped (bit 62 of the position word, `ring.rs`). No
//!   check of the new key can come before its first one. (Were that first check impossible to
//!   make, the inserter would publish `k` itself, the flag flipped, and let the key's checks
//!   run as usual; a held log never meets that case.) The new key continues the old key's
//!   log, whose units have all left the window at the inserter's time (reclaim), or which it
//!   inherits (eviction). A vacant slot goes the same way from position 0 (no claim, no seal:
//!   no check can reach a slot that never held a key).
//! - **A request of the old key started at `k` first** (its compare-and-swap on the head won):
//!   the seal fails, or finds that request's record. The request stands, for the old key: the
//!   inserter writes its other records, publishes the position after it (the slot stays the old
//!   key's, its identity untouched) and chooses again.
//! - **A key that comes back behind its reclaim.** A reclaim forgets the old key's units. Should
//!   that key come back with a reading behind them (a timestamp taken before a preemption), a
//!   fresh log would admit it again within a window of its old units. So each shard keeps a
//!   floor, raised by every reclaim to the time the reclaimed log's latest unit left the
//!   window, and a new key's insert is judged no earlier than it (read and written under the
//!   insert lock: the table's own floor, in nanoseconds). Since that first check is made before the key is published, every later
//!   check of the key sees a unit at the floor or later, and is judged no earlier. The floor is
//!   per shard: a key whose readings ran ahead of the clock (a timestamp from another origin)
//!   raises it for every new key of its shard once its entry is reclaimed, as far ahead as it
//!   ran. An eviction forgets the evicted key's units and sets no floor: the evicted key, if
//!   it comes back, starts on another log (as in the other keyed limiters).
//!
//! # Why an admission always counts in its own key's log
//!
//! An admission is the compare-and-swap of the head at the position of the word `s` that its
//! check loaded (with Acquire) before matching the key's identity, after a second load of the
//! state word returned `s` again (the snapshot). While the slot keeps its key, that is the
//! direct log's argument. A slot is reassigned only from the word it holds (a claim from any
//! other word fails), and:
//! - a check that read the head *before* the seal: the seal and the admission are
//!   compare-and-swaps from the same word on the same record, so exactly one succeeds. If the
//!   admission wins, it was made while the slot was its key's, and the inserter keeps the
//!   request for that key; if the seal wins, the admission fails and the check starts over;
//! - a check that read the head *after* the seal: its second load of the state word returns
//!   `RESERVED` or a later word, never `s` again, so its snapshot fails and it starts over.
//!
//! No word repeats in a slot: positions only grow (the new key's first word is past the
//! position sealed, the old key's kept request's word past that request), and the flag
//! changes with every reuse, which keeps words apart also on the fallback above, where the
//! position stays. So the table's argument, that a word observed under one key is never seen
//! again under another, holds here although a reuse may clear the flag and so lower the word. No position is sealed twice either, so a sealed head is a word its record never
//! held before and never holds again (later records there are later in time). A denial writes
//! no unit of its own (it may help finish another request), and counts only if the state word
//! is unchanged after the identity was read (behind the Acquire fence of `unchanged_since`), as
//! in the table's protocol.
//!
//! A key that takes a reclaimed slot sees the old key's records as units that left the window
//! at the inserter's reading: a reading of the new key behind that reading may still count
//! them (fewer admissions, never more).
//!
//! [`WhenFull::EvictClosestToFresh`]: crate::WhenFull::EvictClosestToFresh

use super::ring::{Log, Seal, View, REUSE_FLAG};
use super::SlidingLog;
use crate::store::table::{
    Candidate, Full, Insertion, Located, SlotOps, Table, Taken, Verdict, WhenFull, RESERVED,
};
use crate::sync::{AtomicU64, Ordering};

/// What a keyed log decided for a key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LogOutcome<'log> {
    /// Judged on the key's log (`view.fits`: admitted, for a check).
    Judged { view: View, log: Log<'log, true> },
    /// A new key judged on an empty log at `judged_ns` (a peek that found a slot free for it).
    Empty { judged_ns: u64 },
    /// A new key the full table admits without tracking it ([`WhenFull::Allow`]).
    Untracked { judged_ns: u64 },
    /// A new key refused at `judged_ns` (the table is full, or the log it would inherit by
    /// eviction is): nanoseconds until it would pass, if known.
    Refused {
        retry_after_ns: Option<u64>,
        judged_ns: u64,
    },
}

/// The keyed logs: the table, whose slots' words are the logs' positions, and the records
/// beside it, `2^ring_bits` for each slot (slot `n`'s from `n · 2^ring_bits`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Logs<'log, S> {
    pub(crate) table: &'log Table<S>,
    pub(crate) records: &'log [AtomicU64],
    pub(crate) ring_bits: u32,
    pub(crate) quota: SlidingLog,
}

impl<'log, S: SlotOps> Logs<'log, S> {
    /// The log of `slot`, one of `shard`'s.
    #[inline]
    fn log_of(&self, shard: usize, slot: &'log S) -> Log<'log, true> {
        let first = self.table.slot_number(shard, slot) << self.ring_bits;
        Log::new(
            slot.state(),
            &self.records[first..first + (1 << self.ring_bits)],
            self.ring_bits,
        )
    }

    /// Checks `cost` units (1 to the quota's most per request) for the key at `at`, at
    /// `reading_ns`: records them if they fit.
    #[inline]
    pub(crate) fn check(
        &self,
        at: Located<S::Identity>,
        cost: u64,
        reading_ns: u64,
    ) -> LogOutcome<'log> {
        let placement = self.table.place(at.hash);
        loop {
            let Some((slot, start)) = self.table.find(placement, &at.identity) else {
                let mut insertion = LogInsertion {
                    logs: self,
                    shard: placement.shard(),
                    cost,
                    reading_ns,
                    judging_ns: reading_ns,
                };
                return self.table.insert(placement, &at.identity, &mut insertion);
            };
            let log = self.log_of(placement.shard(), slot);
            if let Some(outcome) = self.attempt(log, slot, start, cost, reading_ns) {
                return outcome;
            }
        }
    }

    /// One check of the log of `slot`, found holding the key with `next` = `start`: `None` if
    /// it must be made again (the slot changed, or another request took the position).
    #[inline]
    fn attempt(
        &self,
        log: Log<'log, true>,
        slot: &S,
        start: u64,
        cost: u64,
        reading_ns: u64,
    ) -> Option<LogOutcome<'log>> {
        let quota = self.quota;
        let snapshot =
            log.snapshot_at(start, cost, reading_ns, quota.limit(), quota.window_ns())?;
        let decided = match snapshot.view.fits {
            true => log.claim(&snapshot, cost),
            false => slot.unchanged_since(start),
        };
        decided.then_some(LogOutcome::Judged {
            view: snapshot.view,
            log,
        })
    }

    /// Checks `slot`, which holds the key and keeps it while the caller holds the shard's
    /// insert lock, until decided.
    fn check_slot(
        &self,
        shard: usize,
        slot: &'log S,
        cost: u64,
        reading_ns: u64,
    ) -> LogOutcome<'log> {
        let log = self.log_of(shard, slot);
        loop {
            let start = log.load_next();
            if let Some(outcome) = self.attempt(log, slot, start, cost, reading_ns) {
                return outcome;
            }
        }
    }

    /// What checking `cost` units (0 to the most per request) for the key at `at`, at
    /// `reading_ns`, would decide, writing and inserting nothing.
    pub(crate) fn peek(
        &self,
        at: &Located<S::Identity>,
        cost: u64,
        reading_ns: u64,
    ) -> LogOutcome<'log> {
        let quota = self.quota;
        let placement = self.table.place(at.hash);
        let judge = |log: Log<'log, true>, start: u64| {
            log.snapshot_at(start, cost, reading_ns, quota.limit(), quota.window_ns())
        };
        while let Some((slot, start)) = self.table.find(placement, &at.identity) {
            let log = self.log_of(placement.shard(), slot);
            if let Some(snapshot) = judge(log, start) {
                if slot.unchanged_since(start) {
                    return LogOutcome::Judged {
                        view: snapshot.view,
                        log,
                    };
                }
            }
        }
        // A key the table does not hold: judged as its insert would judge it now.
        let shard = placement.shard();
        let judging_ns = reading_ns.max(self.table.new_key_floor(shard));
        loop {
            let rank = |slot: &'log S, _, state| self.rank(shard, slot, state, judging_ns);
            let (slot, state) = match self.table.choose_slot(placement, None, rank) {
                Ok(Candidate::Evictable { slot, state, .. }) => (slot, state),
                Ok(_) => {
                    return LogOutcome::Empty {
                        judged_ns: judging_ns,
                    }
                }
                Err(full) => return self.full_outcome(full, judging_ns),
            };
            let log = self.log_of(shard, slot);
            let judged = match state < RESERVED {
                true => log.snapshot_at(state, cost, judging_ns, quota.limit(), quota.window_ns()),
                false => None,
            };
            // As the insert decides: evict for a key the evicted log admits, else refuse.
            match judged {
                Some(snapshot) if snapshot.view.fits => {
                    return LogOutcome::Judged {
                        view: snapshot.view,
                        log,
                    }
                }
                Some(snapshot) => {
                    return LogOutcome::Refused {
                        retry_after_ns: Some(snapshot.view.retry_after_ns),
                        judged_ns: snapshot.view.now_ns,
                    }
                }
                // The slot changed, or is being reassigned: choose again.
                None => {}
            }
        }
    }

    /// How the insert ranks `slot` of `shard`, holding `start`, at `reading_ns` (see
    /// `Table::choose_slot`).
    fn rank(&self, shard: usize, slot: &'log S, start: u64, reading_ns: u64) -> Option<u64> {
        match start < RESERVED {
            true => {
                self.log_of(shard, slot)
                    .freshness_rank(start, self.quota.window_ns(), reading_ns)
            }
            // Only a lock-free peek sees a slot being reassigned: never the one to choose.
            false => Some(u64::MAX),
        }
    }

    /// The outcome for a new key that a full table has no slot for, judged at `reading_ns`.
    fn full_outcome(&self, full: Full, reading_ns: u64) -> LogOutcome<'log> {
        match self.table.when_full() {
            WhenFull::Allow => LogOutcome::Untracked {
                judged_ns: reading_ns,
            },
            // The largest rank stands for a slot that changed as it was read: no time to give.
            _ => LogOutcome::Refused {
                judged_ns: reading_ns,
                retry_after_ns: full
                    .soonest_rank
                    .filter(|&rank| rank != u64::MAX)
                    .map(|rank| {
                        Log::<true>::empties_after_ns(rank, self.quota.window_ns(), reading_ns)
                    }),
            },
        }
    }
}

/// The insertion of a new key's log: a slot is reusable once its latest unit has left the
/// window; the claim seals the position the new key starts from, and the new key's first check
/// is made before its identity is published (module documentation).
struct LogInsertion<'log, 'call, S> {
    logs: &'call Logs<'log, S>,
    shard: usize,
    cost: u64,
    /// The caller's reading: a key found after all is judged there.
    reading_ns: u64,
    /// When a new key is judged: the reading, or the shard's floor if that is later.
    judging_ns: u64,
}

impl<'log, S: SlotOps> Insertion<'log, S> for LogInsertion<'log, '_, S> {
    type Decided = LogOutcome<'log>;

    fn judge_from(&mut self, floor: u64) {
        // A key whose entry was reclaimed and that comes back with a reading behind that
        // reclaim is judged no earlier than when its old units had all left the window: else a
        // timestamp taken before a preemption could get it more than the limit in a window.
        self.judging_ns = self.reading_ns.max(floor);
    }

    fn found(&mut self, slot: &'log S, _state: u64) -> LogOutcome<'log> {
        self.logs
            .check_slot(self.shard, slot, self.cost, self.reading_ns)
    }

    fn rank(&self, slot: &'log S, state: u64) -> Option<u64> {
        self.logs.rank(self.shard, slot, state, self.judging_ns)
    }

    fn full(&mut self, full: Full, _when_full: WhenFull) -> LogOutcome<'log> {
        self.logs.full_outcome(full, self.judging_ns)
    }

    fn judge(&mut self, slot: &'log S, taken: Taken) -> Verdict<LogOutcome<'log>> {
        let Taken::Evicted { previous, .. } = taken else {
            return Verdict::Take;
        };
        // Evict only for a key the inherited log admits (as the other keyed limiters do), so
        // that its check below takes the sealed position.
        let quota = self.logs.quota;
        let log = self.logs.log_of(self.shard, slot);
        let judged = log.snapshot_at(
            previous,
            self.cost,
            self.judging_ns,
            quota.limit(),
            quota.window_ns(),
        );
        match judged {
            None => Verdict::ChooseAgain,
            Some(snapshot) if !snapshot.view.fits => Verdict::Refuse(LogOutcome::Refused {
                retry_after_ns: Some(snapshot.view.retry_after_ns),
                judged_ns: snapshot.view.now_ns,
            }),
            Some(_) => Verdict::Take,
        }
    }

    fn seal(&mut self, slot: &'log S, previous: u64) -> bool {
        let log = self.logs.log_of(self.shard, slot);
        let Seal::Started(first) = log.seal(previous) else {
            return true;
        };
        // The old key's request stands: the slot stays its own.
        let next = log.finish_held(previous, first);
        // ORDERING: Release, as `publish`: a thread that loads this position sees the records
        // written before it.
        slot.state().store(next, Ordering::Release);
        false
    }

    fn fresh_since(&self, slot: &'log S, previous: u64) -> u64 {
        let log = self.logs.log_of(self.shard, slot);
        log.latest_ns(previous).map_or(0, |latest_ns| {
            latest_ns.saturating_add(self.logs.quota.window_ns())
        })
    }

    fn first(&mut self, slot: &'log S, taken: Taken) -> (u64, Option<LogOutcome<'log>>) {
        // A vacant slot's log was never written: position 0. A reused slot keeps its position,
        // with the reuse flag flipped (module documentation).
        let start = match taken {
            Taken::Vacant => 0,
            Taken::Removed { previous }
            | Taken::Reclaimed { previous, .. }
            | Taken::Evicted { previous, .. } => previous ^ REUSE_FLAG,
        };
        // The new key's first check, made before its identity is published: no other check of
        // it can come first, with a reading behind the floor. It fits (an empty log, one whose
        // units have all left the window at this time, or an evicted one judged above), so the
        // word published is past the sealed position: no position is sealed twice.
        let quota = self.logs.quota;
        let log = self.logs.log_of(self.shard, slot);
        let judged = log.admit_held(
            start,
            self.cost,
            self.judging_ns,
            quota.limit(),
            quota.window_ns(),
        );
        match judged {
            Some((view, next)) => (next, Some(LogOutcome::Judged { view, log })),
            // Not reached (a held log reads as a snapshot): published at `start`, the key is
            // then checked as any thread would check it.
            None => (start, None),
        }
    }
}

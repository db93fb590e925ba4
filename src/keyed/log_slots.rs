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
//! - **Reuse.** An inserter (under the shard's insert lock) may take a slot whose latest record
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
//!   insert lock). Since that first check is made before the key is published, every later
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
//! [`WhenFull::EvictClosestToFresh`]: super::WhenFull::EvictClosestToFresh

use super::key_mode::KeyMode;
use super::placement::Placement;
use super::slot::{SlotOps, RESERVED};
use super::slot_choice::{claim, publish, Candidate, Full};
use super::table::TableEvent;
use super::{KeyedLimiter, WhenFull};
use crate::clock::Clock;
use crate::sliding_log::{Log, LogPositions, Seal, View, REUSE_FLAG};
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

/// What the keyed logs keep beside the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogRecords<'log> {
    /// `2^ring_bits` records for each slot, slot `n`'s from `n · 2^ring_bits`.
    pub(crate) records: &'log [AtomicU64],
    pub(crate) ring_bits: u32,
    /// Per shard, the earliest time a new key is judged at: when the latest unit of every log
    /// reclaimed in the shard left the window (module documentation). Read and written under
    /// the shard's insert lock only (a peek reads it without).
    pub(crate) new_key_floors_ns: &'log [AtomicU64],
}

impl<K: ?Sized, C: Clock, M: KeyMode<K>> KeyedLimiter<K, LogPositions, C, M> {
    /// The log of `slot`, one of `shard`'s.
    #[inline]
    fn log_of<'log>(
        &'log self,
        records: LogRecords<'log>,
        shard: usize,
        slot: &'log M::Slot,
    ) -> Log<'log, true> {
        let first = self.table.slot_number(shard, slot) << records.ring_bits;
        Log::new(
            slot.state(),
            &records.records[first..first + (1 << records.ring_bits)],
            records.ring_bits,
        )
    }

    /// Checks `cost` units (1 to the quota's most per request) for `key` at `reading_ns`:
    /// records them if they fit.
    #[inline]
    pub(crate) fn log_check<'log>(
        &'log self,
        records: LogRecords<'log>,
        key: &K,
        cost: u64,
        reading_ns: u64,
    ) -> LogOutcome<'log> {
        let (hash, identity) = M::identify(&self.hasher, key);
        let placement = self.table.place(hash);
        loop {
            let Some((slot, start)) = self.table.find(placement, &identity) else {
                return self.log_insert(records, placement, &identity, cost, reading_ns);
            };
            let log = self.log_of(records, placement.shard(), slot);
            if let Some(outcome) = self.log_attempt(log, slot, start, cost, reading_ns) {
                return outcome;
            }
        }
    }

    /// One check of the log of `slot`, found holding the key with `next` = `start`: `None` if
    /// it must be made again (the slot changed, or another request took the position).
    #[inline]
    fn log_attempt<'log>(
        &self,
        log: Log<'log, true>,
        slot: &M::Slot,
        start: u64,
        cost: u64,
        reading_ns: u64,
    ) -> Option<LogOutcome<'log>> {
        let quota = self.quota.quota;
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

    /// What checking `cost` units (0 to the most per request) for `key` at `reading_ns` would
    /// decide, writing and inserting nothing.
    pub(crate) fn log_peek<'log>(
        &'log self,
        records: LogRecords<'log>,
        key: &K,
        cost: u64,
        reading_ns: u64,
    ) -> LogOutcome<'log> {
        let quota = self.quota.quota;
        let (hash, identity) = M::identify(&self.hasher, key);
        let placement = self.table.place(hash);
        let judge = |log: Log<'log, true>, start: u64| {
            log.snapshot_at(start, cost, reading_ns, quota.limit(), quota.window_ns())
        };
        while let Some((slot, start)) = self.table.find(placement, &identity) {
            let log = self.log_of(records, placement.shard(), slot);
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
        let judging_ns = reading_ns.max(self.new_key_floor_ns(records, placement.shard()));
        let rank = self.log_rank(records, placement.shard(), judging_ns);
        loop {
            let (slot, state) = match self.choose_slot_by(placement, None, &rank) {
                Ok(Candidate::Evictable { slot, state, .. }) => (slot, state),
                Ok(_) => {
                    return LogOutcome::Empty {
                        judged_ns: judging_ns,
                    }
                }
                Err(full) => return self.full_outcome(full, judging_ns),
            };
            let log = self.log_of(records, placement.shard(), slot);
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

    /// The earliest time a new key in `shard` is judged at (see [`LogRecords`]).
    fn new_key_floor_ns(&self, records: LogRecords<'_>, shard: usize) -> u64 {
        // ORDERING: Relaxed; written under the shard's insert lock, which orders it for the
        // inserters that read it. A peek's unlocked read may be older: it only advises.
        records.new_key_floors_ns[shard].load(Ordering::Relaxed)
    }

    /// How the insert path ranks the slots of `shard` (see `choose_slot_by`).
    fn log_rank<'log>(
        &'log self,
        records: LogRecords<'log>,
        shard: usize,
        reading_ns: u64,
    ) -> impl Fn(&M::Slot, u64) -> Option<u64> + 'log {
        let window_ns = self.quota.quota.window_ns();
        move |slot, start| match start < RESERVED {
            true => self
                .log_of(records, shard, slot)
                .freshness_rank(start, window_ns, reading_ns),
            // Only a lock-free peek sees a slot being reassigned: never the one to choose.
            false => Some(u64::MAX),
        }
    }

    /// The outcome for a new key that a full table has no slot for, judged at `reading_ns`.
    fn full_outcome<'log>(&self, full: Full, reading_ns: u64) -> LogOutcome<'log> {
        match self.when_full {
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
                        Log::<true>::empties_after_ns(
                            rank,
                            self.quota.quota.window_ns(),
                            reading_ns,
                        )
                    }),
            },
        }
    }

    /// The slowest path: a key not in the table. Under the shard's insert lock, it takes a slot
    /// for the key (module documentation), then makes the check there: no other inserter can
    /// take that slot before the check is decided.
    #[cold]
    #[inline(never)]
    fn log_insert<'log>(
        &'log self,
        records: LogRecords<'log>,
        placement: Placement,
        identity: &<M::Slot as SlotOps>::Identity,
        cost: u64,
        reading_ns: u64,
    ) -> LogOutcome<'log> {
        let shard = placement.shard();
        let quota = self.quota.quota;
        let lock = self.table.lock(shard);
        // A key whose entry was reclaimed and that comes back with a reading behind that
        // reclaim is judged no earlier than when its old units had all left the window: else
        // a timestamp taken before a preemption could get it more than the limit in a window.
        // A key the table holds is judged at its reading, as on the lock-free path.
        let floor_ns = self.new_key_floor_ns(records, shard);
        let judging_ns = reading_ns.max(floor_ns);
        let rank = self.log_rank(records, shard, judging_ns);
        loop {
            let (slot, at, previous, event) =
                match self.choose_slot_by(placement, Some(identity), &rank) {
                    Ok(Candidate::Holding { slot, .. }) => {
                        return self.log_check_slot(records, shard, slot, cost, reading_ns);
                    }
                    Ok(Candidate::Vacant { slot, at }) => (slot, at, None, None),
                    Ok(Candidate::Removed { .. }) => {
                        unreachable!("keyed sliding logs remove no key")
                    }
                    Ok(Candidate::Reclaimable { slot, at, state }) => {
                        (slot, at, Some(state), Some(TableEvent::Reclaim))
                    }
                    Ok(Candidate::Evictable { slot, at, state }) => {
                        // Evict only for a key the inherited log admits (as the other keyed
                        // limiters do), so that its check below takes the sealed position.
                        let log = self.log_of(records, shard, slot);
                        let judged = log.snapshot_at(
                            state,
                            cost,
                            judging_ns,
                            quota.limit(),
                            quota.window_ns(),
                        );
                        match judged {
                            None => continue,
                            Some(snapshot) if !snapshot.view.fits => {
                                self.table.count(&lock, TableEvent::RefusedNewKey);
                                return LogOutcome::Refused {
                                    retry_after_ns: Some(snapshot.view.retry_after_ns),
                                    judged_ns: snapshot.view.now_ns,
                                };
                            }
                            Some(_) => (slot, at, Some(state), Some(TableEvent::Eviction)),
                        }
                    }
                    Err(full) => {
                        self.table.count(
                            &lock,
                            match self.when_full {
                                WhenFull::Allow => TableEvent::UntrackedNewKey,
                                _ => TableEvent::RefusedNewKey,
                            },
                        );
                        return self.full_outcome(full, judging_ns);
                    }
                };
            // A vacant slot's log was never written: position 0. A reused slot keeps its
            // position, with the reuse flag flipped (module documentation).
            let start = previous.map_or(0, |previous| previous ^ REUSE_FLAG);
            if let Some(previous) = previous {
                if !claim(slot, previous) {
                    // A check changed the entry since we judged it: choose again.
                    continue;
                }
                let log = self.log_of(records, shard, slot);
                if let Seal::Started(first) = log.seal(previous) {
                    // The old key's request stands: the slot stays its own.
                    let next = log.finish_held(previous, first);
                    // ORDERING: Release, as `publish`: a thread that loads this position sees
                    // the records written before it.
                    slot.state().store(next, Ordering::Release);
                    continue;
                }
                if matches!(event, Some(TableEvent::Reclaim)) {
                    let emptied_ns = log
                        .latest_ns(previous)
                        .map_or(0, |latest_ns| latest_ns.saturating_add(quota.window_ns()));
                    if emptied_ns > floor_ns {
                        // ORDERING: Relaxed; under the insert lock (see `new_key_floor_ns`).
                        records.new_key_floors_ns[shard].store(emptied_ns, Ordering::Relaxed);
                    }
                }
            }
            self.table.count(&lock, TableEvent::Insert);
            if let Some(event) = event {
                self.table.count(&lock, event);
            }
            // The new key's first check, made before its identity is published: no other
            // check of it can come first, with a reading behind the floor. It fits (an empty
            // log, one whose units have all left the window at this time, or an evicted one
            // judged above), so the word published is past the sealed position: no position is
            // sealed twice.
            let log = self.log_of(records, shard, slot);
            let limit = quota.limit();
            let judged = log.admit_held(start, cost, judging_ns, limit, quota.window_ns());
            // The hint just before the publication, with nothing between them that could fail:
            // the survey under the lock reads vacancy from the hint words, so a slot's byte
            // must not be set unless its key is published.
            self.table.set_hint(placement, at);
            let Some((view, next)) = judged else {
                // Not reached (a held log reads as a snapshot); check as any thread would.
                publish(slot, identity, start);
                return self.log_check_slot(records, shard, slot, cost, judging_ns);
            };
            publish(slot, identity, next);
            return LogOutcome::Judged { view, log };
        }
    }

    /// Checks `slot`, which holds the key and keeps it while the caller holds the shard's
    /// insert lock, until decided.
    fn log_check_slot<'log>(
        &'log self,
        records: LogRecords<'log>,
        shard: usize,
        slot: &'log M::Slot,
        cost: u64,
        reading_ns: u64,
    ) -> LogOutcome<'log> {
        let log = self.log_of(records, shard, slot);
        loop {
            let start = log.load_next();
            if let Some(outcome) = self.log_attempt(log, slot, start, cost, reading_ns) {
                return outcome;
            }
        }
    }
}

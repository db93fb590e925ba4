//! The log's lock-free protocol: a ring of unit records and the position the next request
//! starts at.
//!
//! # State
//!
//! - `next`: every position before it holds the record of an admitted unit, and every request
//!   that wrote one of them is fully written.
//! - `slots`: `R` records (`R`, the ring size, is the limit rounded up to a power of two), one
//!   per admitted unit: position `p` lives in slot `p mod R`, and its record carries the parity of
//!   its lap `p / R` (`record.rs`). Times are non-decreasing along positions.
//!
//! # A check of `n` units at reading `t`
//!
//! 1. Load `next` (call it `k`) and slot `k`'s word. If that word already holds position `k`, a
//!    request started at `k` and `next` lags: *help* (write the rest of that request's units from
//!    its first record, then advance `next`) and start again.
//! 2. Read position `k − 1`'s record (the latest unit): the check is judged at `now =
//!    max(t, its time)`, so a reading behind the log is judged at the latest time seen.
//! 3. Read position `k + n − 1 − L`'s record: the request fits iff that unit has left the window
//!    `(now − W, now]` (or never existed). Times are sorted, so that unit having left means at
//!    most `L − n` units are still in the window.
//! 4. The records read in 2 and 3 must carry their positions' parity, and `next` must still be
//!    `k` when loaded again: then it was `k` throughout, and the view was a snapshot of the log
//!    as it was when slot `k` was read in 1. Else start again. (While `next` is `k`, a request
//!    that started at `k` after step 1 writes its units over the slots of positions `k − R` to
//!    `k + n − 1 − R`, among them, when `R` is small, the records 2 and 3 read: those carry the
//!    next lap's parity, which is how the check sees that its view mixes two moments.)
//! 5. A denial records nothing (it may have helped finish another thread's request in 1). An
//!    admission compare-and-swaps slot `k` from the word read in 1
//!    (position `k − R`'s record) to position `k`'s, whose `rest` field says how many units
//!    follow: that CAS admits the whole request. It then writes the other `n − 1` records (as
//!    any helper would) and advances `next` to `k + n` by CAS; a lost CAS there means a helper
//!    did it.
//!
//! # Why it is exact
//!
//! - A slot's records have strictly increasing times (a record replaces position `p − R`'s, at or
//!   before position `k + n − 1 − L`'s, which has left the window, so it is at least one window
//!   older), so a slot never holds the same word twice: a CAS from a word read earlier succeeds
//!   only if nobody wrote that slot since.
//! - While `next` is `k`, slot `k` holds position `k − R`'s record or position `k`'s, and the
//!   slot of any position `k + i` of a request started at `k` holds `k + i − R`'s or `k + i`'s:
//!   one parity bit tells them apart. Every write is preceded by a load of `next` that returns
//!   the position's request start, after the slot was read, so no write acts on a slot read on a
//!   later lap.
//! - Position `k` is written once (the first CAS from `k − R`'s record wins), and `next` passes
//!   `k` only once its request is fully written. While `next` is `k`, the slot of a position
//!   before `k` changes only when a request started at `k` writes the next lap's record over it,
//!   which step 4 detects by parity; so a view that passes step 4 holds the records of the
//!   positions it read, and decides exactly as the reference log would on the same units.

//!
//! # Owned and borrowed logs
//!
//! The protocol runs on a [`Log`]: the position word and the records, borrowed. A direct
//! limiter's [`Ring`] owns both; a keyed slot lends its state word as the position word, and
//! the records beside the table (`src/sliding_log/slots.rs`), whose inserter also uses
//! [`Log::seal`] and [`Log::finish_held`] when it passes a slot to another key.

use super::record::{self, MAX_UNITS_PER_REQUEST};
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// The position word's layout.
///
/// | bits | field | meaning |
/// |---|---|---|
/// | 0–61 | position | where the next request starts |
/// | 62 | reuse flag | a keyed slot's: flipped each time the slot passes to another key, at the same position (`src/sliding_log/slots.rs`); 0 in a direct log |
/// | 63 | 0 | so that no position word is one of the keyed table's slot markers |
///
/// Positions never reach bit 62: 2^62 units take 90 years at 1.6 · 10^9 units per second.
pub(crate) const POSITION_MASK: u64 = (1 << 62) - 1;
/// The reuse flag (see [`POSITION_MASK`]).
pub(crate) const REUSE_FLAG: u64 = 1 << 62;

/// What a snapshot of the log says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct View {
    /// Whether the request fits.
    pub(crate) fits: bool,
    /// The time it is judged at, in nanoseconds: the reading, or the latest unit's time if the
    /// reading is behind it.
    pub(crate) now_ns: u64,
    /// Nanoseconds until the unit that must leave for the request to fit has left (0 if it fits).
    pub(crate) retry_after_ns: u64,
    /// Nanoseconds until the latest unit leaves, before this request.
    pub(crate) reset_after_ns: u64,
}

/// A view of the log taken while `next` was `start` (the whole position word), and the word of
/// the slot a request starting there would write (position `start − R`'s record).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    start: u64,
    head: u64,
    pub(crate) view: View,
}

/// What [`Log::seal`] found at the position it was asked to seal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seal {
    /// The position now holds a record that admits nothing: no request can start there.
    Sealed,
    /// A request started there first; its first record is this word.
    Started(u64),
}

/// The ring of records and the next request's position, owned: the direct limiter's log.
#[derive(Debug)]
pub(crate) struct Ring {
    next: CachePadded<AtomicU64>,
    records: Box<[AtomicU64]>,
    ring_bits: u32,
}

impl Ring {
    /// A ring for `limit` units (`limit` ≥ 1), or `None` if the allocator cannot provide it.
    pub(crate) fn new(limit: u64) -> Option<Ring> {
        let records = empty_records(usize::try_from(limit).ok()?.checked_next_power_of_two()?)?;
        Some(Ring {
            next: CachePadded::new(AtomicU64::new(0)),
            ring_bits: records.len().trailing_zeros(),
            records,
        })
    }

    /// The bytes the ring occupies (the records and the padded `next` word).
    pub(crate) fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(&*self.records) + core::mem::size_of::<CachePadded<AtomicU64>>()
    }

    /// The log this ring holds.
    #[inline(always)]
    pub(crate) fn log(&self) -> Log<'_, false> {
        Log::new(&self.next, &self.records, self.ring_bits)
    }

    /// Admits `cost` units (1 to the limit, at most 16) at `reading_ns` if they fit: the view the
    /// decision was made on, with `fits` telling which.
    #[inline]
    pub(crate) fn admit(&self, cost: u64, reading_ns: u64, limit: u64, window_ns: u64) -> View {
        let log = self.log();
        loop {
            let start = log.load_next();
            let Some(snapshot) = log.snapshot_at(start, cost, reading_ns, limit, window_ns) else {
                continue;
            };
            if !snapshot.view.fits || log.claim(&snapshot, cost) {
                return snapshot.view;
            }
        }
    }

    /// What admitting `cost` units (0 to the limit) at `reading_ns` would decide, writing
    /// nothing (a cost of 0 always fits).
    pub(crate) fn peek(&self, cost: u64, reading_ns: u64, limit: u64, window_ns: u64) -> View {
        let log = self.log();
        loop {
            let start = log.load_next();
            if let Some(snapshot) = log.snapshot_at(start, cost, reading_ns, limit, window_ns) {
                return snapshot.view;
            }
        }
    }
}

/// `count` (a power of two) records of a ring never written, or `None` if the allocator cannot
/// provide them.
pub(crate) fn empty_records(count: usize) -> Option<Box<[AtomicU64]>> {
    let mut records = Vec::new();
    records.try_reserve_exact(count).ok()?;
    records.extend(core::iter::repeat_with(|| AtomicU64::new(record::EMPTY)).take(count));
    Some(records.into_boxed_slice())
}

/// A log: the word naming the next request's position and the ring of records, borrowed from
/// their owner (a [`Ring`], or, `KEYED`, a keyed slot's state word and the records beside the
/// table, whose position word may carry the reuse flag).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Log<'log, const KEYED: bool> {
    next: &'log AtomicU64,
    records: &'log [AtomicU64],
    ring_bits: u32,
}

impl<'log, const KEYED: bool> Log<'log, KEYED> {
    /// The position in a position word: a direct log's word is its position.
    #[inline(always)]
    const fn position(word: u64) -> u64 {
        if KEYED {
            word & POSITION_MASK
        } else {
            word
        }
    }

    /// The log of `next` and `records` (`2^ring_bits` of them).
    #[inline(always)]
    pub(crate) fn new(next: &'log AtomicU64, records: &'log [AtomicU64], ring_bits: u32) -> Self {
        debug_assert_eq!(records.len(), 1 << ring_bits);
        Log {
            next,
            records,
            ring_bits,
        }
    }

    /// The log of `next` and `records` (a power of two of them), computing what
    /// [`new`](Self::new) is given.
    pub(crate) fn of(next: &'log AtomicU64, records: &'log [AtomicU64]) -> Self {
        Log::new(next, records, records.len().trailing_zeros())
    }

    /// The position word.
    #[inline(always)]
    pub(crate) fn next(&self) -> &'log AtomicU64 {
        self.next
    }

    /// The records.
    #[inline(always)]
    pub(crate) fn records(&self) -> &'log [AtomicU64] {
        self.records
    }

    #[inline(always)]
    fn slot(&self, position: u64) -> &AtomicU64 {
        // The mask keeps the index below the record count, a `usize`.
        &self.records[(position & (self.records.len() as u64 - 1)) as usize]
    }

    /// The position word.
    #[inline(always)]
    pub(crate) fn load_next(&self) -> u64 {
        // ORDERING: Acquire, pairing with the AcqRel CAS that advanced `next` (in `advance`),
        // or with the Release store that published a keyed slot: every record before the
        // loaded position, written or seen by the thread that advanced it, is visible to the
        // slot loads that follow.
        self.next.load(Ordering::Acquire)
    }

    #[inline(always)]
    fn load_slot(&self, position: u64) -> u64 {
        // ORDERING: Acquire, pairing with the AcqRel CAS that wrote the record (`write`): a
        // helper that reads a first record sees what its writer saw before writing it.
        self.slot(position).load(Ordering::Acquire)
    }

    /// Steps 1 to 4 of a check at `start`, a value of `next` the caller loaded: a view of the
    /// log proved to be a snapshot (`next` was `start` throughout), or `None` if `next` moved
    /// (after finishing a request found half written there).
    #[inline(always)]
    pub(crate) fn snapshot_at(
        &self,
        start: u64,
        cost: u64,
        reading_ns: u64,
        limit: u64,
        window_ns: u64,
    ) -> Option<Snapshot> {
        let position = Self::position(start);
        let head = self.load_slot(position);
        if record::holds(head, position, self.ring_bits) {
            self.finish(start, head);
            return None;
        }
        let view = self.view(position, cost, reading_ns, limit, window_ns)?;
        (self.load_next() == start).then_some(Snapshot { start, head, view })
    }

    /// Step 5 of an admission of `cost` units on a snapshot that fits: claims the request's
    /// first position, writes its other records and advances `next`. False if another request
    /// claimed the position first (nothing was admitted: check again).
    #[inline(always)]
    pub(crate) fn claim(&self, snapshot: &Snapshot, cost: u64) -> bool {
        debug_assert!(snapshot.view.fits && (1..=MAX_UNITS_PER_REQUEST).contains(&cost));
        let position = Self::position(snapshot.start);
        let first = record::record(position, self.ring_bits, snapshot.view.now_ns, cost - 1);
        if !self.write(position, snapshot.head, first) {
            return false;
        }
        if cost > 1 {
            self.finish(snapshot.start, first);
        } else {
            self.advance(snapshot.start, 1);
        }
        true
    }

    /// Steps 2 and 3 of a check starting at `start` (valid only if `next` is still `start`
    /// afterwards). `None` if a record read is already a lap ahead of its position: a request
    /// started at `start` since `head` was read, and is writing its units over them.
    #[inline(always)]
    fn view(
        &self,
        start: u64,
        cost: u64,
        reading_ns: u64,
        limit: u64,
        window_ns: u64,
    ) -> Option<View> {
        let latest = match start.checked_sub(1) {
            Some(position) => self.read(position)?,
            None => record::EMPTY,
        };
        let now_ns = match record::time_ns(latest) {
            Some(latest_ns) => record::stamp_of(reading_ns).max(latest_ns),
            None => record::stamp_of(reading_ns),
        };
        // The unit that must have left: `cost` ≤ `limit`, so it is before `start`.
        let must_leave = match (start + cost).checked_sub(limit + 1) {
            Some(position) if cost > 0 => self.read(position)?,
            _ => record::EMPTY,
        };
        let retry_after_ns = record::leaves_after_ns(must_leave, window_ns, now_ns);
        Some(View {
            fits: retry_after_ns == 0,
            now_ns,
            retry_after_ns,
            reset_after_ns: record::leaves_after_ns(latest, window_ns, now_ns),
        })
    }

    /// The record of `position` (one before `next`), or `None` if its slot already holds the
    /// record of the position a lap after it.
    #[inline(always)]
    fn read(&self, position: u64) -> Option<u64> {
        let word = self.load_slot(position);
        record::holds(word, position, self.ring_bits).then_some(word)
    }

    /// Writes the units that follow the first record `first` of the request started at
    /// `start`, then advances `next` past them: what the request's own thread does after its
    /// first CAS, and what any thread that finds the request unfinished does (help).
    #[cold]
    fn finish(&self, start: u64, first: u64) {
        let (units, written) = self.write_rest(start, first, false);
        if written {
            self.advance(start, units);
        }
    }

    /// Writes the records that follow the first record `first` of the request started at
    /// `start` (those not written yet). Returns the request's units, and whether they are all
    /// written: not if `next` moved on meanwhile (another thread finished the request).
    /// `held`: the caller holds the keyed slot's state word (`finish_held`), so `next` cannot
    /// move.
    #[inline]
    fn write_rest(&self, start: u64, first: u64, held: bool) -> (u64, bool) {
        let units = record::rest(first) + 1;
        let time_ns = record::time_ns(first).unwrap_or(0);
        for offset in 1..units {
            let position = Self::position(start) + offset;
            let wanted = record::record(position, self.ring_bits, time_ns, units - 1 - offset);
            loop {
                let word = self.load_slot(position);
                // Only while `next` is `start` does the slot hold this position's record or
                // the one a lap before; else the request is finished and the slot may be on a
                // later lap.
                if !held && self.load_next() != start {
                    return (units, false);
                }
                if record::holds(word, position, self.ring_bits)
                    || self.write(position, word, wanted)
                {
                    break;
                }
            }
        }
        (units, true)
    }

    /// Replaces `position`'s slot's `observed` word with `record`; false if the slot changed.
    #[inline]
    fn write(&self, position: u64, observed: u64, record: u64) -> bool {
        // ORDERING: AcqRel. Release publishes the record, and everything this thread did before
        // it, to the Acquire loads of helpers and later checks. Acquire is not needed for the
        // decision (its loads were Acquire), but keeps a successful write ordered like the
        // driver's. Failure Relaxed: the caller reloads.
        self.slot(position)
            .compare_exchange(observed, record, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Moves `next` from `start` past a request of `units`, if nobody did yet.
    #[inline]
    fn advance(&self, start: u64, units: u64) {
        // ORDERING: AcqRel. Release pairs with the Acquire of `load_next`: a thread that sees
        // the new `next` sees every record before it (this thread wrote or Acquire-loaded
        // them). Failure Relaxed: another thread advanced it, or (keyed) the slot is being
        // reassigned, whose inserter finishes the request (`finish_held`).
        let _ =
            self.next
                .compare_exchange(start, start + units, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// The time of the latest unit of a log whose `next` is `start`, if it has one (`None`
    /// also when that record was already overwritten: `next` has moved on).
    pub(crate) fn latest_ns(&self, start: u64) -> Option<u64> {
        let position = Self::position(start).checked_sub(1)?;
        record::time_ns(self.read(position)?)
    }

    /// For a keyed table choosing a slot to reuse, on a log whose `next` was `start`: `None`
    /// if every unit has left the window at `reading_ns` (the log is as good as empty), else
    /// a rank, the latest unit's time (the smaller, the sooner the log empties). A log whose
    /// `next` moved on since gets the largest rank: a claim from `start` would fail anyway.
    pub(crate) fn freshness_rank(
        &self,
        start: u64,
        window_ns: u64,
        reading_ns: u64,
    ) -> Option<u64> {
        let position = Self::position(start).checked_sub(1)?;
        let Some(latest) = self.read(position) else {
            return Some(u64::MAX);
        };
        match record::has_left(latest, window_ns, record::stamp_of(reading_ns)) {
            true => None,
            false => record::time_ns(latest),
        }
    }

    /// Nanoseconds from `reading_ns` until a log ranked `rank` by
    /// [`freshness_rank`](Self::freshness_rank) empties.
    pub(crate) fn empties_after_ns(rank: u64, window_ns: u64, reading_ns: u64) -> u64 {
        rank.saturating_add(window_ns)
            .saturating_sub(record::stamp_of(reading_ns))
    }

    /// For a keyed inserter that has taken the slot (its state word, this log's `next`, is
    /// reserved, and was `start`): makes sure that no request that read the slot's head before
    /// can start at `start`'s position, unless one already did (one that reads it after fails
    /// its snapshot: the state word is never `start` again). It rewrites the word there
    /// (position `start − R`'s record, which a request starting at `start` would replace) with
    /// one that differs only in its `rest` field, which nothing reads once that record's request
    /// is finished: the log is unchanged, but a compare-and-swap from the old word now fails.
    pub(crate) fn seal(&self, start: u64) -> Seal {
        let position = Self::position(start);
        let head = self.load_slot(position);
        if record::holds(head, position, self.ring_bits) {
            return Seal::Started(head);
        }
        if self.write(position, head, record::with_other_rest(head)) {
            return Seal::Sealed;
        }
        // Only a request's first record replaces the head while `next` is held at `start`.
        Seal::Started(self.load_slot(position))
    }

    /// For a keyed inserter that holds the slot (its state word reserved, or vacant) for a new
    /// key at `start`: makes the new key's first check, `cost` units at `reading_ns`, before any
    /// other thread can reach the slot. If they fit, writes their records (from the head, which
    /// nobody else can write now) and returns the view with the word to publish, past them; if
    /// not, the view with `start`. `None` if the log cannot be read as a snapshot at `start`
    /// or the head changed, which a held log never does.
    pub(crate) fn admit_held(
        &self,
        start: u64,
        cost: u64,
        reading_ns: u64,
        limit: u64,
        window_ns: u64,
    ) -> Option<(View, u64)> {
        let position = Self::position(start);
        let head = self.load_slot(position);
        if record::holds(head, position, self.ring_bits) {
            return None;
        }
        let view = self.view(position, cost, reading_ns, limit, window_ns)?;
        if !view.fits {
            return Some((view, start));
        }
        let first = record::record(position, self.ring_bits, view.now_ns, cost - 1);
        if !self.write(position, head, first) {
            return None;
        }
        let (units, _) = self.write_rest(start, first, true);
        Some((view, start + units))
    }

    /// For the inserter of [`seal`](Self::seal) that found a request started at `start` with
    /// first record `first`: writes its other records (the state word is held, so `next` stays
    /// `start` and each slot holds its position's record or the one a lap before), and returns
    /// the position after it, for the inserter to publish.
    pub(crate) fn finish_held(&self, start: u64, first: u64) -> u64 {
        start + self.write_rest(start, first, true).0
    }

    /// How many units are in the window `(now_ns − window_ns, now_ns]` among the last `limit`
    /// positions, on the log as it is now (for a decision's `remaining`).
    pub(crate) fn units_in_window(&self, limit: u64, window_ns: u64, now_ns: u64) -> u64 {
        let end = self.load_next();
        // A keyed slot being reassigned: its log is no longer the decision's.
        if end >= crate::store::table::RESERVED {
            return 0;
        }
        let end = Self::position(end);
        // Times are sorted along positions: find the first position still in the window.
        let (mut low, mut high) = (end.saturating_sub(limit), end);
        while low < high {
            let middle = low + (high - low) / 2;
            if record::has_left(self.load_slot(middle), window_ns, now_ns) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        end - low
    }
}

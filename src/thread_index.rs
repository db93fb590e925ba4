//! Per-thread indices: the number of the calling thread (which stripe it uses), and the counting
//! slot it owns.
//!
//! - **Thread numbers.** A number given to each thread at its first check, from one counter,
//!   kept in a thread-local. No lock, and nothing that grows with the threads ever seen: a
//!   thread that ends takes its number with it, and numbers are reduced modulo the stripe
//!   count, so consecutive threads use consecutive stripes. The
//!   [`StripedLimiter`](crate::striped::StripedLimiter) picks its stripes with them, and the counters'
//!   shared stripes too.
//! - **Counting slots.** A process-wide registry of [`slot_count`] slots, one flag each. A
//!   thread that counts (a limiter's counters, the HTTP layer's statistics:
//!   `counters::stripes`) claims a free slot with a compare-and-swap (Acquire) before its first
//!   count ([`ready_to_count`], on the count's cold path: a thread whose [`owned_slot`] is
//!   [`NOT_OWNED`]) and owns it until it ends, when
//!   a thread-local's destructor frees it (a Release store); a later thread may then claim it.
//!   Every set of counters keeps one stripe per slot, which only the slot's owner writes: with a
//!   plain load and store, no locked instruction. A thread that owns no slot (all taken, or its
//!   thread-locals being destroyed) counts on shared stripes with `fetch_add`, and tries to
//!   claim a slot again every [`CLAIM_RETRY`] counts.
//!
//! # Why a load and a store lose no count
//!
//! At any moment a slot has at most one owner: claims are compare-and-swaps from free to taken,
//! and only the owner frees it. The owner's counts are program-ordered, and each owner's last
//! store to a stripe of its slot happens before the next owner's first load of it: the store is
//! sequenced before the owner's Release store that frees the slot, which the next owner's claim
//! reads (Acquire). So every load of an owned stripe reads the latest value in that stripe's
//! modification order (its own last store, or the previous owner's), and the store after it
//! adds to that value: the stripe's values only grow, and none is lost. The destructor marks
//! the thread as owning no slot before it frees the slot, so a count the thread makes later
//! (from another thread-local's destructor) goes to a shared stripe, never beside the next
//! owner. A reader summing with Relaxed loads after joining the counting threads reads their
//! last stores (a join also orders the thread's destructors before it, but the counts need only
//! their own stores, which precede the destructor).
//!
//! A thread whose destructor never runs (a process exiting, a thread-local first touched while
//! the thread's other thread-locals are being destroyed) keeps its slot for good: the registry
//! then has one slot fewer, and correctness is untouched. The slot a thread owns is read from a
//! thread-local with no destructor (one load, and readable to the end of the thread); the
//! destructor is a second thread-local's, touched only by a thread that owns no slot. One whose
//! guard can no longer be reached (`try_with` fails during or after its destruction) claims
//! nothing and counts on the shared stripes.

use crate::sync::{AtomicBool, Ordering, ThreadCounter};
use core::cell::Cell;

/// The number the next thread to check gets.
static NEXT_THREAD_NUMBER: ThreadCounter = ThreadCounter::new(0);

/// A thread that has not checked yet.
const UNNUMBERED: usize = usize::MAX;

std::thread_local! {
    static THREAD_NUMBER: Cell<usize> = const { Cell::new(UNNUMBERED) };
}

/// The calling thread's number (the caller reduces it to a stripe).
#[inline]
pub(crate) fn current() -> usize {
    THREAD_NUMBER.with(|number| {
        let assigned = number.get();
        if assigned != UNNUMBERED {
            return assigned;
        }
        assign(number)
    })
}

#[cold]
fn assign(number: &Cell<usize>) -> usize {
    // ORDERING: Relaxed: the counter only hands out distinct numbers; nothing else is ordered by
    // it. Wrapping after usize::MAX threads is harmless (the mask keeps any value in range), but
    // skips the marker.
    let mut assigned = NEXT_THREAD_NUMBER.fetch_add(1, crate::sync::Ordering::Relaxed);
    if assigned == UNNUMBERED {
        assigned = 0;
    }
    number.set(assigned);
    assigned
}

/// What [`owned_slot`] returns for a thread that owns no slot: above every slot, so a stripe
/// lookup by it finds none.
pub(crate) const NOT_OWNED: usize = usize::MAX;

/// The most slots the registry holds, on any machine.
#[cfg(not(nanolimit_loom))]
const MAX_SLOTS: usize = 256;

/// The fewest slots a machine gets (a small machine still runs a few threads).
#[cfg(not(nanolimit_loom))]
const MIN_SLOTS: usize = 8;

/// A thread that owns no slot tries to claim one again after this many counts: slots that
/// threads free as they end go to the threads still counting, at a cost of at most one scan of
/// the registry's flags (Relaxed loads) per this many counts.
#[cfg(not(nanolimit_loom))]
pub(crate) const CLAIM_RETRY: u32 = 4096;

/// Under loom: one slot, so that two threads race for it, and a thread that owns none retries at
/// every count, so that the models reach a claim after another thread's exit.
#[cfg(nanolimit_loom)]
const LOOM_SLOTS: usize = 1;
#[cfg(nanolimit_loom)]
pub(crate) const CLAIM_RETRY: u32 = 0;

/// The registry: `true` while a thread owns the slot. Only the first [`slot_count`] are used.
#[cfg(not(nanolimit_loom))]
static SLOTS: [AtomicBool; MAX_SLOTS] = [const { AtomicBool::new(false) }; MAX_SLOTS];

// Loom's atomics cannot be built in a `static`: its `lazy_static` gives each execution of a
// model a fresh registry.
#[cfg(nanolimit_loom)]
loom::lazy_static! {
    static ref SLOTS: [AtomicBool; LOOM_SLOTS] = core::array::from_fn(|_| AtomicBool::new(false));
}

/// How many slots threads may claim: twice the machine's hardware threads (a pool of one thread
/// per core, and as many others), at least 8, at most 256; fixed at the first call. Every set of
/// counters keeps this many owned stripes.
#[cfg(not(nanolimit_loom))]
pub(crate) fn slot_count() -> usize {
    static COUNT: crate::sync::OnceLock<usize> = crate::sync::OnceLock::new();
    *COUNT.get_or_init(|| {
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        (2 * parallelism).clamp(MIN_SLOTS, MAX_SLOTS)
    })
}

/// Under loom: [`LOOM_SLOTS`]. Touches the registry, so that the model's thread, which builds
/// the counters, creates it before any thread it spawns claims from it.
#[cfg(nanolimit_loom)]
pub(crate) fn slot_count() -> usize {
    SLOTS.len()
}

// Two thread-locals per thread. The slot it owns (or `NOT_OWNED`), read by every count: a
// `Cell` with no destructor, so that reading it is one load (std gives such a thread-local no
// state to check and no destructor to register: no call), and it stays readable while the
// thread's thread-locals are destroyed. And the guard whose destructor frees the slot, touched
// only by a thread that owns none, on the count's cold path (when it claims one).
#[cfg(not(nanolimit_loom))]
std::thread_local! {
    static OWNED_SLOT: Cell<usize> = const { Cell::new(NOT_OWNED) };
    static SLOT_GUARD: SlotGuard = const { SlotGuard::new() };
}

// Loom runs a model's threads on one OS thread: a std thread-local would be shared by all of
// them. Loom's own is per modelled thread, and loom drops it when that thread ends.
#[cfg(nanolimit_loom)]
loom::thread_local! {
    static OWNED_SLOT: Cell<usize> = Cell::new(NOT_OWNED);
    static SLOT_GUARD: SlotGuard = SlotGuard::new();
}

/// A thread's hold on its slot, in a thread-local: freed when the thread ends.
#[derive(Debug)]
struct SlotGuard {
    /// The slot the thread owns (as [`OWNED_SLOT`] says), or [`NOT_OWNED`].
    slot: Cell<usize>,
    /// Counts left before a thread that owns no slot tries to claim one (0: at its next count).
    claim_in: Cell<u32>,
}

impl SlotGuard {
    const fn new() -> Self {
        SlotGuard {
            slot: Cell::new(NOT_OWNED),
            claim_in: Cell::new(0),
        }
    }

    /// Frees the thread's slot, if it owns one (a thread that owns none touches nothing). The
    /// thread stops counting on it first: a count it makes afterwards (from another
    /// thread-local's destructor) finds no slot, and cannot claim one (this guard is being
    /// destroyed), so it goes to a shared stripe and never writes beside the slot's next owner.
    fn release(&self) {
        let slot = self.slot.replace(NOT_OWNED);
        if slot != NOT_OWNED {
            let _ = OWNED_SLOT.try_with(|owned| owned.set(NOT_OWNED));
            // ORDERING: Release: pairs with the Acquire compare-and-swap of the slot's next
            // owner (`claim`), so that every store this thread made to its stripes happens
            // before that owner's loads of them: its load and store continue from this
            // thread's last value.
            SLOTS[slot].store(false, Ordering::Release);
        }
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.release();
    }
}

/// Readies the calling thread to count: a thread that owns no slot claims one if it is due to
/// try (its first count, then every [`CLAIM_RETRY`] counts). Called by a count that found the
/// thread owning no slot ([`owned_slot`]), on its cold path: a thread that owns one never calls
/// it, so its count is a load, a bounds test and the add.
#[inline]
pub(crate) fn ready_to_count() {
    if OWNED_SLOT
        .try_with(Cell::get)
        .is_ok_and(|slot| slot == NOT_OWNED)
    {
        unowned_ready();
    }
}

/// [`ready_to_count`] for a thread that owns no slot: counts down to its next try, and tries.
#[cold]
#[inline(never)]
fn unowned_ready() {
    let _ = SLOT_GUARD.try_with(|guard| {
        let due_in = guard.claim_in.get();
        if due_in > 0 {
            guard.claim_in.set(due_in - 1);
            return;
        }
        guard.claim_in.set(CLAIM_RETRY);
        if guard.slot.get() != NOT_OWNED {
            return;
        }
        // The guard is registered (this `try_with` reached it), so its destructor will free
        // whatever slot is claimed now.
        let slot = claim();
        if slot != NOT_OWNED {
            guard.slot.set(slot);
            let _ = OWNED_SLOT.try_with(|owned| owned.set(slot));
        }
    });
}

/// The slot the calling thread owns, or [`NOT_OWNED`]. The counting hot path: one load, no
/// call.
#[inline]
pub(crate) fn owned_slot() -> usize {
    OWNED_SLOT.try_with(Cell::get).unwrap_or(NOT_OWNED)
}

/// Frees the calling thread's slot now, as its thread-local's destructor would: for the loom
/// models, whose threads call it as their last act. Loom 0.7 runs a modelled thread's
/// thread-local destructors only after the thread's `join` has returned (and after the model
/// has dropped its lazy statics, when the joining thread was the last: tokio-rs/loom#152,
/// #179), where std runs them before `join` returns.
#[cfg(nanolimit_loom)]
pub(crate) fn release_slot() {
    let _ = SLOT_GUARD.try_with(SlotGuard::release);
}

/// Claims a free slot, or returns [`NOT_OWNED`] if all are taken. Starts at the thread's number,
/// so that threads starting together try different slots first.
#[cold]
fn claim() -> usize {
    let count = slot_count();
    let start = current() % count;
    for offset in 0..count {
        let slot = (start + offset) % count;
        let flag = &SLOTS[slot];
        // ORDERING: Relaxed: a look before the compare-and-swap, so that a scan of taken slots
        // writes nothing; it orders nothing (the compare-and-swap below does).
        if flag.load(Ordering::Relaxed) {
            continue;
        }
        // ORDERING: Acquire on success: pairs with the Release store by which the slot's
        // previous owner freed it (`SlotGuard::release`), so that its stores to the slot's stripes
        // happen before this thread's loads of them. Relaxed on failure: nothing was claimed.
        if flag
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return slot;
        }
    }
    NOT_OWNED
}

#[cfg(all(test, not(nanolimit_loom)))]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn a_thread_keeps_its_number_and_threads_get_distinct_ones() {
        let mine = current();
        assert_eq!(current(), mine);
        let others: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(current).join().unwrap())
            .collect();
        let mut all = others.clone();
        all.push(mine);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "{others:?} and {mine}");
    }

    #[test]
    fn slot_counts_fit_the_registry() {
        assert!((MIN_SLOTS..=MAX_SLOTS).contains(&slot_count()));
    }

    #[test]
    fn a_thread_keeps_its_slot_and_threads_alive_at_once_own_distinct_ones() {
        // Four threads claim at once and hold their slots until all have looked. Other tests'
        // threads may hold slots too, so a thread may find none; those that own one own
        // distinct ones, and keep them.
        let barrier = Arc::new(Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    assert_eq!(
                        owned_slot(),
                        NOT_OWNED,
                        "nothing claimed before the first count"
                    );
                    ready_to_count();
                    let slot = owned_slot();
                    assert!(slot == NOT_OWNED || slot < slot_count(), "{slot}");
                    ready_to_count();
                    assert_eq!(owned_slot(), slot, "a thread keeps its slot");
                    barrier.wait();
                    slot
                })
            })
            .collect();
        let mut owned: Vec<usize> = threads
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .filter(|&slot| slot != NOT_OWNED)
            .collect();
        let claimed = owned.len();
        owned.sort_unstable();
        owned.dedup();
        assert_eq!(owned.len(), claimed, "two live threads owned one slot");
    }

    #[test]
    fn a_thread_that_owns_no_slot_tries_again_after_claim_retry_counts() {
        std::thread::spawn(|| {
            // As if the registry had been full at its first count.
            SLOT_GUARD.with(|guard| guard.claim_in.set(2));
            ready_to_count();
            ready_to_count();
            assert_eq!(owned_slot(), NOT_OWNED);
            assert_eq!(SLOT_GUARD.with(|guard| guard.claim_in.get()), 0);
            // The third tries (and may find every slot taken by other tests' threads).
            ready_to_count();
            let slot = owned_slot();
            assert!(slot == NOT_OWNED || slot < slot_count(), "{slot}");
            if slot == NOT_OWNED {
                assert_eq!(SLOT_GUARD.with(|guard| guard.claim_in.get()), CLAIM_RETRY);
            }
        })
        .join()
        .unwrap();
    }
}

//! Striped counters: a few `u64` counts kept on per-thread, cache-padded stripes, summed when
//! read. What a limiter's [`Counters`](super::Counters) and the HTTP layer's statistics count
//! on, so that threads counting at once do not all write one cache line.
//!
//! A set of counters keeps two kinds of stripes:
//!
//! - **Owned**, one per counting slot of the process (`thread_index`: a thread claims
//!   a slot at its first count and frees it when it ends). Only the slot's owner writes its
//!   stripe, so a count is a Relaxed load and a Relaxed store of the sum: no locked
//!   instruction. The slot's claim (Acquire) and release (Release) order one owner's stores
//!   before the next owner's loads, so no count is lost (the argument is in `thread_index`).
//! - **Shared**, for threads that own no slot (more threads alive than slots, or a thread whose
//!   thread-locals are being destroyed), picked by the thread's number (the mapping the
//!   [`StripedLimiter`](crate::striped::StripedLimiter) uses). A count there is a Relaxed `fetch_add`, so
//!   threads sharing a stripe lose nothing.
//!
//! A read sums every stripe with Relaxed loads: exact once the counting threads are joined (or
//! otherwise synchronised with the reader), and otherwise a value each field held at some moment
//! of the read, per stripe. Each stripe's values only grow (modulo 2^64), so a thread's later
//! read never sees a smaller value of a stripe than its earlier one.
//!
//! Memory: `(slots + shared stripes) × 128` bytes per set of counters (a stripe is padded to
//! 128 bytes, two cache lines, as `crossbeam_utils::CachePadded` pads on x86-64): slots are
//! twice the machine's hardware threads (at least 8, at most 256), shared stripes as many as
//! the hardware threads rounded up to a power of two (at most 64). 1.25 KiB on 2 hardware
//! threads, 24 KiB on 64.

use crate::sync::{AtomicU64, Ordering};
use crate::thread_index;
use crossbeam_utils::CachePadded;

/// The most shared stripes a set of counters gets by default, whatever the machine.
const MAX_DEFAULT_SHARED_STRIPES: usize = 64;

/// One stripe's `FIELDS` counts.
type Cells<const FIELDS: usize> = [AtomicU64; FIELDS];

/// `FIELDS` counts, striped per thread.
#[derive(Debug)]
pub(crate) struct Stripes<const FIELDS: usize> {
    /// One per counting slot (`thread_index::slot_count`), written only by the slot's owner.
    owned: Box<[CachePadded<Cells<FIELDS>>]>,
    /// For threads that own no slot, picked by thread number, written with `fetch_add`.
    shared: Box<[CachePadded<Cells<FIELDS>>]>,
    /// `shared.len() − 1` (a power of two less one).
    shared_mask: usize,
}

/// The stripe a count goes to, and how it may be written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stripe<'a, const FIELDS: usize> {
    /// The calling thread's own slot's stripe: nobody else writes it.
    Owned(&'a Cells<FIELDS>),
    /// A shared stripe: other threads may add to it at once.
    Shared(&'a Cells<FIELDS>),
}

impl<const FIELDS: usize> Stripe<'_, FIELDS> {
    /// Adds `amount` to `field` (wrapping, as every `u64` counter does past 2^64).
    #[inline]
    pub(crate) fn add(self, field: usize, amount: u64) {
        match self {
            Stripe::Owned(cells) => {
                let cell = &cells[field];
                // ORDERING: Relaxed load and store: this thread owns the stripe's slot, so it is
                // the stripe's only writer, and the load reads the stripe's latest value (this
                // thread's last store, or the previous owner's, which happens before it: the
                // owner's Release store that freed the slot pairs with this thread's Acquire
                // claim, `thread_index`). Readers sum with Relaxed loads; nothing else is
                // published through a count.
                let value = cell.load(Ordering::Relaxed);
                cell.store(value.wrapping_add(amount), Ordering::Relaxed);
            }
            Stripe::Shared(cells) => {
                // ORDERING: Relaxed: a statistic. The read-modify-write keeps every count when
                // threads share the stripe; nothing else is published through it, and readers
                // sum with Relaxed loads.
                cells[field].fetch_add(amount, Ordering::Relaxed);
            }
        }
    }
}

impl<const FIELDS: usize> Stripes<FIELDS> {
    /// Counters with one owned stripe per counting slot and `shared` shared stripes (rounded up
    /// to a power of two, at least 1), all zero.
    pub(crate) fn new(shared: usize) -> Self {
        let shared = shared.max(1).next_power_of_two();
        let stripes = |count: usize| -> Box<[CachePadded<Cells<FIELDS>>]> {
            (0..count)
                .map(|_| CachePadded::new(core::array::from_fn(|_| AtomicU64::new(0))))
                .collect()
        };
        Stripes {
            owned: stripes(thread_index::slot_count()),
            shared: stripes(shared),
            shared_mask: shared - 1,
        }
    }

    /// Counters with the default shared stripe count: the machine's hardware threads, rounded
    /// up to a power of two, at most 64 (one under loom, so that the models' threads that own
    /// no slot race on one stripe, whatever their numbers).
    pub(crate) fn for_this_machine() -> Self {
        if cfg!(nanolimit_loom) {
            return Self::new(1);
        }
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::new(parallelism.min(MAX_DEFAULT_SHARED_STRIPES))
    }

    /// The stripe of the slot the calling thread owns, or `None` if it owns none: the counting
    /// hot path, one thread-local load and a bounds test (a thread that owns no slot reads as
    /// [`thread_index::NOT_OWNED`], past every stripe), no call.
    #[inline]
    pub(crate) fn owned_stripe(&self) -> Option<&Cells<FIELDS>> {
        self.owned
            .get(thread_index::owned_slot())
            .map(|cells| &**cells)
    }

    /// The calling thread's stripe, for a thread that found it owns no slot
    /// ([`owned_stripe`](Self::owned_stripe)): claims one first if it is due to try
    /// ([`thread_index::ready_to_count`]), then its slot's stripe, or the shared stripe its
    /// number picks.
    #[cold]
    pub(crate) fn mine_after_claim(&self) -> Stripe<'_, FIELDS> {
        thread_index::ready_to_count();
        match self.owned.get(thread_index::owned_slot()) {
            Some(cells) => Stripe::Owned(cells),
            None => self.on_shared_stripe(thread_index::current()),
        }
    }

    /// Shared stripe `number` (reduced modulo the shared stripe count): for tests that pick the
    /// stripes their threads share, and for [`mine_after_claim`](Self::mine_after_claim).
    #[inline]
    pub(crate) fn on_shared_stripe(&self, number: usize) -> Stripe<'_, FIELDS> {
        Stripe::Shared(&self.shared[number & self.shared_mask])
    }

    /// Adds `amount` to `field` on the calling thread's stripe (wrapping, as every `u64`
    /// counter does past 2^64). The HTTP layer's statistics count through this.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    #[inline]
    pub(crate) fn add(&self, field: usize, amount: u64) {
        match self.owned_stripe() {
            Some(cells) => Stripe::Owned(cells).add(field, amount),
            None => self.mine_after_claim().add(field, amount),
        }
    }

    /// The sum of `field` over the stripes (wrapping).
    pub(crate) fn sum(&self, field: usize) -> u64 {
        self.owned
            .iter()
            .chain(self.shared.iter())
            // ORDERING: Relaxed, as the adds: a statistic, ordering nothing.
            .map(|stripe| stripe[field].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// The number of shared stripes.
    #[cfg(test)]
    pub(crate) fn shared_stripe_count(&self) -> usize {
        self.shared.len()
    }

    /// The number of owned stripes (the process's counting slots).
    #[cfg(test)]
    pub(crate) fn owned_stripe_count(&self) -> usize {
        self.owned.len()
    }
}

#[cfg(all(test, not(nanolimit_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn shared_stripe_counts_are_powers_of_two_and_the_default_fits_the_machine() {
        assert_eq!(Stripes::<1>::new(0).shared_stripe_count(), 1);
        assert_eq!(Stripes::<1>::new(3).shared_stripe_count(), 4);
        let default = Stripes::<1>::for_this_machine();
        let shared = default.shared_stripe_count();
        assert!(shared.is_power_of_two() && (1..=MAX_DEFAULT_SHARED_STRIPES).contains(&shared));
        assert_eq!(default.owned_stripe_count(), thread_index::slot_count());
    }

    #[test]
    fn threads_sharing_a_stripe_lose_no_count() {
        // One shared stripe for eight threads: every add lands on one line.
        let counters = Arc::new(Stripes::<2>::new(1));
        let threads: Vec<_> = (0..8)
            .map(|thread| {
                let counters = Arc::clone(&counters);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        counters.on_shared_stripe(thread).add(0, 1);
                        counters.on_shared_stripe(thread).add(1, 3);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(counters.sum(0), 80_000);
        assert_eq!(counters.sum(1), 240_000);
    }

    #[test]
    fn owned_and_shared_counts_add_up_over_waves_of_threads() {
        // More threads over the test than slots: later waves claim the slots earlier ones freed
        // (owned stripes continue from the previous owner's value), and any thread that finds
        // none (other tests hold some) counts on a shared stripe.
        let counters = Arc::new(Stripes::<2>::for_this_machine());
        let waves = thread_index::slot_count() / 4 + 2;
        for wave in 0..waves {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let counters = Arc::clone(&counters);
                    std::thread::spawn(move || {
                        for _ in 0..1_000 {
                            counters.add(0, 1);
                            counters.add(1, 2);
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            let threads_so_far = 8 * (wave as u64 + 1);
            assert_eq!(counters.sum(0), 1_000 * threads_so_far);
            assert_eq!(counters.sum(1), 2_000 * threads_so_far);
        }
    }

    #[test]
    fn sums_wrap_as_the_adds_do() {
        let counters = Stripes::<1>::new(4);
        counters.add(0, u64::MAX);
        counters.add(0, 2);
        counters.on_shared_stripe(1).add(0, u64::MAX);
        counters.on_shared_stripe(1).add(0, 2);
        assert_eq!(counters.sum(0), 2);
    }
}

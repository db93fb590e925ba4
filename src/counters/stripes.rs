//! Striped counters: a few `u64` counts kept on per-thread, cache-padded stripes, summed when
//! read. What a limiter's [`Counters`](super::Counters) and the HTTP layer's statistics count
//! on, so that threads counting at once do not all write one cache line.
//!
//! A thread counts on the stripe its number picks (`striped::thread_stripe`, the mapping the
//! [`StripedLimiter`](crate::StripedLimiter) uses: consecutive threads take consecutive
//! stripes). Every count is a Relaxed `fetch_add`, so two threads that share a stripe (more
//! threads than stripes) only share a cache line: no count is ever lost. A read sums the
//! stripes with Relaxed loads: exact once the counting threads are joined (or otherwise
//! synchronised with the reader), and otherwise a value each field held at some moment of the
//! read, per stripe.

use crate::striped::thread_stripe;
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// The most stripes a set of counters gets by default, whatever the machine.
const MAX_DEFAULT_STRIPES: usize = 256;

/// `FIELDS` counts, striped per thread.
#[derive(Debug)]
pub(crate) struct Stripes<const FIELDS: usize> {
    stripes: Box<[CachePadded<[AtomicU64; FIELDS]>]>,
    /// `stripes.len() − 1` (a power of two less one).
    stripe_mask: usize,
}

impl<const FIELDS: usize> Stripes<FIELDS> {
    /// Counters on `stripes` stripes (rounded up to a power of two, at least 1), all zero.
    pub(crate) fn new(stripes: usize) -> Self {
        let stripes = stripes.max(1).next_power_of_two();
        Stripes {
            stripes: (0..stripes)
                .map(|_| CachePadded::new(core::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            stripe_mask: stripes - 1,
        }
    }

    /// Counters with the default stripe count: twice the machine's hardware threads (as the
    /// striped limiter's stripes), rounded up to a power of two, at most 256. Threads numbered
    /// consecutively then count on lines of their own until there are more of them than that.
    pub(crate) fn for_this_machine() -> Self {
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::new((2 * parallelism).min(MAX_DEFAULT_STRIPES))
    }

    /// The calling thread's stripe.
    #[inline]
    pub(crate) fn mine(&self) -> &[AtomicU64; FIELDS] {
        self.on_stripe(thread_stripe::current())
    }

    /// Stripe `number` (reduced modulo the stripe count): for the loom models, which pick
    /// stripes explicitly, and for [`mine`](Self::mine).
    #[inline]
    pub(crate) fn on_stripe(&self, number: usize) -> &[AtomicU64; FIELDS] {
        &self.stripes[number & self.stripe_mask]
    }

    /// Adds `amount` to `field` on the calling thread's stripe (wrapping, as every `u64`
    /// counter does past 2^64). The HTTP layer's statistics count through this.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    #[inline]
    pub(crate) fn add(&self, field: usize, amount: u64) {
        // ORDERING: Relaxed: a statistic. The read-modify-write keeps every count even when
        // threads share a stripe; nothing else is published through it, and readers sum with
        // Relaxed loads.
        self.mine()[field].fetch_add(amount, Ordering::Relaxed);
    }

    /// The sum of `field` over the stripes (wrapping).
    pub(crate) fn sum(&self, field: usize) -> u64 {
        self.stripes
            .iter()
            // ORDERING: Relaxed, as the adds: a statistic, ordering nothing.
            .map(|stripe| stripe[field].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// The number of stripes.
    #[cfg(test)]
    pub(crate) fn stripe_count(&self) -> usize {
        self.stripes.len()
    }
}

#[cfg(all(test, not(nanolimit_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn stripe_counts_are_powers_of_two_and_the_default_fits_the_machine() {
        assert_eq!(Stripes::<1>::new(0).stripe_count(), 1);
        assert_eq!(Stripes::<1>::new(3).stripe_count(), 4);
        let default = Stripes::<1>::for_this_machine().stripe_count();
        assert!(default.is_power_of_two() && (2..=MAX_DEFAULT_STRIPES).contains(&default));
    }

    #[test]
    fn threads_sharing_a_stripe_lose_no_count() {
        // One stripe for eight threads: every add lands on one line.
        let counters = Arc::new(Stripes::<2>::new(1));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let counters = Arc::clone(&counters);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        counters.add(0, 1);
                        counters.add(1, 3);
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
    fn sums_wrap_as_the_adds_do() {
        let counters = Stripes::<1>::new(4);
        counters.add(0, u64::MAX);
        counters.add(0, 2);
        assert_eq!(counters.sum(0), 1);
    }
}

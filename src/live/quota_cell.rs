//! The quota cell: a quota that one writer at a time replaces while checks read it, lock-free
//! for the readers (a sequence lock over the quota's words).
//!
//! | word | meaning |
//! |---|---|
//! | `sequence` | even: the words hold a whole quota; odd: a writer is rewriting them. It only grows (2 per write) |
//! | `words[0..QUOTA_WORDS]` | the quota's encoding ([`Encoded`]) |
//!
//! # The protocol
//!
//! - **Write** (under the owner's lock, so one writer at a time): store `sequence + 1` (odd),
//!   then each word with Release, then `sequence + 2` (even) with Release.
//! - **Read** (lock-free): load `sequence` with Acquire; if odd, a write is under way: spin and
//!   start again. Load every word with Acquire, then `sequence` again; if it changed, a write
//!   overlapped the read: start again. Else the words are one write's, whole.
//!
//! # Why a read is never torn
//!
//! If a read loads any word that a write `W` stored, its Acquire load synchronises with that
//! Release store, which follows `W`'s odd store: the second load of `sequence` (after the
//! Acquire loads, which later loads cannot pass) sees the odd value or a later one, never the
//! even value loaded first (the sequence only grows), and the read starts again. A read that
//! loaded `W`'s final even value with Acquire sees all of `W`'s words, and it accepts them only
//! if no later write stored any word it loaded, by the same argument. So an accepted read holds
//! the words of exactly one write (or of the initial quota). A reader waits only while a write
//! is under way: seven stores.

use crate::quota::{Encoded, QUOTA_WORDS};
use crate::sync::{spin_loop, AtomicU64, Ordering};

/// A quota that checks read while `store` replaces it.
#[derive(Debug)]
pub(crate) struct QuotaCell {
    sequence: AtomicU64,
    words: [AtomicU64; QUOTA_WORDS],
}

impl QuotaCell {
    pub(crate) fn new<Q: Encoded>(quota: &Q) -> QuotaCell {
        let words = quota.to_words();
        QuotaCell {
            sequence: AtomicU64::new(0),
            words: core::array::from_fn(|index| AtomicU64::new(words[index])),
        }
    }

    /// The quota last stored, whole.
    #[inline]
    pub(crate) fn load<Q: Encoded>(&self) -> Q {
        loop {
            // ORDERING: Acquire, pairs with the Release store that ends a write: the words that
            // write stored are visible to the loads below.
            let before = self.sequence.load(Ordering::Acquire);
            if before & 1 == 0 {
                // ORDERING: Acquire, pairs with a writer's Release store of the word: a word
                // from a write makes that write's odd sequence visible to the load below (and
                // keeps that load after these).
                let words = core::array::from_fn(|index| self.words[index].load(Ordering::Acquire));
                // ORDERING: Relaxed; ordered after the word loads by their Acquire (see above).
                if self.sequence.load(Ordering::Relaxed) == before {
                    return Q::from_words(words);
                }
            }
            self.wait_for_writer();
        }
    }

    /// A write overlapped the read: let it finish.
    #[cold]
    fn wait_for_writer(&self) {
        spin_loop();
    }

    /// Replaces the quota. The caller serialises writers (one at a time).
    pub(crate) fn store<Q: Encoded>(&self, quota: &Q) {
        // ORDERING: Relaxed; writers are serialised by the caller's lock, which orders this
        // load after the previous writer's stores.
        let sequence = self.sequence.load(Ordering::Relaxed);
        // ORDERING: Relaxed; published to readers by the Release stores of the words below.
        self.sequence.store(sequence + 1, Ordering::Relaxed);
        for (word, value) in self.words.iter().zip(quota.to_words()) {
            // ORDERING: Release, pairs with the readers' Acquire loads of the words: a reader
            // that loads this value also sees the odd sequence stored above.
            word.store(value, Ordering::Release);
        }
        // ORDERING: Release, pairs with the readers' first Acquire load of the sequence: a
        // reader that loads this value sees every word stored above.
        self.sequence.store(sequence + 2, Ordering::Release);
    }
}

//! Slots: a key's identity words and its state word, which doubles as the slot's control word.
//!
//! | state word | meaning |
//! |---|---|
//! | [`VACANT`] | the slot never held a key |
//! | [`RESERVED`] | the slot is being (re)assigned under its shard's insert lock |
//! | anything else | a live algorithm state of the key the identity words name |
//!
//! No algorithm produces either marker (see the invariants of [`Quota`](crate::Quota)).

use crate::sync::{fence, AtomicU64, Ordering};

/// State word of a slot that never held a key.
pub(crate) const VACANT: u64 = u64::MAX;
/// State word of a slot being (re)assigned under its shard's insert lock.
pub(crate) const RESERVED: u64 = u64::MAX - 1;

/// The operations the table needs from a slot.
pub trait SlotOps: Send + Sync + Sized {
    /// The table allocates `capacity + capacity / HEADROOM_DIVISOR` slots.
    const HEADROOM_DIVISOR: usize;
    /// The identity words of a key.
    type Identity: Copy + Eq;
    /// A slot holding no key.
    fn vacant() -> Self;
    /// The state word.
    fn state(&self) -> &AtomicU64;
    /// `identity` in two words (the second zero for one-word identities): how a reservation
    /// names its key without naming the key mode.
    fn identity_words(identity: &Self::Identity) -> [u64; 2];
    /// The identity [`identity_words`](Self::identity_words) made `words` of.
    fn identity_from_words(words: [u64; 2]) -> Self::Identity;
    /// Whether the identity words equal `identity`.
    fn holds(&self, identity: &Self::Identity) -> bool;
    /// Overwrites the identity words (only while the state word is `RESERVED` or `VACANT`,
    /// after a Release fence if it was claimed from another key).
    fn set_identity(&self, identity: &Self::Identity);
    /// After [`holds`](Self::holds) matched for a state loaded as `observed`: whether the state
    /// is still `observed`, which proves the identity words read belonged to it (no
    /// reassignment overwrote them meanwhile). Decisions that no compare-and-swap confirms
    /// (denials, peeks) need this; admissions are confirmed by their CAS.
    fn unchanged_since(&self, observed: u64) -> bool;
}

/// A slot with `WORDS` identity words: one for [`Hashed`](super::Hashed) keys (16 bytes), two
/// for [`Exact`](super::Exact) keys (24 bytes).
#[derive(Debug)]
#[repr(C)]
pub struct Slot<const WORDS: usize> {
    state: AtomicU64,
    identity: [AtomicU64; WORDS],
}

impl<const WORDS: usize> SlotOps for Slot<WORDS> {
    type Identity = [u64; WORDS];
    /// Half again as many one-word slots as keys, a quarter more two-word ones: the largest
    /// headroom that keeps a key's share of slots and hints within 26 resp. 32 bytes (see the
    /// `keyed` module's sizing table for what each gives in live keys).
    const HEADROOM_DIVISOR: usize = if WORDS == 1 { 2 } else { 4 };

    fn vacant() -> Self {
        Slot {
            identity: core::array::from_fn(|_| AtomicU64::new(0)),
            state: AtomicU64::new(VACANT),
        }
    }

    fn identity_words(identity: &[u64; WORDS]) -> [u64; 2] {
        let mut words = [0; 2];
        words[..WORDS].copy_from_slice(identity);
        words
    }

    fn identity_from_words(words: [u64; 2]) -> [u64; WORDS] {
        core::array::from_fn(|index| words[index])
    }

    #[inline]
    fn state(&self) -> &AtomicU64 {
        &self.state
    }

    #[inline]
    fn holds(&self, identity: &[u64; WORDS]) -> bool {
        // ORDERING: Relaxed. The caller loaded the state word with Acquire (directly or via the
        // driver's failed CAS), which synchronises with the Release store that published these
        // words. A reassignment racing with this read may make it newer, or (with two words)
        // torn, so a match is only trusted once something confirms the state did not change:
        // the check's CAS for an admission, `unchanged_since` otherwise.
        self.identity
            .iter()
            .zip(identity)
            .all(|(word, expected)| word.load(Ordering::Relaxed) == *expected)
    }

    #[inline]
    fn unchanged_since(&self, observed: u64) -> bool {
        // ORDERING: the Acquire fence keeps the identity reads before the load below, and pairs
        // with the Release fence an inserter issues after claiming the slot and before
        // rewriting its identity (`claim` in the protocol): if any identity word read was already
        // rewritten, the claim happens before this load, which then cannot return `observed`
        // (a claimed slot's word never returns to an earlier value; see the protocol).
        fence(Ordering::Acquire);
        // ORDERING: Relaxed; ordered by the fence above.
        self.state.load(Ordering::Relaxed) == observed
    }

    #[inline]
    fn set_identity(&self, identity: &[u64; WORDS]) {
        for (word, value) in self.identity.iter().zip(identity) {
            // ORDERING: Relaxed; published by the Release store of the state word that follows
            // (see `publish` in the protocol).
            word.store(*value, Ordering::Relaxed);
        }
    }
}

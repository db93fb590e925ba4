//! What a state word means to the store that keeps it ([`SlotState`]).

use core::fmt::Debug;

/// What a store needs to know of a state word, whatever the word counts (a rate quota's state,
/// a key's units in flight): when it is as good as a key never seen, how soon a live one will
/// be, and the time words of the keyed table's floor for new keys. Implemented by every
/// [`Quota`](super::Quota) and by the keyed in-flight limiter's count
/// ([`Concurrency`](super::Concurrency)). A `pub` trait in a private module: nameable only
/// inside the crate, so the public [`Quota`](super::Quota) can build on it without exposing it.
///
/// Invariants a store relies on, beside each quota's own:
/// - a word equal to [`FIRST`](Self::FIRST) is a key never seen;
/// - a word a step writes is strictly greater than the word it replaces, and than any word
///   [equivalent to fresh](Self::freshness_rank) at a time no later than its reading (the keyed
///   table's argument against ABA rests on it; the exceptions are stated where they arise);
/// - the two largest `u64` values are never written (the table's slot markers).
pub trait SlotState: Copy + Send + Sync + Debug + 'static {
    /// "Now" in the state's own units, computed once per call from a
    /// [`Timestamp`](crate::Timestamp).
    type Instant: Copy + Debug + Send + Sync;

    /// The word of a key never seen before: what a new key's first step starts from.
    const FIRST: u64 = 0;

    /// `None` if `word` is equivalent at `now` to a key never seen (a keyed table may then
    /// reuse its slot for another key), else a rank ordering live words by how soon they
    /// become so: of two words seen at one `now`, the one with the smaller rank frees no later.
    fn freshness_rank(&self, word: u64, now: Self::Instant) -> Option<u64>;

    /// `now` as a time word: a `u64` that orders instants as time does (GCRA: its ticks;
    /// windows: nanoseconds since the clock's origin), the same for every quota sharing this
    /// state, for the keyed table's floor for new keys. States without time keep the default.
    fn time_word(&self, _now: Self::Instant) -> u64 {
        0
    }

    /// `now`, or the instant of `time_word` (a [`time_word`](Self::time_word)) if that is
    /// later.
    fn no_earlier_than(&self, now: Self::Instant, _time_word: u64) -> Self::Instant {
        now
    }

    /// For a `word` fresh at `now`: a time word no later than `now` and no earlier than the
    /// moment the word became fresh.
    fn fresh_since_word(&self, _word: u64, _now: Self::Instant) -> u64 {
        0
    }
}

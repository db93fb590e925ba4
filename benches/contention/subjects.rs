//! The limiters under test, behind two small traits so that one generic loop drives them all
//! (monomorphised: no dynamic dispatch in the measured loop), plus the floor operations: direct
//! limiters behind [`DirectSubject`] (reserving ones through [`Reserving`]), keyed ones behind
//! the [`KeyedSubject`] trait every keyed benchmark shares (`benches/shared/keyed_subjects.rs`),
//! which nanolimit's and governor's keyed limiters implement there and the mutex-hashmap here.

use crate::keyed_subjects::{
    table_report, table_stored_keys, table_untracked_new_keys, unbounded_map_report, KeyedSubject,
};
use crate::measure::{Outcome, Worker, ALLOWED, LEGITIMATE_ALLOWED};
use crate::quota_spec::QuotaSpec;
use crossbeam_utils::CachePadded;
use nanolimit::sliding_log::KeyedSlidingLogLimiter;
use nanolimit::{Clock, Gcra, QuantaClock, Quota, Timestamp, WhenFull};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// A limiter with one state shared by every caller.
pub trait DirectSubject: Sync {
    /// One unit-cost check against the limiter's own clock.
    fn check(&self) -> bool;

    /// The most units the limiter may admit over a run beyond what its quota admits, by its
    /// own contract: 0 for an exact limiter; a striped limiter's
    /// [`over_admission_bound`](nanolimit::striped::StripedLimiter::over_admission_bound). Added to the
    /// bound the row's accuracy is judged against.
    fn over_admission_bound(&self) -> u64 {
        0
    }
}

/// A direct limiter, counted or not: one impl per counters type (`RateLimit` would also do,
/// but through a key the direct check ignores).
macro_rules! direct_subject {
    ($($counters:ty),+) => {$(
        impl<Q: Quota> DirectSubject for nanolimit::Limiter<Q, QuantaClock, $counters> {
            #[inline]
            fn check(&self) -> bool {
                nanolimit::Limiter::check(self).is_allowed()
            }
        }
    )+};
}

direct_subject!(
    nanolimit::counters::NoCounters,
    nanolimit::counters::Counters
);

/// One GCRA budget leased into per-thread stripes: each call checks one unit on the calling
/// thread's stripe, on the limiter's own clock, as the plain GCRA limiter's `check()`.
impl DirectSubject for nanolimit::striped::StripedLimiter {
    #[inline]
    fn check(&self) -> bool {
        nanolimit::striped::StripedLimiter::check(self).is_allowed()
    }

    fn over_admission_bound(&self) -> u64 {
        nanolimit::striped::StripedLimiter::over_admission_bound(self)
    }
}

/// A direct limiter driven by reservations (the direct-reserve scenario): each call reserves
/// one unit with `reserve()` (on the limiter's own clock, as [`DirectSubject::check`] reads it)
/// and counts as allowed when the reservation was granted at once, with zero delay (the caller
/// reads its start, as one that sleeps until it would: so computing it is part of the cost).
pub struct Reserving<L>(pub L);

impl DirectSubject for Reserving<nanolimit::Limiter<Gcra>> {
    #[inline]
    fn check(&self) -> bool {
        let reservation = self.0.reserve();
        reservation.is_allowed() && reservation.delay().is_zero()
    }
}

impl DirectSubject for nanolimit::sliding_log::SlidingLogLimiter {
    #[inline]
    fn check(&self) -> bool {
        nanolimit::sliding_log::SlidingLogLimiter::check(self).is_allowed()
    }
}

impl DirectSubject for governor::DefaultDirectRateLimiter {
    #[inline]
    fn check(&self) -> bool {
        governor::DefaultDirectRateLimiter::check(self).is_ok()
    }
}

impl DirectSubject for ratelimit::Ratelimiter {
    #[inline]
    fn check(&self) -> bool {
        self.try_wait().is_ok()
    }
}

/// The token bucket most people write first: `Mutex<HashMap<key, (tokens, last refill)>>`,
/// fractional tokens in an `f64`, std's default hasher, no bound on the number of keys.
#[derive(Debug)]
pub struct MutexHashMap {
    buckets: Mutex<HashMap<u64, (f64, Instant)>>,
    tokens_per_second: f64,
    capacity: f64,
}

impl MutexHashMap {
    /// A bucket per key refilling at the quota's rate, holding up to `quota.burst` tokens (new
    /// keys start full).
    pub fn new(quota: &QuotaSpec) -> Self {
        MutexHashMap {
            buckets: Mutex::new(HashMap::new()),
            tokens_per_second: quota.rate_per_second(),
            capacity: quota.burst as f64,
        }
    }

    fn keys(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .len()
    }

    #[inline]
    fn take(&self, key: u64, now: Instant) -> bool {
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let (tokens, last_refill) = buckets.entry(key).or_insert((self.capacity, now));
        let elapsed_seconds = now.saturating_duration_since(*last_refill).as_secs_f64();
        *tokens = (*tokens + elapsed_seconds * self.tokens_per_second).min(self.capacity);
        *last_refill = now.max(*last_refill);
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl KeyedSubject for MutexHashMap {
    const NAME: &'static str = "mutex_hashmap";

    type Timestamp = Instant;

    /// Unbounded: `capacity` is ignored.
    fn build(quota: &QuotaSpec, _capacity: usize) -> Self {
        MutexHashMap::new(quota)
    }

    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    #[inline]
    fn check_at(&self, key: u64, now: Instant) -> bool {
        self.take(key, now)
    }

    /// Takes no caller time: reads `Instant::now()`.
    #[inline]
    fn check_at_caller_ns(&self, key: u64, _caller_ns: u64) -> bool {
        self.check(key)
    }

    fn stored_keys(&self) -> u64 {
        self.keys() as u64
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    fn state_report(&self) -> String {
        unbounded_map_report(self.keys())
    }
}

/// nanolimit's keyed sliding log on its default clock (a check reads it), refusing new keys
/// when full, as the keyed rate limiters' subjects do.
impl KeyedSubject for KeyedSlidingLogLimiter<u64> {
    const NAME: &'static str = "nanolimit_sliding_log";

    type Timestamp = Timestamp;

    fn build(quota: &QuotaSpec, capacity: usize) -> Self {
        KeyedSlidingLogLimiter::<u64>::builder(quota.sliding_log())
            .capacity(capacity)
            .when_full(WhenFull::Deny)
            .build()
            .expect("a keyed sliding log within memory")
    }

    #[inline]
    fn now(&self) -> Timestamp {
        KeyedSlidingLogLimiter::now(self)
    }

    #[inline]
    fn check_at(&self, key: u64, now: Timestamp) -> bool {
        KeyedSlidingLogLimiter::check_at(self, &key, now).is_allowed()
    }

    /// Takes no caller time: reads its own clock.
    #[inline]
    fn check_at_caller_ns(&self, key: u64, _caller_ns: u64) -> bool {
        KeyedSlidingLogLimiter::check(self, &key).is_allowed()
    }

    fn stored_keys(&self) -> u64 {
        table_stored_keys(&self.stats())
    }

    fn untracked_new_keys(&self) -> u64 {
        table_untracked_new_keys(&self.stats())
    }

    fn state_report(&self) -> String {
        table_report(self.bytes_per_key(), &self.stats())
    }
}

#[inline]
fn outcome(allowed: bool, legitimate: bool) -> Outcome {
    Outcome::from(allowed) * ALLOWED + Outcome::from(allowed && legitimate) * LEGITIMATE_ALLOWED
}

/// Loop body of the direct scenarios.
pub struct DirectWorker<'a, S> {
    /// The shared limiter.
    pub subject: &'a S,
}

impl<S: DirectSubject> Worker for DirectWorker<'_, S> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        outcome(self.subject.check(), false)
    }
}

/// Where a keyed worker's keys come from; `next_key` also says whether the key is one of the
/// keyed-flood scenario's legitimate hot keys.
pub trait KeySource {
    /// The next key to check.
    fn next_key(&mut self) -> (u64, bool);
}

/// Loop body of the keyed scenarios: one check of the next key, on the limiter's clock.
pub struct KeyedWorker<'a, S, K> {
    /// The shared limiter.
    pub subject: &'a S,
    /// This thread's keys.
    pub keys: K,
}

impl<S: KeyedSubject, K: KeySource> Worker for KeyedWorker<'_, S, K> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        let (key, legitimate) = self.keys.next_key();
        outcome(self.subject.check(key), legitimate)
    }
}

/// Checks per caller-supplied timestamp in the packet loop.
pub const PACKET_BATCH: u32 = 32;

/// Loop body of the packet loop: one clock read per batch of [`PACKET_BATCH`] checks, each
/// check given that reading.
pub struct PacketWorker<'a, S: KeyedSubject, K> {
    /// The shared limiter.
    pub subject: &'a S,
    /// This thread's flows.
    pub keys: K,
    /// The batch's timestamp.
    pub now: S::Timestamp,
    /// Checks left before the next clock read.
    pub left_in_batch: u32,
}

impl<'a, S: KeyedSubject, K> PacketWorker<'a, S, K> {
    /// A worker whose first operation reads the clock.
    pub fn new(subject: &'a S, keys: K) -> Self {
        PacketWorker {
            subject,
            keys,
            now: subject.now(),
            left_in_batch: 0,
        }
    }
}

impl<S: KeyedSubject, K: KeySource> Worker for PacketWorker<'_, S, K> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        if self.left_in_batch == 0 {
            self.now = self.subject.now();
            self.left_in_batch = PACKET_BATCH;
        }
        self.left_in_batch -= 1;
        let (key, legitimate) = self.keys.next_key();
        outcome(self.subject.check_at(key, self.now), legitimate)
    }
}

/// Floor: one read of the clock nanolimit uses by default.
pub struct ClockReadFloor {
    /// The clock.
    pub clock: QuantaClock,
}

impl Worker for ClockReadFloor {
    #[inline]
    fn operate(&mut self) -> Outcome {
        black_box(self.clock.now());
        ALLOWED
    }
}

/// Floor: one load and one compare-and-swap on this thread's own cache-padded word (no sharing:
/// the cheapest possible limiter update), with the orderings nanolimit's driver uses.
pub struct CasFloor {
    /// This thread's word (allocated by the thread itself).
    pub word: Box<CachePadded<AtomicU64>>,
}

impl CasFloor {
    /// A floor worker with a fresh word.
    pub fn new() -> Self {
        CasFloor {
            word: Box::new(CachePadded::new(AtomicU64::new(0))),
        }
    }
}

/// direct-allow-counted's floor: what a counted allowed check cannot avoid. A compare-and-swap
/// on one word shared by every thread (the limiter's state), then a Relaxed `fetch_add` on a
/// cache line of the thread's own (its stripe of counters).
pub struct CasFetchAddFloor<'shared> {
    /// The word every thread swaps.
    pub shared: &'shared CachePadded<AtomicU64>,
    /// This thread's count (allocated by the thread itself).
    pub own: Box<CachePadded<AtomicU64>>,
}

impl<'shared> CasFetchAddFloor<'shared> {
    /// The word the threads share.
    pub fn shared_word() -> CachePadded<AtomicU64> {
        CachePadded::new(AtomicU64::new(0))
    }

    /// A floor worker on `shared`, with a fresh count of its own.
    pub fn new(shared: &'shared CachePadded<AtomicU64>) -> Self {
        CasFetchAddFloor {
            shared,
            own: Box::new(CachePadded::new(AtomicU64::new(0))),
        }
    }
}

impl Worker for CasFetchAddFloor<'_> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        let swapped = compare_and_swap(self.shared, 1);
        self.own.fetch_add(1, Ordering::Relaxed);
        Outcome::from(swapped)
    }
}

#[inline]
fn compare_and_swap(word: &AtomicU64, add: u64) -> bool {
    let observed = word.load(Ordering::Acquire);
    word.compare_exchange_weak(
        observed,
        observed.wrapping_add(add),
        Ordering::AcqRel,
        Ordering::Acquire,
    )
    .is_ok()
}

impl Worker for CasFloor {
    #[inline]
    fn operate(&mut self) -> Outcome {
        Outcome::from(compare_and_swap(&self.word, 1))
    }
}

/// A many-key scenario's floor (`random-line-cas`): what a keyed check must cost at least when
/// its table is larger than the caches. The key's ahash picks one cache line of an array of
/// 64-byte lines as large as nanolimit's hashed table for the scenario's capacity, and one
/// compare-and-swap updates it: no clock read, no probing, no identity check. Driven like any
/// keyed subject, so it follows the scenario's key sequence.
pub struct RandomLineCasFloor {
    hasher: ahash::RandomState,
    lines: Box<[Line]>,
}

/// One 64-byte cache line holding one word (`CachePadded` pads to 128 bytes on x86-64, which
/// would double the array).
#[repr(align(64))]
struct Line(AtomicU64);

impl KeyedSubject for RandomLineCasFloor {
    const NAME: &'static str = "floor_random_line_cas";

    type Timestamp = ();

    fn build(quota: &QuotaSpec, capacity: usize) -> Self {
        let table_bytes = nanolimit::KeyedLimiter::<u64, _>::builder(quota.gcra())
            .capacity(capacity)
            .build()
            .expect("valid table")
            .memory_bytes();
        let line_count = (table_bytes / 64).max(1);
        RandomLineCasFloor {
            hasher: ahash::RandomState::with_seeds(1, 2, 3, 4),
            lines: (0..line_count).map(|_| Line(AtomicU64::new(0))).collect(),
        }
    }

    #[inline]
    fn now(&self) {}

    #[inline]
    fn check_at(&self, key: u64, _now: ()) -> bool {
        let hash = self.hasher.hash_one(key);
        let index = ((hash as u128 * self.lines.len() as u128) >> 64) as usize;
        compare_and_swap(&self.lines[index].0, 1)
    }

    #[inline]
    fn check_at_caller_ns(&self, key: u64, _caller_ns: u64) -> bool {
        self.check_at(key, ())
    }

    fn stored_keys(&self) -> u64 {
        0
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    fn state_report(&self) -> String {
        let bytes = self.lines.len() * core::mem::size_of::<Line>();
        format!(
            "{} lines of 64 B, {:.1} MB (as nanolimit's table)",
            self.lines.len(),
            bytes as f64 / 1e6
        )
    }
}

/// Floor: ahash of a new key, then a compare-and-swap as in [`CasFloor`] (what a keyed check
/// costs with every slot in L1 and no probing).
pub struct AhashCasFloor {
    /// The hasher (fixed seeds).
    pub hasher: ahash::RandomState,
    /// The next key.
    pub key: u64,
    /// This thread's word.
    pub word: Box<CachePadded<AtomicU64>>,
}

impl AhashCasFloor {
    /// A floor worker with a fresh word.
    pub fn new() -> Self {
        AhashCasFloor {
            hasher: ahash::RandomState::with_seeds(1, 2, 3, 4),
            key: 0,
            word: Box::new(CachePadded::new(AtomicU64::new(0))),
        }
    }
}

impl Worker for AhashCasFloor {
    #[inline]
    fn operate(&mut self) -> Outcome {
        self.key = self.key.wrapping_add(1);
        let hash = self.hasher.hash_one(self.key);
        Outcome::from(compare_and_swap(&self.word, hash | 1))
    }
}

//! The composite-2 scenario: every thread cycles through its own [`KEYS_PER_THREAD`] keys and
//! checks each against a composite of two limits: a per-key GCRA (a `KeyedLimiter`) and a
//! global GCRA shared by all threads (a direct `Limiter`), `nanolimit::composite::Composite`
//! with the keyed member first. Both quotas are far above what the threads offer, so every
//! check passes both members, and the rows price the composite on its pass path (one clock
//! read, then each member's own check: a keyed lookup and compare-and-swap, then a
//! compare-and-swap on the shared word), the common one. Four rows:
//!
//! - `nanolimit` (`gcra+gcra`): the composite, `check(&key)`.
//! - `nanolimit` (`gcra+gcra-striped`): the same composite with the global GCRA a
//!   `StripedLimiter` (its defaults: twice as many stripes as hardware threads, leases up to
//!   256 units living 10 ms), last, where it admits from the calling thread's stripe: the
//!   composite for a global limit that many cores share.
//! - `nanolimit` (`gcra`): the per-key member alone, `check(&key)` on the same keys and quota,
//!   so that the composite's cost over one check can be read in the same run (the issue's
//!   target: at most 2.2).
//! - `floor` (`two-cas`): the work a composite of these two needs at least, with no limiter:
//!   one clock read, an ahash of the key and a load and compare-and-swap on the thread's own
//!   word (the per-key slot), then a load and compare-and-swap on one cache-padded word shared
//!   by all threads (the global limit).
//!
//! A call counts as allowed when the check passed (the floor's always do). Accuracy is not
//! reported: the quotas are never reached.

use crate::measure::{measure, Outcome, Worker, ALLOWED};
use crate::quota_spec::QuotaSpec;
use crate::quotas::AlgorithmKind;
use crate::{Context, Job, LimiterKind, MeasuredRun};
use crossbeam_utils::CachePadded;
use nanolimit::composite::Composite;
use nanolimit::striped::StripedLimiter;
use nanolimit::RateLimit;
use nanolimit::{Clock, Gcra, KeyedLimiter, Limiter, QuantaClock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Keys each thread cycles through (its own: thread `t` checks `t · 2^32 + 0 .. KEYS_PER_THREAD`).
pub const KEYS_PER_THREAD: u64 = 1_024;
/// The per-key quota: far above what a key gets (a few hundred thousand checks per second).
pub const PER_KEY_QUOTA: QuotaSpec = QuotaSpec::per_second(100_000_000, 1_000_000);
/// The global quota: far above what all threads offer together.
pub const GLOBAL_QUOTA: QuotaSpec = QuotaSpec::per_second(1_000_000_000, 1_000_000);

/// Thread `thread_index`'s keys, in a cycle.
struct Keys {
    base: u64,
    next: u64,
}

impl Keys {
    fn new(thread_index: usize) -> Self {
        Keys {
            base: (thread_index as u64) << 32,
            next: 0,
        }
    }

    #[inline]
    fn next_key(&mut self) -> u64 {
        self.next = (self.next + 1) % KEYS_PER_THREAD;
        self.base + self.next
    }
}

type PerKey = KeyedLimiter<u64, Gcra>;

/// The composite of the per-key GCRA and the global GCRA (`Global`: a plain or a striped
/// limiter).
struct CompositeWorker<'limits, Global> {
    limits: Composite<(&'limits PerKey, &'limits Global)>,
    keys: Keys,
}

impl<Global: RateLimit<u64>> Worker for CompositeWorker<'_, Global> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        let key = self.keys.next_key();
        if self.limits.check(&key).is_allowed() {
            ALLOWED
        } else {
            0
        }
    }
}

/// The per-key GCRA alone.
struct SingleCheckWorker<'limiter> {
    limiter: &'limiter PerKey,
    keys: Keys,
}

impl Worker for SingleCheckWorker<'_> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        let key = self.keys.next_key();
        if self.limiter.check(&key).is_allowed() {
            ALLOWED
        } else {
            0
        }
    }
}

/// The floor: a clock read, ahash and a compare-and-swap on the thread's own word, then a
/// compare-and-swap on one shared word.
struct TwoCasFloor<'word> {
    clock: QuantaClock,
    hasher: ahash::RandomState,
    keys: Keys,
    own: Box<CachePadded<AtomicU64>>,
    shared: &'word CachePadded<AtomicU64>,
}

/// A load and one compare-and-swap attempt, adding `add` to what is there.
#[inline]
fn load_and_swap(word: &AtomicU64, add: u64) -> bool {
    let observed = word.load(Ordering::Acquire);
    word.compare_exchange_weak(
        observed,
        observed.wrapping_add(add),
        Ordering::AcqRel,
        Ordering::Acquire,
    )
    .is_ok()
}

impl Worker for TwoCasFloor<'_> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        let now_ns = self.clock.now().as_ns();
        let hash = self.hasher.hash_one(self.keys.next_key());
        let own = load_and_swap(&self.own, hash | 1);
        let shared = load_and_swap(self.shared, now_ns | 1);
        std::hint::black_box((own, shared));
        ALLOWED
    }
}

fn per_key_limiter(threads: usize) -> PerKey {
    KeyedLimiter::builder(PER_KEY_QUOTA.gcra())
        .capacity((KEYS_PER_THREAD as usize * threads).max(1_024))
        .build()
        .expect("a valid keyed table")
}

/// One composite-2 measurement: `job.algorithm` is `GcraPlusGcra`, `GcraPlusGcraStriped`,
/// `Gcra` (nanolimit) or `TwoCas` (the floor).
pub fn run(job: Job, context: &Context) -> MeasuredRun {
    let (threads, timing) = (job.threads, context.timing);
    let (measurement, state_report) = match (job.limiter, job.algorithm) {
        (LimiterKind::Nanolimit, AlgorithmKind::GcraPlusGcra) => {
            let per_key = per_key_limiter(threads);
            let global = Limiter::new(GLOBAL_QUOTA.gcra());
            let (per_key, global) = (&per_key, &global);
            let measurement = measure(threads, timing, |thread_index| CompositeWorker {
                limits: Composite::new((per_key, global)),
                keys: Keys::new(thread_index),
            });
            let report = format!(
                "per-key entries {}, global remaining {}",
                per_key.entries(),
                global.peek().remaining()
            );
            (measurement, Some(report))
        }
        (LimiterKind::Nanolimit, AlgorithmKind::GcraPlusGcraStriped) => {
            let per_key = per_key_limiter(threads);
            let global = StripedLimiter::new(GLOBAL_QUOTA.gcra());
            let (per_key, global) = (&per_key, &global);
            let measurement = measure(threads, timing, |thread_index| CompositeWorker {
                limits: Composite::new((per_key, global)),
                keys: Keys::new(thread_index),
            });
            let report = format!(
                "per-key entries {}, global budget remaining {} ({} stripes)",
                per_key.entries(),
                global.quota_remaining(),
                global.stripes()
            );
            (measurement, Some(report))
        }
        (LimiterKind::Nanolimit, AlgorithmKind::Gcra) => {
            let per_key = per_key_limiter(threads);
            let limiter = &per_key;
            let measurement = measure(threads, timing, |thread_index| SingleCheckWorker {
                limiter,
                keys: Keys::new(thread_index),
            });
            (measurement, Some(format!("entries {}", per_key.entries())))
        }
        (LimiterKind::Floor, AlgorithmKind::TwoCas) => {
            let shared = CachePadded::new(AtomicU64::new(0));
            let shared = &shared;
            let measurement = measure(threads, timing, |thread_index| TwoCasFloor {
                clock: QuantaClock::new(),
                hasher: ahash::RandomState::with_seeds(1, 2, 3, 4),
                keys: Keys::new(thread_index),
                own: Box::new(CachePadded::new(AtomicU64::new(0))),
                shared,
            });
            (measurement, None)
        }
        other => unreachable!("composite-2 has no {other:?} row"),
    };
    MeasuredRun {
        measurement,
        // The quotas are never reached: no span to bound admissions over.
        lifetime: Duration::ZERO,
        over_admission_bound: 0,
        state_report,
    }
}

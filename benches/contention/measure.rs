//! The measurement engine: threads released together by a barrier, a warm-up that is not
//! counted, then a measured phase of the requested length. Each thread counts its own
//! operations and admissions in locals and hands them back when it stops.

use std::hint::black_box;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// One operation's outcome, as a bit set: [`ALLOWED`] and [`LEGITIMATE_ALLOWED`].
pub type Outcome = u32;
/// The check admitted the request.
pub const ALLOWED: Outcome = 1;
/// The check admitted a request of one of the keyed-flood scenario's legitimate hot keys.
pub const LEGITIMATE_ALLOWED: Outcome = 2;

/// The per-thread loop body: one rate-limit check (or one floor operation) per call.
pub trait Worker {
    /// Performs one operation and reports its outcome.
    fn operate(&mut self) -> Outcome;
}

/// Operations between two looks at the shared phase flag: small enough that a thread notices
/// the end of a phase within about a microsecond, large enough that the look costs nothing.
const OPERATIONS_PER_PHASE_CHECK: u64 = 64;

const PHASE_WARM_UP: u8 = 0;
const PHASE_MEASURE: u8 = 1;
const PHASE_STOP: u8 = 2;

/// How long each phase runs.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Uncounted run before the measured phase (caches, branch predictors, table fill).
    pub warm_up: Duration,
    /// The measured phase.
    pub measured: Duration,
}

/// What one thread did.
#[derive(Debug, Clone, Copy)]
pub struct ThreadCounts {
    /// Operations in the measured phase.
    pub measured_operations: u64,
    /// Admissions in the measured phase.
    pub measured_allowed: u64,
    /// Operations over the whole run, warm-up included (for accuracy: the limiter's state lives
    /// through both phases).
    pub lifetime_operations: u64,
    /// Admissions over the whole run.
    pub lifetime_allowed: u64,
    /// Admissions of legitimate hot keys over the whole run (keyed-flood only).
    pub lifetime_legitimate_allowed: u64,
    /// When the thread made its last check.
    pub finished_at: Instant,
}

/// The result of one measurement.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Wall time of the measured phase, as the coordinating thread saw it.
    pub measured_wall: Duration,
    /// Per thread counts, in thread order.
    pub threads: Vec<ThreadCounts>,
}

impl Measurement {
    /// Admissions of all threads over the whole run.
    pub fn lifetime_allowed(&self) -> u64 {
        self.threads.iter().map(|t| t.lifetime_allowed).sum()
    }

    /// Admissions of legitimate hot keys over the whole run.
    pub fn lifetime_legitimate_allowed(&self) -> u64 {
        self.threads
            .iter()
            .map(|t| t.lifetime_legitimate_allowed)
            .sum()
    }

    /// When the last thread made its last check.
    pub fn finished_at(&self) -> Option<Instant> {
        self.threads.iter().map(|t| t.finished_at).max()
    }

    /// Operations per thread over the whole run.
    pub fn lifetime_operations_per_thread(&self) -> Vec<u64> {
        self.threads.iter().map(|t| t.lifetime_operations).collect()
    }
}

/// Runs `thread_count` threads, each looping over the worker `make_worker(thread_index)` builds
/// (inside the thread, before the barrier, so set-up is never timed).
pub fn measure<W, F>(thread_count: usize, timing: Timing, make_worker: F) -> Measurement
where
    W: Worker,
    F: Fn(usize) -> W + Sync,
{
    let barrier = Barrier::new(thread_count + 1);
    let phase = AtomicU8::new(PHASE_WARM_UP);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..thread_count)
            .map(|thread_index| {
                let (barrier, phase, make_worker) = (&barrier, &phase, &make_worker);
                scope.spawn(move || {
                    let mut worker = make_worker(thread_index);
                    barrier.wait();
                    run_thread(&mut worker, phase)
                })
            })
            .collect();
        barrier.wait();
        thread::sleep(timing.warm_up);
        // ORDERING: Relaxed. The flag carries no data; threads only need to see it eventually,
        // and each thread's counts travel back through `join`, which synchronises.
        phase.store(PHASE_MEASURE, Ordering::Relaxed);
        let measured_start = Instant::now();
        thread::sleep(timing.measured);
        phase.store(PHASE_STOP, Ordering::Relaxed);
        let measured_wall = measured_start.elapsed();
        let threads = handles
            .into_iter()
            .map(|handle| handle.join().expect("a benchmark thread panicked"))
            .collect();
        Measurement {
            measured_wall,
            threads,
        }
    })
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    operations: u64,
    allowed: u64,
    legitimate_allowed: u64,
}

fn run_thread<W: Worker>(worker: &mut W, phase: &AtomicU8) -> ThreadCounts {
    let mut counters = Counters::default();
    run_phase(worker, phase, PHASE_WARM_UP, &mut counters);
    let after_warm_up = counters;
    run_phase(worker, phase, PHASE_MEASURE, &mut counters);
    let finished_at = Instant::now();
    black_box(&mut *worker);
    black_box(ThreadCounts {
        measured_operations: counters.operations - after_warm_up.operations,
        measured_allowed: counters.allowed - after_warm_up.allowed,
        lifetime_operations: counters.operations,
        lifetime_allowed: counters.allowed,
        lifetime_legitimate_allowed: counters.legitimate_allowed,
        finished_at,
    })
}

/// Loops while the shared phase is `current_phase`.
#[inline(never)]
fn run_phase<W: Worker>(
    worker: &mut W,
    phase: &AtomicU8,
    current_phase: u8,
    counters: &mut Counters,
) {
    let Counters {
        mut operations,
        mut allowed,
        mut legitimate_allowed,
    } = *counters;
    // ORDERING: Relaxed, see `measure`.
    while phase.load(Ordering::Relaxed) == current_phase {
        for _ in 0..OPERATIONS_PER_PHASE_CHECK {
            let outcome = worker.operate();
            allowed += u64::from(outcome & ALLOWED);
            legitimate_allowed += u64::from((outcome & LEGITIMATE_ALLOWED) >> 1);
        }
        operations += OPERATIONS_PER_PHASE_CHECK;
    }
    *counters = Counters {
        operations,
        allowed,
        legitimate_allowed,
    };
}

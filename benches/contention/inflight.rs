//! The inflight scenario: every thread takes one permit from one concurrency limiter shared by
//! all threads and drops it at once, in a loop: one call is the pair acquire + release. The
//! limit ([`INFLIGHT_LIMIT`] permits) is far above the threads' permits held at once (at most
//! one each), so every acquire succeeds and the rows price the pair on its pass path, never a
//! refusal or a wait. Three rows:
//!
//! - `nanolimit` (`in-flight`): nanolimit's `InFlightLimiter::new(INFLIGHT_LIMIT)`,
//!   `try_acquire()` then the `Permit` dropped (with nobody waiting: one load and one
//!   compare-and-swap, then one `fetch_add`, on the limiter's one cache-padded word).
//! - `tokio-semaphore` (`semaphore`): tokio's `tokio::sync::Semaphore::new(INFLIGHT_LIMIT)`,
//!   `try_acquire()` then the `SemaphorePermit` dropped.
//! - `floor` (`fetch-add-pair`): the hardware floor of the pair, one `fetch_add(1)` (Acquire,
//!   standing for the acquire) then one `fetch_sub(1)` (Release, standing for the release) on
//!   one cache-padded `AtomicU64` shared by all threads, as the limiters' state is: two
//!   read-modify-writes of one shared cache line, no check, no retry. An acquire that checks
//!   what is free needs at least that much.
//!
//! A call counts as allowed when its acquire succeeded (the floor's always do): the allowed
//! fraction is 1 unless a permit was ever refused. There is no quota, so no accuracy.

use crate::measure::{measure, Outcome, Worker, ALLOWED};
use crate::{Context, Job, LimiterKind, MeasuredRun};
use crossbeam_utils::CachePadded;
use nanolimit::inflight::InFlightLimiter;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// The limit of both limiters: far above the permits the threads hold at once (one each at
/// most), so that every acquire succeeds.
pub const INFLIGHT_LIMIT: u32 = 1_024;

/// nanolimit's in-flight limiter: `try_acquire()`, then the permit dropped.
struct NanolimitWorker<'limiter> {
    limiter: &'limiter InFlightLimiter,
}

impl Worker for NanolimitWorker<'_> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        match self.limiter.try_acquire() {
            Ok(permit) => {
                drop(permit);
                ALLOWED
            }
            Err(_) => 0,
        }
    }
}

/// tokio's semaphore: `try_acquire()`, then the permit dropped.
struct SemaphoreWorker<'semaphore> {
    semaphore: &'semaphore Semaphore,
}

impl Worker for SemaphoreWorker<'_> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        match self.semaphore.try_acquire() {
            Ok(permit) => {
                drop(permit);
                ALLOWED
            }
            Err(_) => 0,
        }
    }
}

/// The floor: `fetch_add(1)` then `fetch_sub(1)` on one word shared by all threads.
struct FetchAddPairFloor<'word> {
    word: &'word CachePadded<AtomicU64>,
}

impl Worker for FetchAddPairFloor<'_> {
    #[inline]
    fn operate(&mut self) -> Outcome {
        self.word.fetch_add(1, Ordering::Acquire);
        self.word.fetch_sub(1, Ordering::Release);
        ALLOWED
    }
}

/// One inflight measurement: `job.limiter` is `Nanolimit`, `TokioSemaphore` or `Floor`.
pub fn run(job: Job, context: &Context) -> MeasuredRun {
    let (threads, timing) = (job.threads, context.timing);
    let (measurement, state_report) = match job.limiter {
        LimiterKind::Nanolimit => {
            let limiter =
                InFlightLimiter::new(u64::from(INFLIGHT_LIMIT)).expect("a valid in-flight limit");
            let limiter = &limiter;
            let measurement = measure(threads, timing, |_| NanolimitWorker { limiter });
            let report = format!(
                "limit {}, in flight {}, available {}",
                limiter.limit(),
                limiter.in_flight(),
                limiter.available()
            );
            (measurement, Some(report))
        }
        LimiterKind::TokioSemaphore => {
            let semaphore = Semaphore::new(INFLIGHT_LIMIT as usize);
            let semaphore = &semaphore;
            let measurement = measure(threads, timing, |_| SemaphoreWorker { semaphore });
            let report = format!("available {}", semaphore.available_permits());
            (measurement, Some(report))
        }
        LimiterKind::Floor => {
            let word = CachePadded::new(AtomicU64::new(0));
            let word = &word;
            (
                measure(threads, timing, |_| FetchAddPairFloor { word }),
                None,
            )
        }
        other => unreachable!("inflight has no {other:?} row"),
    };
    MeasuredRun {
        measurement,
        // No quota: no span to bound admissions over.
        lifetime: Duration::ZERO,
        over_admission_bound: 0,
        state_report,
    }
}

//! Loom models of the in-flight limiter (src/inflight/): acquires take units from one word with
//! a compare-and-swap, a release gives them back with one `fetch_add` and serves the waiter queue
//! (behind a lock) when the word's `QUEUED` flag says somebody waits; a request that must wait
//! sets the flag with a compare-and-swap under the lock, queues, and parks until a release or
//! `add_permits` takes its units for it and unparks it.
//!
//! Every unit a thread gets it uses in a *guarded section*: it adds its units to `inside` (a
//! Relaxed read-modify-write, so that it creates no ordering of its own) and asserts the sum is
//! within the limit, then increments `guarded` non-atomically (a Relaxed load, then a Relaxed
//! store of one more): only the permits' own Acquire and Release order one section's store
//! before the next section's load, so a missing pairing loses an increment. After the threads
//! are joined every model asserts that nothing is in flight, every unit is available, nobody
//! waits, and `guarded` counts every section. A lost wakeup leaves a thread parked for good,
//! which loom reports as a deadlock.
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test inflight`

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use nanolimit::inflight::{InFlightLimiter, Permit};
use nanolimit_loom_tests::{
    explore, run_concurrently, Bounds, ModelThread, UNREACHED_PREEMPTION_BOUND,
};

/// Every plan runs on a spawned thread while the model's thread only joins (see
/// [`ModelThread`]).
const MODEL_THREAD: ModelThread = ModelThread::OnlyJoins;

/// What the threads share.
struct Shared {
    limiter: InFlightLimiter,
    /// Units inside guarded sections now.
    inside: AtomicU64,
    /// Guarded sections run, counted non-atomically (see the module documentation).
    guarded: AtomicU64,
}

impl Shared {
    fn new(limit: u64) -> Arc<Shared> {
        Arc::new(Shared {
            limiter: InFlightLimiter::new(limit).expect("a valid limit"),
            inside: AtomicU64::new(0),
            guarded: AtomicU64::new(0),
        })
    }

    /// Uses `permit`'s units in a guarded section, then drops it.
    fn use_permit(&self, permit: Permit<'_>) {
        let units = permit.units();
        let now_inside = self.inside.fetch_add(units, Ordering::Relaxed) + units;
        let limit = self.limiter.limit();
        assert!(
            now_inside <= limit,
            "{now_inside} units inside a limit of {limit}"
        );
        let count = self.guarded.load(Ordering::Relaxed);
        self.guarded.store(count + 1, Ordering::Relaxed);
        self.inside.fetch_sub(units, Ordering::Relaxed);
        drop(permit);
    }
}

/// One operation a thread makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    /// `try_acquire_many(units)`, used if served.
    TryAcquire(u64),
    /// `acquire()` for one unit, else `acquire_many(units)` (blocking), then used.
    Acquire(u64),
    /// `add_permits(units)`.
    AddPermits(u64),
    /// Polls `acquire_many_async(units)` once with a waker that does nothing, uses its permit if
    /// ready, else drops the pending future (cancelling the wait).
    PollOnceThenDrop(u64),
}

/// What an operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Served this many units (and used them).
    Served(u64),
    /// Refused (`AcquireError::Busy`) or, for a polled future, still pending when dropped.
    NotServed(u64),
    Added,
}

fn perform(shared: &Shared, operation: Operation) -> Outcome {
    match operation {
        Operation::TryAcquire(units) => match shared.limiter.try_acquire_many(units) {
            Ok(permit) => {
                shared.use_permit(permit);
                Outcome::Served(units)
            }
            Err(_) => Outcome::NotServed(units),
        },
        Operation::Acquire(units) => {
            // `acquire` for one unit (it waits even on a limit forgotten down to 0).
            let permit = if units == 1 {
                shared.limiter.acquire()
            } else {
                shared
                    .limiter
                    .acquire_many(units)
                    .expect("within the limit")
            };
            shared.use_permit(permit);
            Outcome::Served(units)
        }
        Operation::AddPermits(units) => {
            shared
                .limiter
                .add_permits(units)
                .expect("within the maximum");
            Outcome::Added
        }
        Operation::PollOnceThenDrop(units) => {
            use std::future::Future;
            use std::task::{Context, Poll, Waker};
            let mut future = std::pin::pin!(shared
                .limiter
                .acquire_many_async(units)
                .expect("within the limit"));
            match future
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                Poll::Ready(permit) => {
                    shared.use_permit(permit);
                    Outcome::Served(units)
                }
                Poll::Pending => Outcome::NotServed(units),
            }
        }
    }
}

/// Runs `plans` on a limiter of `limit` units (after `setup` on the model's thread), and
/// asserts the final state: nothing in flight, `final_limit` units all available, nobody
/// waiting, and one guarded section per service. Returns the outcomes.
fn run(
    limit: u64,
    setup: fn(&InFlightLimiter),
    plans: Vec<Vec<Operation>>,
    final_limit: u64,
) -> Vec<Vec<Outcome>> {
    let shared = Shared::new(limit);
    setup(&shared.limiter);
    let outcomes = run_concurrently(MODEL_THREAD, &shared, plans, perform);
    let limiter = &shared.limiter;
    let served = outcomes
        .iter()
        .flatten()
        .filter(|outcome| matches!(outcome, Outcome::Served(_)))
        .count() as u64;
    assert_eq!(
        (
            limiter.limit(),
            limiter.in_flight(),
            limiter.available(),
            limiter.waiters()
        ),
        (final_limit, 0, final_limit, 0),
        "{outcomes:?}"
    );
    assert_eq!(
        shared.guarded.load(Ordering::Relaxed),
        served,
        "a guarded section's increment was lost: {outcomes:?}"
    );
    outcomes
}

fn nothing(_: &InFlightLimiter) {}

/// (1) Unit try-acquires race releases on a limit of 1: never two inside, nothing lost, and a
/// try is refused only while the other thread holds the unit, so one of the first tries is
/// served.
#[test]
fn try_acquires_race_releases() {
    explore(
        "try_acquires_race_releases",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let outcomes = run(
                1,
                nothing,
                vec![
                    vec![Operation::TryAcquire(1), Operation::TryAcquire(1)],
                    vec![Operation::TryAcquire(1)],
                ],
                1,
            );
            assert!(
                outcomes[0][0] == Outcome::Served(1) || outcomes[1][0] == Outcome::Served(1),
                "{outcomes:?}"
            );
        },
    );
}

/// (1') A try of two units races unit tries and releases on a limit of 2.
#[test]
fn a_try_of_two_units_races_unit_tries() {
    explore(
        "a_try_of_two_units_races_unit_tries",
        UNREACHED_PREEMPTION_BOUND,
        || {
            run(
                2,
                nothing,
                vec![
                    vec![Operation::TryAcquire(2)],
                    vec![Operation::TryAcquire(1), Operation::TryAcquire(1)],
                ],
                2,
            );
        },
    );
}

/// (2) Two blocking acquires on a limit of 1: whichever waits is served by the other's
/// release (no lost wakeup: loom would report the parked thread as a deadlock).
#[test]
fn a_blocked_acquire_is_served_by_a_release() {
    explore(
        "a_blocked_acquire_is_served_by_a_release",
        UNREACHED_PREEMPTION_BOUND,
        || {
            run(
                1,
                nothing,
                vec![vec![Operation::Acquire(1)], vec![Operation::Acquire(1)]],
                1,
            );
        },
    );
}

/// (2') A blocking acquire of the whole limit (2) races two unit acquires on another thread:
/// the large one may queue behind a held unit while the other thread's second acquire finds the
/// queue in front of it.
#[test]
fn a_blocked_acquire_of_the_whole_limit_races_unit_acquires() {
    explore(
        "a_blocked_acquire_of_the_whole_limit_races_unit_acquires",
        UNREACHED_PREEMPTION_BOUND,
        || {
            run(
                2,
                nothing,
                vec![
                    vec![Operation::Acquire(2)],
                    vec![Operation::Acquire(1), Operation::Acquire(1)],
                ],
                2,
            );
        },
    );
}

/// (2'') `add_permits` races a blocking acquire on a limit forgotten down to 0: the acquire
/// waits until the added unit serves it.
#[test]
fn add_permits_serves_a_blocked_acquire() {
    explore(
        "add_permits_serves_a_blocked_acquire",
        UNREACHED_PREEMPTION_BOUND,
        || {
            run(
                1,
                |limiter| limiter.try_acquire().expect("fresh").forget(),
                vec![vec![Operation::Acquire(1)], vec![Operation::AddPermits(1)]],
                1,
            );
        },
    );
}

/// (3) A wait polled once and dropped (cancelled) races a release and a blocking acquire on a
/// limit of 1: whether the dropped wait was still queued (it leaves, letting the next in) or
/// already served (its units go back, to the next waiter first), no unit is lost and the
/// blocking acquire is served.
#[test]
fn a_cancelled_async_wait_races_a_blocking_acquire() {
    explore(
        "a_cancelled_async_wait_races_a_blocking_acquire",
        UNREACHED_PREEMPTION_BOUND,
        || {
            run(
                1,
                nothing,
                vec![
                    vec![Operation::Acquire(1)],
                    vec![Operation::PollOnceThenDrop(1)],
                ],
                1,
            );
        },
    );
}

/// The preemption bounds of the three-thread model: 3 is enough for each thread to be
/// preempted between its read of the word and its compare-and-swap, and inside the slow path
/// (12 s); the default run explores it within 2.
const THREE_THREAD_PREEMPTION_BOUNDS: Bounds = Bounds {
    default: 2,
    exhaustive: 3,
};

/// (4) A try races two blocking acquires on a limit of 1: the fast path's compare-and-swap
/// races the slow path's (a waiter queuing, a release serving the queue), and still never more
/// than one unit is inside, nothing is lost and every waiter is served.
#[test]
fn a_try_races_two_blocking_acquires() {
    explore(
        "a_try_races_two_blocking_acquires",
        THREE_THREAD_PREEMPTION_BOUNDS,
        || {
            run(
                1,
                nothing,
                vec![
                    vec![Operation::Acquire(1)],
                    vec![Operation::Acquire(1)],
                    vec![Operation::TryAcquire(1)],
                ],
                1,
            );
        },
    );
}

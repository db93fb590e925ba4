//! Shared helpers for the loom models of nanolimit's limiters.
//!
//! Every model builds its limiter inside the model closure (loom's atomics only exist inside a
//! model), runs a few threads that each follow a plan of checks with caller-supplied times, and
//! then asserts properties of the decisions and of the final state. Only the public API is used,
//! and no clock is ever read: time is always passed in (`check_at`, `check_n_at`, `peek_at`).
//!
//! The helpers are generic over what is shared and what a step of a plan is, so that models of
//! other limiters (a keyed table) can reuse [`explore`] and [`run_concurrently`], and the
//! assertions over [`Decision`]s.

#[cfg(not(nanolimit_loom))]
compile_error!(
    "the loom models only check something when nanolimit is built on loom's atomics: run them \
     with RUSTFLAGS=\"--cfg nanolimit_loom\" (see loom-tests/README.md)"
);

use loom::sync::Arc;
use nanolimit::{Algorithm, Decision, Limiter, ManualClock};

/// The environment variable that overrides every model's preemption bound (loom's own name).
/// Loom's other variables (`LOOM_MAX_PERMUTATIONS`, `LOOM_MAX_DURATION`, ...) apply as well:
/// leave them unset, or a model may stop before it has explored everything.
pub const PREEMPTION_BOUND_VARIABLE: &str = "LOOM_MAX_PREEMPTIONS";

/// Explores the interleavings of `model` in which threads are preempted at most
/// `preemption_bound` times in all (an explicit `LOOM_MAX_PREEMPTIONS` overrides the bound).
///
/// Prints how many executions were explored (visible with `--nocapture`), and fails if there was
/// only one: then nothing in the model was interleaved, and it checked nothing concurrent.
pub fn explore<F>(model_name: &str, preemption_bound: usize, model: F)
where
    F: Fn() + Sync + Send + 'static,
{
    explore_within(model_name, Some(preemption_bound), model);
}

/// Explores every interleaving of `model`, with no preemption bound (an explicit
/// `LOOM_MAX_PREEMPTIONS` still sets one). For small models only: the count grows
/// exponentially with the number of atomic operations.
pub fn explore_exhaustively<F>(model_name: &str, model: F)
where
    F: Fn() + Sync + Send + 'static,
{
    explore_within(model_name, None, model);
}

/// [`explore`] with an optional bound: `None` explores everything.
pub fn explore_within<F>(model_name: &str, preemption_bound: Option<usize>, model: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    // `Builder::new` has read LOOM_MAX_PREEMPTIONS; only an explicit setting overrides ours.
    if std::env::var_os(PREEMPTION_BOUND_VARIABLE).is_none() {
        builder.preemption_bound = preemption_bound;
    }
    let bound = builder.preemption_bound;
    // A plain std counter: it is not part of the model, it only counts its executions.
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let executions_in_model = std::sync::Arc::clone(&executions);
    let started = std::time::Instant::now();
    builder.check(move || {
        executions_in_model.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    let explored = executions.load(std::sync::atomic::Ordering::Relaxed);
    let bound = bound.map_or_else(|| "none".to_string(), |bound| bound.to_string());
    eprintln!(
        "{model_name}: {explored} executions, preemption bound {bound}, {:.2?}",
        started.elapsed()
    );
    assert!(
        explored > 1,
        "{model_name}: loom explored a single execution: nothing was interleaved"
    );
}

/// Runs one thread per plan, all sharing `shared`, each performing its plan's steps in order,
/// and returns each thread's outcomes, in plan order.
///
/// The last plan runs on the model's own thread (loom counts it as one), so `n` plans use `n`
/// threads in all.
pub fn run_concurrently<S, P, O>(
    shared: &Arc<S>,
    mut plans: Vec<Vec<P>>,
    perform: fn(&S, P) -> O,
) -> Vec<Vec<O>>
where
    S: Send + Sync + 'static,
    P: Send + 'static,
    O: Send + 'static,
{
    let plan_on_this_thread = plans.pop().expect("a model needs at least one plan");
    let handles: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            let shared = Arc::clone(shared);
            loom::thread::spawn(move || {
                plan.into_iter()
                    .map(|step| perform(&shared, step))
                    .collect::<Vec<O>>()
            })
        })
        .collect();
    let outcomes_on_this_thread: Vec<O> = plan_on_this_thread
        .into_iter()
        .map(|step| perform(shared, step))
        .collect();
    let mut outcomes: Vec<Vec<O>> = handles
        .into_iter()
        .map(|handle| handle.join().expect("a model thread panicked"))
        .collect();
    outcomes.push(outcomes_on_this_thread);
    outcomes
}

/// One check a thread makes on a direct [`Limiter`], at a time the caller supplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// `check_at(now_ns)`: one unit.
    Check {
        /// The time of the check.
        now_ns: u64,
    },
    /// `check_n_at(cost, now_ns)`: `cost` units, all or nothing.
    CheckN {
        /// Units requested (at most the quota's capacity).
        cost: u64,
        /// The time of the check.
        now_ns: u64,
    },
}

/// `count` unit checks, all at `now_ns`.
pub fn unit_checks_at(now_ns: u64, count: usize) -> Vec<Attempt> {
    vec![Attempt::Check { now_ns }; count]
}

/// One `check_n_at` per cost, all at `now_ns`.
pub fn costed_checks_at(now_ns: u64, costs: &[u64]) -> Vec<Attempt> {
    costs
        .iter()
        .map(|&cost| Attempt::CheckN { cost, now_ns })
        .collect()
}

/// A direct limiter on a [`ManualClock`] (never read: every model passes its times in), shared
/// by the model's threads.
pub fn shared_direct_limiter<A: Algorithm>(quota: A) -> Arc<Limiter<A, ManualClock>> {
    Arc::new(Limiter::with_clock(quota, ManualClock::new()))
}

/// Performs `attempt` on `limiter`.
pub fn perform_direct<A: Algorithm>(
    limiter: &Limiter<A, ManualClock>,
    attempt: Attempt,
) -> Decision<A> {
    match attempt {
        Attempt::Check { now_ns } => limiter.check_at(now_ns),
        Attempt::CheckN { cost, now_ns } => limiter
            .check_n_at(cost, now_ns)
            .expect("every modelled cost fits the quota's capacity"),
    }
}

/// The total cost of the allowed decisions.
pub fn admitted_cost<A: Algorithm>(outcomes: &[Vec<Decision<A>>]) -> u64 {
    outcomes
        .iter()
        .flatten()
        .filter(|decision| decision.is_allowed())
        .map(|decision| decision.cost())
        .sum()
}

/// Every denial saw too little capacity for its cost: a limiter may only deny a request that
/// does not fit, whatever the other threads were doing.
pub fn assert_denied_only_when_short<A: Algorithm>(outcomes: &[Vec<Decision<A>>]) {
    for (thread, decisions) in outcomes.iter().enumerate() {
        for decision in decisions.iter().filter(|decision| decision.is_denied()) {
            assert!(
                decision.remaining() < decision.cost(),
                "thread {thread} was denied a cost of {} while {} remained: {outcomes:?}",
                decision.cost(),
                decision.remaining()
            );
        }
    }
}

/// The allowed decisions, all made at one instant on a limiter that was full (`capacity`
/// remaining) at that instant, form one sequence of updates: ordered by what remained after
/// each, the first left `capacity − cost` and each next one exactly its own cost less than the
/// one before. Two admissions built on the same word (a lost update) would report the same
/// remainder, and a skipped or doubled charge would break the chain.
pub fn assert_admissions_form_one_sequence<A: Algorithm>(
    capacity: u64,
    outcomes: &[Vec<Decision<A>>],
) {
    let mut admissions: Vec<(u64, u64)> = outcomes
        .iter()
        .flatten()
        .filter(|decision| decision.is_allowed())
        .map(|decision| (decision.remaining(), decision.cost()))
        .collect();
    admissions.sort_unstable_by(|left, right| right.cmp(left));
    let mut remaining_before = capacity;
    for &(remaining_after, cost) in &admissions {
        assert_eq!(
            Some(remaining_after),
            remaining_before.checked_sub(cost),
            "admissions (remaining after, cost) {admissions:?} from a capacity of {capacity} do \
             not form one sequence of updates: {outcomes:?}"
        );
        remaining_before = remaining_after;
    }
}

/// At one instant, a denial is final for the thread that saw it: each thread's unit checks are
/// some admissions followed only by denials (its later loads cannot see an older word).
pub fn assert_unit_denials_are_final<A: Algorithm>(outcomes: &[Vec<Decision<A>>]) {
    for (thread, decisions) in outcomes.iter().enumerate() {
        let first_denial = decisions
            .iter()
            .position(|decision| decision.is_denied())
            .unwrap_or(decisions.len());
        assert!(
            decisions[first_denial..]
                .iter()
                .all(|decision| decision.is_denied()),
            "thread {thread} was admitted after a denial at the same instant: {outcomes:?}"
        );
    }
}

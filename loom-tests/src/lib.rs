//! Shared helpers for the loom models of nanolimit's limiters.
//!
//! Every model builds its limiter inside the model closure (loom's atomics only exist inside a
//! model), runs a few threads that each follow a plan of checks with caller-supplied times, and
//! then asserts properties of the decisions and of the final state. Only the public API is used
//! (plus `KeyedLimiter::lookup_hint`, compiled only under `cfg(nanolimit_loom)`), and no clock
//! is ever read: every time is a [`Timestamp`] passed in (`check_at`, `Request::at` for
//! `check_with` and `peek_with`).
//!
//! [`run_concurrently`] is generic over what is shared and what a step of a plan is: direct
//! models run plans of [`DirectOperation`]s, keyed models plans of [`KeyedOperation`]s (see
//! [`ModelThread`] for where each runs them), and both share [`explore`] and the assertions over
//! [`Decision`]s.

#[cfg(not(nanolimit_loom))]
compile_error!(
    "the loom models only check something when nanolimit is built on loom's atomics: run them \
     with RUSTFLAGS=\"--cfg nanolimit_loom\" (see loom-tests/README.md)"
);

use loom::sync::Arc;
use nanolimit::keyed::KeyMode;
use nanolimit::{Decision, KeyedLimiter, Limiter, ManualClock, Quota, Request, Timestamp};

/// The environment variable that overrides every model's preemption bound (loom's own name).
/// Loom's other variables (`LOOM_MAX_PERMUTATIONS`, `LOOM_MAX_DURATION`, ...) apply as well:
/// leave them unset, or a model may stop before it has explored everything.
pub const PREEMPTION_BOUND_VARIABLE: &str = "LOOM_MAX_PREEMPTIONS";

/// The environment variable that runs every model under its exhaustive bound instead of its
/// default one ([`Bounds`]): set to anything but `0` or nothing.
pub const EXHAUSTIVE_VARIABLE: &str = "NANOLIMIT_LOOM_EXHAUSTIVE";

/// The preemption bound of the two-thread models: one that none of their executions reaches
/// (each explores as many executions under 40). Loom's search under a bound adds conservative
/// backtracking points that its unbounded search does not, so under this bound it explores 2
/// to 19 times as many executions of these models as with no bound at all: no model here runs
/// unbounded.
pub const UNREACHED_PREEMPTION_BOUND: usize = 30;

/// The preemption bounds of one model: `default` for the default run, `exhaustive` under
/// [`EXHAUSTIVE_VARIABLE`]. A plain `usize` is the same bound in both.
///
/// The default run must stay within a few minutes on two cores (it is part of the project's
/// one test command), and a few two-thread models take minutes each under
/// [`UNREACHED_PREEMPTION_BOUND`]: those run under a lower default bound, chosen so that every
/// change that loom-tests/README.md lists as failing the model still fails it. `exhaustive` is
/// the bound the model is written for: [`UNREACHED_PREEMPTION_BOUND`] where no execution
/// reaches it, else the largest bound its run time allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The bound of the default run.
    pub default: usize,
    /// The bound of the exhaustive run.
    pub exhaustive: usize,
}

impl From<usize> for Bounds {
    fn from(bound: usize) -> Bounds {
        Bounds {
            default: bound,
            exhaustive: bound,
        }
    }
}

/// Whether this run is the exhaustive one ([`EXHAUSTIVE_VARIABLE`]).
fn exhaustive_run() -> bool {
    std::env::var_os(EXHAUSTIVE_VARIABLE).is_some_and(|value| !value.is_empty() && value != "0")
}

/// Explores the interleavings of `model` in which threads are preempted at most as many times
/// in all as `bounds` says for this run (an explicit `LOOM_MAX_PREEMPTIONS` overrides it).
///
/// Prints how many executions were explored (visible with `--nocapture`), and fails if there was
/// only one: then nothing in the model was interleaved, and it checked nothing concurrent.
pub fn explore<F>(model_name: &str, bounds: impl Into<Bounds>, model: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let bounds = bounds.into();
    let mut builder = loom::model::Builder::new();
    // `Builder::new` has read LOOM_MAX_PREEMPTIONS; only an explicit setting overrides ours.
    if std::env::var_os(PREEMPTION_BOUND_VARIABLE).is_none() {
        let bound = if exhaustive_run() {
            bounds.exhaustive
        } else {
            bounds.default
        };
        builder.preemption_bound = Some(bound);
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
    let mut bound = bound.map_or_else(|| "none".to_string(), |bound| bound.to_string());
    if bounds.default != bounds.exhaustive {
        bound += &format!(
            " (default {}, exhaustive {})",
            bounds.default, bounds.exhaustive
        );
    }
    eprintln!(
        "{model_name}: {explored} executions, preemption bound {bound}, {:.2?}",
        started.elapsed()
    );
    assert!(
        explored > 1,
        "{model_name}: loom explored a single execution: nothing was interleaved"
    );
}

/// The [`Timestamp`] `ns` nanoseconds after the clock's origin (every modelled time is far below
/// the horizon).
pub fn at(ns: u64) -> Timestamp {
    Timestamp::from_ns(ns).expect("modelled times are below the horizon")
}

/// What the model's own thread does in [`run_concurrently`].
///
/// Both explore the same plans; they differ in which thread loom runs first and so in what it
/// explores. Loom's dynamic partial-order reduction remembers only the last access to each
/// atomic: a thread that loads a word and then writes it hides, from that write, an earlier
/// load of the word by another thread, and loom may never run that load after the write
/// (tokio-rs/loom#166, #392). Where every thread is spawned, loom's first execution runs the
/// plans in order and the model's thread only waits, which uncovers several times more
/// interleavings of the keyed table's longer paths than where the model's thread runs a plan
/// first; the three-thread direct models would then take minutes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelThread {
    /// The model's thread runs the last plan itself (loom counts it as a thread): `n` plans use
    /// `n` threads.
    RunsTheLastPlan,
    /// Every plan runs on a spawned thread, and the model's thread only joins them: `n` plans
    /// use `n + 1` threads, one of which does nothing but wait.
    OnlyJoins,
}

/// Runs one thread per plan, all sharing `shared`, each performing its plan's steps in order
/// with `perform`, and returns each thread's outcomes, in plan order. `model_thread` says
/// whether the model's own thread runs the last plan or only waits for the others.
pub fn run_concurrently<S, P, O, F>(
    model_thread: ModelThread,
    shared: &Arc<S>,
    mut plans: Vec<Vec<P>>,
    perform: F,
) -> Vec<Vec<O>>
where
    S: Send + Sync + 'static,
    P: Send + 'static,
    O: Send + 'static,
    F: Fn(&S, P) -> O + Copy + Send + 'static,
{
    let plan_on_this_thread = match model_thread {
        ModelThread::RunsTheLastPlan => Some(plans.pop().expect("a model needs at least one plan")),
        ModelThread::OnlyJoins => None,
    };
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
    let outcomes_on_this_thread = plan_on_this_thread.map(|plan| {
        plan.into_iter()
            .map(|step| perform(shared, step))
            .collect::<Vec<O>>()
    });
    let mut outcomes: Vec<Vec<O>> = handles
        .into_iter()
        .map(|handle| handle.join().expect("a model thread panicked"))
        .collect();
    outcomes.extend(outcomes_on_this_thread);
    outcomes
}

/// One check a thread makes on a direct [`Limiter`], at a time the caller supplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectOperation {
    /// `check_at(now)`: one unit.
    Check {
        /// The time of the check.
        now: Timestamp,
    },
    /// `check_with(Request::cost(cost).at(now))`: `cost` units, all or nothing.
    CheckWith {
        /// Units requested (at most the quota's limit).
        cost: u64,
        /// The time of the check.
        now: Timestamp,
    },
}

/// `count` unit checks, all at `now`.
pub fn unit_checks_at(now: Timestamp, count: usize) -> Vec<DirectOperation> {
    vec![DirectOperation::Check { now }; count]
}

/// One `check_with` per cost, all at `now`.
pub fn costed_checks_at(now: Timestamp, costs: &[u64]) -> Vec<DirectOperation> {
    costs
        .iter()
        .map(|&cost| DirectOperation::CheckWith { cost, now })
        .collect()
}

/// A direct limiter on a [`ManualClock`] (never read: every model passes its times in), shared
/// by the model's threads.
pub fn shared_direct_limiter<Q: Quota>(quota: Q) -> Arc<Limiter<Q, ManualClock>> {
    Arc::new(Limiter::with_clock(quota, ManualClock::new()))
}

/// Performs `operation` on `limiter`.
pub fn perform_direct<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    operation: DirectOperation,
) -> Decision<Q> {
    match operation {
        DirectOperation::Check { now } => limiter.check_at(now),
        DirectOperation::CheckWith { cost, now } => limiter
            .check_with(Request::cost(cost).at(now))
            .expect("every modelled cost fits the quota's limit"),
    }
}

/// One operation a thread makes on a [`KeyedLimiter`], at a time the caller supplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyedOperation<K> {
    /// `check_at(&key, now)`: one unit.
    Check {
        /// The key checked.
        key: K,
        /// The time of the check.
        now: Timestamp,
    },
    /// `peek_with(&key, Request::new().at(now))`: whether one unit would pass, consuming nothing
    /// and inserting nothing.
    Peek {
        /// The key peeked at.
        key: K,
        /// The time of the peek.
        now: Timestamp,
    },
}

/// Performs `operation` on `limiter` (whose clock is never read).
pub fn perform_keyed<K, Q, M>(
    limiter: &KeyedLimiter<K, Q, ManualClock, M>,
    operation: KeyedOperation<K>,
) -> Decision<Q>
where
    Q: Quota,
    M: KeyMode<K>,
{
    match operation {
        KeyedOperation::Check { key, now } => limiter.check_at(&key, now),
        KeyedOperation::Peek { key, now } => limiter
            .peek_with(&key, Request::new().at(now))
            .expect("a unit request fits every quota"),
    }
}

/// The total cost of the allowed decisions.
pub fn admitted_cost<Q: Quota>(outcomes: &[Vec<Decision<Q>>]) -> u64 {
    outcomes
        .iter()
        .flatten()
        .filter(|decision| decision.is_allowed())
        .map(|decision| decision.cost())
        .sum()
}

/// Every denial saw too little of the limit remaining for its cost: a limiter may only deny a
/// request that does not fit, whatever the other threads were doing.
pub fn assert_denied_only_when_short<Q: Quota>(outcomes: &[Vec<Decision<Q>>]) {
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

/// The allowed decisions, all made at one instant on a state that had `remaining_before` units
/// left at that instant, form one sequence of updates: ordered by what remained after each, the
/// first left `remaining_before − cost` and each next one exactly its own cost less than the one
/// before. Two admissions built on the same word (a lost update) would report the same
/// remainder, and a skipped or doubled charge would break the chain.
pub fn assert_admissions_form_one_sequence<Q: Quota>(
    remaining_before: u64,
    outcomes: &[Vec<Decision<Q>>],
) {
    let mut admissions: Vec<(u64, u64)> = outcomes
        .iter()
        .flatten()
        .filter(|decision| decision.is_allowed())
        .map(|decision| (decision.remaining(), decision.cost()))
        .collect();
    admissions.sort_unstable_by(|left, right| right.cmp(left));
    let mut remaining = remaining_before;
    for &(remaining_after, cost) in &admissions {
        assert_eq!(
            Some(remaining_after),
            remaining.checked_sub(cost),
            "admissions (remaining after, cost) {admissions:?} from {remaining_before} remaining \
             do not form one sequence of updates: {outcomes:?}"
        );
        remaining = remaining_after;
    }
}

/// At one instant, a denial is final for the thread that saw it: each thread's unit checks are
/// some admissions followed only by denials (its later loads cannot see an older word).
pub fn assert_unit_denials_are_final<Q: Quota>(outcomes: &[Vec<Decision<Q>>]) {
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

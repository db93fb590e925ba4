//! Loom models of the direct [`Limiter`](nanolimit::Limiter): the interleavings of a few threads
//! checking one limiter, for each algorithm, under a preemption bound that no execution of the
//! two-thread models reaches, and within a bound of 4 for the three-thread ones.
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml`

use nanolimit::{Quota, Request};
use nanolimit_loom_tests::{
    admitted_cost, assert_admissions_form_one_sequence, assert_denied_only_when_short,
    assert_unit_denials_are_final, at, costed_checks_at, explore, perform_direct, run_concurrently,
    shared_direct_limiter, unit_checks_at, DirectOperation, ModelThread,
    UNREACHED_PREEMPTION_BOUND,
};

/// How a model is explored: loom's preemption bound, and where the plans run.
#[derive(Debug, Clone, Copy)]
struct Exploration {
    preemption_bound: usize,
    model_thread: ModelThread,
}

/// Two-thread models run under a bound none of their executions reaches, each plan on a spawned
/// thread: loom explores several times as many executions that way as with the model's thread
/// running a plan (see [`ModelThread`]), in a few seconds at most per model.
const TWO_THREADS: Exploration = Exploration {
    preemption_bound: UNREACHED_PREEMPTION_BOUND,
    model_thread: ModelThread::OnlyJoins,
};
/// Three-thread models explore the interleavings with at most 4 preemptions: enough for a
/// thread to lose its compare-and-swap to each of the other two in turn and retry twice, at a
/// few seconds per model (a bound of 5 takes about 5 times as long). The model's thread runs
/// the last plan: with every plan spawned, a model takes over a minute.
const THREE_THREADS: Exploration = Exploration {
    preemption_bound: 4,
    model_thread: ModelThread::RunsTheLastPlan,
};

/// The instant of every check in the one-instant models: a quarter into the first window (and
/// into the first second of the GCRA quotas); nothing refills while the threads run.
const FROZEN_NOW_NS: u64 = 250_000_000;

/// `threads` threads each make `checks_per_thread` unit checks at one instant, on a fresh
/// limiter. Exactly `min(limit, attempts)` pass (no over-admission, and no denial while
/// some of the limit remains), a thread once denied stays denied, the admissions are one sequence of
/// updates, and the final state at that instant has exactly `limit − admitted` left (no lost
/// update).
fn model_unit_checks_at_one_instant<Q: Quota>(
    model_name: &str,
    quota: Q,
    threads: usize,
    checks_per_thread: usize,
    exploration: Exploration,
) {
    let limit = quota.limit();
    let attempts = (threads * checks_per_thread) as u64;
    explore(model_name, exploration.preemption_bound, move || {
        let limiter = shared_direct_limiter(quota);
        let plans = vec![unit_checks_at(at(FROZEN_NOW_NS), checks_per_thread); threads];
        let outcomes = run_concurrently(exploration.model_thread, &limiter, plans, perform_direct);

        let admitted = admitted_cost(&outcomes);
        assert_eq!(
            admitted,
            limit.min(attempts),
            "{attempts} unit checks on a limit of {limit}: {outcomes:?}"
        );
        assert_denied_only_when_short(&outcomes);
        assert_unit_denials_are_final(&outcomes);
        assert_admissions_form_one_sequence(limit, &outcomes);

        let after = limiter
            .peek_with(Request::new().at(at(FROZEN_NOW_NS)))
            .unwrap();
        assert_eq!(
            after.remaining(),
            limit - admitted,
            "the final state does not account for the {admitted} admitted units: {outcomes:?}"
        );
        assert_eq!(after.is_allowed(), admitted < limit);
    });
}

/// Threads check one instant with mixed costs (`check_with`): the admitted costs never add up
/// to more than the limit, every denial was for a cost that did not fit, the admissions are
/// one sequence of updates, and the final state has exactly `limit − admitted` left.
fn model_costed_checks_at_one_instant<Q: Quota>(
    model_name: &str,
    quota: Q,
    costs_per_thread: &'static [&'static [u64]],
    exploration: Exploration,
) {
    let limit = quota.limit();
    explore(model_name, exploration.preemption_bound, move || {
        let limiter = shared_direct_limiter(quota);
        let plans = costs_per_thread
            .iter()
            .map(|costs| costed_checks_at(at(FROZEN_NOW_NS), costs))
            .collect();
        let outcomes = run_concurrently(exploration.model_thread, &limiter, plans, perform_direct);

        let admitted = admitted_cost(&outcomes);
        assert!(
            admitted <= limit,
            "admitted costs of {admitted} on a limit of {limit}: {outcomes:?}"
        );
        assert_denied_only_when_short(&outcomes);
        assert_admissions_form_one_sequence(limit, &outcomes);

        let after = limiter
            .peek_with(Request::new().at(at(FROZEN_NOW_NS)))
            .unwrap();
        assert_eq!(
            after.remaining(),
            limit - admitted,
            "the final state does not account for the {admitted} admitted units: {outcomes:?}"
        );
    });
}

/// Two threads whose clocks disagree check a fresh limiter, one unit at a time, at the times in
/// `plans` (each `early_ns` or `late_ns`); against a word written at `late_ns`, a check at
/// `early_ns` is a clock that stepped back. Whatever the interleaving:
/// - at most `allowance` units pass: what a fresh limiter allows by `late_ns`, so stepping back
///   grants nothing;
/// - a check at `late_ns` is denied only once the limit has been admitted (checks at an
///   earlier time never take away any of the limit the latest time has);
/// - every denial was for a request that did not fit;
/// - the final state, read at `late_ns`, has at most `allowance − admitted` left (every
///   admission is accounted for).
fn model_clock_disagreement<Q: Quota>(
    model_name: &str,
    quota: Q,
    plans: Vec<Vec<u64>>,
    late_ns: u64,
    allowance: u64,
) {
    let limit = quota.limit();
    let plans: Vec<Vec<DirectOperation>> = plans
        .iter()
        .map(|times| {
            times
                .iter()
                .map(|&now_ns| DirectOperation::Check { now: at(now_ns) })
                .collect()
        })
        .collect();
    let attempts = plans.iter().map(Vec::len).sum::<usize>() as u64;
    assert!(
        attempts > allowance,
        "{model_name}: with {attempts} attempts for an allowance of {allowance}, the model could \
         not see an over-admission"
    );
    explore(model_name, TWO_THREADS.preemption_bound, move || {
        let limiter = shared_direct_limiter(quota);
        let outcomes = run_concurrently(
            TWO_THREADS.model_thread,
            &limiter,
            plans.clone(),
            perform_direct,
        );

        let admitted = admitted_cost(&outcomes);
        assert!(
            admitted <= allowance,
            "{admitted} admitted, but by {late_ns} ns a fresh limiter allows {allowance}: \
             {outcomes:?}"
        );
        assert_denied_only_when_short(&outcomes);
        let denied_at_late_time =
            plans
                .iter()
                .flatten()
                .zip(outcomes.iter().flatten())
                .any(|(operation, decision)| {
                    *operation == DirectOperation::Check { now: at(late_ns) }
                        && decision.is_denied()
                });
        assert!(
            !denied_at_late_time || admitted >= limit,
            "a check at the latest time was denied with only {admitted} of {limit} \
             admitted: {outcomes:?}"
        );

        let after = limiter.peek_with(Request::new().at(at(late_ns))).unwrap();
        assert!(
            after.remaining() <= allowance - admitted,
            "{} left at {late_ns} ns after {admitted} of {allowance} admitted: {outcomes:?}",
            after.remaining()
        );
    });
}

/// The models of one algorithm, as a test module.
///
/// `quota` builds a quota of the given limit (GCRA burst or window limit). The clock
/// disagreement models use `disagreement_quota` with checks at `early_ns` and `late_ns`; by
/// `late_ns`, a fresh limiter allows `allowance` units (derived at each use), fewer than the
/// six or seven checks each of those models makes.
macro_rules! direct_limiter_models {
    (
        $module:ident,
        quota: $quota:expr,
        disagreement_quota: $disagreement_quota:expr,
        early_ns: $early_ns:expr,
        late_ns: $late_ns:expr,
        allowance: $allowance:expr $(,)?
    ) => {
        mod $module {
            use super::*;

            fn name(model: &str) -> String {
                format!("{} {model}", stringify!($module))
            }

            #[test]
            fn two_threads_admit_exactly_the_limit() {
                model_unit_checks_at_one_instant(
                    &name("2 threads x 3 unit checks, limit 5"),
                    $quota(5),
                    2,
                    3,
                    TWO_THREADS,
                );
            }

            #[test]
            fn two_threads_under_the_limit_lose_no_update() {
                model_unit_checks_at_one_instant(
                    &name("2 threads x 2 unit checks, limit 5"),
                    $quota(5),
                    2,
                    2,
                    TWO_THREADS,
                );
            }

            #[test]
            fn three_threads_admit_exactly_the_limit() {
                model_unit_checks_at_one_instant(
                    &name("3 threads x 2 unit checks, limit 5"),
                    $quota(5),
                    3,
                    2,
                    THREE_THREADS,
                );
            }

            #[test]
            fn two_threads_with_mixed_costs_never_exceed_the_limit() {
                model_costed_checks_at_one_instant(
                    &name("2 threads, costs [3, 1] and [2, 2], limit 4"),
                    $quota(4),
                    &[&[3, 1], &[2, 2]],
                    TWO_THREADS,
                );
            }

            #[test]
            fn three_threads_with_mixed_costs_never_exceed_the_limit() {
                model_costed_checks_at_one_instant(
                    &name("3 threads, costs [3], [2, 1] and [1, 2], limit 4"),
                    $quota(4),
                    &[&[3], &[2, 1], &[1, 2]],
                    THREE_THREADS,
                );
            }

            #[test]
            fn clock_stepping_back_across_threads_grants_nothing() {
                let (early, late) = ($early_ns, $late_ns);
                model_clock_disagreement(
                    &name("2 threads, [late x 3] and [early x 3]"),
                    $disagreement_quota,
                    vec![vec![late; 3], vec![early; 3]],
                    late,
                    $allowance,
                );
            }

            #[test]
            fn clock_stepping_back_within_threads_grants_nothing() {
                let (early, late) = ($early_ns, $late_ns);
                model_clock_disagreement(
                    &name("2 threads, [late, early, early] and [early, late, early]"),
                    $disagreement_quota,
                    vec![vec![late, early, early], vec![early, late, early]],
                    late,
                    $allowance,
                );
            }

            #[test]
            fn early_checks_after_a_late_one_grant_nothing() {
                let (early, late) = ($early_ns, $late_ns);
                model_clock_disagreement(
                    &name("2 threads, [late] and [early x 6]"),
                    $disagreement_quota,
                    vec![vec![late], vec![early; 6]],
                    late,
                    $allowance,
                );
            }
        }
    };
}

// GCRA: `per_second(n)` has a burst of `n`. For the disagreement: burst 4, emission interval
// T = 250 ms, checks at 0 and 250 ms. Every admission adds T to the theoretical arrival time,
// which starts at 0 and never passes (latest now + 4·T), so by 250 ms at most 4 + 1 units pass.
direct_limiter_models!(
    gcra,
    quota: |limit| nanolimit::Gcra::per_second(limit).unwrap(),
    disagreement_quota: nanolimit::Gcra::per_second(4).unwrap(),
    early_ns: 0,
    late_ns: 250_000_000,
    allowance: 5,
);

// Sliding window. For the disagreement: limit 4 per 1 s window, checks at 0.75 s (first window)
// and 1.25 s (a quarter into the second, where the first window's count p <= 4 weighs
// ⌊3p / 4⌋, rounded down, so the second admits at most 4 − ⌊3p / 4⌋): at most
// p + 4 − ⌊3p / 4⌋ units, which is 4 for p = 0 and 5 for p = 1 to 4. A check at 0.75 s against
// the second window is judged at that window's start, where p weighs in full (p + c + 1 <= 4);
// judged at 0.75 s into it, p would weigh ⌊p / 4⌋ and let 7 through (p = 4, then 3 more).
direct_limiter_models!(
    sliding_window,
    quota: |limit| nanolimit::SlidingWindow::per_second(limit).unwrap(),
    disagreement_quota: nanolimit::SlidingWindow::per_second(4).unwrap(),
    early_ns: 750_000_000,
    late_ns: 1_250_000_000,
    allowance: 5,
);

// Fixed window. For the disagreement: limit 2 per 1 s window, checks at 0.75 s and 1.25 s (two
// windows): at most 2 + 2 units, where reading the step back as a fresh window would admit 5.
direct_limiter_models!(
    fixed_window,
    quota: |limit| nanolimit::FixedWindow::per_second(limit).unwrap(),
    disagreement_quota: nanolimit::FixedWindow::per_second(2).unwrap(),
    early_ns: 750_000_000,
    late_ns: 1_250_000_000,
    allowance: 4,
);

//! Loom models of the exact sliding log (src/sliding_log/ring.rs): a ring of unit records, one
//! word naming the next request's position; an admission compare-and-swaps the record of its
//! first unit, writes the records of the others (any thread that finds them missing writes them
//! too) and advances the word; a check re-reads the word to prove its view was a snapshot.
//!
//! Every model checks the log's promise on the times the decisions were judged at: in any
//! window `(t − W, t]`, at most the limit of units was admitted, and nothing that fitted was
//! denied on a frozen clock. Mutants each model catches are listed in loom-tests/README.md.
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test sliding_log`

use loom::sync::Arc;
use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
use nanolimit::{ManualClock, Request};
use nanolimit_loom_tests::{
    at, explore, run_concurrently, Bounds, ModelThread, UNREACHED_PREEMPTION_BOUND,
};
use std::time::Duration;

/// The window of every model, in nanoseconds.
const WINDOW_NS: u64 = 10;

/// One request a thread makes: `cost` units read at `reading_ns`.
#[derive(Debug, Clone, Copy)]
struct Check {
    cost: u64,
    reading_ns: u64,
}

/// What a request got: whether it was admitted, its cost, and the time it was judged at.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    allowed: bool,
    cost: u64,
    judged_ns: u64,
}

fn checks(pairs: &[(u64, u64)]) -> Vec<Check> {
    pairs
        .iter()
        .map(|&(cost, reading_ns)| Check { cost, reading_ns })
        .collect()
}

fn perform(limiter: &SlidingLogLimiter<ManualClock>, check: Check) -> Outcome {
    let decision = limiter
        .check_with(Request::cost(check.cost).at(at(check.reading_ns)))
        .expect("a cost the quota allows");
    Outcome {
        allowed: decision.is_allowed(),
        cost: check.cost,
        judged_ns: decision.judged_at().as_ns(),
    }
}

/// At most `limit` units admitted in any window ending at an admitted unit's time.
fn assert_no_window_holds_more_than(limit: u64, outcomes: &[Vec<Outcome>]) {
    let mut admitted: Vec<(u64, u64)> = outcomes
        .iter()
        .flatten()
        .filter(|outcome| outcome.allowed)
        .map(|outcome| (outcome.judged_ns, outcome.cost))
        .collect();
    admitted.sort_unstable();
    for &(end_ns, _) in &admitted {
        let in_window: u64 = admitted
            .iter()
            .filter(|&&(time_ns, _)| time_ns <= end_ns && time_ns + WINDOW_NS > end_ns)
            .map(|&(_, cost)| cost)
            .sum();
        assert!(
            in_window <= limit,
            "{in_window} units in the window ending at {end_ns} (limit {limit}): {outcomes:?}"
        );
    }
}

/// Models of one request per thread run under a preemption bound none of their executions
/// reaches; a thread with two requests makes the search too large for that (one such model
/// ran over 4 minutes unbounded), so those run within 4 preemptions: enough for a thread to be
/// preempted between each of its loads and the next, which is where a stale view arises. The
/// default run explores them within 3 (the wrapping model takes 12 s under 4).
const TWO_REQUESTS_ON_A_THREAD: Bounds = Bounds {
    default: 3,
    exhaustive: 4,
};

/// Runs `plans` on a fresh log of `limit` units per window and checks every window.
fn model(
    name: &str,
    limit: u64,
    plans: Vec<Vec<Check>>,
    then: fn(&SlidingLogLimiter<ManualClock>, &[Vec<Outcome>]),
) {
    model_after(name, limit, 0, plans, then);
}

/// As [`model`], on a log whose first `prefill` units were admitted at 0, one by one, before the
/// threads start: their records are in the ring, so checks read them (a fresh log's checks
/// read only empty slots until it has admitted its limit).
fn model_after(
    name: &str,
    limit: u64,
    prefill: u64,
    plans: Vec<Vec<Check>>,
    then: fn(&SlidingLogLimiter<ManualClock>, &[Vec<Outcome>]),
) {
    let bounds = match plans.iter().map(Vec::len).max() {
        Some(1) => Bounds::from(UNREACHED_PREEMPTION_BOUND),
        _ => TWO_REQUESTS_ON_A_THREAD,
    };
    explore(name, bounds, move || {
        let quota = SlidingLog::new(limit, Duration::from_nanos(WINDOW_NS)).unwrap();
        let limiter = Arc::new(SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap());
        for _ in 0..prefill {
            assert!(limiter.check_at(at(0)).is_allowed());
        }
        let outcomes = run_concurrently(ModelThread::OnlyJoins, &limiter, plans.clone(), perform);
        assert_no_window_holds_more_than(limit, &outcomes);
        then(&limiter, &outcomes);
    });
}

/// The units admitted by requests judged at `judged_ns`.
fn units_admitted_at(judged_ns: u64, outcomes: &[Vec<Outcome>]) -> u64 {
    outcomes
        .iter()
        .flatten()
        .filter(|outcome| outcome.allowed && outcome.judged_ns == judged_ns)
        .map(|outcome| outcome.cost)
        .sum()
}

/// Exactly the limit was admitted by requests all read at 5, and nothing remains at 5.
fn spent_exactly_at_five(limiter: &SlidingLogLimiter<ManualClock>, outcomes: &[Vec<Outcome>]) {
    assert_eq!(
        admitted_units(outcomes),
        limiter.quota().limit(),
        "{outcomes:?}"
    );
    let after = limiter.peek_with(Request::cost(0).at(at(5))).unwrap();
    assert_eq!(after.remaining(), 0, "{outcomes:?}");
    assert!(limiter
        .peek_with(Request::new().at(at(5)))
        .unwrap()
        .is_denied());
}

fn admitted_units(outcomes: &[Vec<Outcome>]) -> u64 {
    outcomes
        .iter()
        .flatten()
        .filter(|outcome| outcome.allowed)
        .map(|outcome| outcome.cost)
        .sum()
}

/// Two unit checks at one instant on a limit of one: exactly one passes, and the log then has
/// nothing left at that instant.
#[test]
fn two_unit_checks_on_a_limit_of_one() {
    model(
        "sliding log: two unit checks, limit 1",
        1,
        vec![checks(&[(1, 5)]), checks(&[(1, 5)])],
        spent_exactly_at_five,
    );
}

/// Two requests of two units at one instant on a limit of two: exactly one passes (the second
/// needs the first's records, written by whichever thread gets there: a log that advanced its
/// position before writing them admits both).
#[test]
fn two_requests_of_two_units_on_a_limit_of_two() {
    model(
        "sliding log: two requests of 2 units, limit 2",
        2,
        vec![checks(&[(2, 5)]), checks(&[(2, 5)])],
        spent_exactly_at_five,
    );
}

/// A request of two units races a unit check on a limit of three, at one instant: they fit
/// together, so both pass, and nothing remains.
#[test]
fn a_request_of_two_units_and_a_unit_check_on_a_limit_of_three() {
    model(
        "sliding log: 2 units and 1 unit, limit 3",
        3,
        vec![checks(&[(2, 5)]), checks(&[(1, 5)])],
        spent_exactly_at_five,
    );
}

/// The ring wraps under a thread's feet: on a limit of one (a ring of one slot), one thread
/// admits at 0 and at 10 while another checks at 10. Whoever is second at 10 is denied; a check
/// that acted on a slot it read a lap late would admit two units in one window.
#[test]
fn a_check_racing_two_laps_of_the_ring() {
    model(
        "sliding log: a check racing two laps, limit 1",
        1,
        vec![checks(&[(1, 0), (1, 10)]), checks(&[(1, 10)])],
        |_, outcomes| {
            // Exactly one unit is judged and admitted at 10 (a check read at 0 that comes
            // after one at 10 is judged at 10 and denied).
            assert_eq!(units_admitted_at(10, outcomes), 1, "{outcomes:?}");
        },
    );
}

/// Requests of two units wrap a ring of two slots while time moves: every window still holds at
/// most two units.
#[test]
fn requests_of_two_units_wrapping_the_ring() {
    model(
        "sliding log: 2-unit requests wrapping, limit 2",
        2,
        vec![checks(&[(2, 0), (2, 10)]), checks(&[(1, 10)])],
        |_, outcomes| {
            let at_ten = units_admitted_at(10, outcomes);
            assert!(
                at_ten >= 1,
                "nothing passed at 10 though the window was empty: {outcomes:?}"
            );
        },
    );
}

/// Requests that all fit at 10, after a full window of units at 0 (all left by 10): every one
/// is admitted. A check that reads the unit that must leave after another request has written
/// the next lap's record over it (the ring is the limit's size) must not deny on that record.
fn everything_fits_after_a_full_old_window(
    _: &SlidingLogLimiter<ManualClock>,
    outcomes: &[Vec<Outcome>],
) {
    assert!(
        outcomes.iter().flatten().all(|outcome| outcome.allowed),
        "a request that fitted was denied: {outcomes:?}"
    );
}

/// Two unit checks at 10 on a limit of two whose two units were admitted at 0.
#[test]
fn two_unit_checks_after_a_full_window_on_a_limit_of_two() {
    model_after(
        "sliding log: two unit checks after a full window, limit 2",
        2,
        2,
        vec![checks(&[(1, 10)]), checks(&[(1, 10)])],
        everything_fits_after_a_full_old_window,
    );
}

/// A request of two units and a unit check at 10 on a limit of three (a ring of four slots)
/// whose three units were admitted at 0.
#[test]
fn two_units_and_one_after_a_full_window_on_a_limit_of_three() {
    model_after(
        "sliding log: 2 units and 1 unit after a full window, limit 3",
        3,
        3,
        vec![checks(&[(2, 10)]), checks(&[(1, 10)])],
        everything_fits_after_a_full_old_window,
    );
}

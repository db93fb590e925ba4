//! Loom models of the counters' slot protocol (src/thread_index.rs,
//! src/limiter/counters/stripes.rs): a thread claims a counting slot (a compare-and-swap, Acquire) at its
//! first count and counts on its slot's stripe with a Relaxed load and a Relaxed store; a
//! thread-local's destructor frees the slot when the thread ends (a Release store), and a later
//! thread may claim it and continue from the stripe's value; a thread that owns no slot counts on
//! a shared stripe with `fetch_add`.
//!
//! Under loom the registry has one slot and the counters one shared stripe, so two threads race
//! for the slot and the loser counts on the shared stripe, and a thread that owns no slot tries
//! to claim one at every count (so a thread that lost the slot may take it over later). Loom's
//! thread-locals are per modelled thread and are dropped when the thread ends, which is what
//! frees a slot here.
//!
//! Every model asserts, once the threads are joined, that the limiter's totals are exactly what
//! the threads' decisions say: calls allowed and denied, and their units. A count lost by a
//! load and store that read a stale value (an owner that did not see its slot's previous
//! owner's stores), or by two threads writing one stripe at once, shows as a total short of
//! the decisions.
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test counters`

use loom::sync::Arc;
use nanolimit::counters::Counters;
use nanolimit::Stats;
use nanolimit::{Gcra, Limiter, ManualClock, Request};
use nanolimit_loom_tests::{at, explore};

/// The instant of every check: nothing is earned back while the threads run.
const NOW_NS: u64 = 1_000_000_000;

/// A counted GCRA limiter, one unit per second, a burst of `burst`: at one instant it admits
/// `burst` units, and denies what does not fit.
type Counted = Limiter<Gcra, ManualClock, Counters>;

fn counted_limiter(burst: u64) -> Arc<Counted> {
    let quota = Gcra::per_second(1).unwrap().with_burst(burst).unwrap();
    Arc::new(Limiter::with_clock(quota, ManualClock::new()).with_counters())
}

/// `check_with(Request::cost(cost).at(NOW))`: whether it was allowed, and its cost.
fn check(limiter: &Counted, cost: u64) -> (bool, u64) {
    let decision = limiter
        .check_with(Request::cost(cost).at(at(NOW_NS)))
        .expect("every modelled cost fits the burst");
    (decision.is_allowed(), cost)
}

/// Spawns a thread that makes one check per cost, then ends as a thread does: its counting slot
/// freed (`end_of_thread`, the destructor's step, called explicitly: loom runs a thread's
/// thread-local destructors only after its `join` has returned, where std runs them before), and
/// returns its decisions.
fn spawn_checking(
    limiter: &Arc<Counted>,
    costs: Vec<u64>,
) -> loom::thread::JoinHandle<Vec<(bool, u64)>> {
    let limiter = Arc::clone(limiter);
    loom::thread::spawn(move || {
        let decisions = costs
            .into_iter()
            .map(|cost| check(&limiter, cost))
            .collect();
        nanolimit::counters::end_of_thread();
        decisions
    })
}

/// The totals the threads' decisions add up to.
fn totals_of<'a>(decisions: impl IntoIterator<Item = &'a (bool, u64)>) -> Stats {
    let mut totals = Stats::default();
    for &(allowed, cost) in decisions {
        if allowed {
            totals.allowed += 1;
            totals.allowed_units += cost;
        } else {
            totals.denied += 1;
            totals.denied_units += cost;
        }
    }
    totals
}

/// Three threads count on one limiter at once: one slot among them. Whichever counts first
/// claims the slot, and a thread that owns none counts on the shared stripe and tries again at
/// its next count; when the first owner ends, its destructor frees the slot and another thread
/// may claim it, with no join in between: only the Release store that frees the slot and the
/// claim's Acquire order the old owner's stores before the new owner's load. Costs of 1 (one
/// count), 2 and 0 (a call and its extra units). Burst 2: the first two units are admitted, the
/// rest denied, in whatever order the checks run.
#[test]
fn a_slot_freed_by_an_ending_thread_passes_on_without_losing_counts() {
    explore(
        "a_slot_freed_by_an_ending_thread_passes_on_without_losing_counts",
        2,
        || {
            let limiter = counted_limiter(2);
            let threads: Vec<_> = [vec![1, 2], vec![0], vec![1]]
                .into_iter()
                .map(|costs| spawn_checking(&limiter, costs))
                .collect();
            let decisions: Vec<Vec<(bool, u64)>> = threads
                .into_iter()
                .map(|thread| thread.join().unwrap())
                .collect();
            let expected = totals_of(decisions.iter().flatten());
            assert_eq!(expected.calls(), 4);
            assert_eq!(
                limiter.stats(),
                expected,
                "totals after the joins differ from the decisions {decisions:?}"
            );
        },
    );
}

/// Two threads count on one limiter; the first is joined, and a third thread, spawned after
/// that, counts while the second still runs: it claims the slot the first freed (if the first
/// owned it; else the second may hold it, or take it over). The model's thread reads the totals
/// between: after the first thread's join they hold at least its counts, and a later read is
/// never below an earlier one.
#[test]
fn a_thread_started_after_another_ended_continues_its_slot() {
    explore(
        "a_thread_started_after_another_ended_continues_its_slot",
        2,
        || {
            let limiter = counted_limiter(2);
            let spawn = |costs: Vec<u64>| spawn_checking(&limiter, costs);
            let first = spawn(vec![1, 2]);
            let second = spawn(vec![1, 0]);
            let first = first.join().unwrap();
            let after_first = limiter.stats();
            let seen_first = totals_of(&first);
            assert!(
                after_first.calls() >= seen_first.calls(),
                "{after_first:?} misses the joined thread's {first:?}"
            );
            let third = spawn(vec![1]);
            let during_third = limiter.stats();
            assert!(
                during_third.allowed >= after_first.allowed
                    && during_third.denied >= after_first.denied,
                "a later read went down: {after_first:?}, then {during_third:?}"
            );
            let second = second.join().unwrap();
            let third = third.join().unwrap();
            let expected = totals_of(first.iter().chain(&second).chain(&third));
            assert_eq!(
                limiter.stats(),
                expected,
                "totals after the joins differ from the decisions {first:?}, {second:?}, {third:?}"
            );
        },
    );
}

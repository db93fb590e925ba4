//! Many threads hammering one direct limiter on a frozen [`ManualClock`]: nothing refills, so
//! the limiter must admit exactly its limit in total, however the compare-and-swap races turn
//! out — no lost update (over-admission) and no lost capacity (under-admission).

use nanolimit::{
    FixedWindow, Gcra, Limiter, ManualClock, Quota, Request, SlidingWindow, Timestamp,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Barrier;
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;
const THREAD_COUNTS: [usize; 3] = [2, 4, 8];
const LIMIT: u64 = 1_000_000;

/// Readings frozen in the middle of a window (and far from the origin).
const FROZEN_AT_NS: u64 = 1_234 * SECOND_NS + SECOND_NS / 2;

fn frozen_at() -> Timestamp {
    Timestamp::from_ns(FROZEN_AT_NS).unwrap()
}

fn gcra() -> Gcra {
    Gcra::per_second(1_000).unwrap().with_burst(LIMIT).unwrap()
}

fn sliding_window() -> SlidingWindow {
    SlidingWindow::new(LIMIT, Duration::from_secs(1)).unwrap()
}

fn fixed_window() -> FixedWindow {
    FixedWindow::new(LIMIT, Duration::from_secs(1)).unwrap()
}

/// Runs `work(thread_index)` on `threads` threads released together; returns their results.
fn on_threads<T: Send>(threads: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let start = Barrier::new(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (start, work) = (&start, &work);
                scope.spawn(move || {
                    start.wait();
                    work(index)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    })
}

/// Unit checks until denied, on every thread: exactly the limit is admitted in total.
fn unit_checks_admit_exactly_the_limit<Q: Quota>(quota: Q) {
    for threads in THREAD_COUNTS {
        let clock = ManualClock::starting_at(frozen_at());
        let limiter = Limiter::with_clock(quota, clock);
        let admitted = on_threads(threads, |_| {
            let mut admitted = 0u64;
            while limiter.check().is_allowed() {
                admitted += 1;
            }
            admitted
        });
        let total: u64 = admitted.iter().sum();
        assert_eq!(total, LIMIT, "{quota:?} on {threads} threads: {admitted:?}");
        let after = limiter.check();
        assert!(after.is_denied());
        assert_eq!(after.remaining(), 0);
    }
}

/// Random costs on every thread, a bounded number of attempts each; then the admitted costs
/// plus what is left must be exactly the limit.
fn random_costs_account_exactly<Q: Quota>(quota: Q) {
    for threads in THREAD_COUNTS {
        let clock = ManualClock::starting_at(frozen_at());
        let limiter = Limiter::with_clock(quota, clock);
        let largest_cost = LIMIT / 500;
        // About 1.5 × the limit offered in total: the last attempts race for the remainder.
        let attempts = (3 * LIMIT / largest_cost) as usize / threads;
        let results = on_threads(threads, |index| {
            let mut rng = StdRng::seed_from_u64(index as u64);
            let (mut offered, mut admitted) = (0u64, 0u64);
            for _ in 0..attempts {
                let cost = rng.gen_range(1..=largest_cost);
                offered += cost;
                let decision = limiter.check_with(Request::cost(cost)).unwrap();
                if decision.is_allowed() {
                    admitted += cost;
                } else {
                    // A denial reports what was left when it was judged: less than the cost.
                    assert!(decision.remaining() < cost);
                }
            }
            (offered, admitted)
        });
        let offered: u64 = results.iter().map(|(offered, _)| offered).sum();
        let total: u64 = results.iter().map(|(_, admitted)| admitted).sum();
        assert!(offered > LIMIT);
        assert!(total <= LIMIT, "{quota:?}: {total} admitted");
        // While at least the largest cost was left, every attempt had to pass.
        assert!(
            total > LIMIT - largest_cost,
            "{quota:?}: {total} admitted of {LIMIT}"
        );
        // The final fill: exactly what was not admitted is left.
        let left = LIMIT - total;
        assert_eq!(
            limiter.peek().remaining(),
            left,
            "{quota:?} on {threads} threads"
        );
        if left > 0 {
            assert!(limiter
                .check_with(Request::cost(left))
                .unwrap()
                .is_allowed());
        }
        assert!(limiter.check().is_denied());
    }
}

#[test]
fn gcra_admits_exactly_its_burst_across_threads() {
    unit_checks_admit_exactly_the_limit(gcra());
}

#[test]
fn sliding_window_admits_exactly_its_limit_across_threads() {
    unit_checks_admit_exactly_the_limit(sliding_window());
}

#[test]
fn fixed_window_admits_exactly_its_limit_across_threads() {
    unit_checks_admit_exactly_the_limit(fixed_window());
}

#[test]
fn gcra_accounts_random_costs_exactly_across_threads() {
    random_costs_account_exactly(gcra());
}

#[test]
fn sliding_window_accounts_random_costs_exactly_across_threads() {
    random_costs_account_exactly(sliding_window());
}

#[test]
fn fixed_window_accounts_random_costs_exactly_across_threads() {
    random_costs_account_exactly(fixed_window());
}

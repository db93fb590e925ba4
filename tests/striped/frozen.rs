//! Threads hammering one striped limiter at one frozen instant: nothing refills and no lease
//! expires, so the shared quota grants at most the burst in leases. The threads together admit
//! at most the burst, and at least the burst less what the stripes can strand
//! (`stripes × (max lease − 1)`); and every unit the budget lost is either admitted or held by
//! a stripe (none lost, none created).

use crate::common::at;
use crate::{gcra, striped, START_NS};
use nanolimit::striped::StripedLimiter;
use nanolimit::{ManualClock, Request};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Barrier;

const BURST: u64 = 20_000;
const THREADS: usize = 4;

/// (stripes, (min lease, max lease)): more threads than stripes in all but the last, so that
/// threads share stripes (and find them claimed).
const CONFIGURATIONS: [(usize, (u64, u64)); 7] = [
    (2, (1, 1)),
    (2, (1, 8)),
    (2, (4, 16)),
    (2, (16, 16)),
    (1, (8, 64)),
    (2, (1, 256)),
    (4, (32, 32)),
];

/// Runs `work(thread)` on [`THREADS`] threads released together; returns their results.
fn on_threads<T: Send>(work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let start = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (start, work) = (&start, &work);
                scope.spawn(move || {
                    start.wait();
                    work(thread)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    })
}

/// The units all stripes hold.
fn held(limiter: &StripedLimiter<ManualClock>) -> u64 {
    (0..limiter.stripes())
        .map(|stripe| limiter.held_units(stripe))
        .sum()
}

/// Every unit the budget gave out is admitted or held: `admitted + held == burst − remaining`.
fn assert_conservation(limiter: &StripedLimiter<ManualClock>, admitted: u64, context: &str) {
    let held = held(limiter);
    assert_eq!(
        admitted + held,
        BURST - limiter.quota_remaining(),
        "{context}: {admitted} admitted and {held} held, {} left in the budget",
        limiter.quota_remaining()
    );
}

#[test]
fn unit_checks_at_one_instant_admit_at_most_the_burst_and_lose_nothing() {
    for (stripes, lease) in CONFIGURATIONS {
        let limiter = striped(gcra(1_000, BURST), stripes, lease, 10_000_000);
        let now = at(START_NS);
        let per_thread = on_threads(|_| {
            let mut admitted = 0u64;
            while limiter.check_at(now).is_allowed() {
                admitted += 1;
            }
            admitted
        });
        let admitted: u64 = per_thread.iter().sum();
        let context = format!("{stripes} stripes, leases {lease:?}: {per_thread:?}");
        let stranded = limiter.stripes() as u64 * (lease.1 - 1);
        assert!(admitted <= BURST, "{context}: {admitted} admitted");
        assert!(
            admitted >= BURST - stranded,
            "{context}: {admitted} admitted"
        );
        assert_conservation(&limiter, admitted, &context);
        for stripe in 0..limiter.stripes() {
            assert!(limiter.held_units(stripe) < lease.1, "{context}");
        }
    }
}

/// Threads pick stripes themselves (`check_at_stripe`, several threads per stripe) and mix in
/// costs of 1 to 5 on their own stripe, a bounded number of attempts each: whatever they stop
/// at, the admitted units and the held units account for exactly what the budget gave.
#[test]
fn mixed_costs_at_one_instant_account_for_every_leased_unit() {
    for (index, (stripes, lease)) in CONFIGURATIONS.into_iter().enumerate() {
        let limiter = striped(gcra(1_000, BURST), stripes, lease, 10_000_000);
        let now = at(START_NS);
        let per_thread = on_threads(|thread| {
            let mut rng = StdRng::seed_from_u64((index * THREADS + thread) as u64);
            let mut admitted = 0u64;
            for _ in 0..BURST / 2 {
                let decision = if rng.gen_bool(0.5) {
                    limiter.check_at_stripe(rng.gen_range(0..4), now)
                } else {
                    let cost = rng.gen_range(1..=5);
                    limiter.check_with(Request::cost(cost).at(now)).unwrap()
                };
                if decision.is_allowed() {
                    admitted += decision.cost();
                }
            }
            admitted
        });
        let admitted: u64 = per_thread.iter().sum();
        let context = format!("{stripes} stripes, leases {lease:?}: {per_thread:?}");
        assert!(admitted <= BURST, "{context}: {admitted} admitted");
        assert_conservation(&limiter, admitted, &context);
        // The threads offered four times the burst, unit checks on every stripe to the end:
        // what the budget and the stripes still hold is less than the largest cost.
        let left = limiter.quota_remaining() + held(&limiter);
        assert!(left < 5, "{context}: {left} units left after the rush");
    }
}

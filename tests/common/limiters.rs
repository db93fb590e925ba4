//! Direct limiters on a [`ManualClock`], checked and peeked at explicit readings, and driven by
//! random schedules.

use super::time::{at, YEAR_NS};
use nanolimit::{Decision, Limiter, ManualClock, Quota, Request};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A limiter on a fresh [`ManualClock`] at its origin.
pub fn limiter<Q: Quota>(quota: Q) -> Limiter<Q, ManualClock> {
    Limiter::with_clock(quota, ManualClock::new())
}

/// Checks `cost` at `now_ns` (a cost the quota admits at once).
pub fn check_cost_at<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    cost: u64,
    now_ns: u64,
) -> Decision<Q> {
    limiter
        .check_with(Request::cost(cost).at(at(now_ns)))
        .unwrap()
}

/// Peeks at `cost` at `now_ns` (a cost the quota admits at once).
pub fn peek_cost_at<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    cost: u64,
    now_ns: u64,
) -> Decision<Q> {
    limiter
        .peek_with(Request::cost(cost).at(at(now_ns)))
        .unwrap()
}

/// Peeks at one unit at `now_ns`.
pub fn peek_at<Q: Quota>(limiter: &Limiter<Q, ManualClock>, now_ns: u64) -> Decision<Q> {
    peek_cost_at(limiter, 1, now_ns)
}

/// Drives a limiter with a random schedule and calls `visit(limiter, now_ns, cost, decision)`
/// after every check. The first reading is in the first year; `next` draws each following
/// `(gap_ns, cost)` from the reading so far, or ends the schedule early with `None`.
pub fn random_schedule<Q: Quota>(
    quota: Q,
    seed: u64,
    checks: usize,
    mut next: impl FnMut(&mut StdRng, u64) -> Option<(u64, u64)>,
    mut visit: impl FnMut(&Limiter<Q, ManualClock>, u64, u64, &Decision<Q>),
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let limiter = limiter(quota);
    let mut now = rng.gen_range(0..YEAR_NS);
    for _ in 0..checks {
        let Some((gap_ns, cost)) = next(&mut rng, now) else {
            break;
        };
        now += gap_ns;
        let decision = check_cost_at(&limiter, cost, now);
        visit(&limiter, now, cost, &decision);
    }
}

//! Assertions on what a quota and a limiter decide, written once over [`Quota`]: exact waits
//! (`retry_after`, `reset_after`), `remaining`, fresh states and limiters, costs of zero and
//! above the limit. The limit a quota reports is the GCRA burst or the limit per window.

use super::limiters::{check_cost_at, limiter, peek_at, peek_cost_at};
use super::time::{at, HORIZON_NS, SECOND_NS, YEAR_NS};
use nanolimit::quota::Step;
use nanolimit::{Decision, Limiter, ManualClock, Quota, Request, RequestError, Timestamp};
use std::time::Duration;

/// Asserts that `decision` (a check of `cost` at `now_ns` on `limiter`) reports an exact
/// `retry_after`: zero when allowed; when denied, positive, long enough (the same cost passes
/// after waiting it), at most `slack_ns` too long (waiting `slack_ns + 1` less is still denied),
/// and equal to the pure [`Quota::retry_after_ns`]. Returns the wait of a denial.
pub fn assert_retry_after_is_exact<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    now_ns: u64,
    cost: u64,
    decision: &Decision<Q>,
    slack_ns: u64,
) -> Option<u64> {
    let quota = limiter.quota();
    if decision.is_allowed() {
        assert_eq!(decision.retry_after(), Duration::ZERO);
        return None;
    }
    let wait = decision.retry_after().as_nanos() as u64;
    assert!(wait > 0, "{quota:?}: denied at {now_ns} with no wait");
    assert!(
        peek_cost_at(limiter, cost, now_ns + wait).is_allowed(),
        "{quota:?}: cost {cost} denied at {now_ns}, still denied after retry_after {wait} ns"
    );
    if wait > slack_ns {
        assert!(
            peek_cost_at(limiter, cost, now_ns + wait - slack_ns - 1).is_denied(),
            "{quota:?}: cost {cost} denied at {now_ns}, retry_after {wait} ns is more than \
             {slack_ns} ns too long"
        );
    }
    let state = decision.state_word();
    assert_eq!(
        quota.retry_after_ns(state, quota.instant(at(now_ns)), cost),
        wait
    );
    Some(wait)
}

/// Asserts that waiting `decision`'s `reset_after` from `now_ns` restores the whole limit, and
/// that the state is not yet fresh `slack_ns + 1` sooner. Returns the wait.
pub fn assert_reset_after_restores_the_limit<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    now_ns: u64,
    decision: &Decision<Q>,
    slack_ns: u64,
) -> u64 {
    let quota = limiter.quota();
    let wait = decision.reset_after().as_nanos() as u64;
    let state = decision.state_word();
    assert_eq!(peek_at(limiter, now_ns + wait).remaining(), quota.limit());
    if wait > slack_ns {
        let sooner = quota.instant(at(now_ns + wait - slack_ns - 1));
        assert!(
            !quota.is_fresh(state, sooner),
            "{quota:?} at {now_ns}+{wait}"
        );
    }
    wait
}

/// Asserts that `remaining` at `now_ns` counts exactly the unit requests that pass on `state`: a
/// cost of `remaining` passes and one more does not.
pub fn assert_remaining_matches_step<Q: Quota>(quota: &Q, state: u64, now_ns: u64, remaining: u64) {
    let instant = quota.instant(at(now_ns));
    if remaining > 0 {
        assert!(matches!(
            quota.step(state, instant, remaining),
            Step::Allow(_)
        ));
    }
    if remaining < quota.limit() {
        assert_eq!(quota.step(state, instant, remaining + 1), Step::Deny);
    }
}

/// Asserts that a fresh state admits the whole limit at any reading, from the origin to the
/// horizon, with nothing to wait for.
pub fn assert_a_fresh_state_admits_the_limit<Q: Quota>(quota: &Q) {
    let limit = quota.limit();
    for now_ns in [0, 1, SECOND_NS, 10 * YEAR_NS, HORIZON_NS - 1, HORIZON_NS] {
        let now = quota.instant(at(now_ns));
        assert!(
            matches!(quota.step(Q::FRESH, now, limit), Step::Allow(_)),
            "{quota:?} at {now_ns}"
        );
        assert!(quota.is_fresh(Q::FRESH, now));
        assert_eq!(quota.remaining(Q::FRESH, now), limit);
        assert_eq!(quota.reset_after_ns(Q::FRESH, now), 0);
        assert_eq!(quota.retry_after_ns(Q::FRESH, now, limit), 0);
    }
}

/// Asserts that a fresh limiter admits the whole limit at once at `now_ns`, and then nothing.
pub fn assert_a_fresh_limiter_admits_the_limit_once<Q: Quota>(quota: Q, now_ns: u64) {
    let limiter = limiter(quota);
    let decision = check_cost_at(&limiter, quota.limit(), now_ns);
    assert!(decision.is_allowed());
    assert_eq!(decision.remaining(), 0);
    assert!(limiter.check_at(at(now_ns)).is_denied());
}

/// Asserts, on a fresh `limiter` whose limit is 4, that a cost of 5 is an error (not a denial)
/// that consumes nothing, both when the limit is there and once it is spent. Returns the
/// `retry_after` of the denial of the whole limit once spent.
pub fn assert_a_cost_above_a_limit_of_four_is_an_error<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
) -> Duration {
    assert_eq!(limiter.quota().limit(), 4);
    let too_much = RequestError::CostAboveLimit { cost: 5, limit: 4 };
    let origin = Timestamp::ORIGIN;
    // On a fresh state, where a denial is impossible for any cost up to the limit.
    assert_eq!(
        limiter.check_with(Request::cost(5).at(origin)).unwrap_err(),
        too_much
    );
    assert_eq!(
        limiter.peek_with(Request::cost(5).at(origin)).unwrap_err(),
        too_much
    );
    // The error consumed nothing.
    assert!(check_cost_at(limiter, 4, 0).is_allowed());
    // Once spent, the limit is denied (not an error), and a larger cost is still an error.
    let denied = check_cost_at(limiter, 4, 0);
    assert!(denied.is_denied());
    assert_eq!(
        limiter.check_with(Request::cost(5).at(origin)).unwrap_err(),
        too_much
    );
    denied.retry_after()
}

/// Asserts that the pure step denies each of `costs` (all above the limit) on each of `states`
/// at each of `readings_ns`, without panicking.
pub fn assert_the_step_denies_costs_above_the_limit<Q: Quota>(
    quota: &Q,
    states: &[u64],
    readings_ns: &[u64],
    costs: &[u64],
) {
    for &state in states {
        for &now_ns in readings_ns {
            for &cost in costs {
                assert!(cost > quota.limit());
                assert_eq!(
                    quota.step(state, quota.instant(at(now_ns)), cost),
                    Step::Deny,
                    "{quota:?}: state {state:#x} at {now_ns}, cost {cost}"
                );
            }
        }
    }
}

/// Asserts, on a fresh `limiter` whose limit is 2, that once spent a cost of zero still passes,
/// reports nothing remaining and no wait, and changes nothing. Returns the denial that found it
/// spent.
pub fn assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
) -> Decision<Q> {
    assert_eq!(limiter.quota().limit(), 2);
    assert!(check_cost_at(limiter, 2, 0).is_allowed());
    let spent = limiter.check_at(Timestamp::ORIGIN);
    assert!(spent.is_denied());
    let zero = check_cost_at(limiter, 0, 0);
    assert!(zero.is_allowed());
    assert_eq!(zero.retry_after(), Duration::ZERO);
    assert_eq!(zero.remaining(), 0);
    assert_eq!(zero.state_word(), spent.state_word());
    assert!(limiter.check_at(Timestamp::ORIGIN).is_denied());
    spent
}

/// Calls every pure method on (`state`, `now`), with costs from zero past the limit: none may
/// panic.
pub fn call_every_method<Q: Quota>(quota: &Q, state: u64, now: Q::Instant) {
    let limit = quota.limit();
    for cost in [0, 1, limit, limit + 1, u64::MAX] {
        let _ = quota.step(state, now, cost);
    }
    let _ = quota.remaining(state, now);
    let _ = quota.reset_after_ns(state, now);
    let _ = quota.is_fresh(state, now);
    for cost in [0, 1, limit] {
        let _ = quota.retry_after_ns(state, now, cost);
    }
}

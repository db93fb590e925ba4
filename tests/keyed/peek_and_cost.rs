//! Peeks, costs and decision metadata: a peek consumes and inserts nothing, a cost is all or
//! nothing, and a key's decisions report exactly what a direct limiter's would.

use crate::common::keyed::{assert_same_decision, table, TableShape, MILLISECOND_NS};
use crate::common::{at, SECOND_NS};
use nanolimit::keyed::{Exact, Hashed};
use nanolimit::{
    FixedWindow, Gcra, Limiter, ManualClock, Quota, Request, RequestError, SlidingWindow, Timestamp,
};
use std::time::Duration;

#[test]
fn peek_consumes_nothing_and_inserts_nothing() {
    let clock = ManualClock::new();
    let limiter = table::<Hashed, _>(
        Gcra::per_second(3).unwrap(),
        TableShape::capacity(100),
        &clock,
    );
    for _ in 0..10 {
        let peeked = limiter.peek(&7);
        assert!(peeked.is_allowed());
        assert_eq!(peeked.remaining(), 3);
        assert_eq!(peeked.limit(), 3);
        assert!(!peeked.is_untracked());
    }
    let origin = Timestamp::ORIGIN;
    assert!(limiter
        .peek_with(&7, Request::cost(3).at(origin))
        .unwrap()
        .is_allowed());
    assert_eq!(
        limiter
            .peek_with(&7, Request::cost(4).at(origin))
            .unwrap_err(),
        RequestError::CostAboveLimit { cost: 4, limit: 3 }
    );
    assert_eq!(limiter.stats().inserts, 0, "a peek must not insert");
    assert_eq!(limiter.entries(), 0);
    // The whole burst is still there.
    for remaining in (0..3).rev() {
        let decision = limiter.check(&7);
        assert!(decision.is_allowed());
        assert_eq!(decision.remaining(), remaining);
    }
    assert_eq!(limiter.stats().inserts, 1);
    let peeked = limiter.peek(&7);
    assert!(peeked.is_denied());
    assert_eq!(peeked.remaining(), 0);
    // A peek of a denied key reports when to come back, like the check would.
    assert_eq!(peeked.retry_after(), limiter.check(&7).retry_after());
    assert!(peeked.retry_after() > Duration::ZERO);
    // Later, the peek sees the refill (and still consumes nothing).
    let later = Request::new().at(at(SECOND_NS));
    assert!(limiter.peek_with(&7, later).unwrap().is_allowed());
    assert_eq!(limiter.peek_with(&7, later).unwrap().remaining(), 3);
    assert_eq!(limiter.check_at(&7, at(SECOND_NS)).remaining(), 2);
}

#[test]
fn a_cost_is_all_or_nothing_and_impossible_costs_are_errors() {
    let clock = ManualClock::new();
    let limiter = table::<Exact, _>(
        FixedWindow::per_second(10).unwrap(),
        TableShape::capacity(100),
        &clock,
    );
    let check = |key: u64, cost: u64| limiter.check_with(&key, Request::cost(cost));
    assert!(check(1, 6).unwrap().is_allowed());
    // 4 left: a cost of 5 is denied and takes nothing.
    let denied = check(1, 5).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 4);
    assert_eq!(denied.cost(), 5);
    assert!(check(1, 4).unwrap().is_allowed());
    assert!(check(1, 1).unwrap().is_denied());
    // More than the limit can never pass.
    assert_eq!(
        check(2, 11).unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 11,
            limit: 10
        }
    );
    assert!(check(2, 10).unwrap().is_allowed());
    // A cost of zero is always allowed, consumes nothing, and does not insert.
    let free = check(3, 0).unwrap();
    assert!(free.is_allowed());
    assert_eq!(free.remaining(), 10);
    assert!(check(1, 0).unwrap().is_allowed());
    assert_eq!(limiter.stats().inserts, 2);
    // The peek and tier forms of the same: a peek sees the 10 units of key 2 spent.
    assert!(limiter.peek_with(&2, Request::cost(1)).unwrap().is_denied());
    assert!(limiter
        .peek_with(&4, Request::cost(10))
        .unwrap()
        .is_allowed());
    assert_eq!(
        limiter.peek_with(&4, Request::cost(11)).unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 11,
            limit: 10
        }
    );
    let tier = limiter.tier(FixedWindow::per_second(20).unwrap()).unwrap();
    assert!(limiter
        .check_with(&2, Request::cost(10).tier(tier))
        .unwrap()
        .is_allowed());
    assert!(limiter
        .check_with(&2, Request::cost(1).tier(tier))
        .unwrap()
        .is_denied());
    assert_eq!(
        limiter
            .check_with(&2, Request::cost(21).tier(tier))
            .unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 21,
            limit: 20
        }
    );
    assert!(limiter
        .check_with(&5, Request::new().tier(tier).at(Timestamp::ORIGIN))
        .unwrap()
        .is_allowed());
    assert_eq!(
        limiter
            .peek_with(&5, Request::cost(1).at(Timestamp::ORIGIN))
            .unwrap()
            .remaining(),
        9
    );
    assert_eq!(limiter.stats().inserts, 3);
}

/// A deterministic mixed history (increasing times with some steps back, costs from 0 to the
/// limit, checks and peeks) applied to one key of a hashed table, of an exact table and to a
/// direct limiter: every decision must agree in every field.
fn keyed_metadata_matches_direct<Q: Quota + PartialEq>(quota: Q, step_ns: u64) {
    let clock = ManualClock::new();
    let hashed = table::<Hashed, Q>(quota, TableShape::capacity(100), &clock);
    let exact = table::<Exact, Q>(quota, TableShape::capacity(100), &clock);
    let direct = Limiter::with_clock(quota, clock.clone());
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut now_ns: u64 = 10 * SECOND_NS;
    let mut allowed = 0;
    let mut denied = 0;
    for step in 0..5_000 {
        let random = next();
        now_ns = if random % 10 == 0 {
            now_ns.saturating_sub(random % (2 * step_ns))
        } else {
            now_ns + random % step_ns
        };
        let cost = next() % (quota.limit() + 1);
        let context = format!("step {step} at {now_ns} ns, cost {cost}");
        clock.set(at(now_ns));
        if next() % 4 == 0 {
            let from_direct = direct.peek_with(Request::cost(cost)).unwrap();
            let from_hashed = hashed
                .peek_with(&42, Request::cost(cost).at(at(now_ns)))
                .unwrap();
            assert_same_decision(&from_hashed, &from_direct, &context);
            let from_exact = exact
                .peek_with(&42, Request::cost(cost).at(at(now_ns)))
                .unwrap();
            assert_same_decision(&from_exact, &from_direct, &context);
            if cost == 1 {
                assert_same_decision(&hashed.peek(&42), &direct.peek(), &context);
            }
        } else {
            let from_direct = direct.check_with(Request::cost(cost)).unwrap();
            let from_hashed = hashed.check_with(&42, Request::cost(cost)).unwrap();
            assert_same_decision(&from_hashed, &from_direct, &context);
            let from_exact = exact
                .check_with(&42, Request::cost(cost).at(at(now_ns)))
                .unwrap();
            assert_same_decision(&from_exact, &from_direct, &context);
            if from_direct.is_allowed() {
                allowed += 1;
            } else {
                denied += 1;
            }
        }
    }
    // The history exercised both outcomes.
    assert!(
        allowed > 100 && denied > 100,
        "{allowed} allowed, {denied} denied"
    );
    let over = Request::cost(quota.limit() + 1);
    assert_eq!(
        hashed.check_with(&42, over).unwrap_err(),
        direct.check_with(over).unwrap_err()
    );
    assert_eq!(hashed.stats().inserts, 1);
    assert_eq!(exact.stats().inserts, 1);
}

#[test]
fn keyed_decision_metadata_equals_direct_for_gcra() {
    keyed_metadata_matches_direct(
        Gcra::per_second(50).unwrap().with_burst(7).unwrap(),
        40 * MILLISECOND_NS,
    );
}

#[test]
fn keyed_decision_metadata_equals_direct_for_sliding_window() {
    keyed_metadata_matches_direct(SlidingWindow::per_second(9).unwrap(), 120 * MILLISECOND_NS);
}

#[test]
fn keyed_decision_metadata_equals_direct_for_fixed_window() {
    keyed_metadata_matches_direct(FixedWindow::per_second(9).unwrap(), 120 * MILLISECOND_NS);
}

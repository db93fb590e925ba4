//! What a caller gets: a clear error for every configuration that cannot work (never a panic),
//! `CostAboveLimit` for a cost above the burst, costs of zero that consume nothing, tiered
//! requests judged on the shared budget, and decisions whose metadata counts the shared budget
//! plus the caller's own stripe.

use crate::common::at;
use crate::{check_cost, check_on, gcra, striped, MS_NS, START_NS};
use nanolimit::striped::{StripedLimiter, StripedLimiterBuilder, MAX_STRIPES};
use nanolimit::{BuildError, Gcra, Limiter, ManualClock, Request, RequestError};
use std::time::Duration;

fn refused(builder: StripedLimiterBuilder<ManualClock>) -> BuildError {
    let error = builder.build().map(|_| ()).unwrap_err();
    assert!(!error.to_string().is_empty());
    error
}

/// The shortest and longest lease lifetimes a striped limiter accepts, as its error reports
/// them.
pub(crate) fn lease_lifetimes() -> (Duration, Duration) {
    match builder(gcra(1_000, 100))
        .lease_lifetime(Duration::ZERO)
        .build()
    {
        Err(BuildError::LeaseLifetime { min, max, .. }) => (min, max),
        other => panic!("a zero lifetime was not refused: {other:?}"),
    }
}

fn builder(quota: Gcra) -> StripedLimiterBuilder<ManualClock> {
    StripedLimiter::builder(quota).clock(ManualClock::new())
}

#[test]
fn configurations_that_cannot_work_are_refused_with_their_own_error() {
    let quota = gcra(1_000, 100);
    for stripes in [0, MAX_STRIPES + 1, usize::MAX] {
        let error = refused(builder(quota).stripes(stripes));
        let max = MAX_STRIPES;
        assert_eq!(error, BuildError::StripeCount { stripes, max });
        assert!(error.to_string().contains(&stripes.to_string()));
    }
    for (min_units, max_units) in [(0, 0), (0, 4), (5, 4), (100, 1)] {
        let error = refused(builder(quota).lease_units(min_units, max_units));
        let expected = BuildError::LeaseUnits {
            min_units,
            max_units,
        };
        assert_eq!(error, expected);
    }
    let error = refused(builder(quota).lease_units(1, 101));
    assert_eq!(
        error,
        BuildError::LeaseAboveBurst {
            max_units: 101,
            burst: 100
        }
    );
    assert!(error.to_string().contains("101") && error.to_string().contains("100"));
    let large = gcra(1_000_000_000, 1 << 25);
    let max = (1 << 24) - 2;
    assert_eq!(
        refused(builder(large).lease_units(1, max + 1)),
        BuildError::LeaseTooLarge {
            max_units: max + 1,
            max
        }
    );
    assert_eq!(
        builder(large)
            .lease_units(max, max)
            .build()
            .unwrap()
            .lease_units(),
        (max, max)
    );
    let (min, max) = lease_lifetimes();
    // A stripe's word times leases in grains of 2^19 ns; it needs four of them.
    assert_eq!(min, Duration::from_nanos(4 << 19));
    assert_eq!(max, Duration::from_secs(3_600));
    let one_ns = Duration::from_nanos(1);
    for lifetime in [Duration::ZERO, min - one_ns, max + one_ns] {
        let error = refused(builder(quota).lease_lifetime(lifetime));
        assert_eq!(error, BuildError::LeaseLifetime { lifetime, min, max });
    }
    for lifetime in [min, max] {
        let limiter = builder(quota).lease_lifetime(lifetime).build().unwrap();
        assert_eq!(limiter.lease_lifetime(), lifetime);
    }
}

#[test]
fn the_limits_of_the_configuration_are_accepted_and_the_defaults_fit_every_quota() {
    let quota = gcra(1_000, 100);
    assert_eq!(
        builder(quota)
            .stripes(MAX_STRIPES)
            .build()
            .unwrap()
            .stripes(),
        MAX_STRIPES
    );
    assert_eq!(builder(quota).stripes(3).build().unwrap().stripes(), 4);
    assert_eq!(
        builder(quota)
            .lease_units(100, 100)
            .build()
            .unwrap()
            .lease_units(),
        (100, 100)
    );
    // Defaults: leases of 1 to min(256, burst / (4 × stripes)), living 10 ms.
    let limiter = builder(gcra(1_000, 1_000)).stripes(2).build().unwrap();
    assert_eq!(limiter.lease_units(), (1, 125));
    assert_eq!(limiter.lease_lifetime(), Duration::from_millis(10));
    assert_eq!(
        builder(gcra(1_000, 1 << 20))
            .stripes(2)
            .build()
            .unwrap()
            .lease_units(),
        (1, 256)
    );
    for quota in [Gcra::per_day(1).unwrap(), gcra(1_000_000, 3), quota] {
        let limiter = StripedLimiter::builder(quota)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let (min_units, max_units) = limiter.lease_units();
        assert!(1 <= min_units && min_units <= max_units && max_units <= quota.limit());
        assert!(limiter.check().is_allowed());
    }
}

#[test]
fn a_cost_above_the_burst_is_an_error_and_consumes_nothing() {
    let limiter = striped(gcra(1_000, 16), 1, (4, 8), 10 * MS_NS);
    let above = Request::cost(17).at(at(START_NS));
    let expected = RequestError::CostAboveLimit {
        cost: 17,
        limit: 16,
    };
    assert_eq!(limiter.check_with(above).unwrap_err(), expected);
    assert_eq!(limiter.peek_with(above).unwrap_err(), expected);
    assert_eq!(limiter.quota_remaining(), 16);
    // The whole burst at once passes (a lease larger than the largest lease), and holds nothing.
    assert!(check_cost(&limiter, 16, START_NS).is_allowed());
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (0, 0));
}

#[test]
fn a_cost_of_zero_is_allowed_and_consumes_nothing() {
    let limiter = striped(gcra(1_000, 16), 1, (8, 8), 100 * MS_NS);
    // On a stripe holding units, and on an empty stripe with an empty budget.
    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    for _ in 0..2 {
        let before = (limiter.quota_remaining(), limiter.held_units(0));
        let decision = check_cost(&limiter, 0, START_NS);
        assert!(decision.is_allowed());
        assert_eq!(decision.cost(), 0);
        assert_eq!(decision.remaining(), before.0 + before.1);
        assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), before);
        while check_on(&limiter, 0, START_NS).is_allowed() {}
    }
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (0, 0));
}

/// A tier with a burst of 32 over a limiter of burst 16: a tiered request passes or fails on
/// the shared budget alone, under the tier's quota; it never spends the stripe's units, which
/// still serve untiered checks.
#[test]
fn a_tiered_request_is_judged_on_the_shared_budget() {
    let limiter = striped(gcra(1_000, 16), 1, (8, 8), 100 * MS_NS);
    let tiers = Limiter::with_clock(*limiter.quota(), ManualClock::new());
    let tier = tiers.tier(gcra(1_000, 32)).unwrap();
    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (8, 7));
    let tiered = |cost| {
        let request = Request::cost(cost).at(at(START_NS)).tier(tier);
        limiter.check_with(request).unwrap()
    };
    let decision = tiered(20);
    assert!(decision.is_allowed());
    assert_eq!(decision.limit(), 32);
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (0, 7));
    // The stripe holds 7, but the shared budget is 28 units into the tier's 32.
    assert!(tiered(5).is_denied());
    assert_eq!(limiter.held_units(0), 7);
    assert!(tiered(4).is_allowed());
    for _ in 0..7 {
        assert!(check_on(&limiter, 0, START_NS).is_allowed());
    }
    assert!(check_on(&limiter, 0, START_NS).is_denied());
}

/// `remaining` is what the shared budget could lease plus the units of the caller's stripe
/// (not another's), capped at the burst; `limit` is the burst.
#[test]
fn remaining_counts_the_budget_and_the_callers_stripe() {
    let limiter = striped(gcra(1_000, 16), 2, (8, 8), 100 * MS_NS);
    let steps = [
        (0, START_NS, 15),
        (1, START_NS, 7),
        (0, START_NS, 6),
        (1, START_NS, 6),
    ];
    for (stripe, now_ns, remaining) in steps {
        let decision = check_on(&limiter, stripe, now_ns);
        assert!(decision.is_allowed());
        assert_eq!(decision.remaining(), remaining, "stripe {stripe}");
        assert_eq!(
            decision.remaining(),
            limiter.quota_remaining() + limiter.held_units(stripe)
        );
        assert_eq!(decision.limit(), 16);
        assert_eq!(decision.retry_after(), Duration::ZERO);
    }
    // 50 ms later the budget is full again and stripe 0 still holds 5 after this check: capped.
    let decision = check_on(&limiter, 0, START_NS + 50 * MS_NS);
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (16, 5));
    assert_eq!(decision.remaining(), 16);
}

/// A stripe holding 3 units on an empty budget (1 unit per ms, burst 16) is asked for 5: the
/// denial's `retry_after` is the wait until the budget can lease the 2 it lacks (1.7 ms), not
/// the 5 (4.7 ms), and that wait is exact; `reset_after` is the budget's, less the 3 ms the
/// held units are worth; `remaining` counts them.
#[test]
fn a_denial_waits_only_for_what_the_stripe_lacks() {
    let limiter = striped(gcra(1_000, 16), 1, (4, 4), 100 * MS_NS);
    assert!(check_cost(&limiter, 12, START_NS).is_allowed());
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (4, 0));
    assert!(check_cost(&limiter, 1, START_NS).is_allowed());
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (0, 3));

    let asked_ns = START_NS + 300_000;
    let denied = check_cost(&limiter, 5, asked_ns);
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_micros(1_700));
    assert_eq!(denied.reset_after(), Duration::from_micros(12_700));
    assert_eq!((denied.remaining(), denied.limit()), (3, 16));
    assert_eq!(limiter.held_units(0), 3, "a denial writes nothing");

    let ready_ns = asked_ns + denied.retry_after().as_nanos() as u64;
    assert!(check_cost(&limiter, 5, ready_ns - 1).is_denied());
    let admitted = check_cost(&limiter, 5, ready_ns);
    assert!(admitted.is_allowed());
    assert_eq!((limiter.quota_remaining(), limiter.held_units(0)), (0, 0));
}

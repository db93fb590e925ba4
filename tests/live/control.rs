//! Live control: the unlimited and "burst then never" quotas, a direct limiter whose quota
//! changes at runtime ([`LiveLimiter`]), and the reset of one key of a keyed table.

use crate::common;
use crate::common::{
    any_cost, any_reading, any_state, at, check_every_method_on_any_input, limiter,
    proptest_config, HORIZON_NS, SECOND_NS, YEAR_NS,
};
use nanolimit::live::LiveLimiter;
use nanolimit::quota::Step;
use nanolimit::{
    FixedWindow, Gcra, KeyedLimiter, ManualClock, Quota, QuotaError, Request, SlidingWindow,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// The unlimited quota.

#[test]
fn an_unlimited_limiter_admits_every_request_of_a_busy_schedule() {
    let limiter = limiter(Gcra::unlimited());
    let mut rng = StdRng::seed_from_u64(14);
    let mut now_ns = 0;
    for _ in 0..100_000 {
        // Bursts at one instant, bytes-sized costs, and the odd huge one.
        now_ns += rng.gen_range(0..=1_000);
        let cost = match rng.gen_range(0..10) {
            0 => rng.gen_range(1..=1 << 40),
            _ => rng.gen_range(1..=1_500),
        };
        let decision = limiter
            .check_with(Request::cost(cost).at(at(now_ns)))
            .unwrap();
        assert!(decision.is_allowed(), "cost {cost} at {now_ns}");
        assert_eq!(decision.retry_after(), Duration::ZERO);
    }
    // The largest cost it accepts passes on a fresh state; one more is an error, not a denial.
    let fresh = common::limiter(Gcra::unlimited());
    let largest = Gcra::unlimited().limit();
    assert_eq!(largest, (1 << 62) - 1);
    assert!(fresh
        .check_with(Request::cost(largest))
        .unwrap()
        .is_allowed());
    assert!(fresh.check_with(Request::cost(largest + 1)).is_err());
}

#[test]
fn a_premium_tier_is_unlimited_on_a_table_whose_free_tier_is_limited() {
    for base in [
        Gcra::per_second(2).unwrap(),
        Gcra::new(3, Duration::from_secs(1))
            .unwrap()
            .with_burst(2)
            .unwrap(),
    ] {
        let clock = ManualClock::new();
        let limiter = KeyedLimiter::builder(base)
            .capacity(64)
            .clock(clock.clone())
            .build()
            .unwrap();
        let premium = limiter.tier(Gcra::unlimited()).unwrap();
        assert!(premium.is_unlimited());
        for _ in 0..10_000 {
            let request = Request::new().tier(premium);
            assert!(limiter
                .check_with(&"premium", request)
                .unwrap()
                .is_allowed());
        }
        assert!(limiter.check(&"free").is_allowed());
        assert!(limiter.check(&"free").is_allowed());
        let denied = limiter.check(&"free");
        assert!(denied.is_denied(), "{base:?}");
        // The free tier's advice is its own, unchanged by the unlimited tier's lead.
        assert!(denied.retry_after() <= Duration::from_millis(500));
        assert!(denied.retry_after() > Duration::ZERO);
        // A key moved from the free tier to the premium one is admitted at once, and back.
        let request = Request::new().tier(premium);
        assert!(limiter.check_with(&"free", request).unwrap().is_allowed());
        assert!(limiter.check(&"free").is_denied());
        clock.advance(Duration::from_secs(1));
        assert!(limiter.check(&"free").is_allowed());
    }
}

#[test]
fn an_unlimited_state_keeps_the_quota_invariants() {
    let quota = Gcra::unlimited();
    let mut rng = StdRng::seed_from_u64(15);
    for _ in 0..100_000 {
        let state = match rng.gen_range(0..3) {
            0 => rng.gen(),
            1 => Gcra::FRESH,
            _ => quota.instant(at(rng.gen_range(0..=HORIZON_NS))).ticks(),
        };
        let now_ns = rng.gen_range(0..=HORIZON_NS);
        let now = quota.instant(at(now_ns));
        let cost = rng.gen_range(1..=quota.limit());
        if let Step::Allow(written) = quota.step(state, now, cost) {
            assert!(written > state);
            assert!(written < u64::MAX - 1);
            let earlier = quota.instant(at(rng.gen_range(0..=now_ns)));
            let fresh = rng.gen_range(0..=earlier.ticks());
            assert!(quota.is_fresh(fresh, earlier));
            assert!(written > fresh);
        }
    }
    let now = quota.instant(at(5 * SECOND_NS));
    assert!(quota.is_fresh(Gcra::FRESH, now));
    assert!(matches!(
        quota.step(Gcra::FRESH, now, quota.limit()),
        Step::Allow(_)
    ));
}

// ---------------------------------------------------------------------------------------------
// "Burst then never".

/// Both window quotas' "burst then never" constructors, and their `new`'s limit bound.
fn never_quotas(
    limit: u64,
) -> (
    Result<FixedWindow, QuotaError>,
    Result<SlidingWindow, QuotaError>,
) {
    (
        FixedWindow::burst_then_never(limit),
        SlidingWindow::burst_then_never(limit),
    )
}

#[test]
fn burst_then_never_rejects_the_limits_its_window_quota_rejects() {
    assert_eq!(never_quotas(0).0, Err(QuotaError::ZeroLimit));
    assert_eq!(never_quotas(0).1, Err(QuotaError::ZeroLimit));
    let (fixed, sliding) = never_quotas(FixedWindow::MAX_LIMIT + 1);
    assert_eq!(
        fixed,
        Err(QuotaError::LimitTooLarge {
            requested: FixedWindow::MAX_LIMIT + 1,
            max: FixedWindow::MAX_LIMIT
        })
    );
    assert!(matches!(sliding, Err(QuotaError::LimitTooLarge { .. })));
    assert!(FixedWindow::burst_then_never(FixedWindow::MAX_LIMIT).is_ok());
    assert!(SlidingWindow::burst_then_never(SlidingWindow::MAX_LIMIT).is_ok());
}

/// A limiter under `quota` admits exactly its limit over a random schedule spanning the whole
/// horizon, and every denial reports a wait to past the horizon (never zero).
fn assert_the_limit_is_admitted_once_ever<Q: Quota>(quota: Q, seed: u64) {
    let limiter = limiter(quota);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut now_ns = rng.gen_range(0..=YEAR_NS);
    let mut admitted = 0;
    while now_ns <= HORIZON_NS {
        let cost = rng.gen_range(1..=quota.limit().min(4));
        let decision = limiter
            .check_with(Request::cost(cost).at(at(now_ns)))
            .unwrap();
        if decision.is_allowed() {
            admitted += cost;
        } else {
            // Past the horizon: the fixed window's ends one nanosecond after it; the sliding
            // window's estimate also waits for its count's share of the next one to decay.
            let past_the_horizon = Duration::from_nanos(HORIZON_NS + 1 - now_ns);
            assert!(decision.retry_after() >= past_the_horizon, "{quota:?}");
            assert!(decision.reset_after() >= past_the_horizon);
            assert!(decision.headers().retry_after_seconds.unwrap() >= 1);
        }
        assert!(admitted <= quota.limit(), "{quota:?}");
        now_ns = now_ns.saturating_add(rng.gen_range(0..=YEAR_NS / 4));
    }
    // Enough checks to spend it: the schedule spans 18 years in steps of up to 3 months, and a
    // check at the horizon itself is denied once spent.
    assert!(admitted + 4 > quota.limit());
    let last = limiter.check_at(at(HORIZON_NS));
    assert_eq!(last.is_allowed(), admitted < quota.limit());
}

#[test]
fn burst_then_never_admits_its_limit_once_over_the_whole_horizon() {
    for (seed, limit) in [(1, 1), (2, 3), (3, 40), (4, 200)] {
        let (fixed, sliding) = never_quotas(limit);
        assert_the_limit_is_admitted_once_ever(fixed.unwrap(), seed);
        assert_the_limit_is_admitted_once_ever(sliding.unwrap(), seed);
    }
}

#[test]
fn burst_then_never_quotas_are_tiers_of_each_other_and_of_nothing_else() {
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::builder(FixedWindow::burst_then_never(3).unwrap())
        .capacity(64)
        .clock(clock.clone())
        .build()
        .unwrap();
    let paid = limiter
        .tier(FixedWindow::burst_then_never(10).unwrap())
        .unwrap();
    assert_eq!(
        limiter.tier(FixedWindow::per_minute(10).unwrap()),
        Err(QuotaError::IncompatibleQuota)
    );
    for _ in 0..3 {
        assert!(limiter.check(&"trial").is_allowed());
    }
    assert!(limiter.check(&"trial").is_denied());
    // Upgraded: the units used on the trial count, the paid allowance applies at once.
    for _ in 0..7 {
        let request = Request::new().tier(paid);
        assert!(limiter.check_with(&"trial", request).unwrap().is_allowed());
    }
    let request = Request::new().tier(paid);
    assert!(limiter.check_with(&"trial", request).unwrap().is_denied());
    clock.advance(Duration::from_secs(17 * 365 * 86_400));
    assert!(limiter.check(&"trial").is_denied());
    assert!(limiter.check(&"another").is_allowed());
}

proptest! {
    #![proptest_config(proptest_config(20_000))]

    /// The quota invariants, for any state, reading and cost: no panic, no cost above the limit
    /// admitted, no slot marker written; and a written word is greater than the one it
    /// replaces (the window index never changes, so it never wraps).
    #[test]
    fn burst_then_never_keeps_the_quota_invariants(
        limit in prop_oneof![1u64..=8, 1u64..=SlidingWindow::MAX_LIMIT],
        state in any_state(),
        now in any_reading(),
        cost_seed in any::<u64>(),
    ) {
        let (fixed, sliding) = never_quotas(limit);
        let (fixed, sliding) = (fixed.unwrap(), sliding.unwrap());
        for cost in [cost_seed, cost_seed % (limit + 2), limit] {
            check_every_method_on_any_input(&fixed, state, now, cost)?;
            check_every_method_on_any_input(&sliding, state, now, cost)?;
        }
        for cost in [1, limit] {
            let fresh_fixed = fixed.step(FixedWindow::FRESH, fixed.instant(now), cost);
            let fresh_sliding = sliding.step(SlidingWindow::FRESH, sliding.instant(now), cost);
            prop_assert!(matches!(fresh_fixed, Step::Allow(word) if word > 0));
            prop_assert!(matches!(fresh_sliding, Step::Allow(word) if word > 0));
        }
        // Every word a schedule writes is greater than the one it replaces.
        let mut rng = StdRng::seed_from_u64(cost_seed);
        let (mut fixed_word, mut sliding_word) = (FixedWindow::FRESH, SlidingWindow::FRESH);
        let mut now_ns = now.as_ns();
        for _ in 0..8 {
            let cost = rng.gen_range(1..=limit);
            if let Step::Allow(word) = fixed.step(fixed_word, fixed.instant(at(now_ns)), cost) {
                prop_assert!(word > fixed_word);
                fixed_word = word;
            }
            if let Step::Allow(word) = sliding.step(sliding_word, sliding.instant(at(now_ns)), cost) {
                prop_assert!(word > sliding_word);
                sliding_word = word;
            }
            now_ns = rng.gen_range(now_ns..=HORIZON_NS);
        }
    }

    /// The unlimited quota keeps the invariants for any input too.
    #[test]
    fn the_unlimited_quota_keeps_the_quota_invariants_on_any_input(
        cost in any_cost(Gcra::unlimited().limit()),
        state in any_state(),
        now in any_reading(),
    ) {
        check_every_method_on_any_input(&Gcra::unlimited(), state, now, cost)?;
    }
}

// ---------------------------------------------------------------------------------------------
// A direct limiter whose quota changes at runtime.

/// A live limiter and a plain one checked under a tier made of each quota the live one is
/// switched to: the same decisions, for a random schedule of checks and switches among
/// `quotas` (the first the limiters' own).
fn assert_a_live_limiter_is_a_limiter_under_the_current_tier<Q>(quotas: &[Q], seed: u64)
where
    Q: nanolimit::Quota + PartialEq,
{
    let mut rng = StdRng::seed_from_u64(seed);
    let live = LiveLimiter::with_clock(quotas[0], ManualClock::new());
    let plain = limiter(quotas[0]);
    let mut tier = plain.tier(quotas[0]).unwrap();
    let mut now_ns = rng.gen_range(0..=YEAR_NS);
    for _ in 0..5_000 {
        if rng.gen_range(0..8) == 0 {
            let quota = quotas[rng.gen_range(0..quotas.len())];
            live.set_quota(quota).unwrap();
            tier = plain.tier(quota).unwrap();
            assert_eq!(live.quota(), tier);
        }
        now_ns += rng.gen_range(0..=SECOND_NS / 4);
        let cost = rng.gen_range(0..=tier.limit() + 1);
        let request = Request::cost(cost).at(at(now_ns));
        let peeked = (live.peek_with(request), plain.peek_with(request.tier(tier)));
        let checked = (
            live.check_with(request),
            plain.check_with(request.tier(tier)),
        );
        for (live_decision, plain_decision) in [peeked, checked] {
            match (live_decision, plain_decision) {
                (Ok(live_decision), Ok(plain_decision)) => {
                    assert_eq!(live_decision.is_allowed(), plain_decision.is_allowed());
                    assert_eq!(live_decision.quota(), plain_decision.quota());
                    assert_eq!(live_decision.state_word(), plain_decision.state_word());
                    assert_eq!(live_decision.remaining(), plain_decision.remaining());
                    assert_eq!(live_decision.retry_after(), plain_decision.retry_after());
                    assert_eq!(live_decision.reset_after(), plain_decision.reset_after());
                }
                (Err(live_error), Err(plain_error)) => assert_eq!(live_error, plain_error),
                (live_decision, plain_decision) => {
                    panic!("{live_decision:?} differs from {plain_decision:?}")
                }
            }
        }
    }
}

#[test]
fn a_live_limiter_decides_as_a_limiter_under_its_current_quota_as_a_tier() {
    let gcra = [
        Gcra::per_second(10).unwrap(),
        Gcra::per_second(2).unwrap().with_burst(5).unwrap(),
        Gcra::new(7, Duration::from_secs(3)).unwrap(),
        Gcra::per_second(100).unwrap().with_burst(1).unwrap(),
        Gcra::unlimited(),
    ];
    assert_a_live_limiter_is_a_limiter_under_the_current_tier(&gcra, 1);
    // On a fractional scale too: the later quotas are rebased onto it.
    let fractional = [
        Gcra::new(3, Duration::from_secs(1)).unwrap(),
        Gcra::per_second(10).unwrap(),
        Gcra::per_minute(50).unwrap().with_burst(4).unwrap(),
    ];
    assert_a_live_limiter_is_a_limiter_under_the_current_tier(&fractional, 2);
    let fixed = [
        FixedWindow::per_second(5).unwrap(),
        FixedWindow::per_second(1).unwrap(),
        FixedWindow::per_second(50).unwrap(),
    ];
    assert_a_live_limiter_is_a_limiter_under_the_current_tier(&fixed, 3);
    let sliding = [
        SlidingWindow::per_second(5).unwrap(),
        SlidingWindow::per_second(1).unwrap(),
        SlidingWindow::per_second(50).unwrap(),
    ];
    assert_a_live_limiter_is_a_limiter_under_the_current_tier(&sliding, 4);
}

#[test]
fn a_refused_quota_changes_nothing() {
    let limiter =
        LiveLimiter::with_clock(SlidingWindow::per_minute(3).unwrap(), ManualClock::new());
    assert!(limiter.check().is_allowed());
    let per_second = SlidingWindow::per_second(3).unwrap();
    assert_eq!(
        limiter.set_quota(per_second),
        Err(QuotaError::IncompatibleQuota)
    );
    assert_eq!(limiter.quota(), SlidingWindow::per_minute(3).unwrap());
    assert_eq!(limiter.peek().remaining(), 2);
    // A burst of years does not fit the state's scale of 1/16 ns: as a tier, refused.
    let limiter = LiveLimiter::new(Gcra::per_second(10).unwrap());
    let years = Gcra::per_day(1).unwrap().with_burst(10_000).unwrap();
    assert!(limiter.tier(years).is_err());
    assert!(matches!(
        limiter.set_quota(years),
        Err(QuotaError::LimitTooLarge { .. })
    ));
    assert_eq!(limiter.quota(), Gcra::per_second(10).unwrap());
}

#[test]
fn lowering_a_limit_keeps_the_debt_and_raising_it_admits_at_once() {
    let clock = ManualClock::new();
    let limiter = LiveLimiter::with_clock(Gcra::per_second(10).unwrap(), clock.clone());
    for _ in 0..5 {
        assert!(limiter.check().is_allowed());
    }
    // 500 ms of debt, now judged at 1 per second with bursts of 1: denied until it is repaid.
    limiter.set_quota(Gcra::per_second(1).unwrap()).unwrap();
    let denied = limiter.check();
    assert!(denied.is_denied());
    assert_eq!(denied.retry_after(), Duration::from_millis(500));
    clock.advance(Duration::from_millis(500));
    assert!(limiter.check().is_allowed());
    assert!(limiter.check().is_denied());
    // Raised again: the one-second debt is a whole burst of 10 at the new rate, repaid one
    // unit per 100 ms.
    limiter.set_quota(Gcra::per_second(10).unwrap()).unwrap();
    assert_eq!(limiter.peek().remaining(), 0);
    clock.advance(Duration::from_millis(300));
    assert_eq!(limiter.peek().remaining(), 3);
}

/// Threads check a live limiter under a frozen clock while another switches its quota between
/// two: every decision is made under one of the two, wholly, and the admissions never exceed
/// the larger burst (the state is shared, the debt carries over).
#[test]
fn checks_racing_quota_changes_see_one_quota_or_the_other() {
    let small = Gcra::per_second(1_000).unwrap().with_burst(50).unwrap();
    let large = Gcra::per_second(10).unwrap().with_burst(500).unwrap();
    let limiter = LiveLimiter::with_clock(small, ManualClock::new());
    let now = limiter.now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let admitted = std::thread::scope(|scope| {
        let switcher = scope.spawn(|| {
            let mut switches = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || switches < 1_000 {
                let next = if switches % 2 == 0 { large } else { small };
                limiter.set_quota(next).unwrap();
                switches += 1;
            }
        });
        let checkers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut admitted = 0u64;
                    for _ in 0..50_000 {
                        let decision = limiter.check_at(now);
                        let quota = *decision.quota();
                        assert!(quota == small || quota == large, "{quota:?}");
                        admitted += u64::from(decision.is_allowed());
                    }
                    admitted
                })
            })
            .collect();
        let admitted: u64 = checkers
            .into_iter()
            .map(|checker| checker.join().unwrap())
            .sum();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        switcher.join().unwrap();
        admitted
    });
    // At most 50 under the small burst (its 50 ms of debt), then 499 under the large one.
    assert!(admitted <= 549, "{admitted}");
    assert!(admitted >= 50, "{admitted}");
}

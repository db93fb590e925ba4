//! Requests under a tier ([`KeyedLimiter::tier`], [`Request::tier`]): the tier's rate and limit
//! apply to the key's one state, tiers are made once and reused, and a tier that cannot share
//! the table's state is refused when it is made (another window length) or when it is used
//! (made by a table counting in other units).

use crate::common::keyed::{assert_same_decision, clock_at, table, TableShape, MILLISECOND_NS};
use crate::common::{at, SECOND_NS};
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{
    FixedWindow, Gcra, KeyedLimiter, Limiter, ManualClock, Quota, QuotaError, Request,
    RequestError, SlidingWindow, Timestamp,
};
use std::time::Duration;

fn hashed<Q: Quota>(
    quota: Q,
    capacity: usize,
    clock: &ManualClock,
) -> KeyedLimiter<u64, Q, ManualClock> {
    table::<Hashed, Q>(quota, TableShape::capacity(capacity), clock)
}

/// Checks `key` under a tier of `quota` and a direct limiter under `quota` at the same times
/// (every millisecond for `duration_ns`); returns how many units each admitted.
///
/// A tier that shares the table's units is `quota` as is: every decision must be identical.
/// Any other is expressed in the table's ticks, its emission interval rounded up to a whole
/// tick (a fraction of a nanosecond per emission): it may fall due a few nanoseconds after the
/// direct limiter, so when a check lands exactly on a due time the keyed limiter may admit that
/// unit one check later. Hence, at every check, the keyed limiter has admitted no more than the
/// direct one (never faster than configured) and at most one unit less.
fn tier_and_direct_admissions(
    limiter: &KeyedLimiter<u64, Gcra, ManualClock>,
    key: u64,
    quota: Gcra,
    duration_ns: u64,
) -> (u64, u64) {
    let tier = limiter.tier(quota).unwrap();
    let same_units = tier == quota;
    let direct = Limiter::with_clock(quota, ManualClock::new());
    let (mut keyed_admitted, mut direct_admitted) = (0u64, 0u64);
    let mut now_ns = MILLISECOND_NS / 2;
    while now_ns < duration_ns {
        let keyed = limiter
            .check_with(&key, Request::new().tier(tier).at(at(now_ns)))
            .unwrap();
        let reference = direct.check_at(at(now_ns));
        assert_eq!(keyed.limit(), quota.limit());
        if same_units {
            assert_same_decision(&keyed, &reference, format_args!("{quota:?} at {now_ns} ns"));
        }
        keyed_admitted += u64::from(keyed.is_allowed());
        direct_admitted += u64::from(reference.is_allowed());
        assert!(
            keyed_admitted <= direct_admitted && keyed_admitted + 1 >= direct_admitted,
            "{quota:?} at {now_ns} ns: {keyed_admitted} admitted, direct {direct_admitted}"
        );
        now_ns += MILLISECOND_NS;
    }
    (keyed_admitted, direct_admitted)
}

#[test]
fn a_gcra_tier_of_another_rate_admits_at_that_rate() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 1_000, &clock);
    let duration_ns = 20 * SECOND_NS;
    let quotas = [
        // Ten times the table's rate: a whole-nanosecond interval, the table's units.
        Gcra::per_second(100).unwrap(),
        // A period that is not a whole number of nanoseconds: rounded to the table's ticks.
        Gcra::new(3, Duration::from_secs(1)).unwrap(),
        // Slower than the table, with its own burst (not whole nanoseconds either).
        Gcra::per_minute(7).unwrap().with_burst(2).unwrap(),
        // Twice the table's rate.
        Gcra::per_second(20).unwrap(),
        // The table's own quota.
        Gcra::per_second(10).unwrap(),
    ];
    for (key, quota) in quotas.into_iter().enumerate() {
        let (keyed, direct) = tier_and_direct_admissions(&limiter, key as u64, quota, duration_ns);
        // Burst plus one unit per emission interval over the run.
        let expected = quota.limit() + (duration_ns as f64 * quota.rate_per_second() / 1e9) as u64;
        assert!(
            keyed.abs_diff(expected) <= 1,
            "{quota:?}: {keyed} admitted (direct {direct}), about {expected} expected"
        );
    }
    // Keys checked without a tier still get the table's quota.
    for _ in 0..10 {
        assert!(limiter.check_at(&99, Timestamp::ORIGIN).is_allowed());
    }
    assert!(limiter.check_at(&99, Timestamp::ORIGIN).is_denied());
}

#[test]
fn a_tier_decision_reports_the_tier() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 100, &clock);
    let premium_quota = Gcra::per_second(100).unwrap();
    let premium = limiter.tier(premium_quota).unwrap();
    // A whole-nanosecond interval on a whole-nanosecond table: the quota as is.
    assert_eq!(premium, premium_quota);
    let decision = limiter
        .check_with(&1, Request::new().tier(premium))
        .unwrap();
    assert_eq!(decision.quota(), &premium_quota);
    assert_eq!(decision.limit(), 100);
    assert_eq!(decision.remaining(), 99);
    for _ in 0..99 {
        assert!(limiter
            .check_with(&1, Request::new().tier(premium))
            .unwrap()
            .is_allowed());
    }
    let denied = limiter
        .check_with(&1, Request::new().tier(premium))
        .unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 0);
    // One unit per 10 ms, exactly: the tier counts in the table's units.
    assert_eq!(denied.retry_after(), Duration::from_millis(10));
}

#[test]
fn a_cost_above_the_tier_limit_is_an_error() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 100, &clock);
    let premium = limiter.tier(Gcra::per_second(100).unwrap()).unwrap();
    // Above the table's limit, within the tier's.
    assert!(limiter
        .check_with(&1, Request::cost(50).tier(premium).at(Timestamp::ORIGIN))
        .unwrap()
        .is_allowed());
    assert_eq!(
        limiter
            .check_with(&2, Request::cost(50).at(Timestamp::ORIGIN))
            .unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 50,
            limit: 10
        }
    );
    let above_the_tier = Request::cost(101).tier(premium).at(Timestamp::ORIGIN);
    assert_eq!(
        limiter.check_with(&1, above_the_tier).unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 101,
            limit: 100
        }
    );
    assert_eq!(
        limiter.peek_with(&1, above_the_tier).unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 101,
            limit: 100
        }
    );
    // The errors consumed and inserted nothing: 50 of the tier's 100 remain.
    assert_eq!(limiter.stats().inserts, 1);
    let peeked = limiter
        .peek_with(&1, Request::new().tier(premium).at(Timestamp::ORIGIN))
        .unwrap();
    assert_eq!(peeked.remaining(), 50);
}

#[test]
fn a_gcra_tier_change_keeps_the_debt_in_time() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 100, &clock);

    // Upgrade: the key used its whole free burst at t = 0 (a second of debt). The new tier
    // has bursts of 200 units of 10 ms: 2 s of tolerance, 1 s of it used, so 100 units pass.
    let premium = limiter
        .tier(Gcra::per_second(100).unwrap().with_burst(200).unwrap())
        .unwrap();
    let premium_request = Request::new().tier(premium);
    for _ in 0..10 {
        assert!(limiter.check(&1).is_allowed());
    }
    assert!(limiter.check(&1).is_denied());
    let first = limiter.check_with(&1, premium_request).unwrap();
    assert!(first.is_allowed());
    assert_eq!(first.remaining(), 99);
    for _ in 0..99 {
        assert!(limiter
            .check_with(&1, premium_request)
            .unwrap()
            .is_allowed());
    }
    assert!(limiter.check_with(&1, premium_request).unwrap().is_denied());
    // Back on the table's quota (1 s of tolerance), the key is two seconds in debt: its next
    // unit is due at 2 s + 100 ms − 1 s.
    clock.set(at(1_099 * MILLISECOND_NS));
    assert!(limiter.check(&1).is_denied());
    clock.set(at(1_101 * MILLISECOND_NS));
    assert!(limiter.check(&1).is_allowed());
    assert!(limiter.check(&1).is_denied());

    // Downgrade: the key used its free burst at t = 0; one per second with no burst admits
    // nothing until its debt (1 s) is paid, then one unit.
    clock.set(Timestamp::ORIGIN);
    let basic = Request::new().tier(limiter.tier(Gcra::per_second(1).unwrap()).unwrap());
    for _ in 0..10 {
        assert!(limiter.check(&2).is_allowed());
    }
    let denied = limiter.check_with(&2, basic).unwrap();
    assert!(denied.is_denied());
    // Exactly: both quotas count in the table's units.
    assert_eq!(denied.retry_after(), Duration::from_secs(1));
    clock.set(at(SECOND_NS - MILLISECOND_NS));
    assert!(limiter.check_with(&2, basic).unwrap().is_denied());
    clock.set(at(SECOND_NS));
    assert!(limiter.check_with(&2, basic).unwrap().is_allowed());
    assert!(limiter.check_with(&2, basic).unwrap().is_denied());
}

/// Windows: the counts carry over a tier change and the new limit applies at once.
fn a_window_tier_change_carries_the_counts<Q: Quota>(
    table_quota: Q,
    larger: Q,
    smaller: Q,
    next_window_ns: u64,
) {
    assert_eq!(table_quota.limit(), 10);
    assert_eq!(larger.limit(), 8);
    assert_eq!(smaller.limit(), 3);
    // Mid-window; the window before is empty.
    let clock = clock_at(100 * SECOND_NS + SECOND_NS / 2);
    let limiter = hashed(table_quota, 100, &clock);
    let larger = Request::new().tier(limiter.tier(larger).unwrap());
    let smaller = Request::new().tier(limiter.tier(smaller).unwrap());
    for _ in 0..5 {
        assert!(limiter.check(&1).is_allowed());
    }
    // 5 used: 3 more under a limit of 8.
    for remaining in (0..3).rev() {
        let decision = limiter.check_with(&1, larger).unwrap();
        assert!(decision.is_allowed());
        assert_eq!(decision.remaining(), remaining);
        assert_eq!(decision.limit(), 8);
    }
    assert!(limiter.check_with(&1, larger).unwrap().is_denied());
    // 8 used: nothing under a limit of 3.
    let denied = limiter.check_with(&1, smaller).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 0);
    // Back to the table's limit of 10: 2 more.
    assert!(limiter.check(&1).is_allowed());
    assert!(limiter.check(&1).is_allowed());
    assert!(limiter.check(&1).is_denied());
    // A key that has used 2 has 1 left under the smaller tier.
    assert!(limiter
        .check_with(&2, Request::cost(2))
        .unwrap()
        .is_allowed());
    assert!(limiter.check_with(&2, smaller).unwrap().is_allowed());
    assert!(limiter.check_with(&2, smaller).unwrap().is_denied());
    // Long after, every limit applies in full.
    clock.set(at(next_window_ns));
    for _ in 0..8 {
        assert!(limiter.check_with(&1, larger).unwrap().is_allowed());
    }
    assert!(limiter.check_with(&1, larger).unwrap().is_denied());
}

#[test]
fn a_fixed_window_tier_change_carries_the_counts_and_applies_the_new_limit() {
    a_window_tier_change_carries_the_counts(
        FixedWindow::per_second(10).unwrap(),
        FixedWindow::per_second(8).unwrap(),
        FixedWindow::per_second(3).unwrap(),
        101 * SECOND_NS,
    );
}

#[test]
fn a_sliding_window_tier_change_carries_the_counts_and_applies_the_new_limit() {
    a_window_tier_change_carries_the_counts(
        SlidingWindow::per_second(10).unwrap(),
        SlidingWindow::per_second(8).unwrap(),
        SlidingWindow::per_second(3).unwrap(),
        // Two windows on: the counts have left the sliding window.
        102 * SECOND_NS,
    );
}

#[test]
fn a_window_tier_of_another_window_length_cannot_be_made() {
    let clock = ManualClock::new();
    let fixed = hashed(FixedWindow::per_second(10).unwrap(), 100, &clock);
    let two_seconds = FixedWindow::new(10, Duration::from_secs(2)).unwrap();
    assert_eq!(fixed.tier(two_seconds), Err(QuotaError::IncompatibleQuota));
    // The same limit over the same window is fine.
    assert!(fixed.tier(FixedWindow::per_second(10).unwrap()).is_ok());
    // Nothing was inserted or consumed.
    assert_eq!(fixed.stats().inserts, 0);
    assert_eq!(fixed.peek(&1).remaining(), 10);

    let sliding = hashed(SlidingWindow::per_minute(10).unwrap(), 100, &clock);
    let per_second = SlidingWindow::per_second(10).unwrap();
    assert_eq!(sliding.tier(per_second), Err(QuotaError::IncompatibleQuota));
    assert_eq!(sliding.stats().inserts, 0);
    // The error reads as what it is.
    assert!(QuotaError::IncompatibleQuota.to_string().contains("window"));
}

/// Checks under a tier made once and reused, and under a tier made afresh from `quota` for
/// every request, decide the same at every step of the same history (on two keys of one
/// table); and a tier made from a tier's quota is that tier.
fn a_reused_tier_decides_the_same<Q: Quota + PartialEq>(
    table_quota: Q,
    quota: Q,
    times_ns: &[u64],
) {
    let clock = ManualClock::new();
    let limiter = hashed(table_quota, 100, &clock);
    let tier = limiter.tier(quota).unwrap();
    assert_eq!(limiter.tier(tier).unwrap(), tier);
    for (step, &now_ns) in times_ns.iter().enumerate() {
        let cost = 1 + step as u64 % quota.limit();
        let afresh = limiter.tier(quota).unwrap();
        let with_afresh = limiter
            .check_with(&1, Request::cost(cost).tier(afresh).at(at(now_ns)))
            .unwrap();
        let with_reused = limiter
            .check_with(&2, Request::cost(cost).tier(tier).at(at(now_ns)))
            .unwrap();
        assert_same_decision(&with_afresh, &with_reused, format_args!("step {step}"));
    }
}

#[test]
fn a_tier_made_once_and_reused_gives_the_same_decisions() {
    let times_ns: Vec<u64> = (0..2_000u64)
        .map(|step| step * 7 * MILLISECOND_NS + (step % 13) * 1_001)
        .collect();
    a_reused_tier_decides_the_same(
        Gcra::per_second(10).unwrap(),
        Gcra::new(3, Duration::from_secs(1))
            .unwrap()
            .with_burst(4)
            .unwrap(),
        &times_ns,
    );
    a_reused_tier_decides_the_same(
        Gcra::per_second(10).unwrap(),
        Gcra::per_second(250).unwrap(),
        &times_ns,
    );
    a_reused_tier_decides_the_same(
        Gcra::new(3, Duration::from_secs(1)).unwrap(),
        Gcra::per_second(250).unwrap(),
        &times_ns,
    );
    a_reused_tier_decides_the_same(
        FixedWindow::per_second(10).unwrap(),
        FixedWindow::per_second(4).unwrap(),
        &times_ns,
    );
    a_reused_tier_decides_the_same(
        SlidingWindow::per_second(10).unwrap(),
        SlidingWindow::per_second(25).unwrap(),
        &times_ns,
    );
}

#[test]
fn a_tier_made_by_a_table_counting_in_other_units_is_foreign() {
    let clock = ManualClock::new();
    // 3 and 7 per second: emission intervals of no whole number of nanoseconds, so each table
    // counts in ticks of its own.
    let thirds = hashed(Gcra::per_second(3).unwrap(), 100, &clock);
    let sevenths = hashed(Gcra::per_second(7).unwrap(), 100, &clock);
    let foreign = thirds
        .tier(Gcra::per_second(3).unwrap().with_burst(6).unwrap())
        .unwrap();
    assert!(thirds
        .check_with(&1, Request::new().tier(foreign))
        .unwrap()
        .is_allowed());
    for request in [
        Request::new().tier(foreign),
        Request::cost(6).tier(foreign),
        // Whatever the cost: the tier's limit means nothing in these units.
        Request::cost(100).tier(foreign),
    ] {
        assert_eq!(
            sevenths.check_with(&1, request).unwrap_err(),
            RequestError::ForeignTier
        );
        assert_eq!(
            sevenths.peek_with(&1, request).unwrap_err(),
            RequestError::ForeignTier
        );
    }
    // A whole-nanosecond quota made a tier by such a table is in that table's ticks too.
    let whole_in_thirds = thirds.tier(Gcra::per_second(10).unwrap()).unwrap();
    assert_eq!(
        sevenths
            .check_with(&1, Request::new().tier(whole_in_thirds))
            .unwrap_err(),
        RequestError::ForeignTier
    );
    // Nothing was inserted or consumed.
    assert_eq!(sevenths.stats().inserts, 0);
    assert_eq!(sevenths.peek(&1).remaining(), 7);
    assert!(RequestError::ForeignTier.to_string().contains("units"));

    // Tables of whole-nanosecond intervals share one scale: their tiers, of any rate, are
    // usable on one another, with the same decisions.
    let per_second = hashed(Gcra::per_second(100).unwrap(), 100, &clock);
    let per_minute = hashed(Gcra::per_minute(60).unwrap(), 100, &clock);
    for (key, quota) in [
        Gcra::per_second(10).unwrap(),
        Gcra::new(3, Duration::from_secs(1)).unwrap(),
    ]
    .into_iter()
    .enumerate()
    {
        let key = key as u64;
        let tier = per_second.tier(quota).unwrap();
        assert_eq!(per_minute.tier(quota).unwrap(), tier);
        for step in 0..quota.limit() + 1 {
            let request = Request::new().tier(tier).at(at(step));
            let on_per_second = per_second.check_with(&key, request).unwrap();
            let on_per_minute = per_minute.check_with(&key, request).unwrap();
            assert_same_decision(&on_per_minute, &on_per_second, format_args!("{quota:?}"));
            assert_eq!(on_per_minute.is_allowed(), step < quota.limit());
        }
    }
    // Window tiers made by a table of the same window length are usable; others are foreign.
    let one_second = hashed(FixedWindow::per_second(5).unwrap(), 100, &clock);
    let other_one_second = hashed(FixedWindow::per_second(50).unwrap(), 100, &clock);
    let two_seconds = hashed(
        FixedWindow::new(5, Duration::from_secs(2)).unwrap(),
        100,
        &clock,
    );
    let window_tier = one_second
        .tier(FixedWindow::per_second(20).unwrap())
        .unwrap();
    let decision = other_one_second
        .check_with(&1, Request::cost(20).tier(window_tier))
        .unwrap();
    assert!(decision.is_allowed());
    assert_eq!(decision.remaining(), 0);
    assert_eq!(
        two_seconds
            .check_with(&1, Request::new().tier(window_tier))
            .unwrap_err(),
        RequestError::ForeignTier
    );
}

/// A peek under a tier reports the tier's limit and what the key has left under it, and
/// inserts nothing, for a key the table holds and for one it does not.
fn a_peek_under_a_tier_reports_the_tier_and_inserts_nothing<
    M: KeyMode<u64>,
    Q: Quota + PartialEq,
>(
    table_quota: Q,
    tier_quota: Q,
    clock: ManualClock,
) {
    let limiter = table::<M, Q>(table_quota, TableShape::capacity(100), &clock);
    let tier = limiter.tier(tier_quota).unwrap();
    let limit = tier_quota.limit();
    // An absent key: a fresh key under the tier.
    for _ in 0..3 {
        let peeked = limiter.peek_with(&9, Request::new().tier(tier)).unwrap();
        assert!(peeked.is_allowed());
        assert!(!peeked.is_untracked());
        assert_eq!(peeked.quota(), &tier);
        assert_eq!(peeked.limit(), limit);
        assert_eq!(peeked.remaining(), limit);
        assert_eq!(peeked.cost(), 1);
    }
    assert!(limiter
        .peek_with(&9, Request::cost(limit).tier(tier))
        .unwrap()
        .is_allowed());
    assert_eq!(
        limiter
            .peek_with(&9, Request::cost(limit + 1).tier(tier))
            .unwrap_err(),
        RequestError::CostAboveLimit {
            cost: limit + 1,
            limit
        }
    );
    assert_eq!(limiter.stats().inserts, 0, "a peek must not insert");
    assert_eq!(limiter.entries(), 0);
    // A present key that used 3 units under the table's quota has the tier's limit less 3.
    assert!(limiter
        .check_with(&9, Request::cost(3))
        .unwrap()
        .is_allowed());
    let state = limiter.peek(&9).state_word();
    let peeked = limiter.peek_with(&9, Request::new().tier(tier)).unwrap();
    assert_eq!(peeked.limit(), limit);
    assert_eq!(peeked.remaining(), limit - 3);
    assert_eq!(peeked.state_word(), state);
    assert_eq!(
        limiter.peek(&9).remaining(),
        table_quota.limit() - 3,
        "the table's quota still sees its own limit"
    );
    // One unit beyond the tier's remainder is denied, with the tier's retry advice, and the
    // peek changes nothing.
    let over = limiter
        .peek_with(&9, Request::cost(limit - 2).tier(tier))
        .unwrap();
    assert!(over.is_denied());
    assert!(over.retry_after() > Duration::ZERO);
    assert_eq!(
        limiter
            .check_with(&9, Request::cost(limit - 2).tier(tier))
            .unwrap()
            .retry_after(),
        over.retry_after()
    );
    assert_eq!(limiter.peek(&9).state_word(), state);
    assert_eq!(limiter.stats().inserts, 1);
    assert_eq!(limiter.entries(), 1);
}

#[test]
fn a_peek_under_a_tier_reports_the_tier_and_inserts_nothing_for_gcra() {
    let table_quota = Gcra::per_second(10).unwrap();
    let large = Gcra::per_second(10).unwrap().with_burst(20).unwrap();
    a_peek_under_a_tier_reports_the_tier_and_inserts_nothing::<Hashed, _>(
        table_quota,
        large,
        ManualClock::new(),
    );
    a_peek_under_a_tier_reports_the_tier_and_inserts_nothing::<Exact, _>(
        table_quota,
        large,
        ManualClock::new(),
    );
    // The figures: 3 units used at 0 on a 100 ms interval; bursts of 20 leave 17, and a cost of
    // 18 is due one interval later.
    let limiter = hashed(table_quota, 100, &ManualClock::new());
    let tier = limiter.tier(large).unwrap();
    assert!(limiter
        .check_with(&9, Request::cost(3))
        .unwrap()
        .is_allowed());
    let over = limiter.peek_with(&9, Request::cost(18).tier(tier)).unwrap();
    assert_eq!(over.remaining(), 17);
    assert_eq!(over.retry_after(), Duration::from_millis(100));
}

#[test]
fn a_peek_under_a_tier_reports_the_tier_and_inserts_nothing_for_windows() {
    let start_ns = 10 * SECOND_NS + SECOND_NS / 4;
    a_peek_under_a_tier_reports_the_tier_and_inserts_nothing::<Hashed, _>(
        FixedWindow::per_second(5).unwrap(),
        FixedWindow::per_second(8).unwrap(),
        clock_at(start_ns),
    );
    a_peek_under_a_tier_reports_the_tier_and_inserts_nothing::<Exact, _>(
        SlidingWindow::per_second(5).unwrap(),
        SlidingWindow::per_second(8).unwrap(),
        clock_at(start_ns),
    );
}

/// A state written under a tier with a larger burst runs further ahead of the reading that wrote
/// it than the table's own quota allows. A later check under the table's quota, at a true
/// reading, must be told the real wait: the table judges a reading behind a state by the
/// largest lead of its tiers, so it does not mistake that state for a reading from the past
/// (which would advise 100 ms here, and the retry would be denied again).
fn assert_a_larger_burst_tier_s_state_gets_the_real_wait<M: KeyMode<u64>>() {
    let clock = ManualClock::new();
    // One unit per 100 ms, bursts of 10 (a tolerance of 1 s); the tier: one per 10 ms, bursts
    // of 200 (2 s).
    let limiter = table::<M, _>(
        Gcra::per_second(10).unwrap(),
        TableShape::capacity(8),
        &clock,
    );
    let bulk = limiter
        .tier(Gcra::per_second(100).unwrap().with_burst(200).unwrap())
        .unwrap();
    assert!(limiter
        .check_with(&1, Request::cost(10))
        .unwrap()
        .is_allowed());
    // The state is now 2 s: 1 s of the table's debt, then 100 units of 10 ms.
    assert!(limiter
        .check_with(&1, Request::cost(100).tier(bulk))
        .unwrap()
        .is_allowed());

    clock.set(at(SECOND_NS / 2));
    let denied = limiter.check(&1);
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 0);
    // Due when 2 s + 100 ms <= now + 1 s: at 1.1 s, 600 ms from now; whole again at 2 s.
    assert_eq!(denied.retry_after(), Duration::from_millis(600));
    assert_eq!(denied.reset_after(), Duration::from_millis(1_500));
    clock.set(at(1_100 * MILLISECOND_NS - 1));
    assert!(limiter.check(&1).is_denied(), "not a nanosecond sooner");
    clock.set(at(1_100 * MILLISECOND_NS));
    assert!(limiter.check(&1).is_allowed(), "the advice was exact");
}

#[test]
fn a_state_written_under_a_larger_burst_tier_gets_the_real_wait_hashed() {
    assert_a_larger_burst_tier_s_state_gets_the_real_wait::<Hashed>();
}

#[test]
fn a_state_written_under_a_larger_burst_tier_gets_the_real_wait_exact() {
    assert_a_larger_burst_tier_s_state_gets_the_real_wait::<Exact>();
}

/// The same for a direct limiter, and for a tier made by another limiter with the same units:
/// using it raises this limiter's judging lead.
#[test]
fn a_direct_limiter_s_state_written_under_a_larger_burst_tier_gets_the_real_wait() {
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(Gcra::per_second(10).unwrap(), clock.clone());
    let maker = Limiter::with_clock(Gcra::per_second(10).unwrap(), ManualClock::new());
    let bulk = maker
        .tier(Gcra::per_second(100).unwrap().with_burst(200).unwrap())
        .unwrap();
    assert!(limiter.check_with(Request::cost(10)).unwrap().is_allowed());
    assert!(limiter
        .check_with(Request::cost(100).tier(bulk))
        .unwrap()
        .is_allowed());
    clock.set(at(SECOND_NS / 2));
    let denied = limiter.check();
    assert_eq!(denied.retry_after(), Duration::from_millis(600));
    assert_eq!(denied.reset_after(), Duration::from_millis(1_500));
    // A reading really behind the state (a timestamp from before a preemption) is still judged
    // at the earliest time the state can have been written: 2 s less the 2 s lead, here 0, so
    // the advice for a reading at 0.1 s is counted from 0.1 s.
    let stale = limiter.check_at(at(SECOND_NS / 10));
    assert_eq!(stale.retry_after(), Duration::from_millis(1_000));
}

/// A refused new key whose candidate slots were all written under a larger-burst tier waits
/// until the first of them is really fresh, not the table's own tolerance.
#[test]
fn a_refused_key_among_states_written_under_a_larger_burst_tier_waits_for_them() {
    let clock = ManualClock::new();
    // One shard of one bucket: 8 slots.
    let limiter = table::<Hashed, _>(
        Gcra::per_second(10).unwrap(),
        TableShape::capacity(4).shards(1),
        &clock,
    );
    let bulk = limiter
        .tier(Gcra::per_second(100).unwrap().with_burst(200).unwrap())
        .unwrap();
    // Key k spends 150 + k units of 10 ms: its entry is fresh at 1.5 s + k × 10 ms.
    for key in 0..8u64 {
        assert!(limiter
            .check_with(&key, Request::cost(150 + key).tier(bulk))
            .unwrap()
            .is_allowed());
    }
    let refused = limiter.check(&100);
    assert!(refused.is_denied() && refused.is_untracked());
    assert_eq!(refused.retry_after(), Duration::from_millis(1_500));
    clock.set(at(1_500 * MILLISECOND_NS));
    assert!(limiter.check(&100).is_allowed(), "key 0's slot is free");
}

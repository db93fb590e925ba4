//! Property tests: each algorithm, driven through [`Limiter`], against a plain reference model
//! written the obvious way with wide integers, on random arrival schedules (non-decreasing
//! times with gaps from 0 to many windows or emission intervals) and random costs.
//!
//! - GCRA: the theoretical arrival time as an exact rational number of nanoseconds (an integer
//!   count of `1/count` ns, so `T = period / count` is exact).
//! - Sliding window: `(window index, previous, current)` unpacked, index `= now / window`, the
//!   previous window's share rounded down.
//! - Fixed window: `(window index, count)` unpacked.
//!
//! The window models must agree exactly on every decision, `remaining`, `retry_after` and
//! `reset_after`. GCRA converts clock readings to ticks of at most 1/8 ns, rounding up, and
//! may therefore admit a request a fraction of a nanosecond before its exact due time; see
//! [`GcraModel`] for the precise tolerance and why it is needed. With whole-nanosecond emission
//! intervals the due times are whole nanoseconds, and decisions and `remaining` agree exactly.

use nanolimit::{
    Decision, FixedWindow, Gcra, Limiter, ManualClock, Quota, Request, RequestError, SlidingWindow,
    Timestamp,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::time::Duration;

/// Schedules stop here, half the time horizon (about 9 years).
const LATEST_NS: u64 = Timestamp::HORIZON.as_ns() / 2;

/// Checks `cost` at `now_ns`: a decision, or the error of a cost above the limit.
fn check_cost_at<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    cost: u64,
    now_ns: u64,
) -> Result<Decision<Q>, RequestError> {
    limiter.check_with(Request::cost(cost).at(Timestamp::from_ns(now_ns).unwrap()))
}

/// The reading `now_ns` nanoseconds after the clock's origin.
fn at(now_ns: u64) -> Timestamp {
    Timestamp::from_ns(now_ns).unwrap()
}

/// A fixed seed keeps CI deterministic; set `PROPTEST_RNG_SEED` to explore other cases.
fn config(cases: u32) -> Config {
    let mut config = Config::with_cases(cases);
    config.failure_persistence = None;
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x6e61_6e6f_6c69_6d69);
    }
    config
}

/// One request of a schedule, in raw random form: how to pick the gap before it (`gap_kind`,
/// `gap_random`) and its cost (`cost_kind`, `cost_random`), relative to the quota under test.
#[derive(Debug, Clone, Copy)]
struct RawRequest {
    gap_kind: u8,
    gap_random: u64,
    cost_kind: u8,
    cost_random: u64,
}

fn schedules() -> impl Strategy<Value = (u64, Vec<RawRequest>)> {
    let request = (0u8..16, any::<u64>(), 0u8..16, any::<u64>()).prop_map(
        |(gap_kind, gap_random, cost_kind, cost_random)| RawRequest {
            gap_kind,
            gap_random,
            cost_kind,
            cost_random,
        },
    );
    (
        prop_oneof![Just(0u64), 0..LATEST_NS / 4],
        prop::collection::vec(request, 1..300),
    )
}

/// A random cost: mostly valid (1..=limit), sometimes 0 or just above the limit.
fn cost_of(request: &RawRequest, limit: u64) -> u64 {
    match request.cost_kind {
        0 => 0,
        1 => limit + 1,
        2 | 3 => 1,
        4 => limit,
        5..=9 => 1 + request.cost_random % limit.div_ceil(16),
        _ => 1 + request.cost_random % limit,
    }
}

/// A gap relative to a natural time unit of the quota (`unit_ns`: the emission interval or the
/// window per unit of limit) and to its longest useful span (`span_ns`: burst or window).
fn gap_of(request: &RawRequest, unit_ns: u64, span_ns: u64) -> u64 {
    let random = request.gap_random;
    match request.gap_kind {
        0 | 1 => 0,
        2 => random % 4,
        3 | 4 => random % (2 * unit_ns + 1),
        5 => unit_ns * (random % 4),
        6 => random % (unit_ns / 8 + 2),
        7 | 8 => random % (span_ns / 2 + 1),
        9 => random % (3 * span_ns + 1),
        10 => span_ns - 1 + random % 3,
        11 => random % (1000 * span_ns + 1),
        12 => random % (1 << 40),
        _ => random % (unit_ns * 8 + 1),
    }
}

// ---------------------------------------------------------------------------------------------
// GCRA
// ---------------------------------------------------------------------------------------------

/// GCRA on exact rational time. Every quantity is an integer number of `1/count` ns: a reading
/// of `t` ns is `t × count`, the emission interval `T` is `period`, the tolerance `burst × T`.
///
/// The crate works in ticks of `T / 2^k` (at most 1/8 ns) and converts a reading by
/// `floor(t × ticks_per_ns)` with `ticks_per_ns` rounded up by less than `2^-59` per ns. Writing
/// `X(t)` for the exact tick count and `I(t)` for the crate's, `X(t) − 1 < I(t) ≤ X(t) + δ(t)`
/// with `δ(t) < t / 2^59` ticks. By induction over the schedule (with the model following the
/// crate's decisions), the crate's stored time `M` and the model's `R` (in ticks) satisfy
/// `R − 1 < M ≤ R + δ(t)`. From these:
/// - whatever the model admits, the crate admits (never later than exact);
/// - the crate admits a request the model denies only if the model's shortfall is below
///   `1 + δ(t)` ticks, i.e. below `(1 + t / 2^59) / 8` ns: the request is at most that early;
/// - `remaining` is at least the model's minus one, and at most the model's at `t + 1/4` ns
///   (`1/4` ns is more than `1 + δ` ticks);
/// - `retry_after` differs from the model's exact value rounded up by at most 1 ns.
///
/// When all emission intervals are whole nanoseconds, the model's due times are whole
/// nanoseconds, a shortfall is at least 1 ns, and decisions and `remaining` agree exactly.
#[derive(Debug)]
struct GcraModel {
    count: u128,
    period: u128,
    burst: u128,
    /// Theoretical arrival time, in `1/count` ns.
    tat: u128,
}

impl GcraModel {
    fn new(quota: &Gcra) -> Self {
        GcraModel {
            count: quota.count() as u128,
            period: quota.period().as_nanos(),
            burst: quota.limit() as u128,
            tat: 0,
        }
    }

    /// The new theoretical arrival time if `cost` were admitted at `now_ns`, and by how much
    /// (in `1/count` ns) it overshoots the tolerance (0 if the request passes).
    fn judge(&self, now_ns: u64, cost: u64) -> (u128, u128) {
        let now = now_ns as u128 * self.count;
        let new_tat = self.tat.max(now) + cost as u128 * self.period;
        let limit = now + self.burst * self.period;
        (new_tat, new_tat.saturating_sub(limit))
    }

    /// Unit requests that would pass at `quarter_ns / 4` ns.
    fn remaining_at_quarter_ns(&self, quarter_ns: u128) -> u128 {
        let now = quarter_ns * self.count;
        let tat = 4 * self.tat;
        (now + 4 * self.burst * self.period).saturating_sub(tat.max(now)) / (4 * self.period)
    }

    /// Whether a shortfall of `deficit` (in `1/count` ns) at `now_ns` is within the tolerance
    /// `(1 + now_ns / 2^59) / 8` ns.
    fn within_one_tick(&self, deficit: u128, now_ns: u64) -> bool {
        deficit <= self.count
            && deficit * 8 * (1u128 << 59) < self.count * ((1u128 << 59) + now_ns as u128)
    }
}

/// Runs `requests` against a limiter and the model; returns how many requests the crate
/// admitted early (within one tick).
fn check_gcra_against_model(
    quota: Gcra,
    start_ns: u64,
    requests: &[RawRequest],
    whole_nanosecond_intervals: bool,
) -> Result<u32, TestCaseError> {
    let limiter = Limiter::with_clock(quota, ManualClock::new());
    let mut model = GcraModel::new(&quota);
    let burst = quota.limit();
    let interval_ns = (quota.period().as_nanos() / quota.count() as u128).max(1) as u64;
    let span_ns = interval_ns.saturating_mul(burst).min(1 << 50);
    let mut now = start_ns;
    let mut early = 0;
    for request in requests {
        now = now.saturating_add(gap_of(request, interval_ns, span_ns));
        if now > LATEST_NS {
            break;
        }
        let cost = cost_of(request, burst);
        let Ok(decision) = check_cost_at(&limiter, cost, now) else {
            prop_assert!(cost > burst, "cost {} within the burst was refused", cost);
            continue;
        };
        prop_assert!(cost <= burst);
        let (new_tat, deficit) = model.judge(now, cost);
        let model_allows = cost == 0 || deficit == 0;
        if decision.is_allowed() && !model_allows {
            prop_assert!(
                !whole_nanosecond_intervals && model.within_one_tick(deficit, now),
                "admitted {}/{} ns early at {} ns (cost {})",
                deficit,
                model.count,
                now,
                cost
            );
            early += 1;
        }
        prop_assert!(
            decision.is_allowed() || !model_allows,
            "denied at {} ns (cost {}) what the exact model admits",
            now,
            cost
        );
        if decision.is_allowed() && cost > 0 {
            model.tat = new_tat;
        }
        // remaining
        let remaining = decision.remaining() as u128;
        let exact = model.remaining_at_quarter_ns(4 * now as u128);
        if whole_nanosecond_intervals {
            prop_assert_eq!(remaining, exact, "remaining at {} ns", now);
        } else {
            let quarter_later = model.remaining_at_quarter_ns(4 * now as u128 + 1);
            prop_assert!(
                remaining + 1 >= exact && remaining <= quarter_later,
                "remaining {} at {} ns, model {} (a quarter ns later {})",
                remaining,
                now,
                exact,
                quarter_later
            );
        }
        // retry_after, for denials
        if decision.is_denied() {
            let exact_ns = deficit.div_ceil(model.count);
            let retry_ns = decision.retry_after().as_nanos();
            prop_assert!(
                retry_ns.abs_diff(exact_ns) <= 1,
                "retry_after {} ns at {} ns, model {} ns",
                retry_ns,
                now,
                exact_ns
            );
            if whole_nanosecond_intervals {
                prop_assert!(retry_ns >= exact_ns);
            }
        }
    }
    Ok(early)
}

/// Quotas whose emission interval is a whole number of nanoseconds.
fn whole_nanosecond_gcra_quotas() -> impl Strategy<Value = Gcra> {
    let interval_ns = prop_oneof![
        1u64..=20,
        1u64..=1_000_000,
        1u64..=100_000_000_000,
        Just(1_000_000_000u64),
    ];
    (
        interval_ns,
        1u64..=1_000,
        prop_oneof![Just(1u64), 1u64..=64, 1u64..=100_000],
    )
        .prop_filter_map("valid quota", |(interval_ns, count, burst)| {
            Gcra::new(count, Duration::from_nanos(interval_ns * count))
                .ok()?
                .with_burst(burst)
                .ok()
        })
}

/// Any valid quota: fractional emission intervals, rates up to 16 per nanosecond.
fn any_gcra_quotas() -> impl Strategy<Value = Gcra> {
    let period_ns = prop_oneof![
        1u64..=64,
        1u64..=1_000_000_000,
        1u64..=100_000_000_000_000,
        Just(1_000_000_000u64),
    ];
    let generated = (
        period_ns,
        any::<u64>(),
        0u32..48,
        prop_oneof![Just(1u64), 1u64..=256],
    )
        .prop_filter_map("valid quota", |(period_ns, random, shift, burst)| {
            // Counts spread over orders of magnitude, up to 16 per nanosecond.
            let max_count = period_ns.saturating_mul(16).min(1 << 44);
            let count = 1 + ((random % max_count) >> shift);
            Gcra::new(count, Duration::from_nanos(period_ns))
                .ok()?
                .with_burst(burst)
                .ok()
        });
    prop_oneof![
        4 => generated,
        1 => prop_oneof![
            Just(Gcra::per_second(12_500_000_000).unwrap().with_burst(1_500).unwrap()),
            Just(Gcra::per_second(16_000_000_000).unwrap().with_burst(100).unwrap()),
            Just(Gcra::per_second(3).unwrap()),
            Just(Gcra::per_minute(7).unwrap().with_burst(2).unwrap()),
            Just(Gcra::new(7, Duration::from_nanos(3)).unwrap().with_burst(20).unwrap()),
            Just(Gcra::per_day(1).unwrap()),
        ],
    ]
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn gcra_with_whole_nanosecond_intervals_matches_the_exact_model(
        quota in whole_nanosecond_gcra_quotas(),
        (start_ns, requests) in schedules(),
    ) {
        let early = check_gcra_against_model(quota, start_ns, &requests, true)?;
        prop_assert_eq!(early, 0);
    }

    #[test]
    fn gcra_matches_the_exact_model_to_within_one_tick(
        quota in any_gcra_quotas(),
        (start_ns, requests) in schedules(),
    ) {
        check_gcra_against_model(quota, start_ns, &requests, false)?;
    }
}

/// The tolerance above is needed: at 12.5 units per nanosecond (a tick is exactly 1/12.5 ns),
/// a reading of 1 ns holds 12 whole ticks, so the 0.5-tick remainder is not carried, and a
/// request due at 2.04 ns passes at 2 ns.
#[test]
fn gcra_admits_a_request_at_most_one_tick_early() {
    let quota = Gcra::per_second(12_500_000_000)
        .unwrap()
        .with_burst(100)
        .unwrap();
    let limiter = Limiter::with_clock(quota, ManualClock::new());
    let mut model = GcraModel::new(&quota);
    assert!(check_cost_at(&limiter, 100, 1).unwrap().is_allowed());
    model.tat = model.judge(1, 100).0;
    let mut admitted = 0;
    while limiter.check_at(at(2)).is_allowed() {
        admitted += 1;
    }
    let mut model_admitted = 0;
    while let (new_tat, 0) = model.judge(2, 1) {
        model.tat = new_tat;
        model_admitted += 1;
    }
    assert_eq!(model_admitted, 12);
    assert_eq!(admitted, 13);
    let (_, deficit) = model.judge(2, 1);
    // The 13th was due 0.5 tick = 0.04 ns later.
    assert_eq!((deficit, model.count), (500_000_000, 12_500_000_000));
    assert!(model.within_one_tick(deficit, 2));
    // Over whole nanoseconds nothing is gained: at 3 ns both have admitted 12.5 per ns.
    let mut admitted_at_3 = 0;
    while limiter.check_at(at(3)).is_allowed() {
        admitted_at_3 += 1;
    }
    assert_eq!(100 + admitted + admitted_at_3, 100 + 25);
}

// ---------------------------------------------------------------------------------------------
// Windows
// ---------------------------------------------------------------------------------------------

/// The earliest time in `from..=until` at which `passes` holds, for a `passes` that, once true,
/// stays true (binary search).
fn earliest(from: u64, until: u64, passes: impl Fn(u64) -> bool) -> u64 {
    assert!(passes(until), "the predicate never holds");
    let (mut low, mut high) = (from, until);
    if passes(low) {
        return low;
    }
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if passes(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    high
}

/// The sliding-window counter with its window index kept whole (no wrap) and its fields apart.
///
/// The rule, written the obvious way: the estimate at `elapsed` ns into a window of `window`
/// ns is `⌊previous × (window − elapsed) / window⌋ + current`, and a cost passes iff the estimate
/// plus the cost is at most the limit.
#[derive(Debug, Clone, Copy)]
struct SlidingModel {
    limit: u128,
    window_ns: u64,
    index: u64,
    previous: u128,
    current: u128,
}

impl SlidingModel {
    /// (previous, current, elapsed) as seen at `now_ns`, for a monotonic schedule.
    fn view(&self, now_ns: u64) -> (u128, u128, u128) {
        let now_index = now_ns / self.window_ns;
        let elapsed = (now_ns % self.window_ns) as u128;
        assert!(now_index >= self.index, "the schedule went back in time");
        match now_index - self.index {
            0 => (self.previous, self.current, elapsed),
            1 => (self.current, 0, elapsed),
            _ => (0, 0, elapsed),
        }
    }

    /// The previous window's share, rounded down, plus the current window's count.
    fn estimate(&self, now_ns: u64) -> u128 {
        let (previous, current, elapsed) = self.view(now_ns);
        let window = self.window_ns as u128;
        previous * (window - elapsed) / window + current
    }

    fn passes(&self, now_ns: u64, cost: u64) -> bool {
        self.estimate(now_ns) + cost as u128 <= self.limit
    }

    fn admit(&mut self, now_ns: u64, cost: u64) {
        let (previous, current, _) = self.view(now_ns);
        *self = SlidingModel {
            index: now_ns / self.window_ns,
            previous,
            current: current + cost as u128,
            ..*self
        };
    }

    fn remaining(&self, now_ns: u64) -> u128 {
        self.limit.saturating_sub(self.estimate(now_ns))
    }

    /// As good as never seen: the estimate is 0 now, and (nothing being current) can only
    /// stay 0.
    fn is_fresh(&self, now_ns: u64) -> bool {
        let (_, current, _) = self.view(now_ns);
        current == 0 && self.estimate(now_ns) == 0
    }

    /// Two windows after `now_ns`'s window begins, everything is forgotten.
    fn forgotten_by(&self, now_ns: u64) -> u64 {
        (now_ns / self.window_ns + 2) * self.window_ns
    }
}

/// Keeps the distance from the last stored window within the documented wrap margin (`margin`
/// = the index wrap, 2^24 resp. 2^40, less the quota's `backward_windows()`, less one): beyond
/// it a stored index may alias, as documented.
/// The documented modulus of the sliding window's stored index.
const SLIDING_INDEX_WRAP: u64 = 1 << 24;
/// The documented modulus of the fixed window's stored index.
const FIXED_INDEX_WRAP: u64 = 1 << 40;

fn clamp_to_wrap_margin(now_ns: u64, stored_index: u64, window_ns: u64, margin: u64) -> u64 {
    now_ns.min((stored_index + margin + 1).saturating_mul(window_ns) - 1)
}

fn check_sliding_against_model(
    quota: SlidingWindow,
    start_ns: u64,
    requests: &[RawRequest],
) -> Result<(), TestCaseError> {
    let limiter = Limiter::with_clock(quota, ManualClock::new());
    let window_ns = quota.window().as_nanos() as u64;
    let limit = quota.limit();
    let mut model = SlidingModel {
        limit: limit as u128,
        window_ns,
        index: 0,
        previous: 0,
        current: 0,
    };
    let margin = SLIDING_INDEX_WRAP - 1 - quota.backward_windows();
    let unit_ns = (window_ns / limit).max(1);
    let mut now = start_ns;
    for request in requests {
        now = now.saturating_add(gap_of(request, unit_ns, window_ns));
        now = clamp_to_wrap_margin(now, model.index, window_ns, margin);
        if now > LATEST_NS {
            break;
        }
        let cost = cost_of(request, limit);
        let Ok(decision) = check_cost_at(&limiter, cost, now) else {
            prop_assert!(cost > limit);
            continue;
        };
        let model_allows = model.passes(now, cost);
        prop_assert_eq!(
            decision.is_allowed(),
            model_allows,
            "cost {} at {} ns (window {}): {:?}",
            cost,
            now,
            now / window_ns,
            model
        );
        if model_allows && cost > 0 {
            model.admit(now, cost);
        }
        prop_assert_eq!(decision.remaining() as u128, model.remaining(now));
        prop_assert_eq!(
            quota.is_fresh(decision.state_word(), quota.instant(at(now))),
            model.is_fresh(now)
        );
        // Reset: the full limit again (the previous share may have rounded down to 0 before
        // the state is fresh).
        let reset_at = earliest(now, model.forgotten_by(now), |at| {
            model.remaining(at) == model.limit
        });
        prop_assert_eq!(decision.reset_after(), Duration::from_nanos(reset_at - now));
        if decision.is_denied() {
            let retry_at = earliest(now, model.forgotten_by(now), |at| model.passes(at, cost));
            prop_assert_eq!(decision.retry_after(), Duration::from_nanos(retry_at - now));
        }
    }
    Ok(())
}

fn sliding_window_quotas() -> impl Strategy<Value = SlidingWindow> {
    const MAX_LIMIT: u64 = SlidingWindow::MAX_LIMIT;
    const MIN_WINDOW_NS: u64 = SlidingWindow::MIN_WINDOW.as_nanos() as u64;
    let window_ns = prop_oneof![
        Just(MIN_WINDOW_NS),
        Just(1_000_000_000u64),
        Just(60_000_000_000u64),
        MIN_WINDOW_NS..=10_000_000_000,
        Just(1_000_000_007u64),
    ];
    let limit = prop_oneof![1u64..=4, 1u64..=100, 1u64..=MAX_LIMIT, Just(MAX_LIMIT)];
    (limit, window_ns).prop_map(|(limit, window_ns)| {
        SlidingWindow::new(limit, Duration::from_nanos(window_ns)).unwrap()
    })
}

/// The fixed-window counter with its window index kept whole and its count apart.
#[derive(Debug, Clone, Copy)]
struct FixedModel {
    limit: u64,
    window_ns: u64,
    index: u64,
    count: u64,
}

impl FixedModel {
    fn count_at(&self, now_ns: u64) -> u64 {
        let now_index = now_ns / self.window_ns;
        assert!(now_index >= self.index, "the schedule went back in time");
        if now_index == self.index {
            self.count
        } else {
            0
        }
    }

    fn passes(&self, now_ns: u64, cost: u64) -> bool {
        self.count_at(now_ns) + cost <= self.limit
    }
}

fn check_fixed_against_model(
    quota: FixedWindow,
    start_ns: u64,
    requests: &[RawRequest],
) -> Result<(), TestCaseError> {
    let limiter = Limiter::with_clock(quota, ManualClock::new());
    let window_ns = quota.window().as_nanos() as u64;
    let limit = quota.limit();
    let mut model = FixedModel {
        limit,
        window_ns,
        index: 0,
        count: 0,
    };
    let margin = FIXED_INDEX_WRAP - 1 - quota.backward_windows();
    let unit_ns = (window_ns / limit).max(1);
    let mut now = start_ns;
    for request in requests {
        now = now.saturating_add(gap_of(request, unit_ns, window_ns));
        now = clamp_to_wrap_margin(now, model.index, window_ns, margin);
        if now > LATEST_NS {
            break;
        }
        let cost = cost_of(request, limit);
        let Ok(decision) = check_cost_at(&limiter, cost, now) else {
            prop_assert!(cost > limit);
            continue;
        };
        let model_allows = model.passes(now, cost);
        prop_assert_eq!(
            decision.is_allowed(),
            model_allows,
            "cost {} at {} ns",
            cost,
            now
        );
        if model_allows && cost > 0 {
            model = FixedModel {
                index: now / window_ns,
                count: model.count_at(now) + cost,
                ..model
            };
        }
        prop_assert_eq!(decision.remaining(), limit - model.count_at(now));
        let next_window = (now / window_ns + 1) * window_ns;
        let reset_at = earliest(now, next_window, |at| model.count_at(at) == 0);
        prop_assert_eq!(decision.reset_after(), Duration::from_nanos(reset_at - now));
        if decision.is_denied() {
            let retry_at = earliest(now, next_window, |at| model.passes(at, cost));
            prop_assert_eq!(decision.retry_after(), Duration::from_nanos(retry_at - now));
        }
    }
    Ok(())
}

fn fixed_window_quotas() -> impl Strategy<Value = FixedWindow> {
    const MAX_LIMIT: u64 = FixedWindow::MAX_LIMIT;
    const MIN_WINDOW_NS: u64 = FixedWindow::MIN_WINDOW.as_nanos() as u64;
    let window_ns = prop_oneof![
        Just(MIN_WINDOW_NS),
        MIN_WINDOW_NS..=1_000_000,
        Just(1_000_000_000u64),
        MIN_WINDOW_NS..=100_000_000_000,
    ];
    let limit = prop_oneof![1u64..=4, 1u64..=1_000, 1u64..=MAX_LIMIT, Just(MAX_LIMIT)];
    (limit, window_ns).prop_map(|(limit, window_ns)| {
        FixedWindow::new(limit, Duration::from_nanos(window_ns)).unwrap()
    })
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn sliding_window_matches_the_unpacked_model(
        quota in sliding_window_quotas(),
        (start_ns, requests) in schedules(),
    ) {
        check_sliding_against_model(quota, start_ns, &requests)?;
    }

    #[test]
    fn fixed_window_matches_the_unpacked_model(
        quota in fixed_window_quotas(),
        (start_ns, requests) in schedules(),
    ) {
        check_fixed_against_model(quota, start_ns, &requests)?;
    }
}

//! With one stripe and leases of one unit, a striped limiter is the plain GCRA limiter: fed the
//! same requests (readings that may go backward, costs from 0 to the burst, unit checks,
//! peeks), it makes the same decisions with the same metadata, and its budget reads as the
//! plain limiter's state.

use crate::common::{at, proptest_config, HORIZON_NS, YEAR_NS};
use crate::START_NS;
use nanolimit::striped::StripedLimiter;
use nanolimit::{Decision, Gcra, Limiter, ManualClock, Request};
use proptest::prelude::*;
use std::time::Duration;

/// Quotas of every shape, whole-nanosecond and fractional emission intervals.
fn quotas() -> Vec<Gcra> {
    vec![
        Gcra::per_second(1).unwrap(),
        Gcra::per_second(3).unwrap(),
        Gcra::per_second(1_000).unwrap().with_burst(10).unwrap(),
        Gcra::per_minute(7).unwrap().with_burst(3).unwrap(),
        Gcra::new(7, Duration::from_nanos(3)).unwrap(),
        Gcra::new(999_983, Duration::from_nanos(1_000_000_007))
            .unwrap()
            .with_burst(1_000)
            .unwrap(),
        Gcra::every(Duration::from_millis(250)).unwrap(),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `check_with` of a cost.
    Check,
    /// `check_at` (one unit).
    Unit,
    /// `peek_with` of a cost.
    Peek,
    /// `give_back_unused`, then a peek of the cost.
    GiveBack,
}

/// One request: the reading moves by `delta` (in emission intervals, may be negative), then
/// the request of kind `kind` for `cost_share` of the burst is made.
#[derive(Debug, Clone, Copy)]
struct Step {
    delta_intervals: i64,
    kind: Kind,
    cost_share: f64,
}

fn any_step() -> impl Strategy<Value = Step> {
    let delta = prop_oneof![
        4 => 0i64..=2,
        2 => -3i64..=0,
        1 => 0i64..=100,
        1 => -1_000i64..=0,
    ];
    let kind = prop_oneof![
        4 => Just(Kind::Check),
        3 => Just(Kind::Unit),
        2 => Just(Kind::Peek),
        1 => Just(Kind::GiveBack),
    ];
    (delta, kind, 0.0f64..=1.0).prop_map(|(delta_intervals, kind, cost_share)| Step {
        delta_intervals,
        kind,
        cost_share,
    })
}

fn assert_same(striped: &Decision<Gcra>, plain: &Decision<Gcra>, context: &str) {
    assert_eq!(
        striped.is_allowed(),
        plain.is_allowed(),
        "{context}: allowed"
    );
    assert_eq!(striped.cost(), plain.cost(), "{context}: cost");
    assert_eq!(striped.limit(), plain.limit(), "{context}: limit");
    assert_eq!(
        striped.remaining(),
        plain.remaining(),
        "{context}: remaining"
    );
    assert_eq!(
        striped.retry_after(),
        plain.retry_after(),
        "{context}: retry_after"
    );
    assert_eq!(
        striped.reset_after(),
        plain.reset_after(),
        "{context}: reset_after"
    );
    assert_eq!(striped.state_word(), plain.state_word(), "{context}: state");
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn one_stripe_with_leases_of_one_unit_is_the_plain_limiter(
        quota in prop::sample::select(quotas()),
        start_ns in prop_oneof![Just(START_NS), 0..YEAR_NS],
        steps in prop::collection::vec(any_step(), 1..200),
    ) {
        let striped = StripedLimiter::builder(quota)
            .stripes(1)
            .lease_units(1, 1)
            .clock(ManualClock::starting_at(at(start_ns)))
            .build()
            .unwrap();
        prop_assert_eq!(striped.over_admission_bound(), 0);
        let plain = Limiter::with_clock(quota, ManualClock::starting_at(at(start_ns)));
        let interval_ns = (quota.period().as_nanos() / quota.count() as u128).max(1) as i128;
        let burst = quota.limit();
        let mut now_ns = start_ns;
        for (index, step) in steps.iter().enumerate() {
            let moved = now_ns as i128 + step.delta_intervals as i128 * interval_ns;
            now_ns = moved.clamp(0, HORIZON_NS as i128) as u64;
            let now = at(now_ns);
            striped.clock().set(now);
            plain.clock().set(now);
            let cost = (step.cost_share * burst as f64) as u64;
            let request = Request::cost(cost).at(now);
            let (from_striped, from_plain) = match step.kind {
                Kind::Check => (striped.check_with(request), plain.check_with(request)),
                Kind::Unit => (Ok(striped.check_at(now)), Ok(plain.check_at(now))),
                Kind::Peek => (striped.peek_with(request), plain.peek_with(request)),
                Kind::GiveBack => {
                    striped.give_back_unused();
                    (striped.peek_with(request), plain.peek_with(request))
                }
            };
            let context = format!("{quota:?}, step {index} {step:?} at {now_ns}, cost {cost}");
            assert_same(&from_striped.unwrap(), &from_plain.unwrap(), &context);
            prop_assert_eq!(striped.held_units(0), 0, "{}", context);
            prop_assert_eq!(
                striped.quota_remaining(),
                plain.peek_with(Request::cost(0)).unwrap().remaining(),
                "{}", context
            );
        }
    }
}

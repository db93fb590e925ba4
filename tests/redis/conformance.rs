//! Conformance: given the same schedule of explicit times and costs, the Redis limiter and the
//! in-process `KeyedLimiter` make identical decisions (allowed, state word, limit, remaining,
//! reset-after, retry-after) for GCRA, the sliding window and the fixed window. Property tests
//! with a modest number of cases: each step is a round trip to a real server (see
//! `support`).
//!
//! Expiry runs in the server's real time, the schedules in their own; every case runs in well
//! under the shortest reset-after its schedule can produce (5 s: intervals and the time left in
//! a window are kept at or above it), so no key expires while its state still counts.

use crate::support::{redis_url, unique_prefix};
use nanolimit::redis::{FailurePolicy, RedisLimiter, RedisQuota};
use nanolimit::{FixedWindow, Gcra, KeyedLimiter, ManualClock, Request, SlidingWindow, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::time::Duration;

/// The least time, in ns, left before a key may become fresh after an admission.
const MARGIN_NS: u64 = 5_000_000_000;

/// One operation of a schedule: which key, a check or a peek, its cost (a fraction of the
/// limit), how many "periods" later and where in that period.
#[derive(Debug, Clone)]
struct Operation {
    key: u8,
    peek: bool,
    cost_fraction: f64,
    periods_later: u64,
    offset_fraction: f64,
}

fn schedule() -> impl Strategy<Value = (u64, Vec<Operation>)> {
    let operation = (
        0u8..3,
        prop::bool::weighted(0.2),
        prop_oneof![Just(0.0), Just(1.0 / 1e9), 0.0..=1.0f64, Just(1.0)],
        prop_oneof![4 => Just(0u64), 2 => Just(1u64), 1 => 2u64..5, 1 => Just(1_000u64)],
        0.0..=1.0f64,
    )
        .prop_map(
            |(key, peek, cost_fraction, periods_later, offset_fraction)| Operation {
                key,
                peek,
                cost_fraction,
                periods_later,
                offset_fraction,
            },
        );
    // The first period: anywhere up to 2^58 ns (9 years) after the epoch.
    (0u64..(1 << 58), prop::collection::vec(operation, 1..40))
}

/// Runs `schedules` on a fresh Redis key set and a fresh in-process limiter per case, and
/// compares every decision. `period_ns` is the schedule's unit of time (a window length),
/// `latest_offset_ns` the latest time into a period an operation lands.
fn conform<Q: RedisQuota>(url: &str, quotas: impl Strategy<Value = (Q, u64, u64)>, cases: u32) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(Config::with_cases(cases));
    runner
        .run(
            &(quotas, schedule()),
            |((quota, period_ns, latest_offset_ns), (start, operations))| {
                runtime.block_on(async {
                    let redis = RedisLimiter::builder(quota)
                        .prefix(&unique_prefix("conformance"))
                        .timeout(Duration::from_secs(5))
                        .failure_policy(FailurePolicy::Closed)
                        .build(url)
                        .unwrap();
                    let local = KeyedLimiter::<str, Q, _>::builder(quota)
                        .clock(ManualClock::new())
                        .build()
                        .unwrap();
                    let mut period = start / period_ns;
                    for (step, operation) in operations.iter().enumerate() {
                        period += operation.periods_later;
                        let offset = (operation.offset_fraction * latest_offset_ns as f64) as u64;
                        let at_ns = (period * period_ns + offset).min(Timestamp::HORIZON.as_ns());
                        let at = Timestamp::from_ns(at_ns).unwrap();
                        let cost = (operation.cost_fraction * quota.limit() as f64).ceil() as u64;
                        let key = ["alpha", "beta", "gamma"][operation.key as usize];
                        let request = Request::cost(cost).at(at);
                        let (remote, in_process) = if operation.peek {
                            (
                                redis.peek_with(key, request).await,
                                local.peek_with(key, request),
                            )
                        } else {
                            (
                                redis.check_with(key, request).await,
                                local.check_with(key, request),
                            )
                        };
                        let (remote, in_process) = (remote.unwrap(), in_process.unwrap());
                        let context =
                            format!("step {step} {operation:?} cost {cost} at {at_ns} ns");
                        prop_assert!(!remote.is_fallback(), "{}: {:?}", context, redis.stats());
                        prop_assert_eq!(
                            remote.is_allowed(),
                            in_process.is_allowed(),
                            "{}",
                            context
                        );
                        prop_assert_eq!(
                            remote.state_word(),
                            in_process.state_word(),
                            "{}",
                            context
                        );
                        prop_assert_eq!(remote.limit(), in_process.limit(), "{}", context);
                        prop_assert_eq!(remote.remaining(), in_process.remaining(), "{}", context);
                        prop_assert_eq!(
                            remote.reset_after(),
                            in_process.reset_after(),
                            "{}",
                            context
                        );
                        prop_assert_eq!(
                            remote.retry_after(),
                            in_process.retry_after(),
                            "{}",
                            context
                        );
                    }
                    Ok(())
                })
            },
        )
        .unwrap();
}

#[test]
fn gcra_decides_as_in_process() {
    let Some(url) = redis_url() else { return };
    // Intervals of at least 5 s (an admission's reset-after is at least one interval), on the
    // whole-nanosecond scale and off it (7 per minute).
    let quotas = (
        prop_oneof![
            (1u64..=12).prop_map(|count| Gcra::per_minute(count).unwrap()),
            (1u64..=720).prop_map(|count| Gcra::per_hour(count).unwrap()),
            Just(Gcra::new(7, Duration::from_secs(60)).unwrap()),
            Just(Gcra::new(3, Duration::from_secs(17)).unwrap()),
        ],
        1u64..=30,
    )
        .prop_map(|(quota, burst)| {
            let quota = quota.with_burst(burst).unwrap();
            // Periods of a few intervals: the schedule reaches full and empty buckets.
            let period_ns = quota.emission_interval().as_nanos() as u64 * 2;
            (quota, period_ns, period_ns)
        });
    conform(&url, quotas, 40);
}

#[test]
fn sliding_window_decides_as_in_process() {
    let Some(url) = redis_url() else { return };
    let quotas = (
        1u64..=50,
        prop_oneof![Just(10u64), Just(60), Just(3_600), 10u64..100],
    )
        .prop_map(|(limit, window_seconds)| {
            let window_ns = window_seconds * 1_000_000_000;
            let quota = SlidingWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
            (quota, window_ns, window_ns - MARGIN_NS)
        });
    conform(&url, quotas, 40);
}

#[test]
fn fixed_window_decides_as_in_process() {
    let Some(url) = redis_url() else { return };
    let quotas = (
        1u64..=50,
        prop_oneof![Just(10u64), Just(60), Just(3_600), 10u64..100],
    )
        .prop_map(|(limit, window_seconds)| {
            let window_ns = window_seconds * 1_000_000_000;
            let quota = FixedWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
            (quota, window_ns, window_ns - MARGIN_NS)
        });
    conform(&url, quotas, 40);
}

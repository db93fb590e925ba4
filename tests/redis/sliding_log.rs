//! The exact sliding log in Redis (`RedisLimiter<SlidingLog>`), through a real server (see
//! `support`): identical decisions to a plain reference log (a `Vec` of unit times) and to
//! the in-process `SlidingLogLimiter` on random schedules of explicit times and costs, exact
//! times past 2^53 ns, expiry once the log is empty, peeks and denials that write nothing, bad
//! input, batches, and the failure policy with the server stopped and restarted.
//!
//! Expiry runs in the server's real time, the schedules in their own: windows are at least 5 s
//! and every case runs in well under that, so no key expires while its units still count.

use crate::support::{raw_connection, redis_url, unique_prefix, PrivateServer};
use nanolimit::redis::{FailurePolicy, RedisLimiter, RedisLimiterBuilder, MAX_SLIDING_LOG_LIMIT};
use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
use nanolimit::BuildError;
use nanolimit::Decision;
use nanolimit::{ManualClock, Request, RequestError, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis::AsyncCommands;
use std::time::{Duration, Instant, SystemTime};

fn builder(quota: SlidingLog, test: &str) -> RedisLimiterBuilder<SlidingLog> {
    RedisLimiter::builder(quota)
        .prefix(&unique_prefix(test))
        .timeout(Duration::from_secs(5))
}

fn at(ns: u64) -> Timestamp {
    Timestamp::from_ns(ns).unwrap()
}

/// The exact rule, as plainly as it can be written: every admitted unit's time, in order.
#[derive(Debug)]
struct ReferenceLog {
    limit: u64,
    window_ns: u64,
    times: Vec<u64>,
}

/// What the reference decides: allowed, judged at, remaining, retry-after, reset-after (ns).
type Expected = (bool, u64, u64, u64, u64);

impl ReferenceLog {
    fn decide(&mut self, reading_ns: u64, cost: u64, apply: bool) -> Expected {
        let latest = self.times.last().copied();
        let now = latest.map_or(reading_ns, |latest| latest.max(reading_ns));
        let in_window: Vec<u64> = self
            .times
            .iter()
            .copied()
            .filter(|&time| time + self.window_ns > now)
            .collect();
        let count = in_window.len() as u64;
        let fits = cost == 0 || count + cost <= self.limit;
        let retry_after = match fits {
            true => 0,
            false => in_window[(count + cost - self.limit - 1) as usize] + self.window_ns - now,
        };
        let recorded = fits && apply && cost > 0;
        let reset_after = match (recorded, latest) {
            (true, _) => self.window_ns,
            (false, Some(latest)) => (latest + self.window_ns).saturating_sub(now),
            (false, None) => 0,
        };
        if recorded {
            self.times.extend(std::iter::repeat_n(now, cost as usize));
        }
        let remaining = self.limit - count - if recorded { cost } else { 0 };
        (fits, now, remaining, retry_after, reset_after)
    }
}

fn observed(decision: &Decision<SlidingLog>) -> Expected {
    (
        decision.is_allowed(),
        decision.judged_at().as_ns(),
        decision.remaining(),
        decision.retry_after().as_nanos() as u64,
        decision.reset_after().as_nanos() as u64,
    )
}

/// One operation: a check or a peek, its cost, and how far its reading is from the previous
/// one's (forward, or back behind the log).
#[derive(Debug, Clone)]
struct Operation {
    peek: bool,
    cost: u64,
    step: Step,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Same,
    Forward(u64),
    WindowMinus(u64),
    Window,
    WindowPlus(u64),
    FractionOfWindow(f64),
    Back(u64),
    ManyWindows,
}

fn operations() -> impl Strategy<Value = Vec<Operation>> {
    let step = prop_oneof![
        3 => Just(Step::Same),
        1 => (1u64..3).prop_map(Step::Forward),
        1 => (1u64..3).prop_map(Step::WindowMinus),
        1 => Just(Step::Window),
        1 => (1u64..3).prop_map(Step::WindowPlus),
        4 => (0.0..1.0f64).prop_map(Step::FractionOfWindow),
        1 => (1u64..1_000_000_000).prop_map(Step::Back),
        1 => Just(Step::ManyWindows),
    ];
    let operation = (prop::bool::weighted(0.2), 0u64..=16, step)
        .prop_map(|(peek, cost, step)| Operation { peek, cost, step });
    prop::collection::vec(operation, 1..60)
}

#[test]
fn decides_as_the_reference_log_and_the_in_process_log() {
    let Some(url) = redis_url() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let quotas = (
        1u64..=40,
        prop_oneof![Just(5u64), Just(60), Just(3_600), 5u64..100],
        prop_oneof![Just(0u64), Just(999_999_999)],
    )
        .prop_map(|(limit, seconds, extra_ns)| {
            SlidingLog::new(
                limit,
                Duration::from_nanos(seconds * 1_000_000_000 + extra_ns),
            )
            .unwrap()
        });
    // The first reading: anywhere up to 2^58 ns (9 years) after the epoch, well past the 2^53 ns
    // (104 days) that a double holds exactly.
    let start = prop_oneof![Just(0u64), 0u64..(1 << 58), Just((1 << 53) + 1)];
    let mut runner = TestRunner::new(Config::with_cases(48));
    runner
        .run(
            &(quotas, start, operations()),
            |(quota, start, operations)| {
                runtime.block_on(async {
                    let redis = builder(quota, "reference")
                        .failure_policy(FailurePolicy::Closed)
                        .build(&url)
                        .unwrap();
                    let local = SlidingLogLimiter::with_clock(quota, ManualClock::new()).unwrap();
                    let window_ns = quota.window().as_nanos() as u64;
                    let mut reference = ReferenceLog {
                        limit: quota.limit(),
                        window_ns,
                        times: Vec::new(),
                    };
                    let mut reading = start;
                    for (index, operation) in operations.iter().enumerate() {
                        reading = match operation.step {
                            Step::Same => reading,
                            Step::Forward(ns) => reading + ns,
                            Step::WindowMinus(ns) => reading + window_ns - ns,
                            Step::Window => reading + window_ns,
                            Step::WindowPlus(ns) => reading + window_ns + ns,
                            Step::FractionOfWindow(fraction) => {
                                reading + (fraction * window_ns as f64) as u64
                            }
                            Step::Back(ns) => reading.saturating_sub(ns),
                            Step::ManyWindows => reading + 1_000 * window_ns,
                        };
                        let cost = operation.cost.min(quota.max_cost());
                        let request = Request::cost(cost).at(at(reading));
                        let (remote, in_process) = match operation.peek {
                            true => (
                                redis.peek_with("k", request).await.unwrap(),
                                local.peek_with(request).unwrap(),
                            ),
                            false => (
                                redis.check_with("k", request).await.unwrap(),
                                local.check_with(request).unwrap(),
                            ),
                        };
                        let expected = reference.decide(reading, cost, !operation.peek);
                        let context =
                            format!("operation {index} {operation:?}, cost {cost} at {reading}");
                        prop_assert!(!remote.is_fallback(), "{}: {:?}", context, redis.stats());
                        prop_assert_eq!(observed(&remote), expected, "{}", context);
                        prop_assert_eq!(
                            observed(&in_process),
                            expected,
                            "{} (in process)",
                            context
                        );
                        prop_assert_eq!((remote.limit(), remote.cost()), (quota.limit(), cost));
                    }
                    // The set holds the units still in the window at the last admission, at most
                    // the limit.
                    let members: u64 = raw_connection(&url)
                        .await
                        .zcard(redis.key_name("k"))
                        .await
                        .unwrap();
                    prop_assert!(members <= quota.limit());
                    Ok(())
                })
            },
        )
        .unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn times_past_two_to_the_53_nanoseconds_stay_exact() {
    let Some(url) = redis_url() else { return };
    // One nanosecond apart near 2^58 ns: doubles there are 64 ns apart.
    let base = (1u64 << 58) + 1;
    let log = builder(SlidingLog::per_second(2).unwrap(), "exact")
        .build(&url)
        .unwrap();
    for offset in [0, 1] {
        let request = Request::cost(1).at(at(base + offset));
        assert!(log.check_with("k", request).await.unwrap().is_allowed());
    }
    let second = 1_000_000_000;
    let full = log
        .check_with("k", Request::cost(1).at(at(base + second - 1)))
        .await
        .unwrap();
    assert!(full.is_denied());
    assert_eq!(full.retry_after(), Duration::from_nanos(1));
    assert_eq!(full.reset_after(), Duration::from_nanos(2));
    // The first unit has left the window at base + 1 s, the second not until 1 ns later.
    let one_left = Request::cost(1).at(at(base + second));
    let admitted = log.check_with("k", one_left).await.unwrap();
    assert!(admitted.is_allowed());
    assert_eq!(admitted.remaining(), 0);
    let denied = log.check_with("k", one_left).await.unwrap();
    assert_eq!(denied.retry_after(), Duration::from_nanos(1));
    // The members carry the exact times.
    let members: Vec<String> = raw_connection(&url)
        .await
        .zrange(log.key_name("k"), 0, -1)
        .await
        .unwrap();
    assert_eq!(
        members,
        [
            format!("{:016x}:1", base + 1),
            format!("{:016x}:1", base + second)
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn equal_times_and_costs_above_one_get_a_member_per_unit() {
    let Some(url) = redis_url() else { return };
    let log = builder(SlidingLog::per_minute(10).unwrap(), "members")
        .build(&url)
        .unwrap();
    let now = at(7_000);
    for cost in [3, 1, 4] {
        let decision = log
            .check_with("k", Request::cost(cost).at(now))
            .await
            .unwrap();
        assert!(decision.is_allowed());
    }
    let mut raw = raw_connection(&url).await;
    let count: u64 = raw.zcard(log.key_name("k")).await.unwrap();
    assert_eq!(count, 8);
    // A reading behind the log is judged at the latest unit's time, and recorded there.
    let behind = log
        .check_with("k", Request::cost(2).at(at(5_000)))
        .await
        .unwrap();
    assert!(behind.is_allowed());
    assert_eq!(behind.judged_at(), now);
    assert_eq!(behind.remaining(), 0);
    let count: u64 = raw.zcard(log.key_name("k")).await.unwrap();
    assert_eq!(count, 10);
    let denied = log.check_with("k", Request::cost(1).at(now)).await.unwrap();
    assert_eq!(denied.retry_after(), Duration::from_secs(60));
}

#[tokio::test(flavor = "current_thread")]
async fn peeks_and_denials_write_nothing() {
    let Some(url) = redis_url() else { return };
    let log = builder(SlidingLog::per_minute(3).unwrap(), "peek")
        .build(&url)
        .unwrap();
    let mut raw = raw_connection(&url).await;
    let key = log.key_name("k");
    let fresh = log.peek("k").await;
    assert!(fresh.is_allowed() && !fresh.is_fallback());
    assert_eq!(
        (fresh.remaining(), fresh.reset_after()),
        (3, Duration::ZERO)
    );
    let exists: bool = raw.exists(&key).await.unwrap();
    assert!(!exists, "a peek created the key");
    let zero = log
        .check_with("k", Request::cost(0).at(at(1)))
        .await
        .unwrap();
    assert!(zero.is_allowed());
    let exists: bool = raw.exists(&key).await.unwrap();
    assert!(!exists, "a check of cost 0 created the key");

    assert!(log
        .check_with("k", Request::cost(3).at(at(1_000)))
        .await
        .unwrap()
        .is_allowed());
    let before: Vec<String> = raw.zrange(&key, 0, -1).await.unwrap();
    let peeked = log
        .peek_with("k", Request::cost(1).at(at(2_000)))
        .await
        .unwrap();
    assert!(peeked.is_denied());
    let denied = log
        .check_with("k", Request::cost(1).at(at(3_000)))
        .await
        .unwrap();
    assert!(denied.is_denied());
    // A peek past the window fits, and still writes nothing.
    let later = log
        .peek_with("k", Request::cost(3).at(at(1_000 + 60_000_000_000)))
        .await
        .unwrap();
    assert!(later.is_allowed());
    assert_eq!(later.remaining(), 3);
    let after: Vec<String> = raw.zrange(&key, 0, -1).await.unwrap();
    assert_eq!(before, after);
    assert_eq!(after.len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn an_idle_log_expires_once_empty() {
    let Some(url) = redis_url() else { return };
    // On the server's clock, a window of 50 ms.
    let quota = SlidingLog::new(4, Duration::from_millis(50)).unwrap();
    let log = builder(quota, "expiry").build(&url).unwrap();
    let mut raw = raw_connection(&url).await;
    let key = log.key_name("idle");
    let started = Instant::now();
    let decision = log.check_with("idle", Request::cost(4)).await.unwrap();
    assert!(decision.is_allowed() && !decision.is_fallback());
    assert_eq!(decision.reset_after(), Duration::from_millis(50));
    // Judged on Redis TIME: within a second of this machine's clock.
    let here = log.timestamp_of(SystemTime::now()).unwrap().as_ns();
    assert!(decision.judged_at().as_ns().abs_diff(here) < 1_000_000_000);
    // Set to expire when the log is empty: the window, rounded up, plus up to 2 ms.
    let ttl_ms: i64 = raw.pttl(&key).await.unwrap();
    assert!((1..=52).contains(&ttl_ms), "PTTL {ttl_ms}");
    let denied = log.check("idle").await;
    assert!(denied.is_denied());
    assert!(denied.retry_after() <= Duration::from_millis(50));
    let deadline = started + Duration::from_secs(2);
    loop {
        let exists: bool = raw.exists(&key).await.unwrap();
        if !exists {
            break;
        }
        assert!(Instant::now() < deadline, "still there after 2 s");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(started.elapsed() >= decision.reset_after());
}

#[tokio::test(flavor = "current_thread")]
async fn bad_input_is_an_error_without_a_round_trip() {
    // No server on this port: an error here cannot come from Redis.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let small = RedisLimiter::builder(SlidingLog::per_minute(5).unwrap())
        .build(&url)
        .unwrap();
    assert_eq!(
        small.check_with("k", Request::cost(6)).await.unwrap_err(),
        RequestError::CostAboveLimit { cost: 6, limit: 5 }
    );
    let large = RedisLimiter::builder(SlidingLog::per_minute(1_000).unwrap())
        .build(&url)
        .unwrap();
    assert_eq!(
        large.peek_with("k", Request::cost(17)).await.unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 17,
            limit: 16
        }
    );
    let results = large.check_many(&[("k", Request::cost(u64::MAX))]).await;
    assert!(matches!(
        results[..],
        [Err(RequestError::CostAboveLimit { .. })]
    ));
    assert_eq!(small.stats().fallbacks() + large.stats().fallbacks(), 0);

    let too_large = SlidingLog::per_minute(MAX_SLIDING_LOG_LIMIT + 1).unwrap();
    let refused = RedisLimiter::builder(too_large).build(&url);
    assert!(matches!(
        refused,
        Err(BuildError::LimitTooLarge {
            limit,
            max: MAX_SLIDING_LOG_LIMIT
        }) if limit == MAX_SLIDING_LOG_LIMIT + 1
    ));
    let largest = SlidingLog::per_minute(MAX_SLIDING_LOG_LIMIT).unwrap();
    assert!(RedisLimiter::builder(largest).build(&url).is_ok());
    let zero = RedisLimiter::builder(SlidingLog::per_minute(1).unwrap())
        .timeout(Duration::ZERO)
        .build(&url);
    assert!(matches!(zero, Err(BuildError::ZeroTimeout)));
}

#[tokio::test(flavor = "current_thread")]
async fn a_batch_decides_as_single_checks() {
    let Some(url) = redis_url() else { return };
    let quota = SlidingLog::per_minute(3).unwrap();
    let batched = builder(quota, "batch").build(&url).unwrap();
    let single = builder(quota, "batch").build(&url).unwrap();
    let requests = [
        ("a", Request::cost(2).at(at(10))),
        ("b", Request::cost(3).at(at(10))),
        ("a", Request::cost(2).at(at(20))),
        ("c", Request::cost(4).at(at(20))),
        ("a", Request::cost(1).at(at(60_000_000_010))),
        ("b", Request::cost(0).at(at(30))),
    ];
    let decisions = batched.check_many(&requests).await;
    assert_eq!(decisions.len(), requests.len());
    for ((key, request), decision) in requests.iter().zip(&decisions) {
        match single.check_with(key, *request).await {
            Ok(expected) => {
                let decision = decision.as_ref().unwrap();
                assert!(!decision.is_fallback());
                assert_eq!(observed(decision), observed(&expected), "{key} {request:?}");
            }
            Err(error) => assert_eq!(decision.as_ref().unwrap_err(), &error),
        }
    }
    assert!(decisions[2].as_ref().unwrap().is_denied());
}

const TIMEOUT: Duration = Duration::from_millis(50);
/// How late past its timeout a call may return on a loaded test machine.
const SCHEDULING_SLACK: Duration = Duration::from_millis(250);

/// Polls until the log decides through Redis again (bounded: the connection manager
/// reconnects in the background).
async fn assert_recovers(log: &RedisLimiter<SlidingLog>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let decision = log.check("after").await;
        if !decision.is_fallback() {
            assert!(decision.is_allowed());
            return;
        }
        assert!(Instant::now() < deadline, "no recovery: {:?}", log.stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_gets_the_failure_policy_and_a_restarted_one_decides_again() {
    if redis_url().is_none() {
        return;
    }
    let Some(mut server) = PrivateServer::start() else {
        return;
    };
    let quota = SlidingLog::per_minute(10).unwrap();
    let logs: Vec<RedisLimiter<SlidingLog>> = [FailurePolicy::Open, FailurePolicy::Closed]
        .into_iter()
        .map(|policy| {
            RedisLimiter::builder(quota)
                .prefix(&unique_prefix("log-faults"))
                .timeout(TIMEOUT)
                .failure_policy(policy)
                .build(&server.url())
                .unwrap()
        })
        .collect();
    for log in &logs {
        assert_recovers(log).await;
    }
    server.stop();
    for (log, open) in logs.iter().zip([true, false]) {
        for round in 0..10 {
            let started = Instant::now();
            let decision = log.check(&format!("key-{round}")).await;
            assert!(started.elapsed() <= TIMEOUT + SCHEDULING_SLACK);
            assert!(decision.is_fallback());
            if open {
                assert!(decision.is_allowed());
                assert_eq!(decision.remaining(), 9);
                assert_eq!(decision.reset_after(), Duration::from_secs(60));
            } else {
                assert!(decision.is_denied());
                assert_eq!(
                    (decision.remaining(), decision.retry_after()),
                    (0, Duration::from_nanos(1))
                );
            }
        }
        let batch = log.check_many(&[("x", Request::cost(2))]).await;
        assert!(batch[0].as_ref().unwrap().is_fallback());
        assert!(log.stats().fallbacks() >= 11, "{:?}", log.stats());
    }
    assert!(server.restart());
    // The same limiters, not rebuilt: the script is loaded again on the new server.
    for log in &logs {
        assert_recovers(log).await;
    }
}

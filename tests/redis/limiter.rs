//! The Redis limiter's behaviour around the step: Redis time, expiry of idle keys, bad input,
//! and the failure policy when the server is down, frozen, or back. Needs a server (see
//! `support`); the fault tests start their own, to stop and restart it.

use crate::support::{raw_connection, redis_url, unique_prefix, PrivateServer};
use nanolimit::redis::{FailurePolicy, RedisLimiter, RedisQuota};
use nanolimit::BuildError;
use nanolimit::{FixedWindow, Gcra, KeyedLimiter, Request, RequestError, SlidingWindow};
use redis::AsyncCommands;
use std::time::{Duration, Instant, SystemTime};

fn builder<Q: RedisQuota>(quota: Q, test: &str) -> nanolimit::redis::RedisLimiterBuilder<Q> {
    RedisLimiter::builder(quota)
        .prefix(&unique_prefix(test))
        .timeout(Duration::from_secs(5))
}

#[tokio::test(flavor = "current_thread")]
async fn checks_on_redis_time_count_from_the_epoch() {
    let Some(url) = redis_url() else { return };
    let limiter = builder(FixedWindow::per_hour(2).unwrap(), "redis-time")
        .build(&url)
        .unwrap();
    assert!(limiter.check("k").await.is_allowed());
    let second = limiter.check("k").await;
    let third = limiter.check("k").await;
    assert!(second.is_allowed() && third.is_denied());
    assert!(!third.is_fallback());
    // The hour ends when the wall clock's hour since the epoch does (the epoch is on a whole
    // hour): the server's clock and this one agree to well within a second.
    let since_epoch = limiter.timestamp_of(SystemTime::now()).unwrap().as_ns();
    let hour_ns = 3_600_000_000_000u64;
    let until_the_hour_ends = Duration::from_nanos(hour_ns - since_epoch % hour_ns);
    let difference = third.retry_after().abs_diff(until_the_hour_ends);
    assert!(
        difference < Duration::from_secs(1),
        "{:?} vs {until_the_hour_ends:?}",
        third.retry_after()
    );
    assert_eq!(third.reset_after(), third.retry_after());

    // GCRA on the server's clock: one per second, the next due a second later.
    let gcra = builder(Gcra::per_second(1).unwrap(), "redis-time")
        .build(&url)
        .unwrap();
    assert!(gcra.check("k").await.is_allowed());
    let denied = gcra.check("k").await;
    assert!(denied.is_denied() && !denied.is_fallback());
    let wait = denied.retry_after();
    assert!(
        wait > Duration::from_millis(500) && wait <= Duration::from_secs(1),
        "{wait:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_clock_before_the_epoch_is_a_failure_not_a_decision() {
    let Some(url) = redis_url() else { return };
    let tomorrow = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400;
    let limiter = builder(Gcra::per_second(1).unwrap(), "before-epoch")
        .epoch_unix_seconds(tomorrow)
        .failure_policy(FailurePolicy::Closed)
        .build(&url)
        .unwrap();
    let decision = limiter.check("k").await;
    assert!(decision.is_fallback() && decision.is_denied());
    assert_eq!(limiter.stats().errors, 1);
    // An explicit time needs no server clock.
    let at = Request::cost(1).at(nanolimit::Timestamp::from_ns(1).unwrap());
    assert!(limiter.check_with("k", at).await.unwrap().is_allowed());
}

/// Checks `key` once on the server's time, then polls `EXISTS` until the key is gone: never
/// before its reset-after, and within a bounded time after it.
async fn assert_expires_after_reset<Q: RedisQuota>(url: &str, quota: Q) {
    let limiter = builder(quota, "expiry").build(url).unwrap();
    let mut raw = raw_connection(url).await;
    let key = limiter.key_name("idle");
    let started = Instant::now();
    let decision = limiter
        .check_with("idle", Request::cost(quota.limit()))
        .await
        .unwrap();
    assert!(decision.is_allowed() && !decision.is_fallback());
    let reset = decision.reset_after();
    assert!(reset > Duration::ZERO);
    let exists: bool = raw.exists(&key).await.unwrap();
    assert!(
        exists || started.elapsed() >= reset,
        "{quota:?}: gone at once"
    );
    // Waiting on the server's clock (the expiry is Redis's): bounded polling.
    let deadline = started + reset + Duration::from_secs(2);
    loop {
        let exists: bool = raw.exists(&key).await.unwrap();
        if !exists {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{quota:?}: still there {:?} after a reset-after of {reset:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let gone_after = started.elapsed();
    assert!(
        gone_after >= reset,
        "{quota:?}: gone after {gone_after:?}, before its reset-after {reset:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn idle_keys_expire_once_fresh() {
    let Some(url) = redis_url() else { return };
    assert_expires_after_reset(
        &url,
        Gcra::every(Duration::from_millis(40))
            .unwrap()
            .with_burst(3)
            .unwrap(),
    )
    .await;
    assert_expires_after_reset(&url, Gcra::new(3, Duration::from_millis(100)).unwrap()).await;
    assert_expires_after_reset(
        &url,
        FixedWindow::new(5, Duration::from_millis(120)).unwrap(),
    )
    .await;
    assert_expires_after_reset(
        &url,
        SlidingWindow::new(5, Duration::from_millis(60)).unwrap(),
    )
    .await;
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
    let limiter = RedisLimiter::builder(Gcra::per_second(10).unwrap())
        .build(&url)
        .unwrap();
    assert_eq!(
        limiter
            .check_with("k", Request::cost(11))
            .await
            .unwrap_err(),
        RequestError::CostAboveLimit {
            cost: 11,
            limit: 10
        }
    );
    assert_eq!(
        limiter
            .peek_with("k", Request::cost(u64::MAX))
            .await
            .unwrap_err(),
        RequestError::CostAboveLimit {
            cost: u64::MAX,
            limit: 10
        }
    );
    let keyed = KeyedLimiter::<u64, _>::new(Gcra::per_second(10).unwrap(), 10).unwrap();
    let tier = keyed.tier(Gcra::per_second(20).unwrap()).unwrap();
    assert_eq!(
        limiter
            .check_with("k", Request::new().tier(tier))
            .await
            .unwrap_err(),
        RequestError::ForeignTier
    );
    assert_eq!(limiter.stats().fallbacks(), 0);
    let zero = RedisLimiter::builder(Gcra::per_second(1).unwrap())
        .timeout(Duration::ZERO)
        .build(&url);
    assert!(matches!(zero, Err(BuildError::ZeroTimeout)));
    let not_a_url = RedisLimiter::builder(Gcra::per_second(1).unwrap()).build("http://[::1");
    assert!(matches!(not_a_url, Err(BuildError::Connection { .. })));
}

const TIMEOUT: Duration = Duration::from_millis(50);
/// How late past its timeout a call may return on a loaded test machine.
const SCHEDULING_SLACK: Duration = Duration::from_millis(250);

/// `checks` concurrent checks on each limiter, each returning within the timeout with the
/// policy's fallback; no task panics.
async fn assert_fallbacks(limiters: &[std::sync::Arc<RedisLimiter<Gcra>>], checks: usize) {
    let mut tasks = Vec::new();
    for limiter in limiters {
        for round in 0..checks {
            let limiter = limiter.clone();
            tasks.push(tokio::spawn(async move {
                let started = Instant::now();
                let decision = limiter.check(&format!("key-{round}")).await;
                (started.elapsed(), decision)
            }));
        }
    }
    let mut panics = 0;
    for (index, task) in tasks.into_iter().enumerate() {
        match task.await {
            Ok((elapsed, decision)) => {
                assert!(decision.is_fallback(), "a decision without a server");
                assert!(
                    elapsed <= TIMEOUT + SCHEDULING_SLACK,
                    "returned after {elapsed:?}"
                );
                // The first limiter fails open, the second closed (see `fault_limiters`).
                if index < checks {
                    assert!(decision.is_allowed(), "fails open");
                    assert_eq!(decision.remaining(), 9);
                } else {
                    assert!(decision.is_denied(), "fails closed");
                    assert_eq!(
                        (decision.remaining(), decision.retry_after()),
                        (0, Duration::from_nanos(1))
                    );
                }
            }
            Err(error) => {
                assert!(error.is_panic());
                panics += 1;
            }
        }
    }
    assert_eq!(panics, 0);
}

/// Polls until every limiter decides through Redis again (bounded: the connection manager
/// reconnects in the background).
async fn assert_recovers(limiters: &[std::sync::Arc<RedisLimiter<Gcra>>]) {
    for limiter in limiters {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let decision = limiter.check("after").await;
            if !decision.is_fallback() {
                assert!(decision.is_allowed());
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no recovery: {:?}",
                limiter.stats()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn fault_limiters(server: &PrivateServer) -> Vec<std::sync::Arc<RedisLimiter<Gcra>>> {
    let quota = Gcra::per_second(10).unwrap();
    let limiters: Vec<_> = [FailurePolicy::Open, FailurePolicy::Closed]
        .into_iter()
        .map(|policy| {
            std::sync::Arc::new(
                RedisLimiter::builder(quota)
                    .prefix(&unique_prefix("faults"))
                    .timeout(TIMEOUT)
                    .failure_policy(policy)
                    .build(&server.url())
                    .unwrap(),
            )
        })
        .collect();
    // Connected and working first (the first call also loads the script).
    assert_recovers(&limiters).await;
    limiters
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_gets_the_failure_policy_and_a_restarted_one_decides_again() {
    if redis_url().is_none() {
        return;
    }
    let Some(mut server) = PrivateServer::start() else {
        return;
    };
    let limiters = fault_limiters(&server).await;
    server.stop();
    assert_fallbacks(&limiters, 20).await;
    for limiter in &limiters {
        assert!(limiter.stats().fallbacks() >= 20, "{:?}", limiter.stats());
    }
    assert!(server.restart());
    // The same limiters, not rebuilt: the script is loaded again on the new server.
    assert_recovers(&limiters).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_times_out_within_the_timeout_and_recovers_when_thawed() {
    if redis_url().is_none() {
        return;
    }
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let limiters = fault_limiters(&server).await;
    server.freeze();
    assert_fallbacks(&limiters, 20).await;
    for limiter in &limiters {
        assert!(limiter.stats().timeouts >= 1, "{:?}", limiter.stats());
    }
    server.thaw();
    assert_recovers(&limiters).await;
}

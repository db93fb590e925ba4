//! Batches: `check_many` judges every request as `check_with` would, in order, in one
//! pipeline: against an in-process `KeyedLimiter` given the same requests one by one; on a
//! fresh server (the script not loaded yet); with requests that can never pass; and with the
//! server gone. Runs on a private server (see `support`): fresh, so its first batch meets
//! `NOSCRIPT`.

use crate::support::{redis_url, unique_prefix, PrivateServer};
use nanolimit::redis::{FailurePolicy, RedisLimiter};
use nanolimit::{FixedWindow, Gcra, KeyedLimiter, ManualClock, Request, RequestError, Timestamp};
use rand::{Rng, SeedableRng};
use std::time::Duration;

#[tokio::test(flavor = "current_thread")]
async fn batches_decide_as_checks_one_by_one() {
    if redis_url().is_none() {
        return;
    }
    let Some(mut server) = PrivateServer::start() else {
        return;
    };
    let quota = Gcra::per_minute(6).unwrap().with_burst(4).unwrap();
    let limiter = RedisLimiter::builder(quota)
        .prefix(&unique_prefix("batch"))
        .timeout(Duration::from_secs(5))
        .failure_policy(FailurePolicy::Closed)
        .build(&server.url())
        .unwrap();
    let local = KeyedLimiter::<str, _, _>::builder(quota)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let keys = ["a", "b", "c", "d", "e"];
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut now_ns = 1u64 << 50;
    for batch in 0..30 {
        let requests: Vec<(&str, Request<Gcra>)> = (0..rng.gen_range(1..20))
            .map(|_| {
                now_ns += rng.gen_range(0..3_000_000_000);
                let at = Timestamp::from_ns(now_ns).unwrap();
                (
                    keys[rng.gen_range(0..keys.len())],
                    Request::cost(rng.gen_range(0..=5)).at(at),
                )
            })
            .collect();
        let decisions = limiter.check_many(&requests).await;
        assert_eq!(decisions.len(), requests.len());
        for ((key, request), decision) in requests.iter().zip(decisions) {
            let expected = local.check_with(key, *request);
            match (decision, expected) {
                (Ok(remote), Ok(in_process)) => {
                    assert!(
                        !remote.is_fallback(),
                        "batch {batch}: {:?}",
                        limiter.stats()
                    );
                    assert_eq!(
                        remote.is_allowed(),
                        in_process.is_allowed(),
                        "batch {batch}"
                    );
                    assert_eq!(
                        remote.state_word(),
                        in_process.state_word(),
                        "batch {batch}"
                    );
                    assert_eq!(remote.remaining(), in_process.remaining());
                    assert_eq!(remote.retry_after(), in_process.retry_after());
                }
                // A cost of 5 is above the burst of 4: the same error, with no round trip.
                (Err(remote), Err(in_process)) => {
                    assert_eq!(remote, in_process);
                    assert_eq!(remote, RequestError::CostAboveLimit { cost: 5, limit: 4 });
                }
                (remote, in_process) => panic!("batch {batch}: {remote:?} vs {in_process:?}"),
            }
        }
    }
    assert_eq!(limiter.stats().fallbacks(), 0);

    // The server gone: every request of a batch gets the policy, within the timeout.
    server.stop();
    let fast = RedisLimiter::builder(FixedWindow::per_second(3).unwrap())
        .timeout(Duration::from_millis(50))
        .failure_policy(FailurePolicy::Closed)
        .build(&server.url())
        .unwrap();
    let started = std::time::Instant::now();
    let decisions = fast
        .check_many(&[
            ("x", Request::new()),
            ("y", Request::cost(4)),
            ("z", Request::new()),
        ])
        .await;
    assert!(started.elapsed() < Duration::from_millis(300));
    assert!(decisions[0].as_ref().unwrap().is_fallback());
    assert!(decisions[0].as_ref().unwrap().is_denied());
    assert!(decisions[1].is_err());
    assert!(decisions[2].as_ref().unwrap().is_fallback());
    assert_eq!(fast.stats().fallbacks(), 2);
}

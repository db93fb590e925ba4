//! The leased Redis limiter: checks served from leases, the fleet's over-admission bound with
//! several limiters standing in for processes on one Redis, exactness with leasing off,
//! background refills, give-backs, and failures. Needs a server (see `support`); the
//! fault test starts its own.

use crate::support::{redis_url, unique_prefix, PrivateServer};
use nanolimit::redis::{FailurePolicy, LeasedRedisLimiter, RedisLimiter, RedisLimiterBuilder};
use nanolimit::BuildError;
use nanolimit::{Gcra, KeyedLimiter, ManualClock, Request, RequestError, Timestamp};
use rand::{Rng, SeedableRng};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// The shared limit's settings: `quota` per key under `prefix`, a timeout no test reaches.
fn shared(quota: Gcra, prefix: &str) -> RedisLimiterBuilder<Gcra> {
    RedisLimiter::builder(quota)
        .prefix(prefix)
        .timeout(Duration::from_secs(5))
}

/// A limiter on the server at `url` leasing `min..=max` units living 50 ms, refilled only by
/// the checks that need it (deterministic), on explicit times.
fn leased(
    shared: RedisLimiterBuilder<Gcra>,
    url: &str,
    min: u64,
    max: u64,
) -> LeasedRedisLimiter<ManualClock> {
    leased_living(shared, url, min, max, Duration::from_millis(50))
}

/// [`leased`] with leases living `lifetime`.
fn leased_living(
    shared: RedisLimiterBuilder<Gcra>,
    url: &str,
    min: u64,
    max: u64,
    lifetime: Duration,
) -> LeasedRedisLimiter<ManualClock> {
    shared
        .lease_units(min, max)
        .lease_lifetime(lifetime)
        .background_refills(false)
        .lease_clock(ManualClock::new())
        .build_leased(url)
        .unwrap()
}

fn at(ns: u64) -> Request<Gcra> {
    Request::new().at(Timestamp::from_ns(ns).unwrap())
}

#[tokio::test(flavor = "current_thread")]
async fn checks_are_served_from_leases_with_one_round_trip_per_lease() {
    let Some(url) = redis_url() else { return };
    let quota = Gcra::per_second(1_000).unwrap().with_burst(100).unwrap();
    let prefix = unique_prefix("leased-local");
    let limiter = leased(shared(quota, &prefix), &url, 10, 10);
    let now = 10_000 * MS;
    for served in 1..=25u64 {
        let decision = limiter.check_with("k", at(now)).await.unwrap();
        assert!(decision.is_allowed() && !decision.is_fallback());
        // Units held here plus what the budget could still lease.
        let leased_so_far = served.div_ceil(10) * 10;
        assert_eq!(
            decision.remaining(),
            100 - served,
            "check {served} ({leased_so_far} leased)"
        );
    }
    let stats = limiter.stats();
    assert_eq!(
        (stats.leases, stats.leased_units, stats.direct_checks),
        (3, 30, 0)
    );
    // Redis counts the leases, not the checks: 30 units are gone from the budget.
    let peek = limiter
        .shared()
        .peek_with("k", Request::cost(1).at(Timestamp::from_ns(now).unwrap()))
        .await
        .unwrap();
    assert_eq!(peek.remaining(), 70);
}

/// Checks on `limiters` (processes) at a schedule of explicit times, from a seeded random
/// choice of process and step (up to 200 ms): the times of the admissions.
async fn run_fleet(
    limiters: &[LeasedRedisLimiter<ManualClock>],
    checks: usize,
    seed: u64,
) -> Vec<u64> {
    let mut random = rand::rngs::StdRng::seed_from_u64(seed);
    let mut now = 1_000 * MS;
    let mut admitted = Vec::new();
    for _ in 0..checks {
        now += random.gen_range(0..=200 * MS);
        let process = &limiters[random.gen_range(0..limiters.len())];
        let decision = process.check_with("tenant", at(now)).await.unwrap();
        assert!(!decision.is_fallback());
        if decision.is_allowed() {
            admitted.push(now);
        }
    }
    admitted
}

/// The most admissions in any interval beyond what GCRA allows over it (burst + length / T).
fn worst_excess(admitted: &[u64], burst: u64, emission_interval_ns: u64) -> i64 {
    let mut worst = i64::MIN;
    for first in 0..admitted.len() {
        for last in first..admitted.len() {
            let count = (last - first + 1) as i64;
            let allowance = burst + (admitted[last] - admitted[first]) / emission_interval_ns;
            worst = worst.max(count - allowance as i64);
        }
    }
    worst
}

#[tokio::test(flavor = "current_thread")]
async fn the_fleet_admits_at_most_the_quota_plus_processes_times_the_largest_lease() {
    let Some(url) = redis_url() else { return };
    // 2 per second (one per 500 ms), bursts of 20; three processes leasing 1 to 8 units that
    // live 5 s. A slow quota on explicit times: Redis expires an idle key by its own clock, and
    // at this rate a live key's expiry is seconds away, so a test process stalled on a loaded
    // machine cannot see its key expire under a live state (at 200 per second and 5 ms steps,
    // a sleep of 150 ms broke the bound).
    let quota = Gcra::per_second(2).unwrap().with_burst(20).unwrap();
    for seed in 0..4 {
        let prefix = unique_prefix("leased-bound");
        let fleet: Vec<_> = (0..3)
            .map(|_| leased_living(shared(quota, &prefix), &url, 1, 8, Duration::from_secs(5)))
            .collect();
        // About 300 s of checks (explicit times) at about 10 per second: five times the rate.
        let admitted = run_fleet(&fleet, 3_000, seed).await;
        let bound = fleet[0].over_admission_bound(3);
        assert_eq!(bound, 24);
        let excess = worst_excess(&admitted, 20, 500 * MS);
        assert!(
            excess <= bound as i64,
            "seed {seed}: {excess} over the quota in some interval"
        );
        // Leasing moves admissions, it does not lose many: the run's admissions are close to
        // the quota's over the run.
        let span = admitted.last().unwrap() - admitted.first().unwrap();
        let allowance = 20 + span / (500 * MS);
        assert!(
            admitted.len() as u64 >= allowance * 9 / 10,
            "seed {seed}: {} admitted of {allowance}",
            admitted.len()
        );
        let leases: u64 = fleet.iter().map(|process| process.stats().leases).sum();
        assert!(
            leases < admitted.len() as u64,
            "seed {seed}: {leases} leases"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn with_leasing_off_the_fleet_decides_exactly_as_one_limiter() {
    let Some(url) = redis_url() else { return };
    // Two per second, bursts of 20, offered five per second. Redis expires an idle key by its
    // own clock once the state is as good as fresh by the request's: at this rate a live key
    // expires seconds after its last check, so a test process stalled on a loaded machine
    // (the run's 1,500 checks take well under a second) cannot see its key expire under a
    // live state (at 200 per second, a sleep of 150 ms at the 25th check made the fleet admit
    // where the reference denied; at this rate, sleeps of a second pass).
    let quota = Gcra::per_second(2).unwrap().with_burst(20).unwrap();
    let prefix = unique_prefix("leased-off");
    let fleet: Vec<_> = (0..3)
        .map(|_| leased(shared(quota, &prefix), &url, 1, 1))
        .collect();
    let reference = KeyedLimiter::<str, _>::builder(quota)
        .capacity(16)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let mut random = rand::rngs::StdRng::seed_from_u64(7);
    let mut now = 1_000 * MS;
    let mut admitted = Vec::new();
    for _ in 0..1_500 {
        now += random.gen_range(0..=400 * MS);
        let process = &fleet[random.gen_range(0..fleet.len())];
        let decision = process.check_with("tenant", at(now)).await.unwrap();
        let expected = reference.check_with("tenant", at(now)).unwrap();
        assert_eq!(decision.is_allowed(), expected.is_allowed(), "at {now}");
        assert_eq!(decision.retry_after(), expected.retry_after(), "at {now}");
        if decision.is_allowed() {
            admitted.push(now);
        }
    }
    assert!(worst_excess(&admitted, 20, 500 * MS) <= 0);
    assert_eq!(fleet[0].over_admission_bound(3), 0);
    let direct: u64 = fleet
        .iter()
        .map(|process| process.stats().direct_checks)
        .sum();
    assert_eq!(direct, 1_500);
}

#[tokio::test(flavor = "current_thread")]
async fn a_short_budget_leases_just_the_cost_then_denies_with_redis_retry_after() {
    let Some(url) = redis_url() else { return };
    // 10 per second, bursts of 10.
    let quota = Gcra::per_second(10).unwrap();
    let prefix = unique_prefix("leased-short");
    let first = leased(shared(quota, &prefix), &url, 8, 8);
    let second = leased(shared(quota, &prefix), &url, 8, 8);
    let now = 1_000 * MS;
    assert!(first.check_with("k", at(now)).await.unwrap().is_allowed()); // leases 8
                                                                         // 2 left: the second process cannot lease 8, so it takes just its request's unit, twice.
    for _ in 0..2 {
        assert!(second.check_with("k", at(now)).await.unwrap().is_allowed());
    }
    let denied = second.check_with("k", at(now)).await.unwrap();
    assert!(denied.is_denied() && !denied.is_fallback());
    assert_eq!(denied.retry_after(), Duration::from_millis(100));
    // The first still serves its 7 held units.
    for _ in 0..7 {
        assert!(first.check_with("k", at(now)).await.unwrap().is_allowed());
    }
    assert!(first.check_with("k", at(now)).await.unwrap().is_denied());
    assert_eq!((second.stats().leases, second.stats().leased_units), (2, 2));
}

/// What the shared budget could still lease at `at_ns`.
async fn remaining(limiter: &LeasedRedisLimiter<ManualClock>, at_ns: u64) -> u64 {
    limiter
        .shared()
        .peek_with("k", Request::cost(1).at(Timestamp::from_ns(at_ns).unwrap()))
        .await
        .unwrap()
        .remaining()
}

#[tokio::test(flavor = "current_thread")]
async fn lapsed_and_unused_units_go_back_when_nobody_took_since() {
    let Some(url) = redis_url() else { return };
    let quota = Gcra::per_second(100).unwrap().with_burst(50).unwrap();
    let prefix = unique_prefix("leased-give-back");
    let limiter = leased(shared(quota, &prefix), &url, 10, 10);
    let now = 1_000 * MS;
    assert!(limiter.check_with("k", at(now)).await.unwrap().is_allowed()); // 9 held
                                                                           // After the 50 ms lifetime the 9 lapse; the next refill gives them back first.
    let later = now + 60 * MS;
    assert!(limiter
        .check_with("k", at(later))
        .await
        .unwrap()
        .is_allowed());
    assert_eq!(limiter.stats().units_given_back, 9);
    // The give-back restored the budget to full (50) before the new lease of 10 was taken.
    assert_eq!(remaining(&limiter, later).await, 40);

    // At shutdown the 9 held now go back too.
    assert_eq!(limiter.give_back_unused().await, 9);
    assert_eq!(remaining(&limiter, later).await, 49);
    // Taken by another process since: nothing goes back (the units lapse).
    let other = leased(shared(quota, &prefix), &url, 10, 10);
    assert!(limiter
        .check_with("k", at(later))
        .await
        .unwrap()
        .is_allowed());
    assert!(other.check_with("k", at(later)).await.unwrap().is_allowed());
    assert_eq!(limiter.give_back_unused().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_refills_top_the_lease_up_before_it_runs_out() {
    let Some(url) = redis_url() else { return };
    let quota = Gcra::per_second(100_000)
        .unwrap()
        .with_burst(1_000)
        .unwrap();
    let prefix = unique_prefix("leased-background");
    let limiter = shared(quota, &prefix)
        .lease_units(8, 8)
        .lease_lifetime(Duration::from_secs(60))
        .build_leased(&url)
        .unwrap();
    let now = 1_000 * MS;
    // The first check takes a lease itself; the fifth leaves 3 of 8, below half: a refill
    // starts on a task.
    for _ in 0..5 {
        assert!(limiter.check_with("k", at(now)).await.unwrap().is_allowed());
    }
    // Waiting for the task's round trip to Redis (bounded), not for time to pass.
    for _ in 0..5_000 {
        if limiter.stats().leases == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let stats = limiter.stats();
    assert_eq!((stats.leases, stats.leased_units), (2, 13));
    // 3 + 5 held: eight more checks, none waiting for Redis.
    for _ in 0..3 {
        assert!(limiter.check_with("k", at(now)).await.unwrap().is_allowed());
    }
    assert_eq!(limiter.stats().direct_checks, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn bad_requests_and_configurations_are_errors() {
    let Some(url) = redis_url() else { return };
    let quota = Gcra::per_second(10).unwrap();
    let prefix = unique_prefix("leased-bad");
    let limiter = leased(shared(quota, &prefix), &url, 1, 5);
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
    let tier = KeyedLimiter::<str, _>::new(quota, 16)
        .unwrap()
        .tier(Gcra::per_second(20).unwrap())
        .unwrap();
    assert_eq!(
        limiter
            .check_with("k", Request::new().tier(tier))
            .await
            .unwrap_err(),
        RequestError::ForeignTier
    );
    let builder = || shared(quota, &prefix);
    assert_eq!(
        builder().lease_units(0, 5).build_leased(&url).unwrap_err(),
        BuildError::LeaseUnits {
            min_units: 0,
            max_units: 5
        }
    );
    assert_eq!(
        builder().lease_units(6, 5).build_leased(&url).unwrap_err(),
        BuildError::LeaseUnits {
            min_units: 6,
            max_units: 5
        }
    );
    assert_eq!(
        builder().lease_units(1, 11).build_leased(&url).unwrap_err(),
        BuildError::LeaseAboveBurst {
            max_units: 11,
            burst: 10
        }
    );
    assert!(matches!(
        builder()
            .lease_lifetime(Duration::ZERO)
            .build_leased(&url)
            .unwrap_err(),
        BuildError::LeaseLifetime { .. }
    ));
    assert!(matches!(
        builder().lease_capacity(0).build_leased(&url).unwrap_err(),
        BuildError::ZeroCapacity
    ));
    // A cost above the largest lease is one script call of its own.
    assert!(limiter
        .check_with("big", Request::cost(8))
        .await
        .unwrap()
        .is_allowed());
    assert_eq!(limiter.stats().direct_checks, 1);
}

#[test]
fn background_refills_need_a_runtime() {
    let Some(url) = redis_url() else { return };
    let builder = || RedisLimiter::builder(Gcra::per_second(10).unwrap());
    // Outside any runtime, background refills have nowhere to run.
    assert_eq!(
        builder().build_leased(&url).unwrap_err(),
        BuildError::NoRuntime
    );
    // Within one, the same settings build.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { assert!(builder().build_leased(&url).is_ok()) });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_gets_the_failure_policy_while_held_units_still_serve() {
    if redis_url().is_none() {
        return;
    }
    let Some(mut server) = PrivateServer::start() else {
        return;
    };
    let quota = Gcra::per_second(1_000).unwrap();
    let build = |policy| {
        let shared = RedisLimiter::builder(quota)
            .prefix(&unique_prefix("leased-faults"))
            .timeout(Duration::from_millis(50))
            .failure_policy(policy);
        leased(shared, &server.url(), 10, 10)
    };
    let open = build(FailurePolicy::Open);
    let closed = build(FailurePolicy::Closed);
    let now = 1_000 * MS;
    for limiter in [&open, &closed] {
        assert!(limiter
            .check_with("held", at(now))
            .await
            .unwrap()
            .is_allowed());
    }
    server.stop();
    for limiter in [&open, &closed] {
        // The 9 held units serve without Redis.
        for _ in 0..9 {
            let decision = limiter.check_with("held", at(now)).await.unwrap();
            assert!(decision.is_allowed() && !decision.is_fallback());
        }
    }
    // A key with nothing held needs Redis: the policy decides, within the timeout.
    let started = std::time::Instant::now();
    let opened = open.check_with("new", at(now)).await.unwrap();
    let refused = closed.check_with("new", at(now)).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(opened.is_allowed() && opened.is_fallback());
    assert!(refused.is_denied() && refused.is_fallback());
    assert!(open.stats().fallbacks() >= 1);
    // Back: leases again, without rebuilding.
    assert!(server.restart());
    let mut recovered = false;
    for _ in 0..200 {
        let decision = closed.check_with("new", at(now)).await.unwrap();
        if !decision.is_fallback() {
            assert!(decision.is_allowed());
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(recovered, "the limiter did not reconnect");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_dropped_while_it_refills_leaves_its_key_free_to_refill() {
    if redis_url().is_none() {
        return;
    }
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let shared = RedisLimiter::builder(Gcra::per_second(1_000).unwrap())
        .prefix(&unique_prefix("leased-cancel"))
        .timeout(Duration::from_secs(10));
    let limiter = leased(shared, &server.url(), 10, 10);
    let now = 1_000 * MS;
    // Connected, and the script loaded, on another key.
    assert!(limiter
        .check_with("warm", at(now))
        .await
        .unwrap()
        .is_allowed());
    // The server stops answering: a request's refill waits, and its caller gives up on it
    // (a client that hung up, a request timeout).
    server.freeze();
    let gave_up =
        tokio::time::timeout(Duration::from_millis(50), limiter.check_with("k", at(now))).await;
    assert!(
        gave_up.is_err(),
        "the refill cannot finish on a frozen server"
    );
    server.thaw();
    // The key is not left claimed: the next check leases for it, not one script call of its own.
    let direct_before = limiter.stats().direct_checks;
    let decision = limiter.check_with("k", at(now)).await.unwrap();
    assert!(decision.is_allowed() && !decision.is_fallback());
    assert_eq!(limiter.stats().direct_checks, direct_before);

    // A shutdown's give-back cut short the same way leaves no key claimed either.
    server.freeze();
    let gave_up = tokio::time::timeout(Duration::from_millis(50), limiter.give_back_unused()).await;
    assert!(
        gave_up.is_err(),
        "the give-back cannot finish on a frozen server"
    );
    server.thaw();
    // Whichever key it had claimed when it was dropped: more checks than a lease holds, on
    // both keys, and none goes to Redis on its own (a key left claimed would).
    let leases_before = limiter.stats().leases;
    for key in ["warm", "k"] {
        for _ in 0..12 {
            assert!(limiter.check_with(key, at(now)).await.unwrap().is_allowed());
        }
    }
    assert_eq!(limiter.stats().direct_checks, direct_before);
    assert!(limiter.stats().leases >= leases_before + 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_check_of_cost_zero_reads_the_shared_budget_and_leases_nothing() {
    let Some(url) = redis_url() else { return };
    let quota = Gcra::per_second(100).unwrap().with_burst(50).unwrap();
    let limiter = leased(shared(quota, &unique_prefix("leased-zero")), &url, 10, 10);
    let now = 1_000 * MS;
    let zero = limiter.check_with("k", Request::cost(0).at(Timestamp::from_ns(now).unwrap()));
    let zero = zero.await.unwrap();
    assert!(zero.is_allowed());
    assert_eq!(zero.remaining(), 50);
    assert!(limiter.check_with("k", at(now)).await.unwrap().is_allowed()); // leases 10
    let zero = limiter.check_with("k", Request::cost(0).at(Timestamp::from_ns(now).unwrap()));
    let zero = zero.await.unwrap();
    // What the shared budget holds: the 10 leased are gone from it.
    assert_eq!(zero.remaining(), 40);
    assert_eq!(limiter.stats().leases, 1);
}

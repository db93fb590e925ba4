//! Two "servers" of a fleet sharing one per-tenant limit through Redis, on the server's clock;
//! then three sharing a larger one from leases, checked locally.
//!
//! Needs a Redis: `NANOLIMIT_REDIS_URL=redis://127.0.0.1:6379 cargo run --features redis
//! --example redis_fleet` (`bash .ci/test-all` starts one and runs this example). Without the
//! variable it says so and exits (a failure under `CI=true`).

use nanolimit::redis::{FailurePolicy, RedisLimiter};
use nanolimit::{Gcra, Request};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Ok(url) = std::env::var("NANOLIMIT_REDIS_URL") else {
        eprintln!("set NANOLIMIT_REDIS_URL (e.g. redis://127.0.0.1:6379) to run this example");
        if std::env::var("CI").as_deref() == Ok("true") {
            std::process::exit(1);
        }
        return Ok(());
    };
    // 10 requests per minute per tenant, for the whole fleet. A unique prefix per run keeps
    // this run's keys apart from earlier ones.
    let quota = Gcra::per_minute(10)?;
    let run = std::process::id();
    let server = |name: &str| {
        RedisLimiter::builder(quota)
            .prefix(&format!("example:{run}"))
            .timeout(Duration::from_millis(50))
            .failure_policy(FailurePolicy::Open)
            .build(&url)
            .map(|limiter| (name.to_owned(), limiter))
    };
    let servers = [server("web-1")?, server("web-2")?];

    // Requests of tenant-7 arrive at either server, alternating: the fleet admits 10, not 20.
    let mut admitted = 0;
    for request in 0..20 {
        let (name, limiter) = &servers[request % 2];
        let decision = limiter.check("tenant-7").await;
        assert!(!decision.is_fallback(), "Redis did not answer in time");
        if decision.is_allowed() {
            admitted += 1;
        } else if request == 10 {
            let headers = decision.headers();
            println!(
                "{name}: 429, remaining {}, Retry-After {:?} s",
                headers.remaining, headers.retry_after_seconds
            );
        }
    }
    println!("admitted {admitted} of 20 across two servers");
    assert_eq!(admitted, 10);

    // A batch upload costs 4 of another tenant's units at once.
    let (_, limiter) = &servers[0];
    let upload = limiter.check_with("tenant-8", Request::cost(4)).await?;
    println!(
        "tenant-8 upload: allowed {}, {} left",
        upload.is_allowed(),
        upload.remaining()
    );

    // Leased checks: 100 per minute per tenant, three servers each leasing up to 10 units at a
    // time. 3,000 checks in a burst: the fleet admits the quota's 100 (and what refills
    // meanwhile) plus at most 3 × 10, with one round trip per lease instead of one per check.
    let quota = Gcra::per_minute(100)?;
    let leased = || {
        RedisLimiter::builder(quota)
            .prefix(&format!("example:{run}:leased"))
            .timeout(Duration::from_millis(50))
            .lease_units(10, 10)
            .background_refills(false)
            .build_leased(&url)
    };
    let fleet = [leased()?, leased()?, leased()?];
    let started = std::time::Instant::now();
    let mut admitted = 0;
    for check in 0..3_000 {
        if fleet[check % 3].check("tenant-9").await.is_allowed() {
            admitted += 1;
        }
    }
    let refilled = (started.elapsed().as_secs_f64() * 100.0 / 60.0).ceil() as u64;
    let leases: u64 = fleet.iter().map(|server| server.stats().leases).sum();
    println!("leased: admitted {admitted} of 3,000, {leases} leases taken");
    assert!(admitted >= 100 - fleet[0].over_admission_bound(3));
    assert!(admitted <= 100 + refilled + fleet[0].over_admission_bound(3));
    for server in &fleet {
        server.give_back_unused().await;
    }
    Ok(())
}

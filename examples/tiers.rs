//! One keyed limiter, several tiers: each API key gets the sliding-window limit of its plan
//! (free: 5 requests per minute, pro: 50), on one table, with the numbers a `429` response
//! carries.
//!
//! ```text
//! cargo run --example tiers
//! ```
//!
//! A tier is made once, from the limiter that uses it (`limiter.tier(quota)`), and passed with
//! each request (`Request::new().tier(tier)`). A key that changes plan keeps its counts.

use nanolimit::{KeyedLimiter, Request, SlidingWindow};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Plan {
    Free,
    Pro,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The table's own quota is the free plan's; keys are API keys (any `Hash` type; `str` here).
    let limiter = KeyedLimiter::<str, _>::new(SlidingWindow::per_minute(5)?, 10_000)?;
    let tiers: HashMap<Plan, SlidingWindow> = HashMap::from([
        (Plan::Free, limiter.tier(SlidingWindow::per_minute(5)?)?),
        (Plan::Pro, limiter.tier(SlidingWindow::per_minute(50)?)?),
    ]);
    let accounts = [("key-free-alice", Plan::Free), ("key-pro-bob", Plan::Pro)];

    for (api_key, plan) in accounts {
        let tier = tiers[&plan];
        let mut served = 0;
        let mut first_rejection = None;
        for _ in 0..60 {
            let decision = limiter.check_with(api_key, Request::new().tier(tier))?;
            if decision.is_allowed() {
                served += 1;
            } else if first_rejection.is_none() {
                first_rejection = Some(decision.headers());
            }
        }
        println!("{api_key} ({plan:?}): {served} of 60 served");
        if let Some(headers) = first_rejection {
            println!(
                "  429: RateLimit-Limit {}, RateLimit-Remaining {}, RateLimit-Reset {} s, \
                 Retry-After {} s",
                headers.limit,
                headers.remaining,
                headers.reset_seconds,
                headers.retry_after_seconds.unwrap_or(0)
            );
        }
    }

    // Alice upgrades: her key keeps its count of 5 this minute, and the pro limit applies now.
    let upgraded = limiter.check_with("key-free-alice", Request::new().tier(tiers[&Plan::Pro]))?;
    println!(
        "key-free-alice after upgrading: allowed {}, remaining {}",
        upgraded.is_allowed(),
        upgraded.remaining()
    );
    assert!(upgraded.is_allowed());
    assert_eq!(upgraded.remaining(), 44);
    Ok(())
}

//! Throttling async workers to 100 requests per second, two ways, in real time: a hand-written
//! retry loop (`check`, then sleep for `retry_after`) against `until_ready` (a reservation,
//! then one sleep until its start).
//!
//! ```text
//! cargo run --release --features tokio --example throttled_workers
//! ```
//!
//! Each way runs with 1 and with 16 workers on one limiter (burst 1) for one second, and
//! prints the requests sent and the denied re-checks per request. The retry loop loses the
//! time every timer wake-up is late by, and its workers race for each slot; the waits are
//! booked in order and start on time.

use nanolimit::{Gcra, Limiter};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUN_FOR: Duration = Duration::from_secs(1);

#[derive(Clone, Copy)]
enum Way {
    RetryLoop,
    UntilReady,
}

async fn run(way: Way, workers: usize) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let limiter = Arc::new(Limiter::new(Gcra::per_second(100)?.with_burst(1)?));
    let (sent, rechecks) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let end = Instant::now() + RUN_FOR;
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let (limiter, sent, rechecks) = (limiter.clone(), sent.clone(), rechecks.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                match way {
                    Way::RetryLoop => {
                        let decision = limiter.check();
                        if decision.is_denied() {
                            rechecks.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(decision.retry_after()).await;
                            continue;
                        }
                    }
                    Way::UntilReady => {
                        let start = limiter.until_ready().await.expect("unbounded waits pass");
                        if limiter.clock().timestamp(end) <= start {
                            break;
                        }
                    }
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    Ok((
        sent.load(Ordering::Relaxed),
        rechecks.load(Ordering::Relaxed),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| way | workers | sent in 1 s (target 100) | denied re-checks per request |");
    println!("|---|---|---|---|");
    for workers in [1, 16] {
        for (way, name) in [
            (Way::RetryLoop, "check + sleep(retry_after)"),
            (Way::UntilReady, "until_ready"),
        ] {
            let (sent, rechecks) = run(way, workers).await?;
            let per_request = rechecks as f64 / sent.max(1) as f64;
            println!("| {name} | {workers} | {sent} | {per_request:.1} |");
        }
    }
    Ok(())
}

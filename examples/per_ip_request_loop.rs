//! A per-IP limit in front of a request loop: four worker threads share one keyed limiter (10
//! requests per second per client address, bursts of 5) and answer each request `200` or `429`
//! with the headers a client needs.
//!
//! ```text
//! cargo run --example per_ip_request_loop
//! ```
//!
//! The requests are made up here (an abusive client and a few polite ones) so the example runs
//! on its own; in a server they come from the accept loop, keyed by the peer address.

use nanolimit::{Gcra, KeyedLimiter};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Instant;

/// One incoming request: who sent it.
struct IncomingRequest {
    peer: IpAddr,
}

/// What the server answered.
#[derive(Debug)]
enum Response {
    Ok,
    TooManyRequests { retry_after_seconds: u64 },
}

fn handle(limiter: &KeyedLimiter<IpAddr, Gcra>, request: &IncomingRequest) -> Response {
    let decision = limiter.check(&request.peer);
    if decision.is_allowed() {
        return Response::Ok;
    }
    let headers = decision.headers();
    Response::TooManyRequests {
        // Whole seconds, rounded up: never "retry now", even for a key the full table refused.
        retry_after_seconds: headers
            .retry_after_seconds
            .expect("a denial carries Retry-After"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One table for up to 100,000 client addresses, allocated once; no sweeper.
    let limiter = Arc::new(KeyedLimiter::new(
        Gcra::per_second(10)?.with_burst(5)?,
        100_000,
    )?);

    let started = Instant::now();
    let (sender, receiver) = mpsc::channel::<IncomingRequest>();
    let receiver = Arc::new(Mutex::new(receiver));
    let (answers_sender, answers) = mpsc::channel::<(IpAddr, Response)>();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            let receiver = Arc::clone(&receiver);
            let answers_sender = answers_sender.clone();
            thread::spawn(move || loop {
                let next = receiver.lock().expect("queue").recv();
                let Ok(request) = next else { return };
                let response = handle(&limiter, &request);
                answers_sender
                    .send((request.peer, response))
                    .expect("collector");
            })
        })
        .collect();
    drop(answers_sender);

    let abusive = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 66));
    let polite: Vec<IpAddr> = (1..=3)
        .map(|host| IpAddr::V4(Ipv4Addr::new(198, 51, 100, host)))
        .collect();
    for round in 0..50 {
        sender.send(IncomingRequest { peer: abusive })?;
        if round % 10 == 0 {
            for &peer in &polite {
                sender.send(IncomingRequest { peer })?;
            }
        }
    }
    drop(sender);
    for worker in workers {
        worker.join().expect("worker");
    }

    let mut tally: BTreeMap<IpAddr, (u32, u32, Option<u64>)> = BTreeMap::new();
    for (peer, response) in answers {
        let entry = tally.entry(peer).or_default();
        match response {
            Response::Ok => entry.0 += 1,
            Response::TooManyRequests {
                retry_after_seconds,
            } => {
                entry.1 += 1;
                entry.2 = Some(retry_after_seconds);
            }
        }
    }
    println!("client           served  rejected (429)  Retry-After");
    for (peer, (served, rejected, retry_after)) in &tally {
        let retry_after = retry_after.map_or("-".to_string(), |seconds| format!("{seconds} s"));
        println!("{peer:<16} {served:>6}  {rejected:>14}  {retry_after:>11}");
    }
    // The burst of 5, plus one per 100 ms the loop ran (a slow machine may take a while).
    let refilled = (started.elapsed().as_millis() / 100) as u32;
    let (abusive_served, _, _) = tally[&abusive];
    assert!((5..=5 + refilled).contains(&abusive_served));
    for peer in &polite {
        assert_eq!(tally[peer].0, 5, "polite clients stay within their burst");
    }
    println!(
        "table: {} keys of capacity, {} bytes ({} per key), {} entries",
        limiter.capacity(),
        limiter.memory_bytes(),
        limiter.bytes_per_key(),
        limiter.entries()
    );
    Ok(())
}

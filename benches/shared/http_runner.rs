//! The runner shared by the http-layer callgrind binaries (`benches/callgrind_http_*.rs`): one
//! binary per case, so that each holds only its own service's code and the compiler's
//! inlining choices for one case (the `Extensions` lookup both layers make, for one) do not
//! depend on the others' (in one binary they did: tower_governor's count moved by 50
//! instructions per request with changes to nanolimit's layer). See `benches/callgrind.sh`.
//!
//! Each request is what the contention benchmark's http-layer worker does: the next client of
//! thread 0's walk through the 10,000-address pool, an empty `Request<axum::body::Body>`
//! carrying it as `ConnectInfo<SocketAddr>`, `ready()` + `call()` on the service, one poll of
//! the response future with a no-op waker, the response dropped. Every client is sent one
//! request before the loop, so the loop measures the pass path of clients already in the
//! limiter's table (the steady state of a timed run, where the first 10,000 requests are a
//! vanishing share). Each run verifies that every request was answered `200 OK` and that the
//! loop inserted no key into the limiter, and exits non-zero otherwise.

use crate::http_clients::http_client_order;
use crate::http_requests::{client_address, client_request, respond_now};
use axum::body::Body;
use http::{Request, Response, StatusCode};
use std::fmt::Debug;
use std::net::SocketAddr;
use std::process::ExitCode;
use tower::Service;

const DEFAULT_ITERATIONS: u64 = 200_000;

/// Requests in the smoke test (no arguments, as under `cargo test --benches`).
const SMOKE_ITERATIONS: u64 = 10_000;

/// One thread's requests, as the scenario's worker sends them.
struct Client<S> {
    service: S,
    /// The pool in thread 0's order.
    clients: Vec<SocketAddr>,
    /// The next client.
    position: usize,
}

impl<S> Client<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: Debug,
{
    fn new(service: S) -> Self {
        Client {
            service,
            clients: http_client_order(0)
                .into_iter()
                .map(client_address)
                .collect(),
            position: 0,
        }
    }

    /// One request from the next client; whether it was answered `200 OK`.
    #[inline]
    fn send(&mut self) -> bool {
        let client = self.clients[self.position];
        self.position += 1;
        if self.position == self.clients.len() {
            self.position = 0;
        }
        let response = respond_now(&mut self.service, client_request(client));
        response.status() == StatusCode::OK
    }

    /// One request from every client of the pool, outside the measurement: puts them in the
    /// limiter's table.
    fn warm_up(&mut self) -> Result<(), String> {
        for _ in 0..self.clients.len() {
            if !self.send() {
                return Err("a request was refused while warming up".into());
            }
        }
        Ok(())
    }
}

/// The only code callgrind counts (`--toggle-collect='*measured_loop*'`): `iterations`
/// requests, returning how many were answered `200 OK`.
#[inline(never)]
fn measured_loop<S>(client: &mut Client<S>, iterations: u64) -> u64
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: Debug,
{
    let mut passed = 0;
    for _ in 0..iterations {
        passed += u64::from(client.send());
    }
    passed
}

/// Warms `service` up and sends it `iterations` requests; an error unless all passed and
/// `inserts` (the limiter's count of keys inserted) did not change during the loop.
pub fn run<S>(service: S, iterations: u64, inserts: impl Fn() -> u64) -> Result<(), String>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: Debug,
{
    let mut client = Client::new(service);
    client.warm_up()?;
    let inserted = inserts();
    let passed = measured_loop(&mut client, iterations);
    if passed != iterations {
        return Err(format!(
            "{} of {iterations} requests refused",
            iterations - passed
        ));
    }
    if inserts() != inserted {
        return Err("the loop inserted keys".into());
    }
    Ok(())
}

/// The binary's `main` for `case`, whose requests `run_case` sends: arguments `CASE
/// [ITERATIONS]` (CASE must be this binary's, as `benches/callgrind.sh` passes it), or none
/// (the smoke test of `cargo test --benches`: 10,000 requests), or `--bench` alone (under
/// `cargo bench`: nothing).
pub fn main(case: &str, run_case: fn(u64) -> Result<(), String>) -> ExitCode {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|argument| argument != "--bench")
        .collect();
    let under_cargo_bench = std::env::args().any(|argument| argument == "--bench");
    let iterations = match arguments.as_slice() {
        [] if under_cargo_bench => {
            println!("callgrind_http_{case}: a runner for valgrind; see benches/callgrind.sh");
            return ExitCode::SUCCESS;
        }
        [] => SMOKE_ITERATIONS,
        [named, rest @ ..] if named == case && rest.len() <= 1 => match rest.first() {
            None => DEFAULT_ITERATIONS,
            Some(text) => match text.parse::<u64>() {
                Ok(iterations) => iterations,
                Err(error) => {
                    eprintln!("ITERATIONS must be a whole number: {error}");
                    return ExitCode::FAILURE;
                }
            },
        },
        _ => {
            eprintln!("usage: callgrind_http_{case} {case} [ITERATIONS]");
            return ExitCode::FAILURE;
        }
    };
    match run_case(iterations) {
        Ok(()) => {
            println!("{case}: {iterations} requests, all passed");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{case}: {error}");
            ExitCode::FAILURE
        }
    }
}

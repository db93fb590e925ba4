//! The http-layer scenario (features `http` and `axum`): one HTTP request per call through an
//! in-process `tower::Service`, no network, no runtime. Every thread clones the service, calls
//! `ready()` then `call()` and polls each future once with a no-op waker: the inner service
//! answers at once, so both complete on their first poll (asserted). Three services:
//!
//! - `nanolimit`: nanolimit's `RateLimitLayer::keyed` over a `KeyedLimiter<IpAddr, Gcra>` (the
//!   default `Hashed` keys, `WhenFull::Deny`, capacity 10,000), keyed by `PeerIp::new()` (no
//!   trusted proxies), `headers_on_allowed(false)` (the default): an allowed response gets no
//!   header; a rejection gets `RateLimit-Policy`, `RateLimit` and `Retry-After`.
//! - `tower_governor`: tower_governor 0.8's `GovernorLayer` with its default configuration
//!   (`PeerIpKeyExtractor`, `NoOpMiddleware`, all methods) and the same quota
//!   (`per_nanosecond` / `burst_size`): an allowed response gets no header (its
//!   `use_headers()` would add `x-ratelimit-limit` and `x-ratelimit-remaining`); a rejection
//!   gets `x-ratelimit-after` and `retry-after`. Its governor store is a `DashMap` on std's
//!   hasher, unbounded (no sweeper runs: it holds the 10,000 clients).
//! - `floor` (`no-layer`): the inner service called directly: building the request, the call
//!   and dropping the response, which the other rows pay as well.
//! - `floor` (`peer-ip-check`): the least a keyed layer must add to `no-layer`, with no limiter
//!   (`PeerIpCheckFloor`): the client's `ConnectInfo` read from the extensions, one
//!   `QuantaClock` reading, the IP's ahash, and one compare-and-swap storing the reading in the
//!   64-byte line the hash picks in an array as large as nanolimit's table (10,000 keys); a
//!   failed swap would answer `429`. No probe, identity, rate arithmetic, header or count. Its
//!   overhead over `no-layer` bounds what a layer reading the same clock can reach.
//!
//! The inner service is a `tower::service_fn` answering `200 OK` with an empty
//! `axum::body::Body` (both layers take axum's body: nanolimit builds its rejections
//! `From<String>`, tower_governor `From<GovernorError>`). Each request is an empty
//! `http::Request<axum::body::Body>` carrying its client's address as axum's
//! `ConnectInfo<SocketAddr>`, where both key extractors read it; the addresses are IPv4
//! (nanolimit keys IPv6 clients by /64, tower_governor by the whole address: IPv4 keeps the
//! keys identical), 10,000 of them from 198.18.0.0/15 (reserved for benchmarks, RFC 2544), and
//! each thread walks the pool in its own random order, pre-built before the measurement.

use crate::http_requests::{
    client_address, client_request, governor_config, nanolimit_layer, respond, respond_now,
    PeerIpCheckFloor,
};
use crate::keyed_subjects::unbounded_map_report;
use crate::keys::http_client_order;
use crate::measure::{measure, Measurement, Outcome, Timing, Worker, ALLOWED};
use crate::quotas::AlgorithmKind;
use crate::{lifetime_since, Context, Job, LimiterKind, MeasuredRun, Scenario};
use axum::body::Body;
use http::{Request, Response, StatusCode};
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tower::{service_fn, Layer, Service};
use tower_governor::GovernorLayer;

/// Loop body of http-layer: one request from the next client of this thread's walk through the
/// pool, counted as allowed when answered `200 OK`.
struct HttpWorker<S> {
    /// This thread's clone of the service.
    service: S,
    /// The pool in this thread's order.
    clients: Vec<SocketAddr>,
    /// The next client.
    position: usize,
}

impl<S> HttpWorker<S> {
    fn new(service: S, thread_index: usize) -> Self {
        HttpWorker {
            service,
            clients: http_client_order(thread_index)
                .into_iter()
                .map(client_address)
                .collect(),
            position: 0,
        }
    }
}

impl<S> Worker for HttpWorker<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: Debug,
{
    #[inline]
    fn operate(&mut self) -> Outcome {
        let client = self.clients[self.position];
        self.position += 1;
        if self.position == self.clients.len() {
            self.position = 0;
        }
        let response = respond_now(&mut self.service, client_request(client));
        Outcome::from(response.status() == StatusCode::OK) * ALLOWED
    }
}

/// Runs `threads` threads, each on its own clone of `service`.
fn measure_service<S>(service: &S, threads: usize, timing: Timing) -> Measurement
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Sync,
    S::Error: Debug,
{
    measure(threads, timing, |thread_index| {
        HttpWorker::new(service.clone(), thread_index)
    })
}

/// One http-layer measurement: `job.limiter` is `Nanolimit`, `TowerGovernor` or `Floor` (of
/// algorithm `NoLayer` or `PeerIpCheck`).
pub fn run(job: Job, context: &Context) -> MeasuredRun {
    let quota = Scenario::HttpLayer.quota(job.algorithm);
    let (threads, timing) = (job.threads, context.timing);
    let endpoint = service_fn(respond);
    match job.limiter {
        LimiterKind::Nanolimit => {
            let layer = nanolimit_layer(&quota, Scenario::HttpLayer.table_capacity(threads));
            let limiter = Arc::clone(layer.limiter());
            let service = layer.layer(endpoint);
            let built = Instant::now();
            let measurement = measure_service(&service, threads, timing);
            let stats = limiter.stats();
            let layer_stats = layer.stats();
            let state_report = format!(
                "{} B/key; inserts {}, reclaims {}, refused new keys {}; layer: allowed {}, rejected {}",
                limiter.bytes_per_key(),
                stats.inserts,
                stats.reclaims,
                stats.refused_new_keys,
                layer_stats.allowed,
                layer_stats.rejected,
            );
            MeasuredRun {
                lifetime: lifetime_since(built, &measurement),
                over_admission_bound: 0,
                state_report: Some(state_report),
                measurement,
            }
        }
        LimiterKind::TowerGovernor => {
            let config = governor_config(&quota);
            let limiter = Arc::clone(config.limiter());
            let service = GovernorLayer::<_, _, Body>::new(config).layer(endpoint);
            let built = Instant::now();
            let measurement = measure_service(&service, threads, timing);
            MeasuredRun {
                lifetime: lifetime_since(built, &measurement),
                over_admission_bound: 0,
                state_report: Some(unbounded_map_report(limiter.len())),
                measurement,
            }
        }
        LimiterKind::Floor if job.algorithm == AlgorithmKind::PeerIpCheck => {
            let capacity = Scenario::HttpLayer.table_capacity(threads);
            let service = PeerIpCheckFloor::new(endpoint, &quota, capacity);
            MeasuredRun {
                measurement: measure_service(&service, threads, timing),
                lifetime: std::time::Duration::ZERO,
                over_admission_bound: 0,
                state_report: None,
            }
        }
        LimiterKind::Floor => MeasuredRun {
            measurement: measure_service(&endpoint, threads, timing),
            lifetime: std::time::Duration::ZERO,
            over_admission_bound: 0,
            state_report: None,
        },
        other => unreachable!("http-layer has no {other:?} row"),
    }
}

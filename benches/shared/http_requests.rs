//! What the http-layer scenario does per request, shared by the contention benchmark
//! (`benches/contention/http_layer.rs`) and `benches/callgrind_http.rs` so that both price the
//! same work: the client addresses, the inner service, the request with its `ConnectInfo`, the
//! two layers as configured for the scenario, and `ready()` + `call()` + one poll.

use crate::http_clients::HTTP_CLIENTS;
use crate::quota_spec::QuotaSpec;
use axum::body::Body;
use axum::extract::ConnectInfo;
use governor::middleware::NoOpMiddleware;
use http::{Request, Response};
use nanolimit::http::{PeerIp, RateLimitLayer};
use nanolimit::{Gcra, KeyedLimiter};
use std::convert::Infallible;
use std::fmt::Debug;
use std::future::{ready, Future, Ready};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};
use tower::{Service, ServiceExt};
use tower_governor::governor::{GovernorConfig, GovernorConfigBuilder};
use tower_governor::key_extractor::PeerIpKeyExtractor;

/// The first client address: 198.18.0.0/15 is set aside for benchmarks (RFC 2544).
const FIRST_CLIENT: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 0);

/// Client `index`'s address and (ephemeral-looking) port.
pub fn client_address(index: u32) -> SocketAddr {
    assert!(index < HTTP_CLIENTS);
    let ip = Ipv4Addr::from(u32::from(FIRST_CLIENT) + index);
    SocketAddr::new(IpAddr::V4(ip), 40_000 + (index % 20_000) as u16)
}

/// The inner service's handler: `200 OK`, empty body, at once.
pub fn respond(_request: Request<Body>) -> Ready<Result<Response<Body>, Infallible>> {
    ready(Ok(Response::new(Body::empty())))
}

/// An empty request from `client`, which it carries as axum's `ConnectInfo<SocketAddr>`.
#[inline]
pub fn client_request(client: SocketAddr) -> Request<Body> {
    let mut request = Request::new(Body::empty());
    request.extensions_mut().insert(ConnectInfo(client));
    request
}

/// nanolimit's layer as the scenario configures it: keyed by `PeerIp::new()` over a
/// `KeyedLimiter<IpAddr, Gcra>` of `capacity` (default `Hashed` keys, `WhenFull::Deny`), no
/// header on allowed responses.
pub fn nanolimit_layer(
    quota: &QuotaSpec,
    capacity: usize,
) -> RateLimitLayer<KeyedLimiter<IpAddr, Gcra>, PeerIp, Gcra> {
    let limiter = KeyedLimiter::<IpAddr, Gcra>::new(quota.gcra(), capacity).expect("a valid table");
    RateLimitLayer::keyed(Arc::new(limiter), PeerIp::new()).headers_on_allowed(false)
}

/// tower_governor's configuration for `quota`: its defaults (`PeerIpKeyExtractor`,
/// `NoOpMiddleware`, all methods) with the same emission interval and burst.
pub fn governor_config(quota: &QuotaSpec) -> GovernorConfig<PeerIpKeyExtractor, NoOpMiddleware> {
    let interval_ns = u64::try_from(quota.emission_interval().as_nanos())
        .expect("the emission interval fits u64 nanoseconds");
    GovernorConfigBuilder::default()
        .per_nanosecond(interval_ns)
        .burst_size(u32::try_from(quota.burst).expect("the burst fits u32"))
        .finish()
        .expect("a valid tower_governor configuration")
}

/// Calls `service` as a server does, `ready()` then `call()`, polling each future once with a
/// no-op waker: every service here answers at once, so a future still pending is a bug in the
/// benchmark (it panics).
#[inline]
pub fn respond_now<S>(service: &mut S, request: Request<Body>) -> Response<Body>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: Debug,
{
    let mut context = TaskContext::from_waker(Waker::noop());
    let service = match pin!(service.ready()).poll(&mut context) {
        Poll::Ready(Ok(service)) => service,
        Poll::Ready(Err(error)) => panic!("the service failed to get ready: {error:?}"),
        Poll::Pending => panic!("the service was not ready at once"),
    };
    match pin!(service.call(request)).poll(&mut context) {
        Poll::Ready(Ok(response)) => response,
        Poll::Ready(Err(error)) => panic!("the service failed: {error:?}"),
        Poll::Pending => panic!("the response was not ready at once"),
    }
}

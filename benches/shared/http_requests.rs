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

/// http-layer's second floor (`peer-ip-check`): the least a keyed layer must do per request
/// beside the inner call, with no limiter. It reads the client's `ConnectInfo` from the
/// request's extensions (as both layers do), reads nanolimit's clock, hashes the IP with ahash
/// (as nanolimit's hashed table hashes an `IpAddr` key), and swaps the reading into the 64-byte
/// line the hash picks in an array as large as nanolimit's table for `capacity`: one clock
/// read, one hash, one compare-and-swap on a line of a table the size of the real one. A
/// request with no peer address, or a lost swap, is answered `429` out of line, as nanolimit's
/// layer answers its rejections, so the future has the two shapes a limiting layer's has. No
/// probe, no identity check, no rate arithmetic, no headers, no counts.
#[derive(Clone)]
pub struct PeerIpCheckFloor<S> {
    /// The service every passing request goes to.
    inner: S,
    /// The clock nanolimit's limiters read by default.
    clock: nanolimit::QuantaClock,
    /// The hasher a hashed nanolimit table keys with.
    hasher: ahash::RandomState,
    /// The table-sized array, one word per line.
    lines: Arc<[Line]>,
}

/// One 64-byte cache line holding one word (`CachePadded` pads to 128 bytes on x86-64, which
/// would double the array).
#[repr(align(64))]
pub struct Line(std::sync::atomic::AtomicU64);

impl<S> PeerIpCheckFloor<S> {
    /// The floor over `inner`, its array as large as nanolimit's `KeyedLimiter<IpAddr, Gcra>`
    /// of `capacity` for `quota`.
    pub fn new(inner: S, quota: &QuotaSpec, capacity: usize) -> Self {
        let table_bytes = KeyedLimiter::<IpAddr, Gcra>::new(quota.gcra(), capacity)
            .expect("a valid table")
            .memory_bytes();
        let line_count = (table_bytes / 64).max(1);
        PeerIpCheckFloor {
            inner,
            clock: nanolimit::QuantaClock::new(),
            hasher: ahash::RandomState::with_seeds(1, 2, 3, 4),
            lines: (0..line_count)
                .map(|_| Line(std::sync::atomic::AtomicU64::new(0)))
                .collect(),
        }
    }

    /// The answer to a request the floor does not pass: `429`, built out of line.
    #[cold]
    #[inline(never)]
    fn reject<F>() -> PeerIpCheckFuture<F> {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
        PeerIpCheckFuture::Rejected(Some(response))
    }
}

impl<S> Service<Request<Body>> for PeerIpCheckFloor<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = PeerIpCheckFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, context: &mut TaskContext<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(context)
    }

    #[inline]
    fn call(&mut self, request: Request<Body>) -> Self::Future {
        use nanolimit::Clock;
        use std::sync::atomic::Ordering;
        let Some(ConnectInfo(address)) = request.extensions().get::<ConnectInfo<SocketAddr>>()
        else {
            return Self::reject();
        };
        let now_ns = self.clock.now().as_ns();
        let hash = self.hasher.hash_one(address.ip());
        let index = ((hash as u128 * self.lines.len() as u128) >> 64) as usize;
        let word = &self.lines[index].0;
        // ORDERING: the orderings of nanolimit's check (an Acquire load of the state word, then
        // a weak AcqRel / Acquire compare-and-swap), so that the floor prices the same
        // instructions on every target; nothing is published through the line.
        let current = word.load(Ordering::Acquire);
        if word
            .compare_exchange_weak(current, now_ns, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            PeerIpCheckFuture::Passed(self.inner.call(request))
        } else {
            Self::reject()
        }
    }
}

/// [`PeerIpCheckFloor`]'s future: the inner service's, or a rejection ready at once.
pub enum PeerIpCheckFuture<F> {
    /// The request passed: the inner service's future.
    Passed(F),
    /// The `429` answer, taken by the first poll.
    Rejected(Option<Response<Body>>),
}

impl<F, E> Future for PeerIpCheckFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>> + Unpin,
{
    type Output = Result<Response<Body>, E>;

    #[inline]
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut TaskContext<'_>,
    ) -> Poll<Self::Output> {
        match &mut *self {
            PeerIpCheckFuture::Passed(future) => std::pin::Pin::new(future).poll(context),
            PeerIpCheckFuture::Rejected(response) => {
                Poll::Ready(Ok(response.take().expect("polled after completion")))
            }
        }
    }
}

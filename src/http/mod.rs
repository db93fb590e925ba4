//! HTTP: a [`tower_layer::Layer`] for axum, hyper and tonic servers that answers
//! `429 Too Many Requests` with the standard headers (feature `http`; `axum` for the peer
//! address axum records, `tokio` for delay mode).
//!
//! | part | what it is |
//! |---|---|
//! | [`RateLimitLayer`] | the layer: a direct or keyed limiter in front of a service, its modes ([`Mode`], delay) and options |
//! | [`KeyExtractor`]: [`PeerIp`], [`HeaderKey`], `()`, closures of a [`RequestHead`] | what a request is limited by; trusted proxies; IPv6 prefixes |
//! | [`Rejection`] | why the layer answered a request itself: no usable key, the limit used up... |
//! | [`HeaderOptions`] | the response headers from a [`Decision`](crate::Decision), usable without tower |
//! | [`RateLimit`](crate::RateLimit) | the limiters the layer can check |
//!
//! In an axum server, keyed by the client's IP address (features `http`, `axum`, `tokio`):
//!
//! ```no_run
//! use nanolimit::http::{HeaderOptions, PeerIp, RateLimitLayer};
//! use nanolimit::{Gcra, KeyedLimiter};
//! use std::net::{IpAddr, SocketAddr};
//! use std::sync::Arc;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // 10 requests per second per client IP, for up to 100,000 clients.
//! let per_ip = Arc::new(KeyedLimiter::<IpAddr, _>::new(Gcra::per_second(10)?, 100_000)?);
//! let layer = RateLimitLayer::keyed(per_ip, PeerIp::new()).headers(HeaderOptions::new("per-ip")?);
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(|| async { "hello" }))
//!     .layer(layer);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Any `tower::Service` over `http::Request`s takes the layer the same way. Here, per API key,
//! with a free and a paid plan on one table (the example `axum_server` runs both limits in a
//! real server):
//!
//! ```
//! use nanolimit::http::{HeaderKey, HeaderOptions, RateLimitLayer, RequestHead};
//! use nanolimit::{KeyedLimiter, ManualClock, SlidingWindow};
//! use std::sync::Arc;
//! use tower::{service_fn, Layer, ServiceExt};
//!
//! // Per API key: 2 requests a minute on the free plan, 100 on the paid one.
//! let per_key = KeyedLimiter::<[u8], _>::builder(SlidingWindow::per_minute(2)?)
//!     .clock(ManualClock::new())
//!     .build()?;
//! let paid = per_key.tier(SlidingWindow::per_minute(100)?)?;
//! let layer = RateLimitLayer::keyed(Arc::new(per_key), HeaderKey::named("x-api-key")?)
//!     .headers(HeaderOptions::new("per-key")?)
//!     .tier(move |head: &RequestHead<'_>| {
//!         let plan = head.headers.get("x-plan");
//!         plan.is_some_and(|plan| plan == "paid").then_some(paid)
//!     });
//! let service = layer.layer(service_fn(|_request: http::Request<()>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
//! }));
//! let request = |key: &str, plan: &str| {
//!     http::Request::builder().header("x-api-key", key).header("x-plan", plan).body(())
//! };
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! runtime.block_on(async {
//!     for _ in 0..2 {
//!         let response = service.clone().oneshot(request("k-1", "free")?).await?;
//!         assert_eq!(response.status(), http::StatusCode::OK);
//!     }
//!     let limited = service.clone().oneshot(request("k-1", "free")?).await?;
//!     assert_eq!(limited.status(), http::StatusCode::TOO_MANY_REQUESTS);
//!     assert_eq!(limited.headers()["ratelimit-policy"], r#""per-key";q=2;w=60"#);
//!     assert!(limited.headers().contains_key("retry-after"));
//!     for _ in 0..3 {
//!         let response = service.clone().oneshot(request("k-2", "paid")?).await?;
//!         assert_eq!(response.status(), http::StatusCode::OK);
//!     }
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Response headers
//!
//! | header | value |
//! |---|---|
//! | `RateLimit-Policy` (IETF draft-ietf-httpapi-ratelimit-headers-10) | `"name";q=<limit>;w=<seconds>`: `w` is the window of a window quota; for GCRA, burst × emission interval (the time an emptied burst takes to refill) |
//! | `RateLimit` (same draft) | `"name";r=<remaining>;t=<seconds until the whole limit is back>` |
//! | `X-RateLimit-Limit`, `-Remaining`, `-Reset` (optional, legacy) | the limit; what remains; the reset in seconds from now ([`HeaderOptions::legacy`]), or as a Unix time, GitHub's style ([`HeaderOptions::legacy_unix_reset`]) |
//! | `Retry-After` (every rejection) | seconds until the request would pass, rounded up, never 0 |
//!
//! Seconds are whole and rounded up, so a client that waits that long is not refused for
//! waiting too little. The headers go on rejections, and on allowed responses with
//! [`headers_on_allowed(true)`](RateLimitLayer::headers_on_allowed);
//! [`HeaderOptions::to_header_map`] gives them without tower.
//!
//! # Keys
//!
//! - [`PeerIp`]: the connection's address (axum's `ConnectInfo`, or a `SocketAddr` or `IpAddr`
//!   in the request's extensions). Behind reverse proxies,
//!   [`trusted_proxies_x_forwarded_for(hops)`](PeerIp::trusted_proxies_x_forwarded_for) or
//!   [`trusted_proxies_forwarded(hops)`](PeerIp::trusted_proxies_forwarded) (RFC 7239) take the
//!   entry the outermost trusted proxy appended; never by default, since a client must not
//!   choose its own key. IPv6 clients are keyed by their /64 unless told otherwise
//!   ([`ipv6_prefix`](PeerIp::ipv6_prefix)).
//! - [`HeaderKey`]: the value of one header (an API key, a user id), as bytes, of bounded
//!   length.
//! - `()`: one key for every request, for a direct limiter
//!   ([`RateLimitLayer::direct`]).
//! - A closure of the request's head, `Fn(&RequestHead) -> Result<K, Rejection>`: any key it
//!   can compute, or the [`Rejection`] that says why there is none.
//!
//! A request without a usable key gets `400`
//! ([`key_rejection_status`](RateLimitLayer::key_rejection_status) changes it), never a panic.
//!
//! # Cost, tiers and routes
//!
//! [`cost(|head| ...)`](RateLimitLayer::cost) weighs each request (by endpoint, by declared body
//! size), and [`tier(|head| ...)`](RateLimitLayer::tier) picks its quota (the client's plan)
//! among tiers made once with the limiter's `tier(quota)`. A limit per route is a layer on that
//! route.
//!
//! # Modes
//!
//! - Reject ([`Mode::Reject`], the default): `429` with the headers.
//! - Shadow ([`Mode::Shadow`]): let everything through and count what would have been
//!   rejected ([`stats().would_reject`](crate::Stats::would_reject)), optionally marking those
//!   responses `RateLimit-Shadow: rejected`: roll a limit out and watch it before enforcing it.
//! - Delay (`delay(max_wait)`, GCRA limiters, feature `tokio`): hold a request until its
//!   reservation's start, in arrival order, and reject it if that is further than `max_wait`.
//!
//! # What else the layer answers
//!
//! A key that a full keyed table refused gets `503` (configurable with
//! [`table_full_status`](RateLimitLayer::table_full_status)) with a `Retry-After` until a slot
//! frees: distinguishable from the client's own limit, and never "retry now". A request whose
//! cost is above the limit gets `413`: waiting would not help.
//! [`rejection`](RateLimitLayer::rejection) is handed the layer's own answer to every request it
//! refuses, to change or replace.

mod future;
mod headers;
mod key;
mod layer;
mod rejection;
mod service;

pub use headers::HeaderOptions;
pub use key::{HeaderKey, KeyExtractor, PeerIp, RequestHead, MAX_FORWARDING_HEADER_BYTES};
pub use layer::{Mode, RateLimitLayer};
pub use rejection::Rejection;
pub use service::RateLimitService;

//! An axum 0.8 server behind two nanolimit layers, and a short client run against it.
//!
//! ```text
//! cargo run --example axum_server --features http,axum,tokio
//! ```
//!
//! What it shows:
//!
//! - **Per client IP, on every route**: a `KeyedLimiter<IpAddr, Gcra>` keyed by `PeerIp`
//!   (the peer address axum records with `into_make_service_with_connect_info::<SocketAddr>()`;
//!   no proxy is trusted, so a client cannot pick its own key with `X-Forwarded-For`). Its
//!   headers go on its `429`s only, the default.
//! - **Per API key, on `/api/*`**: a `KeyedLimiter<[u8], SlidingWindow>` keyed by the
//!   `x-api-key` header (`HeaderKey`), with two plans: free (5 requests a minute) and paid (100
//!   a minute). The tiers are made once with `limiter.tier(quota)`, and a closure passed to the
//!   layer's `.tier(...)` picks one per request. A request without the header is answered `401`
//!   with a `WWW-Authenticate` challenge (a custom `.rejection(...)` response). Allowed
//!   responses carry the headers too (`.headers_on_allowed(true)`).
//! - **Legacy headers on one route**: `/api/legacy` shares the per-key limiter (and its counts)
//!   with `/api/data`, but answers with GitHub-style `X-RateLimit-Limit/-Remaining/-Reset`
//!   (reset as a Unix time) instead of the IETF `RateLimit` and `RateLimit-Policy` fields.
//!
//! So that it ends on its own (CI runs every example), the server listens on 127.0.0.1 on an
//! ephemeral port and the example is its own client (hyper-util's HTTP/1.1 client): 30
//! requests, printed as a table of statuses and rate-limit headers. Every request comes
//! from 127.0.0.1, so they all share one per-IP budget (bursts of 20): the last ones to `/` are
//! refused by the per-IP limit, after the API-key limits have had their turn.

use axum::body::Body;
use axum::http::header::{HeaderName, HeaderValue, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use nanolimit::http::{HeaderKey, HeaderOptions, PeerIp, RateLimitLayer, Rejection, RequestHead};
use nanolimit::{Gcra, KeyedLimiter, SlidingWindow};
use std::error::Error;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The API keys of paying customers (a database lookup in a real server).
const PAID_KEYS: &[&[u8]] = &[b"key-paid-bob"];

/// The per-API-key limiter: one table, shared by the layers of both `/api` routes.
type ApiLimiter = KeyedLimiter<[u8], SlidingWindow>;

/// The layer in front of one `/api` route: keyed by `x-api-key`, the plan chosen per request.
fn api_layer(
    limiter: &Arc<ApiLimiter>,
    free: SlidingWindow,
    paid: SlidingWindow,
    headers: HeaderOptions,
) -> RateLimitLayer<ApiLimiter, HeaderKey, SlidingWindow> {
    let api_key = HeaderKey::new(HeaderName::from_static("x-api-key")).max_bytes(64);
    RateLimitLayer::keyed(Arc::clone(limiter), api_key)
        .tier(move |head: &RequestHead<'_>| {
            // No header: no tier; the key extractor answers the request 401 anyway.
            let key = head.headers.get("x-api-key")?.as_bytes();
            Some(if PAID_KEYS.contains(&key) { paid } else { free })
        })
        .headers(headers)
        .headers_on_allowed(true)
        .key_rejection_status(StatusCode::UNAUTHORIZED)
        .rejection(api_rejection)
}

/// The `/api` layers' own answers: the layer's status and headers, and a `401` says how to
/// authenticate (RFC 9110 requires `WWW-Authenticate` on every `401`).
fn api_rejection(rejection: &Rejection, mut response: Response<String>) -> Response<String> {
    let (body, challenge) = match rejection {
        Rejection::RateLimited => ("your plan's limit is used up: see Retry-After\n", false),
        other if other.is_unusable_key() => ("send your API key in x-api-key\n", true),
        _ => ("try again later\n", false),
    };
    *response.body_mut() = body.to_owned();
    if challenge {
        let scheme = HeaderValue::from_static(r#"ApiKey header="x-api-key""#);
        response.headers_mut().insert(WWW_AUTHENTICATE, scheme);
    }
    response
}

/// One request of the demo, and what came back.
struct Exchange {
    path: &'static str,
    api_key: Option<&'static str>,
    status: StatusCode,
    headers: HeaderMap,
}

impl Exchange {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }

    /// The rate-limit headers of the response, in one column.
    fn rate_limit_headers(&self) -> String {
        let shown = [
            ("ratelimit", "RateLimit"),
            ("x-ratelimit-limit", "X-RateLimit-Limit"),
            ("x-ratelimit-remaining", "-Remaining"),
            ("x-ratelimit-reset", "-Reset"),
            ("retry-after", "Retry-After"),
            ("www-authenticate", "WWW-Authenticate"),
        ];
        let parts: Vec<String> = shown
            .iter()
            .filter_map(|(name, label)| Some(format!("{label}: {}", self.header(name)?)))
            .collect();
        if parts.is_empty() {
            "-".to_owned()
        } else {
            parts.join("  ")
        }
    }
}

/// `GET path`, with the API key if any: the status and the headers.
async fn fetch(
    client: &Client<HttpConnector, Body>,
    server: SocketAddr,
    path: &'static str,
    api_key: Option<&'static str>,
) -> Result<Exchange, Box<dyn Error>> {
    let mut request = axum::http::Request::get(format!("http://{server}{path}"));
    if let Some(key) = api_key {
        request = request.header("x-api-key", key);
    }
    let response = client.request(request.body(Body::empty())?);
    // Bounded: a stuck server fails the example instead of hanging CI.
    let response = tokio::time::timeout(Duration::from_secs(2), response).await??;
    Ok(Exchange {
        path,
        api_key,
        status: response.status(),
        headers: response.headers().clone(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let started = Instant::now();

    // Per client IP: bursts of 20, refilled at one request a second.
    let per_ip = Arc::new(KeyedLimiter::<IpAddr, Gcra>::new(
        Gcra::per_second(1)?.with_burst(20)?,
        100_000,
    )?);
    // Headers on its 429s only: with `.headers_on_allowed(true)` here too, this outer layer's
    // `RateLimit` fields would replace the `/api` layers' on the way out.
    let per_ip_layer =
        RateLimitLayer::keyed(per_ip, PeerIp::new()).headers(HeaderOptions::new("per-ip")?);

    // Per API key: the table's own quota is the free plan's; each plan is a tier of it.
    let api = Arc::new(ApiLimiter::new(SlidingWindow::per_minute(5)?, 10_000)?);
    let free = api.tier(SlidingWindow::per_minute(5)?)?;
    let paid = api.tier(SlidingWindow::per_minute(100)?)?;
    let data_layer = api_layer(&api, free, paid, HeaderOptions::new("api")?);
    let legacy_headers = HeaderOptions::new("api")?.ietf(false).legacy_unix_reset();
    let legacy_layer = api_layer(&api, free, paid, legacy_headers);

    let app = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .route("/api/data", get(|| async { "data\n" }).layer(data_layer))
        .route(
            "/api/legacy",
            get(|| async { "data\n" }).layer(legacy_layer),
        )
        // Outermost: every request is checked per IP first, whatever its route.
        .layer(per_ip_layer.clone());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let server = listener.local_addr()?;
    tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, service).await
    });
    println!("serving on http://{server}\n");

    // The client: 30 requests, in the order that shows each limit at work.
    let mut plan: Vec<(&'static str, Option<&'static str>)> = Vec::new();
    plan.extend([("/api/data", Some("key-free-alice")); 6]); // the 6th: over the free plan
    plan.extend([("/api/data", Some("key-paid-bob")); 4]);
    plan.extend([("/api/legacy", Some("key-paid-bob")); 2]); // same counts, legacy headers
    plan.push(("/api/legacy", Some("key-free-alice"))); // still over the free plan
    plan.push(("/api/data", None)); // no API key: 401
    plan.extend([("/", None); 16]); // the per-IP burst of 20 runs out after 6 of these
    let client = Client::builder(TokioExecutor::new()).build_http();
    let mut exchanges = Vec::with_capacity(plan.len());
    for (path, api_key) in plan {
        exchanges.push(fetch(&client, server, path, api_key).await?);
    }

    println!(" #  request                           status  rate-limit headers");
    for (index, exchange) in exchanges.iter().enumerate() {
        let request = format!(
            "GET {} {}",
            exchange.path,
            exchange
                .api_key
                .map_or(String::new(), |key| format!("[{key}]"))
        );
        println!(
            "{:>2}  {request:<34}{:>4}    {}",
            index + 1,
            exchange.status.as_u16(),
            exchange.rate_limit_headers()
        );
    }
    let policies: Vec<&str> = exchanges
        .iter()
        .filter_map(|exchange| exchange.header("ratelimit-policy"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    println!("\nRateLimit-Policy values seen: {}", policies.join(" | "));
    let stats = per_ip_layer.stats();
    println!(
        "per-IP layer: {} allowed, {} rejected; finished in {} ms",
        stats.allowed,
        stats.rejected,
        started.elapsed().as_millis()
    );

    // What this run must show (robust to a slow machine: the per-IP limit refills once a
    // second, which can let one more request to `/` through, never fewer).
    let statuses: Vec<u16> = exchanges.iter().map(|e| e.status.as_u16()).collect();
    assert_eq!(statuses[..6], [200, 200, 200, 200, 200, 429], "free plan");
    assert_eq!(statuses[6..12], [200; 6], "paid plan");
    assert_eq!(statuses[12..14], [429, 401], "free plan again; no API key");
    assert_eq!(statuses[14], 200, "per-IP burst");
    assert_eq!(statuses[29], 429, "per-IP limit");
    assert!(exchanges[10].header("x-ratelimit-limit").is_some());
    assert!(exchanges[13].header("www-authenticate").is_some());
    // Returning ends the runtime, and the server task with it.
    Ok(())
}

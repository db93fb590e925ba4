//! The HTTP layer in front of a real axum 0.8 server on 127.0.0.1 (an ephemeral port), driven by
//! a real HTTP/1.1 client (hyper-util's): statuses, every header value, the structured-field
//! syntax of `RateLimit-Policy` and `RateLimit` (parsed with `sfv`), the full-table answer, key
//! and cost rejections, custom rejections, shadow mode, trusted proxies, and many concurrent
//! clients on a frozen clock. Every limiter runs on a `ManualClock`, so every value is exact.
//! Loopback only; every request loop is bounded.

use axum::body::Bytes;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use nanolimit::http::{
    HeaderKey, HeaderOptions, Mode, PeerIp, RateLimitLayer, Rejection, RequestHead,
};
use nanolimit::{
    FixedWindow, Gcra, KeyedLimiter, Limiter, ManualClock, Quota, SlidingWindow, WhenFull,
};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type HttpClient = Client<HttpConnector, Empty<Bytes>>;

const API_KEY: &str = "x-api-key";

/// Serves `app` on 127.0.0.1 at an ephemeral port, recording each connection's peer address
/// (axum's `ConnectInfo<SocketAddr>`, which `PeerIp` reads). The server task ends with the
/// test's runtime.
async fn serve(app: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("the listener's address");
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .expect("the server runs");
    });
    address
}

/// The routes behind every layer here: `ok` on `/`.
fn routes() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

/// A client whose connections leave from `local` (any 127.0.0.0/8 address is loopback on
/// Linux), or from the system's choice.
fn client_from(local: Option<IpAddr>) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_local_address(local);
    Client::builder(TokioExecutor::new()).build(connector)
}

fn client() -> HttpClient {
    client_from(None)
}

/// What came back for one request.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    /// The value of header `name`, as text; panics if it is absent.
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header in {self:?}"))
            .to_str()
            .expect("a text header value")
    }

    /// Whether any of the rate-limit headers is present.
    fn has_rate_limit_headers(&self) -> bool {
        [
            "ratelimit-policy",
            "ratelimit",
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "retry-after",
        ]
        .iter()
        .any(|name| self.headers.contains_key(*name))
    }
}

/// GETs `/` from the server at `address` with `headers`.
async fn get_with(client: &HttpClient, address: SocketAddr, headers: &[(&str, &str)]) -> Reply {
    let mut request = Request::get(format!("http://{address}/"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client
        .request(request.body(Empty::new()).expect("a valid request"))
        .await
        .expect("the server answers");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the whole body")
        .to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8(body.to_vec()).expect("a text body"),
    }
}

async fn get_plain(client: &HttpClient, address: SocketAddr) -> Reply {
    get_with(client, address, &[]).await
}

/// Parses a `RateLimit-Policy` or `RateLimit` field value as an RFC 9651 structured-field List
/// of one Item: the String `policy` with integer parameters. Returns the parameters in order.
fn structured_field(value: &str, policy: &str) -> Vec<(String, i64)> {
    let list: sfv::List = sfv::Parser::new(value)
        .parse()
        .unwrap_or_else(|error| panic!("{value:?} is not a structured-field list: {error}"));
    assert_eq!(list.len(), 1, "one policy item in {value:?}");
    let sfv::ListEntry::Item(item) = &list[0] else {
        panic!("{value:?} holds an inner list, not an item");
    };
    assert_eq!(
        item.bare_item.as_string().map(|name| name.as_str()),
        Some(policy),
        "the item of {value:?} is the policy name as a String"
    );
    item.params
        .iter()
        .map(|(key, value)| {
            let integer = value
                .as_integer()
                .unwrap_or_else(|| panic!("parameter {key} of {value:?} is not an integer"));
            (key.as_str().to_owned(), i64::from(integer))
        })
        .collect()
}

fn params(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), *value))
        .collect()
}

/// Checks the IETF fields of `reply`, both as text and as parsed structured fields.
fn assert_ietf(reply: &Reply, policy: &str, (q, w): (i64, i64), (r, t): (i64, i64)) {
    let policy_field = reply.header("ratelimit-policy");
    assert_eq!(policy_field, format!("\"{policy}\";q={q};w={w}"));
    assert_eq!(
        structured_field(policy_field, policy),
        params(&[("q", q), ("w", w)])
    );
    let current = reply.header("ratelimit");
    assert_eq!(current, format!("\"{policy}\";r={r};t={t}"));
    assert_eq!(
        structured_field(current, policy),
        params(&[("r", r), ("t", t)])
    );
}

/// Checks the legacy fields of `reply` (reset as delta seconds).
fn assert_legacy(reply: &Reply, limit: u64, remaining: u64, reset: u64) {
    assert_eq!(reply.header("x-ratelimit-limit"), limit.to_string());
    assert_eq!(reply.header("x-ratelimit-remaining"), remaining.to_string());
    assert_eq!(reply.header("x-ratelimit-reset"), reset.to_string());
}

fn retry_after(reply: &Reply) -> u64 {
    reply
        .header("retry-after")
        .parse()
        .expect("Retry-After in delta-seconds")
}

/// Keyed per-IP GCRA (`PeerIp` reading axum's `ConnectInfo`): every header on each allowed
/// response, then the 429s, with `Retry-After` rounded up and never 0.
#[tokio::test]
async fn per_ip_gcra_sends_every_header_on_allowed_and_429() -> TestResult {
    let clock = ManualClock::new();
    // 6 a minute: one every 10 s, a burst of 6; w = burst × emission interval = 60 s.
    let limiter = KeyedLimiter::<IpAddr, _>::builder(Gcra::per_minute(6)?)
        .capacity(1_024)
        .clock(clock.clone())
        .build()?;
    let layer = RateLimitLayer::keyed(Arc::new(limiter), PeerIp::new())
        .headers(HeaderOptions::new("per-ip")?.legacy())
        .headers_on_allowed(true);
    let address = serve(routes().layer(layer.clone())).await;
    let client = client();

    for k in 1..=6_u64 {
        let reply = get_plain(&client, address).await;
        assert_eq!(reply.status, StatusCode::OK, "request {k}");
        assert_eq!(reply.body, "ok");
        // Each admitted request moves the theoretical arrival time 10 s on.
        assert_ietf(&reply, "per-ip", (6, 60), (6 - k as i64, 10 * k as i64));
        assert_legacy(&reply, 6, 6 - k, 10 * k);
        assert!(reply.headers.get(RETRY_AFTER).is_none(), "request {k}");
    }

    let denied = get_plain(&client, address).await;
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(denied.body, "Too Many Requests");
    assert_ietf(&denied, "per-ip", (6, 60), (0, 60));
    assert_legacy(&denied, 6, 0, 60);
    assert_eq!(retry_after(&denied), 10);

    // 2.5 s later: 7.5 s to wait, sent as 8 (rounded up); the reset 57.5 s as 58.
    clock.advance(Duration::from_millis(2_500));
    let denied = get_plain(&client, address).await;
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after(&denied), 8);
    assert_ietf(&denied, "per-ip", (6, 60), (0, 58));
    assert_legacy(&denied, 6, 0, 58);

    // 9.9 s in: 0.1 s to wait, sent as 1, never 0.
    clock.advance(Duration::from_millis(7_400));
    let denied = get_plain(&client, address).await;
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after(&denied), 1);

    // Waiting what the header said is enough.
    clock.advance(Duration::from_millis(100));
    let allowed = get_plain(&client, address).await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert_ietf(&allowed, "per-ip", (6, 60), (0, 60));

    let stats = layer.stats();
    assert_eq!((stats.allowed, stats.rejected), (7, 3));
    assert_eq!(
        (stats.would_reject, stats.delayed, stats.unusable),
        (0, 0, 0)
    );

    // Another client address is another key, with its whole burst.
    if cfg!(target_os = "linux") {
        let other = client_from(Some(IpAddr::from([127, 0, 0, 2])));
        let reply = get_plain(&other, address).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_ietf(&reply, "per-ip", (6, 60), (5, 10));
        assert_legacy(&reply, 6, 5, 10);
    }
    Ok(())
}

/// Headers on allowed responses are off by default; rejections always carry them.
#[tokio::test]
async fn allowed_responses_carry_no_headers_by_default() -> TestResult {
    let limiter = Limiter::with_clock(Gcra::per_minute(2)?, ManualClock::new());
    let layer = RateLimitLayer::direct(Arc::new(limiter));
    let address = serve(routes().layer(layer)).await;
    let client = client();
    for _ in 0..2 {
        let reply = get_plain(&client, address).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(!reply.has_rate_limit_headers(), "{reply:?}");
    }
    let denied = get_plain(&client, address).await;
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    // The default policy name, IETF fields only.
    assert_ietf(&denied, "default", (2, 60), (0, 60));
    assert_eq!(retry_after(&denied), 30);
    assert!(denied.headers.get("x-ratelimit-limit").is_none());
    Ok(())
}

/// Options turned on and then off again leave a layer that behaves as one never given them
/// (the pass path it takes depends on the options), and an option set after others still
/// applies.
#[tokio::test]
async fn options_turned_off_again_and_set_last_apply() -> TestResult {
    let limiter = Arc::new(Limiter::with_clock(
        Gcra::per_minute(4)?,
        ManualClock::new(),
    ));
    let layer = RateLimitLayer::direct(Arc::clone(&limiter))
        .headers_on_allowed(true)
        .headers_on_allowed(false);
    let address = serve(routes().layer(layer.clone())).await;
    let client = client();
    let allowed = get_plain(&client, address).await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert!(!allowed.has_rate_limit_headers(), "{allowed:?}");
    assert_eq!(layer.stats().allowed, 1);

    // A cost set on the plain layer: each request now takes 2 of the 3 units left.
    let costly = layer.cost(|_: &RequestHead<'_>| 2);
    let address = serve(routes().layer(costly.clone())).await;
    let allowed = get_plain(&client, address).await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert!(!allowed.has_rate_limit_headers(), "{allowed:?}");
    let denied = get_plain(&client, address).await;
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    // The layers share their statistics.
    let stats = costly.stats();
    assert_eq!((stats.allowed, stats.rejected), (2, 1));
    Ok(())
}

/// Whole seconds rounded up, as the layer writes them.
fn ceil_seconds(duration: Duration) -> u64 {
    duration.as_nanos().div_ceil(1_000_000_000) as u64
}

/// The legacy reset as a Unix time in seconds (as GitHub's API sends it), IETF fields off.
#[tokio::test]
async fn legacy_reset_as_unix_seconds() -> TestResult {
    let limiter = Limiter::with_clock(Gcra::per_minute(6)?, ManualClock::new());
    let layer = RateLimitLayer::direct(Arc::new(limiter))
        .headers(HeaderOptions::new("api")?.ietf(false).legacy_unix_reset())
        .headers_on_allowed(true);
    let address = serve(routes().layer(layer)).await;
    let client = client();

    let since_epoch = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
    };
    for (k, reset_after) in [(1, 10), (2, 20)] {
        let before = since_epoch();
        let reply = get_plain(&client, address).await;
        let after = since_epoch();
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.headers.get("ratelimit").is_none());
        assert!(reply.headers.get("ratelimit-policy").is_none());
        assert_eq!(reply.header("x-ratelimit-limit"), "6");
        assert_eq!(reply.header("x-ratelimit-remaining"), (6 - k).to_string());
        let reset: u64 = reply.header("x-ratelimit-reset").parse()?;
        let reset_after = Duration::from_secs(reset_after);
        assert!(
            (ceil_seconds(before + reset_after)..=ceil_seconds(after + reset_after))
                .contains(&reset),
            "reset {reset} is not now + {reset_after:?} as Unix seconds ({before:?}..{after:?})"
        );
    }
    Ok(())
}

/// A full keyed table (one shard of one bucket) refuses a new key with 503, a body saying why,
/// `RateLimit` r=0, and a `Retry-After` that is the wait for a slot, never 0; live keys keep
/// their limits.
#[tokio::test]
async fn full_table_answers_503_never_retry_now() -> TestResult {
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::<[u8], _>::builder(Gcra::per_minute(6)?)
        .capacity(1)
        .shards(1)
        .when_full(WhenFull::Deny)
        .clock(clock.clone())
        .build()?;
    let slots = limiter.slots();
    assert!((1..=64).contains(&slots), "a tiny table: {slots} slots");
    let layer = RateLimitLayer::keyed(
        Arc::new(limiter),
        HeaderKey::new(API_KEY.parse().expect("a header name")),
    )
    .headers(HeaderOptions::new("per-key")?);
    let address = serve(routes().layer(layer.clone())).await;
    let client = client();

    for slot in 0..slots {
        let key = format!("client-{slot}");
        let reply = get_with(&client, address, &[(API_KEY, &key)]).await;
        assert_eq!(reply.status, StatusCode::OK, "{key} fits");
    }
    // client-0 comes back: its slot is live until 20 s.
    let reply = get_with(&client, address, &[(API_KEY, "client-0")]).await;
    assert_eq!(reply.status, StatusCode::OK);

    let refused = get_with(&client, address, &[(API_KEY, "newcomer")]).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.body, "Service Unavailable: too many clients");
    // The first slot to free is a one-request key's, fresh 10 s from now.
    assert_eq!(retry_after(&refused), 10);
    assert_ietf(&refused, "per-key", (6, 60), (0, 10));

    // 9.5 s on: half a second left, sent as 1, not 0.
    clock.advance(Duration::from_millis(9_500));
    let refused = get_with(&client, address, &[(API_KEY, "newcomer")]).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after(&refused), 1);
    assert_ietf(&refused, "per-key", (6, 60), (0, 1));

    // Live keys are unaffected by the flood; a rate-limited live key is still a 429.
    for _ in 0..4 {
        let reply = get_with(&client, address, &[(API_KEY, "client-0")]).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    let limited = get_with(&client, address, &[(API_KEY, "client-0")]).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);

    // Once a slot frees, the newcomer is admitted.
    clock.advance(Duration::from_millis(500));
    let admitted = get_with(&client, address, &[(API_KEY, "newcomer")]).await;
    assert_eq!(admitted.status, StatusCode::OK);

    let stats = layer.stats();
    assert_eq!(stats.allowed, slots as u64 + 1 + 4 + 1);
    assert_eq!(stats.rejected, 3);
    Ok(())
}

/// A configured status for a full table.
#[tokio::test]
async fn full_table_status_is_configurable() -> TestResult {
    let limiter = KeyedLimiter::<[u8], _>::builder(FixedWindow::per_minute(5)?)
        .capacity(1)
        .shards(1)
        .when_full(WhenFull::Deny)
        .clock(ManualClock::new())
        .build()?;
    let slots = limiter.slots();
    let layer = RateLimitLayer::keyed(
        Arc::new(limiter),
        HeaderKey::new(API_KEY.parse().expect("a header name")),
    )
    .table_full_status(StatusCode::INSUFFICIENT_STORAGE);
    let address = serve(routes().layer(layer)).await;
    let client = client();
    for slot in 0..slots {
        let key = slot.to_string();
        let reply = get_with(&client, address, &[(API_KEY, &key)]).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    let refused = get_with(&client, address, &[(API_KEY, "one-too-many")]).await;
    assert_eq!(refused.status, StatusCode::INSUFFICIENT_STORAGE);
    // The fixed window's first slot frees when its minute ends.
    assert_eq!(retry_after(&refused), 60);
    Ok(())
}

/// A request without its key header, or with one too long, is 400 with no rate-limit headers;
/// the status is configurable.
#[tokio::test]
async fn missing_or_oversized_key_is_400() -> TestResult {
    let limiter = KeyedLimiter::<[u8], _>::builder(Gcra::per_minute(6)?)
        .capacity(64)
        .clock(ManualClock::new())
        .build()?;
    let extractor = HeaderKey::new(API_KEY.parse().expect("a header name")).max_bytes(16);
    let layer = RateLimitLayer::keyed(Arc::new(limiter), extractor).headers_on_allowed(true);
    let address = serve(routes().layer(layer.clone())).await;
    let client = client();

    let missing = get_plain(&client, address).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.body, "Bad Request: no rate-limit key");
    assert!(!missing.has_rate_limit_headers(), "{missing:?}");

    let long = "k".repeat(17);
    let oversized = get_with(&client, address, &[(API_KEY, &long)]).await;
    assert_eq!(oversized.status, StatusCode::BAD_REQUEST);
    assert!(!oversized.has_rate_limit_headers(), "{oversized:?}");

    let longest = "k".repeat(16);
    let fits = get_with(&client, address, &[(API_KEY, &longest)]).await;
    assert_eq!(fits.status, StatusCode::OK);
    assert_ietf(&fits, "default", (6, 60), (5, 10));

    let stats = layer.stats();
    assert_eq!((stats.unusable, stats.allowed, stats.rejected), (2, 1, 0));

    let limiter = KeyedLimiter::<[u8], _>::builder(Gcra::per_minute(6)?)
        .capacity(64)
        .clock(ManualClock::new())
        .build()?;
    let layer = RateLimitLayer::keyed(
        Arc::new(limiter),
        HeaderKey::new(API_KEY.parse().expect("a header name")),
    )
    .key_rejection_status(StatusCode::UNAUTHORIZED);
    let address = serve(routes().layer(layer)).await;
    let reply = get_plain(&client, address).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    Ok(())
}

/// The cost closure: a request costing more than the limit can never pass (413); one costing
/// more than what remains is a 429.
#[tokio::test]
async fn cost_above_the_limit_is_413() -> TestResult {
    let limiter = Limiter::with_clock(Gcra::per_minute(6)?, ManualClock::new());
    let layer = RateLimitLayer::direct(Arc::new(limiter))
        .cost(|head: &RequestHead<'_>| {
            head.headers
                .get("x-cost")
                .and_then(|value| value.to_str().ok()?.parse().ok())
                .unwrap_or(1)
        })
        .headers_on_allowed(true);
    let address = serve(routes().layer(layer.clone())).await;
    let client = client();

    let reply = get_with(&client, address, &[("x-cost", "4")]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_ietf(&reply, "default", (6, 60), (2, 40));

    let too_large = get_with(&client, address, &[("x-cost", "7")]).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(too_large.body, "Request Too Large for the rate limit");
    assert!(!too_large.has_rate_limit_headers(), "{too_large:?}");

    // 3 units with 2 left: one more emission interval to wait.
    let over = get_with(&client, address, &[("x-cost", "3")]).await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after(&over), 10);
    assert_ietf(&over, "default", (6, 60), (2, 40));

    let rest = get_with(&client, address, &[("x-cost", "2")]).await;
    assert_eq!(rest.status, StatusCode::OK);
    assert_ietf(&rest, "default", (6, 60), (0, 60));

    let stats = layer.stats();
    assert_eq!((stats.allowed, stats.rejected, stats.unusable), (2, 1, 1));
    Ok(())
}

/// A custom rejection response sees the reason, the status and the headers the layer would
/// send, for rate limits and unusable keys alike.
#[tokio::test]
async fn custom_rejection_response() -> TestResult {
    let limiter = KeyedLimiter::<[u8], _>::builder(SlidingWindow::per_minute(1)?)
        .capacity(64)
        .clock(ManualClock::new())
        .build()?;
    let layer = RateLimitLayer::keyed(
        Arc::new(limiter),
        HeaderKey::new(API_KEY.parse().expect("a header name")),
    )
    .headers(HeaderOptions::new("api")?)
    .rejection(|rejection: &Rejection, mut response: Response<String>| {
        let reason = match rejection {
            Rejection::RateLimited => "rate_limited",
            other if other.is_unusable_key() => "no_key",
            _ => "other",
        };
        *response.body_mut() = format!(
            r#"{{"error":"{reason}","status":{}}}"#,
            response.status().as_u16()
        );
        if *rejection == Rejection::RateLimited {
            *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        }
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    });
    let address = serve(routes().layer(layer)).await;
    let client = client();

    let reply = get_with(&client, address, &[(API_KEY, "k")]).await;
    assert_eq!((reply.status, reply.body.as_str()), (StatusCode::OK, "ok"));

    let limited = get_with(&client, address, &[(API_KEY, "k")]).await;
    assert_eq!(limited.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(limited.body, r#"{"error":"rate_limited","status":429}"#);
    assert_eq!(limited.header("content-type"), "application/json");
    // The sliding window passes the next request just after the minute ends (the previous
    // window's request then weighs less than one): 60 s and a nanosecond, rounded up.
    assert_eq!(retry_after(&limited), 61);
    assert_ietf(&limited, "api", (1, 60), (0, 61));

    let no_key = get_plain(&client, address).await;
    assert_eq!(no_key.status, StatusCode::BAD_REQUEST);
    assert_eq!(no_key.body, r#"{"error":"no_key","status":400}"#);
    assert!(no_key.headers.get(RETRY_AFTER).is_none());
    Ok(())
}

/// Shadow mode lets every request through, counts exactly the ones the limit would have
/// rejected, and marks them (with `mark`).
#[tokio::test]
async fn shadow_mode_counts_would_be_rejections_exactly() -> TestResult {
    for mark in [true, false] {
        let limiter = KeyedLimiter::<[u8], _>::builder(Gcra::per_minute(3)?)
            .capacity(64)
            .clock(ManualClock::new())
            .build()?;
        let layer = RateLimitLayer::keyed(
            Arc::new(limiter),
            HeaderKey::new(API_KEY.parse().expect("a header name")),
        )
        .headers(HeaderOptions::new("rollout")?)
        .mode(Mode::Shadow { mark });
        let address = serve(routes().layer(layer.clone())).await;
        let client = client();

        let mut marked = 0;
        for k in 1..=10_u64 {
            let key = if k % 2 == 0 { "even" } else { "odd" };
            let reply = get_with(&client, address, &[(API_KEY, key)]).await;
            assert_eq!(reply.status, StatusCode::OK, "shadow mode rejects nothing");
            assert_eq!(reply.body, "ok");
            // Each key has 5 requests: the first 3 within the limit.
            let would_reject = k.div_ceil(2) > 3;
            // A dry run is invisible to clients: no rate-limit headers and no `Retry-After`
            // on the responses it would have rejected (headers on allowed responses are off),
            // only the mark, if asked for.
            assert!(!reply.has_rate_limit_headers(), "{reply:?}");
            assert!(reply.headers.get("retry-after").is_none(), "{reply:?}");
            let mark_value = reply.headers.get("ratelimit-shadow");
            if would_reject && mark {
                assert_eq!(
                    mark_value.map(|value| value.as_bytes()),
                    Some(&b"rejected"[..])
                );
                marked += 1;
            } else {
                assert!(mark_value.is_none(), "request {k}: {reply:?}");
            }
        }
        let stats = layer.stats();
        assert_eq!(stats.would_reject, 4);
        assert_eq!(stats.allowed, 6);
        assert_eq!(stats.rejected, 0);
        assert_eq!(marked, if mark { 4 } else { 0 });
    }
    Ok(())
}

/// `X-Forwarded-For` through the real server: spoofed from a peer with no trusted proxies, it
/// is ignored; behind one trusted proxy, the last element is the client.
#[tokio::test]
async fn x_forwarded_for_on_a_real_server() -> TestResult {
    let client = client();
    let per_ip = || {
        KeyedLimiter::<IpAddr, _>::builder(Gcra::per_minute(1)?)
            .capacity(64)
            .clock(ManualClock::new())
            .build()
            .map_err(Box::<dyn std::error::Error>::from)
    };

    // No trusted proxies: the client is the peer (127.0.0.1), whatever the header claims.
    let layer = RateLimitLayer::keyed(Arc::new(per_ip()?), PeerIp::new());
    let untrusted = serve(routes().layer(layer)).await;
    let first = get_with(&client, untrusted, &[("x-forwarded-for", "203.0.113.1")]).await;
    assert_eq!(first.status, StatusCode::OK);
    let spoofed = get_with(&client, untrusted, &[("x-forwarded-for", "203.0.113.2")]).await;
    assert_eq!(spoofed.status, StatusCode::TOO_MANY_REQUESTS);
    let garbage = get_with(&client, untrusted, &[("x-forwarded-for", "garbage")]).await;
    assert_eq!(
        garbage.status,
        StatusCode::TOO_MANY_REQUESTS,
        "not even read"
    );

    // One trusted proxy (the test client plays it): the element it appended is the client.
    let behind_proxy = PeerIp::new().trusted_proxies_x_forwarded_for(1);
    let layer = RateLimitLayer::keyed(Arc::new(per_ip()?), behind_proxy);
    let trusted = serve(routes().layer(layer.clone())).await;
    let reply = get_with(&client, trusted, &[("x-forwarded-for", "203.0.113.9")]).await;
    assert_eq!(reply.status, StatusCode::OK);
    // The same client claiming another address in front: still 203.0.113.9.
    let chain = "198.51.100.1, 203.0.113.9";
    let reply = get_with(&client, trusted, &[("x-forwarded-for", chain)]).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    // Another client behind the same proxy.
    let chain = "203.0.113.9, 203.0.113.10";
    let reply = get_with(&client, trusted, &[("x-forwarded-for", chain)]).await;
    assert_eq!(reply.status, StatusCode::OK);
    // Malformed or missing where a proxy must have written it: 400.
    let reply = get_with(&client, trusted, &[("x-forwarded-for", "unknown")]).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let reply = get_plain(&client, trusted).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let stats = layer.stats();
    assert_eq!((stats.allowed, stats.rejected, stats.unusable), (2, 1, 2));
    Ok(())
}

/// Many concurrent clients on a frozen clock: 8 client tasks, each with its own connection
/// pool, send 40 requests each over 4 keys; the server admits exactly the quota per key.
async fn concurrent_clients_admit_exactly_the_quota<Q: Quota>(quota: Q) -> TestResult {
    const CLIENTS: usize = 8;
    const REQUESTS: usize = 40;
    const KEYS: usize = 4;
    let limit = quota.limit();
    let limiter = KeyedLimiter::<[u8], _>::builder(quota)
        .capacity(1_024)
        .clock(ManualClock::new())
        .build()?;
    let layer = RateLimitLayer::keyed(
        Arc::new(limiter),
        HeaderKey::new(API_KEY.parse().expect("a header name")),
    );
    let address = serve(routes().layer(layer.clone())).await;
    let start = Arc::new(tokio::sync::Barrier::new(CLIENTS));
    let mut tasks = Vec::new();
    for task in 0..CLIENTS {
        let start = Arc::clone(&start);
        tasks.push(tokio::spawn(async move {
            let client = client();
            let mut admitted = HashMap::<String, u64>::new();
            start.wait().await;
            for request in 0..REQUESTS {
                let key = format!("key-{}", (task + request) % KEYS);
                let reply = get_with(&client, address, &[(API_KEY, &key)]).await;
                match reply.status {
                    StatusCode::OK => *admitted.entry(key).or_default() += 1,
                    StatusCode::TOO_MANY_REQUESTS => {}
                    other => panic!("unexpected {other}"),
                }
            }
            admitted
        }));
    }
    let mut admitted = HashMap::<String, u64>::new();
    for task in tasks {
        for (key, count) in task.await? {
            *admitted.entry(key).or_default() += count;
        }
    }
    for key in 0..KEYS {
        let key = format!("key-{key}");
        assert_eq!(
            admitted.get(&key).copied(),
            Some(limit),
            "{key}: {admitted:?}"
        );
    }
    let stats = layer.stats();
    let total = (CLIENTS * REQUESTS) as u64;
    assert_eq!(stats.allowed, limit * KEYS as u64);
    assert_eq!(stats.rejected, total - limit * KEYS as u64);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_gcra() -> TestResult {
    concurrent_clients_admit_exactly_the_quota(Gcra::per_minute(7)?).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_sliding_window() -> TestResult {
    concurrent_clients_admit_exactly_the_quota(SlidingWindow::per_minute(7)?).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_fixed_window() -> TestResult {
    concurrent_clients_admit_exactly_the_quota(FixedWindow::per_minute(7)?).await
}

/// A closure's key (the user from a header) with a per-request tier (the plan from another
/// header): each tier's limit shows in the headers; no user is a 400.
#[tokio::test]
async fn key_fn_and_tiers() -> TestResult {
    let limiter = KeyedLimiter::<String, _>::builder(Gcra::per_minute(2)?)
        .capacity(64)
        .clock(ManualClock::new())
        .build()?;
    let pro = limiter.tier(Gcra::per_minute(4)?)?;
    let user = |head: &RequestHead<'_>| {
        let user = head.headers.get("x-user").ok_or(Rejection::KeyMissing)?;
        let user = user.to_str().map_err(|_| Rejection::KeyMalformed)?;
        Ok(user.to_owned())
    };
    let layer = RateLimitLayer::keyed(Arc::new(limiter), user)
        .tier(move |head: &RequestHead<'_>| {
            let plan = head.headers.get("x-plan")?;
            (plan == "pro").then_some(pro)
        })
        .headers(HeaderOptions::new("per-user")?)
        .headers_on_allowed(true);
    let address = serve(routes().layer(layer)).await;
    let client = client();

    for k in 1..=2 {
        let free = get_with(&client, address, &[("x-user", "ann")]).await;
        assert_eq!(free.status, StatusCode::OK);
        assert_ietf(&free, "per-user", (2, 60), (2 - k, 30 * k));
    }
    let free = get_with(&client, address, &[("x-user", "ann")]).await;
    assert_eq!(free.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after(&free), 30);

    let plan = [("x-user", "bob"), ("x-plan", "pro")];
    for k in 1..=4 {
        let reply = get_with(&client, address, &plan).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_ietf(&reply, "per-user", (4, 60), (4 - k, 15 * k));
    }
    let reply = get_with(&client, address, &plan).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after(&reply), 15);

    let nobody = get_with(&client, address, &[("x-plan", "pro")]).await;
    assert_eq!(nobody.status, StatusCode::BAD_REQUEST);
    Ok(())
}

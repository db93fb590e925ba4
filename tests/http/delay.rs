//! The layer's delay mode, in process, on tokio's paused time (`TokioClock` as the limiter's
//! clock): held requests reach the inner service exactly at their reservation's start, and a
//! request that would wait longer than the maximum is answered 429 at once, booking nothing.

use http::{Request, Response, StatusCode};
use nanolimit::clock::TokioClock;
use nanolimit::http::{HeaderKey, RateLimitLayer, Rejection};
use nanolimit::{Gcra, KeyedLimiter, Limiter};
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tower::{service_fn, Layer, Service, ServiceExt};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// When (since the test's start) the inner service ran each request, by its `x-id`.
type CallLog = Arc<Mutex<Vec<(String, Duration)>>>;

/// The inner service: logs the time of each call, answers `ok`.
#[allow(clippy::type_complexity)]
fn recording_service(
    start: Instant,
    log: CallLog,
) -> impl tower::Service<
    Request<()>,
    Response = Response<String>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<String>, Infallible>> + Send + 'static,
> + Clone
       + Send
       + 'static {
    service_fn(move |request: Request<()>| {
        let id = request.headers()["x-id"].to_str().expect("text").to_owned();
        log.lock().expect("log").push((id, start.elapsed()));
        async { Ok::<_, Infallible>(Response::new(String::from("ok"))) }
    })
}

fn request(id: &str, key: Option<&str>) -> Request<()> {
    let mut builder = Request::get("/").header("x-id", id);
    if let Some(key) = key {
        builder = builder.header("x-api-key", key);
    }
    builder.body(()).expect("a request")
}

/// What a request got back, and when (since the test's start).
type Outcome = (StatusCode, Option<String>, Duration);

/// Calls `service` with `request` now (the limit is checked in `call`), and awaits the
/// response in a task of its own.
async fn send<S>(service: &mut S, request: Request<()>, start: Instant) -> JoinHandle<Outcome>
where
    S: Service<Request<()>, Response = Response<String>, Error = Infallible>,
    S::Future: Send + 'static,
{
    let future = service.ready().await.expect("ready").call(request);
    tokio::spawn(async move {
        let response = future.await.expect("infallible");
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|value| value.to_str().expect("text").to_owned());
        (response.status(), retry_after, start.elapsed())
    })
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// 10 a second with a burst of 1, at most 350 ms of wait: of six requests at once, the k-th
/// runs at k × 100 ms exactly; the fifth and sixth would wait 400 ms and are 429 at once.
#[tokio::test(start_paused = true)]
async fn delay_spaces_requests_per_the_reservation() -> TestResult {
    let start = Instant::now();
    let limiter = Limiter::with_clock(Gcra::per_second(10)?.with_burst(1)?, TokioClock::new());
    let layer = RateLimitLayer::direct(Arc::new(limiter)).delay(ms(350));
    let log = CallLog::default();
    let mut service = layer.layer(recording_service(start, Arc::clone(&log)));

    let mut pending = Vec::new();
    for id in 0..6 {
        pending.push(send(&mut service, request(&id.to_string(), None), start).await);
    }
    let mut outcomes = Vec::new();
    for handle in pending {
        outcomes.push(handle.await?);
    }
    for (k, outcome) in outcomes.iter().take(4).enumerate() {
        assert_eq!(
            *outcome,
            (StatusCode::OK, None, ms(100 * k as u64)),
            "request {k}"
        );
    }
    for outcome in &outcomes[4..] {
        assert_eq!(outcome.0, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(outcome.1.as_deref(), Some("1"), "Retry-After rounded up");
        assert_eq!(outcome.2, Duration::ZERO, "answered at once");
    }
    let expected: Vec<(String, Duration)> = (0..4).map(|k| (k.to_string(), ms(100 * k))).collect();
    assert_eq!(*log.lock().expect("log"), expected);

    let stats = layer.stats();
    assert_eq!((stats.allowed, stats.delayed, stats.rejected), (1, 3, 2));

    // The refusals booked nothing: once the last held request has run, the next slot is
    // 100 ms on (at 400 ms), and a request then passes at once.
    tokio::time::sleep_until(start + ms(400)).await;
    let later = send(&mut service, request("6", None), start).await.await?;
    assert_eq!(later, (StatusCode::OK, None, ms(400)));
    assert_eq!(layer.stats().allowed, 2);
    Ok(())
}

/// Keyed delay: each key's requests are spaced on its own; a request without a key is a 400.
#[tokio::test(start_paused = true)]
async fn keyed_delay_spaces_each_key_on_its_own() -> TestResult {
    let start = Instant::now();
    let limiter = KeyedLimiter::<[u8], _>::builder(Gcra::per_second(10)?.with_burst(1)?)
        .capacity(64)
        .clock(TokioClock::new())
        .build()?;
    let extractor = HeaderKey::new(http::HeaderName::from_static("x-api-key"));
    let layer = RateLimitLayer::keyed(Arc::new(limiter), extractor).delay(ms(1_000));
    let log = CallLog::default();
    let mut service = layer.layer(recording_service(start, Arc::clone(&log)));

    let mut pending = Vec::new();
    for (id, key) in [
        ("a0", "a"),
        ("b0", "b"),
        ("a1", "a"),
        ("a2", "a"),
        ("b1", "b"),
    ] {
        pending.push(send(&mut service, request(id, Some(key)), start).await);
    }
    let no_key = send(&mut service, request("none", None), start)
        .await
        .await?;
    assert_eq!(no_key, (StatusCode::BAD_REQUEST, None, Duration::ZERO));
    for handle in pending {
        assert_eq!(handle.await?.0, StatusCode::OK);
    }
    let mut calls = log.lock().expect("log").clone();
    calls.sort();
    let expected = [("a0", 0), ("a1", 100), ("a2", 200), ("b0", 0), ("b1", 100)]
        .map(|(id, at)| (id.to_owned(), ms(at)));
    assert_eq!(calls, expected);
    let stats = layer.stats();
    assert_eq!((stats.allowed, stats.delayed, stats.unusable), (2, 3, 1));
    Ok(())
}

/// A held request whose client goes away keeps its booking (documented): the next request is
/// booked after it.
#[tokio::test(start_paused = true)]
async fn a_dropped_held_request_keeps_its_booking() -> TestResult {
    let start = Instant::now();
    let limiter = Limiter::with_clock(Gcra::per_second(10)?.with_burst(1)?, TokioClock::new());
    let layer = RateLimitLayer::direct(Arc::new(limiter)).delay(ms(1_000));
    let log = CallLog::default();
    let mut service = layer.layer(recording_service(start, Arc::clone(&log)));

    let first = send(&mut service, request("first", None), start).await;
    let dropped = service.ready().await?.call(request("dropped", None));
    drop(dropped);
    let third = send(&mut service, request("third", None), start).await;
    assert_eq!(first.await?, (StatusCode::OK, None, ms(0)));
    assert_eq!(third.await?, (StatusCode::OK, None, ms(200)));
    let calls = log.lock().expect("log").clone();
    assert_eq!(
        calls,
        [("first".to_owned(), ms(0)), ("third".to_owned(), ms(200))]
    );
    Ok(())
}

/// A custom rejection sees why delay mode refused: the wait was too long.
#[tokio::test(start_paused = true)]
async fn delay_rejection_reason_is_wait_too_long() -> TestResult {
    let start = Instant::now();
    let limiter = Limiter::with_clock(Gcra::per_second(1)?.with_burst(1)?, TokioClock::new());
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&reasons);
    let layer = RateLimitLayer::direct(Arc::new(limiter))
        .delay(ms(500))
        .rejection(move |rejection: &Rejection, answer: Response<String>| {
            seen.lock().expect("reasons").push(*rejection);
            // A response of its own, replacing the layer's: the status kept, no headers.
            let mut response = Response::new(String::from("slow down"));
            *response.status_mut() = answer.status();
            response
        });
    let log = CallLog::default();
    let mut service = layer.layer(recording_service(start, log));

    let first = send(&mut service, request("0", None), start).await.await?;
    assert_eq!(first.0, StatusCode::OK);
    let second = send(&mut service, request("1", None), start).await.await?;
    assert_eq!(
        second,
        (StatusCode::TOO_MANY_REQUESTS, None, Duration::ZERO)
    );
    assert_eq!(*reasons.lock().expect("reasons"), [Rejection::WaitTooLong]);
    Ok(())
}

/// `headers_on_allowed` holds in delay mode too: a request passed at once, and one held and
/// then passed, are allowed responses.
#[tokio::test(start_paused = true)]
async fn delay_mode_keeps_headers_on_allowed() -> TestResult {
    let start = Instant::now();
    let limiter = Limiter::with_clock(Gcra::per_second(10)?.with_burst(1)?, TokioClock::new());
    let layer = RateLimitLayer::direct(Arc::new(limiter))
        .delay(ms(1_000))
        .headers_on_allowed(true);
    let mut service = layer.layer(recording_service(start, CallLog::default()));
    for id in ["at-once", "held"] {
        let response = service.ready().await?.call(request(id, None)).await?;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().contains_key("ratelimit"), "{id}");
        assert!(response.headers().contains_key("ratelimit-policy"), "{id}");
    }
    Ok(())
}

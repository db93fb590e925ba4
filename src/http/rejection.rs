//! Why the layer answered a request itself: one type for an extractor's "no key" and for the
//! layer's own refusals.

use core::fmt;

/// Why a request was answered by the layer instead of being passed on: the error of every
/// [`KeyExtractor`](super::KeyExtractor) (the `Key…` variants), and what a custom rejection
/// response ([`RateLimitLayer::rejection`](super::RateLimitLayer::rejection)) is told.
///
/// The status and the headers the layer answers with are not here: the custom response is
/// handed the layer's own answer, which carries them (the status, as configured; the rate-limit
/// headers and `Retry-After`).
///
/// | variant | status |
/// |---|---|
/// | [`KeyMissing`](Self::KeyMissing), [`KeyMalformed`](Self::KeyMalformed), [`KeyTooLong`](Self::KeyTooLong) | 400, or the layer's [`key_rejection_status`](super::RateLimitLayer::key_rejection_status) |
/// | [`RateLimited`](Self::RateLimited), [`WaitTooLong`](Self::WaitTooLong) | 429 |
/// | [`TableFull`](Self::TableFull) | 503, or the layer's [`table_full_status`](super::RateLimitLayer::table_full_status) |
/// | [`CostAboveLimit`](Self::CostAboveLimit) | 413 |
///
/// ```
/// use nanolimit::http::{RateLimitLayer, Rejection};
/// use nanolimit::{Gcra, Limiter, ManualClock};
/// use std::sync::Arc;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let limiter = Limiter::with_clock(Gcra::per_second(1)?, ManualClock::new());
/// // The layer's answer (status, headers), with a JSON body saying why.
/// let layer = RateLimitLayer::direct(Arc::new(limiter)).rejection(
///     |rejection: &Rejection, mut response: http::Response<String>| {
///         let reason = match rejection {
///             Rejection::RateLimited => "rate_limited",
///             other if other.is_unusable_key() => "no_key",
///             _ => "other",
///         };
///         *response.body_mut() = format!(r#"{{"error":"{reason}"}}"#);
///         response
///     },
/// );
/// let service = layer.layer(service_fn(|_request: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
/// }));
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// runtime.block_on(async {
///     let first = service.clone().oneshot(http::Request::new(())).await?;
///     assert_eq!(first.body(), "ok");
///     let second = service.clone().oneshot(http::Request::new(())).await?;
///     assert_eq!(second.status(), http::StatusCode::TOO_MANY_REQUESTS);
///     assert_eq!(second.headers()["retry-after"], "1");
///     assert_eq!(second.body(), r#"{"error":"rate_limited"}"#);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// Fieldless, a byte: every extractor's check returns it on the pass path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejection {
    /// The request carries nothing to key it by (no peer address; no such header).
    KeyMissing,
    /// What it carries cannot be read as a key (a forwarding header that is not a list of
    /// addresses, or names fewer hops than the trusted proxies; a header value that is not
    /// text).
    KeyMalformed,
    /// The key is longer than the extractor accepts.
    KeyTooLong,
    /// The limit is used up.
    RateLimited,
    /// A keyed table full of live keys had no room for the client's key: not the client's
    /// doing, and its `Retry-After` is never 0.
    TableFull,
    /// The request's cost is above the limit (or its tier was made by another limiter): it
    /// could never pass.
    CostAboveLimit,
    /// Delay mode: it would have had to wait longer than the maximum.
    WaitTooLong,
}

impl Rejection {
    /// Whether the request had no usable key: [`KeyMissing`](Self::KeyMissing),
    /// [`KeyMalformed`](Self::KeyMalformed) or [`KeyTooLong`](Self::KeyTooLong).
    ///
    /// ```
    /// use nanolimit::http::Rejection;
    ///
    /// assert!(Rejection::KeyTooLong.is_unusable_key());
    /// assert!(!Rejection::RateLimited.is_unusable_key());
    /// ```
    pub const fn is_unusable_key(&self) -> bool {
        matches!(
            self,
            Rejection::KeyMissing | Rejection::KeyMalformed | Rejection::KeyTooLong
        )
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rejection::KeyMissing => "the request carries no rate-limit key",
            Rejection::KeyMalformed => "the request's rate-limit key is malformed",
            Rejection::KeyTooLong => "the request's rate-limit key is too long",
            Rejection::RateLimited => "the request's rate limit is used up",
            Rejection::TableFull => "the rate limiter has no room for the request's key",
            Rejection::CostAboveLimit => "the request's cost is above its rate limit",
            Rejection::WaitTooLong => "the request would wait longer than the rate limit allows",
        })
    }
}

impl std::error::Error for Rejection {}

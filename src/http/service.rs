//! The service a layer wraps around another: judge each request, then pass it on, answer it,
//! or hold it.

#[cfg(feature = "tokio")]
use super::future::merge_headers;
use super::future::ResponseFuture;
use super::key::{KeyExtractor, RequestHead};
use super::layer::{LayerEvent, Mode, RateLimitLayer, Shared, SHADOW_MARK};
use super::rejection::Rejection;
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request as LimitRequest;
use crate::limiter::rate_limit::RateLimit;
use crate::quota::Quota;
use core::fmt;
use core::task::{Context, Poll};
use http::header::{HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use std::sync::Arc;
use tower_layer::Layer;
use tower_service::Service;

/// The service a [`RateLimitLayer`] wraps around another: it judges
/// each request, then passes it on to the inner service, answers it itself (429, with the
/// rate-limit headers and `Retry-After`), or, in delay mode, holds it.
///
/// Its response future is a concrete type the crate does not export (a box would cost an
/// allocation per request): await it, or hold it as an `impl Future`.
///
/// ```
/// use nanolimit::http::{PeerIp, RateLimitLayer};
/// use nanolimit::{Gcra, KeyedLimiter, ManualClock};
/// use std::net::{IpAddr, SocketAddr};
/// use std::sync::Arc;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let per_ip = KeyedLimiter::<IpAddr, _>::builder(Gcra::per_minute(1)?)
///     .capacity(1_000)
///     .clock(ManualClock::new())
///     .build()?;
/// let layer = RateLimitLayer::keyed(Arc::new(per_ip), PeerIp::new());
/// let service = layer.layer(service_fn(|_request: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
/// }));
/// // The server records each connection's peer in the request (axum: `ConnectInfo`).
/// let from = |client: [u8; 4]| {
///     let mut request = http::Request::new(());
///     request.extensions_mut().insert(SocketAddr::from((client, 40_000)));
///     request
/// };
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// runtime.block_on(async {
///     let first = service.clone().oneshot(from([192, 0, 2, 1])).await?;
///     assert_eq!(first.status(), http::StatusCode::OK);
///     let again = service.clone().oneshot(from([192, 0, 2, 1])).await?;
///     assert_eq!(again.status(), http::StatusCode::TOO_MANY_REQUESTS);
///     assert_eq!(again.headers()["retry-after"], "60");
///     let other_client = service.clone().oneshot(from([192, 0, 2, 2])).await?;
///     assert_eq!(other_client.status(), http::StatusCode::OK);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// assert_eq!((layer.stats().allowed, layer.stats().rejected), (2, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RateLimitService<S, L, X: KeyExtractor, Q: Quota> {
    pub(super) inner: S,
    pub(super) shared: Arc<Shared<L, X, Q>>,
}

impl<S: Clone, L, X: KeyExtractor, Q: Quota> Clone for RateLimitService<S, L, X, Q> {
    fn clone(&self) -> Self {
        RateLimitService {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: fmt::Debug, L, X: KeyExtractor, Q: Quota> fmt::Debug for RateLimitService<S, L, X, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// What the check of one request found: its decision, boxed, where the request was not simply
/// allowed (`None`: allowed, no headers to write); a request the limiter refuses to judge; or
/// why it has no key.
type Checked<Q> = Result<Result<Option<Box<Decision<Q>>>, RequestError>, Rejection>;

/// What a plain layer's check of one request found ([`Shared::check_plainly`]): its decision,
/// boxed, where the request was not allowed; or why it has no key.
type PlainlyChecked<Q> = Result<Option<Box<Decision<Q>>>, Rejection>;

/// What the layer answers a request it does not pass on with, before a custom rejection
/// response sees it.
struct OwnAnswer {
    rejection: Rejection,
    status: StatusCode,
    headers: HeaderMap,
}

/// What the check of one request decided.
enum Verdict<Q: Quota> {
    Pass(Option<Decision<Q>>),
    /// Passed on, with these headers (delay mode, where the headers come from a peek).
    #[cfg(feature = "tokio")]
    PassWith(Option<HeaderMap>),
    Answer(OwnAnswer),
    /// Held for this long, then passed on with these headers.
    #[cfg(feature = "tokio")]
    Hold(std::time::Duration, Option<HeaderMap>),
}

impl<L, X, Q> Shared<L, X, Q>
where
    L: RateLimit<X::Key, Quota = Q>,
    X: KeyExtractor,
    Q: Quota,
{
    /// A plain layer's check ([`Shared::plain_check`]): one unit for the request's key, the
    /// decision kept (boxed) only when the request is not allowed, so that the pass path moves
    /// nothing but a null pointer.
    #[inline]
    fn check_plainly<B>(&self, request: &Request<B>) -> PlainlyChecked<Q> {
        self.extractor.with_key(request, |key| {
            let decision = self.limiter.check(key);
            if decision.is_allowed() {
                None
            } else {
                Some(Box::new(decision))
            }
        })
    }

    /// Judges a request with the layer's options: cost, tier, delay, headers on allowed.
    fn judge<B>(&self, request: &Request<B>) -> Verdict<Q> {
        let head = RequestHead::of(request);
        let mut limit_request =
            LimitRequest::cost(self.cost.as_ref().map_or(1, |cost| cost(&head)));
        if let Some(tier) = self.tier.as_ref().and_then(|tier| tier(&head)) {
            limit_request = limit_request.tier(tier);
        }
        #[cfg(feature = "tokio")]
        if let Some(delay) = &self.delay {
            let booked = self.extractor.with_key(request, |key| {
                (delay.reserve)(&self.limiter, key, limit_request.max_wait(delay.max_wait))
            });
            // A granted booking passes now or is held; a refused or unusable one is judged as
            // a check below, for the answer and its headers.
            if let Ok(Some(Ok(delay))) = booked {
                // The state after the booking, for the headers: a peek of no cost.
                let decision = self.headers_on_allowed.then(|| {
                    let peek = LimitRequest::cost(0).tier_of(&limit_request);
                    self.extractor
                        .with_key(request, |key| self.limiter.peek_with(key, peek))
                });
                let headers = match decision {
                    Some(Ok(Ok(decision))) => Some(self.passed_headers(&decision)),
                    _ => None,
                };
                if delay.is_zero() {
                    self.counters.count(LayerEvent::Allowed);
                    return Verdict::PassWith(headers);
                }
                self.counters.count(LayerEvent::Delayed);
                return Verdict::Hold(delay, headers);
            }
        }
        // The common outcome, allowed with no headers to write, leaves the closure as `None`:
        // the decision (88 bytes for GCRA) is only moved out, boxed, when it is needed.
        let plain = self.cost.is_none() && self.tier.is_none();
        let decided = self.extractor.with_key(request, |key| {
            let checked = if plain {
                Ok(self.limiter.check(key))
            } else {
                self.limiter.check_with(key, limit_request)
            };
            match checked {
                Ok(decision) if decision.is_allowed() && !self.headers_on_allowed => Ok(None),
                Ok(decision) => Ok(Some(Box::new(decision))),
                Err(error) => Err(error),
            }
        });
        self.verdict(decided)
    }

    /// The verdict on a checked request.
    fn verdict(&self, decided: Checked<Q>) -> Verdict<Q> {
        let decision = match decided {
            Err(rejection) => {
                self.counters.count(LayerEvent::Unusable);
                return Verdict::Answer(OwnAnswer {
                    rejection,
                    status: self.key_rejection_status,
                    headers: HeaderMap::new(),
                });
            }
            Ok(Err(_cost_above_limit)) => {
                self.counters.count(LayerEvent::Unusable);
                return Verdict::Answer(OwnAnswer {
                    rejection: Rejection::CostAboveLimit,
                    status: StatusCode::PAYLOAD_TOO_LARGE,
                    headers: HeaderMap::new(),
                });
            }
            Ok(Ok(None)) => {
                self.counters.count(LayerEvent::Allowed);
                return Verdict::Pass(None);
            }
            Ok(Ok(Some(decision))) => *decision,
        };
        if decision.is_allowed() {
            self.counters.count(LayerEvent::Allowed);
            return Verdict::Pass(self.headers_on_allowed.then_some(decision));
        }
        if let Mode::Shadow { .. } = self.mode {
            self.counters.count(LayerEvent::WouldReject);
            return Verdict::Pass(Some(decision));
        }
        self.counters.count(LayerEvent::Rejected);
        let headers = self.headers.to_header_map(&decision);
        let (rejection, status) = if decision.is_untracked() {
            (Rejection::TableFull, self.table_full_status)
        } else if cfg!(feature = "tokio") && self.has_delay() {
            (Rejection::WaitTooLong, StatusCode::TOO_MANY_REQUESTS)
        } else {
            (Rejection::RateLimited, StatusCode::TOO_MANY_REQUESTS)
        };
        Verdict::Answer(OwnAnswer {
            rejection,
            status,
            headers,
        })
    }

    #[cfg(feature = "tokio")]
    fn has_delay(&self) -> bool {
        self.delay.is_some()
    }

    #[cfg(not(feature = "tokio"))]
    fn has_delay(&self) -> bool {
        false
    }

    /// The response to a request the layer answers itself: its own, or the custom rejection
    /// response made from it.
    fn answer<ResBody: From<String>>(&self, answer: OwnAnswer) -> Response<ResBody> {
        let text = match answer.rejection {
            Rejection::RateLimited | Rejection::WaitTooLong => "Too Many Requests",
            Rejection::TableFull => "Service Unavailable: too many clients",
            Rejection::KeyMissing | Rejection::KeyMalformed | Rejection::KeyTooLong => {
                "Bad Request: no rate-limit key"
            }
            Rejection::CostAboveLimit => "Request Too Large for the rate limit",
        };
        let mut response = Response::new(text.to_owned());
        *response.status_mut() = answer.status;
        *response.headers_mut() = answer.headers;
        let response = match &self.rejection {
            Some(custom) => custom(&answer.rejection, response),
            None => response,
        };
        response.map(ResBody::from)
    }

    /// The headers a passed request's response gets for `decision`: the rate-limit headers if
    /// asked for on allowed responses (or if shadow mode let a rejection through), and shadow
    /// mode's mark.
    fn passed_headers(&self, decision: &Decision<Q>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        // A passed request is not a rejection: no `Retry-After`, even in shadow mode.
        if self.headers_on_allowed {
            self.headers.write_limits(decision, &mut headers);
        }
        if decision.is_denied() {
            if let Mode::Shadow { mark: true } = self.mode {
                headers.insert(SHADOW_MARK.clone(), HeaderValue::from_static("rejected"));
            }
        }
        headers
    }
}

impl<S, L, X, Q, B, ResBody> Service<Request<B>> for RateLimitService<S, L, X, Q>
where
    S: Service<Request<B>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
    ResBody: From<String> + Send + 'static,
    L: RateLimit<X::Key, Quota = Q>,
    X: KeyExtractor,
    Q: Quota,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, Q, ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    // Inlined: the pass path is then a few branches in the caller's frame rather than a call
    // with a frame of its own.
    #[inline]
    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The pass path: the check, the count, the inner call; nothing else is built. The
        // check's outcome is settled before the request is moved, and the request is moved at
        // the end, at one site per path: moved inside the match on the check, the inlined
        // request (240 bytes for an axum request) is copied once more.
        let unsettled = if self.shared.plain_check {
            match self.shared.check_plainly(&request) {
                Ok(None) => None,
                checked => Some(Some(checked)),
            }
        } else {
            Some(None)
        };
        match unsettled {
            None => {
                self.shared.counters.count(LayerEvent::Allowed);
                ResponseFuture::passed(self.inner.call(request), None)
            }
            Some(checked) => self.follow(checked, request),
        }
    }
}

impl<S, L, X, Q> RateLimitService<S, L, X, Q>
where
    L: RateLimit<X::Key, Quota = Q>,
    X: KeyExtractor,
    Q: Quota,
{
    /// Judges `request`, with the layer's options unless a plain check already did
    /// (`checked`), and carries out the verdict: passes it on, answers it, or holds it. Out of
    /// line: the plain pass path does not come here.
    #[inline(never)]
    fn follow<B, ResBody>(
        &mut self,
        checked: Option<PlainlyChecked<Q>>,
        request: Request<B>,
    ) -> ResponseFuture<S::Future, Q, ResBody, S::Error>
    where
        S: Service<Request<B>, Response = Response<ResBody>> + Clone + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Send + 'static,
        B: Send + 'static,
        ResBody: From<String> + Send + 'static,
    {
        let verdict = match checked {
            Some(checked) => self.shared.verdict(checked.map(Ok)),
            None => self.shared.judge(&request),
        };
        match verdict {
            Verdict::Pass(decision) => {
                let headers = decision.map(|decision| self.shared.passed_headers(&decision));
                ResponseFuture::passed(self.inner.call(request), headers)
            }
            Verdict::Answer(answer) => ResponseFuture::answered(self.shared.answer(answer)),
            #[cfg(feature = "tokio")]
            Verdict::PassWith(headers) => ResponseFuture::passed(self.inner.call(request), headers),
            #[cfg(feature = "tokio")]
            Verdict::Hold(delay, headers) => {
                // The service that was polled ready goes with the request; a clone stays.
                let ready = self.inner.clone();
                let mut inner = core::mem::replace(&mut self.inner, ready);
                let held = async move {
                    tokio::time::sleep(delay).await;
                    core::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
                    let mut response = inner.call(request).await?;
                    if let Some(headers) = headers {
                        merge_headers(response.headers_mut(), headers);
                    }
                    Ok(response)
                };
                ResponseFuture::held(Box::pin(async move { Box::new(held.await) }))
            }
        }
    }
}

impl<S, L, X: KeyExtractor, Q: Quota> Layer<S> for RateLimitLayer<L, X, Q> {
    type Service = RateLimitService<S, L, X, Q>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

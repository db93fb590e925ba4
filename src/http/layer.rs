//! The tower layer and service: check each request, answer 429 (or pass it on, or delay it).

use super::headers::HeaderOptions;
use super::key::{KeyExtractor, RequestHead};
use super::rejection::Rejection;
use crate::clock::Clock;
#[cfg(feature = "tokio")]
use crate::engine::request::Request as LimitRequest;
use crate::engine::stats::Stats;
use crate::limiter::counters::stripes::Stripes;
use crate::limiter::counters::Counting;
use crate::limiter::direct::Limiter;
use crate::limiter::keyed::{KeyMode, KeyedLimiter};
use crate::limiter::rate_limit::RateLimit;
use crate::quota::Quota;
use core::fmt;
use http::header::HeaderName;
use http::{Response, StatusCode};
use std::sync::Arc;

/// Marks a response that shadow mode let through although the limit would have rejected it.
pub(super) static SHADOW_MARK: HeaderName = HeaderName::from_static("ratelimit-shadow");

type CostFn = Arc<dyn Fn(&RequestHead<'_>) -> u64 + Send + Sync>;
type TierFn<Q> = Arc<dyn Fn(&RequestHead<'_>) -> Option<Q> + Send + Sync>;
type RejectionFn = Arc<dyn Fn(&Rejection, Response<String>) -> Response<String> + Send + Sync>;

/// What the layer does with a request the limit rejects ([`RateLimitLayer::mode`]).
///
/// ```
/// use nanolimit::http::{Mode, RateLimitLayer};
/// use nanolimit::{Gcra, Limiter, ManualClock};
/// use std::sync::Arc;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let limiter = Limiter::with_clock(Gcra::per_minute(1)?, ManualClock::new());
/// let layer = RateLimitLayer::direct(Arc::new(limiter)).mode(Mode::Shadow { mark: true });
/// let service = layer.layer(service_fn(|_request: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
/// }));
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// runtime.block_on(async {
///     let _ = service.clone().oneshot(http::Request::new(())).await?;
///     // Over the limit, but let through, marked.
///     let over = service.clone().oneshot(http::Request::new(())).await?;
///     assert_eq!(over.status(), http::StatusCode::OK);
///     assert_eq!(over.headers()["ratelimit-shadow"], "rejected");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// assert_eq!(layer.stats().would_reject, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// Answer it with `429 Too Many Requests` and its headers (the default).
    Reject,
    /// Let it through, counting it ([`Stats::would_reject`]); with `mark`, add the header
    /// `RateLimit-Shadow: rejected` to its response. For rolling out a limit: see what it
    /// would do before it does it.
    Shadow {
        /// Whether to mark the responses the limit would have rejected.
        mark: bool,
    },
}

/// What the layer counts, one [`Stats`] figure per count, on the crate's striped counters
/// (per-thread cache lines, as a limiter's [`Counters`](crate::counters::Counters)), so that threads
/// passing requests at once do not all write one line.
#[derive(Debug)]
pub(super) struct LayerCounters {
    stripes: Stripes<LAYER_FIELDS>,
}

/// A count of [`LayerCounters`]: which [`Stats`] figure it is.
#[derive(Debug, Clone, Copy)]
pub(super) enum LayerEvent {
    Allowed,
    Rejected,
    WouldReject,
    Delayed,
    Unusable,
}

/// The counts per stripe: one per [`LayerEvent`].
const LAYER_FIELDS: usize = 5;

impl LayerCounters {
    pub(super) fn new() -> Self {
        LayerCounters {
            stripes: Stripes::for_this_machine(),
        }
    }

    #[inline]
    pub(super) fn count(&self, event: LayerEvent) {
        self.stripes.add(event as usize, 1);
    }

    fn read(&self, event: LayerEvent) -> u64 {
        self.stripes.sum(event as usize)
    }
}

/// How delay mode books a request: the limiter's `reserve_with`, reduced to what the layer
/// needs (set only by `delay`, where the quota is known to be reservable).
#[cfg(feature = "tokio")]
type ReserveFn<L, K, Q> = fn(&L, &K, LimitRequest<Q>) -> Option<Result<std::time::Duration, ()>>;

/// Delay mode's settings (copied field by field: a fn pointer and a duration).
#[cfg(feature = "tokio")]
pub(super) struct Delay<L, K: ?Sized, Q: Quota> {
    pub(super) max_wait: std::time::Duration,
    pub(super) reserve: ReserveFn<L, K, Q>,
}

pub(super) struct Shared<L, X: KeyExtractor, Q: Quota> {
    pub(super) limiter: Arc<L>,
    pub(super) extractor: X,
    pub(super) headers: HeaderOptions,
    pub(super) headers_on_allowed: bool,
    pub(super) mode: Mode,
    #[cfg(feature = "tokio")]
    pub(super) delay: Option<Delay<L, X::Key, Q>>,
    pub(super) cost: Option<CostFn>,
    pub(super) tier: Option<TierFn<Q>>,
    pub(super) key_rejection_status: StatusCode,
    pub(super) table_full_status: StatusCode,
    pub(super) rejection: Option<RejectionFn>,
    /// Shared by every clone of the layer, and by the layers configured from them.
    pub(super) counters: Arc<LayerCounters>,
    /// Whether an allowed request needs nothing but the limiter's `check` of one unit: no
    /// cost or tier closure, no delay mode, no headers on allowed responses. Kept by
    /// [`RateLimitLayer::configure`], so that the service's pass path tests one flag instead
    /// of the options one by one.
    pub(super) plain_check: bool,
}

impl<L, X: KeyExtractor, Q: Quota> Shared<L, X, Q> {
    /// Whether the options leave an allowed request nothing to do but one unit's check.
    fn checks_plainly(&self) -> bool {
        #[cfg(feature = "tokio")]
        let delays = self.delay.is_some();
        #[cfg(not(feature = "tokio"))]
        let delays = false;
        self.cost.is_none() && self.tier.is_none() && !self.headers_on_allowed && !delays
    }
}

impl<L, X: KeyExtractor, Q: Quota> Clone for Shared<L, X, Q> {
    fn clone(&self) -> Self {
        Shared {
            limiter: Arc::clone(&self.limiter),
            extractor: self.extractor.clone(),
            headers: self.headers.clone(),
            headers_on_allowed: self.headers_on_allowed,
            mode: self.mode,
            #[cfg(feature = "tokio")]
            delay: self.delay.as_ref().map(|delay| Delay {
                max_wait: delay.max_wait,
                reserve: delay.reserve,
            }),
            cost: self.cost.clone(),
            tier: self.tier.clone(),
            key_rejection_status: self.key_rejection_status,
            table_full_status: self.table_full_status,
            rejection: self.rejection.clone(),
            counters: Arc::clone(&self.counters),
            plain_check: self.plain_check,
        }
    }
}

/// A [`tower_layer::Layer`] that checks every request against a nanolimit limiter: direct
/// ([`direct`](Self::direct)) or keyed by what an extractor finds in the request
/// ([`keyed`](Self::keyed): [`PeerIp`](super::PeerIp), [`HeaderKey`](super::HeaderKey), a
/// closure: see [`KeyExtractor`]). Works with axum, hyper and tonic (any `tower::Service` over
/// `http::Request`s whose response body can be made from a `String`).
///
/// | option | default |
/// |---|---|
/// | policy name in the headers ([`headers`](Self::headers)) | `"default"`, IETF headers only |
/// | headers on allowed responses ([`headers_on_allowed`](Self::headers_on_allowed)) | off |
/// | cost per request ([`cost`](Self::cost)) | 1 |
/// | tier per request ([`tier`](Self::tier)) | the limiter's quota |
/// | mode ([`mode`](Self::mode), [`delay`](Self::delay)) | [`Mode::Reject`] |
/// | status for a request without a usable key ([`key_rejection_status`](Self::key_rejection_status)) | 400 |
/// | status for a key refused by a full table ([`table_full_status`](Self::table_full_status)) | 503 |
/// | rejection response ([`rejection`](Self::rejection)) | the status, the headers, a one-line text body |
///
/// ```
/// use nanolimit::http::{PeerIp, RateLimitLayer};
/// use nanolimit::{Gcra, KeyedLimiter};
/// use std::net::IpAddr;
/// use std::sync::Arc;
///
/// let per_ip = KeyedLimiter::<IpAddr, _>::new(Gcra::per_second(10)?, 100_000)?;
/// let layer = RateLimitLayer::keyed(Arc::new(per_ip), PeerIp::new())
///     .headers(nanolimit::http::HeaderOptions::new("per-ip")?)
///     .headers_on_allowed(true);
/// // axum: Router::new().route(...).layer(layer)
/// # let _ = layer;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RateLimitLayer<L, X: KeyExtractor, Q: Quota> {
    pub(super) shared: Arc<Shared<L, X, Q>>,
}

impl<L, X: KeyExtractor, Q: Quota> Clone for RateLimitLayer<L, X, Q> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<L, X: KeyExtractor, Q: Quota> fmt::Debug for RateLimitLayer<L, X, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("headers", &self.shared.headers)
            .field("mode", &self.shared.mode)
            .finish_non_exhaustive()
    }
}

impl<Q: Quota, C: Clock + 'static, N: Counting + 'static> RateLimitLayer<Limiter<Q, C, N>, (), Q> {
    /// A layer checking every request against one direct limiter.
    ///
    /// ```
    /// use nanolimit::http::RateLimitLayer;
    /// use nanolimit::{Gcra, Limiter};
    /// use std::sync::Arc;
    ///
    /// let layer = RateLimitLayer::direct(Arc::new(Limiter::new(Gcra::per_second(1_000)?)));
    /// assert_eq!(layer.stats().allowed, 0);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn direct(limiter: Arc<Limiter<Q, C, N>>) -> Self {
        RateLimitLayer::with_extractor(limiter, ())
    }
}

impl<K, Q, C, M, N, X> RateLimitLayer<KeyedLimiter<K, Q, C, M, N>, X, Q>
where
    K: ?Sized + 'static,
    Q: Quota,
    C: Clock + 'static,
    M: KeyMode<K> + 'static,
    N: Counting + 'static,
    X: KeyExtractor<Key = K>,
{
    /// A layer checking each request against the state of the key `extractor` finds in it.
    pub fn keyed(limiter: Arc<KeyedLimiter<K, Q, C, M, N>>, extractor: X) -> Self {
        RateLimitLayer::with_extractor(limiter, extractor)
    }
}

impl<L, X, Q> RateLimitLayer<L, X, Q>
where
    L: RateLimit<X::Key, Quota = Q>,
    X: KeyExtractor,
    Q: Quota,
{
    /// A layer over any limiter the layer can check ([`RateLimit`]), keyed by `extractor`.
    pub fn with_extractor(limiter: Arc<L>, extractor: X) -> Self {
        RateLimitLayer {
            shared: Arc::new(Shared {
                limiter,
                extractor,
                headers: HeaderOptions::new("default").expect("a valid policy name"),
                headers_on_allowed: false,
                mode: Mode::Reject,
                #[cfg(feature = "tokio")]
                delay: None,
                cost: None,
                tier: None,
                key_rejection_status: StatusCode::BAD_REQUEST,
                table_full_status: StatusCode::SERVICE_UNAVAILABLE,
                rejection: None,
                counters: Arc::new(LayerCounters::new()),
                plain_check: true,
            }),
        }
    }

    /// Applies `change` to this layer's options: a layer cloned before keeps its own (its
    /// services are unaffected), and shares the limiter and the statistics.
    fn configure(mut self, change: impl FnOnce(&mut Shared<L, X, Q>)) -> Self {
        let shared = Arc::make_mut(&mut self.shared);
        change(shared);
        shared.plain_check = shared.checks_plainly();
        self
    }

    /// Which headers responses carry, and the policy name ([`HeaderOptions`]).
    pub fn headers(self, headers: HeaderOptions) -> Self {
        self.configure(|shared| shared.headers = headers)
    }

    /// Whether allowed responses carry the headers too (a rejection always does).
    pub fn headers_on_allowed(self, on: bool) -> Self {
        self.configure(|shared| shared.headers_on_allowed = on)
    }

    /// The cost of each request, from its head (by endpoint weight, by declared body size).
    ///
    /// ```
    /// use nanolimit::http::{RateLimitLayer, RequestHead};
    /// use nanolimit::{Gcra, Limiter};
    /// use std::sync::Arc;
    ///
    /// let limiter = Arc::new(Limiter::new(Gcra::per_second(100)?));
    /// let layer = RateLimitLayer::direct(limiter).cost(|head: &RequestHead<'_>| {
    ///     if head.uri.path().starts_with("/search") { 10 } else { 1 }
    /// });
    /// # let _ = layer;
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn cost(self, cost: impl Fn(&RequestHead<'_>) -> u64 + Send + Sync + 'static) -> Self {
        self.configure(|shared| shared.cost = Some(Arc::new(cost)))
    }

    /// The tier each request is judged under, from its head (`None`: the limiter's quota).
    /// Make the tiers once with the limiter's `tier`.
    pub fn tier(
        self,
        tier: impl Fn(&RequestHead<'_>) -> Option<Q> + Send + Sync + 'static,
    ) -> Self {
        self.configure(|shared| shared.tier = Some(Arc::new(tier)))
    }

    /// What to do with a request the limit rejects ([`Mode`]).
    pub fn mode(self, mode: Mode) -> Self {
        self.configure(|shared| shared.mode = mode)
    }

    /// The status for a request without a usable key (400 by default). A 401 must also carry
    /// a `WWW-Authenticate` header (RFC 9110): add it with [`rejection`](Self::rejection).
    pub fn key_rejection_status(self, status: StatusCode) -> Self {
        self.configure(|shared| shared.key_rejection_status = status)
    }

    /// The status for a client whose key a full keyed table refused (503 by default).
    pub fn table_full_status(self, status: StatusCode) -> Self {
        self.configure(|shared| shared.table_full_status = status)
    }

    /// A custom response for every request the layer answers itself: `rejection` is told why
    /// ([`Rejection`]) and handed the layer's own answer (its status, the rate-limit headers
    /// with `Retry-After`, a one-line text body), to change or replace. Its body becomes the
    /// service's body type through `From<String>`.
    ///
    /// ```
    /// use http::header::{HeaderValue, WWW_AUTHENTICATE};
    /// use http::{Response, StatusCode};
    /// use nanolimit::http::{HeaderKey, RateLimitLayer, Rejection};
    /// use nanolimit::{Gcra, KeyedLimiter};
    /// use std::sync::Arc;
    ///
    /// let per_key = KeyedLimiter::<[u8], _>::new(Gcra::per_second(10)?, 10_000)?;
    /// let layer = RateLimitLayer::keyed(Arc::new(per_key), HeaderKey::named("x-api-key")?)
    ///     .key_rejection_status(StatusCode::UNAUTHORIZED)
    ///     .rejection(|rejection: &Rejection, mut response: Response<String>| {
    ///         // A 401 must say how to authenticate (RFC 9110).
    ///         if rejection.is_unusable_key() {
    ///             let scheme = HeaderValue::from_static(r#"ApiKey header="x-api-key""#);
    ///             response.headers_mut().insert(WWW_AUTHENTICATE, scheme);
    ///         }
    ///         response
    ///     });
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rejection(
        self,
        rejection: impl Fn(&Rejection, Response<String>) -> Response<String> + Send + Sync + 'static,
    ) -> Self {
        self.configure(|shared| shared.rejection = Some(Arc::new(rejection)))
    }

    /// What the layer has done so far: requests passed on at once
    /// ([`allowed`](Stats::allowed)), [`rejected`](Stats::rejected),
    /// [`would_reject`](Stats::would_reject) (shadow mode), [`delayed`](Stats::delayed) and
    /// [`unusable`](Stats::unusable) (the limiter's own figures are its `stats()`).
    ///
    /// ```
    /// use nanolimit::http::RateLimitLayer;
    /// use nanolimit::{Gcra, Limiter};
    /// use std::sync::Arc;
    ///
    /// let layer = RateLimitLayer::direct(Arc::new(Limiter::new(Gcra::per_second(10)?)));
    /// assert_eq!(layer.stats().rejected, 0);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let counters = &self.shared.counters;
        Stats {
            allowed: counters.read(LayerEvent::Allowed),
            rejected: counters.read(LayerEvent::Rejected),
            would_reject: counters.read(LayerEvent::WouldReject),
            delayed: counters.read(LayerEvent::Delayed),
            unusable: counters.read(LayerEvent::Unusable),
            ..Stats::default()
        }
    }

    /// The limiter behind the layer.
    pub fn limiter(&self) -> &Arc<L> {
        &self.shared.limiter
    }
}

#[cfg(feature = "tokio")]
impl<L, X> RateLimitLayer<L, X, crate::quota::Gcra>
where
    L: RateLimit<X::Key, Quota = crate::quota::Gcra>,
    X: KeyExtractor,
{
    /// Delay mode (features `http` and `tokio`): a request the limit cannot admit now is
    /// booked for later with a reservation and held until its start, if that is at most
    /// `max_wait` away; otherwise it is rejected, booking nothing. Held requests pass in the
    /// order they came. A client that disconnects while held keeps its booking (the time it
    /// held is not given back).
    pub fn delay(self, max_wait: std::time::Duration) -> Self {
        fn reserve<L, K>(
            limiter: &L,
            key: &K,
            request: LimitRequest<crate::quota::Gcra>,
        ) -> Option<Result<std::time::Duration, ()>>
        where
            L: RateLimit<K, Quota = crate::quota::Gcra>,
            K: ?Sized,
        {
            let reservation = limiter.reserve_with(key, request).ok()?;
            Some(if reservation.is_allowed() {
                Ok(reservation.delay())
            } else {
                Err(())
            })
        }
        let delay = Delay {
            max_wait,
            reserve: reserve::<L, X::Key>,
        };
        self.configure(|shared| shared.delay = Some(delay))
    }
}

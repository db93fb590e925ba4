//! The response future of the layer's service: a plain enum, pinned with `pin-project-lite`
//! (the crate keeps `#![forbid(unsafe_code)]`).
//!
//! The module is private and its future is not re-exported: users cannot name it. It is a
//! concrete type rather than a boxed future because `Service::Future` must be one type, and a
//! box would cost an allocation per request.

use super::headers::is_list_field;
use crate::quota::Quota;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use http::header::{HeaderMap, HeaderName};
use http::Response;

pin_project_lite::pin_project! {
    /// The response future of a [`RateLimitService`](super::RateLimitService): the inner
    /// service's future, with the layer's headers added to its response; or the layer's own
    /// answer; or, in delay mode, a request held until its reservation starts. It resolves to
    /// the inner service's response or error.
    ///
    /// Public but in a private module, so the service can name it as its `Service::Future`
    /// while users cannot: await it, or hold it as an `impl Future`.
    pub struct ResponseFuture<F, Q, ResBody, E> {
        #[pin]
        inner: Inner<F>,
        // Whatever else the future holds (boxed: rare): headers to add to a passed request's
        // response, the layer's own answer, or a held request. Apart from the inner future,
        // so that on the plain pass path (`None`) dropping the future is dropping the inner
        // one and a null check, small enough for the compiler to inline and fold away.
        rare: Option<Box<Rare<ResBody, E>>>,
        quota: core::marker::PhantomData<fn() -> Q>,
    }
}

pin_project_lite::pin_project! {
    #[project = InnerProjection]
    enum Inner<F> {
        /// Passed on: the inner service's future.
        Passed { #[pin] future: F },
        /// Answered or held by the layer: the answer or the held request is in `rare`.
        Own,
    }
}

/// What a response future holds beside the inner service's.
enum Rare<ResBody, E> {
    /// The layer's headers, to be added to a passed request's response.
    Headers(HeaderMap),
    /// The layer's answer, until polled.
    Answered(Option<Response<ResBody>>),
    /// A held request's wait and call (built by delay mode, with `tokio`).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    Held(HeldFuture<ResBody, E>),
}

/// A held request's wait and call, boxed: delay mode's path sleeps anyway. Its outcome is
/// boxed too, so that polling it returns a pointer: an outcome returned in place, through the
/// trait object's `poll`, made the compiler give the future's output a slot of its own, and
/// move the plain pass path's response through it once more.
pub(super) type HeldFuture<ResBody, E> =
    Pin<Box<dyn Future<Output = Box<Result<Response<ResBody>, E>>> + Send>>;

impl<F, Q: Quota, ResBody, E> ResponseFuture<F, Q, ResBody, E> {
    #[inline(always)]
    pub(super) fn passed(future: F, headers: Option<HeaderMap>) -> Self {
        ResponseFuture {
            inner: Inner::Passed { future },
            rare: headers
                .filter(|headers| !headers.is_empty())
                .map(|headers| Box::new(Rare::Headers(headers))),
            quota: core::marker::PhantomData,
        }
    }

    pub(super) fn answered(response: Response<ResBody>) -> Self {
        ResponseFuture {
            inner: Inner::Own,
            rare: Some(Box::new(Rare::Answered(Some(response)))),
            quota: core::marker::PhantomData,
        }
    }

    #[cfg(feature = "tokio")]
    pub(super) fn held(future: HeldFuture<ResBody, E>) -> Self {
        ResponseFuture {
            inner: Inner::Own,
            rare: Some(Box::new(Rare::Held(future))),
            quota: core::marker::PhantomData,
        }
    }
}

impl<F, Q, ResBody, E> Future for ResponseFuture<F, Q, ResBody, E>
where
    F: Future<Output = Result<Response<ResBody>, E>>,
{
    type Output = Result<Response<ResBody>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match (this.inner.project(), this.rare) {
            // No headers to add (the common case): the inner future's poll is the answer, moved
            // once.
            (InnerProjection::Passed { future }, None) => future.poll(cx),
            (InnerProjection::Passed { future }, rare) => {
                let mut response = match future.poll(cx) {
                    Poll::Ready(result) => result?,
                    Poll::Pending => return Poll::Pending,
                };
                if let Some(Rare::Headers(headers)) = rare.take().map(|rare| *rare) {
                    merge_headers(response.headers_mut(), headers);
                }
                Poll::Ready(Ok(response))
            }
            (InnerProjection::Own, rare) => match rare.as_deref_mut() {
                Some(Rare::Held(future)) => future.as_mut().poll(cx).map(|outcome| *outcome),
                Some(Rare::Answered(response)) => {
                    Poll::Ready(Ok(response.take().expect("polled after completion")))
                }
                // An own future is built with its answer or its held request.
                Some(Rare::Headers(_)) | None => panic!("polled after completion"),
            },
        }
    }
}

/// Adds a layer's headers to a response that may carry another layer's: the IETF fields are
/// lists, so each layer's policy is appended (`"per-ip";r=9;t=1` and `"api";r=99;t=60` in one
/// response); the others are replaced.
pub(super) fn merge_headers(response: &mut HeaderMap, headers: HeaderMap) {
    let mut current: Option<HeaderName> = None;
    for (name, value) in headers {
        if let Some(name) = name {
            current = Some(name);
        }
        let Some(name) = current.as_ref() else {
            continue;
        };
        if is_list_field(name) {
            response.append(name.clone(), value);
        } else {
            response.insert(name.clone(), value);
        }
    }
}

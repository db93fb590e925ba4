//! The response future of the layer's service: a plain enum, pinned with `pin-project-lite`
//! (the crate keeps `#![forbid(unsafe_code)]`).

use super::headers::is_list_field;
use crate::quota::Quota;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use http::header::{HeaderMap, HeaderName};
use http::Response;

pin_project_lite::pin_project! {
    /// The response future of a [`RateLimitService`](super::RateLimitService).
    pub struct ResponseFuture<F, Q, ResBody, E> {
        #[pin]
        state: State<F, ResBody, E>,
        quota: core::marker::PhantomData<fn() -> Q>,
    }
}

/// A held request's wait and call, boxed: delay mode's path sleeps anyway.
pub(super) type HeldFuture<ResBody, E> =
    Pin<Box<dyn Future<Output = Result<Response<ResBody>, E>> + Send>>;

pin_project_lite::pin_project! {
    #[project = StateProjection]
    enum State<F, ResBody, E> {
        /// Passed on, nothing to add (the common case): a variant of its own, so that its poll
        /// is the inner future's, with no check of headers, and its drop a smaller match.
        Passed { #[pin] future: F },
        /// Passed on, the layer's headers (boxed: rare) to be added to the response.
        PassedWith { #[pin] future: F, headers: Option<Box<HeaderMap>> },
        Answered { response: Option<Box<Response<ResBody>>> },
        Held { future: HeldFuture<ResBody, E> },
    }
}

impl<F, Q: Quota, ResBody, E> ResponseFuture<F, Q, ResBody, E> {
    #[inline(always)]
    pub(super) fn passed(future: F, headers: Option<HeaderMap>) -> Self {
        let state = match headers.filter(|headers| !headers.is_empty()) {
            None => State::Passed { future },
            Some(headers) => State::PassedWith {
                future,
                headers: Some(Box::new(headers)),
            },
        };
        ResponseFuture {
            state,
            quota: core::marker::PhantomData,
        }
    }

    pub(super) fn answered(response: Response<ResBody>) -> Self {
        ResponseFuture {
            state: State::Answered {
                response: Some(Box::new(response)),
            },
            quota: core::marker::PhantomData,
        }
    }

    #[cfg(feature = "tokio")]
    pub(super) fn held(
        future: Pin<Box<dyn Future<Output = Result<Response<ResBody>, E>> + Send>>,
    ) -> Self {
        ResponseFuture {
            state: State::Held { future },
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
        match self.project().state.project() {
            // No headers to add (the common case): the inner future's poll is the answer, moved
            // once.
            StateProjection::Passed { future } => future.poll(cx),
            StateProjection::PassedWith { future, headers } => {
                let mut response = match future.poll(cx) {
                    Poll::Ready(result) => result?,
                    Poll::Pending => return Poll::Pending,
                };
                if let Some(headers) = headers.take() {
                    merge_headers(response.headers_mut(), *headers);
                }
                Poll::Ready(Ok(response))
            }
            StateProjection::Answered { response } => {
                Poll::Ready(Ok(*response.take().expect("polled after completion")))
            }
            StateProjection::Held { future } => future.as_mut().poll(cx),
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

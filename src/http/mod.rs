//! HTTP: a [`tower_layer::Layer`] for axum, hyper and tonic servers that answers
//! `429 Too Many Requests` with the standard headers (feature `http`).
//!
//! | part | what it is |
//! |---|---|
//! | [`RateLimitLayer`] | the layer: a direct or keyed limiter in front of a service, its modes ([`Mode`], delay) and options |
//! | [`KeyExtractor`]: [`PeerIp`], [`HeaderKey`], `()`, closures of a [`RequestHead`] | what a request is limited by; trusted proxies; IPv6 prefixes |
//! | [`Rejection`] | why the layer answered a request itself: no usable key, the limit used up... |
//! | [`HeaderOptions`] | the response headers from a [`Decision`](crate::Decision), usable without tower |
//! | [`RateLimit`](crate::RateLimit) | the limiters the layer can check |

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

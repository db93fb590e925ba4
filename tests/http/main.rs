//! The tower layer (`nanolimit::http`), one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `delay` | in delay mode, held requests reach the inner service exactly at their reservation's start; one that would wait too long is answered 429 at once, booking nothing (features `http`, `tokio`) |
//! | `proxy` | `PeerIp` behind trusted proxies: forwarding headers read only from trusted hops, the right element of a chain, RFC 7239 `Forwarded`, 400 for malformed values, IPv6 keyed by prefix (features `http`, `axum`) |
//! | `server` | in front of a real axum server and HTTP/1.1 client: statuses, every header value and its structured-field syntax, full-table, key and cost rejections, shadow mode, trusted proxies, concurrent clients (features `http`, `axum`, `tokio`) |

#[cfg(all(feature = "http", feature = "tokio"))]
mod delay;
#[cfg(all(feature = "http", feature = "axum"))]
mod proxy;
#[cfg(all(feature = "http", feature = "axum", feature = "tokio"))]
mod server;

//! What a check answers when Redis does not: the failure policy.

/// How a [`RedisLimiter`](super::RedisLimiter) decides a call that got no decision from Redis
/// within its timeout (server down, unreachable, slow, or a script error): the call returns at
/// the timeout at the latest, never panics, and returns a [`Decision`](crate::Decision) whose
/// [`is_fallback`](crate::Decision::is_fallback) is true. The limiter counts such calls
/// ([`Stats`](crate::Stats)) and keeps reconnecting in the background, so checks
/// succeed again once the server is back, without rebuilding the limiter.
///
/// A call that timed out may still have been applied by the server (the script ran, the reply
/// came late): failing closed then denies a request whose units were counted, failing open
/// admits one that was either counted or not. Neither admits more than the quota plus the
/// requests admitted while failing open.
///
/// ```
/// use nanolimit::redis::FailurePolicy;
///
/// assert_eq!(FailurePolicy::default(), FailurePolicy::Open);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FailurePolicy {
    /// Admit: availability first (a rate limit that protects a service should not take it
    /// down with the store). The decision reports what a fresh key would after the request.
    #[default]
    Open,
    /// Deny: the limit first (a quota that is a bill or an abuse limit). The decision reports
    /// nothing remaining and a retry after 1 ns (so a `Retry-After` of 1 s): the store may be
    /// back at once.
    Closed,
}

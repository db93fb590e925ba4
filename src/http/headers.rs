//! Rate-limit response headers from a [`Decision`]: one place, usable without tower.

use crate::engine::decision::Decision;
use crate::engine::error::BuildError;
use crate::quota::Quota;
use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest integer a structured field may carry (RFC 9651, 15 digits).
const MAX_STRUCTURED_INTEGER: u64 = 999_999_999_999_999;

static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
static X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
static X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
static X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// How the legacy `X-RateLimit-Reset` header counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LegacyReset {
    /// Seconds from now until the limit is whole again.
    DeltaSeconds,
    /// The Unix time, in seconds, at which the limit is whole again.
    UnixSeconds,
}

/// Which rate-limit headers a response carries, and the policy name they use.
///
/// | header | when | value |
/// |---|---|---|
/// | `RateLimit-Policy` | IETF (default on) | `"name";q=<limit>;w=<seconds>`: the limit and the window it applies over ([`Quota::limit_window`]; for GCRA, burst × emission interval) |
/// | `RateLimit` | IETF (default on) | `"name";r=<remaining>;t=<seconds>`: what remains now, and the seconds until the whole limit is back |
/// | `X-RateLimit-Limit`, `-Remaining`, `-Reset` | legacy (default off) | the limit; what remains; the reset as seconds from now ([`legacy`](Self::legacy)), or as a Unix time ([`legacy_unix_reset`](Self::legacy_unix_reset)) |
/// | `Retry-After` | every denial | seconds until the request would pass, rounded up: never 0 |
///
/// The IETF fields follow draft-ietf-httpapi-ratelimit-headers-10 (structured fields, RFC
/// 9651). Seconds are whole and rounded up, so a client that waits that long is not refused
/// for waiting too little.
///
/// ```
/// use nanolimit::http::HeaderOptions;
/// use nanolimit::{Gcra, Limiter, ManualClock};
///
/// let limiter = Limiter::with_clock(Gcra::per_minute(60)?, ManualClock::new());
/// let headers = HeaderOptions::new("per-ip")?.to_header_map(&limiter.check());
/// assert_eq!(headers["ratelimit-policy"], r#""per-ip";q=60;w=60"#);
/// assert_eq!(headers["ratelimit"], r#""per-ip";r=59;t=1"#);
/// assert!(headers.get("retry-after").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderOptions {
    /// The policy name as a structured-field string, quotes and escapes included.
    quoted_policy: String,
    ietf: bool,
    legacy: Option<LegacyReset>,
}

impl HeaderOptions {
    /// The IETF headers under the policy name `policy` (non-empty printable ASCII; quotes and
    /// backslashes are escaped), and no legacy headers; any other name is
    /// [`BuildError::InvalidPolicyName`].
    ///
    /// ```
    /// use nanolimit::http::HeaderOptions;
    /// use nanolimit::BuildError;
    ///
    /// assert!(HeaderOptions::new(r#"per-ip "v2""#).is_ok());
    /// assert_eq!(
    ///     HeaderOptions::new("per-ip\n").err(),
    ///     Some(BuildError::InvalidPolicyName { name: "per-ip\n".to_owned() })
    /// );
    /// ```
    pub fn new(policy: &str) -> Result<Self, BuildError> {
        if policy.is_empty() || !policy.bytes().all(|byte| (0x20..=0x7e).contains(&byte)) {
            return Err(BuildError::InvalidPolicyName {
                name: policy.to_owned(),
            });
        }
        let mut quoted_policy = String::with_capacity(policy.len() + 2);
        quoted_policy.push('"');
        for character in policy.chars() {
            if character == '"' || character == '\\' {
                quoted_policy.push('\\');
            }
            quoted_policy.push(character);
        }
        quoted_policy.push('"');
        Ok(HeaderOptions {
            quoted_policy,
            ietf: true,
            legacy: None,
        })
    }

    /// Whether to write the IETF `RateLimit-Policy` and `RateLimit` headers (default: yes).
    pub fn ietf(mut self, on: bool) -> Self {
        self.ietf = on;
        self
    }

    /// Also write the legacy `X-RateLimit-*` headers, with the reset counted in seconds from
    /// now (default: no legacy headers).
    ///
    /// ```
    /// use nanolimit::http::HeaderOptions;
    /// use nanolimit::{FixedWindow, Limiter, ManualClock};
    ///
    /// let limiter = Limiter::with_clock(FixedWindow::per_second(2)?, ManualClock::new());
    /// let options = HeaderOptions::new("api")?.ietf(false).legacy();
    /// let _ = limiter.check();
    /// let _ = limiter.check();
    /// let headers = options.to_header_map(&limiter.check());
    /// assert_eq!(headers["x-ratelimit-limit"], "2");
    /// assert_eq!(headers["x-ratelimit-remaining"], "0");
    /// assert_eq!(headers["x-ratelimit-reset"], "1");
    /// assert_eq!(headers["retry-after"], "1");
    /// assert!(headers.get("ratelimit").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn legacy(mut self) -> Self {
        self.legacy = Some(LegacyReset::DeltaSeconds);
        self
    }

    /// Also write the legacy `X-RateLimit-*` headers, with the reset as the Unix time, in
    /// seconds, at which the limit is whole again, as GitHub's API does (default: no legacy
    /// headers).
    ///
    /// ```
    /// use nanolimit::http::HeaderOptions;
    /// use nanolimit::{FixedWindow, Limiter, ManualClock};
    /// use std::time::{SystemTime, UNIX_EPOCH};
    ///
    /// let limiter = Limiter::with_clock(FixedWindow::per_minute(10)?, ManualClock::new());
    /// let options = HeaderOptions::new("api")?.legacy_unix_reset();
    /// let before_seconds = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    /// let headers = options.to_header_map(&limiter.check());
    /// let reset_seconds: u64 = headers["x-ratelimit-reset"].to_str()?.parse()?;
    /// // The window ends a minute from now.
    /// assert!(reset_seconds >= before_seconds + 60 && reset_seconds <= before_seconds + 62);
    /// assert!(headers.get("ratelimit").is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn legacy_unix_reset(mut self) -> Self {
        self.legacy = Some(LegacyReset::UnixSeconds);
        self
    }

    /// The headers for `decision`, in a new map.
    pub fn to_header_map<Q: Quota>(&self, decision: &Decision<Q>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        self.write(decision, &mut headers);
        headers
    }

    /// Writes the headers for `decision` into `headers`, replacing any of the same names:
    /// the rate-limit headers, and `Retry-After` if it was denied.
    pub fn write<Q: Quota>(&self, decision: &Decision<Q>, headers: &mut HeaderMap) {
        self.write_limits(decision, headers);
        if decision.is_denied() {
            // A denial's wait is positive (a refused new key's at least 1 ns): at least 1 s.
            let retry_after_seconds = ceil_seconds(decision.retry_after()).max(1);
            headers.insert(RETRY_AFTER, HeaderValue::from(retry_after_seconds));
        }
    }

    /// Writes the rate-limit headers for `decision` (what remains, the reset), but no
    /// `Retry-After`: for a response that is not a rejection.
    pub fn write_limits<Q: Quota>(&self, decision: &Decision<Q>, headers: &mut HeaderMap) {
        let limit = decision.limit().min(MAX_STRUCTURED_INTEGER);
        let remaining = decision.remaining().min(MAX_STRUCTURED_INTEGER);
        let reset_seconds = ceil_seconds(decision.reset_after());
        if self.ietf {
            let window_seconds = ceil_seconds(decision.quota().limit_window());
            let policy = format!("{};q={limit};w={window_seconds}", self.quoted_policy);
            headers.insert(RATELIMIT_POLICY.clone(), value(policy));
            let current = format!("{};r={remaining};t={reset_seconds}", self.quoted_policy);
            headers.insert(RATELIMIT.clone(), value(current));
        }
        if let Some(reset) = self.legacy {
            headers.insert(X_RATELIMIT_LIMIT.clone(), HeaderValue::from(limit));
            headers.insert(X_RATELIMIT_REMAINING.clone(), HeaderValue::from(remaining));
            let reset_value = match reset {
                LegacyReset::DeltaSeconds => reset_seconds,
                LegacyReset::UnixSeconds => {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or(Duration::ZERO);
                    ceil_seconds(now + decision.reset_after())
                }
            };
            headers.insert(X_RATELIMIT_RESET.clone(), HeaderValue::from(reset_value));
        }
    }
}

/// Whole seconds, rounded up, within a structured-field integer.
fn ceil_seconds(duration: Duration) -> u64 {
    let seconds = duration.as_nanos().div_ceil(1_000_000_000);
    u64::try_from(seconds)
        .unwrap_or(u64::MAX)
        .min(MAX_STRUCTURED_INTEGER)
}

/// A header value of printable ASCII (policy names are checked when the options are made).
fn value(text: String) -> HeaderValue {
    HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Whether `name` is one of the IETF list fields, which several policies (stacked layers)
/// share by appending.
pub(super) fn is_list_field(name: &HeaderName) -> bool {
    name == RATELIMIT || name == RATELIMIT_POLICY
}

//! What a request is limited by: its client's address, a header, one global key (`()`), or a
//! closure.

use super::rejection::Rejection;
use crate::engine::error::BuildError;
use http::header::{HeaderName, FORWARDED};
use http::Request;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Finds the key a request is limited by, and hands it to the limiter.
///
/// The key is lent to `judge` rather than returned, so an extractor can lend a slice of the
/// request (a header's bytes) without copying it.
///
/// | extractor | key | for |
/// |---|---|---|
/// | [`PeerIp`] | [`IpAddr`] | the client's address, behind trusted proxies or not |
/// | [`HeaderKey`] | `[u8]` | one header's value: an API key, a user id |
/// | `()` | `()` | one key for every request (what [`RateLimitLayer::direct`](super::RateLimitLayer::direct) uses) |
/// | a closure `Fn(&RequestHead<'_>) -> Result<K, Rejection>` (and `Clone + Send + Sync + 'static`) | `K` | anything in the request's head |
///
/// ```
/// use nanolimit::http::{KeyExtractor, RateLimitLayer, RequestHead, Rejection};
/// use nanolimit::{Gcra, KeyedLimiter};
/// use std::sync::Arc;
///
/// // The first path segment: per-tenant limits for /tenant/...
/// let tenant = |head: &RequestHead<'_>| {
///     let segment = head.uri.path().split('/').nth(1).filter(|segment| !segment.is_empty());
///     segment.map(str::to_owned).ok_or(Rejection::KeyMissing)
/// };
/// let request = http::Request::get("/acme/orders").body(())?;
/// assert_eq!(tenant.with_key(&request, |key: &String| key.clone())?, "acme");
/// let root = http::Request::get("/").body(())?;
/// assert_eq!(tenant.with_key(&root, |key: &String| key.clone()), Err(Rejection::KeyMissing));
///
/// let per_tenant = KeyedLimiter::<String, _>::new(Gcra::per_second(100)?, 10_000)?;
/// let layer = RateLimitLayer::keyed(Arc::new(per_tenant), tenant);
/// # let _ = layer;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait KeyExtractor: Clone + Send + Sync + 'static {
    /// The key type (`?Sized`: a header's value is a `[u8]`).
    type Key: ?Sized;

    /// Calls `judge` with the key of `request`, or says why the request has none.
    fn with_key<B, R>(
        &self,
        request: &Request<B>,
        judge: impl FnOnce(&Self::Key) -> R,
    ) -> Result<R, Rejection>;
}

/// Which header trusted proxies record the client's address in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ForwardingHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2`.
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239).
    Forwarded,
}

/// The longest forwarding header read, in bytes (all its fields together); longer ones are
/// [`Rejection::KeyTooLong`].
///
/// ```
/// use nanolimit::http::{PeerIp, Rejection, MAX_FORWARDING_HEADER_BYTES};
/// use std::net::SocketAddr;
///
/// let behind_one_proxy = PeerIp::new().trusted_proxies_x_forwarded_for(1);
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(SocketAddr::from(([10, 0, 0, 1], 443)));
/// let chain = vec!["192.0.2.1"; MAX_FORWARDING_HEADER_BYTES / 10 + 1].join(",");
/// request.headers_mut().insert("x-forwarded-for", chain.parse()?);
/// assert_eq!(behind_one_proxy.client_ip(&request), Err(Rejection::KeyTooLong));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_FORWARDING_HEADER_BYTES: usize = 8 * 1024;

/// The bits of an IPv6 address: the longest prefix clients can be keyed by.
const IPV6_ADDRESS_BITS: u8 = 128;

/// Keys requests by the client's IP address.
///
/// The address is the connection's peer, found in the request's extensions: a
/// [`SocketAddr`] or [`IpAddr`] the server put there (hyper servers insert what they choose),
/// or, with the `axum` feature, axum's `ConnectInfo<SocketAddr>`
/// (`into_make_service_with_connect_info::<SocketAddr>()`).
///
/// Behind reverse proxies, [`trusted_proxies_x_forwarded_for`](Self::trusted_proxies_x_forwarded_for)
/// or [`trusted_proxies_forwarded`](Self::trusted_proxies_forwarded) says how many there are
/// and which header they append to: the client is then the address that many entries from the
/// end of that header, the one the outermost trusted proxy saw. Never by default: a client
/// must not choose its own key. A forwarding header that cannot be read, or names fewer
/// addresses than there are trusted proxies, is [`Rejection::KeyMalformed`].
///
/// IPv6 clients are keyed by their network prefix, a /64 by default (one client usually owns
/// a whole /64, and could otherwise take 2^64 keys): [`ipv6_prefix`](Self::ipv6_prefix).
///
/// ```
/// use nanolimit::http::{KeyExtractor, PeerIp};
/// use std::net::{IpAddr, SocketAddr};
///
/// let behind_one_proxy = PeerIp::new().trusted_proxies_x_forwarded_for(1);
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(SocketAddr::from(([10, 0, 0, 1], 443))); // the proxy
/// request.headers_mut().insert("x-forwarded-for", "198.51.100.7, 203.0.113.9".parse()?);
/// // The proxy appended the address it saw: 203.0.113.9. The first entry is the client's
/// // own claim, which nobody checked.
/// let key = behind_one_proxy.with_key(&request, |ip: &IpAddr| *ip)?;
/// assert_eq!(key, "203.0.113.9".parse::<IpAddr>()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerIp {
    trusted_proxies: usize,
    header: ForwardingHeader,
    ipv6_prefix_bits: u8,
}

impl Default for PeerIp {
    fn default() -> Self {
        PeerIp::new()
    }
}

impl PeerIp {
    /// The connection's peer address, no proxies trusted, IPv6 clients keyed by /64.
    pub const fn new() -> Self {
        PeerIp {
            trusted_proxies: 0,
            header: ForwardingHeader::XForwardedFor,
            ipv6_prefix_bits: 64,
        }
    }

    /// Trusts `hops` reverse proxies in front of the server, which append the address they
    /// saw to `X-Forwarded-For: client, proxy1, proxy2`; zero ignores forwarding headers (the
    /// default).
    pub const fn trusted_proxies_x_forwarded_for(mut self, hops: usize) -> Self {
        self.trusted_proxies = hops;
        self.header = ForwardingHeader::XForwardedFor;
        self
    }

    /// Trusts `hops` reverse proxies in front of the server, which append the address they
    /// saw to RFC 7239's `Forwarded: for=client, for=proxy1`; zero ignores forwarding headers
    /// (the default).
    ///
    /// ```
    /// use nanolimit::http::PeerIp;
    /// use std::net::{IpAddr, SocketAddr};
    ///
    /// let behind_one_proxy = PeerIp::new().trusted_proxies_forwarded(1);
    /// let mut request = http::Request::new(());
    /// request.extensions_mut().insert(SocketAddr::from(([10, 0, 0, 1], 443))); // the proxy
    /// request.headers_mut().insert("forwarded", r#"for="[2001:db8:cafe::17]:4711""#.parse()?);
    /// // IPv6 clients are keyed by their /64.
    /// let client: IpAddr = "2001:db8:cafe::".parse()?;
    /// assert_eq!(behind_one_proxy.client_ip(&request), Ok(client));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn trusted_proxies_forwarded(mut self, hops: usize) -> Self {
        self.trusted_proxies = hops;
        self.header = ForwardingHeader::Forwarded;
        self
    }

    /// Keys IPv6 clients by their first `bits` bits (128: the whole address); a longer prefix
    /// is [`BuildError::InvalidPrefixLength`].
    ///
    /// ```
    /// use nanolimit::http::PeerIp;
    /// use nanolimit::BuildError;
    ///
    /// assert!(PeerIp::new().ipv6_prefix(48).is_ok());
    /// assert_eq!(
    ///     PeerIp::new().ipv6_prefix(129).err(),
    ///     Some(BuildError::InvalidPrefixLength { bits: 129, max: 128 })
    /// );
    /// ```
    pub const fn ipv6_prefix(mut self, bits: u8) -> Result<Self, BuildError> {
        if bits > IPV6_ADDRESS_BITS {
            return Err(BuildError::InvalidPrefixLength {
                bits,
                max: IPV6_ADDRESS_BITS,
            });
        }
        self.ipv6_prefix_bits = bits;
        Ok(self)
    }

    /// The client address of `request`, masked to the IPv6 prefix.
    #[inline(always)]
    pub fn client_ip<B>(&self, request: &Request<B>) -> Result<IpAddr, Rejection> {
        let client = if self.trusted_proxies == 0 {
            peer_address(request).ok_or(Rejection::KeyMissing)?
        } else {
            self.forwarded_client(request)?
        };
        Ok(self.masked(client))
    }

    #[inline]
    fn masked(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let bits = u32::from(self.ipv6_prefix_bits);
                    let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                    IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
                }
            },
        }
    }

    /// The address `self.trusted_proxies` entries from the end of the forwarding header (cold:
    /// most servers trust no proxy, and the peer's address is the fast path).
    #[cold]
    #[inline(never)]
    fn forwarded_client<B>(&self, request: &Request<B>) -> Result<IpAddr, Rejection> {
        let name = match self.header {
            ForwardingHeader::XForwardedFor => HeaderName::from_static("x-forwarded-for"),
            ForwardingHeader::Forwarded => FORWARDED,
        };
        let mut total_bytes = 0;
        // Every element the proxies appended, in order, over all fields of the header. Only
        // the client's is parsed: elements further left were written by proxies (or clients)
        // nobody trusts, and may be anything (`unknown`, an obfuscated `_hidden`).
        let mut chain = Vec::new();
        for field in request.headers().get_all(&name) {
            total_bytes += field.len();
            if total_bytes > MAX_FORWARDING_HEADER_BYTES {
                return Err(Rejection::KeyTooLong);
            }
            let text = field.to_str().map_err(|_| Rejection::KeyMalformed)?;
            chain.extend(text.split(','));
        }
        if chain.is_empty() {
            return Err(Rejection::KeyMissing);
        }
        let index = chain
            .len()
            .checked_sub(self.trusted_proxies)
            .ok_or(Rejection::KeyMalformed)?;
        let client = match self.header {
            ForwardingHeader::XForwardedFor => parse_address(chain[index].trim()),
            ForwardingHeader::Forwarded => forwarded_for(chain[index]),
        };
        client.ok_or(Rejection::KeyMalformed)
    }
}

impl KeyExtractor for PeerIp {
    type Key = IpAddr;

    #[inline]
    fn with_key<B, R>(
        &self,
        request: &Request<B>,
        judge: impl FnOnce(&IpAddr) -> R,
    ) -> Result<R, Rejection> {
        // `client_ip`'s steps, with a direct IPv4 peer (the common case) judged here and every
        // other case out of line: with both judged here, the compiler kept `judge` (the whole
        // check) out of line, and with the two families merged into one value before a single
        // call, it rebuilt the IPv4 key in memory byte by byte.
        if self.trusted_proxies == 0 {
            if let Some(IpAddr::V4(v4)) = peer_address(request) {
                return Ok(judge(&IpAddr::V4(v4)));
            }
        }
        self.with_other_key(request, judge)
    }
}

impl PeerIp {
    /// [`with_key`](KeyExtractor::with_key) for every request but one from a direct IPv4
    /// peer.
    #[inline(never)]
    fn with_other_key<B, R>(
        &self,
        request: &Request<B>,
        judge: impl FnOnce(&IpAddr) -> R,
    ) -> Result<R, Rejection> {
        Ok(judge(&self.client_ip(request)?))
    }
}

/// The peer address the server recorded in the request's extensions.
#[inline(always)]
fn peer_address<B>(request: &Request<B>) -> Option<IpAddr> {
    let extensions = request.extensions();
    #[cfg(feature = "axum")]
    if let Some(info) = extensions.get::<axum::extract::ConnectInfo<SocketAddr>>() {
        return Some(info.0.ip());
    }
    if let Some(address) = extensions.get::<SocketAddr>() {
        return Some(address.ip());
    }
    extensions.get::<IpAddr>().copied()
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:8080`, `2001:db8::1`,
/// `[2001:db8::1]:8080`.
fn parse_address(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(socket) = text.parse::<SocketAddr>() {
        return Some(socket.ip());
    }
    let bracketed = text.strip_prefix('[')?.strip_suffix(']')?;
    bracketed.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

/// The `for=` address of one RFC 7239 `Forwarded` element (`for=192.0.2.60;proto=http`,
/// `for="[2001:db8:cafe::17]:4711"`). Obfuscated and `unknown` identifiers are no address.
fn forwarded_for(element: &str) -> Option<IpAddr> {
    let value = element.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("for")
            .then_some(value.trim())
    })?;
    let unquoted = match value.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"')?,
        None => value,
    };
    parse_address(unquoted)
}

/// Keys requests by the value of one header (an API key, a user id), as bytes.
///
/// A request without the header is [`Rejection::KeyMissing`]; one whose value is longer than
/// the maximum (256 bytes by default) is [`Rejection::KeyTooLong`].
///
/// ```
/// use nanolimit::http::{HeaderKey, KeyExtractor, Rejection};
///
/// let api_key = HeaderKey::new(http::header::HeaderName::from_static("x-api-key"));
/// let mut request = http::Request::new(());
/// assert_eq!(api_key.with_key(&request, |key: &[u8]| key.len()), Err(Rejection::KeyMissing));
/// request.headers_mut().insert("x-api-key", "k-123".parse()?);
/// assert_eq!(api_key.with_key(&request, |key: &[u8]| key.to_vec())?, b"k-123");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderKey {
    name: HeaderName,
    max_bytes: usize,
}

impl HeaderKey {
    /// Keys by the header `name`.
    pub fn new(name: HeaderName) -> Self {
        HeaderKey {
            name,
            max_bytes: 256,
        }
    }

    /// Keys by the header named `name` (any case), or says why `name` is not a header name.
    ///
    /// ```
    /// use nanolimit::http::HeaderKey;
    ///
    /// assert!(HeaderKey::named("x-api-key").is_ok());
    /// assert!(HeaderKey::named("not a header").is_err());
    /// ```
    pub fn named(name: &str) -> Result<Self, http::header::InvalidHeaderName> {
        Ok(HeaderKey::new(HeaderName::from_bytes(name.as_bytes())?))
    }

    /// Rejects values longer than `max_bytes`.
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

impl KeyExtractor for HeaderKey {
    type Key = [u8];

    fn with_key<B, R>(
        &self,
        request: &Request<B>,
        judge: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Rejection> {
        let value = request
            .headers()
            .get(&self.name)
            .ok_or(Rejection::KeyMissing)?;
        if value.len() > self.max_bytes {
            return Err(Rejection::KeyTooLong);
        }
        Ok(judge(value.as_bytes()))
    }
}

/// One key for every request: for a direct [`Limiter`](crate::Limiter) (which ignores keys),
/// or a keyed one shared with other layers.
impl KeyExtractor for () {
    type Key = ();

    #[inline]
    fn with_key<B, R>(
        &self,
        _request: &Request<B>,
        judge: impl FnOnce(&()) -> R,
    ) -> Result<R, Rejection> {
        Ok(judge(&()))
    }
}

/// Keys requests by what a closure returns from the request's head (method, URI, headers,
/// extensions), or by the [`Rejection`] it returns, for instance
/// [`Rejection::KeyMissing`].
impl<K, F> KeyExtractor for F
where
    F: Fn(&RequestHead<'_>) -> Result<K, Rejection> + Clone + Send + Sync + 'static,
{
    type Key = K;

    fn with_key<B, R>(
        &self,
        request: &Request<B>,
        judge: impl FnOnce(&K) -> R,
    ) -> Result<R, Rejection> {
        let key = self(&RequestHead::of(request))?;
        Ok(judge(&key))
    }
}

/// What closures see of a request (its head, not its body), whatever the body type: the
/// closures that key requests ([`KeyExtractor`]), cost them
/// ([`RateLimitLayer::cost`](super::RateLimitLayer::cost)) and pick their tier
/// ([`RateLimitLayer::tier`](super::RateLimitLayer::tier)).
///
/// ```
/// use nanolimit::http::RequestHead;
///
/// let weight = |head: &RequestHead<'_>| if head.method == http::Method::POST { 5 } else { 1 };
/// let request = http::Request::post("/orders").body(())?;
/// assert_eq!(weight(&RequestHead::of(&request)), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RequestHead<'request> {
    /// The method.
    pub method: &'request http::Method,
    /// The URI.
    pub uri: &'request http::Uri,
    /// The headers.
    pub headers: &'request http::HeaderMap,
    /// The extensions (the peer address, authentication results...).
    pub extensions: &'request http::Extensions,
}

impl<'request> RequestHead<'request> {
    /// The head of `request`.
    pub fn of<B>(request: &'request Request<B>) -> Self {
        RequestHead {
            method: request.method(),
            uri: request.uri(),
            headers: request.headers(),
            extensions: request.extensions(),
        }
    }
}

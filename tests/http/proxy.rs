//! `PeerIp` behind trusted proxies, in process (`tower::ServiceExt::oneshot`, no network):
//! forwarding headers are read only with trusted hops, the right element of a longer chain is
//! the client, RFC 7239 `Forwarded` with quoted IPv6 and ports, malformed and oversized values
//! answer 400 (never a panic), and IPv6 clients are keyed by prefix.

use axum::extract::ConnectInfo;
use axum::http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use nanolimit::http::{
    KeyExtractor, PeerIp, RateLimitLayer, Rejection, MAX_FORWARDING_HEADER_BYTES,
};
use nanolimit::{BuildError, Gcra, KeyedLimiter, ManualClock};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tower::{service_fn, Layer, ServiceExt};

type TestResult = Result<(), Box<dyn std::error::Error>>;
type IpLayer = RateLimitLayer<KeyedLimiter<IpAddr, Gcra, ManualClock>, PeerIp, Gcra>;

const XFF: &str = "x-forwarded-for";
const FORWARDED: &str = "forwarded";

fn ip(text: &str) -> IpAddr {
    text.parse()
        .unwrap_or_else(|_| panic!("{text} is an address"))
}

/// A request from the peer `peer` (as a hyper server records it), with `headers`.
fn request(peer: Option<&str>, headers: &[(&str, &str)]) -> Request<()> {
    let mut request = Request::new(());
    if let Some(peer) = peer {
        request
            .extensions_mut()
            .insert(SocketAddr::new(ip(peer), 40_000));
    }
    for (name, value) in headers {
        request.headers_mut().append(
            HeaderName::from_bytes(name.as_bytes()).expect("a valid header name"),
            HeaderValue::from_str(value).expect("a valid header value"),
        );
    }
    request
}

/// A layer over a per-IP limit of `per_minute`, frozen in time, with `extractor`.
fn layer(per_minute: u64, extractor: PeerIp) -> IpLayer {
    let limiter = KeyedLimiter::<IpAddr, _>::builder(Gcra::per_minute(per_minute).expect("quota"))
        .capacity(1_024)
        .clock(ManualClock::new())
        .build()
        .expect("a table");
    RateLimitLayer::keyed(Arc::new(limiter), extractor)
}

/// The status `layer` answers `request` with (200 from the inner service).
async fn status(layer: &IpLayer, request: Request<()>) -> StatusCode {
    let inner = service_fn(|_: Request<()>| async {
        Ok::<_, Infallible>(Response::new(String::from("ok")))
    });
    layer
        .layer(inner)
        .oneshot(request)
        .await
        .expect("infallible")
        .status()
}

/// Behind `hops` trusted proxies that append to `X-Forwarded-For`, whole IPv6 addresses.
fn behind_x_forwarded_for(hops: usize) -> PeerIp {
    PeerIp::new()
        .trusted_proxies_x_forwarded_for(hops)
        .ipv6_prefix(128)
        .expect("a prefix")
}

/// Behind `hops` trusted proxies that append to `Forwarded`, whole IPv6 addresses.
fn behind_forwarded(hops: usize) -> PeerIp {
    PeerIp::new()
        .trusted_proxies_forwarded(hops)
        .ipv6_prefix(128)
        .expect("a prefix")
}

/// No trusted proxies (the default): the peer is the client, whatever `X-Forwarded-For` or
/// `Forwarded` claim; they are not even parsed.
#[tokio::test]
async fn spoofed_forwarding_headers_are_ignored_without_trusted_proxies() -> TestResult {
    let extractor = PeerIp::new();
    for headers in [
        &[(XFF, "203.0.113.1")][..],
        &[(FORWARDED, "for=203.0.113.2")],
        &[(XFF, "garbage"), (FORWARDED, "for=unknown")],
        &[(XFF, &"9".repeat(MAX_FORWARDING_HEADER_BYTES + 1))],
    ] {
        let spoofed = request(Some("192.0.2.10"), headers);
        assert_eq!(extractor.client_ip(&spoofed), Ok(ip("192.0.2.10")));
    }

    // Through the layer, 1 a minute: the second request, claiming another address, is the
    // same client's.
    let layer = layer(1, PeerIp::new());
    let first = request(Some("192.0.2.10"), &[(XFF, "203.0.113.1")]);
    assert_eq!(status(&layer, first).await, StatusCode::OK);
    let second = request(Some("192.0.2.10"), &[(XFF, "203.0.113.2")]);
    assert_eq!(status(&layer, second).await, StatusCode::TOO_MANY_REQUESTS);
    let garbage = request(Some("192.0.2.10"), &[(XFF, "not an address")]);
    assert_eq!(status(&layer, garbage).await, StatusCode::TOO_MANY_REQUESTS);
    let other_peer = request(Some("192.0.2.11"), &[(XFF, "203.0.113.1")]);
    assert_eq!(status(&layer, other_peer).await, StatusCode::OK);
    Ok(())
}

/// The peer address in each form a server may record it; none is a 400.
#[tokio::test]
async fn peer_address_from_the_server_extensions() -> TestResult {
    let extractor = PeerIp::new();
    let mut axum_info = Request::new(());
    axum_info
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([198, 51, 100, 3], 5_000))));
    assert_eq!(extractor.client_ip(&axum_info), Ok(ip("198.51.100.3")));
    let mut bare_ip = Request::new(());
    bare_ip.extensions_mut().insert(ip("198.51.100.4"));
    assert_eq!(extractor.client_ip(&bare_ip), Ok(ip("198.51.100.4")));
    assert_eq!(
        extractor.client_ip(&request(Some("198.51.100.5"), &[])),
        Ok(ip("198.51.100.5"))
    );

    let nowhere = request(None, &[]);
    assert_eq!(extractor.client_ip(&nowhere), Err(Rejection::KeyMissing));
    let layer = layer(10, PeerIp::new());
    assert_eq!(status(&layer, nowhere).await, StatusCode::BAD_REQUEST);
    assert_eq!(layer.stats().unusable, 1);
    Ok(())
}

/// A chain longer than the trusted hops: the client is the element that many from the end
/// (the address the outermost trusted proxy saw), over all fields of the header.
#[tokio::test]
async fn longer_chain_takes_the_element_hops_from_the_end() -> TestResult {
    let chain = "198.51.100.1, 198.51.100.2,203.0.113.9";
    let one_field = [(XFF, chain)];
    let split = [(XFF, "198.51.100.1, 198.51.100.2"), (XFF, " 203.0.113.9 ")];
    for headers in [&one_field[..], &split[..]] {
        // The peer (the innermost proxy) does not matter once proxies are trusted.
        for peer in [Some("10.0.0.1"), None] {
            let request = request(peer, headers);
            for (hops, expected) in [(1, "203.0.113.9"), (2, "198.51.100.2"), (3, "198.51.100.1")] {
                let extractor = behind_x_forwarded_for(hops);
                assert_eq!(
                    extractor.client_ip(&request),
                    Ok(ip(expected)),
                    "{hops} hops"
                );
            }
            let too_many = behind_x_forwarded_for(4);
            assert_eq!(too_many.client_ip(&request), Err(Rejection::KeyMalformed));
        }
    }

    // Proxies write ports and brackets too.
    let with_ports = request(None, &[(XFF, "[2001:db8::1]:8080, 192.0.2.7:443")]);
    let hops_2 = behind_x_forwarded_for(2);
    assert_eq!(hops_2.client_ip(&with_ports), Ok(ip("2001:db8::1")));
    let hops_1 = behind_x_forwarded_for(1);
    assert_eq!(hops_1.client_ip(&with_ports), Ok(ip("192.0.2.7")));
    let bracketed = request(None, &[(XFF, "[2001:db8::2]")]);
    assert_eq!(hops_1.client_ip(&bracketed), Ok(ip("2001:db8::2")));

    // Through the layer, two hops, 1 a minute: the client is the second-to-last element.
    let layer = layer(1, PeerIp::new().trusted_proxies_x_forwarded_for(2));
    let cases = [
        ("203.0.113.5, 10.0.0.2", StatusCode::OK),
        (
            "192.0.2.99, 203.0.113.5, 10.0.0.3",
            StatusCode::TOO_MANY_REQUESTS,
        ),
        ("203.0.113.6, 10.0.0.2", StatusCode::OK),
        ("10.0.0.2", StatusCode::BAD_REQUEST),
    ];
    for (chain, expected) in cases {
        let request = request(Some("10.0.0.1"), &[(XFF, chain)]);
        assert_eq!(status(&layer, request).await, expected, "{chain}");
    }
    Ok(())
}

/// RFC 7239 `Forwarded`: `for=` in any position and case, quoted IPv6 with a port, several
/// elements and fields.
#[tokio::test]
async fn rfc_7239_forwarded() -> TestResult {
    let hops_1 = behind_forwarded(1);
    let hops_2 = behind_forwarded(2);
    let cases = [
        ("for=192.0.2.60;proto=http;by=203.0.113.43", "192.0.2.60"),
        ("For=\"[2001:db8:cafe::17]:4711\"", "2001:db8:cafe::17"),
        ("for=\"[2001:db8:cafe::17]\"", "2001:db8:cafe::17"),
        ("proto=https; FOR=\"192.0.2.43:47011\"", "192.0.2.43"),
        ("for=192.0.2.43, for=198.51.100.17", "198.51.100.17"),
    ];
    for (value, expected) in cases {
        let request = request(Some("10.0.0.1"), &[(FORWARDED, value)]);
        assert_eq!(hops_1.client_ip(&request), Ok(ip(expected)), "{value}");
    }

    let chain = request(
        None,
        &[
            (FORWARDED, "for=192.0.2.43;proto=https"),
            (FORWARDED, "for=\"[2001:db8:cafe::17]:4711\";by=_proxy1"),
        ],
    );
    assert_eq!(hops_1.client_ip(&chain), Ok(ip("2001:db8:cafe::17")));
    assert_eq!(hops_2.client_ip(&chain), Ok(ip("192.0.2.43")));

    // With the default /64, the quoted IPv6 client is keyed by its prefix.
    let default_prefix = PeerIp::new().trusted_proxies_forwarded(1);
    assert_eq!(default_prefix.client_ip(&chain), Ok(ip("2001:db8:cafe::")));

    // Trusting `Forwarded` does not read `X-Forwarded-For`.
    let only_xff = request(Some("10.0.0.1"), &[(XFF, "192.0.2.1")]);
    assert_eq!(hops_1.client_ip(&only_xff), Err(Rejection::KeyMissing));
    Ok(())
}

/// Malformed forwarding values are a 400 through the layer, never a panic: garbage,
/// `unknown`, obfuscated identifiers, no `for=`, bad quoting, too few elements, bytes that are
/// not text, and fields over 8 KiB in all.
#[tokio::test]
async fn malformed_forwarding_values_answer_400() -> TestResult {
    let xff = PeerIp::new().trusted_proxies_x_forwarded_for(1);
    let forwarded = PeerIp::new().trusted_proxies_forwarded(1);
    let two_hops = PeerIp::new().trusted_proxies_x_forwarded_for(2);
    let malformed = [
        (xff, XFF, "garbage"),
        (xff, XFF, "unknown"),
        (xff, XFF, ""),
        (xff, XFF, "192.0.2.1,"),
        (xff, XFF, "192.0.2.1 192.0.2.2"),
        (xff, XFF, "256.0.0.1"),
        (xff, XFF, "fe80::1%eth0"),
        (xff, XFF, "[2001:db8::1"),
        (xff, XFF, "192.0.2.1:99999"),
        (two_hops, XFF, "192.0.2.1"),
        (forwarded, FORWARDED, "for=unknown"),
        (forwarded, FORWARDED, "for=_hidden"),
        (forwarded, FORWARDED, "for=\"_SEVKISEK\""),
        (forwarded, FORWARDED, "proto=https;by=203.0.113.43"),
        (forwarded, FORWARDED, "for="),
        (forwarded, FORWARDED, "for=\"192.0.2.1"),
        (forwarded, FORWARDED, "192.0.2.1"),
        (forwarded, FORWARDED, "for=192.0.2.1:80:80"),
    ];
    for (extractor, name, value) in malformed {
        let request = request(Some("10.0.0.1"), &[(name, value)]);
        assert_eq!(
            extractor.client_ip(&request),
            Err(Rejection::KeyMalformed),
            "{name}: {value:?}"
        );
        let layer = layer(10, extractor);
        assert_eq!(
            status(&layer, request).await,
            StatusCode::BAD_REQUEST,
            "{name}: {value:?}"
        );
        assert_eq!(layer.stats().unusable, 1);
    }

    // A value that is not text (obs-text bytes).
    let mut opaque = request(Some("10.0.0.1"), &[]);
    opaque
        .headers_mut()
        .insert(XFF, HeaderValue::from_bytes(b"192.0.2.1\xff")?);
    assert_eq!(xff.client_ip(&opaque), Err(Rejection::KeyMalformed));
    assert_eq!(
        status(&layer(10, xff), opaque).await,
        StatusCode::BAD_REQUEST
    );

    // Missing where the trusted proxy must have written it.
    let missing = request(Some("10.0.0.1"), &[]);
    assert_eq!(xff.client_ip(&missing), Err(Rejection::KeyMissing));
    assert_eq!(
        status(&layer(10, xff), missing).await,
        StatusCode::BAD_REQUEST
    );
    Ok(())
}

/// `count` copies of `element`, comma-separated, padded with spaces to exactly `bytes`.
fn chain_of_exactly(bytes: usize, element: &str) -> String {
    let mut chain = String::new();
    while chain.len() + 2 * (element.len() + 1) <= bytes {
        chain.push_str(element);
        chain.push(',');
    }
    chain.push_str(&" ".repeat(bytes - chain.len() - element.len()));
    chain.push_str(element);
    assert_eq!(chain.len(), bytes);
    chain
}

/// Forwarding fields up to 8 KiB in all are read; a byte more, in one field or over several,
/// is `TooLong` and a 400.
#[tokio::test]
async fn oversized_forwarding_header_is_400() -> TestResult {
    let xff = PeerIp::new().trusted_proxies_x_forwarded_for(1);
    let largest = chain_of_exactly(MAX_FORWARDING_HEADER_BYTES, "192.0.2.1");
    let fits = request(Some("10.0.0.1"), &[(XFF, &largest)]);
    assert_eq!(xff.client_ip(&fits), Ok(ip("192.0.2.1")));
    assert_eq!(status(&layer(10, xff), fits).await, StatusCode::OK);

    let one_more = chain_of_exactly(MAX_FORWARDING_HEADER_BYTES + 1, "192.0.2.1");
    let oversized = request(Some("10.0.0.1"), &[(XFF, &one_more)]);
    assert_eq!(xff.client_ip(&oversized), Err(Rejection::KeyTooLong));
    assert_eq!(
        status(&layer(10, xff), oversized).await,
        StatusCode::BAD_REQUEST
    );

    let half = chain_of_exactly(MAX_FORWARDING_HEADER_BYTES / 2 + 1, "192.0.2.1");
    let split = request(Some("10.0.0.1"), &[(XFF, &half), (XFF, &half)]);
    assert_eq!(xff.client_ip(&split), Err(Rejection::KeyTooLong));

    // Oversized garbage is TooLong before it is parsed; a huge Forwarded field likewise.
    let forwarded = PeerIp::new().trusted_proxies_forwarded(1);
    let huge = format!("for={}", "x".repeat(64 * 1024));
    let huge_forwarded = request(Some("10.0.0.1"), &[(FORWARDED, &huge)]);
    assert_eq!(
        forwarded.client_ip(&huge_forwarded),
        Err(Rejection::KeyTooLong)
    );
    assert_eq!(
        status(&layer(10, forwarded), huge_forwarded).await,
        StatusCode::BAD_REQUEST
    );
    Ok(())
}

/// IPv6 clients in the same /64 share a key; another /64 does not; the prefix is configurable;
/// IPv4-mapped addresses are their IPv4 address.
#[tokio::test]
async fn ipv6_clients_are_keyed_by_prefix() -> TestResult {
    let same_64_a = "2001:db8:1:2::1";
    let same_64_b = "2001:db8:1:2:ffff:ffff:ffff:fffe";
    let other_64 = "2001:db8:1:3::1";

    let by_64 = PeerIp::new();
    let key = |extractor: &PeerIp, peer: &str| extractor.client_ip(&request(Some(peer), &[]));
    assert_eq!(key(&by_64, same_64_a), Ok(ip("2001:db8:1:2::")));
    assert_eq!(key(&by_64, same_64_b), Ok(ip("2001:db8:1:2::")));
    assert_eq!(key(&by_64, other_64), Ok(ip("2001:db8:1:3::")));
    assert_eq!(key(&by_64, "192.0.2.1"), Ok(ip("192.0.2.1")));
    assert_eq!(key(&by_64, "::ffff:192.0.2.1"), Ok(ip("192.0.2.1")));
    // The key the layer checks is the same address.
    for peer in [
        same_64_a,
        same_64_b,
        other_64,
        "192.0.2.1",
        "::ffff:192.0.2.1",
    ] {
        let lent = by_64.with_key(&request(Some(peer), &[]), |key: &IpAddr| *key);
        assert_eq!(lent, key(&by_64, peer), "{peer}");
    }

    let layer_64 = layer(1, by_64);
    for (peer, expected) in [
        (same_64_a, StatusCode::OK),
        (same_64_b, StatusCode::TOO_MANY_REQUESTS),
        (other_64, StatusCode::OK),
        ("192.0.2.1", StatusCode::OK),
        ("::ffff:192.0.2.1", StatusCode::TOO_MANY_REQUESTS),
    ] {
        assert_eq!(
            status(&layer_64, request(Some(peer), &[])).await,
            expected,
            "{peer}"
        );
    }

    let by_48 = PeerIp::new().ipv6_prefix(48)?;
    assert_eq!(key(&by_48, other_64), key(&by_48, same_64_a));
    let by_128 = PeerIp::new().ipv6_prefix(128)?;
    assert_ne!(key(&by_128, same_64_b), key(&by_128, same_64_a));
    let by_0 = PeerIp::new().ipv6_prefix(0)?;
    assert_eq!(key(&by_0, "2001:db8::1"), Ok(ip("::")));
    assert_eq!(
        PeerIp::new().ipv6_prefix(129),
        Err(BuildError::InvalidPrefixLength {
            bits: 129,
            max: 128
        })
    );

    // The prefix applies to forwarded clients too.
    let forwarded_64 = PeerIp::new().trusted_proxies_x_forwarded_for(1);
    let forwarded = request(Some("10.0.0.1"), &[(XFF, same_64_b)]);
    assert_eq!(forwarded_64.client_ip(&forwarded), Ok(ip("2001:db8:1:2::")));
    Ok(())
}

/// Elements to the left of the trusted part are the client's own claims, or come from proxies
/// outside the trust chain, which RFC 7239 lets write `unknown` and obfuscated identifiers
/// (sections 6.2, 6.3); squid writes `X-Forwarded-For: unknown`. The element the trusted
/// proxy appended is a valid address, so the request has a key.
#[tokio::test]
async fn untrusted_elements_before_the_client_are_not_parsed() -> TestResult {
    let xff = PeerIp::new().trusted_proxies_x_forwarded_for(1);
    let request_xff = request(Some("10.0.0.1"), &[(XFF, "unknown, 203.0.113.9")]);
    assert_eq!(xff.client_ip(&request_xff), Ok(ip("203.0.113.9")));

    let forwarded = PeerIp::new().trusted_proxies_forwarded(1);
    let request_forwarded = request(
        Some("10.0.0.1"),
        &[(FORWARDED, "for=_hidden, for=203.0.113.9")],
    );
    assert_eq!(
        forwarded.client_ip(&request_forwarded),
        Ok(ip("203.0.113.9"))
    );
    Ok(())
}

//! Key modes: `Exact` keys are the integers (and addresses) themselves, `Hashed` keys may be any
//! `Hash` type, unsized included.

use nanolimit::keyed::Exact;
use nanolimit::{FixedWindow, Gcra, KeyedLimiter, ManualClock, SlidingWindow};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[test]
fn exact_keys_differing_only_in_high_bits_are_distinct() {
    let limiter: KeyedLimiter<u128, _, _, Exact> =
        KeyedLimiter::<u128, _>::builder(FixedWindow::per_second(1).unwrap())
            .capacity(100)
            .clock(ManualClock::new())
            .key_mode::<Exact>()
            .build()
            .unwrap();
    let keys = [1u128, 1 | (1 << 64), 1 | (1 << 127), u128::MAX];
    for key in keys {
        assert!(limiter.check(&key).is_allowed(), "{key:#x}");
    }
    for key in keys {
        assert!(limiter.check(&key).is_denied(), "{key:#x}");
    }
    assert_eq!(limiter.stats().inserts, keys.len() as u64);
}

#[test]
fn exact_ipv4_keys_share_a_state_with_their_mapped_ipv6_form() {
    let limiter: KeyedLimiter<IpAddr, _, _, Exact> =
        KeyedLimiter::<IpAddr, _>::builder(Gcra::per_second(2).unwrap())
            .capacity(100)
            .clock(ManualClock::new())
            .exact_keys()
            .build()
            .unwrap();
    let v4 = Ipv4Addr::new(192, 0, 2, 1);
    assert!(limiter.check(&IpAddr::V4(v4)).is_allowed());
    assert!(limiter.check(&IpAddr::V6(v4.to_ipv6_mapped())).is_allowed());
    assert!(limiter.check(&IpAddr::V4(v4)).is_denied());
    // Another host is another key.
    assert!(limiter.check(&IpAddr::V6(Ipv6Addr::LOCALHOST)).is_allowed());
    assert_eq!(limiter.stats().inserts, 2);
}

#[test]
fn hashed_keys_may_be_unsized() {
    let limiter = KeyedLimiter::<str, _>::builder(SlidingWindow::per_minute(2).unwrap())
        .capacity(100)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let alice = String::from("alice");
    assert!(limiter.check(alice.as_str()).is_allowed());
    assert!(limiter.check("alice").is_allowed());
    assert!(limiter.check("alice").is_denied());
    assert!(limiter.check("bob").is_allowed());
    assert_eq!(limiter.stats().inserts, 2);
    assert!(limiter.bytes_per_key() <= 32);
}

//! Full tables: what each [`WhenFull`] policy does with a new key when every slot it may use
//! holds a live entry, and that live keys keep their exact limits meanwhile. (What a refused key
//! reports is in `refused_keys`.)

use crate::common::keyed::{clock_at, fill, one_bucket, MILLISECOND_NS};
use crate::common::{at, SECOND_NS};
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{FixedWindow, Gcra, Limiter, ManualClock, Quota, Request, SlidingWindow, WhenFull};
use std::time::Duration;

fn full_table_denies_new_keys_by_default_and_keeps_live_keys_exact<M: KeyMode<u64>>() {
    let clock = ManualClock::new();
    let quota = Gcra::per_second(3).unwrap();
    let limiter = one_bucket::<M, _>(quota, WhenFull::default(), &clock);
    fill(&limiter, 0..8);
    for attempt in 1..=5 {
        let decision = limiter.check(&100);
        assert!(decision.is_denied());
        assert!(decision.is_untracked());
        assert_eq!(decision.remaining(), 0);
        assert!(decision.retry_after() > Duration::ZERO);
        assert_eq!(limiter.stats().refused_new_keys, attempt);
    }
    // The live keys keep their exact limit: two more units each.
    for key in 0..8 {
        assert!(limiter.check(&key).is_allowed());
        assert!(limiter.check(&key).is_allowed());
        let denied = limiter.check(&key);
        assert!(denied.is_denied());
        assert!(!denied.is_untracked());
    }
    let stats = limiter.stats();
    assert_eq!(stats.inserts, 8);
    assert_eq!(
        (stats.evictions, stats.untracked_new_keys, stats.reclaims),
        (0, 0, 0)
    );
}

#[test]
fn full_table_denies_new_keys_by_default_and_keeps_live_keys_exact_hashed() {
    full_table_denies_new_keys_by_default_and_keeps_live_keys_exact::<Hashed>();
}

#[test]
fn full_table_denies_new_keys_by_default_and_keeps_live_keys_exact_exact() {
    full_table_denies_new_keys_by_default_and_keeps_live_keys_exact::<Exact>();
}

#[test]
fn full_table_allows_new_keys_untracked_when_asked() {
    let clock = ManualClock::new();
    let quota = FixedWindow::per_second(2).unwrap();
    let limiter = one_bucket::<Hashed, _>(quota, WhenFull::Allow, &clock);
    fill(&limiter, 0..8);
    // Untracked: allowed every time, far beyond its limit, and never stored.
    for attempt in 1..=20 {
        let decision = limiter.check(&100);
        assert!(decision.is_allowed());
        assert!(decision.is_untracked());
        assert_eq!(decision.retry_after(), Duration::ZERO);
        // What a fresh key has after this request, every time.
        assert_eq!(decision.remaining(), 1);
        assert_eq!(limiter.stats().untracked_new_keys, attempt);
    }
    assert_eq!(limiter.stats().inserts, 8);
    // Live keys are unaffected: one more unit each.
    for key in 0..8 {
        assert!(limiter.check(&key).is_allowed());
        assert!(limiter.check(&key).is_denied());
    }
    assert_eq!(limiter.stats().refused_new_keys, 0);
}

/// An untracked key allowed by a full table reports what a fresh key has after the request
/// (its limit less the cost), and the rest of what a fresh direct limiter's first decision
/// would, for every cost up to the limit.
fn assert_an_untracked_key_reports_what_a_fresh_key_has_left<M: KeyMode<u64>, Q: Quota>(
    quota: Q,
    start_ns: u64,
) {
    let clock = clock_at(start_ns);
    let limiter = one_bucket::<M, _>(quota, WhenFull::Allow, &clock);
    fill(&limiter, 0..8);
    let limit = quota.limit();
    for cost in [1, 2, limit - 1, limit] {
        let decision = limiter.check_with(&100, Request::cost(cost)).unwrap();
        assert!(decision.is_allowed(), "{quota:?}, cost {cost}");
        assert!(decision.is_untracked(), "{quota:?}, cost {cost}");
        assert_eq!(decision.cost(), cost);
        assert_eq!(decision.limit(), limit);
        assert_eq!(decision.remaining(), limit - cost, "{quota:?}, cost {cost}");
        assert_eq!(decision.retry_after(), Duration::ZERO);
        let fresh = Limiter::with_clock(quota, clock.clone())
            .check_with(Request::cost(cost))
            .unwrap();
        assert_eq!(decision.reset_after(), fresh.reset_after(), "{quota:?}");
        assert_eq!(decision.state_word(), fresh.state_word(), "{quota:?}");
        assert_eq!(decision.headers(), fresh.headers(), "{quota:?}");
        assert_eq!(decision.headers().remaining, limit - cost);
    }
    let stats = limiter.stats();
    assert_eq!((stats.inserts, stats.untracked_new_keys), (8, 4));
    let peeked = limiter.peek(&100);
    assert!(peeked.is_untracked(), "nothing was stored");
    assert_eq!(peeked.remaining(), limit, "a peek consumes nothing");
}

#[test]
fn an_untracked_key_reports_what_a_fresh_key_has_left() {
    let start_ns = 100 * SECOND_NS + SECOND_NS / 4;
    let gcra = Gcra::per_second(10).unwrap();
    let sliding = SlidingWindow::per_second(6).unwrap();
    let fixed = FixedWindow::per_second(5).unwrap();
    assert_an_untracked_key_reports_what_a_fresh_key_has_left::<Hashed, _>(gcra, start_ns);
    assert_an_untracked_key_reports_what_a_fresh_key_has_left::<Exact, _>(gcra, start_ns);
    assert_an_untracked_key_reports_what_a_fresh_key_has_left::<Hashed, _>(sliding, start_ns);
    assert_an_untracked_key_reports_what_a_fresh_key_has_left::<Exact, _>(sliding, start_ns);
    assert_an_untracked_key_reports_what_a_fresh_key_has_left::<Hashed, _>(fixed, start_ns);
    assert_an_untracked_key_reports_what_a_fresh_key_has_left::<Exact, _>(fixed, start_ns);
}

fn full_table_evicts_the_entry_closest_to_fresh_and_the_new_key_inherits_its_state<
    M: KeyMode<u64>,
>() {
    let clock = ManualClock::new();
    let burst = 20;
    let quota = Gcra::per_second(burst).unwrap();
    let limiter = one_bucket::<M, _>(quota, WhenFull::EvictClosestToFresh, &clock);
    // Key k has used 2 + k units: key 0 is closest to fresh.
    for key in 0..8 {
        assert!(limiter
            .check_with(&key, Request::cost(2 + key))
            .unwrap()
            .is_allowed());
    }
    let newcomer = limiter.check(&100);
    assert!(newcomer.is_allowed());
    assert!(!newcomer.is_untracked());
    let stats = limiter.stats();
    assert_eq!((stats.inserts, stats.evictions, stats.reclaims), (9, 1, 0));
    // It inherited key 0's 2 units: 17 left, not 19 as for a fresh key.
    assert_eq!(newcomer.remaining(), burst - 2 - 1);
    for _ in 0..burst - 3 {
        assert!(limiter.check(&100).is_allowed());
    }
    let denied = limiter.check(&100);
    assert!(denied.is_denied());
    assert!(!denied.is_untracked());
    // Keys 1..8 kept their state; key 0 is gone: a peek of it tells what its insert would
    // inherit from the entry now closest to fresh (key 1, 3 used), not its own 2 used.
    for key in 1..8 {
        assert_eq!(limiter.peek(&key).remaining(), burst - 2 - key, "key {key}");
    }
    assert_eq!(limiter.peek(&0).remaining(), burst - 3);
    // Key 0 returns to a full table: it evicts the closest to fresh in turn (key 1, 3 used)
    // and inherits that state.
    let returning = limiter.check(&0);
    assert!(returning.is_allowed());
    assert!(!returning.is_untracked());
    assert_eq!(returning.remaining(), burst - 3 - 1);
    assert_eq!(limiter.stats().evictions, 2);
    // Key 1 is gone: judged like a key never seen, on what its insert would inherit (key 0's
    // state now, 4 used).
    assert_eq!(limiter.peek(&1).remaining(), burst - 4);
    assert_eq!(limiter.peek(&999).remaining(), burst - 4);
}

#[test]
fn full_table_evicts_the_entry_closest_to_fresh_and_the_new_key_inherits_its_state_hashed() {
    full_table_evicts_the_entry_closest_to_fresh_and_the_new_key_inherits_its_state::<Hashed>();
}

#[test]
fn full_table_evicts_the_entry_closest_to_fresh_and_the_new_key_inherits_its_state_exact() {
    full_table_evicts_the_entry_closest_to_fresh_and_the_new_key_inherits_its_state::<Exact>();
}

#[test]
fn eviction_never_admits_a_new_key_the_inherited_state_would_deny() {
    let clock = ManualClock::new();
    let quota = Gcra::per_second(5).unwrap();
    let limiter = one_bucket::<Hashed, _>(quota, WhenFull::EvictClosestToFresh, &clock);
    for key in 0..8 {
        assert!(limiter
            .check_with(&key, Request::cost(5))
            .unwrap()
            .is_allowed());
    }
    // Every candidate is exhausted: taking any of them would deny the new key anyway, so none
    // is evicted and the new key is refused, until the inherited state would admit it: one
    // emission interval.
    let refused = limiter.check(&100);
    assert!(refused.is_denied());
    assert!(refused.is_untracked());
    assert_eq!(refused.remaining(), 0);
    assert_eq!(refused.retry_after(), Duration::from_millis(200));
    let stats = limiter.stats();
    assert_eq!(
        (stats.evictions, stats.refused_new_keys, stats.inserts),
        (0, 1, 8)
    );
    for key in 0..8 {
        assert_eq!(
            limiter.peek(&key).remaining(),
            0,
            "key {key} kept its state"
        );
    }
    // One emission interval later every entry has room for one unit: the next new key
    // evicts one and gets exactly that unit.
    clock.set(at(200 * MILLISECOND_NS));
    let newcomer = limiter.check(&100);
    assert!(newcomer.is_allowed());
    assert!(!newcomer.is_untracked());
    assert_eq!(newcomer.remaining(), 0);
    assert_eq!(limiter.stats().evictions, 1);
    assert!(limiter.check(&100).is_denied());
}

#[test]
fn fixed_window_eviction_carries_the_count_over() {
    let clock = clock_at(SECOND_NS / 4);
    let limiter = one_bucket::<Hashed, _>(
        FixedWindow::per_second(5).unwrap(),
        WhenFull::EvictClosestToFresh,
        &clock,
    );
    // All entries used 3 of 5 in this window: whichever is evicted, the new key inherits 3.
    for key in 0..8 {
        assert!(limiter
            .check_with(&key, Request::cost(3))
            .unwrap()
            .is_allowed());
    }
    let newcomer = limiter.check(&100);
    assert!(newcomer.is_allowed());
    assert_eq!(newcomer.remaining(), 1);
    assert!(limiter.check(&100).is_allowed());
    assert!(limiter.check(&100).is_denied());
    assert_eq!(limiter.stats().evictions, 1);
}

#[test]
fn sliding_window_eviction_picks_the_entry_with_the_smallest_reset_after() {
    // Window 0: every key counts one unit.
    let clock = clock_at(SECOND_NS / 4);
    let limiter = one_bucket::<Hashed, _>(
        SlidingWindow::per_second(4).unwrap(),
        WhenFull::EvictClosestToFresh,
        &clock,
    );
    fill(&limiter, 0..8);
    // Half-way through window 1 (the previous window's units now weigh ⌊0.5⌋ = 0): key 0 uses
    // one more unit, keys 1..8 two more. Key 0 is full again 1 ns after the window ends (its one
    // unit then weighs less than one); the others only after 1 s + 1 ns.
    clock.set(at(SECOND_NS + SECOND_NS / 2));
    assert!(limiter.check(&0).is_allowed());
    for key in 1..8 {
        assert!(limiter.check(&key).is_allowed());
        assert!(limiter.check(&key).is_allowed());
    }
    assert_eq!(
        limiter.peek(&0).reset_after(),
        Duration::from_nanos(SECOND_NS / 2 + 1)
    );
    assert_eq!(
        limiter.peek(&1).reset_after(),
        Duration::from_nanos(SECOND_NS + 1)
    );
    let newcomer = limiter.check(&100);
    assert!(newcomer.is_allowed());
    assert!(!newcomer.is_untracked());
    assert_eq!(limiter.stats().evictions, 1);
    // Inherited: key 0's current unit plus the newcomer's own, 2 left (a fresh key would
    // have 3).
    assert_eq!(newcomer.remaining(), 2);
    assert!(limiter.check(&100).is_allowed());
    assert!(limiter.check(&100).is_allowed());
    assert!(limiter.check(&100).is_denied());
    // The others kept their state (2 current units, the previous one weighing 0: 2 left each).
    for key in 1..8 {
        assert_eq!(limiter.peek(&key).remaining(), 2, "key {key}");
    }
}

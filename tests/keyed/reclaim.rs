//! Reclaim: an entry equivalent to fresh is reused by the next new key that needs its slot, with
//! no sweeper; a live entry is never taken, even by a reading far behind the table's.

use crate::common::keyed::{clock_at, fill, one_bucket, MILLISECOND_NS};
use crate::common::{at, SECOND_NS, YEAR_NS};
use nanolimit::{
    Exact, FixedWindow, Gcra, Hashed, KeyMode, Quota, Request, SlidingWindow, WhenFull,
};
use std::time::Duration;

/// A reading far behind the table's latest ones (a caller-supplied time, or a thread stalled
/// between reading the clock and checking): live entries stay live for it, so it reclaims no
/// slot, and it never writes a word that an earlier observation of a slot could match.
fn assert_a_stale_reading_takes_no_live_slot<Q: Quota>(quota: Q, now_ns: u64, stale_ns: u64) {
    let clock = clock_at(now_ns);
    let limiter = one_bucket::<Hashed, _>(quota, WhenFull::Deny, &clock);
    let limit = quota.limit();
    for key in 0..8u64 {
        for _ in 0..limit {
            assert!(limiter.check(&key).is_allowed(), "{quota:?}: key {key}");
        }
    }
    let spent: Vec<u64> = (0..8u64)
        .map(|key| limiter.peek(&key).state_word())
        .collect();
    // A new key at the stale reading: every candidate slot is live, so it is refused, and told
    // to wait as long as the entries read at that time take to free.
    let stale = at(stale_ns);
    let decision = limiter.check_at(&100, stale);
    assert!(decision.is_denied() && decision.is_untracked(), "{quota:?}");
    assert_eq!(decision.remaining(), 0, "{quota:?}");
    let soonest = (0..8u64)
        .map(|key| {
            limiter
                .peek_with(&key, Request::new().at(stale))
                .unwrap()
                .reset_after()
        })
        .min()
        .unwrap();
    assert!(soonest > Duration::ZERO, "{quota:?}");
    assert_eq!(decision.retry_after(), soonest, "{quota:?}");
    let stats = limiter.stats();
    assert_eq!(
        (stats.reclaims, stats.refused_new_keys),
        (0, 1),
        "{quota:?}"
    );
    // The live keys, checked at the stale reading, are judged in their spent windows and keep
    // their words; at the real time they are still spent.
    for key in 0..8u64 {
        assert!(limiter.check_at(&key, stale).is_denied(), "{quota:?}");
        assert_eq!(limiter.peek(&key).state_word(), spent[key as usize]);
        assert!(limiter.check(&key).is_denied(), "{quota:?}: key {key}");
    }
}

#[test]
fn a_stale_reading_never_reclaims_a_live_key_or_rewinds_its_word() {
    let minute_ns = 60 * SECOND_NS;
    // Shortest sliding windows: up to 2^16 windows (65 s) behind; 5 s here.
    let one_ms = SlidingWindow::new(3, Duration::from_millis(1)).unwrap();
    assert_a_stale_reading_takes_no_live_slot(one_ms, 10 * SECOND_NS, 5 * SECOND_NS);
    // Windows whose index never wraps: any lag, here ten years.
    let per_minute = SlidingWindow::per_minute(3).unwrap();
    assert_a_stale_reading_takes_no_live_slot(per_minute, 11 * YEAR_NS, YEAR_NS + minute_ns);
    let per_second = FixedWindow::per_second(3).unwrap();
    assert_a_stale_reading_takes_no_live_slot(per_second, 11 * YEAR_NS, YEAR_NS);
    // And 2^20 + 5 windows behind, once read as a key idle for nearly 2^40 windows.
    let far_ns = ((1 << 20) + 5) * SECOND_NS;
    assert_a_stale_reading_takes_no_live_slot(per_second, far_ns, 0);
    let gcra = Gcra::per_second(3).unwrap();
    assert_a_stale_reading_takes_no_live_slot(gcra, 11 * YEAR_NS, 0);
}

fn expired_entries_are_reclaimed_by_new_keys_without_any_sweep<M: KeyMode<u64>>() {
    for when_full in [
        WhenFull::Deny,
        WhenFull::Allow,
        WhenFull::EvictClosestToFresh,
    ] {
        let clock = clock_at(0);
        let quota = Gcra::per_second(10).unwrap();
        let limiter = one_bucket::<M, _>(quota, when_full, &clock);
        fill(&limiter, 0..8);
        // One unit each: fresh again one emission interval later.
        clock.set(at(100 * MILLISECOND_NS));
        for (index, key) in (100..108).enumerate() {
            let decision = limiter.check(&key);
            assert!(decision.is_allowed(), "{when_full:?}");
            assert!(!decision.is_untracked(), "{when_full:?}");
            // A reclaimed slot behaves like a fresh one.
            assert_eq!(decision.remaining(), 9, "{when_full:?}");
            assert_eq!(limiter.stats().reclaims, index as u64 + 1, "{when_full:?}");
        }
        let stats = limiter.stats();
        assert_eq!(stats.inserts, 16, "{when_full:?}");
        assert_eq!(
            (
                stats.evictions,
                stats.refused_new_keys,
                stats.untracked_new_keys
            ),
            (0, 0, 0),
            "{when_full:?}"
        );
        // The new keys are tracked with their exact limit.
        for key in 100..108 {
            for _ in 0..9 {
                assert!(limiter.check(&key).is_allowed());
            }
            assert!(limiter.check(&key).is_denied());
        }
    }
}

#[test]
fn expired_entries_are_reclaimed_by_new_keys_without_any_sweep_hashed() {
    expired_entries_are_reclaimed_by_new_keys_without_any_sweep::<Hashed>();
}

#[test]
fn expired_entries_are_reclaimed_by_new_keys_without_any_sweep_exact() {
    expired_entries_are_reclaimed_by_new_keys_without_any_sweep::<Exact>();
}

#[test]
fn a_live_entry_is_not_reclaimed_while_an_expired_one_is_available() {
    let clock = clock_at(0);
    let limiter = one_bucket::<Hashed, _>(Gcra::per_second(10).unwrap(), WhenFull::Deny, &clock);
    // Keys 0..7 take one unit (fresh again at 100 ms); key 7 takes the whole burst (1 s).
    for key in 0..7 {
        assert!(limiter.check(&key).is_allowed());
    }
    assert!(limiter
        .check_with(&7, Request::cost(10))
        .unwrap()
        .is_allowed());
    clock.set(at(100 * MILLISECOND_NS));
    for key in 100..107 {
        assert!(limiter.check(&key).is_allowed());
    }
    // Key 7 is still exhausted, tracked: its slot was not given away.
    assert_eq!(limiter.peek(&7).remaining(), 1);
    assert!(limiter.check(&7).is_allowed());
    assert!(limiter.check(&7).is_denied());
    // Now every slot is live: the next new key is refused, until the first of the others
    // (taken at 100 ms) is fresh again.
    let refused = limiter.check(&200);
    assert!(refused.is_untracked() && refused.is_denied());
    assert_eq!(refused.retry_after(), Duration::from_millis(100));
}

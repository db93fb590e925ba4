//! Removing a key (`KeyedLimiter::remove`): its next check is a new key's, other keys keep their
//! states, a removed entry keeps its slot until its state would have been fresh, a reservation
//! booked before the removal gives nothing back, and checks racing removals admit no more than
//! the limit per entry the key had.

use crate::common::keyed::{clock_at, fill, one_bucket, table, TableShape};
use crate::common::{at, SECOND_NS};
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{
    FixedWindow, Gcra, KeyedLimiter, ManualClock, Quota, SlidingWindow, Stats, WhenFull,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

/// Three failed logins per user, then one a minute.
fn failed_logins() -> Gcra {
    Gcra::per_minute(1).unwrap().with_burst(3).unwrap()
}

fn login_limiter_is_cleared_after_a_successful_login<M: KeyMode<u64>>() {
    let clock = clock_at(0);
    let limiter = table::<M, _>(failed_logins(), TableShape::capacity(1_000), &clock);
    let (alice, bob) = (7u64, 8u64);
    for _ in 0..3 {
        assert!(limiter.check(&alice).is_allowed());
    }
    assert!(limiter.check(&bob).is_allowed());
    assert!(limiter.check(&alice).is_denied());
    // Alice logs in: her failures are forgotten, at once.
    assert!(limiter.remove(&alice));
    assert_eq!(limiter.peek(&alice).remaining(), 3);
    for remaining in (0..3).rev() {
        let decision = limiter.check(&alice);
        assert!(decision.is_allowed() && !decision.is_untracked());
        assert_eq!(decision.remaining(), remaining);
    }
    assert!(limiter.check(&alice).is_denied());
    // Bob's failure still counts.
    assert_eq!(limiter.peek(&bob).remaining(), 2);
}

#[test]
fn a_login_limiter_is_cleared_after_a_successful_login() {
    login_limiter_is_cleared_after_a_successful_login::<Hashed>();
    login_limiter_is_cleared_after_a_successful_login::<Exact>();
}

fn other_keys_are_unaffected<M: KeyMode<u64>, Q: Quota>(quota: Q) {
    let clock = clock_at(0);
    let limiter = one_bucket::<M, _>(quota, WhenFull::Deny, &clock);
    fill(&limiter, 0..8);
    let _ = limiter.check(&3);
    let before: Vec<u64> = (0..8u64)
        .map(|key| limiter.peek(&key).state_word())
        .collect();
    assert!(limiter.remove(&5), "{quota:?}");
    for key in (0..8u64).filter(|&key| key != 5) {
        assert_eq!(
            limiter.peek(&key).state_word(),
            before[key as usize],
            "{quota:?}: key {key}"
        );
        assert!(
            limiter.remove(&key) || key == 5,
            "{quota:?}: key {key} still held"
        );
    }
}

#[test]
fn removing_a_key_leaves_the_other_keys_states_alone() {
    let second = Duration::from_secs(1);
    other_keys_are_unaffected::<Hashed, _>(Gcra::per_second(2).unwrap());
    other_keys_are_unaffected::<Exact, _>(Gcra::per_second(2).unwrap());
    other_keys_are_unaffected::<Hashed, _>(FixedWindow::new(3, second).unwrap());
    other_keys_are_unaffected::<Exact, _>(SlidingWindow::new(3, second).unwrap());
}

fn absent_keys_are_not_removed<M: KeyMode<u64>>() {
    let clock = clock_at(0);
    let limiter = one_bucket::<M, _>(Gcra::per_second(1).unwrap(), WhenFull::Deny, &clock);
    // Never seen.
    assert!(!limiter.remove(&1));
    // Peeked at only: a peek inserts nothing.
    let _ = limiter.peek(&1);
    assert!(!limiter.remove(&1));
    // Removed already.
    fill(&limiter, 1..2);
    assert!(limiter.remove(&1));
    assert!(!limiter.remove(&1));
    // Reclaimed by another key: in a new table, 8 keys fill it at 0, all fresh again at 1 s,
    // when key 100 takes the first candidate slot (key 0's, the first filled).
    let limiter = one_bucket::<M, _>(Gcra::per_second(1).unwrap(), WhenFull::Deny, &clock);
    fill(&limiter, 0..8);
    clock.set(at(SECOND_NS));
    fill(&limiter, 100..101);
    assert_eq!(limiter.stats().reclaims, 1);
    assert!(!limiter.remove(&0), "key 0 lost its slot to key 100");
    for key in (1..8u64).chain([100]) {
        assert!(limiter.remove(&key), "key {key}");
    }
    let stats = limiter.stats();
    assert_eq!((stats.removals, stats.entries), (8, 0));
}

#[test]
fn removing_a_key_the_table_does_not_hold_returns_false() {
    absent_keys_are_not_removed::<Hashed>();
    absent_keys_are_not_removed::<Exact>();
}

fn removed_key_comes_back_fresh<M: KeyMode<u64>, Q: Quota>(quota: Q) {
    let clock = clock_at(5 * SECOND_NS);
    let limiter = table::<M, _>(quota, TableShape::capacity(100).seed(3), &clock);
    let limit = quota.limit();
    let fresh = limiter.check(&42);
    for _ in 1..limit {
        assert!(limiter.check(&42).is_allowed(), "{quota:?}");
    }
    assert!(limiter.check(&42).is_denied(), "{quota:?}");
    assert!(limiter.remove(&42), "{quota:?}");
    assert_eq!(limiter.entries(), 0, "{quota:?}");
    // The next check is decided as the key's very first was.
    let again = limiter.check(&42);
    assert!(again.is_allowed() && !again.is_untracked(), "{quota:?}");
    assert_eq!(again.remaining(), fresh.remaining(), "{quota:?}");
    assert_eq!(again.reset_after(), fresh.reset_after(), "{quota:?}");
    assert_eq!(again.state_word(), fresh.state_word(), "{quota:?}");
    assert_eq!(
        limiter.stats(),
        Stats {
            entries: 1,
            inserts: 2,
            reclaims: 0,
            refused_new_keys: 0,
            untracked_new_keys: 0,
            evictions: 0,
            removals: 1,
            ..Stats::default()
        },
        "{quota:?}"
    );
}

#[test]
fn a_removed_key_s_next_check_is_a_new_key_s() {
    let second = Duration::from_secs(1);
    removed_key_comes_back_fresh::<Hashed, _>(Gcra::per_second(4).unwrap());
    removed_key_comes_back_fresh::<Exact, _>(Gcra::per_second(4).unwrap());
    removed_key_comes_back_fresh::<Hashed, _>(FixedWindow::new(3, second).unwrap());
    removed_key_comes_back_fresh::<Exact, _>(FixedWindow::new(3, second).unwrap());
    removed_key_comes_back_fresh::<Hashed, _>(SlidingWindow::new(3, second).unwrap());
    removed_key_comes_back_fresh::<Exact, _>(SlidingWindow::new(3, second).unwrap());
}

fn removed_entry_keeps_its_slot<M: KeyMode<u64>>() {
    // One unit per second, bursts of 2: key 0 spends its burst at 0 (fresh again at 2 s), the
    // seven others a unit at 1.5 s (fresh again at 2.5 s).
    let clock = clock_at(0);
    let quota = Gcra::per_second(1).unwrap().with_burst(2).unwrap();
    let limiter = one_bucket::<M, _>(quota, WhenFull::Deny, &clock);
    fill(&limiter, 0..1);
    assert!(limiter.check(&0).is_allowed());
    clock.set(at(1_500_000_000));
    fill(&limiter, 1..8);
    assert!(limiter.remove(&0));
    // Until key 0's old state would have been fresh, its slot takes no other key.
    let refused = limiter.check(&100);
    assert!(refused.is_denied() && refused.is_untracked());
    assert_eq!(refused.retry_after(), Duration::from_millis(500));
    // A peek does not see key 0's own removed entry: judged as a new key's, refused.
    let peeked = limiter.peek(&0);
    assert!(peeked.is_denied() && peeked.is_untracked());
    // Key 0 itself takes it back at once, fresh (burst 2: 1 left).
    let back = limiter.check(&0);
    assert!(back.is_allowed() && !back.is_untracked());
    assert_eq!(back.remaining(), 1);
    let stats = limiter.stats();
    assert_eq!(
        (stats.entries, stats.inserts, stats.reclaims, stats.removals),
        (8, 9, 0, 1),
        "key 0's return counts as its insert, not as a reclaim"
    );
    assert_eq!(
        stats.entries,
        stats.inserts - stats.reclaims - stats.evictions - stats.removals
    );
    assert_eq!(stats.refused_new_keys, 1);
    // Removed again, its entry (1 unit at 1.5 s) is reused by another key once fresh, at 2.5 s.
    assert!(limiter.remove(&0));
    clock.set(at(2_500_000_000));
    let other = limiter.check(&100);
    assert!(other.is_allowed() && !other.is_untracked());
    assert_eq!(other.remaining(), 1);
    assert_eq!(
        limiter.stats().reclaims,
        0,
        "a removed entry's reuse is an insert only"
    );
}

#[test]
fn a_removed_entry_is_taken_back_by_its_key_and_by_others_once_fresh() {
    removed_entry_keeps_its_slot::<Hashed>();
    removed_entry_keeps_its_slot::<Exact>();
}

fn removed_again_and_again_keeps_one_slot<M: KeyMode<u64>>() {
    // A minute per unit: every entry stays live for the whole test, so a slot a removed entry
    // keeps is lost to other keys.
    let clock = clock_at(0);
    let limiter = one_bucket::<M, _>(failed_logins(), WhenFull::Deny, &clock);
    for round in 0..10 {
        let decision = limiter.check(&0);
        assert!(
            decision.is_allowed() && !decision.is_untracked(),
            "round {round}"
        );
        assert!(limiter.remove(&0), "round {round}");
    }
    // Key 0 took its own removed entry back each time, though vacant slots were there: the
    // other 7 slots are still free for other keys.
    fill(&limiter, 1..8);
    let stats = limiter.stats();
    assert_eq!(
        (stats.inserts, stats.removals, stats.refused_new_keys),
        (17, 10, 0)
    );
    let refused = limiter.check(&100);
    assert!(refused.is_denied() && refused.is_untracked());
}

#[test]
fn a_key_removed_again_and_again_keeps_one_slot() {
    removed_again_and_again_keeps_one_slot::<Hashed>();
    removed_again_and_again_keeps_one_slot::<Exact>();
}

fn evicting_a_removed_entry<M: KeyMode<u64>>() {
    // Under `EvictClosestToFresh`, a removed entry is evicted like any other (its state
    // inherited), and counted as an insert only.
    let clock = clock_at(0);
    let quota = Gcra::per_second(1).unwrap().with_burst(3).unwrap();
    let limiter = one_bucket::<M, _>(quota, WhenFull::EvictClosestToFresh, &clock);
    fill(&limiter, 0..8);
    for key in 1..8u64 {
        assert!(limiter.check(&key).is_allowed());
    }
    // Key 0 (one unit used) is the closest to fresh; removed, it is still the one evicted.
    assert!(limiter.remove(&0));
    let evicting = limiter.check(&100);
    assert!(evicting.is_allowed() && !evicting.is_untracked());
    assert_eq!(
        evicting.remaining(),
        1,
        "inherits key 0's state: one unit used"
    );
    let stats = limiter.stats();
    assert_eq!(
        (
            stats.entries,
            stats.inserts,
            stats.evictions,
            stats.removals
        ),
        (8, 9, 0, 1)
    );
    for key in 1..8u64 {
        assert_eq!(limiter.peek(&key).remaining(), 1, "key {key}");
    }
    // Nor does a removed key take its own entry back fresh in a table that evicts (an evicted
    // state may have been live in that slot, above the fresh one): key 100, removed, evicts its
    // own entry, the closest to fresh, and inherits its state.
    assert!(limiter.remove(&100));
    let back = limiter.check(&100);
    assert!(back.is_allowed() && !back.is_untracked());
    assert_eq!(
        back.remaining(),
        0,
        "inherits its own state (2 used), not a fresh one"
    );
    assert_eq!(limiter.stats().evictions, 0);
}

#[test]
fn a_removed_entry_is_evicted_like_any_other() {
    evicting_a_removed_entry::<Hashed>();
    evicting_a_removed_entry::<Exact>();
}

fn stale_cancel_touches_no_other_key<M: KeyMode<u64>>(remove: bool) {
    // GCRA at one unit per second, burst 1, keys in a one-bucket table.
    let clock = clock_at(0);
    let quota = Gcra::per_second(1).unwrap();
    let limiter = one_bucket::<M, _>(quota, WhenFull::Deny, &clock);
    // Key 1's first booking (not cancellable) and a second one, starting at 1 s.
    let first = limiter.reserve(&1);
    let second = limiter.reserve(&1);
    assert_eq!(
        (first.delay(), second.delay()),
        (Duration::ZERO, Duration::from_secs(1))
    );
    let booked = limiter.peek(&1).state_word();
    if remove {
        assert!(limiter.remove(&1));
        // Key 1 comes back; key 2 arrives.
        assert!(limiter.check(&1).is_allowed());
        assert!(limiter.check(&2).is_allowed());
    }
    let before: Vec<u64> = [1u64, 2]
        .iter()
        .map(|key| limiter.peek(key).state_word())
        .collect();
    second.cancel_at(at(0));
    let after: Vec<u64> = [1u64, 2]
        .iter()
        .map(|key| limiter.peek(key).state_word())
        .collect();
    if remove {
        assert_eq!(after, before, "the cancellation gave nothing back");
    } else {
        assert!(
            after[0] < booked,
            "without a removal, the booking is given back"
        );
    }
}

#[test]
fn a_reservation_cancelled_after_its_key_is_removed_touches_no_entry() {
    stale_cancel_touches_no_other_key::<Hashed>(true);
    stale_cancel_touches_no_other_key::<Exact>(true);
    stale_cancel_touches_no_other_key::<Hashed>(false);
    stale_cancel_touches_no_other_key::<Exact>(false);
}

/// Threads check one key on a frozen clock while another removes it again and again: the key
/// has one entry per successful removal, plus the first, and each admits at most the limit at
/// one instant (a check racing a removal counts against the removed entry or the next one,
/// never a third). So the admissions are at most `limit × (removals + 1)`, and at least the
/// limit (the first entry is spent before the first removal, which waits for a denial).
fn checks_racing_removals<M: KeyMode<u64>, Q: Quota>(quota: Q) {
    const CHECKERS: usize = 3;
    const REMOVAL_ATTEMPTS: u64 = 500;
    let clock = clock_at(SECOND_NS);
    let limiter: KeyedLimiter<u64, Q, ManualClock, M> =
        table::<M, _>(quota, TableShape::capacity(64).seed(11), &clock);
    let limit = quota.limit();
    let admitted = AtomicU64::new(0);
    let spent = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    let start = Barrier::new(CHECKERS + 1);
    let removed = std::thread::scope(|scope| {
        for _ in 0..CHECKERS {
            scope.spawn(|| {
                start.wait();
                // At least a few checks each; then until the removals are over.
                let mut checks = 0;
                while checks < 2 * limit || !finished.load(Ordering::Acquire) {
                    let decision = limiter.check(&9);
                    checks += 1;
                    if decision.is_allowed() {
                        assert!(!decision.is_untracked(), "{quota:?}");
                        admitted.fetch_add(1, Ordering::Relaxed);
                    } else {
                        spent.store(true, Ordering::Release);
                    }
                }
            });
        }
        start.wait();
        let mut removed = 0;
        let mut attempts = 0;
        while attempts < REMOVAL_ATTEMPTS {
            if spent.load(Ordering::Acquire) {
                removed += u64::from(limiter.remove(&9));
                attempts += 1;
            }
            std::thread::yield_now();
        }
        finished.store(true, Ordering::Release);
        removed
    });
    let admitted = admitted.into_inner();
    assert!(
        admitted <= limit * (removed + 1),
        "{quota:?}: {admitted} admitted with {removed} removals"
    );
    assert!(admitted >= limit, "{quota:?}: {admitted} admitted");
    assert!(removed > 0, "{quota:?}");
    // At rest: at most one entry (the key's latest), and the stats add up.
    let stats = limiter.stats();
    assert_eq!(stats.removals, removed, "{quota:?}");
    assert!(stats.entries <= 1, "{quota:?}");
    assert_eq!(
        stats.entries,
        stats.inserts - stats.reclaims - stats.evictions - stats.removals,
        "{quota:?}"
    );
    assert_eq!(
        stats.refused_new_keys, 0,
        "the key kept one slot: {quota:?}"
    );
}

#[test]
fn checks_racing_removals_admit_at_most_the_limit_per_entry() {
    let second = Duration::from_secs(1);
    checks_racing_removals::<Hashed, _>(Gcra::per_second(5).unwrap());
    checks_racing_removals::<Exact, _>(Gcra::per_second(5).unwrap());
    checks_racing_removals::<Hashed, _>(FixedWindow::new(4, second).unwrap());
    checks_racing_removals::<Exact, _>(SlidingWindow::new(4, second).unwrap());
}

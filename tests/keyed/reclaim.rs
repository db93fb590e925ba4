//! Reclaim: an entry equivalent to fresh is reused by the next new key that needs its slot, with
//! no sweeper; a live entry is never taken, even by a reading far behind the table's.

use crate::common::keyed::{clock_at, fill, one_bucket, MILLISECOND_NS};
use crate::common::{at, SECOND_NS, YEAR_NS};
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{FixedWindow, Gcra, Quota, Request, SlidingWindow, WhenFull};
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

/// The table's defect that issue 15 names: key A spends its whole limit at 0, seven other keys
/// fill its bucket, and at `reclaim_ns` (once every entry is fresh) key B takes A's slot. A
/// request of A's stamped `stale_ns` (read before a preemption, between A's spending and the
/// reclaim) then finds no entry for A. It must not start from a fresh state at that reading,
/// which would give A a whole limit again behind the one it spent: A is judged no earlier
/// than its old entry became fresh, so its units by readings up to `reclaim_ns` never exceed
/// what its old state plus a fresh start give, twice the limit.
fn assert_a_key_back_behind_its_reclaimed_entry_gets_no_extra_capacity<
    M: KeyMode<u64>,
    Q: Quota,
>(
    quota: Q,
    stale_ns: u64,
    reclaim_ns: u64,
) {
    let context = format!("{quota:?}, stale {stale_ns} ns, reclaimed at {reclaim_ns} ns");
    let clock = clock_at(0);
    let limiter = one_bucket::<M, _>(quota, WhenFull::Deny, &clock);
    let limit = quota.limit();
    let (key_a, key_b) = (0u64, 100u64);
    let spend_a = limiter.check_with(&key_a, Request::cost(limit)).unwrap();
    assert!(spend_a.is_allowed(), "{context}");
    fill(&limiter, 1..8);
    clock.advance(Duration::from_nanos(reclaim_ns));
    assert!(limiter.check(&key_b).is_allowed(), "{context}");
    assert_eq!(limiter.stats().reclaims, 1, "{context}");
    assert!(
        limiter.peek(&key_a).is_allowed(),
        "{context}: A's entry was the one reclaimed, so A reads as new"
    );

    let mut admitted = limit;
    let stale = limiter.check_with(&key_a, Request::cost(limit).at(at(stale_ns)));
    admitted += stale.unwrap().is_allowed() as u64 * limit;
    // A at the real time: one unit at a time until denied.
    while limiter.check(&key_a).is_allowed() {
        admitted += 1;
        assert!(admitted <= 3 * limit, "{context}: runaway");
    }
    assert!(
        admitted <= 2 * limit,
        "{context}: key A admitted {admitted} units by readings up to the reclaim"
    );
}

fn every_key_mode_and_algorithm_keeps_a_returning_key_to_its_old_state<M: KeyMode<u64>>() {
    let second = SECOND_NS;
    let gcra = Gcra::per_second(10).unwrap();
    assert_a_key_back_behind_its_reclaimed_entry_gets_no_extra_capacity::<M, _>(
        gcra,
        500 * MILLISECOND_NS,
        second,
    );
    let fixed = FixedWindow::per_second(10).unwrap();
    assert_a_key_back_behind_its_reclaimed_entry_gets_no_extra_capacity::<M, _>(
        fixed,
        500 * MILLISECOND_NS,
        second,
    );
    // A sliding window's entry is fresh only once its previous count has gone: two windows on.
    let sliding = SlidingWindow::per_second(10).unwrap();
    assert_a_key_back_behind_its_reclaimed_entry_gets_no_extra_capacity::<M, _>(
        sliding,
        500 * MILLISECOND_NS,
        2 * second,
    );
    assert_a_key_back_behind_its_reclaimed_entry_gets_no_extra_capacity::<M, _>(
        sliding,
        1_500 * MILLISECOND_NS,
        2 * second,
    );
}

#[test]
fn a_hashed_key_back_behind_its_reclaimed_entry_gets_no_extra_capacity() {
    every_key_mode_and_algorithm_keeps_a_returning_key_to_its_old_state::<Hashed>();
}

#[test]
fn an_exact_key_back_behind_its_reclaimed_entry_gets_no_extra_capacity() {
    every_key_mode_and_algorithm_keeps_a_returning_key_to_its_old_state::<Exact>();
}

/// The floor a reclaim sets judges new keys only: a new key with a reading behind it is judged
/// at the floor (its first state as if read then, and a peek of it says the same), while a key
/// the table holds keeps being judged at its own reading.
#[test]
fn the_floor_judges_new_keys_only() {
    let quota = Gcra::per_second(10).unwrap();
    let clock = clock_at(0);
    let limiter = one_bucket::<Hashed, _>(quota, WhenFull::Deny, &clock);
    assert!(limiter
        .check_with(&0, Request::cost(10))
        .unwrap()
        .is_allowed());
    fill(&limiter, 1..8);
    clock.advance(Duration::from_secs(1));
    // Takes key 0's slot; the floor becomes when key 0's entry became fresh, 1 s.
    assert!(limiter.check(&100).is_allowed());
    let stale = at(400 * MILLISECOND_NS);
    // A key the table still holds (its state word, unlike a new key's, is not the fresh one;
    // its unit from 0 ms left by 100 ms): at the stale reading it is judged there.
    let present = (1..8u64)
        .find(|key| limiter.peek(key).state_word() != Gcra::FRESH)
        .unwrap();
    let judged_at_stale = limiter.check_at(&present, stale);
    let direct = nanolimit::Limiter::with_clock(quota, clock_at(0));
    assert_eq!(
        judged_at_stale.state_word(),
        direct.check_at(stale).state_word()
    );
    // Key 0 is new again: a peek and a check at the stale reading judge it at the floor.
    let judged_at_floor = limiter
        .peek_with(&0, Request::new().at(at(SECOND_NS)))
        .unwrap();
    let peeked = limiter.peek_with(&0, Request::new().at(stale)).unwrap();
    assert_eq!(peeked.state_word(), judged_at_floor.state_word());
    let inserted = limiter.check_at(&0, stale);
    let direct = nanolimit::Limiter::with_clock(quota, clock_at(0));
    let fresh_at_floor = direct.check_at(at(SECOND_NS)).state_word();
    assert_eq!(
        inserted.state_word(),
        fresh_at_floor,
        "the new key's first state is the floor's"
    );
}

/// Any schedule on one bucket shared by 12 keys (so entries are reclaimed and keys come back),
/// with readings that mostly move forward and sometimes fall far back: every admission leaves
/// its key's word at least its cost above the word of that key's previous admission. That is
/// what a key keeping its state across every reclaim would do (its word only grows, by the
/// cost, or by more when time moved on), so no reading, however stale, lets a key that lost
/// its entry start again behind the units it had spent.
fn assert_every_admission_builds_on_its_keys_last<M: KeyMode<u64>, Q: Quota>(
    quota: Q,
    schedule: &[(u64, u64, u64, bool)],
) {
    let clock = clock_at(0);
    let limiter = one_bucket::<M, _>(quota, WhenFull::Deny, &clock);
    let increment = |cost: u64| match quota.step(Q::FRESH, quota.instant(at(0)), cost) {
        nanolimit::quota::Step::Allow(word) => word,
        nanolimit::quota::Step::Deny => unreachable!("a fresh state admits the limit"),
    };
    let mut last_word = [None::<u64>; 12];
    let mut latest_ns = 0u64;
    for (step, &(key, cost, advance_ms, stale)) in schedule.iter().enumerate() {
        latest_ns += advance_ms * MILLISECOND_NS;
        let reading_ns = if stale {
            latest_ns.saturating_sub(advance_ms * 20 * MILLISECOND_NS)
        } else {
            latest_ns
        };
        let decision = limiter
            .check_with(&key, Request::cost(cost).at(at(reading_ns)))
            .unwrap();
        if !decision.is_allowed() || decision.is_untracked() {
            continue;
        }
        let word = decision.state_word();
        if let Some(previous) = last_word[key as usize] {
            assert!(
                word >= previous + increment(cost),
                "{quota:?}, step {step}: key {key} cost {cost} at {reading_ns} ns wrote {word} \
                 after {previous}"
            );
        }
        last_word[key as usize] = Some(word);
    }
}

fn returning_schedules() -> impl proptest::strategy::Strategy<Value = Vec<(u64, u64, u64, bool)>> {
    use proptest::prelude::*;
    prop::collection::vec(
        (0..12u64, 1..=5u64, 0..120u64, prop::bool::weighted(0.25)),
        1..200,
    )
}

proptest::proptest! {
    #![proptest_config(crate::common::proptest_config(200))]

    #[test]
    fn gcra_keys_coming_back_never_start_behind_their_spent_units(
        schedule in returning_schedules(),
    ) {
        let quota = Gcra::per_second(10).unwrap().with_burst(5).unwrap();
        assert_every_admission_builds_on_its_keys_last::<Hashed, _>(quota, &schedule);
        assert_every_admission_builds_on_its_keys_last::<Exact, _>(quota, &schedule);
    }

    #[test]
    fn fixed_window_keys_coming_back_never_start_behind_their_spent_units(
        schedule in returning_schedules(),
    ) {
        let quota = FixedWindow::new(5, Duration::from_millis(500)).unwrap();
        assert_every_admission_builds_on_its_keys_last::<Hashed, _>(quota, &schedule);
        assert_every_admission_builds_on_its_keys_last::<Exact, _>(quota, &schedule);
    }

    #[test]
    fn sliding_window_keys_coming_back_never_start_behind_their_spent_units(
        schedule in returning_schedules(),
    ) {
        let quota = SlidingWindow::new(5, Duration::from_millis(500)).unwrap();
        assert_every_admission_builds_on_its_keys_last::<Hashed, _>(quota, &schedule);
        assert_every_admission_builds_on_its_keys_last::<Exact, _>(quota, &schedule);
    }
}

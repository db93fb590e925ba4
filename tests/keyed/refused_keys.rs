//! Refused new keys: a new key that finds every slot it may use live (under
//! [`WhenFull::Deny`], or under [`WhenFull::EvictClosestToFresh`] when the state it would
//! inherit denies it) is denied untracked with nothing remaining, and told to come back exactly
//! when it would be admitted: never "retry now" (a `Retry-After: 0` that a client would obey by
//! retrying at once, into the same refusal).

use crate::common::keyed::{clock_at, one_bucket};
use crate::common::{at, SECOND_NS};
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{
    Decision, FixedWindow, Gcra, KeyedLimiter, ManualClock, Quota, Request, SlidingWindow, Stats,
    WhenFull,
};
use std::time::Duration;

const NEW_KEY: u64 = 100;

/// Asserts everything a refused new key's decision reports: denied, untracked, nothing
/// remaining, and `retry_after` (and `reset_after`) exactly `wait`, in headers too, where it
/// is at least one second.
fn assert_refused<Q: Quota>(decision: &Decision<Q>, cost: u64, wait: Duration, context: &str) {
    assert!(decision.is_denied(), "{context}");
    assert!(decision.is_untracked(), "{context}");
    assert_eq!(decision.cost(), cost, "{context}");
    assert_eq!(decision.remaining(), 0, "{context}");
    assert!(wait > Duration::ZERO, "{context}");
    assert_eq!(decision.retry_after(), wait, "{context}");
    assert_eq!(decision.reset_after(), wait, "{context}");
    let headers = decision.headers();
    let wait_seconds = wait.as_nanos().div_ceil(1_000_000_000) as u64;
    assert!(wait_seconds >= 1);
    assert_eq!(headers.limit, decision.limit(), "{context}");
    assert_eq!(headers.remaining, 0, "{context}");
    assert_eq!(headers.retry_after_seconds, Some(wait_seconds), "{context}");
    assert_eq!(headers.reset_seconds, wait_seconds, "{context}");
}

/// On a one-bucket table that denies when full: keys 0..8 each take `costs[key]` (live
/// entries), the clock moves on by `then`, and a new key is refused; it must wait the smallest
/// `reset_after` among the 8 entries (until one of its slots frees). Waiting exactly that
/// admits it in the freed slot; 1 ns sooner still refuses it (1 ns to go).
fn assert_a_refused_key_waits_for_the_first_slot_to_free<M: KeyMode<u64>, Q: Quota>(
    quota: Q,
    start_ns: u64,
    costs: [u64; 8],
    then: Duration,
) -> Duration {
    let clock = clock_at(start_ns);
    let limiter: KeyedLimiter<u64, Q, ManualClock, M> = one_bucket(quota, WhenFull::Deny, &clock);
    for (key, cost) in (0..8).zip(costs) {
        let decision = limiter.check_with(&key, Request::cost(cost)).unwrap();
        assert!(
            decision.is_allowed() && !decision.is_untracked(),
            "{quota:?}"
        );
    }
    clock.advance(then);
    let soonest = (0..8)
        .map(|key| limiter.peek(&key).reset_after())
        .min()
        .unwrap();
    let context = format!("{quota:?}");
    // A peek tells what the check will do, and counts nothing.
    assert_refused(&limiter.peek(&NEW_KEY), 1, soonest, &context);
    assert_eq!(limiter.stats().refused_new_keys, 0, "{context}");
    assert_refused(&limiter.check(&NEW_KEY), 1, soonest, &context);
    // The wait is for a slot, whatever the cost (each fits a fresh key).
    let larger_cost = quota.limit();
    let refused = limiter
        .check_with(&NEW_KEY, Request::cost(larger_cost))
        .unwrap();
    assert_refused(&refused, larger_cost, soonest, &context);
    let stats = limiter.stats();
    assert_eq!((stats.inserts, stats.refused_new_keys), (8, 2), "{context}");
    assert_eq!((stats.reclaims, stats.evictions), (0, 0), "{context}");

    let one_ns = Duration::from_nanos(1);
    clock.advance(soonest - one_ns);
    assert_refused(&limiter.check(&NEW_KEY), 1, one_ns, &context);
    clock.advance(one_ns);
    let admitted = limiter.check(&NEW_KEY);
    assert!(admitted.is_allowed(), "{context}");
    assert!(!admitted.is_untracked(), "{context}");
    assert_eq!(
        admitted.remaining(),
        quota.limit() - 1,
        "{context}: a fresh slot"
    );
    assert_eq!(limiter.stats().reclaims, 1, "{context}");
    soonest
}

/// Different costs per key, so that the soonest slot to free is not the first one.
const COSTS: [u64; 8] = [5, 3, 7, 2, 6, 4, 8, 9];

fn refused_keys_wait_for_the_first_slot_to_free<M: KeyMode<u64>>() {
    // GCRA, one unit per 100 ms: key 3 (2 units) is fresh again first, after 200 ms.
    let wait = assert_a_refused_key_waits_for_the_first_slot_to_free::<M, _>(
        Gcra::per_second(10).unwrap(),
        0,
        COSTS,
        Duration::ZERO,
    );
    assert_eq!(wait, Duration::from_millis(200));
    // A GCRA interval of no whole number of nanoseconds: key 3 frees after 2/3 s, rounded up
    // to whole nanoseconds.
    let wait = assert_a_refused_key_waits_for_the_first_slot_to_free::<M, _>(
        Gcra::per_second(3).unwrap().with_burst(10).unwrap(),
        0,
        COSTS,
        Duration::ZERO,
    );
    assert_eq!(wait, Duration::from_nanos(666_666_667));
    // Fixed windows: every entry frees when the window ends, 750 ms after a quarter of it.
    let wait = assert_a_refused_key_waits_for_the_first_slot_to_free::<M, _>(
        FixedWindow::per_second(10).unwrap(),
        10 * SECOND_NS + SECOND_NS / 4,
        COSTS,
        Duration::ZERO,
    );
    assert_eq!(wait, Duration::from_millis(750));
    // Sliding windows of 4: counts of 2 to 4 in window 10, read a quarter into window 11. An
    // entry frees once its previous count weighs less than one unit: key 2 (2 units) half-way
    // through window 11 plus 1 ns, 250 ms + 1 ns from now.
    let wait = assert_a_refused_key_waits_for_the_first_slot_to_free::<M, _>(
        SlidingWindow::per_second(4).unwrap(),
        10 * SECOND_NS + SECOND_NS / 4,
        [3, 4, 2, 3, 4, 3, 4, 3],
        Duration::from_secs(1),
    );
    assert_eq!(wait, Duration::from_nanos(SECOND_NS / 4 + 1));
}

#[test]
fn a_refused_key_waits_for_the_first_slot_to_free_hashed() {
    refused_keys_wait_for_the_first_slot_to_free::<Hashed>();
}

#[test]
fn a_refused_key_waits_for_the_first_slot_to_free_exact() {
    refused_keys_wait_for_the_first_slot_to_free::<Exact>();
}

/// Under [`WhenFull::EvictClosestToFresh`], keys 0..8 take `costs[key]`; a new key of `cost`
/// would inherit the entry closest to fresh (`closest`), which denies it: it is refused, evicting
/// nothing, and told that state's `retry_after` for the cost. Waiting exactly that admits it in
/// the slot of `closest` (1 ns sooner still refuses it, 1 ns to go). Returns the wait and the
/// table's counters then.
fn assert_a_refused_eviction_waits_for_the_inherited_state<M: KeyMode<u64>, Q: Quota>(
    quota: Q,
    start_ns: u64,
    costs: [u64; 8],
    closest: u64,
    cost: u64,
) -> (Duration, Stats) {
    let clock = clock_at(start_ns);
    let limiter: KeyedLimiter<u64, Q, ManualClock, M> =
        one_bucket(quota, WhenFull::EvictClosestToFresh, &clock);
    for (key, key_cost) in (0..8).zip(costs) {
        assert!(limiter
            .check_with(&key, Request::cost(key_cost))
            .unwrap()
            .is_allowed());
    }
    let context = format!("{quota:?}");
    let inherited = limiter.peek_with(&closest, Request::cost(cost)).unwrap();
    assert!(inherited.is_denied(), "{context}");
    let wait = inherited.retry_after();
    let states: Vec<u64> = (0..8).map(|key| limiter.peek(&key).state_word()).collect();
    let refused = limiter.check_with(&NEW_KEY, Request::cost(cost)).unwrap();
    assert_refused(&refused, cost, wait, &context);
    let stats = limiter.stats();
    assert_eq!(
        (stats.inserts, stats.evictions, stats.refused_new_keys),
        (8, 0, 1),
        "{context}"
    );
    for key in 0..8 {
        assert_eq!(limiter.peek(&key).state_word(), states[key as usize]);
    }

    let one_ns = Duration::from_nanos(1);
    clock.advance(wait - one_ns);
    let refused = limiter.check_with(&NEW_KEY, Request::cost(cost)).unwrap();
    assert_refused(&refused, cost, one_ns, &context);
    clock.advance(one_ns);
    let admitted = limiter.check_with(&NEW_KEY, Request::cost(cost)).unwrap();
    assert!(admitted.is_allowed(), "{context}");
    assert!(!admitted.is_untracked(), "{context}");
    // In the slot of `closest`: evicted, or reclaimed if it became fresh meanwhile. `closest`
    // is gone: a peek judges it like a key never seen.
    let stats = limiter.stats();
    assert_eq!(stats.evictions + stats.reclaims, 1, "{context}: {stats:?}");
    let never_seen = limiter.peek(&u64::MAX);
    let gone = limiter.peek(&closest);
    assert_eq!(
        (gone.state_word(), gone.remaining(), gone.is_untracked()),
        (
            never_seen.state_word(),
            never_seen.remaining(),
            never_seen.is_untracked()
        ),
        "{context}"
    );
    (wait, stats)
}

fn refused_evictions_wait_for_the_inherited_state<M: KeyMode<u64>>() {
    // GCRA, bursts of 10 at 100 ms: key 3 (2 used) is closest to fresh; 2 + 9 units are one
    // interval over the burst. A still-live key 3 is evicted then.
    let (wait, stats) = assert_a_refused_eviction_waits_for_the_inherited_state::<M, _>(
        Gcra::per_second(10).unwrap(),
        0,
        COSTS,
        3,
        9,
    );
    assert_eq!(wait, Duration::from_millis(100));
    assert_eq!((stats.evictions, stats.reclaims), (1, 0));
    // Fixed windows: every entry used 3 of 5 (key 0 is the first of equals); a cost of 3 waits
    // for the window's end, when every entry is fresh: key 0's slot is reclaimed.
    let (wait, stats) = assert_a_refused_eviction_waits_for_the_inherited_state::<M, _>(
        FixedWindow::per_second(5).unwrap(),
        SECOND_NS / 4,
        [3; 8],
        0,
        3,
    );
    assert_eq!(wait, Duration::from_millis(750));
    assert_eq!((stats.evictions, stats.reclaims), (0, 1));
}

#[test]
fn a_refused_eviction_waits_for_the_inherited_state_hashed() {
    refused_evictions_wait_for_the_inherited_state::<Hashed>();
}

#[test]
fn a_refused_eviction_waits_for_the_inherited_state_exact() {
    refused_evictions_wait_for_the_inherited_state::<Exact>();
}

#[test]
fn a_refused_key_at_a_reading_behind_the_table_waits_as_the_states_tell() {
    // Keys filled at 10 s; a new key checked with a reading 5 s earlier (a caller-supplied time,
    // or a thread stalled between reading the clock and checking). GCRA judges a reading behind
    // a state at the earliest time the state can have been written (its `tat` less the burst's
    // tolerance, 1 s here), so every entry reads as 1 s from fresh: the refusal says 1 s, not
    // the 5 s and more until the entries' actual `tat`.
    let clock = clock_at(10 * SECOND_NS);
    let limiter = one_bucket::<Hashed, _>(Gcra::per_second(10).unwrap(), WhenFull::Deny, &clock);
    for (key, cost) in (0..8).zip(COSTS) {
        assert!(limiter
            .check_with(&key, Request::cost(cost))
            .unwrap()
            .is_allowed());
    }
    let stale = at(5 * SECOND_NS);
    let soonest = (0..8)
        .map(|key| {
            limiter
                .peek_with(&key, Request::new().at(stale))
                .unwrap()
                .reset_after()
        })
        .min()
        .unwrap();
    assert_eq!(soonest, Duration::from_secs(1));
    let refused = limiter.check_at(&NEW_KEY, stale);
    assert_refused(&refused, 1, soonest, "stale reading");
}

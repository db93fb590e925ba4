//! Keyed limiters through their public API: exact per-key limits under concurrent inserts,
//! per-call quotas, peek / cost-n checks and decision metadata, full-table policies, key modes
//! and table construction errors.
//!
//! The flood (millions of keys, memory) is in `keyed_flood.rs`; the comparison with a
//! reference `HashMap` model under random schedules in `keyed_model.rs`.

use nanolimit::{
    Algorithm, CheckError, Decision, Exact, FixedWindow, Gcra, InsufficientCapacity, KeyMode,
    KeyedLimiter, Limiter, ManualClock, QuotaError, SlidingWindow, TableError, WhenFull,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;
const MILLISECOND_NS: u64 = 1_000_000;

/// A keyed limiter with hashed `u64` keys on `clock`.
fn hashed<A: Algorithm>(
    quota: A,
    capacity: usize,
    clock: &ManualClock,
) -> KeyedLimiter<u64, A, ManualClock> {
    KeyedLimiter::<u64, _>::builder(quota)
        .capacity(capacity)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A keyed limiter with exact `u64` keys on `clock`.
fn exact<A: Algorithm>(
    quota: A,
    capacity: usize,
    clock: &ManualClock,
) -> KeyedLimiter<u64, A, ManualClock, Exact> {
    KeyedLimiter::<u64, _>::builder(quota)
        .capacity(capacity)
        .clock(clock.clone())
        .exact_keys()
        .build()
        .unwrap()
}

/// A table of one bucket (8 slots): capacity 4 plus headroom, one shard.
fn tiny<A: Algorithm>(
    quota: A,
    when_full: WhenFull,
    clock: &ManualClock,
) -> KeyedLimiter<u64, A, ManualClock> {
    let limiter = KeyedLimiter::<u64, _>::builder(quota)
        .capacity(4)
        .shards(1)
        .when_full(when_full)
        .clock(clock.clone())
        .build()
        .unwrap();
    // The tests below reason on this: every key's candidate slots are the same eight.
    assert_eq!(limiter.slots(), 8);
    assert_eq!(limiter.shards(), 1);
    limiter
}

/// Asserts that two decisions agree on everything a caller can read.
fn assert_same_decision<A: Algorithm>(keyed: &Decision<A>, direct: &Decision<A>, context: &str) {
    assert_eq!(
        keyed.is_allowed(),
        direct.is_allowed(),
        "allowed: {context}"
    );
    assert_eq!(
        keyed.is_untracked(),
        direct.is_untracked(),
        "untracked: {context}"
    );
    assert_eq!(keyed.cost(), direct.cost(), "cost: {context}");
    assert_eq!(keyed.limit(), direct.limit(), "limit: {context}");
    assert_eq!(
        keyed.remaining(),
        direct.remaining(),
        "remaining: {context}"
    );
    assert_eq!(
        keyed.reset_after(),
        direct.reset_after(),
        "reset: {context}"
    );
    assert_eq!(
        keyed.retry_after(),
        direct.retry_after(),
        "retry: {context}"
    );
    assert_eq!(keyed.state_word(), direct.state_word(), "state: {context}");
    assert_eq!(keyed.headers(), direct.headers(), "headers: {context}");
}

// ---------------------------------------------------------------------------------------------
// Concurrent checks and inserts on a frozen clock: every key admits exactly its capacity.
// ---------------------------------------------------------------------------------------------

/// The order in which thread `thread` visits the keys. Threads 0 and 1 (4 and 5, ...) use the
/// same order, so they reach each new key at about the same time and race to insert it;
/// thread 2 goes backwards and thread 3 strides through the keys, so the others meet them in
/// the middle.
fn key_order(thread: usize, keys: u64) -> Vec<u64> {
    match thread % 4 {
        0 | 1 => (0..keys).collect(),
        2 => (0..keys).rev().collect(),
        _ => (0..keys)
            .map(|index| (index * 7_919 + thread as u64) % keys)
            .collect(),
    }
}

/// `threads` threads each check every one of `keys` keys `limit` times (unit cost), from a
/// common start; the clock is frozen, so each key must admit exactly `limit` units in total
/// (of `threads × limit` attempts), and each key must have been inserted exactly once.
fn assert_every_key_admits_exactly<A: Algorithm, M: KeyMode<u64>>(
    limiter: &KeyedLimiter<u64, A, ManualClock, M>,
    threads: usize,
    keys: u64,
    limit: u64,
    context: &str,
) {
    let start = Barrier::new(threads);
    let arrivals = &AtomicU64::new(0);
    let admitted_per_thread: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let start = &start;
                scope.spawn(move || {
                    let order = key_order(thread, keys);
                    let mut admitted = vec![0u64; keys as usize];
                    start.wait();
                    // All threads take their n-th key together (rendezvous), then make all
                    // their attempts on it in a row: threads walking the same order reach each
                    // new key at the same moment, race to insert it, then contend on its state
                    // word; the others work on other keys of the same shards meanwhile.
                    for (position, &key) in order.iter().enumerate() {
                        rendezvous(arrivals, (position as u64 + 1) * threads as u64);
                        for _ in 0..limit {
                            let decision = limiter.check_key(&key);
                            assert!(!decision.is_untracked(), "{context}: key {key} untracked");
                            admitted[key as usize] += u64::from(decision.is_allowed());
                        }
                    }
                    admitted
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .collect()
    });
    for key in 0..keys {
        let total: u64 = admitted_per_thread
            .iter()
            .map(|admitted| admitted[key as usize])
            .sum();
        assert_eq!(total, limit, "{context}: key {key} admitted {total} units");
        let peeked = limiter.peek_key(&key);
        assert!(
            peeked.is_denied(),
            "{context}: key {key} still has capacity"
        );
        assert_eq!(peeked.remaining(), 0, "{context}: key {key}");
    }
    let stats = limiter.stats();
    assert_eq!(
        stats.inserts, keys,
        "{context}: one entry per key: {stats:?}"
    );
    assert_eq!(
        limiter.entries(),
        keys as usize,
        "{context}: one entry per key"
    );
    assert_eq!(stats.refused_new_keys, 0, "{context}: {stats:?}");
    assert_eq!(stats.untracked_new_keys, 0, "{context}: {stats:?}");
    assert_eq!(stats.evictions, 0, "{context}: {stats:?}");
    assert_eq!(stats.reclaims, 0, "{context}: {stats:?}");
}

/// Counts this thread's arrival and waits until `target` arrivals in all.
fn rendezvous(arrivals: &AtomicU64, target: u64) {
    arrivals.fetch_add(1, Ordering::AcqRel);
    let mut spins: u32 = 0;
    while arrivals.load(Ordering::Acquire) < target {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            // More threads than cores: let the others run.
            std::thread::yield_now();
        }
    }
}

const THREAD_COUNTS: [usize; 3] = [2, 4, 8];
const KEY_COUNTS: [u64; 2] = [64, 1_000];
const LIMITS: [u64; 2] = [5, 50];

/// Runs the exact-admission check for every (threads, keys, limit) combination, on fresh
/// limiters built by `build` (quota for `limit`, table capacity, shards, frozen clock).
fn every_combination<A: Algorithm, M: KeyMode<u64>>(
    name: &str,
    quota: impl Fn(u64) -> A,
    build: impl Fn(A, usize, usize, &ManualClock) -> KeyedLimiter<u64, A, ManualClock, M>,
) {
    for threads in THREAD_COUNTS {
        for keys in KEY_COUNTS {
            for limit in LIMITS {
                // Half a second into a window, so window algorithms are mid-window with no
                // previous count; frozen from here on.
                let clock = ManualClock::starting_at(1_000 * SECOND_NS + SECOND_NS / 2);
                // Room for every key (a full table would refuse some), several shards so that
                // keys of one shard contend on its insert lock while others proceed.
                let shards = if keys < 100 { 2 } else { 8 };
                let limiter = build(quota(limit), 4 * keys as usize, shards, &clock);
                let context = format!("{name}: {threads} threads, {keys} keys, limit {limit}");
                assert_every_key_admits_exactly(&limiter, threads, keys, limit, &context);
            }
        }
    }
}

fn build_hashed<A: Algorithm>(
    quota: A,
    capacity: usize,
    shards: usize,
    clock: &ManualClock,
) -> KeyedLimiter<u64, A, ManualClock> {
    KeyedLimiter::<u64, _>::builder(quota)
        .capacity(capacity)
        .shards(shards)
        .clock(clock.clone())
        .build()
        .unwrap()
}

fn build_exact<A: Algorithm>(
    quota: A,
    capacity: usize,
    shards: usize,
    clock: &ManualClock,
) -> KeyedLimiter<u64, A, ManualClock, Exact> {
    KeyedLimiter::<u64, _>::builder(quota)
        .capacity(capacity)
        .shards(shards)
        .clock(clock.clone())
        .exact_keys()
        .build()
        .unwrap()
}

fn gcra_quota(limit: u64) -> Gcra {
    Gcra::per_second(limit).unwrap()
}

fn sliding_quota(limit: u64) -> SlidingWindow {
    SlidingWindow::per_second(limit).unwrap()
}

fn fixed_quota(limit: u64) -> FixedWindow {
    FixedWindow::per_second(limit).unwrap()
}

#[test]
fn concurrent_gcra_hashed_keys_admit_exactly_their_burst() {
    every_combination("gcra hashed", gcra_quota, build_hashed);
}

#[test]
fn concurrent_gcra_exact_keys_admit_exactly_their_burst() {
    every_combination("gcra exact", gcra_quota, build_exact);
}

#[test]
fn concurrent_sliding_window_hashed_keys_admit_exactly_their_limit() {
    every_combination("sliding hashed", sliding_quota, build_hashed);
}

#[test]
fn concurrent_sliding_window_exact_keys_admit_exactly_their_limit() {
    every_combination("sliding exact", sliding_quota, build_exact);
}

#[test]
fn concurrent_fixed_window_hashed_keys_admit_exactly_their_limit() {
    every_combination("fixed hashed", fixed_quota, build_hashed);
}

#[test]
fn concurrent_fixed_window_exact_keys_admit_exactly_their_limit() {
    every_combination("fixed exact", fixed_quota, build_exact);
}

// ---------------------------------------------------------------------------------------------
// Per-call quotas.
// ---------------------------------------------------------------------------------------------

/// Checks `key` under `quota` (per call) and a direct limiter under the same quota at the same
/// times (every millisecond for `duration_ns`); returns how many units each admitted.
///
/// A quota on the table's own time scale is used as is: every decision must be identical. Any
/// other quota is rebased, its emission interval rounded up to a whole table tick (a fraction
/// of a nanosecond per emission): it may fall due a few nanoseconds after the direct
/// limiter, so when a check lands exactly on a due time the keyed limiter may admit that unit
/// one check later. Hence, at every check, the keyed limiter has admitted no more than the
/// direct one (never faster than configured) and at most one unit less.
fn per_call_and_direct_admissions(
    limiter: &KeyedLimiter<u64, Gcra, ManualClock>,
    key: u64,
    quota: Gcra,
    duration_ns: u64,
) -> (u64, u64) {
    let same_scale = limiter.rebase(&quota).unwrap() == quota;
    let direct = Limiter::with_clock(quota, ManualClock::new());
    let (mut keyed_admitted, mut direct_admitted) = (0u64, 0u64);
    let mut now_ns = MILLISECOND_NS / 2;
    while now_ns < duration_ns {
        let keyed = limiter
            .check_key_with_n_at(&key, 1, &quota, now_ns)
            .unwrap();
        let reference = direct.check_at(now_ns);
        assert_eq!(keyed.limit(), quota.burst());
        if same_scale {
            assert_same_decision(&keyed, &reference, &format!("{quota:?} at {now_ns} ns"));
        }
        keyed_admitted += u64::from(keyed.is_allowed());
        direct_admitted += u64::from(reference.is_allowed());
        assert!(
            keyed_admitted <= direct_admitted && keyed_admitted + 1 >= direct_admitted,
            "{quota:?} at {now_ns} ns: {keyed_admitted} admitted, direct {direct_admitted}"
        );
        now_ns += MILLISECOND_NS;
    }
    (keyed_admitted, direct_admitted)
}

#[test]
fn per_call_gcra_quota_of_another_rate_admits_at_that_rate() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 1_000, &clock);
    let duration_ns = 20 * SECOND_NS;
    let quotas = [
        // Ten times the table's rate (10 ms: not a whole number of the table's ticks).
        Gcra::per_second(100).unwrap(),
        // A period that is not a whole number of nanoseconds either.
        Gcra::per_period(3, Duration::from_secs(1)).unwrap(),
        // Slower than the table, with its own burst.
        Gcra::per_minute(7).unwrap().with_burst(2).unwrap(),
        // Twice the table's rate: the same time scale, used as is.
        Gcra::per_second(20).unwrap(),
        // The table's own quota.
        Gcra::per_second(10).unwrap(),
    ];
    for (key, quota) in quotas.into_iter().enumerate() {
        let (keyed, direct) =
            per_call_and_direct_admissions(&limiter, key as u64, quota, duration_ns);
        // Burst plus one unit per emission interval over the run.
        let expected = quota.burst() + (duration_ns as f64 * quota.rate_per_second() / 1e9) as u64;
        assert!(
            keyed.abs_diff(expected) <= 1,
            "{quota:?}: {keyed} admitted (direct {direct}), about {expected} expected"
        );
    }
    // Keys checked without a quota still get the table's.
    for _ in 0..10 {
        assert!(limiter.check_key_at(&99, 0).is_allowed());
    }
    assert!(limiter.check_key_at(&99, 0).is_denied());
}

#[test]
fn per_call_quota_decisions_report_that_quota() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 100, &clock);
    let premium = Gcra::per_second(100).unwrap();
    let decision = limiter.check_key_with(&1, &premium).unwrap();
    assert_eq!(decision.limit(), 100);
    assert_eq!(decision.remaining(), 99);
    for _ in 0..99 {
        assert!(limiter.check_key_with(&1, &premium).unwrap().is_allowed());
    }
    let denied = limiter.check_key_with(&1, &premium).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 0);
    // One unit per 10 ms (within a table tick of rounding).
    let retry_ns = denied.retry_after().as_nanos() as u64;
    assert!(
        (10 * MILLISECOND_NS..=10 * MILLISECOND_NS + 1).contains(&retry_ns),
        "{retry_ns} ns"
    );
}

#[test]
fn per_call_cost_is_validated_against_the_per_call_quota() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 100, &clock);
    let premium = Gcra::per_second(100).unwrap();
    // Above the table's capacity, within the per-call quota's.
    assert!(limiter
        .check_key_with_n_at(&1, 50, &premium, 0)
        .unwrap()
        .is_allowed());
    assert_eq!(
        limiter.check_key_n_at(&2, 50, 0).unwrap_err(),
        InsufficientCapacity {
            cost: 50,
            capacity: 10
        }
    );
    assert_eq!(
        limiter
            .check_key_with_n_at(&1, 101, &premium, 0)
            .unwrap_err(),
        CheckError::Capacity(InsufficientCapacity {
            cost: 101,
            capacity: 100
        })
    );
    assert_eq!(limiter.stats().inserts, 1);
}

#[test]
fn gcra_quota_change_keeps_the_debt_in_time() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(10).unwrap(), 100, &clock);

    // Upgrade: the key used its whole free burst at t = 0 (a second of debt). The new quota
    // has bursts of 200 units of 10 ms: 2 s of tolerance, 1 s of it used, so 100 units pass.
    let premium = Gcra::per_second(100).unwrap().with_burst(200).unwrap();
    for _ in 0..10 {
        assert!(limiter.check_key(&1).is_allowed());
    }
    assert!(limiter.check_key(&1).is_denied());
    let first = limiter.check_key_with(&1, &premium).unwrap();
    assert!(first.is_allowed());
    assert_eq!(first.remaining(), 99);
    for _ in 0..99 {
        assert!(limiter.check_key_with(&1, &premium).unwrap().is_allowed());
    }
    assert!(limiter.check_key_with(&1, &premium).unwrap().is_denied());
    // Back on the table's quota (1 s of tolerance), the key is two seconds in debt: its next
    // unit is due at 2 s + 100 ms − 1 s.
    clock.set_ns(1_099 * MILLISECOND_NS);
    assert!(limiter.check_key(&1).is_denied());
    clock.set_ns(1_101 * MILLISECOND_NS);
    assert!(limiter.check_key(&1).is_allowed());
    assert!(limiter.check_key(&1).is_denied());

    // Downgrade: the key used its free burst at t = 0; one per second with no burst admits
    // nothing until its debt (1 s) is paid, then one unit.
    clock.set_ns(0);
    let basic = Gcra::per_second(1).unwrap();
    for _ in 0..10 {
        assert!(limiter.check_key(&2).is_allowed());
    }
    let denied = limiter.check_key_with(&2, &basic).unwrap();
    assert!(denied.is_denied());
    let retry_ns = denied.retry_after().as_nanos() as u64;
    assert!(
        (SECOND_NS - 1..=SECOND_NS + 1).contains(&retry_ns),
        "{retry_ns} ns"
    );
    clock.set_ns(SECOND_NS - MILLISECOND_NS);
    assert!(limiter.check_key_with(&2, &basic).unwrap().is_denied());
    clock.set_ns(SECOND_NS);
    assert!(limiter.check_key_with(&2, &basic).unwrap().is_allowed());
    assert!(limiter.check_key_with(&2, &basic).unwrap().is_denied());
}

/// Windows: the counts carry over a quota change and the new limit applies at once.
fn window_quota_change_carries_counts<A: Algorithm>(
    table: A,
    larger: A,
    smaller: A,
    next_window_ns: u64,
) {
    assert_eq!(table.capacity(), 10);
    assert_eq!(larger.capacity(), 8);
    assert_eq!(smaller.capacity(), 3);
    // Mid-window; the window before is empty.
    let clock = ManualClock::starting_at(100 * SECOND_NS + SECOND_NS / 2);
    let limiter = hashed(table, 100, &clock);
    for _ in 0..5 {
        assert!(limiter.check_key(&1).is_allowed());
    }
    // 5 used: 3 more under a limit of 8.
    for remaining in (0..3).rev() {
        let decision = limiter.check_key_with(&1, &larger).unwrap();
        assert!(decision.is_allowed());
        assert_eq!(decision.remaining(), remaining);
        assert_eq!(decision.limit(), 8);
    }
    assert!(limiter.check_key_with(&1, &larger).unwrap().is_denied());
    // 8 used: nothing under a limit of 3.
    let denied = limiter.check_key_with(&1, &smaller).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 0);
    // Back to the table's limit of 10: 2 more.
    assert!(limiter.check_key(&1).is_allowed());
    assert!(limiter.check_key(&1).is_allowed());
    assert!(limiter.check_key(&1).is_denied());
    // A key that has used 2 has 1 left under the smaller quota.
    assert!(limiter.check_key_n(&2, 2).unwrap().is_allowed());
    assert!(limiter.check_key_with(&2, &smaller).unwrap().is_allowed());
    assert!(limiter.check_key_with(&2, &smaller).unwrap().is_denied());
    // Long after, every limit applies in full.
    clock.set_ns(next_window_ns);
    for _ in 0..8 {
        assert!(limiter.check_key_with(&1, &larger).unwrap().is_allowed());
    }
    assert!(limiter.check_key_with(&1, &larger).unwrap().is_denied());
}

#[test]
fn fixed_window_quota_change_carries_counts_and_applies_the_new_limit() {
    window_quota_change_carries_counts(
        FixedWindow::per_second(10).unwrap(),
        FixedWindow::per_second(8).unwrap(),
        FixedWindow::per_second(3).unwrap(),
        101 * SECOND_NS,
    );
}

#[test]
fn sliding_window_quota_change_carries_counts_and_applies_the_new_limit() {
    window_quota_change_carries_counts(
        SlidingWindow::per_second(10).unwrap(),
        SlidingWindow::per_second(8).unwrap(),
        SlidingWindow::per_second(3).unwrap(),
        // Two windows on: the counts have left the sliding window.
        102 * SECOND_NS,
    );
}

#[test]
fn window_quota_of_another_window_length_is_incompatible() {
    let clock = ManualClock::new();
    let fixed = hashed(FixedWindow::per_second(10).unwrap(), 100, &clock);
    let two_seconds = FixedWindow::new(10, Duration::from_secs(2)).unwrap();
    assert_eq!(
        fixed.check_key_with(&1, &two_seconds).unwrap_err(),
        CheckError::Quota(QuotaError::IncompatibleQuota)
    );
    assert_eq!(
        fixed
            .check_key_with_n_at(&1, 1, &two_seconds, 0)
            .unwrap_err(),
        CheckError::Quota(QuotaError::IncompatibleQuota)
    );
    assert_eq!(
        fixed.rebase(&two_seconds),
        Err(QuotaError::IncompatibleQuota)
    );
    // Nothing was inserted or consumed.
    assert_eq!(fixed.stats().inserts, 0);
    assert_eq!(fixed.peek_key(&1).remaining(), 10);

    let sliding = hashed(SlidingWindow::per_minute(10).unwrap(), 100, &clock);
    let per_second = SlidingWindow::per_second(10).unwrap();
    assert_eq!(
        sliding.check_key_with(&1, &per_second).unwrap_err(),
        CheckError::Quota(QuotaError::IncompatibleQuota)
    );
    assert_eq!(
        sliding.rebase(&per_second),
        Err(QuotaError::IncompatibleQuota)
    );
    assert_eq!(sliding.stats().inserts, 0);
    // The error reads as what it is.
    assert!(CheckError::Quota(QuotaError::IncompatibleQuota)
        .to_string()
        .contains("window"));
}

/// Per-call checks with `quota` and with the table's rebased copy of it decide the same, at
/// every step of the same history (on two keys of one table).
fn rebased_quota_decides_the_same<A: Algorithm + PartialEq>(table: A, quota: A, times_ns: &[u64]) {
    let clock = ManualClock::new();
    let limiter = hashed(table, 100, &clock);
    let rebased = limiter.rebase(&quota).unwrap();
    // Rebasing is idempotent: the rebased quota is already in the table's units.
    assert_eq!(limiter.rebase(&rebased).unwrap(), rebased);
    for (step, &now_ns) in times_ns.iter().enumerate() {
        let cost = 1 + step as u64 % quota.capacity();
        let with_quota = limiter
            .check_key_with_n_at(&1, cost, &quota, now_ns)
            .unwrap();
        let with_rebased = limiter
            .check_key_with_n_at(&2, cost, &rebased, now_ns)
            .unwrap();
        assert_same_decision(&with_quota, &with_rebased, &format!("step {step}"));
    }
}

#[test]
fn rebased_quota_reused_gives_the_same_decisions() {
    let times_ns: Vec<u64> = (0..2_000u64)
        .map(|step| step * 7 * MILLISECOND_NS + (step % 13) * 1_001)
        .collect();
    rebased_quota_decides_the_same(
        Gcra::per_second(10).unwrap(),
        Gcra::per_period(3, Duration::from_secs(1))
            .unwrap()
            .with_burst(4)
            .unwrap(),
        &times_ns,
    );
    rebased_quota_decides_the_same(
        Gcra::per_second(10).unwrap(),
        Gcra::per_second(250).unwrap(),
        &times_ns,
    );
    rebased_quota_decides_the_same(
        FixedWindow::per_second(10).unwrap(),
        FixedWindow::per_second(4).unwrap(),
        &times_ns,
    );
    rebased_quota_decides_the_same(
        SlidingWindow::per_second(10).unwrap(),
        SlidingWindow::per_second(25).unwrap(),
        &times_ns,
    );
}

// ---------------------------------------------------------------------------------------------
// peek, check_n, and decision metadata as for direct limiters.
// ---------------------------------------------------------------------------------------------

#[test]
fn peek_consumes_nothing_and_inserts_nothing() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(3).unwrap(), 100, &clock);
    for _ in 0..10 {
        let peeked = limiter.peek_key(&7);
        assert!(peeked.is_allowed());
        assert_eq!(peeked.remaining(), 3);
        assert_eq!(peeked.limit(), 3);
        assert!(!peeked.is_untracked());
    }
    assert!(limiter.peek_key_n_at(&7, 3, 0).unwrap().is_allowed());
    assert_eq!(
        limiter.peek_key_n_at(&7, 4, 0).unwrap_err(),
        InsufficientCapacity {
            cost: 4,
            capacity: 3
        }
    );
    assert_eq!(limiter.stats().inserts, 0, "a peek must not insert");
    // The whole burst is still there.
    for remaining in (0..3).rev() {
        let decision = limiter.check_key(&7);
        assert!(decision.is_allowed());
        assert_eq!(decision.remaining(), remaining);
    }
    assert_eq!(limiter.stats().inserts, 1);
    let peeked = limiter.peek_key(&7);
    assert!(peeked.is_denied());
    assert_eq!(peeked.remaining(), 0);
    // A peek of a denied key reports when to come back, like the check would.
    assert_eq!(peeked.retry_after(), limiter.check_key(&7).retry_after());
    assert!(peeked.retry_after() > Duration::ZERO);
    // Later, the peek sees the refill (and still consumes nothing).
    assert!(limiter.peek_key_at(&7, SECOND_NS).is_allowed());
    assert_eq!(limiter.peek_key_at(&7, SECOND_NS).remaining(), 3);
    assert_eq!(limiter.check_key_at(&7, SECOND_NS).remaining(), 2);
}

#[test]
fn check_n_is_all_or_nothing_and_rejects_impossible_costs() {
    let clock = ManualClock::new();
    let limiter = exact(FixedWindow::per_second(10).unwrap(), 100, &clock);
    assert!(limiter.check_key_n(&1, 6).unwrap().is_allowed());
    // 4 left: a cost of 5 is denied and takes nothing.
    let denied = limiter.check_key_n(&1, 5).unwrap();
    assert!(denied.is_denied());
    assert_eq!(denied.remaining(), 4);
    assert_eq!(denied.cost(), 5);
    assert!(limiter.check_key_n(&1, 4).unwrap().is_allowed());
    assert!(limiter.check_key_n(&1, 1).unwrap().is_denied());
    // More than the limit can never pass.
    assert_eq!(
        limiter.check_key_n(&2, 11).unwrap_err(),
        InsufficientCapacity {
            cost: 11,
            capacity: 10
        }
    );
    assert!(limiter.check_key_n(&2, 10).unwrap().is_allowed());
    // A cost of zero is always allowed, consumes nothing, and does not insert.
    let free = limiter.check_key_n(&3, 0).unwrap();
    assert!(free.is_allowed());
    assert_eq!(free.remaining(), 10);
    assert!(limiter.check_key_n(&1, 0).unwrap().is_allowed());
    assert_eq!(limiter.stats().inserts, 2);
    // The peek and per-call forms of the same: `peek_key_n` sees the 10 units of key 2 spent.
    assert!(limiter.peek_key_n(&2, 1).unwrap().is_denied());
    assert!(limiter.peek_key_n(&4, 10).unwrap().is_allowed());
    assert!(limiter.peek_key_n(&4, 11).is_err());
    let tier = FixedWindow::per_second(20).unwrap();
    assert!(limiter
        .check_key_with_n(&2, 10, &tier)
        .unwrap()
        .is_allowed());
    assert!(limiter.check_key_with_n(&2, 1, &tier).unwrap().is_denied());
    assert!(limiter.check_key_with_n(&2, 21, &tier).is_err());
    assert!(limiter
        .check_key_with_at(&5, &tier, 0)
        .unwrap()
        .is_allowed());
    assert_eq!(limiter.peek_key_n_at(&5, 1, 0).unwrap().remaining(), 9);
    assert_eq!(limiter.stats().inserts, 3);
}

/// A deterministic mixed history (increasing times with some steps back, costs from 0 to the
/// capacity, checks and peeks) applied to one key of a keyed limiter and to a direct limiter:
/// every decision must agree in every field.
fn keyed_metadata_matches_direct<A: Algorithm>(quota: A, step_ns: u64) {
    let clock = ManualClock::new();
    let keyed = hashed(quota, 100, &clock);
    let keyed_exact = exact(quota, 100, &clock);
    let direct = Limiter::with_clock(quota, clock.clone());
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut now_ns: u64 = 10 * SECOND_NS;
    let mut allowed = 0;
    let mut denied = 0;
    for step in 0..5_000 {
        let random = next();
        now_ns = if random % 10 == 0 {
            now_ns.saturating_sub(random % (2 * step_ns))
        } else {
            now_ns + random % step_ns
        };
        let cost = next() % (quota.capacity() + 1);
        let context = format!("step {step} at {now_ns} ns, cost {cost}");
        clock.set_ns(now_ns);
        if next() % 4 == 0 {
            let from_direct = direct.peek_n(cost).unwrap();
            let from_keyed = keyed.peek_key_n_at(&42, cost, now_ns).unwrap();
            assert_same_decision(&from_keyed, &from_direct, &context);
            let from_exact = keyed_exact.peek_key_n_at(&42, cost, now_ns).unwrap();
            assert_same_decision(&from_exact, &from_direct, &context);
            if cost == 1 {
                assert_same_decision(&keyed.peek_key(&42), &direct.peek(), &context);
            }
        } else {
            let from_direct = direct.check_n(cost).unwrap();
            let from_keyed = keyed.check_key_n(&42, cost).unwrap();
            assert_same_decision(&from_keyed, &from_direct, &context);
            let from_exact = keyed_exact.check_key_n_at(&42, cost, now_ns).unwrap();
            assert_same_decision(&from_exact, &from_direct, &context);
            if from_direct.is_allowed() {
                allowed += 1;
            } else {
                denied += 1;
            }
        }
    }
    // The history exercised both outcomes.
    assert!(
        allowed > 100 && denied > 100,
        "{allowed} allowed, {denied} denied"
    );
    let over = quota.capacity() + 1;
    assert_eq!(
        keyed.check_key_n(&42, over).unwrap_err(),
        direct.check_n(over).unwrap_err()
    );
    assert_eq!(keyed.stats().inserts, 1);
}

#[test]
fn keyed_decision_metadata_equals_direct_for_gcra() {
    keyed_metadata_matches_direct(
        Gcra::per_second(50).unwrap().with_burst(7).unwrap(),
        40 * MILLISECOND_NS,
    );
}

#[test]
fn keyed_decision_metadata_equals_direct_for_sliding_window() {
    keyed_metadata_matches_direct(SlidingWindow::per_second(9).unwrap(), 120 * MILLISECOND_NS);
}

#[test]
fn keyed_decision_metadata_equals_direct_for_fixed_window() {
    keyed_metadata_matches_direct(FixedWindow::per_second(9).unwrap(), 120 * MILLISECOND_NS);
}

// ---------------------------------------------------------------------------------------------
// Full tables: WhenFull policies, reclaim.
// ---------------------------------------------------------------------------------------------

/// Fills the 8 slots of a tiny table with keys 0..8, one unit each at `now_ns`.
fn fill<A: Algorithm>(limiter: &KeyedLimiter<u64, A, ManualClock>) {
    for key in 0..8 {
        let decision = limiter.check_key(&key);
        assert!(decision.is_allowed(), "key {key}");
        assert!(!decision.is_untracked(), "key {key}");
    }
    assert_eq!(limiter.stats().inserts, 8);
}

#[test]
fn full_table_denies_new_keys_by_default_and_keeps_live_keys_exact() {
    let clock = ManualClock::new();
    let quota = Gcra::per_second(3).unwrap();
    let limiter = tiny(quota, WhenFull::Deny, &clock);
    fill(&limiter);
    for attempt in 1..=5 {
        let decision = limiter.check_key(&100);
        assert!(decision.is_denied());
        assert!(decision.is_untracked());
        assert_eq!(limiter.stats().refused_new_keys, attempt);
    }
    // The live keys keep their exact limit: two more units each.
    for key in 0..8 {
        assert!(limiter.check_key(&key).is_allowed());
        assert!(limiter.check_key(&key).is_allowed());
        let denied = limiter.check_key(&key);
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
fn full_table_allows_new_keys_untracked_when_asked() {
    let clock = ManualClock::new();
    let quota = FixedWindow::per_second(2).unwrap();
    let limiter = tiny(quota, WhenFull::Allow, &clock);
    fill(&limiter);
    // Untracked: allowed every time, far beyond its limit, and never stored.
    for attempt in 1..=20 {
        let decision = limiter.check_key(&100);
        assert!(decision.is_allowed());
        assert!(decision.is_untracked());
        assert_eq!(decision.retry_after(), Duration::ZERO);
        assert_eq!(limiter.stats().untracked_new_keys, attempt);
    }
    assert_eq!(limiter.stats().inserts, 8);
    // Live keys are unaffected: one more unit each.
    for key in 0..8 {
        assert!(limiter.check_key(&key).is_allowed());
        assert!(limiter.check_key(&key).is_denied());
    }
    assert_eq!(limiter.stats().refused_new_keys, 0);
}

#[test]
fn full_table_evicts_the_entry_closest_to_fresh_and_the_new_key_inherits_its_state() {
    let clock = ManualClock::new();
    let burst = 20;
    let quota = Gcra::per_second(burst).unwrap();
    let limiter = tiny(quota, WhenFull::EvictClosestToFresh, &clock);
    // Key k has used 2 + k units: key 0 is closest to fresh.
    for key in 0..8 {
        assert!(limiter.check_key_n(&key, 2 + key).unwrap().is_allowed());
    }
    let newcomer = limiter.check_key(&100);
    assert!(newcomer.is_allowed());
    assert!(!newcomer.is_untracked());
    let stats = limiter.stats();
    assert_eq!((stats.inserts, stats.evictions, stats.reclaims), (9, 1, 0));
    // It inherited key 0's 2 units: 17 left, not 19 as for a fresh key.
    assert_eq!(newcomer.remaining(), burst - 2 - 1);
    for _ in 0..burst - 3 {
        assert!(limiter.check_key(&100).is_allowed());
    }
    let denied = limiter.check_key(&100);
    assert!(denied.is_denied());
    assert!(!denied.is_untracked());
    // Keys 1..8 kept their state; key 0 is gone (a peek of an absent key sees a fresh one).
    for key in 1..8 {
        assert_eq!(
            limiter.peek_key(&key).remaining(),
            burst - 2 - key,
            "key {key}"
        );
    }
    assert_eq!(limiter.peek_key(&0).remaining(), burst);
    // Key 0 returns to a full table: it evicts the closest to fresh in turn (key 1, 3 used)
    // and inherits that state.
    let returning = limiter.check_key(&0);
    assert!(returning.is_allowed());
    assert!(!returning.is_untracked());
    assert_eq!(returning.remaining(), burst - 3 - 1);
    assert_eq!(limiter.stats().evictions, 2);
    assert_eq!(limiter.peek_key(&1).remaining(), burst);
}

#[test]
fn eviction_never_admits_a_new_key_the_inherited_state_would_deny() {
    let clock = ManualClock::new();
    let quota = Gcra::per_second(5).unwrap();
    let limiter = tiny(quota, WhenFull::EvictClosestToFresh, &clock);
    for key in 0..8 {
        assert!(limiter.check_key_n(&key, 5).unwrap().is_allowed());
    }
    // Every candidate is exhausted: taking any of them would deny the new key anyway, so none
    // is evicted and the new key is refused.
    let refused = limiter.check_key(&100);
    assert!(refused.is_denied());
    assert!(refused.is_untracked());
    let stats = limiter.stats();
    assert_eq!(
        (stats.evictions, stats.refused_new_keys, stats.inserts),
        (0, 1, 8)
    );
    for key in 0..8 {
        assert_eq!(
            limiter.peek_key(&key).remaining(),
            0,
            "key {key} kept its state"
        );
    }
    // One emission interval later every entry has room for one unit: the next new key
    // evicts one and gets exactly that unit.
    clock.set_ns(200 * MILLISECOND_NS);
    let newcomer = limiter.check_key(&100);
    assert!(newcomer.is_allowed());
    assert_eq!(newcomer.remaining(), 0);
    assert_eq!(limiter.stats().evictions, 1);
    assert!(limiter.check_key(&100).is_denied());
}

#[test]
fn fixed_window_eviction_carries_the_count_over() {
    let clock = ManualClock::starting_at(SECOND_NS / 4);
    let limiter = tiny(
        FixedWindow::per_second(5).unwrap(),
        WhenFull::EvictClosestToFresh,
        &clock,
    );
    // All entries used 3 of 5 in this window: whichever is evicted, the new key inherits 3.
    for key in 0..8 {
        assert!(limiter.check_key_n(&key, 3).unwrap().is_allowed());
    }
    let newcomer = limiter.check_key(&100);
    assert!(newcomer.is_allowed());
    assert_eq!(newcomer.remaining(), 1);
    assert!(limiter.check_key(&100).is_allowed());
    assert!(limiter.check_key(&100).is_denied());
    assert_eq!(limiter.stats().evictions, 1);
}

#[test]
fn sliding_window_eviction_picks_the_entry_with_the_smallest_reset_after() {
    // Window 0: every key counts one unit.
    let clock = ManualClock::starting_at(SECOND_NS / 4);
    let limiter = tiny(
        SlidingWindow::per_second(4).unwrap(),
        WhenFull::EvictClosestToFresh,
        &clock,
    );
    fill(&limiter);
    // Half-way through window 1 (the previous window's units now weigh ⌊0.5⌋ = 0): key 0 uses
    // one more unit, keys 1..8 two more. Key 0 is full again 1 ns after the window ends (its one
    // unit then weighs less than one); the others only after 1 s + 1 ns.
    clock.set_ns(SECOND_NS + SECOND_NS / 2);
    assert!(limiter.check_key(&0).is_allowed());
    for key in 1..8 {
        assert!(limiter.check_key(&key).is_allowed());
        assert!(limiter.check_key(&key).is_allowed());
    }
    assert_eq!(
        limiter.peek_key(&0).reset_after(),
        Duration::from_nanos(SECOND_NS / 2 + 1)
    );
    assert_eq!(
        limiter.peek_key(&1).reset_after(),
        Duration::from_nanos(SECOND_NS + 1)
    );
    let newcomer = limiter.check_key(&100);
    assert!(newcomer.is_allowed());
    assert!(!newcomer.is_untracked());
    assert_eq!(limiter.stats().evictions, 1);
    // Inherited: key 0's current unit plus the newcomer's own, 2 left (a fresh key would
    // have 3).
    assert_eq!(newcomer.remaining(), 2);
    assert!(limiter.check_key(&100).is_allowed());
    assert!(limiter.check_key(&100).is_allowed());
    assert!(limiter.check_key(&100).is_denied());
    // The others kept their state (2 current units, the previous one weighing 0: 2 left each).
    for key in 1..8 {
        assert_eq!(limiter.peek_key(&key).remaining(), 2, "key {key}");
    }
}

/// A reading far behind the table's latest ones (a caller-supplied time, or a thread stalled
/// between reading the clock and checking): live entries stay live for it, so it reclaims no
/// slot, and it never writes a word that an earlier observation of a slot could match.
fn assert_a_stale_reading_takes_no_live_slot<A: Algorithm>(quota: A, now_ns: u64, stale_ns: u64) {
    let clock = ManualClock::starting_at(now_ns);
    let limiter = tiny(quota, WhenFull::Deny, &clock);
    let capacity = quota.capacity();
    for key in 0..8u64 {
        for _ in 0..capacity {
            assert!(limiter.check_key(&key).is_allowed(), "{quota:?}: key {key}");
        }
    }
    let spent: Vec<u64> = (0..8u64)
        .map(|key| limiter.peek_key(&key).state_word())
        .collect();
    // A new key at the stale reading: every candidate slot is live, so it is refused.
    let decision = limiter.check_key_at(&100, stale_ns);
    assert!(decision.is_denied() && decision.is_untracked(), "{quota:?}");
    let stats = limiter.stats();
    assert_eq!(
        (stats.reclaims, stats.refused_new_keys),
        (0, 1),
        "{quota:?}"
    );
    // The live keys, checked at the stale reading, are judged in their spent windows and keep
    // their words; at the real time they are still spent.
    for key in 0..8u64 {
        assert!(
            limiter.check_key_at(&key, stale_ns).is_denied(),
            "{quota:?}"
        );
        assert_eq!(limiter.peek_key(&key).state_word(), spent[key as usize]);
        assert!(limiter.check_key(&key).is_denied(), "{quota:?}: key {key}");
    }
}

#[test]
fn a_stale_reading_never_reclaims_a_live_key_or_rewinds_its_word() {
    let minute_ns = 60 * SECOND_NS;
    let year_ns = 365 * 24 * 3_600 * SECOND_NS;
    // Shortest sliding windows: up to 2^16 windows (65 s) behind; 5 s here.
    let one_ms = SlidingWindow::new(3, Duration::from_millis(1)).unwrap();
    assert_a_stale_reading_takes_no_live_slot(one_ms, 10 * SECOND_NS, 5 * SECOND_NS);
    // Windows whose index never wraps: any lag, here ten years.
    let per_minute = SlidingWindow::per_minute(3).unwrap();
    assert_a_stale_reading_takes_no_live_slot(per_minute, 11 * year_ns, year_ns + minute_ns);
    let per_second = FixedWindow::per_second(3).unwrap();
    assert_a_stale_reading_takes_no_live_slot(per_second, 11 * year_ns, year_ns);
    // And 2^20 + 5 windows behind, once read as a key idle for nearly 2^40 windows.
    let far_ns = ((1 << 20) + 5) * SECOND_NS;
    assert_a_stale_reading_takes_no_live_slot(per_second, far_ns, 0);
    let gcra = Gcra::per_second(3).unwrap();
    assert_a_stale_reading_takes_no_live_slot(gcra, 11 * year_ns, 0);
}

#[test]
fn expired_entries_are_reclaimed_by_new_keys_without_any_sweep() {
    for when_full in [
        WhenFull::Deny,
        WhenFull::Allow,
        WhenFull::EvictClosestToFresh,
    ] {
        let clock = ManualClock::new();
        let quota = Gcra::per_second(10).unwrap();
        let limiter = tiny(quota, when_full, &clock);
        fill(&limiter);
        // One unit each: fresh again one emission interval later.
        clock.set_ns(100 * MILLISECOND_NS);
        for (index, key) in (100..108).enumerate() {
            let decision = limiter.check_key(&key);
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
                assert!(limiter.check_key(&key).is_allowed());
            }
            assert!(limiter.check_key(&key).is_denied());
        }
    }
}

#[test]
fn a_live_entry_is_not_reclaimed_while_an_expired_one_is_available() {
    let clock = ManualClock::new();
    let limiter = tiny(Gcra::per_second(10).unwrap(), WhenFull::Deny, &clock);
    // Keys 0..7 take one unit (fresh again at 100 ms); key 7 takes the whole burst (1 s).
    for key in 0..7 {
        assert!(limiter.check_key(&key).is_allowed());
    }
    assert!(limiter.check_key_n(&7, 10).unwrap().is_allowed());
    clock.set_ns(100 * MILLISECOND_NS);
    for key in 100..107 {
        assert!(limiter.check_key(&key).is_allowed());
    }
    // Key 7 is still exhausted, tracked: its slot was not given away.
    assert_eq!(limiter.peek_key(&7).remaining(), 1);
    assert!(limiter.check_key(&7).is_allowed());
    assert!(limiter.check_key(&7).is_denied());
    // Now every slot is live: the next new key is refused.
    assert!(limiter.check_key(&200).is_untracked());
}

// ---------------------------------------------------------------------------------------------
// Key modes.
// ---------------------------------------------------------------------------------------------

#[test]
fn exact_keys_differing_only_in_high_bits_are_distinct() {
    let clock = ManualClock::new();
    let limiter: KeyedLimiter<u128, _, _, Exact> =
        KeyedLimiter::<u128, _>::builder(FixedWindow::per_second(1).unwrap())
            .capacity(100)
            .clock(clock.clone())
            .exact_keys()
            .build()
            .unwrap();
    let keys = [1u128, 1 | (1 << 64), 1 | (1 << 127), u128::MAX];
    for key in keys {
        assert!(limiter.check_key(&key).is_allowed(), "{key:#x}");
    }
    for key in keys {
        assert!(limiter.check_key(&key).is_denied(), "{key:#x}");
    }
    assert_eq!(limiter.stats().inserts, keys.len() as u64);
}

#[test]
fn exact_ipv4_keys_share_a_state_with_their_mapped_ipv6_form() {
    let clock = ManualClock::new();
    let limiter: KeyedLimiter<IpAddr, _, _, Exact> =
        KeyedLimiter::<IpAddr, _>::builder(Gcra::per_second(2).unwrap())
            .capacity(100)
            .clock(clock.clone())
            .exact_keys()
            .build()
            .unwrap();
    let v4 = Ipv4Addr::new(192, 0, 2, 1);
    assert!(limiter.check_key(&IpAddr::V4(v4)).is_allowed());
    assert!(limiter
        .check_key(&IpAddr::V6(v4.to_ipv6_mapped()))
        .is_allowed());
    assert!(limiter.check_key(&IpAddr::V4(v4)).is_denied());
    // Another host is another key.
    assert!(limiter
        .check_key(&IpAddr::V6(Ipv6Addr::LOCALHOST))
        .is_allowed());
    assert_eq!(limiter.stats().inserts, 2);
}

#[test]
fn hashed_keys_may_be_unsized() {
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::<str, _>::builder(SlidingWindow::per_minute(2).unwrap())
        .capacity(100)
        .clock(clock.clone())
        .build()
        .unwrap();
    let alice = String::from("alice");
    assert!(limiter.check_key(alice.as_str()).is_allowed());
    assert!(limiter.check_key("alice").is_allowed());
    assert!(limiter.check_key("alice").is_denied());
    assert!(limiter.check_key("bob").is_allowed());
    assert_eq!(limiter.stats().inserts, 2);
    assert!(limiter.bytes_per_key() <= 32);
}

// ---------------------------------------------------------------------------------------------
// Construction.
// ---------------------------------------------------------------------------------------------

#[test]
fn table_construction_errors() {
    let quota = Gcra::per_second(1).unwrap();
    let build = |capacity: usize, shards: usize| {
        KeyedLimiter::<u64, _>::builder(quota)
            .capacity(capacity)
            .shards(shards)
            .clock(ManualClock::new())
            .build()
            .map(|limiter| limiter.shards())
    };
    let build_exact = |capacity: usize, shards: usize| {
        KeyedLimiter::<u64, _>::builder(quota)
            .capacity(capacity)
            .shards(shards)
            .clock(ManualClock::new())
            .exact_keys()
            .build()
            .map(|limiter| limiter.shards())
    };
    type Build<'a> = &'a dyn Fn(usize, usize) -> Result<usize, TableError>;
    for build in [&build as Build, &build_exact] {
        assert_eq!(build(0, 1), Err(TableError::ZeroCapacity));
        for shards in [0, 3, 6, 12, 1_000] {
            assert_eq!(
                build(1_000, shards),
                Err(TableError::ShardsNotPowerOfTwo { shards })
            );
        }
        assert_eq!(
            build(usize::MAX, 1),
            Err(TableError::CapacityTooLarge {
                capacity: usize::MAX
            })
        );
        assert_eq!(
            build(usize::MAX / 2, 4),
            Err(TableError::CapacityTooLarge {
                capacity: usize::MAX / 2
            })
        );
        for shards in [1, 2, 4, 64] {
            assert_eq!(build(1_000, shards), Ok(shards));
        }
        // More shards than keys still builds a working table.
        assert_eq!(build(1, 16), Ok(16));
    }
    assert_eq!(
        KeyedLimiter::new(quota, 0).map(|limiter: KeyedLimiter<u64, _>| limiter.capacity()),
        Err(TableError::ZeroCapacity)
    );
    assert!(TableError::ShardsNotPowerOfTwo { shards: 3 }
        .to_string()
        .contains('3'));
    assert!(TableError::ZeroCapacity.to_string().contains("zero"));
}

#[test]
fn a_table_reports_its_size() {
    let clock = ManualClock::new();
    let limiter = hashed(Gcra::per_second(1).unwrap(), 1_000, &clock);
    assert_eq!(limiter.capacity(), 1_000);
    assert!(limiter.slots() >= 1_000 + 1_000 / 3);
    assert_eq!(limiter.slots() % 8, 0);
    assert!(limiter.bytes_per_key() <= 32);
    assert!(limiter.memory_bytes() >= limiter.slots() * 16);
    let exact_limiter = exact(Gcra::per_second(1).unwrap(), 1_000, &clock);
    assert!(exact_limiter.memory_bytes() >= exact_limiter.slots() * 24);
    // The most shards the default rule gives a 100,000-key table, whatever the core count
    // (at least 2,048 keys per shard: 32), cost no more than a byte per key over one shard.
    for (shards, bytes_per_key) in [(1, 26), (32, 26)] {
        let limiter = KeyedLimiter::<u64, _>::builder(Gcra::per_second(1).unwrap())
            .capacity(100_000)
            .shards(shards)
            .clock(clock.clone())
            .build()
            .unwrap();
        assert_eq!(limiter.bytes_per_key(), bytes_per_key, "{shards} shards");
        let exact = KeyedLimiter::<u64, _>::builder(Gcra::per_second(1).unwrap())
            .capacity(100_000)
            .shards(shards)
            .clock(clock.clone())
            .exact_keys()
            .build()
            .unwrap();
        assert_eq!(exact.bytes_per_key(), 31, "{shards} shards");
    }
    let default_shards = KeyedLimiter::<u64, _>::new(Gcra::per_second(1).unwrap(), 100_000)
        .unwrap()
        .shards();
    assert!(default_shards <= 32, "{default_shards} shards");
    // A single key in a table of one: it fits, and is limited.
    let smallest = KeyedLimiter::<u64, _>::builder(Gcra::per_second(1).unwrap())
        .capacity(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    assert!(smallest.check_key(&5).is_allowed());
    assert!(smallest.check_key(&5).is_denied());
}

/// Fills a table built by `build` (capacity `capacity`, hash seed `seed`) with distinct live
/// keys (one unit of a one-per-hour quota each, at one instant: none is reclaimable) until the
/// first new key is refused; returns how many were stored, as a fraction of the capacity.
fn first_refusal<M: KeyMode<u64>>(
    build: impl FnOnce() -> KeyedLimiter<u64, Gcra, ManualClock, M>,
    capacity: usize,
    seed: u64,
) -> f64 {
    let limiter = build();
    // Scattered keys (an odd multiplier is a bijection on u64).
    let mut stored = 0u64;
    for index in 0.. {
        let key = (index as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if limiter.check_key_at(&key, 0).is_untracked() {
            break;
        }
        stored += 1;
    }
    assert_eq!(limiter.stats().refused_new_keys, 1);
    assert_eq!(limiter.entries() as u64, stored);
    stored as f64 / capacity as f64
}

/// The module documentation's figures for when a table full of live keys first refuses a new
/// key: `Hashed` tables hold at least their capacity, `Exact` ones at least 85 % of it.
#[test]
fn a_table_of_live_keys_first_refuses_a_new_key_where_documented() {
    let quota = Gcra::per_hour(1).unwrap();
    for capacity in [1_000, 100_000] {
        for seed in 1..=5u64 {
            let hashed = first_refusal(
                || {
                    KeyedLimiter::<u64, _>::builder(quota)
                        .capacity(capacity)
                        .seed(seed)
                        .clock(ManualClock::new())
                        .build()
                        .unwrap()
                },
                capacity,
                seed,
            );
            assert!(
                hashed >= 1.0,
                "hashed, {capacity} keys, seed {seed}: {hashed}"
            );
            let exact = first_refusal(
                || {
                    KeyedLimiter::<u64, _>::builder(quota)
                        .capacity(capacity)
                        .seed(seed)
                        .clock(ManualClock::new())
                        .exact_keys()
                        .build()
                        .unwrap()
                },
                capacity,
                seed,
            );
            assert!(
                exact >= 0.85,
                "exact, {capacity} keys, seed {seed}: {exact}"
            );
            eprintln!("{capacity} keys, seed {seed}: first refusal at {hashed:.3} (hashed), {exact:.3} (exact) of capacity");
        }
    }
}

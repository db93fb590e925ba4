//! Concurrent checks and inserts on a frozen clock: every key admits exactly its limit, and is
//! inserted exactly once.

use crate::common::keyed::{clock_at, table, TableShape};
use crate::common::SECOND_NS;
use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{FixedWindow, Gcra, KeyedLimiter, ManualClock, Quota, SlidingWindow};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

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
fn assert_every_key_admits_exactly<Q: Quota, M: KeyMode<u64>>(
    limiter: &KeyedLimiter<u64, Q, ManualClock, M>,
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
                            let decision = limiter.check(&key);
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
        let peeked = limiter.peek(&key);
        assert!(
            peeked.is_denied(),
            "{context}: key {key} still has some of its limit"
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
/// tables of key mode `M` whose quota for `limit` is `quota(limit)`.
fn every_combination<M: KeyMode<u64>, Q: Quota>(name: &str, quota: impl Fn(u64) -> Q) {
    for threads in THREAD_COUNTS {
        for keys in KEY_COUNTS {
            for limit in LIMITS {
                // Half a second into a window, so window quotas are mid-window with no
                // previous count; frozen from here on.
                let clock = clock_at(1_000 * SECOND_NS + SECOND_NS / 2);
                // Room for every key (a full table would refuse some), several shards so that
                // keys of one shard contend on its insert lock while others proceed.
                let shards = if keys < 100 { 2 } else { 8 };
                let shape = TableShape::capacity(4 * keys as usize).shards(shards);
                let limiter = table::<M, Q>(quota(limit), shape, &clock);
                let context = format!("{name}: {threads} threads, {keys} keys, limit {limit}");
                assert_every_key_admits_exactly(&limiter, threads, keys, limit, &context);
            }
        }
    }
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
    every_combination::<Hashed, _>("gcra hashed", gcra_quota);
}

#[test]
fn concurrent_gcra_exact_keys_admit_exactly_their_burst() {
    every_combination::<Exact, _>("gcra exact", gcra_quota);
}

#[test]
fn concurrent_sliding_window_hashed_keys_admit_exactly_their_limit() {
    every_combination::<Hashed, _>("sliding hashed", sliding_quota);
}

#[test]
fn concurrent_sliding_window_exact_keys_admit_exactly_their_limit() {
    every_combination::<Exact, _>("sliding exact", sliding_quota);
}

#[test]
fn concurrent_fixed_window_hashed_keys_admit_exactly_their_limit() {
    every_combination::<Hashed, _>("fixed hashed", fixed_quota);
}

#[test]
fn concurrent_fixed_window_exact_keys_admit_exactly_their_limit() {
    every_combination::<Exact, _>("fixed exact", fixed_quota);
}

//! Counters (`with_counters`, `totals`): exact totals after multi-thread runs, for direct and
//! keyed limiters, and limiters without counters unchanged.

use nanolimit::{
    FixedWindow, Gcra, KeyedLimiter, Limiter, ManualClock, Request, Stats, Timestamp, WhenFull,
};
use std::sync::{Arc, Barrier};
use std::time::Duration;

const THREADS: usize = 4;
const CHECKS_PER_THREAD: u64 = 20_000;

/// What one thread saw of its own checks, from their decisions.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    allowed: u64,
    denied: u64,
    allowed_units: u64,
    denied_units: u64,
}

impl Seen {
    fn add(&mut self, allowed: bool, cost: u64) {
        if allowed {
            self.allowed += 1;
            self.allowed_units += cost;
        } else {
            self.denied += 1;
            self.denied_units += cost;
        }
    }

    fn sum(seen: impl Iterator<Item = Seen>) -> Stats {
        let mut totals = Stats::default();
        for thread in seen {
            totals.allowed += thread.allowed;
            totals.denied += thread.denied;
            totals.allowed_units += thread.allowed_units;
            totals.denied_units += thread.denied_units;
        }
        totals
    }
}

/// A cost schedule with ones (the one-fetch_add path), zeros and larger costs.
fn cost_of(thread: usize, call: u64) -> u64 {
    [1, 1, 3, 0, 1, 7, 2, 1][(call as usize + thread) % 8]
}

/// Runs `THREADS` threads of `CHECKS_PER_THREAD` checks each, released together, and returns
/// what each saw.
fn run_threads<L: Send + Sync + 'static>(
    limiter: &Arc<L>,
    check: fn(&L, usize, u64, u64) -> bool,
) -> Vec<Seen> {
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let limiter = Arc::clone(limiter);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut seen = Seen::default();
                for call in 0..CHECKS_PER_THREAD {
                    let cost = cost_of(thread, call);
                    seen.add(check(&limiter, thread, call, cost), cost);
                }
                seen
            })
        })
        .collect();
    workers
        .into_iter()
        .map(|worker| worker.join().unwrap())
        .collect()
}

#[test]
fn direct_totals_are_exact_after_a_multi_thread_run() {
    // 10^5 units per second, a burst of 5,000: the threads' 80,000 checks (about 150,000 units
    // asked, time moving 1 µs per call of thread 0) are partly allowed, partly denied.
    let clock = ManualClock::new();
    let quota = Gcra::per_second(100_000)
        .unwrap()
        .with_burst(5_000)
        .unwrap();
    let limiter = Arc::new(Limiter::with_clock(quota, clock).with_counters());
    let seen = run_threads(&limiter, |limiter, thread, call, cost| {
        if thread == 0 {
            limiter.clock().advance(Duration::from_micros(1));
        }
        let request = Request::cost(cost);
        let decision = if cost == 1 && call % 2 == 0 {
            limiter.check()
        } else {
            limiter.check_with(request).unwrap()
        };
        decision.is_allowed()
    });
    let totals = limiter.stats();
    assert_eq!(totals, Seen::sum(seen.into_iter()));
    assert_eq!(totals.calls(), THREADS as u64 * CHECKS_PER_THREAD);
    assert!(totals.allowed > 0 && totals.denied > 0, "{totals:?}");
    let asked: u64 = (0..THREADS)
        .flat_map(|thread| (0..CHECKS_PER_THREAD).map(move |call| cost_of(thread, call)))
        .sum();
    assert_eq!(totals.units(), asked);
}

#[test]
fn totals_are_exact_over_waves_of_short_lived_threads_outnumbering_the_slots() {
    // Threads own a counting slot from their first count until they end (at most 256 slots on
    // any machine): 40 waves of 8 threads, 320 in all, beside two threads that count
    // throughout and so hold their slots, or the shared stripes, for the whole test. Each wave's
    // threads claim the slots the previous wave freed and continue from their stripes' values;
    // those that find none count on the shared stripes. After each wave, the totals of the
    // joined waves are exact, and a read is never below the one before.
    const WAVES: usize = 40;
    const PER_WAVE: usize = 8;
    const CHECKS: u64 = 500;
    let quota = Gcra::per_second(1).unwrap().with_burst(2_000).unwrap();
    let limiter = Arc::new(Limiter::with_clock(quota, ManualClock::new()).with_counters());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let steady: Vec<_> = (0..2)
        .map(|thread| {
            let limiter = Arc::clone(&limiter);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut seen = Seen::default();
                let mut call = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let cost = cost_of(thread, call);
                    let at = Timestamp::ORIGIN;
                    let allowed = limiter
                        .check_with(Request::cost(cost).at(at))
                        .unwrap()
                        .is_allowed();
                    seen.add(allowed, cost);
                    call += 1;
                }
                seen
            })
        })
        .collect();
    let mut waves_seen = Vec::new();
    let mut last_read = Stats::default();
    for wave in 0..WAVES {
        let threads: Vec<_> = (0..PER_WAVE)
            .map(|thread| {
                let limiter = Arc::clone(&limiter);
                std::thread::spawn(move || {
                    let mut seen = Seen::default();
                    for call in 0..CHECKS {
                        let cost = cost_of(wave + thread, call);
                        let at = Timestamp::ORIGIN;
                        let allowed = limiter
                            .check_with(Request::cost(cost).at(at))
                            .unwrap()
                            .is_allowed();
                        seen.add(allowed, cost);
                    }
                    seen
                })
            })
            .collect();
        waves_seen.extend(threads.into_iter().map(|thread| thread.join().unwrap()));
        let read = limiter.stats();
        let joined = Seen::sum(waves_seen.iter().copied());
        assert!(
            read.allowed >= joined.allowed && read.denied >= joined.denied,
            "after wave {wave}: {read:?} misses the joined threads' {joined:?}"
        );
        assert!(
            read.allowed >= last_read.allowed && read.denied >= last_read.denied,
            "after wave {wave}: {read:?} below the previous read {last_read:?}"
        );
        last_read = read;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let steady_seen = steady.into_iter().map(|thread| thread.join().unwrap());
    let expected = Seen::sum(waves_seen.into_iter().chain(steady_seen));
    let totals = limiter.stats();
    assert_eq!(totals, expected);
    assert!(totals.allowed > 0 && totals.denied > 0, "{totals:?}");
    assert!(totals.calls() >= (WAVES * PER_WAVE) as u64 * CHECKS);
}

#[test]
fn direct_totals_count_every_check_form_and_no_peek() {
    let limiter = Limiter::with_clock(FixedWindow::per_second(4).unwrap(), ManualClock::new())
        .with_counters();
    let now = limiter.now();
    assert!(limiter.check().is_allowed());
    assert!(limiter.check_at(now).is_allowed());
    assert!(limiter.check_with(Request::cost(2)).unwrap().is_allowed());
    assert!(limiter.peek().is_denied());
    assert!(limiter
        .check_with(Request::cost(3).at(now))
        .unwrap()
        .is_denied());
    // A cost above the limit is an error, not a decision: not counted.
    assert!(limiter.check_with(Request::cost(5)).is_err());
    assert!(limiter.check_with(Request::cost(0)).unwrap().is_allowed());
    let totals = limiter.stats();
    assert_eq!((totals.allowed, totals.denied), (4, 1));
    assert_eq!((totals.allowed_units, totals.denied_units), (4, 3));
}

#[test]
fn keyed_totals_are_exact_after_a_multi_thread_run_with_refused_new_keys() {
    // A small table (one shard of 8 slots) for 64 keys, a frozen clock, bursts of 10 per key:
    // keys are allowed, denied, and refused for want of a slot (counted as denied).
    let limiter = Arc::new(
        KeyedLimiter::builder(Gcra::per_second(1).unwrap().with_burst(10).unwrap())
            .capacity(4)
            .shards(1)
            .when_full(WhenFull::Deny)
            .clock(ManualClock::new())
            .with_counters()
            .build()
            .unwrap(),
    );
    let seen = run_threads(&limiter, |limiter, thread, call, cost| {
        let key = (call * 7 + thread as u64) % 64;
        let at = Timestamp::ORIGIN;
        limiter
            .check_with(&key, Request::cost(cost).at(at))
            .unwrap()
            .is_allowed()
    });
    let totals = limiter.stats();
    // The table's own figures are beside the counts: compare the counts.
    let counted = Stats {
        allowed: totals.allowed,
        denied: totals.denied,
        allowed_units: totals.allowed_units,
        denied_units: totals.denied_units,
        ..Stats::default()
    };
    assert_eq!(counted, Seen::sum(seen.into_iter()));
    assert_eq!(totals.calls(), THREADS as u64 * CHECKS_PER_THREAD);
    let stats = limiter.stats();
    assert!(stats.refused_new_keys > 0, "{stats:?}");
    // Every slot holds an entry, and every unit allowed was allowed to one of them: at most
    // their bursts.
    assert_eq!(stats.entries, limiter.slots() as u64);
    assert!(totals.allowed_units <= 10 * stats.entries, "{totals:?}");
}

/// What a caller reads of a decision.
fn outcome(decision: &nanolimit::Decision<Gcra>) -> (bool, u64, u64, Duration, Duration) {
    (
        decision.is_allowed(),
        decision.limit(),
        decision.remaining(),
        decision.retry_after(),
        decision.reset_after(),
    )
}

#[test]
fn limiters_without_counters_decide_as_those_with_them_and_report_none() {
    let clock = ManualClock::new();
    let quota = Gcra::per_second(10).unwrap().with_burst(3).unwrap();
    let plain = Limiter::with_clock(quota, clock.clone());
    let counted = Limiter::with_clock(quota, clock.clone()).with_counters();
    let plain_keyed = KeyedLimiter::builder(quota)
        .clock(clock.clone())
        .build()
        .unwrap();
    let counted_keyed = KeyedLimiter::builder(quota)
        .clock(clock.clone())
        .with_counters()
        .build()
        .unwrap();
    for call in 0..200u64 {
        let cost = call % 4;
        let request = || Request::cost(cost);
        assert_eq!(
            outcome(&plain.check_with(request()).unwrap()),
            outcome(&counted.check_with(request()).unwrap())
        );
        assert_eq!(
            outcome(&plain_keyed.check_with(&(call % 3), request()).unwrap()),
            outcome(&counted_keyed.check_with(&(call % 3), request()).unwrap())
        );
        clock.advance(Duration::from_millis(30));
    }
    assert_eq!(plain.stats().calls(), 0);
    assert_eq!(plain_keyed.stats().calls(), 0);
    assert_eq!(counted.stats().calls(), 200);
    assert_eq!(counted_keyed.stats().calls(), 200);
}

#[test]
fn keyed_stats_report_entries_as_entries_does() {
    let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_second(1).unwrap(), 1_000).unwrap();
    for key in 0..37 {
        let _ = limiter.check(&key);
    }
    assert_eq!(limiter.stats().entries, 37);
    assert_eq!(limiter.stats().entries, limiter.entries() as u64);
}

//! Blocking waits on the manual clock: waiters start at their booked instants, in booking
//! order, with no re-checks, and no real time passes.

use nanolimit::{
    Clock, Gcra, KeyedLimiter, LeakyBucket, Limiter, ManualClock, Request, RequestError, Timestamp,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const INTERVAL: Duration = Duration::from_millis(10);

/// Moves `clock` to the earliest deadline a waiter sleeps for, each time every live worker
/// sleeps, until none is live: the clock never passes a deadline while a woken worker still
/// runs, so each reads the instant it was woken at.
fn drive(clock: &ManualClock, live: &AtomicUsize) {
    loop {
        let live_now = live.load(Ordering::SeqCst);
        if live_now == 0 {
            return;
        }
        if clock.sleepers() == live_now {
            if let Some(deadline) = clock.next_wake() {
                clock.set(deadline);
                // Wait until the woken worker has left the sleepers, so it is not counted
                // sleeping on the next round.
                while clock.sleepers() == live_now && clock.next_wake() == Some(deadline) {
                    std::thread::yield_now();
                }
            }
        }
        std::thread::yield_now();
    }
}

#[test]
fn four_threads_through_a_blocking_wait_start_at_their_booked_instants_in_booking_order() {
    const THREADS: usize = 4;
    const WAITS_PER_THREAD: usize = 250;
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(
        Gcra::per_second(100).unwrap().with_burst(1).unwrap(),
        clock.clone(),
    );
    let live = AtomicUsize::new(THREADS);
    let woken_in_order = AtomicUsize::new(0);
    // (booked start, reading when the wait returned, order in which the waits returned)
    let records = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                let mut own_starts = Vec::new();
                for _ in 0..WAITS_PER_THREAD {
                    let start = limiter.wait().expect("an unbounded wait is granted");
                    let woken_at = clock.now();
                    let order = woken_in_order.fetch_add(1, Ordering::SeqCst);
                    own_starts.push(start);
                    records.lock().unwrap().push((start, woken_at, order));
                }
                // A thread's own waits were booked one after the other.
                assert!(own_starts.windows(2).all(|pair| pair[0] < pair[1]));
                live.fetch_sub(1, Ordering::SeqCst);
            });
        }
        drive(&clock, &live);
    });
    let mut records = records.into_inner().unwrap();
    assert_eq!(records.len(), THREADS * WAITS_PER_THREAD);
    records.sort_by_key(|&(start, _, _)| start);
    for (index, &(start, woken_at, _)) in records.iter().enumerate() {
        // One booking per emission interval: the i-th start is i intervals after the origin.
        let expected = Timestamp::ORIGIN.saturating_add(INTERVAL * index as u32);
        assert_eq!(start, expected, "booking {index}");
        // Never early, and (the clock moving only to deadlines) never late.
        assert_eq!(woken_at, start, "booking {index}");
    }
    // Served in booking order: the waits returned in the order of their starts.
    let orders: Vec<usize> = records.iter().map(|&(_, _, order)| order).collect();
    assert!(
        orders.windows(2).all(|pair| pair[0] < pair[1]),
        "{orders:?}"
    );
}

#[test]
fn a_blocking_wait_on_a_keyed_limiter_waits_per_key() {
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::builder(Gcra::per_second(10).unwrap().with_burst(1).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    assert_eq!(limiter.wait("a"), Ok(Timestamp::ORIGIN));
    assert_eq!(limiter.wait("b"), Ok(Timestamp::ORIGIN));
    let live = AtomicUsize::new(1);
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let start = limiter.wait("a");
            live.fetch_sub(1, Ordering::SeqCst);
            (start, clock.now())
        });
        drive(&clock, &live);
        let (start, woken_at) = waiter.join().unwrap();
        let expected = Timestamp::ORIGIN.saturating_add(Duration::from_millis(100));
        assert_eq!((start, woken_at), (Ok(expected), expected));
    });
}

#[test]
fn a_wait_that_cannot_meet_its_deadline_returns_at_once_and_books_nothing() {
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(Gcra::per_second(1).unwrap(), clock.clone());
    assert_eq!(limiter.wait(), Ok(Timestamp::ORIGIN));
    let deadline = Request::new().max_wait(Duration::from_millis(999));
    assert_eq!(
        limiter.wait_with(deadline),
        Err(RequestError::WaitTooLong {
            wait: Duration::from_secs(1)
        })
    );
    // Nothing was booked: a wait of exactly a second is granted for the next second.
    let within = Request::new().max_wait(Duration::from_secs(1));
    let reservation = limiter.reserve_with(within).unwrap();
    assert_eq!(reservation.delay(), Duration::from_secs(1));
    assert!(matches!(
        limiter.wait_with(Request::cost(2)),
        Err(RequestError::CostAboveLimit { cost: 2, .. })
    ));
}

#[test]
fn a_full_leaky_bucket_drops_the_waiter_at_once() {
    let clock = ManualClock::new();
    let queue = LeakyBucket::with_clock(10, Duration::from_secs(1), 1, clock.clone()).unwrap();
    assert_eq!(queue.wait(), Ok(Timestamp::ORIGIN));
    let waiting = queue.enqueue();
    assert_eq!(waiting.delay(), Duration::from_millis(100));
    assert_eq!(
        queue.wait(),
        Err(RequestError::WaitTooLong {
            wait: Duration::from_millis(200)
        })
    );
    assert_eq!(queue.max_wait(), Duration::from_millis(100));
}

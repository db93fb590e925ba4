//! Async waits on tokio's paused time (feature `tokio`): waiters start at their booked
//! instants, in booking order, with no re-checks; dropping a wait gives its slot back.

use nanolimit::clock::TokioClock;
use nanolimit::{Clock, Gcra, KeyedLimiter, Limiter, Request, Timestamp};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const INTERVAL: Duration = Duration::from_millis(10);
/// tokio's timer wheel resolution.
const TIMER_TICK: Duration = Duration::from_millis(1);

/// A clock that counts its readings: a wait that re-checked would read it more than once or
/// twice per request.
#[derive(Debug, Clone)]
struct CountingClock {
    inner: TokioClock,
    readings: Arc<AtomicUsize>,
}

impl Clock for CountingClock {
    fn now(&self) -> Timestamp {
        self.readings.fetch_add(1, Ordering::Relaxed);
        self.inner.now()
    }
}

fn hundred_per_second_burst_one() -> Gcra {
    Gcra::per_second(100).unwrap().with_burst(1).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_thousand_tasks_start_at_their_booked_instants_in_booking_order() {
    const TASKS: usize = 1_000;
    let readings = Arc::new(AtomicUsize::new(0));
    let clock = CountingClock {
        inner: TokioClock::new(),
        readings: Arc::clone(&readings),
    };
    let limiter = Arc::new(Limiter::with_clock(
        hundred_per_second_burst_one(),
        clock.clone(),
    ));
    let woken_in_order = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let limiter = Arc::clone(&limiter);
        let woken_in_order = Arc::clone(&woken_in_order);
        let clock = clock.inner;
        tasks.push(tokio::spawn(async move {
            let start = limiter
                .until_ready()
                .await
                .expect("an unbounded wait is granted");
            let woken_at = clock.now();
            (
                start,
                woken_at,
                woken_in_order.fetch_add(1, Ordering::SeqCst),
            )
        }));
    }
    let mut records = Vec::new();
    for task in tasks {
        records.push(task.await.unwrap());
    }
    // Tasks were spawned, so first polled and booked, in index order: the i-th booked the
    // i-th interval.
    for (index, &(start, woken_at, _)) in records.iter().enumerate() {
        let expected = Timestamp::ORIGIN.saturating_add(INTERVAL * index as u32);
        assert_eq!(start, expected, "task {index}");
        assert!(
            woken_at >= start,
            "task {index} woke early: {woken_at:?} < {start:?}"
        );
        assert!(
            woken_at.saturating_duration_since(start) <= TIMER_TICK,
            "task {index} woke more than a timer tick late: {woken_at:?} for {start:?}"
        );
    }
    let orders: Vec<usize> = records.iter().map(|&(_, _, order)| order).collect();
    assert!(
        orders.windows(2).all(|pair| pair[0] < pair[1]),
        "woken out of order"
    );
    // One reading to book, one to set the timer: no re-checks.
    assert!(
        readings.load(Ordering::Relaxed) <= 2 * TASKS,
        "{readings:?}"
    );
}

/// Admissions whose start falls within the first `simulated` of paused time, by `workers`
/// tasks each waiting in a loop.
async fn admitted_by_waiting_workers(workers: usize, simulated: Duration) -> usize {
    let clock = TokioClock::new();
    let limiter = Arc::new(Limiter::with_clock(hundred_per_second_burst_one(), clock));
    let end = Timestamp::ORIGIN.saturating_add(simulated);
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let limiter = Arc::clone(&limiter);
        tasks.push(tokio::spawn(async move {
            let mut admitted = 0;
            while limiter.until_ready().await.unwrap() < end {
                admitted += 1;
            }
            admitted
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    total
}

#[tokio::test(start_paused = true)]
async fn one_waiting_worker_achieves_the_configured_rate() {
    let admitted = admitted_by_waiting_workers(1, Duration::from_secs(10)).await;
    assert!((999..=1_001).contains(&admitted), "{admitted}");
}

#[tokio::test(start_paused = true)]
async fn sixteen_waiting_workers_achieve_the_configured_rate_together() {
    let admitted = admitted_by_waiting_workers(16, Duration::from_secs(10)).await;
    assert!((999..=1_001).contains(&admitted), "{admitted}");
}

#[tokio::test(start_paused = true)]
async fn dropping_a_wait_before_its_start_gives_its_slot_back() {
    let limiter = Limiter::with_clock(hundred_per_second_burst_one(), TokioClock::new());
    assert_eq!(limiter.until_ready().await, Ok(Timestamp::ORIGIN));
    // Booked for 10 ms, abandoned at 5 ms.
    let abandoned = tokio::time::timeout(Duration::from_millis(5), limiter.until_ready()).await;
    assert!(abandoned.is_err(), "the wait timed out");
    // Its slot is free again: the next waiter gets 10 ms, not 20 ms.
    let next = limiter.until_ready().await.unwrap();
    assert_eq!(next.since_origin(), Duration::from_millis(10));
}

#[tokio::test(start_paused = true)]
async fn dropping_a_wait_behind_another_gives_back_only_what_nobody_depends_on() {
    let limiter = Arc::new(Limiter::with_clock(
        hundred_per_second_burst_one(),
        TokioClock::new(),
    ));
    assert_eq!(limiter.until_ready().await, Ok(Timestamp::ORIGIN));
    let abandoned = {
        let limiter = Arc::clone(&limiter);
        tokio::spawn(async move { limiter.until_ready().await })
    };
    tokio::task::yield_now().await; // it books 10 ms
    let behind = {
        let limiter = Arc::clone(&limiter);
        tokio::spawn(async move { limiter.until_ready().await })
    };
    tokio::task::yield_now().await; // it books 20 ms, behind the abandoned one
    abandoned.abort();
    assert!(abandoned.await.unwrap_err().is_cancelled());
    assert_eq!(
        behind.await.unwrap().unwrap().since_origin(),
        Duration::from_millis(20)
    );
    // The abandoned slot stays a gap: the next waiter is booked behind the last booking.
    assert_eq!(
        limiter.until_ready().await.unwrap().since_origin(),
        Duration::from_millis(30)
    );
}

#[tokio::test(start_paused = true)]
async fn jitter_delays_a_wait_by_at_most_its_bound_and_never_starts_it_early() {
    let clock = TokioClock::new();
    let limiter = Limiter::with_clock(hundred_per_second_burst_one(), clock);
    let jitter = Duration::from_millis(5);
    let mut late_ones = 0;
    for _ in 0..50 {
        let start = limiter
            .until_ready_with(Request::new().jitter(jitter))
            .await
            .unwrap();
        let woken_at = clock.now();
        assert!(woken_at >= start);
        let late = woken_at.saturating_duration_since(start);
        assert!(late <= jitter + TIMER_TICK, "{late:?}");
        if late > Duration::ZERO {
            late_ones += 1;
        }
    }
    // Uniform over 0..=5 ms: all 50 on zero would be a jitter that does nothing.
    assert!(late_ones > 0);
}

#[tokio::test(start_paused = true)]
async fn keyed_async_waits_are_per_key_and_their_futures_are_send() {
    fn assert_send<T: Send>(value: T) -> T {
        value
    }
    let limiter = KeyedLimiter::builder(hundred_per_second_burst_one())
        .clock(TokioClock::new())
        .build()
        .unwrap();
    assert_eq!(
        assert_send(limiter.until_ready(&1u64)).await,
        Ok(Timestamp::ORIGIN)
    );
    assert_eq!(limiter.until_ready(&2).await, Ok(Timestamp::ORIGIN));
    let second = limiter.until_ready(&1).await.unwrap();
    assert_eq!(second.since_origin(), INTERVAL);
    let direct = Limiter::with_clock(hundred_per_second_burst_one(), TokioClock::new());
    assert!(assert_send(direct.until_ready()).await.is_ok());
}

//! The in-flight limiter (`nanolimit::inflight`): sequences of non-blocking operations against a
//! sequential counter model, threads that never exceed the limit, first-come-first-served
//! waiters (blocking and async), cancellation, and bad input. No test sleeps: threads are
//! coordinated by joins and by polling `waiters()` until a waiter has queued.

use nanolimit::inflight::{AcquireError, InFlightLimiter, Permit, MAX_IN_FLIGHT};
use nanolimit::BuildError;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

/// Spins (yielding) until `limiter` has `count` waiters queued.
fn until_waiters(limiter: &InFlightLimiter, count: usize) {
    while limiter.waiters() != count {
        thread::yield_now();
    }
}

// --- Bad input -------------------------------------------------------------------------------

#[test]
fn limits_outside_one_to_the_maximum_are_errors() {
    assert_eq!(InFlightLimiter::new(0).unwrap_err(), BuildError::ZeroLimit);
    assert_eq!(
        InFlightLimiter::new(MAX_IN_FLIGHT + 1).unwrap_err(),
        BuildError::LimitTooLarge {
            limit: MAX_IN_FLIGHT + 1,
            max: MAX_IN_FLIGHT
        }
    );
    assert_eq!(
        InFlightLimiter::new(u64::MAX).unwrap_err(),
        BuildError::LimitTooLarge {
            limit: u64::MAX,
            max: MAX_IN_FLIGHT
        }
    );
    let largest = InFlightLimiter::new(MAX_IN_FLIGHT).unwrap();
    let all = largest.try_acquire_many(MAX_IN_FLIGHT).unwrap();
    assert_eq!(
        (largest.in_flight(), largest.available()),
        (MAX_IN_FLIGHT, 0)
    );
    drop(all);
    assert_eq!(largest.available(), MAX_IN_FLIGHT);
    assert!(BuildError::ZeroLimit.to_string().contains("limit of zero"));
}

#[test]
fn add_permits_past_the_maximum_is_an_error_and_changes_nothing() {
    let limiter = InFlightLimiter::new(10).unwrap();
    assert_eq!(
        limiter.add_permits(MAX_IN_FLIGHT - 9),
        Err(BuildError::LimitTooLarge {
            limit: MAX_IN_FLIGHT + 1,
            max: MAX_IN_FLIGHT
        })
    );
    assert_eq!(
        limiter.add_permits(u64::MAX),
        Err(BuildError::LimitTooLarge {
            limit: u64::MAX,
            max: MAX_IN_FLIGHT
        })
    );
    assert_eq!((limiter.limit(), limiter.available()), (10, 10));
    limiter.add_permits(MAX_IN_FLIGHT - 10).unwrap();
    assert_eq!(limiter.limit(), MAX_IN_FLIGHT);
}

#[test]
fn requests_above_the_limit_are_refused_at_once() {
    let limiter = InFlightLimiter::new(3).unwrap();
    let above = AcquireError::AboveLimit { units: 4, limit: 3 };
    assert_eq!(limiter.try_acquire_many(4).unwrap_err(), above);
    assert_eq!(limiter.acquire_many(4).unwrap_err(), above);
    let error = limiter.try_acquire_many(4).unwrap_err();
    assert!(!error.is_busy() && error.is_above_limit() && !error.is_table_full());
    assert_eq!(error.remaining(), None);
    assert!(above.to_string().contains("never fit"));
    let empty = limiter.try_acquire_many(0).unwrap();
    assert_eq!((empty.units(), limiter.in_flight()), (0, 0));
}

// --- The sequential model --------------------------------------------------------------------

/// One step of a sequence of non-blocking operations.
#[derive(Debug, Clone)]
enum Step {
    TryAcquire(u64),
    /// Drops the held permit at this index (modulo how many are held).
    Release(usize),
    /// Forgets the held permit at this index (modulo how many are held).
    Forget(usize),
    AddPermits(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u64..7).prop_map(Step::TryAcquire),
        3 => any::<usize>().prop_map(Step::Release),
        1 => any::<usize>().prop_map(Step::Forget),
        1 => (0u64..4).prop_map(Step::AddPermits),
    ]
}

/// The counter model: a limit and the units each held permit holds.
#[derive(Debug)]
struct Model {
    limit: u64,
    held: Vec<u64>,
}

impl Model {
    fn in_flight(&self) -> u64 {
        self.held.iter().sum()
    }
}

proptest! {
    #[test]
    fn non_blocking_operations_match_a_counter_model(
        initial in 1u64..8,
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let limiter = InFlightLimiter::new(initial).unwrap();
        let mut model = Model { limit: initial, held: Vec::new() };
        let mut permits: Vec<Permit<'_>> = Vec::new();
        for step in steps {
            match step {
                Step::TryAcquire(units) => {
                    let outcome = limiter.try_acquire_many(units);
                    let in_flight = model.in_flight();
                    if units > model.limit {
                        prop_assert_eq!(
                            outcome.unwrap_err(),
                            AcquireError::AboveLimit { units, limit: model.limit }
                        );
                    } else if in_flight + units > model.limit {
                        let busy = outcome.unwrap_err();
                        prop_assert_eq!(
                            busy,
                            AcquireError::Busy {
                                limit: model.limit,
                                in_flight,
                                requested: units,
                                queued: false,
                            }
                        );
                        prop_assert!(busy.is_busy() && !busy.is_queued());
                        prop_assert_eq!(busy.remaining(), Some(model.limit - in_flight));
                    } else {
                        let permit = outcome.unwrap();
                        prop_assert_eq!(permit.units(), units);
                        permits.push(permit);
                        model.held.push(units);
                    }
                }
                Step::Release(index) if !permits.is_empty() => {
                    let index = index % permits.len();
                    drop(permits.swap_remove(index));
                    model.held.swap_remove(index);
                }
                Step::Forget(index) if !permits.is_empty() => {
                    let index = index % permits.len();
                    permits.swap_remove(index).forget();
                    model.limit -= model.held.swap_remove(index);
                }
                Step::AddPermits(units) => {
                    limiter.add_permits(units).unwrap();
                    model.limit += units;
                }
                Step::Release(_) | Step::Forget(_) => {}
            }
            prop_assert_eq!(limiter.limit(), model.limit);
            prop_assert_eq!(limiter.in_flight(), model.in_flight());
            prop_assert_eq!(limiter.available(), model.limit - model.in_flight());
            prop_assert_eq!(limiter.waiters(), 0);
        }
        let kept: u64 = model.held.iter().sum();
        drop(permits);
        prop_assert_eq!(limiter.available(), model.limit);
        prop_assert!(kept <= model.limit);
    }
}

// --- Threads ---------------------------------------------------------------------------------

/// Threads take 1 to 3 units at a time, by `try_acquire_many` or by blocking `acquire_many`,
/// and count the units inside the guarded section: the count never exceeds the limit, and
/// every unit comes back.
#[test]
fn threads_never_hold_more_than_the_limit_and_return_every_unit() {
    const LIMIT: u64 = 4;
    const THREADS: u64 = 6;
    const ROUNDS: u64 = 3_000;
    let limiter = Arc::new(InFlightLimiter::new(LIMIT).unwrap());
    let inside = Arc::new(AtomicU64::new(0));
    let most_inside = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread_number| {
            let limiter = Arc::clone(&limiter);
            let inside = Arc::clone(&inside);
            let most_inside = Arc::clone(&most_inside);
            thread::spawn(move || {
                // A small deterministic generator per thread: no shared random state.
                let mut seed = thread_number.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut served = 0u64;
                for _ in 0..ROUNDS {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let units = 1 + seed % 3;
                    let permit = if seed & 8 == 0 {
                        match limiter.try_acquire_many(units) {
                            Ok(permit) => permit,
                            Err(_) => continue,
                        }
                    } else {
                        limiter.acquire_many(units).unwrap()
                    };
                    let now_inside = inside.fetch_add(units, Ordering::SeqCst) + units;
                    most_inside.fetch_max(now_inside, Ordering::SeqCst);
                    assert!(now_inside <= LIMIT, "{now_inside} units inside");
                    inside.fetch_sub(units, Ordering::SeqCst);
                    drop(permit);
                    served += 1;
                }
                served
            })
        })
        .collect();
    let served: u64 = workers
        .into_iter()
        .map(|worker| worker.join().unwrap())
        .sum();
    assert!(served >= THREADS * ROUNDS / 2, "only {served} served");
    assert!(most_inside.load(Ordering::SeqCst) <= LIMIT);
    assert_eq!((limiter.available(), limiter.in_flight()), (LIMIT, 0));
    assert_eq!(limiter.waiters(), 0);
}

#[test]
fn a_blocked_acquire_is_woken_by_a_release() {
    let limiter = InFlightLimiter::new(2).unwrap();
    let held = limiter.acquire_many(2).unwrap();
    thread::scope(|scope| {
        let waiter = scope.spawn(|| limiter.acquire().units());
        until_waiters(&limiter, 1);
        assert_eq!(limiter.in_flight(), 2);
        drop(held);
        assert_eq!(waiter.join().unwrap(), 1);
    });
    assert_eq!((limiter.available(), limiter.waiters()), (2, 0));
}

#[test]
fn a_blocked_acquire_is_woken_by_add_permits() {
    let limiter = InFlightLimiter::new(1).unwrap();
    let held = limiter.acquire();
    thread::scope(|scope| {
        let waiter = scope.spawn(|| limiter.acquire_many(1).unwrap().units());
        until_waiters(&limiter, 1);
        limiter.add_permits(1).unwrap();
        assert_eq!(waiter.join().unwrap(), 1);
    });
    drop(held);
    assert_eq!((limiter.limit(), limiter.available()), (2, 2));
}

/// A large request queued first is served before a small one queued after it, though units for
/// the small one free first; while they wait, nobody takes units past the queue.
#[test]
fn a_waiting_large_request_is_served_before_a_later_small_one() {
    let limiter = InFlightLimiter::new(4).unwrap();
    let mut held: Vec<_> = (0..4).map(|_| limiter.acquire()).collect();
    let order = std::sync::Mutex::new(Vec::new());
    let mut try_while_queued = None;
    thread::scope(|scope| {
        // The permit is returned, not dropped: were the thread to drop it on return, the small
        // request could be served before the assertions below read the counts.
        let large = scope.spawn(|| {
            let permit = limiter.acquire_many(3).unwrap();
            order.lock().unwrap().push(3);
            permit
        });
        until_waiters(&limiter, 1);
        let small = scope.spawn(|| {
            let permit = limiter.acquire_many(1).unwrap();
            order.lock().unwrap().push(1);
            permit.units()
        });
        until_waiters(&limiter, 2);

        // One unit frees: enough for the small request, but the large one is first.
        drop(held.pop());
        assert_eq!((limiter.waiters(), limiter.available()), (2, 1));
        // Not asserted here: a panic inside the scope would wait forever for the waiters.
        try_while_queued = limiter.try_acquire().err();

        // Two more: the large one is served (its units taken for it at once).
        drop(held.pop());
        drop(held.pop());
        assert_eq!((limiter.waiters(), limiter.in_flight()), (1, 4));
        let large_permit = large.join().unwrap();
        assert_eq!(large_permit.units(), 3);
        assert_eq!((limiter.waiters(), limiter.in_flight()), (1, 4));

        // Its permit and the last held unit free: the small one is served.
        drop(large_permit);
        drop(held.pop());
        assert_eq!(small.join().unwrap(), 1);
    });
    assert_eq!(*order.lock().unwrap(), [3, 1]);
    let busy = try_while_queued.expect("a try took the unit kept for the queue");
    assert!(busy.is_queued() && busy.remaining() == Some(1));
    assert!(matches!(
        busy,
        AcquireError::Busy {
            limit: 4,
            in_flight: 3,
            requested: 1,
            queued: true
        }
    ));
    assert_eq!((limiter.available(), limiter.waiters()), (4, 0));
}

#[test]
fn forgotten_permits_shrink_the_limit_until_added_back() {
    let limiter = InFlightLimiter::new(3).unwrap();
    limiter.acquire_many(2).unwrap().forget();
    assert_eq!((limiter.limit(), limiter.available()), (1, 1));
    assert!(limiter.try_acquire_many(2).is_err());
    limiter.acquire().forget();
    assert_eq!(limiter.limit(), 0);
    assert!(matches!(
        limiter.try_acquire().unwrap_err(),
        AcquireError::Busy { limit: 0, .. }
    ));
    thread::scope(|scope| {
        // One unit may always wait: `add_permits` serves it.
        let waiter = scope.spawn(|| limiter.acquire().units());
        until_waiters(&limiter, 1);
        limiter.add_permits(1).unwrap();
        assert_eq!(waiter.join().unwrap(), 1);
    });
    assert_eq!((limiter.limit(), limiter.available()), (1, 1));
}

// --- Async -----------------------------------------------------------------------------------

#[cfg(feature = "tokio")]
mod async_acquires {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Wake, Waker};

    /// A waker that counts its wakes.
    #[derive(Default)]
    struct CountingWaker(AtomicU64);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        (Arc::clone(&counter), Waker::from(counter))
    }

    #[tokio::test]
    async fn a_dropped_wait_leaves_the_queue_and_its_kept_units_go_to_the_next() {
        let limiter = InFlightLimiter::new(4).unwrap();
        let one = limiter.try_acquire().unwrap();
        let two = limiter.try_acquire_many(2).unwrap();
        let (_, waker) = counting_waker();
        let mut context = Context::from_waker(&waker);
        {
            let mut large = pin!(limiter.acquire_many_async(4).unwrap());
            assert!(large.as_mut().poll(&mut context).is_pending());
            // Two units free: three are now kept for the head, which needs four.
            drop(two);
            assert_eq!((limiter.available(), limiter.waiters()), (3, 1));
            assert!(limiter.try_acquire().unwrap_err().is_queued());
        } // cancelled
        assert_eq!((limiter.available(), limiter.waiters()), (3, 0));
        let three = limiter.try_acquire_many(3).unwrap();
        drop((one, three));
        assert_eq!(limiter.available(), 4);
    }

    #[tokio::test]
    async fn a_cancelled_head_lets_the_next_waiter_in_with_the_units_kept_for_it() {
        let limiter = InFlightLimiter::new(2).unwrap();
        let mut held: Vec<_> = (0..2).map(|_| limiter.try_acquire().unwrap()).collect();
        let (wakes, waker) = counting_waker();
        let mut context = Context::from_waker(&waker);
        let mut small = pin!(limiter.acquire_async());
        {
            let mut large = pin!(limiter.acquire_many_async(2).unwrap());
            assert!(large.as_mut().poll(&mut context).is_pending());
            assert!(small.as_mut().poll(&mut context).is_pending());
            drop(held.pop());
            assert_eq!((limiter.available(), limiter.waiters()), (1, 2));
        } // the head is cancelled: the unit kept for it serves the next
        assert_eq!((limiter.waiters(), wakes.0.load(Ordering::SeqCst)), (0, 1));
        assert!(
            matches!(small.as_mut().poll(&mut context), Poll::Ready(permit) if permit.units() == 1)
        );
        drop(held);
        assert_eq!(limiter.available(), 2);
    }

    #[tokio::test]
    async fn a_wait_dropped_after_being_served_gives_its_units_back() {
        let limiter = InFlightLimiter::new(2).unwrap();
        let held = limiter.try_acquire_many(2).unwrap();
        let (wakes, waker) = counting_waker();
        let mut context = Context::from_waker(&waker);
        let mut behind = pin!(limiter.acquire_async());
        {
            let mut served = pin!(limiter.acquire_many_async(2).unwrap());
            assert!(served.as_mut().poll(&mut context).is_pending());
            assert!(behind.as_mut().poll(&mut context).is_pending());
            drop(held);
            // Served: its units taken, its task woken; but it is dropped before polling.
            assert_eq!((limiter.in_flight(), limiter.waiters()), (2, 1));
            assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        }
        // Its units went back, to the next waiter first.
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
        let Poll::Ready(permit) = behind.as_mut().poll(&mut context) else {
            panic!("the next waiter was not served");
        };
        assert_eq!((permit.units(), limiter.in_flight()), (1, 1));
        drop(permit);
        assert_eq!((limiter.available(), limiter.waiters()), (2, 0));
    }

    #[tokio::test]
    async fn async_waiters_are_served_in_order() {
        let limiter = InFlightLimiter::new(3).unwrap();
        let mut held: Vec<_> = (0..3).map(|_| limiter.try_acquire().unwrap()).collect();
        let (_, waker) = counting_waker();
        let mut context = Context::from_waker(&waker);
        let mut large = pin!(limiter.acquire_many_async(3).unwrap());
        let mut small = pin!(limiter.acquire_async());
        assert!(large.as_mut().poll(&mut context).is_pending());
        assert!(small.as_mut().poll(&mut context).is_pending());
        drop(held.pop());
        assert!(small.as_mut().poll(&mut context).is_pending());
        held.clear();
        let Poll::Ready(large_permit) = large.as_mut().poll(&mut context) else {
            panic!("the head was not served");
        };
        assert!(small.as_mut().poll(&mut context).is_pending());
        drop(large_permit);
        assert!(
            matches!(small.as_mut().poll(&mut context), Poll::Ready(permit) if permit.units() == 1)
        );
        assert_eq!(limiter.available(), 3);
    }

    /// Tasks on a multi-thread runtime, every one of them awaiting its units, all served, and
    /// never more than the limit inside.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn tasks_never_hold_more_than_the_limit() {
        const LIMIT: u64 = 5;
        let limiter = Arc::new(InFlightLimiter::new(LIMIT).unwrap());
        let inside = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..200u64)
            .map(|task| {
                let limiter = Arc::clone(&limiter);
                let inside = Arc::clone(&inside);
                tokio::spawn(async move {
                    let units = 1 + task % LIMIT;
                    let permit = limiter.acquire_many_async(units).unwrap().await;
                    let now_inside = inside.fetch_add(units, Ordering::SeqCst) + units;
                    assert!(now_inside <= LIMIT);
                    tokio::task::yield_now().await;
                    inside.fetch_sub(units, Ordering::SeqCst);
                    drop(permit);
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!((limiter.available(), limiter.waiters()), (LIMIT, 0));
    }
}

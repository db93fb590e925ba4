use nanolimit::*;
use std::time::Duration;

fn at(ns: u64) -> Timestamp {
    Timestamp::from_ns(ns).unwrap()
}
const S: u64 = 1_000_000_000;

#[test]
fn two_cancellations() {
    let limiter = Limiter::with_clock(
        Gcra::per_second(1).unwrap().with_burst(4).unwrap(),
        ManualClock::new(),
    );
    let r0 = limiter.reserve_with(Request::cost(4)).unwrap();
    let a = limiter.reserve_with(Request::cost(4)).unwrap();
    let b = limiter.reserve_with(Request::cost(4)).unwrap();
    let x = limiter.reserve_with(Request::cost(1)).unwrap();
    println!(
        "starts r0 {:?} a {:?} b {:?} x {:?}",
        r0.delay(),
        a.delay(),
        b.delay(),
        x.delay()
    );
    b.cancel();
    a.cancel();
    let c = limiter.reserve_with(Request::cost(4)).unwrap();
    let d = limiter.reserve_with(Request::cost(1)).unwrap();
    println!("c {:?} d {:?}", c.delay(), d.delay());
    // replay
    let replay = Limiter::with_clock(
        Gcra::per_second(1).unwrap().with_burst(4).unwrap(),
        ManualClock::new(),
    );
    for (t, n) in [(0, 4), (8 * S, 4), (9 * S, 1), (9 * S, 1)] {
        println!(
            "replay {} {} -> {}",
            t,
            n,
            replay
                .check_with(Request::cost(n).at(at(t)))
                .unwrap()
                .is_allowed()
        );
    }
}

#[test]
fn stale_cancel() {
    // 1 per ms, burst 10
    let limiter = Limiter::with_clock(
        Gcra::per_second(1000).unwrap().with_burst(10).unwrap(),
        ManualClock::new(),
    );
    let ms = 1_000_000;
    let _first = limiter.reserve_with(Request::cost(10).at(at(0))).unwrap();
    let later = limiter.reserve_with(Request::cost(10).at(at(0))).unwrap();
    println!("later starts {:?}", later.start());
    let a = limiter
        .check_with(Request::cost(5).at(at(21 * ms)))
        .unwrap()
        .is_allowed();
    later.cancel_at(at(5 * ms));
    let b = limiter
        .check_with(Request::cost(9).at(at(21 * ms)))
        .unwrap()
        .is_allowed();
    println!("at 21 ms: 5 units {a}, then 9 units {b}: burst 10");
}

#[test]
fn horizon() {
    let limiter = Limiter::with_clock(
        Gcra::per_second(1).unwrap(),
        ManualClock::starting_at(Timestamp::HORIZON),
    );
    for _ in 0..3 {
        let r = limiter.reserve();
        println!("granted {} delay {:?}", r.is_granted(), r.delay());
    }
    let limiter = Limiter::with_clock(
        Gcra::per_second(1).unwrap(),
        ManualClock::starting_at(at(Timestamp::HORIZON.as_ns() - 2 * S)),
    );
    for _ in 0..5 {
        let r = limiter.reserve();
        println!(
            "2s before: granted {} start {:?} delay {:?}",
            r.is_granted(),
            r.start(),
            r.delay()
        );
    }
    let q = LeakyBucket::with_clock(
        1,
        Duration::from_secs(1),
        5,
        ManualClock::starting_at(Timestamp::HORIZON),
    )
    .unwrap();
    for _ in 0..7 {
        let r = q.enqueue();
        println!(
            "leaky at horizon: granted {} delay {:?}",
            r.is_granted(),
            r.delay()
        );
    }
}

#[test]
fn keyed_reinsert() {
    // 1 per ms, burst 10; 8 slots; evict closest to fresh.
    let ms = 1_000_000;
    let quota = Gcra::per_second(1000).unwrap().with_burst(10).unwrap();
    let table = KeyedLimiter::builder(quota)
        .capacity(1)
        .shards(1)
        .when_full(WhenFull::EvictClosestToFresh)
        .clock(ManualClock::new())
        .exact_keys()
        .build()
        .unwrap();
    let book = |k: u64, c: u64| table.reserve_with(&k, Request::cost(c).at(at(0))).unwrap();
    let _a0 = book(0, 10);
    let a_pending = book(0, 10); // start 10ms, booked 20ms
    for k in 1..=7u64 {
        let _ = book(k, 10);
        let _ = book(k, 10);
        let _ = book(k, 1);
    } // 21 ms
    let b = book(100, 1); // evicts A (20 ms): B at 21 ms
    println!(
        "B start {:?} evictions {}",
        b.start(),
        table.stats().evictions
    );
    // A comes back: evicts a 21 ms key (C), inherits 21 ms, books 1 -> 22 ms
    let a_back = book(0, 1);
    println!(
        "A back start {:?}, word {} ms, evictions {}",
        a_back.start(),
        table.peek(&0).state_word() as f64 / 16.0 / ms as f64,
        table.stats().evictions
    );
    a_pending.cancel_at(at(ms));
    println!(
        "after A's old cancel: A word {} ms",
        table.peek(&0).state_word() as f64 / 16.0 / ms as f64
    );
    let mut n = 0;
    while table.check_at(&0, at(0)).is_allowed() {
        n += 1;
        if n > 100 {
            break;
        }
    }
    println!("A then admits {n} units at once at t=0");
}

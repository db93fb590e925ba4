//! The leaky bucket as a queue ([`LeakyBucket`]) against a reference queue simulation written
//! from the queue's semantics alone (no GCRA arithmetic): requests arrive at non-decreasing
//! times, the queue releases one request every `T` ns, at most `Q` requests may wait (the one
//! being released does not count), and an arrival that would have to wait behind `Q` others
//! is dropped. The two must agree on every admit/drop decision and on every release time, to
//! the nanosecond (a dropped request's would-be release time included: its reported delay).
//! Near the clock's horizon, the reference also drops a request that would leave the queue
//! past it (its would-be release reported at the horizon).

use crate::common::{at, proptest_config, HORIZON_NS, SECOND_NS, YEAR_NS};
use nanolimit::{Gcra, LeakyBucket, Limiter, ManualClock, Timestamp};
use proptest::prelude::*;
use std::time::Duration;

/// The reference: a queue kept as the release times of the requests it admitted.
#[derive(Debug)]
struct ReferenceQueue {
    interval_ns: u128,
    capacity: usize,
    releases: Vec<u128>,
}

/// What the reference queue did with an arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fate {
    admitted: bool,
    /// When it leaves (or, dropped, would have left) the queue.
    release_ns: u128,
}

impl ReferenceQueue {
    fn new(interval_ns: u64, capacity: u64) -> Self {
        ReferenceQueue {
            interval_ns: u128::from(interval_ns),
            capacity: capacity as usize,
            releases: Vec::new(),
        }
    }

    fn arrive(&mut self, arrival_ns: u64) -> Fate {
        let arrival = u128::from(arrival_ns);
        // The server releases one request per interval: the next release is one interval after
        // the last, or on arrival if the server has been idle since.
        let release_ns = match self.releases.last() {
            Some(&last) => arrival.max(last + self.interval_ns),
            None => arrival,
        };
        // Waiting: admitted and not yet released. A request released exactly now is being
        // released, not waiting.
        let waiting = self
            .releases
            .iter()
            .filter(|&&release| release > arrival)
            .count();
        // A request released on arrival never joins the queue; one that must wait joins it if
        // fewer than `capacity` already wait. None may leave past the clock's horizon.
        let horizon = u128::from(HORIZON_NS);
        let admitted = (release_ns == arrival || waiting < self.capacity) && release_ns <= horizon;
        if admitted {
            self.releases.push(release_ns);
        }
        Fate {
            admitted,
            release_ns: release_ns.min(horizon),
        }
    }
}

/// A queue draining `count` per `period_ns`, holding `capacity`, on a manual clock.
fn queue(count: u64, period_ns: u64, capacity: u64) -> LeakyBucket<ManualClock> {
    LeakyBucket::with_clock(
        count,
        Duration::from_nanos(period_ns),
        capacity,
        ManualClock::new(),
    )
    .unwrap()
}

/// Enqueues at each arrival and returns what the queue did: admitted, and the start (for a
/// dropped request, the start it would have had), in ns.
fn run_queue(queue: &LeakyBucket<ManualClock>, arrivals: &[u64]) -> Vec<(bool, u64)> {
    arrivals
        .iter()
        .map(|&arrival_ns| {
            let reservation = queue.enqueue_at(at(arrival_ns));
            assert_eq!(reservation.made_at(), at(arrival_ns));
            assert_eq!(reservation.cost(), 1);
            let outcome = (reservation.is_allowed(), reservation.start().as_ns());
            // A reservation that is not cancelled stays booked.
            drop(reservation);
            outcome
        })
        .collect()
}

/// Asserts that the queue and the reference agree on every arrival.
fn assert_matches_the_reference(
    count: u64,
    period_ns: u64,
    capacity: u64,
    arrivals: &[u64],
) -> Result<(), TestCaseError> {
    let interval_ns = period_ns / count;
    let queue = queue(count, period_ns, capacity);
    prop_assert_eq!(queue.queue_capacity(), capacity);
    prop_assert_eq!(
        queue.max_wait(),
        Duration::from_nanos(capacity * interval_ns)
    );
    let mut reference = ReferenceQueue::new(interval_ns, capacity);
    let actual = run_queue(&queue, arrivals);
    for (index, (&arrival_ns, &(admitted, start_ns))) in arrivals.iter().zip(&actual).enumerate() {
        let expected = reference.arrive(arrival_ns);
        prop_assert_eq!(
            (admitted, u128::from(start_ns)),
            (expected.admitted, expected.release_ns),
            "arrival {} at {} ns (T = {} ns, Q = {})",
            index,
            arrival_ns,
            interval_ns,
            capacity
        );
    }
    Ok(())
}

/// A drain rate with a whole-nanosecond interval: `(count, period_ns)`, `period_ns % count == 0`.
fn drain_rate() -> impl Strategy<Value = (u64, u64)> {
    let interval_ns = prop_oneof![
        2 => 1..=1_000_000_000u64,
        1 => 1..=16u64,
        1 => 1..=10_000u64,
        1 => Just(1_000_000u64),
        1 => Just(1_000_000_000u64),
    ];
    (interval_ns, 0..3u8, 1..=1_000u64).prop_map(|(interval_ns, form, count)| match form {
        // One per `T`: `LeakyBucket::with_clock(1, T, ..)`.
        0 => (1, interval_ns),
        // `count` per `count × T`.
        _ => (count, count * interval_ns),
    })
}

/// One gap between arrivals, in raw form: `(kind, random)`, scaled by the interval `T` and the
/// capacity `Q` of the queue under test.
fn raw_gaps() -> impl Strategy<Value = Vec<(u8, u64)>> {
    prop::collection::vec((0..8u8, any::<u64>()), 1..120)
}

/// The arrival times: from `first_ns`, gaps of nothing (equal timestamps), a fraction of an
/// interval, exactly one, whole multiples and their neighbours, or long enough to drain the
/// queue; at most the horizon.
fn arrivals(first_ns: u64, interval_ns: u64, capacity: u64, gaps: &[(u8, u64)]) -> Vec<u64> {
    let queue_ns = (capacity + 2) * interval_ns;
    let mut now = first_ns;
    gaps.iter()
        .map(|&(kind, random)| {
            now += match kind {
                0 | 1 => 0,
                2 => random % interval_ns,
                3 => interval_ns,
                4 => (random % 4) * interval_ns + (random >> 32) % 3,
                5 => ((random % 4) * interval_ns).saturating_sub(1),
                6 => random % (queue_ns + 1),
                _ => random % (3 * queue_ns + 1),
            };
            now = now.min(HORIZON_NS);
            now
        })
        .collect()
}

proptest! {
    #![proptest_config(proptest_config(5_000))]

    /// Identical admit/drop decisions and identical release times, to the nanosecond, on random
    /// arrival schedules, drain rates and capacities.
    #[test]
    fn the_leaky_bucket_is_the_reference_queue(
        (count, period_ns) in drain_rate(),
        capacity in 0..=20u64,
        first_ns in prop_oneof![Just(0u64), 0..=YEAR_NS],
        gaps in raw_gaps(),
    ) {
        let arrivals = arrivals(first_ns, period_ns / count, capacity, &gaps);
        assert_matches_the_reference(count, period_ns, capacity, &arrivals)?;
    }

    /// The same, from a reading up to a few queue lengths before the horizon: the queue
    /// admits nothing that would leave past it.
    #[test]
    fn near_the_horizon_the_leaky_bucket_is_the_reference_queue(
        (count, period_ns) in drain_rate(),
        capacity in 0..=20u64,
        before in any::<u64>(),
        gaps in raw_gaps(),
    ) {
        let interval_ns = period_ns / count;
        let first_ns = HORIZON_NS - before % (3 * (capacity + 2) * interval_ns + 1);
        let arrivals = arrivals(first_ns, interval_ns, capacity, &gaps);
        assert_matches_the_reference(count, period_ns, capacity, &arrivals)?;
    }

    /// With no room to wait, the queue is a plain burst-1 limiter: it admits exactly what a
    /// GCRA limiter of the same rate and a burst of 1 admits, each at its arrival.
    #[test]
    fn a_queue_of_capacity_zero_is_a_burst_1_limiter(
        (count, period_ns) in drain_rate(),
        first_ns in 0..=YEAR_NS,
        gaps in raw_gaps(),
    ) {
        let interval_ns = period_ns / count;
        let arrivals = arrivals(first_ns, interval_ns, 1, &gaps);
        let queue = queue(count, period_ns, 0);
        let quota = Gcra::new(count, Duration::from_nanos(period_ns))
            .unwrap()
            .with_burst(1)
            .unwrap();
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let mut admitted = 0;
        for (&arrival_ns, (granted, start_ns)) in arrivals.iter().zip(run_queue(&queue, &arrivals)) {
            prop_assert_eq!(granted, limiter.check_at(at(arrival_ns)).is_allowed());
            if granted {
                admitted += 1;
                prop_assert_eq!(start_ns, arrival_ns);
            }
        }
        prop_assert!(admitted >= 1);
    }
}

/// `(admitted, start in ms)` for arrivals at each time in ms, on a queue draining one per
/// 100 ms and holding `capacity`.
fn per_100_ms(capacity: u64, arrivals_ms: &[u64]) -> Vec<(bool, u64)> {
    let arrivals: Vec<u64> = arrivals_ms.iter().map(|ms| ms * 1_000_000).collect();
    run_queue(&queue(10, SECOND_NS, capacity), &arrivals)
        .into_iter()
        .map(|(admitted, start_ns)| (admitted, start_ns / 1_000_000))
        .collect()
}

#[test]
fn with_no_room_to_wait_only_an_idle_server_admits() {
    // One per 100 ms, nobody may wait: admitted only once the last release is 100 ms old.
    assert_eq!(
        per_100_ms(0, &[0, 0, 50, 99, 100, 150, 250, 250, 349, 350]),
        [
            (true, 0),
            (false, 100),
            (false, 100),
            (false, 100),
            (true, 100),
            (false, 200),
            (true, 250),
            (false, 350),
            (false, 350),
            (true, 350),
        ]
    );
}

#[test]
fn the_request_being_released_does_not_count_as_waiting() {
    // Q = 1. At 0: released at once, then one waits (until 100), then the queue is full.
    // At 100 the waiting one is being released: there is room again for one.
    assert_eq!(
        per_100_ms(1, &[0, 0, 0, 100, 100, 199, 200, 200]),
        [
            (true, 0),
            (true, 100),
            (false, 200),
            (true, 200),
            (false, 300),
            (false, 300),
            (true, 300),
            (false, 400),
        ]
    );
}

#[test]
fn a_burst_fills_the_queue_and_drops_the_rest_booking_nothing() {
    // Q = 2: of five simultaneous arrivals, one is released at once, two wait, two are dropped
    // (and booked nothing: both report the same would-be release).
    assert_eq!(
        per_100_ms(2, &[0, 0, 0, 0, 0, 100, 100, 250, 1_000]),
        [
            (true, 0),
            (true, 100),
            (true, 200),
            (false, 300),
            (false, 300),
            // At 100, only the one due at 200 waits: room for one more.
            (true, 300),
            (false, 400),
            // At 250, only the one due at 300 waits.
            (true, 400),
            // Long idle: the queue has drained, released at once.
            (true, 1_000),
        ]
    );
}

#[test]
fn a_dropped_request_reports_how_long_it_would_have_waited() {
    let queue = queue(10, SECOND_NS, 3);
    let now = at(5 * SECOND_NS);
    for waited_ms in [0, 100, 200, 300] {
        let reservation = queue.enqueue_at(now);
        assert!(reservation.is_allowed());
        assert_eq!(reservation.delay(), Duration::from_millis(waited_ms));
    }
    let dropped = queue.enqueue_at(now);
    assert!(dropped.is_denied());
    assert_eq!(dropped.delay(), Duration::from_millis(400));
    assert_eq!(queue.max_wait(), Duration::from_millis(300));
}

#[test]
fn enqueue_reads_the_queues_clock() {
    let clock = ManualClock::new();
    let queue = LeakyBucket::with_clock(4, Duration::from_secs(1), 1, clock.clone()).unwrap();
    clock.advance(Duration::from_secs(3));
    let first = queue.enqueue();
    let second = queue.enqueue();
    let third = queue.enqueue();
    assert_eq!(first.made_at(), at(3 * SECOND_NS));
    assert_eq!(
        (first.start(), second.start()),
        (at(3 * SECOND_NS), at(3 * SECOND_NS + 250_000_000))
    );
    assert!(third.is_denied());
    // 250 ms on, the second is being released: room for one.
    clock.advance(Duration::from_millis(250));
    assert_eq!(queue.enqueue().start(), at(3 * SECOND_NS + 500_000_000));
}

#[test]
fn at_the_horizon_the_queue_grants_no_more_than_its_capacity_plus_one() {
    // One per 100 ms. From `k` intervals before the horizon, a burst of arrivals is granted
    // `min(k, Q) + 1` times: the one released at once and those that leave by the horizon;
    // at the horizon itself, only the one released at once. The rest are dropped, booking
    // nothing (not granted with a release cut to the horizon).
    let interval_ns = 100_000_000;
    for capacity in [0, 1, 2, 5] {
        for k in 0..=7u64 {
            let now = at(HORIZON_NS - k * interval_ns);
            let queue = LeakyBucket::with_clock(
                10,
                Duration::from_secs(1),
                capacity,
                ManualClock::starting_at(now),
            )
            .unwrap();
            let reservations: Vec<_> = (0..capacity + 10).map(|_| queue.enqueue()).collect();
            let granted: Vec<u64> = reservations
                .iter()
                .filter(|reservation| reservation.is_allowed())
                .map(|reservation| reservation.start().as_ns())
                .collect();
            let expected: Vec<u64> = (0..=k.min(capacity))
                .map(|waiting| now.as_ns() + waiting * interval_ns)
                .collect();
            assert_eq!(granted, expected, "Q = {capacity}, {k} intervals before");
            assert!(reservations[granted.len()..]
                .iter()
                .all(|reservation| reservation.is_denied()
                    && reservation.start() <= Timestamp::HORIZON));
        }
    }
}

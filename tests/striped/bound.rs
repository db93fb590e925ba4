//! The accuracy contract's over-admission bound: in every interval `[a, b]` between two
//! admission times, the units admitted are at most `burst + ⌊(b − a) / T⌋ +
//! over_admission_bound()` (`T` the emission interval). Random schedules on one thread
//! (proptest) and on several (a clock moved by one thread while the others check), and two
//! schedules that do over-admit, as far as each term of the bound lets them: a bound too small
//! fails those, a bound of zero fails all of them.

use crate::common::proptest_config;
use crate::{
    assert_within_the_bound, check_cost, check_on, gcra, record, striped, worst_interval,
    Admissions, GRAIN_NS, MS_NS, START_NS,
};
use nanolimit::Request;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Duration;

/// Two stripes leasing 8 units, living 100 ms, on 1 unit per ms with a burst of 16: the bound
/// is the held units, `2 × 7 = 14` (the budget earns 100 in a lifetime). Both stripes lease at
/// the start and keep 14 units; 16 ms later the budget is full again, and at that one instant
/// the 14 held units pass with a fresh burst of 16: 30 units where the plain quota admits 16.
#[test]
fn units_held_while_the_budget_refills_over_admit_by_the_held_units_exactly() {
    let limiter = striped(gcra(1_000, 16), 2, (8, 8), 100 * MS_NS);
    assert_eq!(limiter.over_admission_bound(), 14);
    let mut admissions = Admissions::new();
    for stripe in [0, 1] {
        assert!(check_on(&limiter, stripe, START_NS).is_allowed());
        record(&mut admissions, START_NS, 1);
    }
    assert_eq!(limiter.quota_remaining(), 0);
    assert_eq!(limiter.held_units(0) + limiter.held_units(1), 14);

    let refilled_ns = START_NS + 16 * MS_NS;
    let mut at_once = 0;
    for _ in 0..64 {
        for stripe in [0, 1] {
            if check_on(&limiter, stripe, refilled_ns).is_allowed() {
                at_once += 1;
            }
        }
    }
    assert_eq!(at_once, 16 + 14);
    record(&mut admissions, refilled_ns, at_once);
    let worst = assert_within_the_bound(&limiter, &admissions, "held units").unwrap();
    assert_eq!(worst.excess(), 14, "{worst:?}");
    assert_eq!((worst.from_ns, worst.to_ns), (refilled_ns, refilled_ns));
}

/// One stripe leasing the whole burst (16), with a lifetime of 10 grains (5.24 ms), on 1 unit
/// per ms: the stripe could hold 15 units, but the bound is what the budget earns in one
/// lifetime, `⌈5.24⌉ = 6`. The lease at the start (a grain boundary) keeps 15 units; they are
/// spent at the last reading the lease allows (the end of its 9th grain: the lifetime's whole
/// grains less one), and the budget's next 6 units at 6 ms: 21 units in an interval of
/// 1.28 ms, where the plain quota admits 17.
#[test]
fn units_spent_late_over_admit_by_less_than_a_lifetime_of_the_rate() {
    let lifetime_ns = 10 * GRAIN_NS;
    let limiter = striped(gcra(1_000, 16), 1, (16, 16), lifetime_ns);
    assert_eq!(limiter.over_admission_bound(), 6);
    let mut admissions = Admissions::new();
    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    record(&mut admissions, START_NS, 1);
    assert_eq!(limiter.held_units(0), 15);

    let last_ns = START_NS + 9 * GRAIN_NS - 1;
    for _ in 0..15 {
        assert!(check_on(&limiter, 0, last_ns).is_allowed());
    }
    record(&mut admissions, last_ns, 15);
    let refilled_ns = START_NS + 6 * MS_NS;
    let mut later = 0;
    while check_on(&limiter, 0, refilled_ns).is_allowed() {
        later += 1;
    }
    assert_eq!(later, 6);
    record(&mut admissions, refilled_ns, later);
    let worst = assert_within_the_bound(&limiter, &admissions, "lifetime").unwrap();
    assert_eq!(worst.excess(), 4, "{worst:?}");
    assert_eq!((worst.from_ns, worst.to_ns), (last_ns, refilled_ns));
}

/// One step of a schedule on one thread.
#[derive(Debug, Clone)]
enum Op {
    /// Move the clock forward by this many nanoseconds.
    Advance(u64),
    /// One unit on this stripe (reduced modulo the stripe count).
    Unit(usize),
    /// This cost on the thread's own stripe.
    Cost(u64),
    /// `give_back_unused`.
    GiveBack,
}

/// A limiter's shape: (units per second, burst, stripes, (min lease, max lease), lifetime ns).
type Shape = (u64, u64, usize, (u64, u64), u64);

fn any_shape() -> impl Strategy<Value = Shape> {
    let lifetimes = prop::sample::select(vec![
        crate::requests::lease_lifetimes().0.as_nanos() as u64,
        3 * MS_NS,
        10 * GRAIN_NS,
        10 * MS_NS,
        40 * MS_NS,
    ]);
    (
        prop::sample::select(vec![250u64, 1_000, 4_000]),
        2u64..=48,
        prop::sample::select(vec![1usize, 2, 4]),
        lifetimes,
    )
        .prop_flat_map(|(rate, burst, stripes, lifetime)| {
            (1..=burst).prop_flat_map(move |max| {
                (1..=max).prop_map(move |min| (rate, burst, stripes, (min, max), lifetime))
            })
        })
}

fn any_schedule(burst: u64, lifetime_ns: u64) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0..=2 * MS_NS).prop_map(Op::Advance),
        1 => (0..=2 * lifetime_ns).prop_map(Op::Advance),
        10 => (0..8usize).prop_map(Op::Unit),
        3 => (1..=burst).prop_map(Op::Cost),
        1 => Just(Op::GiveBack),
    ];
    prop::collection::vec(op, 1..400)
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn random_schedules_stay_within_the_bound(
        (shape, ops) in any_shape().prop_flat_map(|shape| (Just(shape), any_schedule(shape.1, shape.4)))
    ) {
        let (rate, burst, stripes, lease, lifetime_ns) = shape;
        let limiter = striped(gcra(rate, burst), stripes, lease, lifetime_ns);
        let mut now_ns = START_NS;
        let mut admissions = Admissions::new();
        for op in &ops {
            let decision = match *op {
                Op::Advance(by_ns) => {
                    now_ns += by_ns;
                    continue;
                }
                Op::GiveBack => {
                    limiter.give_back_unused();
                    continue;
                }
                Op::Unit(stripe) => check_on(&limiter, stripe, now_ns),
                Op::Cost(cost) => check_cost(&limiter, cost, now_ns),
            };
            if decision.is_allowed() {
                record(&mut admissions, now_ns, decision.cost());
            }
        }
        if let Some(worst) = worst_interval(limiter.quota(), &admissions) {
            prop_assert!(
                worst.excess() <= limiter.over_admission_bound() as i128,
                "{:?} exceeds the quota by {}, bound {}", worst, worst.excess(),
                limiter.over_admission_bound()
            );
        }
    }
}

/// Three threads check while the main thread moves the clock by random steps (mostly under a
/// millisecond, now and then up to two lease lifetimes). After each step, each checker makes 0
/// to 3 requests (one unit on its own stripe, or on a random one, or a cost of 1 to 4 on its
/// thread's stripe, now and then `give_back_unused`), so that stripes keep units across steps
/// while the budget refills: what the bound is for.
///
/// A check holds a read guard from its reading to its decision, and a step of the clock takes
/// the write guard: every check is judged at the clock's current reading, as with a real clock
/// read just before the check. (The bound is not kept for readings behind the leases: a
/// reading taken before another thread's lease and used after it can spend that lease's units,
/// counted at the older reading.) Within that, the checkers race each other and the steps
/// freely.
#[test]
fn threads_checking_while_the_clock_moves_stay_within_the_bound() {
    const CHECKERS: usize = 3;
    const STEPS: u64 = 3_000;
    // Shapes whose stripes hold several units: with units spent past their lifetime, or given
    // back when a later lease depends on them, some of these runs exceed the bound.
    let shapes = [
        (2, (2, 6), 10 * MS_NS),
        (4, (2, 12), 10 * MS_NS),
        (2, (1, 12), 40 * MS_NS),
        (4, (4, 12), 5 * MS_NS),
        (2, (8, 12), 10 * MS_NS),
        (4, (1, 12), 10 * GRAIN_NS),
    ];
    for (seed, (stripes, lease, lifetime_ns)) in shapes.into_iter().enumerate() {
        let limiter = striped(gcra(1_000, 12), stripes, lease, lifetime_ns);
        let gate = RwLock::new(());
        let step = AtomicU64::new(0);
        let per_thread: Vec<Admissions> = std::thread::scope(|scope| {
            let checkers: Vec<_> = (0..CHECKERS)
                .map(|thread| {
                    let (limiter, gate, step) = (&limiter, &gate, &step);
                    scope.spawn(move || {
                        let mut rng = StdRng::seed_from_u64((seed * CHECKERS + thread) as u64);
                        let mut admissions = Admissions::new();
                        let (mut seen, mut requests) = (0, 0);
                        while seen < STEPS || requests > 0 {
                            if requests == 0 {
                                let current = step.load(Ordering::Acquire);
                                if current == seen {
                                    std::thread::yield_now();
                                    continue;
                                }
                                (seen, requests) = (current, rng.gen_range(0..=3));
                                continue;
                            }
                            requests -= 1;
                            let _reading = gate.read().unwrap();
                            let now = limiter.now();
                            let decision = match rng.gen_range(0..32) {
                                0 => {
                                    limiter.give_back_unused();
                                    continue;
                                }
                                1..=6 => {
                                    let cost = rng.gen_range(1..=4);
                                    limiter.check_with(Request::cost(cost).at(now)).unwrap()
                                }
                                7..=12 => limiter.check_at_stripe(rng.gen_range(0..4), now),
                                _ => limiter.check_at_stripe(thread, now),
                            };
                            if decision.is_allowed() {
                                record(&mut admissions, now.as_ns(), decision.cost());
                            }
                        }
                        admissions
                    })
                })
                .collect();
            let mut rng = StdRng::seed_from_u64(1_000 + seed as u64);
            for next in 1..=STEPS {
                let by_ns = if rng.gen_bool(0.85) {
                    rng.gen_range(0..=MS_NS)
                } else {
                    rng.gen_range(0..=2 * lifetime_ns)
                };
                {
                    let _moving = gate.write().unwrap();
                    limiter.clock().advance(Duration::from_nanos(by_ns));
                    step.store(next, Ordering::Release);
                }
                for _ in 0..rng.gen_range(0..8) {
                    std::thread::yield_now();
                }
            }
            checkers.into_iter().map(|c| c.join().unwrap()).collect()
        });
        let mut admissions = Admissions::new();
        for (now_ns, units) in per_thread.into_iter().flatten() {
            record(&mut admissions, now_ns, units);
        }
        let context = format!("{stripes} stripes, leases {lease:?}, lifetime {lifetime_ns} ns");
        let worst = assert_within_the_bound(&limiter, &admissions, &context);
        assert!(worst.is_some(), "{context}: nothing admitted");
        // The clock never went back: the readings recorded lie between the start and the end.
        let last_ns = limiter.now().as_ns();
        assert!(admissions
            .keys()
            .all(|&t| (START_NS..=last_ns).contains(&t)));
    }
}

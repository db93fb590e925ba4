//! Loom models of the striped limiter's lease protocol (src/striped/): a check spends from its
//! stripe with one compare-and-swap; a stripe that is empty, short or expired is claimed (a
//! compare-and-swap to a marker), a lease is taken from the shared GCRA word, and the rest is
//! published with a Release store; a thread that finds the stripe claimed checks the shared word
//! directly; lapsed units, and those `give_back_unused` empties, are given back only while the
//! shared word still equals the word their lease wrote.
//!
//! Every quota is GCRA at one unit per second (`T` = 1 s), leases have a fixed size (2 units, so
//! that a refill keeps at most one, unless a model says 3), and the lease lifetime is the
//! shortest allowed, `MIN_LEASE_LIFETIME` (4 × 2^19 ns, about 2.1 ms). Stripes are chosen
//! explicitly (`check_at_stripe`), not by the calling thread's number: that comes from a std
//! counter and thread-local, outside the model, so it would differ between executions. The one
//! `check_with` (for a cost of 2) is made on a limiter of one stripe, where every number maps to
//! stripe 0. Every time is passed in; the models read the `ManualClock` only through
//! `quota_remaining`, after the threads are joined (and once before, in one model), and it reads
//! the instant the threads checked at (set when the clock is built, and never moved).
//!
//! The property every model asserts is **conservation**: every unit the shared budget lost is
//! admitted, held by a stripe, or (only where a lease lapsed and its give-back was not exact)
//! lost, and nothing else. With `taken` the units the budget lacks at the threads' instant
//! (`burst − quota_remaining()`), `admitted` the admissions whose cost the budget still counts at
//! that instant, and `held` the units the stripes hold (`held_units`, live or expired):
//! `taken == admitted + held` where nothing can lapse, and
//! `admitted + held <= taken <= admitted + held + lapsed` where `lapsed` units may. More units
//! in play than taken is an over-admission (or a unit given back while still held); fewer is a
//! unit lost.
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test striped`

use loom::sync::Arc;
use nanolimit::striped::StripedLimiter;
use nanolimit::{Gcra, ManualClock, Request};
use nanolimit_loom_tests::{
    at, explore, run_concurrently, ModelThread, UNREACHED_PREEMPTION_BOUND,
};

/// The shortest lease lifetime a striped limiter accepts: four of its word's grains of 2^19 ns
/// (the builder refuses anything shorter with `BuildError::LeaseLifetime`).
const MIN_LEASE_LIFETIME: std::time::Duration = std::time::Duration::from_nanos(4 << 19);

/// The emission interval of every quota here, in nanoseconds.
const T: u64 = 1_000_000_000;

/// Leases are this many units unless a model says otherwise: the smallest size that leaves a
/// unit in the stripe, so that a refill publishes something another check can spend (or lose).
const LEASE_UNITS: u64 = 2;

/// The instant of every check in the one-instant models: nothing is earned back and nothing
/// expires while the threads run (a lease taken then lives until about 1.05 ms later).
const FROZEN_NOW_NS: u64 = T;

/// Every plan runs on a spawned thread while the model's thread only joins: loom explores more
/// interleavings that way (see [`ModelThread`]).
const MODEL_THREAD: ModelThread = ModelThread::OnlyJoins;

/// A striped limiter as the models share it.
type Striped = StripedLimiter<ManualClock>;

/// GCRA at one unit per second, bursts of `burst`.
fn gcra(burst: u64) -> Gcra {
    Gcra::per_second(1).unwrap().with_burst(burst).unwrap()
}

/// A striped limiter of `stripes` stripes over a burst of `burst`, leasing [`LEASE_UNITS`] at a
/// time for [`MIN_LEASE_LIFETIME`], on a clock that reads `clock_ns` (only `quota_remaining`
/// reads it).
fn striped_limiter(burst: u64, stripes: usize, clock_ns: u64) -> Arc<Striped> {
    striped_limiter_leasing(burst, stripes, LEASE_UNITS, clock_ns)
}

/// As [`striped_limiter`], leasing `lease_units` at a time.
fn striped_limiter_leasing(
    burst: u64,
    stripes: usize,
    lease_units: u64,
    clock_ns: u64,
) -> Arc<Striped> {
    let limiter = StripedLimiter::builder(gcra(burst))
        .stripes(stripes)
        .lease_units(lease_units, lease_units)
        .lease_lifetime(MIN_LEASE_LIFETIME)
        .clock(ManualClock::starting_at(at(clock_ns)))
        .build()
        .expect("a valid striped configuration");
    assert_eq!(limiter.stripes(), stripes, "a power of two, as asked");
    Arc::new(limiter)
}

/// One operation a thread makes on the striped limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    /// `check_at_stripe(stripe, now)`: one unit on stripe `stripe`.
    Check { stripe: usize, now_ns: u64 },
    /// `check_with(Request::cost(cost).at(now))`: `cost` units, all or nothing, on the calling
    /// thread's stripe. Only on a limiter of one stripe, where that is stripe 0 whatever number
    /// the thread has (the numbers come from a std counter and thread-local, outside the model).
    CheckWith { cost: u64, now_ns: u64 },
    /// `give_back_unused()`: every stripe's units back to the budget where exact, and emptied.
    GiveBackUnused,
}

/// What an operation did, short enough to read a failing model's outcomes at a glance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// A check of this many units admitted.
    Admitted(u64),
    /// A check of this many units denied.
    Denied(u64),
    GaveBack,
}

impl Outcome {
    /// The outcome of a check of `cost` units that `allowed` or not.
    fn of_check(allowed: bool, cost: u64) -> Outcome {
        if allowed {
            Outcome::Admitted(cost)
        } else {
            Outcome::Denied(cost)
        }
    }
}

/// `count` unit checks on stripe `stripe` at `now_ns`.
fn checks(stripe: usize, now_ns: u64, count: usize) -> Vec<Operation> {
    vec![Operation::Check { stripe, now_ns }; count]
}

/// Performs `operation` on `limiter`.
fn perform(limiter: &Striped, operation: Operation) -> Outcome {
    match operation {
        Operation::Check { stripe, now_ns } => {
            Outcome::of_check(limiter.check_at_stripe(stripe, at(now_ns)).is_allowed(), 1)
        }
        Operation::CheckWith { cost, now_ns } => {
            assert_eq!(
                limiter.stripes(),
                1,
                "the calling thread's stripe is stripe 0"
            );
            let decision = limiter
                .check_with(Request::cost(cost).at(at(now_ns)))
                .expect("every modelled cost fits the burst");
            Outcome::of_check(decision.is_allowed(), cost)
        }
        Operation::GiveBackUnused => {
            limiter.give_back_unused();
            Outcome::GaveBack
        }
    }
}

/// The operations `seed` performed in order on the model's thread, before any other thread
/// exists: the state a race starts from.
fn seed(limiter: &Striped, seed: &[Operation]) -> Vec<Outcome> {
    seed.iter()
        .map(|&operation| perform(limiter, operation))
        .collect()
}

/// The units `outcomes` admitted.
fn admissions<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> u64 {
    outcomes
        .into_iter()
        .map(|outcome| match outcome {
            Outcome::Admitted(cost) => *cost,
            Outcome::Denied(_) | Outcome::GaveBack => 0,
        })
        .sum()
}

/// The state once the threads are joined, as a model's assertions read it.
#[derive(Debug)]
struct Final {
    /// Each thread's outcomes, in plan order.
    outcomes: Vec<Vec<Outcome>>,
    /// Units the threads admitted.
    admitted: u64,
    /// Units the budget lacks at the clock's reading: `burst − quota_remaining()`.
    taken: u64,
    /// Units each stripe holds, live or expired.
    held: Vec<u64>,
    /// The largest lease.
    max_lease: u64,
}

impl Final {
    /// Reads `limiter` (over a burst of `burst`) after the threads that reported `outcomes` are
    /// joined: no stripe is claimed then.
    fn of(limiter: &Striped, burst: u64, outcomes: Vec<Vec<Outcome>>) -> Final {
        let remaining = limiter.quota_remaining();
        assert!(remaining <= burst, "{remaining} left of a burst of {burst}");
        Final {
            admitted: admissions(outcomes.iter().flatten()),
            taken: burst - remaining,
            held: (0..limiter.stripes())
                .map(|stripe| limiter.held_units(stripe))
                .collect(),
            max_lease: limiter.lease_units().1,
            outcomes,
        }
    }

    fn held_in_all(&self) -> u64 {
        self.held.iter().sum()
    }

    /// `taken == admitted + held`, with `earlier_admitted` units admitted before the race (by a
    /// seed) that the budget still counts: where no unit can lapse, every unit the budget lost
    /// is admitted or held, and every unit admitted or held was taken from it.
    fn assert_conserved(&self, earlier_admitted: u64) {
        self.assert_conserved_but_lapsed(earlier_admitted, 0);
    }

    /// `admitted + held <= taken <= admitted + held + lapsed`: as
    /// [`assert_conserved`](Self::assert_conserved), except that up to `lapsed` units may be
    /// lost (taken, never admitted, no longer held), where a lease lapsed with units unspent and
    /// giving them back was not exact.
    fn assert_conserved_but_lapsed(&self, earlier_admitted: u64, lapsed: u64) {
        let in_play = earlier_admitted + self.admitted + self.held_in_all();
        assert!(
            in_play <= self.taken,
            "{in_play} units admitted ({earlier_admitted} before the race) or held, but the \
             budget lost only {}: {self:?}",
            self.taken
        );
        assert!(
            self.taken <= in_play + lapsed,
            "the budget lost {} units, but only {in_play} are admitted ({earlier_admitted} before \
             the race) or held, and at most {lapsed} could lapse: {self:?}",
            self.taken
        );
    }

    /// No stripe holds more than a lease less the unit its refill spent: the stripes' part of
    /// the over-admission bound.
    fn assert_stripes_hold_at_most_a_lease_less_one(&self) {
        assert!(
            self.held.iter().all(|&held| held < self.max_lease),
            "a stripe holds a whole lease or more: {self:?}"
        );
    }

    /// A denial of `cost` units means the budget had less than `cost` when it was decided
    /// (less than the cost less what the stripe held, or, while the stripe was claimed, less
    /// than the cost): at one instant only a give-back raises the budget, and in the models that
    /// assert this none can follow a denial, so it still has less at the end. (Units another
    /// stripe, or a claim in progress on this one, held may have been left: the contract's
    /// under-admission.)
    fn assert_denied_only_on_a_short_budget(&self, burst: u64) {
        let remaining = burst - self.taken;
        for outcome in self.outcomes.iter().flatten() {
            if let Outcome::Denied(cost) = outcome {
                assert!(
                    remaining < *cost,
                    "a check of {cost} units was denied, yet the budget still has {remaining}: \
                     {self:?}"
                );
            }
        }
    }
}

/// Two threads refill one stripe at once, at one instant: thread 1 makes `checks_per_thread[0]`
/// unit checks and thread 2 `checks_per_thread[1]`, all on stripe 0 of a fresh limiter (one
/// stripe, leases of 2). The first check of each finds the stripe empty; one claims it and
/// leases, the other either finds it claimed (and checks the budget directly) or loses the
/// claim's compare-and-swap and starts over, spending what the refill published or refilling
/// again.
///
/// Asserts: at most the burst admitted (the checks outnumber it), and at least one (the first
/// refill leases from a whole budget); conservation (`taken == admitted + held`, exact: nothing
/// expires); the stripe holds at most one unit; a denial only when the budget is short of its
/// cost. Not that the whole burst is admitted: a check that finds the stripe claimed is judged
/// on the budget alone, and may be denied while the claim holder is about to publish a unit (at
/// burst 2, both of thread 1's checks can be denied during thread 2's refill, whose unit is then
/// left in the stripe: the contract's under-admission).
fn model_refills_of_one_stripe(
    model_name: &str,
    burst: u64,
    checks_per_thread: [usize; 2],
    preemption_bound: usize,
) {
    assert!(checks_per_thread.iter().sum::<usize>() as u64 > burst);
    explore(model_name, preemption_bound, move || {
        let limiter = striped_limiter(burst, 1, FROZEN_NOW_NS);
        let plans = checks_per_thread
            .iter()
            .map(|&count| checks(0, FROZEN_NOW_NS, count))
            .collect();
        let outcomes = run_concurrently(MODEL_THREAD, &limiter, plans, perform);
        let state = Final::of(&limiter, burst, outcomes);
        assert!(state.admitted <= burst, "over-admitted: {state:?}");
        assert!(state.admitted >= 1, "{state:?}");
        state.assert_conserved(0);
        state.assert_stripes_hold_at_most_a_lease_less_one();
        state.assert_denied_only_on_a_short_budget(burst);
    });
}

/// Burst 2: the first lease takes the whole budget, so a racing check is served from the lease
/// (spending the unit the refill published) or directly from the budget before the lease (and
/// the lease falls back to the one unit left), or denied.
#[test]
fn two_refills_of_one_stripe_race() {
    model_refills_of_one_stripe(
        "striped: 2 and 1 checks on one stripe, burst 2, leases of 2",
        2,
        [2, 1],
        UNREACHED_PREEMPTION_BOUND,
    );
}

/// Burst 3, two checks each: a stripe emptied by one thread's spend is refilled again, by either
/// thread, while the other may be checking. Within 5 preemptions: with none reached (30) loom
/// explores 790,722 executions in about 46 s.
#[test]
fn two_threads_refill_one_stripe_twice() {
    model_refills_of_one_stripe(
        "striped: 2 threads x 2 checks on one stripe, burst 3, leases of 2",
        3,
        [2, 2],
        5,
    );
}

/// A check spends a stripe's last unit while a refill claims the stripe counting that unit:
/// stripe 0 of a limiter with burst 4 (one stripe) holds one unit (a seed check leased 2 and
/// spent one; the budget has 2 left). Thread 1 checks one unit; thread 2 checks 2 units, then
/// one. Thread 2's first check finds one unit held, short of its cost: it claims the word that
/// holds it, leases 2 (it needs only 1, but leases are 2), spends the held unit with one leased
/// unit and keeps the other; thread 1's spend of that same held unit compare-and-swaps against
/// the same word, so exactly one of the two takes it (the other starts over, or checks the
/// budget directly while the stripe is claimed). Three units are left for four.
///
/// Asserts: at most the burst admitted (the seed's unit counted); conservation; the stripe holds
/// at most one unit; a denial only when the budget is short of its cost.
#[test]
fn a_check_races_a_refill_of_its_stripe() {
    const BURST: u64 = 4;
    explore(
        "striped: a unit check races a refill for 2 units, then a unit, burst 4, leases of 2",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let limiter = striped_limiter(BURST, 1, FROZEN_NOW_NS);
            let seeded = seed(&limiter, &checks(0, FROZEN_NOW_NS, 1));
            assert_eq!(seeded, [Outcome::Admitted(1)]);
            assert_eq!(limiter.held_units(0), 1);
            let plans = vec![
                checks(0, FROZEN_NOW_NS, 1),
                vec![
                    Operation::CheckWith {
                        cost: 2,
                        now_ns: FROZEN_NOW_NS,
                    },
                    Operation::Check {
                        stripe: 0,
                        now_ns: FROZEN_NOW_NS,
                    },
                ],
            ];
            let outcomes = run_concurrently(MODEL_THREAD, &limiter, plans, perform);
            let state = Final::of(&limiter, BURST, outcomes);
            let earlier = admissions(&seeded);
            assert!(
                earlier + state.admitted <= BURST,
                "over-admitted: {earlier} before the race and {} in it, burst {BURST}: {state:?}",
                state.admitted
            );
            state.assert_conserved(earlier);
            state.assert_stripes_hold_at_most_a_lease_less_one();
            state.assert_denied_only_on_a_short_budget(BURST);
        },
    );
}

/// Two stripes refill at once from a budget too small for both leases: burst 3, leases of 2, and
/// each of two threads makes two unit checks on its own stripe at one instant. The first lease
/// takes 2 units; the second finds 1 left and falls back to a lease of just what its check needs.
/// The stripe that leased 2 spends its held unit on its second check; the other stripe's second
/// check finds the budget empty.
///
/// Asserts: exactly the burst admitted (both first checks among them), nothing left in the budget
/// or the stripes; conservation.
#[test]
fn refills_of_two_stripes_race_for_a_budget_too_small_for_both_leases() {
    const BURST: u64 = 3;
    explore(
        "striped: 2 threads x 2 checks on 2 stripes, burst 3, leases of 2",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let limiter = striped_limiter(BURST, 2, FROZEN_NOW_NS);
            let plans = vec![checks(0, FROZEN_NOW_NS, 2), checks(1, FROZEN_NOW_NS, 2)];
            let outcomes = run_concurrently(MODEL_THREAD, &limiter, plans, perform);
            let state = Final::of(&limiter, BURST, outcomes);
            assert_eq!(state.admitted, BURST, "{state:?}");
            assert_eq!(state.outcomes[0][0], Outcome::Admitted(1), "{state:?}");
            assert_eq!(state.outcomes[1][0], Outcome::Admitted(1), "{state:?}");
            assert_eq!(state.taken, BURST, "{state:?}");
            assert_eq!(state.held, [0, 0], "{state:?}");
            state.assert_conserved(0);
        },
    );
}

/// `give_back_unused` races a refill of another stripe, and then of that stripe. Burst 2, two
/// stripes: a seed check at 0 leased 2 units into stripe 0 and spent one (the budget's word is
/// then `2T`); at `3T` that lease has expired, and the budget is whole again (the word is in the
/// past). Thread 1 makes two checks on stripe 1 at `3T` (a lease of 2, then a spend or a refill);
/// thread 2 gives back every stripe's units. Stripe 0's expired unit goes back only while the
/// word is still `2T` (then it changes nothing at `3T`); once thread 1 leased, giving it back
/// from the word that lease wrote (`5T`) would hand back one of the two units the lease took,
/// though both are admitted or held. Stripe 1's unit goes back when the word is still the one
/// its own lease wrote.
///
/// Asserts: stripe 0 is emptied; thread 1's first check is admitted; conservation at `3T`, exact
/// (the seed's unit is no longer counted by the budget at `3T`, and stripe 0's unit, if it
/// lapses rather than going back, was earned back by then).
#[test]
fn give_back_unused_races_a_refill_of_another_stripe() {
    const BURST: u64 = 2;
    const NOW_NS: u64 = 3 * T;
    explore(
        "striped: give_back_unused races 2 checks on another stripe, burst 2, leases of 2",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let limiter = striped_limiter(BURST, 2, NOW_NS);
            let seeded = seed(&limiter, &checks(0, 0, 1));
            assert_eq!(seeded, [Outcome::Admitted(1)]);
            assert_eq!(limiter.held_units(0), 1);
            let plans = vec![checks(1, NOW_NS, 2), vec![Operation::GiveBackUnused]];
            let outcomes = run_concurrently(MODEL_THREAD, &limiter, plans, perform);
            let state = Final::of(&limiter, BURST, outcomes);
            assert_eq!(
                state.held[0], 0,
                "give_back_unused emptied stripe 0: {state:?}"
            );
            assert_eq!(state.outcomes[0][0], Outcome::Admitted(1), "{state:?}");
            state.assert_conserved(0);
            state.assert_stripes_hold_at_most_a_lease_less_one();
        },
    );
}

/// `give_back_unused` claims a stripe whose refill's units were since partly spent: burst 3, one
/// stripe, leases of 3, every check at one instant. The claim may read the word a spend wrote
/// with a Relaxed compare-and-swap, and must still see the `booked` word the refill wrote before
/// its Release store: the spend continues that store's release sequence, so the claim's Acquire
/// synchronises with the refill (the ORDERING note on the spend in `decide`). With a stale
/// `booked`, the give-back would find the shared word changed and give nothing back: a unit
/// lost. `threads_checking` threads each make `checks_per_thread` unit checks (a lease of 3,
/// keeping 2, then spends) while one more thread gives back every stripe's units.
///
/// Asserts: conservation, exact (the give-back is exact whenever it runs: nothing else takes from
/// the budget); the stripe holds at most 2 units.
fn model_give_back_after_spends(
    model_name: &str,
    threads_checking: usize,
    checks_per_thread: usize,
    preemption_bound: usize,
) {
    const BURST: u64 = 3;
    explore(model_name, preemption_bound, move || {
        let limiter = striped_limiter_leasing(BURST, 1, 3, FROZEN_NOW_NS);
        let mut plans = vec![checks(0, FROZEN_NOW_NS, checks_per_thread); threads_checking];
        plans.push(vec![Operation::GiveBackUnused]);
        let outcomes = run_concurrently(MODEL_THREAD, &limiter, plans, perform);
        let state = Final::of(&limiter, BURST, outcomes);
        state.assert_conserved(0);
        state.assert_stripes_hold_at_most_a_lease_less_one();
    });
}

/// The refill and the spend on one thread (two checks), `give_back_unused` on another.
#[test]
fn give_back_unused_after_a_spend_sees_the_refills_lease() {
    model_give_back_after_spends(
        "striped: give_back_unused races a refill then a spend, burst 3, leases of 3",
        1,
        2,
        UNREACHED_PREEMPTION_BOUND,
    );
}

/// The refill and the spend on two threads (one check each: whichever comes second spends, or
/// checks the budget while the stripe is claimed), `give_back_unused` on a third: a spend by
/// another thread than the refill's continues its release sequence too. Within 2 preemptions,
/// enough for the claim to come between the spend and the end (3 explores 40,156 executions in
/// about 3 s; with the model's thread giving back instead of a spawned one, loom explores 2,970
/// executions under 30, and fails on neither a Relaxed claim nor a Relaxed publication).
#[test]
fn give_back_unused_after_another_threads_spend_sees_the_refills_lease() {
    model_give_back_after_spends(
        "striped: give_back_unused races a refill and another thread's spend, burst 3, leases of 3",
        2,
        1,
        2,
    );
}

/// An expired stripe's refill gives its lapsed unit back while another stripe's refill takes the
/// budget. Burst 3, two stripes: a seed check at 0 leased 2 units into stripe 0 and spent one
/// (the word is `2T`: 1 unit left). One lease lifetime after 0 (`MIN_LEASE_LIFETIME`: the lease
/// has lapsed, since a unit is never spent a lifetime or more after its lease, and nothing is
/// earned back yet), thread 1 checks stripe 0 (which finds its unit lapsed: it passes the
/// read-only test, claims, gives the unit back if the word is still `2T`, and leases) and thread
/// 2 checks stripe 1 (a lease of 2, or of 1 if only 1 is left). When thread 2's lease comes
/// between thread 1's give-back and its lease, thread 1's lease fails, and it restores the stripe
/// empty: the lapsed unit went back to the budget, so it must not also stay in the stripe.
///
/// Asserts: at least one of the two admitted (the budget has a unit for whichever leases first);
/// conservation, the seed's admission counted, where up to the one lapsed unit may be lost (when
/// thread 2's lease comes before thread 1's give-back, that give-back is not exact); a denial
/// only once the budget is empty (thread 1's give-back, the only one, comes before its lease,
/// and the budget is empty only after a lease).
#[test]
fn a_lapsed_unit_goes_back_while_another_stripe_takes_the_budget() {
    const BURST: u64 = 3;
    let lapsed_ns = u64::try_from(MIN_LEASE_LIFETIME.as_nanos()).unwrap();
    explore(
        "striped: an expired stripe's refill races another stripe's, burst 3, leases of 2",
        UNREACHED_PREEMPTION_BOUND,
        move || {
            let limiter = striped_limiter(BURST, 2, lapsed_ns);
            let seeded = seed(&limiter, &checks(0, 0, 1));
            assert_eq!(seeded, [Outcome::Admitted(1)]);
            assert_eq!(limiter.held_units(0), 1);
            assert_eq!(
                limiter.quota_remaining(),
                1,
                "the seed's lease is not earned back"
            );
            let plans = vec![checks(0, lapsed_ns, 1), checks(1, lapsed_ns, 1)];
            let outcomes = run_concurrently(MODEL_THREAD, &limiter, plans, perform);
            let state = Final::of(&limiter, BURST, outcomes);
            assert!(state.admitted >= 1, "{state:?}");
            state.assert_conserved_but_lapsed(admissions(&seeded), 1);
            state.assert_stripes_hold_at_most_a_lease_less_one();
            state.assert_denied_only_on_a_short_budget(BURST);
        },
    );
}

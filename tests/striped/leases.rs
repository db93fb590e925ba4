//! What happens to leased units: they are never spent after their lease lifetime (its whole
//! grains less one, counting the lease's own); units left when it ends go back to the budget at the stripe's
//! next refill, or by `give_back_unused`, only when no other lease or admission came after
//! (otherwise they lapse: never an over-admission); and lease sizes adapt, doubling for a stripe
//! that spends them fast and halving for one whose lease lapses.

use crate::common::{at, SECOND_NS};
use crate::{check_on, gcra, striped, GRAIN_NS, MS_NS, START_NS};
use nanolimit::{Limiter, ManualClock, Request};
use std::time::Duration;

/// One unit per second and a burst of 16: nothing refills within a test's milliseconds. Two
/// stripes take leases of 8 at the start (7 held each) and empty the budget; stripe 0's units
/// are spendable until the end of its lifetime's whole grains less one, and not from then on: denied
/// with its 6 units still in the stripe, the budget untouched, and a `retry_after` that counts
/// only the budget.
#[test]
fn units_are_not_spent_after_their_lease_lifetime() {
    let lifetime_ns = 10 * MS_NS;
    let limiter = striped(gcra(1, 16), 2, (8, 8), lifetime_ns);
    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    assert!(check_on(&limiter, 1, START_NS).is_allowed());
    assert_eq!((limiter.held_units(0), limiter.held_units(1)), (7, 7));
    assert_eq!(limiter.quota_remaining(), 0);

    let expiry_ns = START_NS + (lifetime_ns / GRAIN_NS - 1) * GRAIN_NS;
    assert!(expiry_ns + GRAIN_NS <= START_NS + lifetime_ns);
    assert!(check_on(&limiter, 0, expiry_ns - 1).is_allowed());
    assert_eq!(limiter.held_units(0), 6);
    for now_ns in [expiry_ns, START_NS + lifetime_ns, START_NS + 900 * MS_NS] {
        let decision = check_on(&limiter, 0, now_ns);
        assert!(decision.is_denied(), "at {now_ns}");
        assert_eq!(decision.remaining(), 0);
        assert_eq!(
            decision.retry_after(),
            Duration::from_nanos(START_NS + SECOND_NS - now_ns)
        );
        assert_eq!(limiter.held_units(0), 6, "a denial writes nothing");
        assert_eq!(limiter.quota_remaining(), 0);
    }
    // Stripe 1's units, still live, are not stripe 0's.
    assert!(check_on(&limiter, 1, expiry_ns - 1).is_allowed());
}

/// One stripe: a lease of 8 at the start (7 held); after its lifetime the budget still shows 8,
/// and the next refill gives the 7 back before it leases again: 7 left in the budget, not 0.
/// With a second stripe leasing after the first, the first's expired units lapse instead.
#[test]
fn expired_units_go_back_at_the_next_refill_unless_another_lease_came_after() {
    let limiter = striped(gcra(1, 16), 1, (8, 8), 10 * MS_NS);
    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    assert_eq!(limiter.quota_remaining(), 8);
    let later_ns = START_NS + 20 * MS_NS;
    limiter.clock().set(at(later_ns));
    assert_eq!(limiter.quota_remaining(), 8);
    assert!(check_on(&limiter, 0, later_ns).is_allowed());
    assert_eq!(limiter.held_units(0), 7);
    assert_eq!(
        limiter.quota_remaining(),
        7,
        "2 admitted, 7 held, 7 in the budget"
    );

    let limiter = striped(gcra(1, 32), 2, (8, 8), 10 * MS_NS);
    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    assert!(check_on(&limiter, 1, START_NS).is_allowed());
    assert_eq!(limiter.quota_remaining(), 16);
    assert!(check_on(&limiter, 0, later_ns).is_allowed());
    assert_eq!(limiter.quota_remaining(), 8, "stripe 0's 7 units lapsed");
    assert!(check_on(&limiter, 1, later_ns).is_allowed());
    assert_eq!(limiter.quota_remaining(), 0, "stripe 1's 7 units lapsed");
    assert_eq!((limiter.held_units(0), limiter.held_units(1)), (7, 7));
}

/// `give_back_unused` returns a stripe's units exactly when its lease is the latest taken from
/// the budget (live or expired), and nothing when another stripe's lease or a direct admission
/// came after: what it returns is then admitted once, never twice.
#[test]
fn give_back_unused_returns_only_what_no_later_lease_depends_on() {
    let limiter = striped(gcra(1, 32), 2, (8, 8), 10 * MS_NS);
    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    assert_eq!(limiter.quota_remaining(), 24);
    limiter.give_back_unused();
    assert_eq!(limiter.quota_remaining(), 31);
    assert_eq!(limiter.held_units(0), 0);
    // Twice is once.
    limiter.give_back_unused();
    assert_eq!(limiter.quota_remaining(), 31);

    assert!(check_on(&limiter, 0, START_NS).is_allowed());
    assert!(check_on(&limiter, 1, START_NS).is_allowed());
    assert_eq!(limiter.quota_remaining(), 15);
    limiter.give_back_unused();
    assert_eq!(
        limiter.quota_remaining(),
        22,
        "stripe 1's 7 back, stripe 0's lapsed"
    );
    assert_eq!((limiter.held_units(0), limiter.held_units(1)), (0, 0));
    // At this instant exactly the 22 pass, whichever stripes ask: 25 admitted of the burst of
    // 32, the 7 lapsed units never.
    let mut admitted = 0;
    for round in 0..64 {
        if check_on(&limiter, round % 2, START_NS).is_allowed() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 22);

    // Expired units of the latest lease go back too (one second later: a fresh burst).
    let later_ns = START_NS + 32 * SECOND_NS;
    assert!(check_on(&limiter, 0, later_ns).is_allowed());
    let expired_ns = later_ns + 20 * MS_NS;
    limiter.clock().set(at(expired_ns));
    assert_eq!(limiter.quota_remaining(), 24);
    limiter.give_back_unused();
    assert_eq!(limiter.quota_remaining(), 31);

    // A direct admission (a tiered request) after the lease: nothing goes back.
    assert!(check_on(&limiter, 0, expired_ns).is_allowed());
    let tiers = Limiter::with_clock(*limiter.quota(), ManualClock::new());
    let tier = tiers.tier(*limiter.quota()).unwrap();
    let tiered = limiter.check_with(Request::cost(2).at(at(expired_ns)).tier(tier));
    assert!(tiered.unwrap().is_allowed());
    assert_eq!(limiter.quota_remaining(), 21);
    limiter.give_back_unused();
    assert_eq!(limiter.quota_remaining(), 21);
    assert_eq!(limiter.held_units(0), 0);
}

/// A stripe that empties its leases within a quarter of their lifetime doubles them, from the
/// minimum (1) to the maximum (16): the units it holds after each refill are 0, 1, 3, 7, then
/// 15 for good (96 checks: leases of 1, 2, 4, 8 and six of 16). Spent within the lifetime but later than a quarter of it, a lease keeps its
/// size. A lease that lapses with units unspent halves the next: 15, 7, 3, 1, 0 held, down to
/// the minimum.
#[test]
fn lease_sizes_grow_for_a_fast_stripe_and_shrink_for_a_slow_one() {
    let lifetime_ns = 10 * MS_NS;
    let limiter = striped(gcra(1_000_000, 10_000), 2, (1, 16), lifetime_ns);
    let mut after_refills = Vec::new();
    for _ in 0..96 {
        let before = limiter.held_units(0);
        assert!(check_on(&limiter, 0, START_NS).is_allowed());
        if before == 0 {
            after_refills.push(limiter.held_units(0));
        }
    }
    assert_eq!(after_refills[..5], [0, 1, 3, 7, 15]);
    assert!(after_refills[5..].iter().all(|&held| held == 15));

    // Stripe 1 grows to a lease of 4 (held 3), then spends it 3 ms later: kept at 4.
    for _ in 0..4 {
        assert!(check_on(&limiter, 1, START_NS).is_allowed());
    }
    assert_eq!(limiter.held_units(1), 3);
    let slow_ns = START_NS + 3 * MS_NS;
    for _ in 0..4 {
        assert!(check_on(&limiter, 1, slow_ns).is_allowed());
    }
    assert_eq!(limiter.held_units(1), 3, "a lease of 4 again");

    // Stripe 0 now checks once per lifetime and a bit: each lease lapses with units unspent.
    let mut held = vec![limiter.held_units(0)];
    let mut now_ns = START_NS;
    for _ in 0..5 {
        now_ns += lifetime_ns + MS_NS;
        assert!(check_on(&limiter, 0, now_ns).is_allowed());
        held.push(limiter.held_units(0));
    }
    assert_eq!(held, [15, 7, 3, 1, 0, 0]);
}

/// A reading earlier than a stripe's lease (a batch's cached timestamp, one taken before a
/// preemption) may not spend that lease: it is judged on the budget, as a plain limiter judges
/// it. Four stripes empty a budget of 64 at the start; 100 ms later each leases 8 (7 held). The
/// start's reading, checked again on every stripe, gets nothing: at that reading the plain
/// quota is spent, and the stripes' units were leased later.
#[test]
fn a_reading_before_a_lease_cannot_spend_it() {
    let limiter = striped(gcra(1_000, 64), 4, (8, 8), 4 * GRAIN_NS);
    for _ in 0..4 {
        assert!(limiter
            .check_with(Request::cost(16).at(at(START_NS)))
            .unwrap()
            .is_allowed());
    }
    let later_ns = START_NS + 100 * MS_NS;
    for stripe in 0..4 {
        assert!(check_on(&limiter, stripe, later_ns).is_allowed());
        assert_eq!(limiter.held_units(stripe), 7);
    }
    for stripe in 0..4 {
        let stale = limiter.check_at_stripe(stripe, at(START_NS));
        assert!(stale.is_denied(), "stripe {stripe}");
        assert_eq!(limiter.held_units(stripe), 7, "a denial writes nothing");
    }
    // The same readings on a plain limiter with the same history: denied too.
    let plain = Limiter::with_clock(gcra(1_000, 64), ManualClock::starting_at(at(START_NS)));
    assert!(plain.check_with(Request::cost(64)).unwrap().is_allowed());
    assert!(plain
        .check_with(Request::cost(32).at(at(later_ns)))
        .unwrap()
        .is_allowed());
    assert!(plain.check_at(at(START_NS)).is_denied());
}

/// Units of the latest lease that lapsed are counted as given back by the read-only test, so
/// they do not block a check the refill's give-back will admit: one stripe leases 8 of a burst
/// of 16 twice (9 admitted, 7 held, nothing left in the budget); 20 ms later, after the lease
/// lapsed, a check is admitted with 6 remaining, as on a plain limiter that admitted 9.
#[test]
fn lapsed_units_of_the_latest_lease_do_not_block_a_check() {
    let limiter = striped(gcra(1, 16), 1, (8, 8), 10 * MS_NS);
    for _ in 0..9 {
        assert!(check_on(&limiter, 0, START_NS).is_allowed());
    }
    assert_eq!((limiter.held_units(0), limiter.quota_remaining()), (7, 0));
    let later_ns = START_NS + 20 * MS_NS;
    limiter.clock().set(at(later_ns));
    assert!(
        limiter.peek().is_allowed(),
        "the peek counts the lapsed units too"
    );
    let decision = check_on(&limiter, 0, later_ns);
    assert!(decision.is_allowed());
    assert_eq!(decision.remaining(), 6);
    assert_eq!(limiter.quota_remaining(), 6);
    assert_eq!(limiter.held_units(0), 0);
}

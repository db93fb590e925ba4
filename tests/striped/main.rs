//! [`StripedLimiter`] through its public API, one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `frozen` | at one instant, threads together admit at most the burst, strand at most what the stripes hold, and every leased unit is admitted, held or still in the budget |
//! | `bound` | in every interval, admissions exceed the quota's by at most `over_admission_bound()`: random schedules on one thread and on several, and schedules that over-admit as far as the contract lets them |
//! | `exact` | one stripe with leases of one unit decides exactly as a plain [`Limiter`](nanolimit::Limiter) |
//! | `leases` | expiry, `give_back_unused`, adaptive lease sizes |
//! | `requests` | configuration errors, costs above the burst and of zero, tiers, decision metadata |
//!
//! Every test reads a [`ManualClock`] or passes explicit readings: nothing sleeps. The bounds
//! are checked on quotas whose emission interval is a whole number of nanoseconds, where the
//! plain quota admits at most `burst + ⌊length / emission interval⌋` units in any interval.

#[path = "../common/mod.rs"]
mod common;

mod bound;
mod exact;
mod frozen;
mod leases;
mod requests;

use common::{at, SECOND_NS};
use nanolimit::striped::StripedLimiter;
use nanolimit::{Decision, Gcra, ManualClock, Request};
use std::collections::BTreeMap;
use std::time::Duration;

pub const MS_NS: u64 = 1_000_000;
/// The grain of a stripe's expiry (2^19 ns, about 0.52 ms): a lease taken at a reading on the
/// grain is spendable until exactly its lifetime later, if the lifetime is a whole number of
/// grains.
pub const GRAIN_NS: u64 = 1 << 19;
/// Where every test's clock starts: far from the origin, on the grain.
pub const START_NS: u64 = (1_000 * SECOND_NS).next_multiple_of(GRAIN_NS);

/// `per_second` units per second (a whole-nanosecond emission interval when it divides 10^9),
/// with a burst of `burst`.
pub fn gcra(per_second: u64, burst: u64) -> Gcra {
    Gcra::per_second(per_second)
        .unwrap()
        .with_burst(burst)
        .unwrap()
}

/// A striped limiter on a [`ManualClock`] reading [`START_NS`].
pub fn striped(
    quota: Gcra,
    stripes: usize,
    (min_units, max_units): (u64, u64),
    lifetime_ns: u64,
) -> StripedLimiter<ManualClock> {
    StripedLimiter::builder(quota)
        .stripes(stripes)
        .lease_units(min_units, max_units)
        .lease_lifetime(Duration::from_nanos(lifetime_ns))
        .clock(ManualClock::starting_at(at(START_NS)))
        .build()
        .unwrap()
}

/// Checks one unit on `stripe` at `now_ns`, with the limiter's clock moved there first (so that
/// `quota_remaining` reads the same instant).
pub fn check_on(
    limiter: &StripedLimiter<ManualClock>,
    stripe: usize,
    now_ns: u64,
) -> Decision<Gcra> {
    limiter.clock().set(at(now_ns));
    limiter.check_at_stripe(stripe, at(now_ns))
}

/// Checks `cost` on the calling thread's stripe at `now_ns`, the clock moved there first.
pub fn check_cost(limiter: &StripedLimiter<ManualClock>, cost: u64, now_ns: u64) -> Decision<Gcra> {
    limiter.clock().set(at(now_ns));
    limiter
        .check_with(Request::cost(cost).at(at(now_ns)))
        .unwrap()
}

/// The interval between two admission times where the units admitted most exceed what the
/// plain quota admits in an interval of that length.
#[derive(Debug, Clone, Copy)]
pub struct Worst {
    pub from_ns: u64,
    pub to_ns: u64,
    pub admitted: u64,
    /// `burst + ⌊(to − from) × count / period⌋`.
    pub quota_admits: u64,
}

impl Worst {
    /// By how much the admissions exceed the plain quota's (negative if they do not).
    pub fn excess(&self) -> i128 {
        self.admitted as i128 - self.quota_admits as i128
    }
}

/// Units admitted per reading (ns → units), from any number of admissions.
pub type Admissions = BTreeMap<u64, u64>;

/// Records an admission of `units` at `now_ns`.
pub fn record(admissions: &mut Admissions, now_ns: u64, units: u64) {
    *admissions.entry(now_ns).or_default() += units;
}

/// Over every interval `[a, b]` between two admission times: the one where the admissions most
/// exceed `burst + ⌊(b − a) × count / period⌋`. `None` when nothing was admitted.
pub fn worst_interval(quota: &Gcra, admissions: &Admissions) -> Option<Worst> {
    let times: Vec<(u64, u64)> = admissions.iter().map(|(&t, &u)| (t, u)).collect();
    let (count, period) = (quota.count() as u128, quota.period().as_nanos());
    let mut worst: Option<Worst> = None;
    for (first, &(from_ns, _)) in times.iter().enumerate() {
        let mut admitted = 0;
        for &(to_ns, units) in &times[first..] {
            admitted += units;
            let earned = (to_ns - from_ns) as u128 * count / period;
            let candidate = Worst {
                from_ns,
                to_ns,
                admitted,
                quota_admits: quota.limit() + u64::try_from(earned).unwrap(),
            };
            if worst.is_none_or(|worst| candidate.excess() > worst.excess()) {
                worst = Some(candidate);
            }
        }
    }
    worst
}

/// Asserts that no interval between two admission times admits more than the plain quota plus
/// the limiter's `over_admission_bound()`; returns the worst interval.
pub fn assert_within_the_bound(
    limiter: &StripedLimiter<ManualClock>,
    admissions: &Admissions,
    context: &str,
) -> Option<Worst> {
    let worst = worst_interval(limiter.quota(), admissions)?;
    let bound = limiter.over_admission_bound();
    assert!(
        worst.excess() <= bound as i128,
        "{context}: {worst:?} exceeds the quota by {} > over_admission_bound {bound}",
        worst.excess()
    );
    Some(worst)
}

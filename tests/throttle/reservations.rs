//! Reservations and cancellations on GCRA limiters, direct and keyed:
//!
//! - a sequential model of the documented rules, in plain nanosecond arithmetic, against
//!   random sequences of reservations (with and without a maximum wait), checks, cancellations
//!   (in any order, with the current reading or an earlier one) and time steps, from the
//!   origin to the horizon: identical grants and refusals, start times, check decisions and
//!   amounts given back;
//! - a safety property that does not depend on the cancellation rule: the requests still
//!   admitted (reservations not cancelled, at their start times, and allowed checks) replayed
//!   through a fresh limiter are all admitted, so cancelling, in any order, never left a
//!   limiter looser than the quota;
//! - regressions: the cancellation order that made the first rule (Go's partial give-back)
//!   over-admit, a cancellation with a stale reading after admissions since, reservations at
//!   and near the time horizon;
//! - edge cases of the pure steps (no slot marker is ever written, no start past the horizon,
//!   costs above the burst, rounding of the maximum wait, the wait a refusal reports, a
//!   maximum wait of zero, the cancellation step on any input);
//! - keyed limiters: each key books and cancels on its own state, a cancellation for a key
//!   that lost its slot touches nobody else's state, and a key's first booking (the one that
//!   inserted it) gives nothing back.
//!
//! Every schedule uses explicit timestamps (`Request::at`, `cancel_at`) on a `ManualClock`.

use crate::common::{
    any_cost, any_reading, any_state, at, proptest_config, HORIZON_NS, SECOND_NS, YEAR_NS,
};
use nanolimit::keyed::Exact;
use nanolimit::quota::Step;
use nanolimit::{
    Gcra, KeyedLimiter, Limiter, ManualClock, Quota, QuotaError, Request, RequestError,
    Reservation, Timestamp, WhenFull,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use std::cell::Cell;
use std::time::Duration;

const MILLISECOND_NS: u64 = 1_000_000;
const DAY_NS: u64 = 86_400 * SECOND_NS;
/// A whole-nanosecond emission interval counts 16 ticks per ns in the state word.
const TICKS_PER_NS: u128 = 16;

// ---------------------------------------------------------------------------------------------
// The sequential model
// ---------------------------------------------------------------------------------------------

/// GCRA with reservations, written from the documented rules in nanoseconds (`u128`, no
/// rounding: the quotas under test have whole-nanosecond emission intervals):
///
/// - reserve `n` at `now`: `start = max(now, max(tat, now) + n·T − tau)`, granted iff
///   `start − now <= max_wait` and `start <= HORIZON`, and then `tat := max(tat, now) + n·T`
///   (a refusal reports its start, clamped to the horizon);
/// - check `n` at `now`: allowed iff `max(tat, now) + n·T <= now + tau`, then the same update;
/// - cancel, at a reading before its start, a reservation that left `booked` by adding `n·T`:
///   if `tat == booked` (it is still the latest booking), `tat := booked − n·T`, giving back
///   all of it; else nothing ([`Gcra::cancel_step`]);
/// - a cost of zero is granted (or allowed) at once and changes nothing;
/// - on a keyed limiter, the booking that inserted the key (its first write) gives nothing
///   back.
#[derive(Debug, Clone)]
struct Model {
    interval_ns: u128,
    tolerance_ns: u128,
    tat_ns: u128,
    /// Whether the limiter holds the state already: a keyed key's first write inserts it.
    tracked: bool,
}

/// What the model did with a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Booked {
    granted: bool,
    /// The start, or for a refusal the start it would have had (at most the horizon).
    start_ns: u128,
    /// `(booked tat, n·T)`: what a cancellation needs; `None` if nothing was booked, or if the
    /// booking inserted its key (it gives nothing back).
    booking: Option<(u128, u128)>,
}

impl Model {
    /// The model of a direct limiter.
    fn new(quota: &Gcra) -> Self {
        let period_ns = quota.period().as_nanos();
        let count = u128::from(quota.count());
        assert_eq!(period_ns % count, 0, "the model needs a whole-ns interval");
        let interval_ns = period_ns / count;
        Model {
            interval_ns,
            tolerance_ns: u128::from(quota.limit()) * interval_ns,
            tat_ns: 0,
            tracked: true,
        }
    }

    /// The model of a key a keyed table does not hold yet (and never reclaims or evicts).
    fn new_key(quota: &Gcra) -> Self {
        Model {
            tracked: false,
            ..Model::new(quota)
        }
    }

    /// `max_wait_ns`: `None` for no bound (every wait in these schedules is far below the
    /// longest a state can book).
    fn reserve(&mut self, now: u128, cost: u64, max_wait_ns: Option<u128>) -> Booked {
        if cost == 0 {
            return Booked {
                granted: true,
                start_ns: now,
                booking: None,
            };
        }
        let increment = u128::from(cost) * self.interval_ns;
        let base = self.tat_ns.max(now);
        let start_ns = (base + increment)
            .saturating_sub(self.tolerance_ns)
            .max(now);
        let too_long = max_wait_ns.is_some_and(|max_wait| start_ns - now > max_wait);
        let horizon = u128::from(HORIZON_NS);
        if too_long || start_ns > horizon {
            return Booked {
                granted: false,
                start_ns: start_ns.min(horizon),
                booking: None,
            };
        }
        self.tat_ns = base + increment;
        let inserted = !self.tracked;
        self.tracked = true;
        Booked {
            granted: true,
            start_ns,
            booking: (!inserted).then_some((self.tat_ns, increment)),
        }
    }

    fn check(&mut self, now: u128, cost: u64) -> bool {
        let next = self.tat_ns.max(now) + u128::from(cost) * self.interval_ns;
        if cost == 0 {
            return true;
        }
        if next > now + self.tolerance_ns {
            return false;
        }
        self.tat_ns = next;
        self.tracked = true;
        true
    }

    /// What the cancellation of a booking gave back, in ns (0 if nothing).
    fn cancel(&mut self, booked: u128, increment: u128) -> u128 {
        if self.tat_ns != booked || increment == 0 || booked < increment {
            return 0;
        }
        self.tat_ns = booked - increment;
        increment
    }
}

// ---------------------------------------------------------------------------------------------
// Random sequences of operations
// ---------------------------------------------------------------------------------------------

/// One operation in raw random form, interpreted against the quota and the sequence so far.
#[derive(Debug, Clone, Copy)]
enum RawOp {
    Reserve {
        key: u8,
        cost: u64,
        max_wait: RawMaxWait,
    },
    Check {
        key: u8,
        cost: u64,
    },
    /// Cancel one of the reservations made so far (not yet cancelled), mostly one that has
    /// not started, at the current time or (`earlier_reading`) with the reading it was made
    /// at: a caller's reading from before its start, whatever the time is now.
    Cancel {
        pick: u64,
        earlier_reading: bool,
    },
    Advance {
        kind: u8,
        random: u64,
    },
}

#[derive(Debug, Clone, Copy)]
enum RawMaxWait {
    Unbounded,
    Zero,
    /// Up to twice the tolerance.
    Random(u64),
    /// The delay the last refused reservation reported, plus this (-1, 0 or 1 ns).
    AroundLastRefusal(i8),
    /// `Duration::MAX`: the longest a state can book.
    Longest,
}

fn raw_max_wait() -> impl Strategy<Value = RawMaxWait> {
    prop_oneof![
        3 => Just(RawMaxWait::Unbounded),
        1 => Just(RawMaxWait::Zero),
        3 => any::<u64>().prop_map(RawMaxWait::Random),
        2 => (-1..=1i8).prop_map(RawMaxWait::AroundLastRefusal),
        1 => Just(RawMaxWait::Longest),
    ]
}

fn raw_op() -> impl Strategy<Value = RawOp> {
    prop_oneof![
        5 => (any::<u8>(), any::<u64>(), raw_max_wait())
            .prop_map(|(key, cost, max_wait)| RawOp::Reserve { key, cost, max_wait }),
        2 => (any::<u8>(), any::<u64>()).prop_map(|(key, cost)| RawOp::Check { key, cost }),
        3 => (any::<u64>(), prop::bool::weighted(0.4))
            .prop_map(|(pick, earlier_reading)| RawOp::Cancel { pick, earlier_reading }),
        3 => (0..6u8, any::<u64>()).prop_map(|(kind, random)| RawOp::Advance { kind, random }),
    ]
}

/// A GCRA quota with a whole-nanosecond emission interval (`period % count == 0`) and a burst
/// of 1 to 20.
fn whole_ns_quota() -> impl Strategy<Value = Gcra> {
    let interval_ns = prop_oneof![
        1 => 1..=16u64,
        2 => 1..=1_000_000_000u64,
        1 => Just(MILLISECOND_NS),
        1 => Just(SECOND_NS),
    ];
    (interval_ns, 1..=1_000u64, 1..=20u64).prop_map(|(interval_ns, count, burst)| {
        Gcra::new(count, Duration::from_nanos(count * interval_ns))
            .unwrap()
            .with_burst(burst)
            .unwrap()
    })
}

/// The first reading of a sequence, in raw form.
#[derive(Debug, Clone, Copy)]
enum RawFirst {
    Origin,
    /// Within the first year.
    FirstYear(u64),
    /// Up to 30 tolerances before the horizon, or at it.
    NearTheHorizon(u64),
}

impl RawFirst {
    fn reading_ns(self, quota: &Gcra) -> u64 {
        match self {
            RawFirst::Origin => 0,
            RawFirst::FirstYear(random) => random % (YEAR_NS + 1),
            RawFirst::NearTheHorizon(random) => {
                HORIZON_NS - random % (30 * tolerance_ns(quota) + 1)
            }
        }
    }
}

/// A random sequence: a quota, the first reading and the operations.
fn sequence() -> impl Strategy<Value = (Gcra, RawFirst, Vec<RawOp>)> {
    let first = prop_oneof![
        2 => Just(RawFirst::Origin),
        5 => any::<u64>().prop_map(RawFirst::FirstYear),
        1 => any::<u64>().prop_map(RawFirst::NearTheHorizon),
    ];
    (
        whole_ns_quota(),
        first,
        prop::collection::vec(raw_op(), 1..80),
    )
}

/// `tau = burst × T` in nanoseconds (for whole-ns quotas).
fn tolerance_ns(quota: &Gcra) -> u64 {
    quota.limit() * interval_ns(quota)
}

/// `T` in nanoseconds (for whole-ns quotas).
fn interval_ns(quota: &Gcra) -> u64 {
    (quota.period().as_nanos() / u128::from(quota.count())) as u64
}

/// `cost` in raw form: mostly 1 or the whole burst, else anything up to the burst, rarely 0.
fn cost_from(raw: u64, burst: u64) -> u64 {
    match raw % 20 {
        0 => 0,
        1..=6 => 1,
        7..=10 => burst,
        _ => 1 + (raw / 20) % burst,
    }
}

/// The limiter a sequence runs on: one state (direct), or one per key (keyed).
trait Target<'l> {
    fn reserve(&self, key: usize, request: Request<Gcra>) -> Reservation<'l>;
    fn check(&self, key: usize, request: Request<Gcra>) -> bool;
    /// The key's state word, read without changing anything.
    fn state_word(&self, key: usize) -> u64;
}

impl<'l> Target<'l> for &'l Limiter<Gcra, ManualClock> {
    fn reserve(&self, _key: usize, request: Request<Gcra>) -> Reservation<'l> {
        Limiter::reserve_with(*self, request).unwrap()
    }
    fn check(&self, _key: usize, request: Request<Gcra>) -> bool {
        self.check_with(request).unwrap().is_allowed()
    }
    fn state_word(&self, _key: usize) -> u64 {
        self.peek().state_word()
    }
}

type ExactTable = KeyedLimiter<u64, Gcra, ManualClock, Exact>;

/// Keys `0..keys` of a table large enough never to reclaim or evict.
struct Keyed<'l>(&'l ExactTable);

impl<'l> Target<'l> for Keyed<'l> {
    fn reserve(&self, key: usize, request: Request<Gcra>) -> Reservation<'l> {
        KeyedLimiter::reserve_with(self.0, &(key as u64), request).unwrap()
    }
    fn check(&self, key: usize, request: Request<Gcra>) -> bool {
        self.0
            .check_with(&(key as u64), request)
            .unwrap()
            .is_allowed()
    }
    fn state_word(&self, key: usize) -> u64 {
        self.0.peek(&(key as u64)).state_word()
    }
}

/// A request the limiter admitted and that was not cancelled: it runs at `start_ns`.
#[derive(Debug, Clone, Copy)]
struct Admission {
    start_ns: u64,
    cost: u64,
    /// Its place in the sequence, to keep ties in order.
    order: usize,
}

/// A reservation made during a sequence.
struct Made<'l> {
    key: usize,
    granted: bool,
    cost: u64,
    made_at_ns: u64,
    start_ns: u64,
    /// `None` once cancelled.
    reservation: Option<Reservation<'l>>,
    /// Whether its cancellation gave its whole cost back (it no longer holds any time).
    undone: bool,
    /// The model's booking, when a model runs alongside.
    booking: Option<(u128, u128)>,
}

impl Made<'_> {
    /// Whether it still holds time on its key's state: granted, for a cost, and not undone
    /// (a cancellation that gave nothing back leaves the time booked).
    fn holds_time(&self) -> bool {
        self.granted && self.cost > 0 && !self.undone
    }
}

/// What a batch of sequences exercised: a property whose schedules never reach the
/// interesting cases could not fail, so each test asserts its coverage.
#[derive(Debug, Default)]
struct Coverage {
    granted_later: Cell<u64>,
    refused: Cell<u64>,
    /// Refused because the start would lie past the horizon, not for its maximum wait.
    refused_past_the_horizon: Cell<u64>,
    denied_checks: Cell<u64>,
    /// Gave everything back: it was the latest booking, nothing cancelled behind it.
    cancels_undoing_the_latest: Cell<u64>,
    /// Gave everything back once the bookings made behind it were undone (latest first).
    cancels_undoing_a_chain: Cell<u64>,
    /// Gave everything back with a reading from before its start, the clock being past it.
    cancels_undoing_with_an_earlier_reading: Cell<u64>,
    /// Gave nothing back, before its start: a later reservation is still booked behind it.
    cancels_out_of_order: Cell<u64>,
    /// Gave nothing back, before its start: only checks (or undone bookings) came since.
    cancels_behind_a_check: Cell<u64>,
    /// Gave back some of its cost, not all (never, by the rule; the safety property counts it
    /// without judging).
    cancels_giving_back_part: Cell<u64>,
    cancels_after_the_start: Cell<u64>,
    cancels_of_refusals: Cell<u64>,
    cancels_of_cost_zero: Cell<u64>,
}

fn bump(counter: &Cell<u64>) {
    counter.set(counter.get() + 1);
}

/// Runs `ops` on `target` from `first_ns` (keys `0..keys`), cancelling in any order. With
/// `models` (one per key), asserts that every reservation, check and cancellation agrees with
/// the model. Returns the admissions of each key.
#[allow(clippy::too_many_arguments)]
fn run_sequence<'l>(
    target: &impl Target<'l>,
    quota: &Gcra,
    keys: usize,
    first_ns: u64,
    ops: &[RawOp],
    mut models: Option<&mut [Model]>,
    coverage: &Coverage,
) -> Result<Vec<Vec<Admission>>, TestCaseError> {
    let burst = quota.limit();
    let interval_ns = interval_ns(quota);
    let tolerance_ns = tolerance_ns(quota);
    let mut now = first_ns;
    let mut made: Vec<Made<'l>> = Vec::new();
    let mut checks: Vec<(usize, Admission)> = Vec::new();
    let mut last_refusal_ns: Option<u64> = None;
    for (order, &op) in ops.iter().enumerate() {
        match op {
            RawOp::Reserve {
                key,
                cost,
                max_wait,
            } => {
                let key = usize::from(key) % keys;
                let cost = cost_from(cost, burst);
                let max_wait_ns = match max_wait {
                    RawMaxWait::Unbounded | RawMaxWait::Longest => None,
                    RawMaxWait::Zero => Some(0),
                    RawMaxWait::Random(random) => Some(random % (2 * tolerance_ns + 1)),
                    RawMaxWait::AroundLastRefusal(delta) => {
                        let refused_ns = last_refusal_ns.unwrap_or(interval_ns);
                        Some(refused_ns.saturating_add_signed(i64::from(delta)))
                    }
                };
                let mut request = Request::cost(cost).at(at(now));
                match (max_wait, max_wait_ns) {
                    (RawMaxWait::Longest, _) => request = request.max_wait(Duration::MAX),
                    (_, Some(ns)) => request = request.max_wait(Duration::from_nanos(ns)),
                    (_, None) => {}
                }
                let reservation = target.reserve(key, request);
                let granted = reservation.is_allowed();
                let start_ns = reservation.start().as_ns();
                prop_assert_eq!(reservation.made_at(), at(now));
                prop_assert_eq!(reservation.cost(), cost);
                prop_assert!(start_ns >= now);
                prop_assert_eq!(reservation.delay(), Duration::from_nanos(start_ns - now));
                if granted {
                    if let Some(max_wait_ns) = max_wait_ns {
                        prop_assert!(start_ns - now <= max_wait_ns, "waits longer than asked");
                    }
                    if start_ns > now {
                        bump(&coverage.granted_later);
                    }
                } else {
                    bump(&coverage.refused);
                    // Within its maximum wait: refused for the horizon alone.
                    if start_ns == HORIZON_NS
                        && quota.wait_ns(target.state_word(key), quota.instant(at(now)), cost)
                            <= max_wait_ns.unwrap_or(u64::MAX)
                    {
                        bump(&coverage.refused_past_the_horizon);
                    }
                    last_refusal_ns = Some(start_ns - now);
                }
                let mut booking = None;
                if let Some(models) = models.as_deref_mut() {
                    let expected =
                        models[key].reserve(u128::from(now), cost, max_wait_ns.map(u128::from));
                    prop_assert_eq!(
                        (granted, u128::from(start_ns)),
                        (expected.granted, expected.start_ns),
                        "op {}: reserve {} at {} (max wait {:?}) on key {}",
                        order,
                        cost,
                        now,
                        max_wait_ns,
                        key
                    );
                    booking = expected.booking;
                }
                made.push(Made {
                    key,
                    granted,
                    cost,
                    made_at_ns: now,
                    start_ns,
                    reservation: Some(reservation),
                    undone: false,
                    booking,
                });
            }
            RawOp::Check { key, cost } => {
                let key = usize::from(key) % keys;
                let cost = cost_from(cost, burst);
                let allowed = target.check(key, Request::cost(cost).at(at(now)));
                if let Some(models) = models.as_deref_mut() {
                    let expected = models[key].check(u128::from(now), cost);
                    prop_assert_eq!(
                        allowed,
                        expected,
                        "op {}: check {} at {} on key {}",
                        order,
                        cost,
                        now,
                        key
                    );
                }
                if allowed {
                    let admission = Admission {
                        start_ns: now,
                        cost,
                        order,
                    };
                    checks.push((key, admission));
                } else {
                    bump(&coverage.denied_checks);
                }
            }
            RawOp::Cancel {
                pick,
                earlier_reading,
            } => {
                // The reading the cancellation is made with.
                let reading = |entry: &Made| {
                    if earlier_reading {
                        entry.made_at_ns
                    } else {
                        now
                    }
                };
                // Mostly one that has not started yet by that reading.
                let only_pending = pick % 4 != 0;
                let open: Vec<usize> = (0..made.len())
                    .filter(|&index| {
                        let entry = &made[index];
                        entry.reservation.is_some()
                            && (!only_pending || entry.start_ns > reading(entry))
                    })
                    .collect();
                if open.is_empty() {
                    continue;
                }
                let index = open[(pick / 4 % open.len() as u64) as usize];
                // Bookings made behind it on its key: still holding time, or undone.
                let behind = || {
                    let key = made[index].key;
                    made[index + 1..]
                        .iter()
                        .filter(move |later| later.key == key)
                };
                let booked_behind = behind().any(Made::holds_time);
                let undone_behind = behind().any(|later| later.undone);
                let reading = reading(&made[index]);
                let entry = &mut made[index];
                let before = target.state_word(entry.key);
                entry.reservation.take().unwrap().cancel_at(at(reading));
                let after = target.state_word(entry.key);
                prop_assert!(after <= before, "a cancellation raised the state");
                if !entry.granted {
                    bump(&coverage.cancels_of_refusals);
                    prop_assert_eq!(after, before, "nothing was booked, nothing to give back");
                    continue;
                }
                if entry.cost == 0 {
                    bump(&coverage.cancels_of_cost_zero);
                    prop_assert_eq!(after, before, "nothing was booked, nothing to give back");
                    continue;
                }
                if reading >= entry.start_ns {
                    bump(&coverage.cancels_after_the_start);
                    prop_assert_eq!(after, before, "a started reservation gives nothing back");
                    continue;
                }
                let increment = u128::from(entry.cost) * u128::from(interval_ns);
                let returned_ticks = u128::from(before - after);
                if let Some(models) = models.as_deref_mut() {
                    let returned = match entry.booking {
                        Some((booked, increment)) => models[entry.key].cancel(booked, increment),
                        None => 0,
                    };
                    prop_assert_eq!(
                        returned_ticks,
                        TICKS_PER_NS * returned,
                        "op {}: cancel at {} of a reservation starting at {}",
                        order,
                        reading,
                        entry.start_ns
                    );
                }
                if returned_ticks == TICKS_PER_NS * increment {
                    entry.undone = true;
                    if undone_behind {
                        bump(&coverage.cancels_undoing_a_chain);
                    } else {
                        bump(&coverage.cancels_undoing_the_latest);
                    }
                    if entry.start_ns <= now {
                        bump(&coverage.cancels_undoing_with_an_earlier_reading);
                    }
                } else if returned_ticks == 0 {
                    if booked_behind {
                        bump(&coverage.cancels_out_of_order);
                    } else {
                        bump(&coverage.cancels_behind_a_check);
                    }
                } else {
                    bump(&coverage.cancels_giving_back_part);
                }
            }
            RawOp::Advance { kind, random } => {
                now += match kind {
                    0 => 0,
                    1 => random % (interval_ns + 1),
                    2 => random % (2 * tolerance_ns + 1),
                    3 => interval_ns,
                    4 => {
                        // To a pending reservation's start, or a nanosecond either side.
                        let pending: Vec<u64> = made
                            .iter()
                            .filter(|entry| entry.granted && entry.start_ns > now)
                            .map(|entry| entry.start_ns)
                            .collect();
                        match pending.len() as u64 {
                            0 => 0,
                            len => pending[(random % len) as usize] - 1 + (random >> 32) % 3 - now,
                        }
                    }
                    _ => random % (10 * tolerance_ns + 1),
                };
                now = now.min(HORIZON_NS);
            }
        }
    }
    let mut admitted = vec![Vec::new(); keys];
    for (order, entry) in made.iter().enumerate() {
        if entry.granted && entry.cost > 0 && entry.reservation.is_some() {
            admitted[entry.key].push(Admission {
                start_ns: entry.start_ns,
                cost: entry.cost,
                order,
            });
        }
    }
    for (key, admission) in checks {
        admitted[key].push(admission);
    }
    Ok(admitted)
}

/// Replays `admitted` in order of start (ties in the order made) through a fresh limiter on
/// `quota`, each request checked at its start: every one must pass.
fn assert_the_replay_is_admitted(
    quota: &Gcra,
    mut admitted: Vec<Admission>,
) -> Result<(), TestCaseError> {
    admitted.sort_by_key(|admission| (admission.start_ns, admission.order));
    let replay = Limiter::with_clock(*quota, ManualClock::new());
    for admission in &admitted {
        let request = Request::cost(admission.cost).at(at(admission.start_ns));
        prop_assert!(
            replay.check_with(request).unwrap().is_allowed(),
            "{:?}: {:?} is not admitted on replay of {:?}",
            quota,
            admission,
            admitted
        );
    }
    Ok(())
}

/// Runs `test` on `cases` random sequences, then checks the coverage with `covered`.
fn run_property(
    cases: u32,
    test: impl Fn(Gcra, u64, &[RawOp], &Coverage) -> Result<(), TestCaseError>,
    covered: impl FnOnce(&Coverage),
) {
    let coverage = Coverage::default();
    let mut runner = TestRunner::new(proptest_config(cases));
    let result = runner.run(&sequence(), |(quota, first, ops)| {
        test(quota, first.reading_ns(&quota), &ops, &coverage)
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    covered(&coverage);
}

/// The coverage every direct sequence property needs: reservations granted later, refused
/// (also for the horizon alone), checks denied, and cancellations of each kind.
fn assert_every_case_was_exercised(coverage: &Coverage) {
    let counts = [
        coverage.granted_later.get(),
        coverage.refused.get(),
        coverage.refused_past_the_horizon.get(),
        coverage.denied_checks.get(),
        coverage.cancels_undoing_the_latest.get(),
        coverage.cancels_undoing_a_chain.get(),
        coverage.cancels_undoing_with_an_earlier_reading.get(),
        coverage.cancels_out_of_order.get(),
        coverage.cancels_behind_a_check.get(),
        coverage.cancels_after_the_start.get(),
        coverage.cancels_of_refusals.get(),
        coverage.cancels_of_cost_zero.get(),
    ];
    assert!(counts.iter().all(|&count| count >= 50), "{coverage:?}");
}

#[test]
fn reservations_checks_and_cancellations_follow_the_model() {
    run_property(
        6_000,
        |quota, first_ns, ops, coverage| {
            let limiter = Limiter::with_clock(quota, ManualClock::new());
            let mut models = [Model::new(&quota)];
            let target = &limiter;
            let models = Some(&mut models[..]);
            run_sequence(&target, &quota, 1, first_ns, ops, models, coverage)?;
            Ok(())
        },
        |coverage| {
            assert_every_case_was_exercised(coverage);
            assert_eq!(coverage.cancels_giving_back_part.get(), 0);
        },
    );
}

#[test]
fn cancellations_in_any_order_never_leave_the_limiter_looser_than_the_quota() {
    // No model: whatever the cancellation rule, what a direct limiter still admits after
    // cancellations in any order (with current or earlier readings) must conform to the
    // quota.
    run_property(
        6_000,
        |quota, first_ns, ops, coverage| {
            let limiter = Limiter::with_clock(quota, ManualClock::new());
            let target = &limiter;
            let admitted = run_sequence(&target, &quota, 1, first_ns, ops, None, coverage)?;
            for admitted in admitted {
                assert_the_replay_is_admitted(&quota, admitted)?;
            }
            Ok(())
        },
        assert_every_case_was_exercised,
    );
}

/// A 1-per-second, burst-4 limiter on a manual clock at 0 s.
fn one_per_second_burst_4() -> Limiter<Gcra, ManualClock> {
    let quota = Gcra::per_second(1).unwrap().with_burst(4).unwrap();
    Limiter::with_clock(quota, ManualClock::new())
}

/// Replays `(start in s, cost)` through a fresh limiter on `quota`, in order of start: each
/// must be admitted.
fn assert_conforms(quota: Gcra, mut admitted: Vec<(u64, u64)>) {
    admitted.sort_unstable();
    let replay = Limiter::with_clock(quota, ManualClock::new());
    for &(start_s, cost) in &admitted {
        let request = Request::cost(cost).at(at(start_s * SECOND_NS));
        assert!(
            replay.check_with(request).unwrap().is_allowed(),
            "{cost} at {start_s} s, replaying {admitted:?}"
        );
    }
}

#[test]
fn cancelling_the_later_booking_first_stays_within_the_quota() {
    // The order that made the first rule (Go's partial give-back, measured from the state
    // word) over-admit. One per second, bursts of 4, every call at 0 s: book 4 (starts now),
    // A: 4 (at 4 s), B: 4 (at 8 s), X: 1 (at 9 s). Under that rule cancelling B gave back
    // 3 s and then A 2 s, and the next bookings of 4 and 1 started at 8 s and 9 s: with X, six
    // units in [8 s, 9 s] where the quota allows 5. Now X is booked behind both: neither gives
    // anything back, and the next bookings queue behind X.
    let limiter = one_per_second_burst_4();
    let book = |cost: u64| limiter.reserve_with(Request::cost(cost)).unwrap();
    let first = book(4);
    let a = book(4);
    let b = book(4);
    let x = book(1);
    let delays = [&first, &a, &b, &x].map(|reservation| reservation.delay().as_secs());
    assert_eq!(delays, [0, 4, 8, 9]);
    let word = limiter.peek().state_word();
    b.cancel();
    a.cancel();
    assert_eq!(limiter.peek().state_word(), word);
    let mut admitted = vec![(0, 4), (4, 4), (8, 4), (9, 1)];
    let mut next = Vec::new();
    for cost in [4, 1] {
        let reservation = book(cost);
        next.push(reservation.delay().as_secs());
        admitted.push((reservation.delay().as_secs(), cost));
    }
    assert_eq!(next, [13, 14]);
    assert_conforms(*limiter.quota(), admitted);
}

#[test]
fn cancelling_latest_first_undoes_the_whole_chain() {
    // The same bookings, cancelled X, B, A: each is the latest when cancelled, and gives all
    // of its cost back; the limiter is as it was after the first booking.
    let limiter = one_per_second_burst_4();
    let book = |cost: u64| limiter.reserve_with(Request::cost(cost)).unwrap();
    let _first = book(4);
    let word = limiter.peek().state_word();
    let [a, b, x] = [book(4), book(4), book(1)];
    x.cancel();
    b.cancel();
    a.cancel();
    assert_eq!(limiter.peek().state_word(), word);
    let delays = [book(4), book(1)].map(|reservation| reservation.delay().as_secs());
    assert_eq!(delays, [4, 5]);
    assert_conforms(*limiter.quota(), vec![(0, 4), (4, 4), (5, 1)]);
}

#[test]
fn a_cancellation_with_a_stale_reading_after_admissions_since_gives_nothing_back() {
    // One per ms, bursts of 10. Booked at 0 ms: 10 now, and 10 more starting at 10 ms (the
    // state: 20 ms). At 21 ms a check of 5 passes (the state: 26 ms). The caller then cancels
    // the second booking with a reading it took at 5 ms, before its start: the check is
    // booked behind it, so nothing is given back (the first rule gave back 4 ms, and 9 more
    // units passed at 21 ms: 14 in the burst of 10). At 21 ms exactly 5 more pass.
    let quota = Gcra::per_second(1_000).unwrap().with_burst(10).unwrap();
    let limiter = Limiter::with_clock(quota, ManualClock::new());
    let request = |cost: u64, at_ms: u64| Request::cost(cost).at(at(at_ms * MILLISECOND_NS));
    let _first = limiter.reserve_with(request(10, 0)).unwrap();
    let later = limiter.reserve_with(request(10, 0)).unwrap();
    assert_eq!(later.start(), at(10 * MILLISECOND_NS));
    assert!(limiter.check_with(request(5, 21)).unwrap().is_allowed());
    let word = limiter.peek().state_word();
    later.cancel_at(at(5 * MILLISECOND_NS));
    assert_eq!(limiter.peek().state_word(), word);
    assert!(limiter.check_with(request(9, 21)).unwrap().is_denied());
    assert!(limiter.check_with(request(5, 21)).unwrap().is_allowed());
    assert!(limiter.check_with(request(1, 21)).unwrap().is_denied());
}

#[test]
fn a_stale_reading_undoes_the_latest_booking_exactly() {
    // The same limiter, nothing admitted since the second booking: cancelled with the 5 ms
    // reading at 21 ms (after its start on the clock), it is undone, and the limiter decides
    // as if it had never been booked: 10 pass at 21 ms, and no more.
    let quota = Gcra::per_second(1_000).unwrap().with_burst(10).unwrap();
    let limiter = Limiter::with_clock(quota, ManualClock::starting_at(at(21 * MILLISECOND_NS)));
    let request = |cost: u64, at_ms: u64| Request::cost(cost).at(at(at_ms * MILLISECOND_NS));
    let _first = limiter.reserve_with(request(10, 0)).unwrap();
    let word = limiter.peek().state_word();
    let later = limiter.reserve_with(request(10, 0)).unwrap();
    later.cancel_at(at(5 * MILLISECOND_NS));
    assert_eq!(limiter.peek().state_word(), word);
    assert!(limiter.check_with(request(10, 21)).unwrap().is_allowed());
    assert!(limiter.check_with(request(1, 21)).unwrap().is_denied());
}

#[test]
fn keys_book_and_cancel_independently() {
    // Three keys in a table with room for all: each follows its own model, whatever the
    // others do (its first booking, which inserted it, gives nothing back).
    const KEYS: usize = 3;
    run_property(
        3_000,
        |quota, first_ns, ops, coverage| {
            let table = KeyedLimiter::builder(quota)
                .capacity(64)
                .shards(1)
                .clock(ManualClock::new())
                .exact_keys()
                .build()
                .unwrap();
            let mut models = vec![Model::new_key(&quota); KEYS];
            let target = Keyed(&table);
            let models = Some(&mut models[..]);
            run_sequence(&target, &quota, KEYS, first_ns, ops, models, coverage)?;
            prop_assert_eq!(table.stats().reclaims + table.stats().evictions, 0);
            Ok(())
        },
        |coverage| {
            assert_every_case_was_exercised(coverage);
            assert_eq!(coverage.cancels_giving_back_part.get(), 0);
        },
    );
}

// ---------------------------------------------------------------------------------------------
// The pure steps at their edges
// ---------------------------------------------------------------------------------------------

/// The widest GCRA quota: one a day, with the largest burst the state allows.
fn widest() -> Gcra {
    let per_day = Gcra::per_day(1).unwrap();
    let Err(QuotaError::LimitTooLarge { max, .. }) = per_day.with_burst(u64::MAX) else {
        panic!("a burst of u64::MAX is too large");
    };
    per_day.with_burst(max).unwrap()
}

/// Quotas of every shape: whole-ns intervals and not, fast and slow, bursts from 1 to the
/// widest.
fn assorted_quotas() -> Vec<Gcra> {
    vec![
        Gcra::per_second(1).unwrap(),
        Gcra::per_second(10).unwrap().with_burst(1).unwrap(),
        Gcra::per_second(3).unwrap(),
        Gcra::per_minute(7).unwrap().with_burst(3).unwrap(),
        Gcra::per_day(5).unwrap().with_burst(2).unwrap(),
        Gcra::new(999_983, Duration::from_nanos(1_000_000_007))
            .unwrap()
            .with_burst(1_000)
            .unwrap(),
        Gcra::per_second(12_500_000_000)
            .unwrap()
            .with_burst(1_250_000)
            .unwrap(),
        Gcra::new(16, Duration::from_nanos(1))
            .unwrap()
            .with_burst(100)
            .unwrap(),
        Gcra::new(1, Timestamp::HORIZON.since_origin()).unwrap(),
        widest(),
    ]
}

/// Any maximum wait: short, any number of nanoseconds, or the longest.
fn any_max_wait() -> impl Strategy<Value = Duration> {
    prop_oneof![
        1 => Just(Duration::ZERO),
        2 => (0..=10 * SECOND_NS).prop_map(Duration::from_nanos),
        2 => any::<u64>().prop_map(Duration::from_nanos),
        1 => Just(Duration::MAX),
    ]
}

proptest! {
    #![proptest_config(proptest_config(20_000))]

    /// On any state, reading, cost and maximum wait: a booking never writes a slot marker
    /// (`u64::MAX`, `u64::MAX − 1`) and never moves the state back; a cost above the burst is
    /// denied; a granted booking starts no later than its maximum wait, nor past the horizon;
    /// every method runs without overflow (the test profile keeps overflow checks); and
    /// cancelling a booking while it is the latest restores the word it replaced (or the
    /// reading, if later), exactly.
    #[test]
    fn reservation_steps_keep_their_invariants_on_any_input(
        (quota, cost) in proptest::sample::select(assorted_quotas())
            .prop_flat_map(|quota| (Just(quota), any_cost(quota.limit()))),
        state in any_state(),
        booked in any_state(),
        now in any_reading(),
        max_wait in any_max_wait(),
    ) {
        let instant = quota.instant(now);
        let step = quota.reserve_step(state, instant, cost, quota.max_wait_ticks(max_wait));
        if cost > quota.limit() {
            prop_assert_eq!(step, Step::Deny);
        }
        if let Step::Allow(word) = step {
            prop_assert!(word < u64::MAX - 1, "a slot marker was written: {:#x}", word);
            prop_assert!(word >= state);
            let start_ns = quota.start_ns(word, instant);
            let max_wait_ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
            prop_assert!(
                start_ns <= now.as_ns().saturating_add(max_wait_ns),
                "starts at {} ns, asked to wait at most {:?} from {:?}",
                start_ns,
                max_wait,
                now
            );
            prop_assert!(start_ns <= HORIZON_NS, "starts at {} ns, past the horizon", start_ns);
            // Cancelled while it is the latest booking, it is undone.
            let increment = quota.increment_ticks(cost);
            let undone = if increment == 0 { Step::Deny } else { Step::Allow(state.max(instant.ticks())) };
            prop_assert_eq!(Gcra::cancel_step(word, word, increment), undone);
            // Behind a later booking, it gives nothing back.
            if let Step::Allow(later) = quota.reserve_step(word, instant, 1, u64::MAX) {
                prop_assert_eq!(Gcra::cancel_step(later, word, increment), Step::Deny);
            }
        }
        let _ = quota.wait_ns(state, instant, cost);
        let _ = quota.start_ns(state, instant);
        let _ = quota.start_ns(booked, instant);
    }

    /// The cancellation step on any words and increments, including ones no booking writes
    /// (`booked < increment`): never a panic or an underflow (the test profile keeps overflow
    /// checks), and exactly the documented rule: `booked − increment` iff the state is still
    /// `booked` and there is something to give back, else nothing.
    #[test]
    fn the_cancellation_step_is_an_exact_undo_on_any_input(
        state in any_state(),
        booked in any_state(),
        increment in prop_oneof![
            2 => any::<u64>(),
            1 => Just(0u64),
            1 => 0..=16u64,
            1 => Just(u64::MAX),
        ],
        same in any::<bool>(),
        smaller in any::<bool>(),
    ) {
        // Half the time the state is the booked word; some of the time the booking is smaller
        // than its increment, a word no booking writes.
        let booked = if smaller { booked % increment.max(1) } else { booked };
        let state = if same { booked } else { state };
        let expected = if state == booked && increment > 0 && booked >= increment {
            Step::Allow(booked - increment)
        } else {
            Step::Deny
        };
        prop_assert_eq!(Gcra::cancel_step(state, booked, increment), expected);
    }

    /// `max_wait_ticks` rounds down: the wait it allows, converted back to nanoseconds
    /// (rounded up, as start times are), is at most the maximum wait, and one tick more is
    /// past it. Up to the longest wait a state can book (at least 4.5 years).
    #[test]
    fn the_maximum_wait_rounds_down_to_a_tick(
        quota in proptest::sample::select(assorted_quotas()),
        max_wait_ns in prop_oneof![0..=1_000u64, 0..=10 * SECOND_NS, 0..=5 * YEAR_NS],
    ) {
        let origin = quota.instant(Timestamp::ORIGIN);
        let ticks = quota.max_wait_ticks(Duration::from_nanos(max_wait_ns));
        // A booking that waits `ticks` leaves the tolerance plus `ticks` ahead of now.
        let tolerance = quota.increment_ticks(quota.limit());
        let waited_ns = |ticks: u64| quota.start_ns(tolerance + ticks, origin);
        prop_assert!(waited_ns(ticks) <= max_wait_ns);
        let longest = quota.max_wait_ticks(Duration::MAX);
        if ticks < longest {
            prop_assert!(waited_ns(ticks + 1) > max_wait_ns);
        } else {
            prop_assert_eq!(ticks, longest);
            prop_assert!(max_wait_ns >= 4 * YEAR_NS);
        }
        // The same conversion as a clock reading: a maximum wait counts as a reading would.
        prop_assert_eq!(ticks, quota.instant(at(max_wait_ns)).ticks().min(longest));
    }
}

#[test]
fn the_longest_wait_is_at_least_four_and_a_half_years() {
    let four_and_a_half_years = Duration::from_nanos(4 * YEAR_NS + YEAR_NS / 2);
    for quota in assorted_quotas() {
        let longest = quota.max_wait_ticks(Duration::MAX);
        assert!(longest >= quota.max_wait_ticks(four_and_a_half_years));
        assert!(
            longest >= quota.instant(at(4 * YEAR_NS + YEAR_NS / 2)).ticks(),
            "{quota:?}"
        );
        assert_eq!(
            quota.max_wait_ticks(Duration::from_nanos(u64::MAX)),
            longest
        );
    }
    // A whole-ns interval counts 16 ticks per ns.
    let per_second = Gcra::per_second(10).unwrap();
    assert_eq!(
        per_second.max_wait_ticks(Duration::from_millis(150)),
        150_000_000 * 16
    );
}

/// The largest state `reserve_step` still books `cost` on at `now`, with the longest wait
/// (found by bisection: booking is monotonic in the state).
fn latest_bookable_state(quota: &Gcra, now: nanolimit::quota::GcraInstant, cost: u64) -> u64 {
    let longest = quota.max_wait_ticks(Duration::MAX);
    let books = |state: u64| {
        matches!(
            quota.reserve_step(state, now, cost, longest),
            Step::Allow(_)
        )
    };
    assert!(books(now.ticks()));
    let (mut low, mut high) = (now.ticks(), u64::MAX);
    assert!(!books(high));
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if books(middle) {
            low = middle;
        } else {
            high = middle;
        }
    }
    low
}

#[test]
fn words_stay_clear_of_the_slot_markers_with_the_longest_wait_up_to_the_horizon() {
    // The largest words are booked by the longest waits from the latest readings: from 5
    // years before the horizon, the wait is cut at the horizon (at least 4.5 years); from
    // the horizon, nothing may wait at all.
    let five_years_before = HORIZON_NS - 5 * YEAR_NS;
    for quota in assorted_quotas() {
        for reading_ns in [0, five_years_before, HORIZON_NS - SECOND_NS, HORIZON_NS] {
            let now = quota.instant(at(reading_ns));
            for cost in [1, quota.limit()] {
                let state = latest_bookable_state(&quota, now, cost);
                let longest = quota.max_wait_ticks(Duration::MAX);
                let Step::Allow(word) = quota.reserve_step(state, now, cost, longest) else {
                    unreachable!()
                };
                assert!(word < u64::MAX - 1, "{quota:?}: {word:#x}");
                let start_ns = quota.start_ns(word, now);
                assert!(start_ns <= HORIZON_NS, "{quota:?}: starts at {start_ns} ns");
                assert!(start_ns >= reading_ns);
                let wait_ns = quota.wait_ns(state, now, cost);
                // It waits (about) the longest a state can book, or up to (about) the horizon.
                let room_ns = HORIZON_NS - reading_ns;
                assert!(
                    wait_ns >= (4 * YEAR_NS + YEAR_NS / 2).min(room_ns.saturating_sub(SECOND_NS)),
                    "{quota:?} from {reading_ns} ns: {wait_ns}"
                );
                // A later booking on that word is refused: the chain stops there.
                assert_eq!(quota.reserve_step(word, now, 1, longest), Step::Deny);
            }
        }
    }
}

#[test]
fn reservations_past_the_longest_wait_are_refused_and_book_nothing() {
    // One a day, from a year in: each reservation waits a day more than the one before, until
    // the wait would pass the longest a state can book (at least 4.5 years).
    let clock = ManualClock::starting_at(at(YEAR_NS));
    let limiter = Limiter::with_clock(Gcra::per_day(1).unwrap(), clock);
    let mut granted = 0u64;
    let refusal = loop {
        let reservation = limiter.reserve();
        if reservation.is_denied() {
            break reservation;
        }
        assert_eq!(reservation.delay(), Duration::from_nanos(granted * DAY_NS));
        granted += 1;
        assert!(granted < 10 * 366, "no reservation was refused");
    };
    assert!(granted * DAY_NS >= 4 * YEAR_NS + YEAR_NS / 2, "{granted}");
    assert_eq!(refusal.delay(), Duration::from_nanos(granted * DAY_NS));
    let word = limiter.peek().state_word();
    assert!(word < u64::MAX - 1);
    // The refusal booked nothing: the next one is refused with the same wait, the state is
    // unchanged, and cancelling the refusal gives nothing back.
    let again = limiter.reserve();
    assert!(again.is_denied());
    assert_eq!(again.delay(), refusal.delay());
    refusal.cancel();
    again.cancel();
    assert_eq!(limiter.peek().state_word(), word);
}

#[test]
fn a_cost_above_the_burst_is_denied() {
    for quota in assorted_quotas() {
        let limit = quota.limit();
        let longest = quota.max_wait_ticks(Duration::MAX);
        for now in [Timestamp::ORIGIN, at(YEAR_NS), Timestamp::HORIZON] {
            let instant = quota.instant(now);
            assert_eq!(
                quota.reserve_step(Gcra::FRESH, instant, limit + 1, longest),
                Step::Deny,
                "{quota:?}"
            );
            assert_eq!(
                quota.reserve_step(Gcra::FRESH, instant, u64::MAX, longest),
                Step::Deny
            );
            assert!(matches!(
                quota.reserve_step(Gcra::FRESH, instant, limit, longest),
                Step::Allow(_)
            ));
        }
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let above = Request::cost(limit + 1);
        let error = RequestError::CostAboveLimit {
            cost: limit + 1,
            limit,
        };
        assert_eq!(limiter.reserve_with(above).err(), Some(error));
        assert_eq!(
            limiter.reserve_with(above.max_wait(Duration::MAX)).err(),
            Some(error)
        );
        assert_eq!(limiter.wait_with(above), Err(error));
        let table = KeyedLimiter::<u64, _>::builder(quota)
            .capacity(8)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        assert_eq!(table.reserve_with(&1, above).err(), Some(error));
        // Nothing was booked by any of them.
        assert_eq!(limiter.peek().state_word(), Gcra::FRESH);
        assert_eq!(table.entries(), 0);
    }
}

#[test]
fn a_cost_of_zero_is_granted_at_once_and_books_nothing() {
    let limiter = Limiter::with_clock(
        Gcra::per_second(10).unwrap().with_burst(1).unwrap(),
        ManualClock::new(),
    );
    let _first = limiter.reserve();
    let _second = limiter.reserve();
    let word = limiter.peek().state_word();
    let zero = limiter
        .reserve_with(Request::cost(0).max_wait(Duration::ZERO))
        .unwrap();
    assert!(zero.is_allowed());
    assert_eq!(zero.delay(), Duration::ZERO);
    zero.cancel();
    assert_eq!(limiter.peek().state_word(), word);
}

/// A GCRA quota of any rate (whole-ns intervals or not) with a burst of 1 to 20.
fn any_rate_quota() -> impl Strategy<Value = Gcra> {
    prop_oneof![
        whole_ns_quota(),
        (1..=1_000u64, 1..=10_000_000_000u64, 1..=20u64).prop_map(|(count, period_ns, burst)| {
            Gcra::new(count, Duration::from_nanos(period_ns.max(count)))
                .unwrap()
                .with_burst(burst)
                .unwrap()
        }),
    ]
}

/// Whether `quota`'s emission interval is a whole number of nanoseconds.
fn whole_ns(quota: &Gcra) -> bool {
    quota.period().as_nanos() % u128::from(quota.count()) == 0
}

/// Random schedules: `(gap, cost, kind)` in raw form.
fn raw_schedule() -> impl Strategy<Value = Vec<(u64, u64, u8)>> {
    prop::collection::vec((any::<u64>(), any::<u64>(), any::<u8>()), 1..60)
}

/// The gap before a request, in raw form, relative to the quota's tolerance.
fn gap_from(raw: u64, quota: &Gcra) -> u64 {
    let tolerance_ns = quota.period().as_nanos() as u64 * quota.limit() / quota.count();
    match raw % 4 {
        0 => 0,
        1 => raw % (tolerance_ns / 4 + 1),
        _ => raw % (2 * tolerance_ns + 1),
    }
}

proptest! {
    #![proptest_config(proptest_config(3_000))]

    /// A refused reservation reports the wait it would have needed: asked again with that
    /// wait as its maximum, it is granted (at that start; with an interval that is not a
    /// whole number of ns, up to 1 ns sooner, as the start is rounded up from the reading's
    /// tick rather than from the reading), and with 1 ns less it is refused again, reporting
    /// the same wait.
    #[test]
    fn a_refused_reservation_reports_the_wait_it_would_have_needed(
        quota in any_rate_quota(),
        first_ns in 0..=YEAR_NS,
        schedule in raw_schedule(),
    ) {
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let slack_ns = if whole_ns(&quota) { 0 } else { 1 };
        // Probes `request` with no wait; if refused, asks again with its reported wait, and
        // 1 ns less. Returns whether it was refused.
        let probe = |request: Request<Gcra>, now: u64| -> Result<bool, TestCaseError> {
            let probe = limiter.reserve_with(request.max_wait(Duration::ZERO)).unwrap();
            if probe.is_allowed() {
                prop_assert_eq!(probe.start(), at(now));
                return Ok(false);
            }
            let wait = probe.delay();
            prop_assert!(wait > Duration::ZERO);
            let short = limiter
                .reserve_with(request.max_wait(wait - Duration::from_nanos(1)))
                .unwrap();
            prop_assert!(short.is_denied());
            prop_assert_eq!(short.delay(), wait);
            let enough = limiter.reserve_with(request.max_wait(wait)).unwrap();
            prop_assert!(enough.is_allowed(), "{:?}: refused with max wait {:?}", quota, wait);
            prop_assert!(enough.delay() <= wait);
            prop_assert!(enough.delay() + Duration::from_nanos(slack_ns) >= wait);
            Ok(true)
        };
        let mut now = first_ns;
        for (gap, cost, kind) in schedule {
            now += gap_from(gap, &quota);
            let cost = 1 + cost % quota.limit();
            let request = Request::cost(cost).at(at(now));
            if kind % 3 == 0 {
                // Book ahead, to build a queue.
                prop_assert!(limiter.reserve_with(request).unwrap().is_allowed());
            } else {
                probe(request, now)?;
            }
        }
        // A whole burst booked now leaves no room for even one unit without a wait.
        let burst = Request::cost(quota.limit()).at(at(now));
        prop_assert!(limiter.reserve_with(burst).unwrap().is_allowed());
        prop_assert!(probe(Request::new().at(at(now)), now)?);
    }

    /// A reservation with a maximum wait of zero is a check: the same decisions, the same
    /// state words, granted at once, and a refusal reports the check's `retry_after`.
    #[test]
    fn a_zero_maximum_wait_makes_a_reservation_a_check(
        quota in any_rate_quota(),
        first_ns in 0..=YEAR_NS,
        schedule in raw_schedule(),
    ) {
        let reserving = Limiter::with_clock(quota, ManualClock::new());
        let checking = Limiter::with_clock(quota, ManualClock::new());
        let mut now = first_ns;
        for (gap, cost, _) in schedule {
            now += gap_from(gap, &quota);
            let cost = 1 + cost % quota.limit();
            let request = Request::cost(cost).at(at(now));
            let reservation = reserving.reserve_with(request.max_wait(Duration::ZERO)).unwrap();
            let decision = checking.check_with(request).unwrap();
            prop_assert_eq!(reservation.is_allowed(), decision.is_allowed());
            if reservation.is_allowed() {
                prop_assert_eq!(reservation.start(), at(now));
            } else {
                prop_assert_eq!(reservation.delay(), decision.retry_after());
            }
            prop_assert_eq!(reserving.peek().state_word(), checking.peek().state_word());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Keyed limiters
// ---------------------------------------------------------------------------------------------

/// An 8-slot table (one bucket, one shard) of exact `u64` keys on `clock`: every key's
/// candidates are the same 8 slots.
fn eight_slots(quota: Gcra, when_full: WhenFull, clock: &ManualClock) -> ExactTable {
    let table = KeyedLimiter::builder(quota)
        .capacity(1)
        .shards(1)
        .when_full(when_full)
        .clock(clock.clone())
        .exact_keys()
        .build()
        .unwrap();
    assert_eq!(table.slots(), 8);
    table
}

/// A reservation of `cost` for `key` at `now_ns`, with no maximum wait.
fn book(table: &ExactTable, key: u64, cost: u64, now_ns: u64) -> Reservation<'_> {
    let reservation = table
        .reserve_with(&key, Request::cost(cost).at(at(now_ns)))
        .unwrap();
    assert!(reservation.is_allowed(), "key {key}");
    reservation
}

#[test]
fn a_keys_cancellation_gives_back_to_that_key_only() {
    // 1 per ms, bursts of 1.
    let quota = Gcra::per_second(1_000).unwrap().with_burst(1).unwrap();
    let table = KeyedLimiter::builder(quota)
        .capacity(64)
        .clock(ManualClock::new())
        .exact_keys()
        .build()
        .unwrap();
    let (alice, bob) = (1u64, 2u64);
    for key in [alice, bob] {
        assert_eq!(table.reserve(&key).delay(), Duration::ZERO);
    }
    let alice_later = table.reserve(&alice);
    let bob_later = table.reserve(&bob);
    assert_eq!(alice_later.delay(), Duration::from_millis(1));
    assert_eq!(bob_later.delay(), Duration::from_millis(1));
    let bob_word = table.peek(&bob).state_word();
    // Alice's cancellation gives her slot back to her, and leaves Bob's queue as it was.
    alice_later.cancel();
    assert_eq!(table.peek(&bob).state_word(), bob_word);
    assert_eq!(table.reserve(&alice).delay(), Duration::from_millis(1));
    assert_eq!(table.reserve(&bob).delay(), Duration::from_millis(2));
    drop(bob_later);
}

#[test]
fn a_cancellation_for_an_evicted_key_leaves_its_successor_alone() {
    // What this asserts: a reservation whose key was evicted (while the reservation was
    // pending) gives nothing back when cancelled, to anyone: the key that took over the slot
    // (inheriting the evicted state) keeps its word and its queue.
    //
    // 1 per ms, bursts of 10. Keys 1..=7 book 21 units each (their state: 21 ms), key 0 (A)
    // books 10 now and 10 more starting at 10 ms (its state: 20 ms, the closest to fresh).
    let quota = Gcra::per_second(1_000).unwrap().with_burst(10).unwrap();
    let clock = ManualClock::new();
    let table = eight_slots(quota, WhenFull::EvictClosestToFresh, &clock);
    let a = 0u64;
    let _a_now = book(&table, a, 10, 0);
    let a_pending = book(&table, a, 10, 0);
    assert_eq!(a_pending.start(), at(10 * MILLISECOND_NS));
    for key in 1..=7u64 {
        for cost in [10, 10, 1] {
            let _ = book(&table, key, cost, 0);
        }
    }
    assert_eq!(table.entries(), 8);
    // B, a new key, evicts A and inherits A's state: its unit starts at 11 ms.
    let b = 100u64;
    let b_reservation = book(&table, b, 1, 0);
    assert_eq!(b_reservation.start(), at(11 * MILLISECOND_NS));
    assert_eq!(table.stats().evictions, 1);
    let b_word = table.peek(&b).state_word();
    // A cancels before its start. A's key is gone: nothing is given back, to anyone (B's word
    // is above every word A wrote, so no undo of A's could apply to it either).
    a_pending.cancel_at(at(MILLISECOND_NS));
    assert_eq!(table.peek(&b).state_word(), b_word);
    assert_eq!(book(&table, b, 1, 0).start(), at(12 * MILLISECOND_NS));
    // Nor did it make room anywhere: the table is still full of the same live entries.
    assert_eq!(table.entries(), 8);
    assert_eq!(table.stats().evictions, 1);
}

#[test]
fn a_cancellation_for_a_reclaimed_key_leaves_its_successor_alone() {
    // What this asserts: a key's slot is reclaimed only once its state is fresh, so after its
    // reservations have started, and a cancellation then gives nothing back even when made
    // with a reading from before the start (a caller's earlier reading): the key is no longer
    // in the table, and the key that reclaimed the slot keeps its word.
    //
    // 1 per ms, bursts of 10. Keys 1..=7 book 30 units each (their state: 30 ms); key 0 (A)
    // books 10 now and 10 more starting at 10 ms (its state: 20 ms).
    let quota = Gcra::per_second(1_000).unwrap().with_burst(10).unwrap();
    let clock = ManualClock::new();
    let table = eight_slots(quota, WhenFull::Deny, &clock);
    let a = 0u64;
    let _a_now = book(&table, a, 10, 0);
    let a_pending = book(&table, a, 10, 0);
    assert_eq!(a_pending.start(), at(10 * MILLISECOND_NS));
    for key in 1..=7u64 {
        for _ in 0..3 {
            let _ = book(&table, key, 10, 0);
        }
    }
    // At 25 ms A is fresh, the others are not: B reclaims A's slot.
    let b = 100u64;
    let now_ns = 25 * MILLISECOND_NS;
    clock.set(at(now_ns));
    let b_reservation = book(&table, b, 1, now_ns);
    assert_eq!(b_reservation.start(), at(now_ns));
    assert_eq!(table.stats().reclaims, 1);
    let b_word = table.peek(&b).state_word();
    // Had the cancellation reached B's slot (26 ms, 6 ms past A's booked 20 ms), it would have
    // given back 4 ms.
    a_pending.cancel_at(at(5 * MILLISECOND_NS));
    assert_eq!(table.peek(&b).state_word(), b_word);
    for _ in 0..9 {
        assert!(table.check_at(&b, at(now_ns)).is_allowed());
    }
    assert!(table.check_at(&b, at(now_ns)).is_denied());
}

#[test]
fn a_keys_first_booking_after_an_eviction_gives_nothing_back() {
    // What this asserts: the booking that inserted a key, over an evicted live entry, waits
    // behind the inherited state but is not cancellable: undoing it would return the slot to
    // the evicted key's word.
    //
    // The table of `a_cancellation_for_an_evicted_key_leaves_its_successor_alone`: B evicts A
    // (A's state: 20 ms) and books 1 unit, starting at 11 ms (B's state: 21 ms).
    let quota = Gcra::per_second(1_000).unwrap().with_burst(10).unwrap();
    let clock = ManualClock::new();
    let table = eight_slots(quota, WhenFull::EvictClosestToFresh, &clock);
    let a = 0u64;
    let _a_now = book(&table, a, 10, 0);
    let _a_pending = book(&table, a, 10, 0);
    let a_word = table.peek(&a).state_word();
    for key in 1..=7u64 {
        for cost in [10, 10, 1] {
            let _ = book(&table, key, cost, 0);
        }
    }
    let b = 100u64;
    let b_first = book(&table, b, 1, 0);
    assert_eq!(b_first.start(), at(11 * MILLISECOND_NS));
    assert_eq!(table.stats().evictions, 1);
    let b_word = table.peek(&b).state_word();
    // Cancelled before its start (the clock reads 0): B's word stays, it does not return to
    // A's 20 ms, and B's next unit still queues behind it, at 12 ms.
    b_first.cancel();
    assert_eq!(table.peek(&b).state_word(), b_word);
    assert_ne!(table.peek(&b).state_word(), a_word);
    let b_second = book(&table, b, 1, 0);
    assert_eq!(b_second.start(), at(12 * MILLISECOND_NS));
    // B's later bookings are its own: the latest one is undone.
    b_second.cancel();
    assert_eq!(table.peek(&b).state_word(), b_word);
    assert_eq!(book(&table, b, 1, 0).start(), at(12 * MILLISECOND_NS));
}

#[test]
fn a_keys_first_booking_on_a_vacant_slot_gives_nothing_back_even_with_an_earlier_reading() {
    // A key's first booking over a vacant slot starts at once; cancelled with a reading from
    // before that (so before its start), it still gives nothing back: the key keeps the whole
    // burst it booked, and nothing more passes.
    let quota = Gcra::per_second(1_000).unwrap().with_burst(10).unwrap();
    let clock = ManualClock::new();
    let table = eight_slots(quota, WhenFull::EvictClosestToFresh, &clock);
    let now_ns = 5 * MILLISECOND_NS;
    let first = book(&table, 1, 10, now_ns);
    assert_eq!(first.start(), at(now_ns));
    let word = table.peek(&1).state_word();
    first.cancel_at(Timestamp::ORIGIN);
    assert_eq!(table.peek(&1).state_word(), word);
    assert!(table.check_at(&1, at(now_ns)).is_denied());
}

#[test]
fn a_returning_keys_old_reservation_leaves_its_new_state_alone() {
    // What this asserts: a reservation made before its key was evicted gives nothing back
    // when cancelled after the key has come back (inserted again, over another key's slot):
    // the key's new state started from another key's word, and undoing the old booking on it
    // could return the slot to a word the other key held (ABA). Once a shard has reassigned a
    // slot, no reservation booked in it before gives anything back, so the words the slot
    // held under other keys cannot come back.
    //
    // 1 per ms, bursts of 10, every call at 0 ms. A (key 0) books 10 now and 10 more starting
    // at 10 ms (its state: 20 ms). Keys 1..=7 book 10, 10 and 1 (21 ms). Key 100 evicts A (the
    // closest to fresh). Key 1's latest booking is cancelled after that eviction: nothing is
    // given back (the shard reassigned a slot since it was booked). A returns, evicting a key
    // at 21 ms, and books 1 unit (22 ms: its start is 12 ms).
    let quota = Gcra::per_second(1_000).unwrap().with_burst(10).unwrap();
    let clock = ManualClock::new();
    let table = eight_slots(quota, WhenFull::EvictClosestToFresh, &clock);
    let a = 0u64;
    let _a_now = book(&table, a, 10, 0);
    let a_pending = book(&table, a, 10, 0);
    assert_eq!(a_pending.start(), at(10 * MILLISECOND_NS));
    // Every word a slot held under a key other than A.
    let mut other_words = Vec::new();
    let mut key_1_latest = None;
    for key in 1..=7u64 {
        for cost in [10, 10, 1] {
            let reservation = book(&table, key, cost, 0);
            other_words.push(table.peek(&key).state_word());
            if key == 1 && cost == 1 {
                key_1_latest = Some(reservation);
            }
        }
    }
    let _b = book(&table, 100, 1, 0);
    other_words.push(table.peek(&100).state_word());
    assert_eq!(table.stats().evictions, 1);
    let key_1_word = table.peek(&1).state_word();
    key_1_latest.unwrap().cancel();
    assert_eq!(
        table.peek(&1).state_word(),
        key_1_word,
        "nothing given back after an eviction"
    );
    let a_back = book(&table, a, 1, 0);
    assert_eq!(table.stats().evictions, 2);
    assert_eq!(a_back.start(), at(12 * MILLISECOND_NS));
    let a_word = table.peek(&a).state_word();
    // A's old reservation is cancelled before its start: A's new state keeps its word, and
    // A's next unit starts at 13 ms.
    a_pending.cancel_at(at(MILLISECOND_NS));
    let after = table.peek(&a).state_word();
    assert_eq!(after, a_word);
    assert!(
        !other_words.contains(&after),
        "A's word {after} is one another key held"
    );
    assert_eq!(book(&table, a, 1, 0).start(), at(13 * MILLISECOND_NS));
}

// ---------------------------------------------------------------------------------------------
// The time horizon
// ---------------------------------------------------------------------------------------------

#[test]
fn reservations_at_and_near_the_horizon_are_refused_past_it() {
    // One per second, bursts of 1. At the horizon a reservation that starts at once is
    // granted (a check there passes too); one that would start later would start past it:
    // refused, booking nothing (not granted with a start clamped to the horizon, a delay of
    // zero).
    let quota = Gcra::per_second(1).unwrap();
    let limiter = Limiter::with_clock(quota, ManualClock::starting_at(Timestamp::HORIZON));
    let first = limiter.reserve();
    assert!(first.is_allowed());
    assert_eq!(first.start(), Timestamp::HORIZON);
    let word = limiter.peek().state_word();
    for request in [Request::new(), Request::new().max_wait(Duration::MAX)] {
        let refused = limiter.reserve_with(request).unwrap();
        assert!(refused.is_denied());
        // Its start can be no later than the horizon: the delay it reports is cut there.
        assert_eq!(refused.start(), Timestamp::HORIZON);
        refused.cancel();
    }
    assert!(matches!(
        limiter.wait(),
        Err(RequestError::WaitTooLong { .. })
    ));
    assert_eq!(limiter.peek().state_word(), word);
    // From 2 s before: at once, in 1 s, in 2 s (at the horizon), then refused.
    let limiter = Limiter::with_clock(
        quota,
        ManualClock::starting_at(at(HORIZON_NS - 2 * SECOND_NS)),
    );
    let outcomes: Vec<(bool, u64)> = (0..5)
        .map(|_| {
            let reservation = limiter.reserve();
            (reservation.is_allowed(), reservation.delay().as_secs())
        })
        .collect();
    assert_eq!(
        outcomes,
        [(true, 0), (true, 1), (true, 2), (false, 2), (false, 2)]
    );
    // A keyed limiter the same, per key.
    let table = KeyedLimiter::<u64, _>::builder(quota)
        .capacity(8)
        .clock(ManualClock::starting_at(at(HORIZON_NS - SECOND_NS)))
        .build()
        .unwrap();
    for key in [1, 2] {
        let granted: Vec<bool> = (0..3).map(|_| table.reserve(&key).is_allowed()).collect();
        assert_eq!(granted, [true, true, false]);
    }
}

proptest! {
    #![proptest_config(proptest_config(2_000))]

    /// From any reading in the last few tolerances before the horizon, a run of reservations
    /// with no maximum wait is granted exactly while its start is at or before the horizon,
    /// each start where the quota puts it (`max(tat, now) + n·T − tau`, in the model's ns), and
    /// the refusals book nothing.
    #[test]
    fn near_the_horizon_reservations_are_granted_exactly_up_to_it(
        quota in whole_ns_quota(),
        before in any::<u64>(),
        costs in prop::collection::vec(any::<u64>(), 1..40),
    ) {
        let now_ns = HORIZON_NS - before % (5 * tolerance_ns(&quota) + 1);
        let limiter = Limiter::with_clock(quota, ManualClock::starting_at(at(now_ns)));
        let mut model = Model::new(&quota);
        for raw in costs {
            let cost = 1 + raw % quota.limit();
            let expected = model.reserve(u128::from(now_ns), cost, None);
            let word = limiter.peek().state_word();
            let reservation = limiter.reserve_with(Request::cost(cost)).unwrap();
            prop_assert_eq!(
                (reservation.is_allowed(), u128::from(reservation.start().as_ns())),
                (expected.granted, expected.start_ns)
            );
            prop_assert!(reservation.start().as_ns() <= HORIZON_NS);
            if reservation.is_denied() {
                prop_assert_eq!(limiter.peek().state_word(), word);
            }
        }
    }
}

/// A cancellation lowers its key's word; the slot is still held to the word it was booked to: no
/// new key reclaims it before that word is fresh (a check of the key that read the booked word
/// could otherwise land on the new key's entry), and once it is, the new key starts from it.
#[test]
fn a_slot_whose_booking_was_cancelled_is_reclaimed_only_once_its_booked_word_is_fresh() {
    // 1 per ms, bursts of 1. Keys 1..=7 hold their slots until 50 ms.
    let quota = Gcra::per_second(1_000).unwrap().with_burst(1).unwrap();
    let clock = ManualClock::new();
    let table = eight_slots(quota, WhenFull::Deny, &clock);
    for key in 1..=7u64 {
        assert!(table.check_at(&key, at(49 * MILLISECOND_NS)).is_allowed());
    }
    // Key 0: a unit now (state 1 ms), then one booked to start at 1 ms (state 2 ms), cancelled:
    // its state is back to 1 ms, and its unit is given back to it.
    assert!(table.check_at(&0, at(0)).is_allowed());
    let booked = book(&table, 0, 1, 0);
    assert_eq!(booked.start(), at(MILLISECOND_NS));
    booked.cancel_at(at(0));
    let again = book(&table, 0, 1, 0);
    assert_eq!(
        again.start(),
        at(MILLISECOND_NS),
        "the cancelled unit is key 0's again"
    );
    again.cancel_at(at(0));
    // At 1 ms key 0's state is fresh, but not the word it was booked to: key 100 is refused.
    let early = table.check_at(&100, at(MILLISECOND_NS));
    assert!(early.is_denied() && early.is_untracked(), "{early:?}");
    assert_eq!(table.stats().reclaims, 0);
    // At 2 ms the booked word is fresh too: key 100 takes the slot, from a fresh state.
    let later = table.check_at(&100, at(2 * MILLISECOND_NS));
    assert!(later.is_allowed() && !later.is_untracked(), "{later:?}");
    assert_eq!(later.remaining(), 0);
    assert_eq!(table.stats().reclaims, 1);
}

/// A shard records at most eight lowered slots whose booked words are still live: a ninth
/// cancellation in that shard gives nothing back (its key keeps the unit it booked), and once a
/// recorded word is fresh, cancellations give back again.
#[test]
fn a_shard_with_no_room_to_record_a_lowered_slot_gives_nothing_back() {
    // 1 per ms, bursts of 1; one shard of 64 keys.
    let quota = Gcra::per_second(1_000).unwrap().with_burst(1).unwrap();
    let table = KeyedLimiter::builder(quota)
        .capacity(64)
        .shards(1)
        .clock(ManualClock::new())
        .exact_keys()
        .build()
        .unwrap();
    // Nine keys each use a unit at 0 and book one more to start at 1 ms (state 2 ms).
    let bookings: Vec<_> = (0..9u64)
        .map(|key| {
            assert!(table.check_at(&key, at(0)).is_allowed());
            book(&table, key, 1, 0)
        })
        .collect();
    let states_before: Vec<_> = (0..9u64)
        .map(|key| {
            table
                .peek_with(&key, Request::new().at(at(0)))
                .unwrap()
                .state_word()
        })
        .collect();
    for booking in bookings {
        booking.cancel_at(at(0));
    }
    for key in 0..8u64 {
        assert!(
            table
                .peek_with(&key, Request::new().at(at(0)))
                .unwrap()
                .state_word()
                < states_before[key as usize],
            "key {key}'s cancellation gave its unit back"
        );
    }
    assert_eq!(
        table
            .peek_with(&8, Request::new().at(at(0)))
            .unwrap()
            .state_word(),
        states_before[8],
        "no room for a ninth lowered slot: key 8 keeps its booking"
    );
    // At 2 ms the recorded words are fresh: a cancellation then makes room and gives back.
    assert!(table.check_at(&8, at(2 * MILLISECOND_NS)).is_allowed());
    let late = book(&table, 8, 1, 2 * MILLISECOND_NS);
    assert_eq!(late.start(), at(3 * MILLISECOND_NS));
    let booked_word = table
        .peek_with(&8, Request::new().at(at(2 * MILLISECOND_NS)))
        .unwrap()
        .state_word();
    late.cancel_at(at(2 * MILLISECOND_NS));
    assert!(
        table
            .peek_with(&8, Request::new().at(at(2 * MILLISECOND_NS)))
            .unwrap()
            .state_word()
            < booked_word
    );
}

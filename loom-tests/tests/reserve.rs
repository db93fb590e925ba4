//! Loom models of reservations (src/limiter/reservation.rs): bookings applied by the same compare-and-swap
//! driver (src/engine/driver.rs) and keyed slot protocol (src/store/table/protocol.rs) as checks, and
//! cancellations, which lower a state word (`Gcra::cancel_step`) through that driver, on a keyed
//! table behind the driver guard's identity re-check.
//!
//! Every quota is GCRA at one unit per second (`T` = 1 s), so every start is a whole number of
//! seconds and the sequential outcome of a plan can be written down. Every time is passed in
//! (`Request::at` for `reserve_with`, `cancel_at`); the models never read the `ManualClock`
//! (nanolimit does, once per cancellation, for an instant that the cancellation step ignores).
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test reserve`

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use nanolimit::keyed::Exact;
use nanolimit::{Gcra, KeyedLimiter, Limiter, ManualClock, Request, Reservation, Stats, WhenFull};
use nanolimit_loom_tests::{
    at, explore, run_concurrently, shared_direct_limiter, Bounds, ModelThread,
    UNREACHED_PREEMPTION_BOUND,
};
use std::time::Duration;

/// The emission interval of every quota here, in nanoseconds.
const T: u64 = 1_000_000_000;

/// Every plan of the reservation races runs on a spawned thread: loom explores more
/// interleavings that way (see [`ModelThread`]). The cancellation models spawn both their
/// threads too, in [`race_a_cancellation`] (a reservation borrows its limiter, so it cannot be
/// handed to `run_concurrently`'s threads).
const MODEL_THREAD: ModelThread = ModelThread::OnlyJoins;

/// GCRA at one unit per second, bursts of `burst`.
fn gcra(burst: u64) -> Gcra {
    Gcra::per_second(1).unwrap().with_burst(burst).unwrap()
}

/// A keyed GCRA table of `u64` keys stored `Exact`.
type Table = KeyedLimiter<u64, Gcra, ManualClock, Exact>;

/// A one-shard, one-bucket table (8 slots) at a burst of `burst`, with a fixed hash seed and
/// `when_full` for a new key that finds every slot live, built as the keyed models build theirs.
fn one_bucket_table(burst: u64, when_full: WhenFull) -> Table {
    KeyedLimiter::<u64, Gcra>::builder(gcra(burst))
        .capacity(1)
        .shards(1)
        .seed(7)
        .when_full(when_full)
        .clock(ManualClock::new())
        .key_mode::<Exact>()
        .build()
        .expect("a one-bucket table")
}

/// One `reserve_with`: `cost` units, a reading of `now_ns`, waiting at most `max_wait_ns` (no
/// limit if `None`).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Reserve {
    cost: u64,
    now_ns: u64,
    max_wait_ns: Option<u64>,
}

impl Reserve {
    /// `cost` units at `now_ns`, however long the wait.
    const fn unbounded(cost: u64, now_ns: u64) -> Reserve {
        Reserve {
            cost,
            now_ns,
            max_wait_ns: None,
        }
    }

    /// `cost` units at `now_ns`, refused if the wait is longer than `max_wait_ns`.
    const fn within(cost: u64, now_ns: u64, max_wait_ns: u64) -> Reserve {
        Reserve {
            cost,
            now_ns,
            max_wait_ns: Some(max_wait_ns),
        }
    }

    fn request(self) -> Request<Gcra> {
        let request = Request::cost(self.cost).at(at(self.now_ns));
        match self.max_wait_ns {
            Some(max_wait_ns) => request.max_wait(Duration::from_nanos(max_wait_ns)),
            None => request,
        }
    }
}

/// `1@0ns` for a unit at 0 however long it waits, `1@0ns within 1s` for one waiting at most
/// 1 s: short, as [`Booked`]'s.
impl std::fmt::Debug for Reserve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{:?}", self.cost, Duration::from_nanos(self.now_ns))?;
        match self.max_wait_ns {
            Some(max_wait_ns) => write!(f, " within {:?}", Duration::from_nanos(max_wait_ns)),
            None => Ok(()),
        }
    }
}

/// What a reservation reported, in the figures a caller reads: granted or refused, its cost, and
/// its start (for a refusal, when it could have started).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Booked {
    granted: bool,
    cost: u64,
    start_ns: u64,
}

impl Booked {
    fn of(reservation: &Reservation<'_>) -> Booked {
        assert_eq!(reservation.is_allowed(), !reservation.is_denied());
        Booked {
            granted: reservation.is_allowed(),
            cost: reservation.cost(),
            start_ns: reservation.start().as_ns(),
        }
    }

    /// Granted, starting `start_ns` after the origin.
    const fn granted(cost: u64, start_ns: u64) -> Booked {
        Booked {
            granted: true,
            cost,
            start_ns,
        }
    }
}

/// Short enough to read a failing model's outcomes, and every sequential order's, at a glance:
/// `1@2s` for 1 unit granted to start at 2 s, `refused 1@2s` for 1 refused that could have
/// started then.
impl std::fmt::Debug for Booked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.granted {
            f.write_str("refused ")?;
        }
        write!(f, "{}@{:?}", self.cost, Duration::from_nanos(self.start_ns))
    }
}

/// `reserve` made on a direct limiter, reported (the reservation itself borrows the limiter, so
/// only its figures leave the thread).
fn reserve_direct(limiter: &Limiter<Gcra, ManualClock>, reserve: Reserve) -> Booked {
    Booked::of(&limiter.reserve_with(reserve.request()).unwrap())
}

/// `reserve` for `key` on a keyed table, reported.
fn reserve_keyed(table: &Table, (key, reserve): (u64, Reserve)) -> Booked {
    Booked::of(&table.reserve_with(&key, reserve.request()).unwrap())
}

/// The sequential specification: GCRA on one state word, one reservation at a time, in
/// nanoseconds (every figure here is a whole number of them). A request waits until
/// `max(tat, start) + n·T <= start + burst·T`; a granted one moves `tat` to `max(tat, now) + n·T`.
#[derive(Debug, Clone, Copy)]
struct Sequential {
    burst: u64,
    tat_ns: u64,
}

impl Sequential {
    fn fresh(burst: u64) -> Sequential {
        Sequential { burst, tat_ns: 0 }
    }

    fn reserve(&mut self, reserve: Reserve) -> Booked {
        let increment = reserve.cost * T;
        let base = self.tat_ns.max(reserve.now_ns);
        let wait = (base - reserve.now_ns + increment).saturating_sub(self.burst * T);
        let granted = reserve.max_wait_ns.is_none_or(|max_wait| wait <= max_wait);
        if granted {
            self.tat_ns = base + increment;
        }
        Booked {
            granted,
            cost: reserve.cost,
            start_ns: reserve.now_ns + wait,
        }
    }
}

/// What each order of `plans` that keeps every thread's own order reports, run one reservation at
/// a time on a fresh state, followed by `further`: the reports, per thread, and `further`'s.
fn sequential_outcomes(
    burst: u64,
    plans: &[Vec<Reserve>],
    further: Reserve,
) -> Vec<(Vec<Vec<Booked>>, Booked)> {
    fn interleave(
        plans: &[Vec<Reserve>],
        done: &mut [usize],
        state: Sequential,
        outcomes: &mut Vec<Vec<Booked>>,
        further: Reserve,
        all: &mut Vec<(Vec<Vec<Booked>>, Booked)>,
    ) {
        let mut finished = true;
        for thread in 0..plans.len() {
            let Some(&reserve) = plans[thread].get(done[thread]) else {
                continue;
            };
            finished = false;
            let mut next = state;
            outcomes[thread].push(next.reserve(reserve));
            done[thread] += 1;
            interleave(plans, done, next, outcomes, further, all);
            done[thread] -= 1;
            outcomes[thread].pop();
        }
        if finished {
            let mut last = state;
            all.push((outcomes.clone(), last.reserve(further)));
        }
    }
    let mut all = Vec::new();
    interleave(
        plans,
        &mut vec![0; plans.len()],
        Sequential::fresh(burst),
        &mut vec![Vec::new(); plans.len()],
        further,
        &mut all,
    );
    all
}

/// Replays `granted` (start, cost), in start order, through a fresh limiter under a burst of
/// `burst`: the safety property of any set of bookings is that each of them, made at its start,
/// would have passed a check (no two units closer than the quota allows).
fn assert_conformant(burst: u64, granted: &[Booked], context: &dyn std::fmt::Debug) {
    let mut by_start: Vec<Booked> = granted.to_vec();
    by_start.sort_by_key(|booked| booked.start_ns);
    let replay = Limiter::with_clock(gcra(burst), ManualClock::new());
    for booked in &by_start {
        assert!(booked.granted, "only granted bookings are replayed");
        let check = replay
            .check_with(Request::cost(booked.cost).at(at(booked.start_ns)))
            .unwrap();
        assert!(
            check.is_allowed(),
            "bookings {by_start:?} (burst {burst}, T = 1 s) are closer than the quota allows: \
             {booked:?} does not pass at its start: {context:?}"
        );
    }
}

/// The granted bookings among `outcomes` and `more`.
fn granted_among<'a>(
    outcomes: &'a [Vec<Booked>],
    more: impl IntoIterator<Item = &'a Booked>,
) -> Vec<Booked> {
    outcomes
        .iter()
        .flatten()
        .chain(more)
        .filter(|booked| booked.granted)
        .copied()
        .collect()
}

/// `burst` 1, unit costs: each thread makes one unbounded reservation and one that waits at most
/// `T`; whichever of the latter comes second finds at least two units booked ahead and is
/// refused.
const UNIT_PLANS: [[Reserve; 2]; 2] = [
    [Reserve::unbounded(1, 0), Reserve::within(1, 0, T)],
    [Reserve::within(1, 0, T), Reserve::unbounded(1, 0)],
];
/// `burst` 2, mixed costs: which of the bounded ones fit depends on the order (none, one or
/// two are refused).
const COSTED_PLANS: [[Reserve; 2]; 2] = [
    [Reserve::unbounded(2, 0), Reserve::within(1, 0, T)],
    [Reserve::within(1, 0, 0), Reserve::within(2, 0, 2 * T)],
];
/// Where the next booking queues once the race is over.
const FURTHER: Reserve = Reserve::unbounded(1, 0);

/// What two threads racing to reserve with `plans`, then a `further` reservation (an unbounded
/// unit at 0: where the next booking queues, so it shows the final state), are told is exactly
/// what some order of the plans' reservations, one at a time, reports: so a refused reservation
/// booked nothing, and every granted one is counted. The granted bookings with the further one
/// are conformant, and under a burst of 1 their starts are the slots 0, `T`, `2T`, ..., each
/// taken once.
fn assert_one_sequential_order(
    burst: u64,
    plans: &[Vec<Reserve>],
    outcomes: &[Vec<Booked>],
    further: Booked,
) {
    let orders = sequential_outcomes(burst, plans, FURTHER);
    assert!(
        orders
            .iter()
            .any(|(sequential, next)| sequential == outcomes && *next == further),
        "reservations {outcomes:?}, then {further:?}: no order of the plans {plans:?}, one at a \
         time, reports that; they report {orders:?}"
    );
    let granted = granted_among(outcomes, [&further]);
    assert_conformant(burst, &granted, &outcomes);
    if burst == 1 {
        let mut starts: Vec<u64> = granted.iter().map(|booked| booked.start_ns).collect();
        starts.sort_unstable();
        let slots: Vec<u64> = (0..starts.len() as u64).map(|slot| slot * T).collect();
        assert_eq!(
            starts, slots,
            "burst 1: each granted booking takes its own slot: {outcomes:?}, then {further:?}"
        );
    }
}

/// Two threads reserve on a direct limiter at once, with `plans` (see
/// [`assert_one_sequential_order`]).
fn model_reserves_race(model_name: &str, burst: u64, plans: [[Reserve; 2]; 2]) {
    let plans: Vec<Vec<Reserve>> = plans.iter().map(|plan| plan.to_vec()).collect();
    // Some order refuses a reservation: else the model could not see a refusal that booked.
    let orders = sequential_outcomes(burst, &plans, FURTHER);
    assert!(orders
        .iter()
        .any(|(outcomes, _)| outcomes.iter().flatten().any(|booked| !booked.granted)));
    explore(model_name, UNREACHED_PREEMPTION_BOUND, move || {
        let limiter = shared_direct_limiter(gcra(burst));
        let outcomes = run_concurrently(MODEL_THREAD, &limiter, plans.clone(), reserve_direct);
        let further = reserve_direct(&limiter, FURTHER);
        assert_one_sequential_order(burst, &plans, &outcomes, further);
    });
}

#[test]
fn direct_two_threads_reserve_unit_slots() {
    model_reserves_race("reserve: direct, 2 × 2 unit reservations", 1, UNIT_PLANS);
}

#[test]
fn direct_two_threads_reserve_mixed_costs() {
    model_reserves_race(
        "reserve: direct, 2 × 2 costed reservations",
        2,
        COSTED_PLANS,
    );
}

/// The keyed form of [`model_reserves_race`]: both threads reserve for one key the table does not
/// hold yet, so each first reservation may insert it (one entry results, holding every booking).
///
/// Under [`UNREACHED_PREEMPTION_BOUND`] it takes over 20 s: the default run explores it within
/// 6 preemptions.
fn model_keyed_reserves_race(model_name: &str, burst: u64, plans: [[Reserve; 2]; 2]) {
    const KEY: u64 = 1;
    let plans: Vec<Vec<Reserve>> = plans.iter().map(|plan| plan.to_vec()).collect();
    let bounds = Bounds {
        default: 6,
        exhaustive: UNREACHED_PREEMPTION_BOUND,
    };
    explore(model_name, bounds, move || {
        let table = Arc::new(one_bucket_table(burst, WhenFull::Deny));
        let keyed_plans = plans
            .iter()
            .map(|plan| plan.iter().map(|&reserve| (KEY, reserve)).collect())
            .collect();
        let outcomes = run_concurrently(MODEL_THREAD, &table, keyed_plans, reserve_keyed);
        let further = reserve_keyed(&table, (KEY, FURTHER));
        assert_one_sequential_order(burst, &plans, &outcomes, further);
        assert_eq!(table.stats().inserts, 1, "one entry for one key");
    });
}

#[test]
fn keyed_two_threads_reserve_unit_slots_of_a_new_key() {
    model_keyed_reserves_race(
        "reserve: keyed, 2 × 2 unit reservations of a new key",
        1,
        UNIT_PLANS,
    );
}

/// Runs the race of a cancellation model on `shared`, and returns what the cancelled reservation
/// and `race` reported. One thread books the reservation to cancel (`book`), tells the other, and
/// cancels it at `cancel_ns`, before its start; the other waits to be told, so that the booking
/// is made before the race, then runs `race`. The telling is a loom atomic flag, stored with
/// Release and loaded with Acquire, the waiter yielding to loom's scheduler while it is unset (a
/// loom `Notify` would not do: its `wait` may return spuriously).
///
/// Both threads are spawned while the model's thread only joins: with the model's thread
/// cancelling a reservation it booked before spawning the other, loom explores a few executions
/// only (7 instead of 1,218 for the direct model; see [`ModelThread`]).
fn race_a_cancellation<S, R>(
    shared: &Arc<S>,
    book: for<'a> fn(&'a S) -> Reservation<'a>,
    cancel_ns: u64,
    race: fn(&S) -> R,
) -> (Booked, R)
where
    S: Send + Sync + 'static,
    R: Send + 'static,
{
    let booked = Arc::new(AtomicBool::new(false));
    let canceller = {
        let (shared, booked) = (Arc::clone(shared), Arc::clone(&booked));
        loom::thread::spawn(move || {
            let reservation = book(&shared);
            let reported = Booked::of(&reservation);
            booked.store(true, Ordering::Release);
            reservation.cancel_at(at(cancel_ns));
            reported
        })
    };
    let racer = {
        let (shared, booked) = (Arc::clone(shared), Arc::clone(&booked));
        loom::thread::spawn(move || {
            while !booked.load(Ordering::Acquire) {
                loom::thread::yield_now();
            }
            race(&shared)
        })
    };
    let cancelled = canceller.join().expect("the cancelling thread panicked");
    let raced = racer.join().expect("the racing thread panicked");
    (cancelled, raced)
}

/// The outcome of a reservation racing a cancellation, at burst 1: `first` (start 0) was booked
/// at 0 before the race, and `cancelled` (start `T`) at 0 by the cancelling thread, which
/// cancels it at 0 (before its start) while the other thread reserves a unit at 0 (`new`); then
/// a `further` unit is reserved at 0. There are two orders, and each has one outcome:
/// - the cancellation first: it gives the whole slot `T` back, `new` takes it, and the further
///   unit queues at `2T`;
/// - the reservation first: `new` queues behind `cancelled`, at `2T`; a booking behind it
///   keeps its start, so the cancellation gives nothing back, and the further unit queues at
///   `3T`.
///
/// Whichever it was, `first`, `new` and `further` (not `cancelled`, which its caller will not
/// use) are conformant: a cancellation never gives back a slot that a later booking relies on.
fn assert_reserve_cancel_outcome(first: Booked, cancelled: Booked, new: Booked, further: Booked) {
    assert_eq!(
        (first, cancelled),
        (Booked::granted(1, 0), Booked::granted(1, T))
    );
    let cancel_first = (Booked::granted(1, T), Booked::granted(1, 2 * T));
    let reserve_first = (Booked::granted(1, 2 * T), Booked::granted(1, 3 * T));
    assert!(
        (new, further) == cancel_first || (new, further) == reserve_first,
        "after a cancellation of the slot at T raced a reservation: {new:?}, then {further:?}; \
         expected {cancel_first:?} (cancellation first) or {reserve_first:?} (reservation first)"
    );
    assert_conformant(1, &[first, new, further], &(new, further));
}

/// Every unit reservation of the reservation-vs-cancellation models: `first`, `cancelled`, the
/// racing `new` one and the further one are unbounded units at 0.
const UNIT_AT_0: Reserve = Reserve::unbounded(1, 0);

/// A reservation races the cancellation of an earlier one (see
/// [`assert_reserve_cancel_outcome`]).
#[test]
fn direct_reserve_races_cancel() {
    explore(
        "reserve: direct, reserve vs cancel",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let limiter = shared_direct_limiter(gcra(1));
            let first = reserve_direct(&limiter, UNIT_AT_0);
            let (cancelled, new) = race_a_cancellation(
                &limiter,
                |limiter| limiter.reserve_with(UNIT_AT_0.request()).unwrap(),
                0,
                |limiter| reserve_direct(limiter, UNIT_AT_0),
            );
            let further = reserve_direct(&limiter, FURTHER);
            assert_reserve_cancel_outcome(first, cancelled, new, further);
        },
    );
}

/// The keyed form of [`direct_reserve_races_cancel`], on one key already in the table: the
/// cancellation goes through the keyed lookup and the driver's identity guard.
#[test]
fn keyed_reserve_races_cancel() {
    const KEY: u64 = 1;
    explore(
        "reserve: keyed, reserve vs cancel",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let table = Arc::new(one_bucket_table(1, WhenFull::Deny));
            let first = reserve_keyed(&table, (KEY, UNIT_AT_0));
            let (cancelled, new) = race_a_cancellation(
                &table,
                |table| table.reserve_with(&KEY, UNIT_AT_0.request()).unwrap(),
                0,
                |table| reserve_keyed(table, (KEY, UNIT_AT_0)),
            );
            let further = reserve_keyed(&table, (KEY, FURTHER));
            assert_reserve_cancel_outcome(first, cancelled, new, further);
            assert_eq!(table.stats().inserts, 1);
        },
    );
}

/// The key whose reservation is cancelled while its slot is handed to [`NEW_KEY`].
const CANCELLING_KEY: u64 = 100;
/// The key inserted into [`CANCELLING_KEY`]'s slot.
const NEW_KEY: u64 = 200;
/// What key 100 books, twice: 2 units at 0.
const TWO_UNITS_AT_0: Reserve = Reserve::unbounded(2, 0);

/// The stats of a full table (8 keys) into which one new key was inserted, by a reclaim or an
/// eviction.
fn one_slot_handed_over(reclaims: u64, evictions: u64) -> Stats {
    Stats {
        entries: 8,
        inserts: 9,
        reclaims,
        refused_new_keys: 0,
        untracked_new_keys: 0,
        evictions,
        removals: 0,
        ..Stats::default()
    }
}

/// Burst 2. Key 100 books 2 units at 0 (start 0), and `others` fills the rest of the bucket with
/// keys 101..108. Then the race: key 100 books 2 more units at 0 (start `2T`, its state at `4T`)
/// and cancels them at 0, while `new_key` (an operation on key 200, which takes key 100's slot)
/// runs. Returns the table, key 100's first booking, and what `new_key` reported.
fn cancel_races_a_new_key<R: Send + 'static>(
    when_full: WhenFull,
    others: impl Fn(&Table, u64),
    new_key: fn(&Table) -> R,
) -> (Arc<Table>, Booked, R) {
    let table = Arc::new(one_bucket_table(2, when_full));
    let first = reserve_keyed(&table, (CANCELLING_KEY, TWO_UNITS_AT_0));
    assert_eq!(first, Booked::granted(2, 0));
    for key in 101..108 {
        others(&table, key);
    }
    assert_eq!(table.stats().inserts, 8);
    let (cancelled, reported) = race_a_cancellation(
        &table,
        |table| {
            table
                .reserve_with(&CANCELLING_KEY, TWO_UNITS_AT_0.request())
                .unwrap()
        },
        0,
        new_key,
    );
    assert_eq!(cancelled, Booked::granted(2, 2 * T));
    (table, first, reported)
}

/// Key 100's cancellation races a reclaim of its slot. The seven other keys check 2 units at
/// `3T` (live until `5T`); at `4T` key 100's entry is fresh-equivalent (its state is `4T`, or
/// `2T` once the cancellation has given its 2 units back) and the only one: key 200's check at
/// `4T` reclaims its slot, from that fresh-equivalent state (to `5T`: one unit used).
///
/// Either the cancellation lands on key 100's entry before the reclaim claims it, or it finds
/// key 100 gone and gives nothing back. Key 200's state is never lowered by it: afterwards key
/// 200 has exactly one unit used (1 left, reset after 1 s), one reclaim, nothing refused. A
/// cancellation that lost its race to the reclaim and stored the word it had computed anyway
/// (`2T`) would leave key 200 with 2 left, as if its admission never happened.
#[test]
fn keyed_cancel_races_a_reclaim_of_its_slot() {
    explore(
        "reserve: keyed, cancel vs reclaim of its slot",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let (table, _, checked) = cancel_races_a_new_key(
                WhenFull::Deny,
                |table, key| {
                    let two_units = Request::cost(2).at(at(3 * T));
                    assert!(table.check_with(&key, two_units).unwrap().is_allowed());
                },
                |table| table.check_at(&NEW_KEY, at(4 * T)),
            );
            assert!(checked.is_allowed() && !checked.is_untracked());
            assert_eq!(checked.remaining(), 1, "{checked:?}");
            let after = table
                .peek_with(&NEW_KEY, Request::new().at(at(4 * T)))
                .unwrap();
            assert_eq!(
                (after.remaining(), after.reset_after()),
                (1, Duration::from_secs(1)),
                "key {NEW_KEY} has one unit used, whatever key {CANCELLING_KEY}'s cancellation \
                 did: {after:?}"
            );
            assert_eq!(table.stats(), one_slot_handed_over(1, 0));
        },
    );
}

/// Key 100's cancellation races an eviction of its entry. `WhenFull::EvictClosestToFresh`; the
/// seven other keys check 2 units at `5T` (live until `7T`), so key 100's entry (state `4T`, or
/// `2T` once cancelled) is the closest to fresh. Key 200 reserves a unit at 0: its insert evicts
/// key 100 and inherits its state, so key 200's booking queues behind key 100's.
///
/// - The cancellation first: key 200 inherits `2T` and starts at `T`; a further unit for key 200
///   at `2T`.
/// - The eviction first: key 200 inherits `4T` and starts at `3T`, and the cancellation finds
///   key 100 gone and gives nothing back: a further unit at `4T`.
///
/// So key 200's state is never lowered by key 100's cancellation, and key 100's first booking
/// (2 units at 0), key 100's second if not given back, and key 200's two are conformant. A
/// cancellation that lost its race to the eviction and stored the word it had computed anyway
/// (`2T`) would let the further unit start at `T`, before key 200's first.
#[test]
fn keyed_cancel_races_an_eviction_of_its_entry() {
    explore(
        "reserve: keyed, cancel vs eviction of its entry",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let (table, first, new) = cancel_races_a_new_key(
                WhenFull::EvictClosestToFresh,
                |table, key| {
                    let two_units = Request::cost(2).at(at(5 * T));
                    assert!(table.check_with(&key, two_units).unwrap().is_allowed());
                },
                |table| reserve_keyed(table, (NEW_KEY, Reserve::unbounded(1, 0))),
            );
            let further = reserve_keyed(&table, (NEW_KEY, FURTHER));
            let cancel_first = (Booked::granted(1, T), Booked::granted(1, 2 * T));
            let evict_first = (Booked::granted(1, 3 * T), Booked::granted(1, 4 * T));
            assert!(
                (new, further) == cancel_first || (new, further) == evict_first,
                "key {NEW_KEY}'s bookings {new:?}, then {further:?}; expected {cancel_first:?} \
                 (cancellation first) or {evict_first:?} (eviction first)"
            );
            let mut granted = vec![first, new, further];
            if (new, further) == evict_first {
                // Key 200 inherited key 100's second booking, never given back.
                granted.push(Booked::granted(2, 2 * T));
            }
            assert_conformant(2, &granted, &(new, further));
            assert_eq!(table.stats(), one_slot_handed_over(0, 1));
        },
    );
}

/// The key whose slot a new key's first booking reclaims, and which is checked meanwhile.
const RECLAIMED_KEY: u64 = 100;

/// A cancellation never gives a slot back a word it held under another key: undoing a key's
/// first booking (the one that inserted it) would give the slot the replaced key's word back,
/// under which a check of that key that loaded it before the insert could still land its
/// compare-and-swap (an ABA), charging its unit to a slot that no longer holds it. Two rules
/// keep it out, either enough here: a key's first booking is not cancellable, and a keyed
/// cancellation gives nothing back once its shard has reassigned a slot since the booking.
///
/// Burst 2, `WhenFull::Deny`. Key 100 used 2 units at 0 (state `2T`: fresh-equivalent at `2T`),
/// keys 101..108 2 units at `1.5T` (live until `3.5T`). Then two threads at `2T`: one reserves a
/// unit for key 200, which reclaims key 100's slot (from `2T` to `3T`, starting at once), and
/// cancels it with a reading of `1.5T` (a clock behind the reservation's, so before its start:
/// a cancellation that the table would carry out); the other checks a unit of key 100. Only one
/// of them fits: whichever lands first makes the slot live (`3T`), and the other finds no slot
/// (refused, untracked). The admitted key holds its unit (1 left, reset after 1 s), the other is
/// not in the table, and the cancellation gives nothing back.
///
/// Without both rules, the check could load `2T` under key 100's identity,
/// the reservation reclaim the slot, publish `3T` under key 200 and cancel back to `2T`, and the
/// check's compare-and-swap from `2T` then succeed: key 100 admitted, its unit charged to key
/// 200's slot, and key 100 absent from the table (its next check would start from a fresh
/// slot).
#[test]
fn keyed_a_cancelled_first_booking_never_hands_its_slot_back() {
    explore(
        "reserve: keyed, cancelled first booking vs check of the reclaimed key",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let table = Arc::new(one_bucket_table(2, WhenFull::Deny));
            let two_units = |now_ns| Request::cost(2).at(at(now_ns));
            assert!(table
                .check_with(&RECLAIMED_KEY, two_units(0))
                .unwrap()
                .is_allowed());
            for key in 101..108 {
                assert!(table
                    .check_with(&key, two_units(3 * T / 2))
                    .unwrap()
                    .is_allowed());
            }
            let reserver = {
                let table = Arc::clone(&table);
                loom::thread::spawn(move || {
                    let reservation = table
                        .reserve_with(&NEW_KEY, Reserve::unbounded(1, 2 * T).request())
                        .unwrap();
                    let booked = Booked::of(&reservation);
                    reservation.cancel_at(at(3 * T / 2));
                    booked
                })
            };
            let checker = {
                let table = Arc::clone(&table);
                loom::thread::spawn(move || table.check_at(&RECLAIMED_KEY, at(2 * T)))
            };
            let reserved = reserver.join().expect("the reserving thread panicked");
            let checked = checker.join().expect("the checking thread panicked");

            let held = |key: u64| {
                let peeked = table.peek_with(&key, Request::new().at(at(2 * T))).unwrap();
                (!peeked.is_untracked()).then(|| (peeked.remaining(), peeked.reset_after()))
            };
            let one_unit_used = Some((1, Duration::from_secs(1)));
            if checked.is_allowed() {
                assert_eq!(
                    held(RECLAIMED_KEY),
                    one_unit_used,
                    "key {RECLAIMED_KEY} was admitted ({checked:?}), but the table does not \
                     hold its unit (key {NEW_KEY}'s booking: {reserved:?})"
                );
            }
            assert!(
                checked.is_allowed() != reserved.granted,
                "one slot for two keys: exactly one of key {RECLAIMED_KEY}'s check \
                 ({checked:?}) and key {NEW_KEY}'s booking ({reserved:?}) fits"
            );
            let (admitted, refused) = if checked.is_allowed() {
                (RECLAIMED_KEY, NEW_KEY)
            } else {
                assert!(
                    checked.is_untracked(),
                    "key {RECLAIMED_KEY}'s check was denied on a state, not refused a slot: \
                     {checked:?}"
                );
                assert_eq!(reserved, Booked::granted(1, 2 * T));
                (NEW_KEY, RECLAIMED_KEY)
            };
            assert_eq!(held(admitted), one_unit_used, "key {admitted}");
            assert_eq!(held(refused), None, "key {refused} is not in the table");
            let reclaims = u64::from(admitted == NEW_KEY);
            assert_eq!(
                table.stats(),
                Stats {
                    entries: 8,
                    inserts: 8 + reclaims,
                    reclaims,
                    refused_new_keys: 1,
                    untracked_new_keys: 0,
                    evictions: 0,
                    removals: 0,
                    ..Stats::default()
                }
            );
        },
    );
}

/// The key whose booking is cancelled while a check of it stalls, and whose slot is then
/// offered to [`ARRIVING_KEY`].
const STALLED_KEY: u64 = 100;
/// The key that arrives once [`STALLED_KEY`]'s cancellation has lowered its word.
const ARRIVING_KEY: u64 = 200;

/// A stalled check of one key never lands on the entry of a key that took its slot, even when a
/// cancellation lowered the slot's word below the value the check loaded (an ABA: the loaded
/// value returning to the slot under another key's identity).
///
/// Burst 2, `WhenFull::Deny`. Keys 101..108 used 2 units at `20T` (live throughout); key 100
/// used 2 units at 0 (state `2T`). Then two threads: one books a unit for key 100 at 0 (start
/// `T`, state `3T`), cancels it at 0 (state back to `2T`), and checks key 200 twice at `2T`; the
/// other checks key 100 at `2T`, which, from the booked state `3T`, admits it (to `4T`).
///
/// Once the cancellation has lowered key 100's word to `2T`, that entry is fresh at `2T`, and key
/// 200 would reclaim it from there with a first word of `3T`: the very value the check of key
/// 100 may have loaded before the cancellation. Its compare-and-swap from `3T` would then land
/// on key 200's entry, and key 200's second unit, which its own state allows, be denied. So the
/// table must not hand the slot on while a word it held is not yet fresh: a cancellation marks
/// its slot with the word it lowered, and the slot is reclaimed only once that word is fresh
/// (here: not at `2T`, so key 200 is refused a slot). Whatever the order, a key 200 admitted
/// once at `2T` is admitted twice.
#[test]
fn keyed_a_stalled_check_never_lands_on_the_key_that_took_its_lowered_slot() {
    explore(
        "reserve: keyed, stalled check vs cancellation and reclaim of its slot",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let table = Arc::new(one_bucket_table(2, WhenFull::Deny));
            let two_units = |now_ns| Request::cost(2).at(at(now_ns));
            for key in 101..108 {
                assert!(table
                    .check_with(&key, two_units(20 * T))
                    .unwrap()
                    .is_allowed());
            }
            assert!(table
                .check_with(&STALLED_KEY, two_units(0))
                .unwrap()
                .is_allowed());
            let booked = Arc::new(AtomicBool::new(false));
            let canceller = {
                let (table, booked) = (Arc::clone(&table), Arc::clone(&booked));
                loom::thread::spawn(move || {
                    let reservation = table
                        .reserve_with(&STALLED_KEY, Reserve::unbounded(1, 0).request())
                        .unwrap();
                    assert_eq!(Booked::of(&reservation), Booked::granted(1, T));
                    booked.store(true, Ordering::Release);
                    reservation.cancel_at(at(0));
                    let first = table.check_at(&ARRIVING_KEY, at(2 * T));
                    let second = table.check_at(&ARRIVING_KEY, at(2 * T));
                    (first, second)
                })
            };
            let checker = {
                let (table, booked) = (Arc::clone(&table), Arc::clone(&booked));
                loom::thread::spawn(move || {
                    while !booked.load(Ordering::Acquire) {
                        loom::thread::yield_now();
                    }
                    table.check_at(&STALLED_KEY, at(2 * T))
                })
            };
            let (first, second) = canceller.join().expect("the cancelling thread panicked");
            let stalled = checker.join().expect("the checking thread panicked");
            assert!(
                !first.is_allowed() || second.is_allowed(),
                "key {ARRIVING_KEY} was admitted at 2T ({first:?}), then denied at 2T \
                 ({second:?}) though its state allows a second unit: key {STALLED_KEY}'s check \
                 ({stalled:?}) was charged to it"
            );
        },
    );
}

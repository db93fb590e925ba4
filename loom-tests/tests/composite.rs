//! Loom models of composite checks (src/composite): two composites racing on a member they
//! share (a global direct limit), each with a second member of its own, where a denial by the
//! second member refunds the shared one (`Quota` refund steps, through the one compare-and-swap
//! driver).
//!
//! A third model races a keyed member's refund against a check of the key whose slot the
//! refunded admission took: a keyed refund must never return a slot's word to a value it held
//! under another key (an ABA a stale check of that key would act on).
//!
//! Every check is at one frozen instant (`check_at`), so nothing refills while the threads run,
//! and the final state of every member can be written down: no member ever admits more than its
//! limit, and, after all refunds, every window member holds exactly the units of the composite
//! checks that were allowed (a GCRA member at least those, and at most one denied check's cost
//! more each time a refund met another admission).
//!
//! Run from the repository root (see loom-tests/README.md):
//! `RUSTFLAGS="--cfg nanolimit_loom" cargo test --release --manifest-path loom-tests/Cargo.toml --test composite`

use loom::sync::Arc;
use loom::thread;
use nanolimit::composite::Composite;
use nanolimit::keyed::Exact;
use nanolimit::{
    FixedWindow, Gcra, KeyedLimiter, Limiter, ManualClock, Quota, Request, Timestamp, WhenFull,
};
use nanolimit_loom_tests::{at, explore, UNREACHED_PREEMPTION_BOUND};

/// The instant of every check: nothing refills while the threads run.
const FROZEN_NOW_NS: u64 = 250_000_000;

/// The members: one shared global limit, and each thread's own.
struct Members<Q: Quota> {
    global: Limiter<Q, ManualClock>,
    own: [Limiter<Q, ManualClock>; 2],
}

/// Units a member holds at the frozen instant: its limit less what remains.
fn held<Q: Quota>(limiter: &Limiter<Q, ManualClock>, now: Timestamp) -> u64 {
    let remaining = limiter
        .peek_with(Request::cost(0).at(now))
        .unwrap()
        .remaining();
    limiter.quota().limit() - remaining
}

/// Thread 0 checks its composite (global, own 0) `checks[0]` times, thread 1 its composite
/// (global, own 1) `checks[1]` times, concurrently; `own_used[i]` units of own `i` are used
/// before. Returns how many checks of each thread were allowed, and how many denied.
fn race<Q: Quota>(members: &Arc<Members<Q>>, checks: [usize; 2]) -> [(u64, u64); 2] {
    let now = at(FROZEN_NOW_NS);
    let handles: Vec<_> = (0..2)
        .map(|thread_index| {
            let members = Arc::clone(members);
            thread::spawn(move || {
                let limits = Composite::new((&members.global, &members.own[thread_index]));
                let (mut allowed, mut denied) = (0, 0);
                for _ in 0..checks[thread_index] {
                    if limits.check_at(&(), now).is_allowed() {
                        allowed += 1;
                    } else {
                        denied += 1;
                    }
                }
                (allowed, denied)
            })
        })
        .collect();
    let mut outcomes = [(0, 0); 2];
    for (outcome, handle) in outcomes.iter_mut().zip(handles) {
        *outcome = handle.join().unwrap();
    }
    outcomes
}

/// Builds the members inside the model: a global limit of `global`, own limits of `own`, own 0
/// fully used beforehand (so its composite's every check takes a global unit, then is denied
/// and refunds it).
fn members<Q: Quota>(global: Q, own: Q) -> Arc<Members<Q>> {
    let members = Members {
        global: Limiter::with_clock(global, ManualClock::new()),
        own: [
            Limiter::with_clock(own, ManualClock::new()),
            Limiter::with_clock(own, ManualClock::new()),
        ],
    };
    let now = at(FROZEN_NOW_NS);
    while members.own[0].check_at(now).is_allowed() {}
    Arc::new(members)
}

/// Fixed windows: a refund of a window count is always exact, so the shared global window
/// ends holding exactly the allowed checks' units, whatever the interleaving.
#[test]
fn fixed_window_composites_sharing_a_global_member_conserve_its_units() {
    explore(
        "fixed_window_composites_sharing_a_global_member_conserve_its_units",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let quota = |limit| FixedWindow::per_second(limit).unwrap();
            let members = members(quota(2), quota(1));
            let now = at(FROZEN_NOW_NS);
            let [(allowed_0, denied_0), (allowed_1, denied_1)] = race(&members, [1, 2]);
            // Thread 0's own limit is used up: it is always denied (after a refund).
            assert_eq!((allowed_0, denied_0), (0, 1));
            // Thread 1: its own limit of 1 admits once; the global one never runs out for it
            // (thread 0 holds at most one of its two units, and only transiently).
            assert_eq!((allowed_1, denied_1), (1, 1));
            assert_eq!(held(&members.global, now), allowed_0 + allowed_1);
            assert_eq!(held(&members.own[0], now), 1);
            assert_eq!(held(&members.own[1], now), allowed_1);
        },
    );
}

/// GCRA: a refund is exact while the shared member's word is the one the admission wrote;
/// after another admission it gives nothing back. The global member never over-admits, holds
/// at least the allowed checks' units, and at most one more per denied check.
#[test]
fn gcra_composites_sharing_a_global_member_never_over_admit() {
    explore(
        "gcra_composites_sharing_a_global_member_never_over_admit",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let quota = |burst| Gcra::per_second(1).unwrap().with_burst(burst).unwrap();
            let members = members(quota(2), quota(1));
            let now = at(FROZEN_NOW_NS);
            let [(allowed_0, denied_0), (allowed_1, denied_1)] = race(&members, [1, 2]);
            assert_eq!((allowed_0, denied_0), (0, 1));
            assert!(
                allowed_1 <= 1,
                "thread 1's own burst of 1 admitted {allowed_1}"
            );
            let global_held = held(&members.global, now);
            let allowed = allowed_0 + allowed_1;
            assert!(
                global_held >= allowed,
                "global holds {global_held} of {allowed} admitted"
            );
            assert!(
                global_held <= allowed + denied_0 + denied_1,
                "global holds {global_held}: more than {allowed} admitted and one per denial"
            );
            assert!(global_held <= 2);
            assert_eq!(held(&members.own[1], now), allowed_1);
        },
    );
}

/// A one-bucket table (8 slots), `Exact` `u64` keys, fixed seed, new keys refused when full.
fn one_bucket_table(quota: FixedWindow) -> KeyedLimiter<u64, FixedWindow, ManualClock, Exact> {
    KeyedLimiter::<u64, FixedWindow>::builder(quota)
        .capacity(1)
        .shards(1)
        .seed(7)
        .when_full(WhenFull::Deny)
        .clock(ManualClock::new())
        .key_mode::<Exact>()
        .build()
        .expect("a one-bucket table")
}

/// Units `key` holds in `table` at `now` (0 for a key the table does not hold).
fn held_by_key(
    table: &KeyedLimiter<u64, FixedWindow, ManualClock, Exact>,
    key: u64,
    now: Timestamp,
) -> u64 {
    let remaining = table
        .peek_with(&key, Request::cost(0).at(now))
        .unwrap()
        .remaining();
    table.quota().limit() - remaining
}

/// Fixed windows of 1 s, 2 units per key. Keys 101..=108 fill the table's 8 slots in the
/// first window (slot 0 is key 101's); in the second window, a composite check of key 101
/// (with the global limit used up) takes a unit and refunds it, which leaves key 101's word at
/// "window 1, count 0": fresh-equivalent, and reclaimable. Then, at 1.5 s, thread 0's
/// composite check of the new key 100 reclaims slot 0 (its first state "window 1, count 1")
/// and is denied by the global limit, while thread 1 checks key 101. A refund of key 100's
/// admission would return slot 0 to "window 1, count 0", the very word thread 1 may have
/// loaded as key 101's: its compare-and-swap would then land on key 100's entry. The shard's
/// reassignment count forbids that refund (key 100's admission reclaimed a slot).
#[test]
fn a_keyed_refund_never_returns_a_slot_to_another_key_s_word() {
    explore(
        "a_keyed_refund_never_returns_a_slot_to_another_key_s_word",
        UNREACHED_PREEMPTION_BOUND,
        || {
            let first_window = at(500_000_000);
            let now = at(1_500_000_000);
            let table = one_bucket_table(FixedWindow::per_second(2).unwrap());
            let global =
                Limiter::with_clock(FixedWindow::per_second(1).unwrap(), ManualClock::new());
            for key in 101..=108 {
                assert!(table.check_at(&key, first_window).is_allowed());
            }
            assert!(global.check_at(now).is_allowed());
            let shared = Arc::new((table, global));
            {
                let limits = Composite::new((&shared.0, &shared.1));
                assert!(limits.check_at(&101, now).is_denied());
            }
            assert_eq!(
                held_by_key(&shared.0, 101, now),
                0,
                "key 101 refunded before the race"
            );

            let composite_thread = {
                let shared = Arc::clone(&shared);
                thread::spawn(move || {
                    let limits = Composite::new((&shared.0, &shared.1));
                    limits.check_at(&100, now).is_allowed()
                })
            };
            let check_thread = {
                let shared = Arc::clone(&shared);
                thread::spawn(move || shared.0.check_at(&101, now).is_allowed())
            };
            let composite_allowed = composite_thread.join().unwrap();
            let check_allowed = check_thread.join().unwrap();

            let (table, global) = (&shared.0, &shared.1);
            assert!(!composite_allowed, "the global limit was used up");
            assert!(
                check_allowed,
                "key 101 always finds a slot: 7 others are fresh"
            );
            assert_eq!(
                held_by_key(table, 101, now),
                1,
                "key 101 was admitted, so it holds its one unit (not another key's slot)"
            );
            // Key 100's admission reclaimed a slot: its unit is kept (the stated
            // under-admission), never given back onto a word another key held.
            assert_eq!(
                held_by_key(table, 100, now),
                1,
                "key 100's reclaiming admission"
            );
            assert_eq!(held(global, now), 1);
        },
    );
}

//! Loom models of composite checks (src/composite): two composites racing on a member they
//! share (a global direct limit), each with a second member of its own, where a denial by the
//! second member refunds the shared one (`Quota` refund steps, through the one compare-and-swap
//! driver).
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
use nanolimit::{FixedWindow, Gcra, Limiter, ManualClock, Quota, Request, Timestamp};
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

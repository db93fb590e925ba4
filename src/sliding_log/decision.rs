//! A sliding log's decisions: the one [`Decision`], its figures counted on the log when the
//! decision is made (a log's units are records beside its position word, so the figures are
//! not a function of one word).

use super::ring::{Log, View};
use super::SlidingLog;
use crate::engine::decision::{Decision, Outcome};
use crate::engine::judge::LogFigures;

/// The decision made on `view` for `cost` units: `recorded` if a check admitted them (they are
/// then the latest units), not for a denial or a peek. `remaining` is counted on `log` now, at
/// the decision's time, the request's own units included when recorded.
#[inline]
pub(super) fn on_log<const KEYED: bool>(
    view: View,
    cost: u64,
    recorded: bool,
    quota: SlidingLog,
    log: Log<'_, KEYED>,
) -> Decision<SlidingLog> {
    let (limit, window_ns) = (quota.limit(), quota.window_ns());
    // A direct log's position word is a keyed one without the reuse flag.
    let in_window =
        Log::<true>::of(log.next(), log.records()).units_in_window(limit, window_ns, view.now_ns);
    let figures = LogFigures {
        now_ns: view.now_ns,
        remaining: limit.saturating_sub(in_window),
        reset_after_ns: match recorded {
            true => window_ns,
            false => view.reset_after_ns,
        },
        retry_after_ns: view.retry_after_ns,
    };
    let outcome = match view.fits {
        true => Outcome::Allowed,
        false => Outcome::Denied,
    };
    Decision::of_log(outcome, cost, quota, figures)
}

/// The decision for a new key judged without a log of its own at `now_ns`: on an empty log (a
/// peek that found a slot free for it), or by a full keyed table's policy (`untracked`:
/// admitted untracked, `recorded` if by a check, or refused with `retry_after_ns` until a slot
/// frees).
pub(super) fn without_log(
    allowed: bool,
    recorded: bool,
    untracked: bool,
    cost: u64,
    quota: SlidingLog,
    now_ns: u64,
    retry_after_ns: u64,
) -> Decision<SlidingLog> {
    let outcome = match (allowed, untracked) {
        (true, false) => Outcome::Allowed,
        (true, true) => Outcome::Untracked,
        (false, _) => Outcome::RefusedUntilAdmitted,
    };
    let figures = LogFigures {
        now_ns,
        remaining: match (allowed, recorded) {
            (false, _) => 0,
            (true, true) => quota.limit() - cost,
            (true, false) => quota.limit(),
        },
        // A refused new key gets its whole limit once a slot frees for it.
        reset_after_ns: match (recorded, allowed) {
            (true, _) => quota.window_ns(),
            (false, false) => retry_after_ns,
            (false, true) => 0,
        },
        retry_after_ns,
    };
    Decision::of_log(outcome, cost, quota, figures)
}

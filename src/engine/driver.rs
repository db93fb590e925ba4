//! The one compare-and-swap driver that applies any algorithm's step function to a state word,
//! for direct and keyed limiters alike.

use crate::quota::Step;
use crate::sync::{AtomicU64, Ordering};

/// What the driver did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The step admitted the request and `current` was stored.
    Allowed { current: u64 },
    /// The step denied the request given `observed`; nothing was written.
    Denied { observed: u64 },
    /// The guard rejected an observed word: the caller must start over (keyed limiters use this
    /// when the slot no longer belongs to their key).
    Aborted,
}

/// What one attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The step admitted the request and `current` was stored.
    Allowed { current: u64 },
    /// The step denied the request; nothing was written.
    Denied,
    /// The word was no longer the observed value: it is `actual` now, and nothing was written.
    Lost { actual: u64 },
}

/// One attempt: stores `step`'s new word if the state still holds `observed`, the value `step`
/// was computed from (loaded with Acquire ordering, or returned by an earlier lost attempt).
///
/// Keyed limiters make one attempt on their fast path and fall back to [`apply`] (through a
/// fresh lookup) when it is lost; [`apply`] is made of attempts.
#[inline]
pub(crate) fn attempt(state: &AtomicU64, observed: u64, step: Step) -> Attempt {
    let Step::Allow(new) = step else {
        return Attempt::Denied;
    };
    // ORDERING: success AcqRel: Release continues the release sequence of the store that
    // published a keyed slot's identity (so a later Acquire load of any value in it still sees
    // that identity), and Acquire orders a keyed caller's identity re-check after it. Failure
    // Acquire: the returned value is examined by the next step (and, for keyed slots, its
    // identity re-read), which needs the same visibility as the initial Acquire load. Direct
    // limiters only need atomicity; on x86 these orderings cost nothing extra.
    match state.compare_exchange_weak(observed, new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Attempt::Allowed { current: new },
        Err(actual) => Attempt::Lost { actual },
    }
}

/// Applies `step` to `state`, starting from `observed` (a value the caller just loaded with
/// Acquire ordering), until the store succeeds or the step denies.
///
/// `step` returns `None` to abort; it is called again with the fresh value after every lost
/// race, so the decision is always made on the value that is replaced. Denials are never
/// written: a saturated limiter is read-only and stays in every core's cache. Callers route
/// zero-cost checks (which change nothing) to a plain load instead.
#[inline]
pub(crate) fn apply(
    state: &AtomicU64,
    mut observed: u64,
    mut step: impl FnMut(u64) -> Option<Step>,
) -> Applied {
    loop {
        let Some(next) = step(observed) else {
            return Applied::Aborted;
        };
        match attempt(state, observed, next) {
            Attempt::Allowed { current } => return Applied::Allowed { current },
            Attempt::Denied => return Applied::Denied { observed },
            Attempt::Lost { actual } => observed = actual,
        }
    }
}

/// [`apply`] for a word that needs no guard (no identity to re-check: an in-flight limiter's
/// word, a stripe's): applies `step` from `observed` until the store succeeds or the step
/// denies. The word stored, or the word the step denied.
#[inline]
pub(crate) fn apply_unguarded(
    state: &AtomicU64,
    mut observed: u64,
    mut step: impl FnMut(u64) -> Step,
) -> Result<u64, u64> {
    loop {
        match attempt(state, observed, step(observed)) {
            Attempt::Allowed { current } => return Ok(current),
            Attempt::Denied => return Err(observed),
            Attempt::Lost { actual } => observed = actual,
        }
    }
}

//! The shared compare-and-swap driver applied to a keyed slot, behind a guard that re-checks the
//! slot's identity after every lost race: what a check's slow path, an undo and a key found by
//! its insert after all go through (`protocol.rs` says why it is sound).

use super::slot::{SlotOps, RESERVED};
use crate::engine::decision::{Judged, Outcome};
use crate::engine::driver::{self, Applied};
use crate::engine::operation::Operation;
use crate::quota::SlotState;
use crate::sync::Ordering;

/// Runs the shared CAS driver on a slot found holding `identity` with state `observed`: an
/// [`Outcome::Allowed`] or [`Outcome::Denied`] judgement. Returns `None` if the slot was
/// reassigned to another key before our update landed.
#[inline]
pub(super) fn apply_to_slot<S: SlotOps, Q: SlotState>(
    operation: impl Operation<Q>,
    slot: &S,
    identity: &S::Identity,
    mut observed: u64,
    quota: &Q,
    cost: u64,
    now: Q::Instant,
) -> Option<Judged<Q::Instant>> {
    // `find` already checked the identity for the first observed value; after a lost race, or
    // a denial the state did not confirm, the new value may belong to another key.
    let mut identity_checked = true;
    loop {
        let guard = |state: u64| {
            if !identity_checked && (state >= RESERVED || !slot.holds(identity)) {
                return None;
            }
            identity_checked = false;
            Some(operation.step(quota, state, now, cost))
        };
        match driver::apply(slot.state(), observed, guard) {
            Applied::Allowed { current } => {
                return Some(Judged::new(Outcome::Allowed, current, now));
            }
            Applied::Denied {
                observed: denied_on,
            } if slot.unchanged_since(denied_on) => {
                return Some(Judged::new(Outcome::Denied, denied_on, now));
            }
            Applied::Denied { .. } => {
                // ORDERING: Acquire, as the lookup's load: the identity is checked against
                // this value next.
                observed = slot.state().load(Ordering::Acquire);
            }
            Applied::Aborted => return None,
        }
    }
}

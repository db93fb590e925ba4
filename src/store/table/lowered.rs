//! The slots of a shard whose word an undo lowered (a reservation's cancellation, a composite
//! check's refund), each with the highest word it held: kept under the shard's insert lock,
//! so that no slot is handed to another key while a word it held is still live.
//!
//! Why: a check that loaded a word of its key, then stalled, lands its compare-and-swap on
//! whatever entry holds that very value when it resumes. Words only grow, but for undos; a
//! slot taken from an entry is taken from a word fresh at the new key's time, and the new key's
//! words all lie above it. An undo breaks the first half: the word drops below values the slot
//! held, and the entry may be fresh at a time some of those values are not, so a new key could
//! write one of them again. So a slot is judged by the highest word it held since it was last
//! claimed (its mark's, or its word if higher): fresh only when that is, and a new key in it
//! starts above that (`protocol.rs`, "Why it is free of ABA").
//!
//! A shard keeps [`MARKS`] marks. A mark is dropped when its slot is claimed, when the slot's
//! word has risen to it again, or when its word is fresh (the shard's floor is then raised to
//! that word's fresh moment, so that no new key is judged before it). An undo that finds no
//! room for its mark gives nothing back, as an undo that finds its key gone.

use super::SlotPosition;

/// Marks per shard: the undos whose slots may still be live at once, per shard. Undos are rare
/// beside checks, and a mark lasts only until its slot's word passes it or is fresh.
pub(crate) const MARKS: usize = 8;

/// One lowered slot: where it is, and the highest word it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    /// The slot's bucket (in the whole table).
    bucket: u32,
    /// The slot's index in its bucket.
    index: u8,
    /// The highest word the slot held since it was last claimed.
    high: u64,
}

impl Mark {
    fn is_at(&self, at: SlotPosition) -> bool {
        self.bucket as usize == at.bucket && usize::from(self.index) == at.index
    }
}

/// A shard's lowered slots, guarded by its insert lock.
#[derive(Debug, Default)]
pub(crate) struct LoweredSlots {
    marks: [Option<Mark>; MARKS],
}

/// Why an undo may not lower a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRoom;

impl LoweredSlots {
    /// The word a slot at `at` holding `state` is judged by: the higher of `state` and its
    /// mark's.
    #[inline]
    pub(crate) fn judged_word(&self, at: SlotPosition, state: u64) -> u64 {
        self.marks
            .iter()
            .flatten()
            .find(|mark| mark.is_at(at))
            .map_or(state, |mark| mark.high.max(state))
    }

    /// Whether any slot is marked: the survey skips the marks otherwise.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.marks.iter().all(Option::is_none)
    }

    /// Forgets the mark of the slot at `at`: it was claimed for a new key, which starts above
    /// its high word.
    pub(crate) fn clear(&mut self, at: SlotPosition) {
        for mark in &mut self.marks {
            if mark.is_some_and(|mark| mark.is_at(at)) {
                *mark = None;
            }
        }
    }

    /// Makes room for a mark of the slot at `at`: there is one already, or a free place, or a
    /// mark `obsolete` says may go (given its position and high word; it raises the shard's
    /// floor as it must) is dropped. Else [`NoRoom`].
    pub(crate) fn make_room(
        &mut self,
        at: SlotPosition,
        mut obsolete: impl FnMut(SlotPosition, u64) -> bool,
    ) -> Result<(), NoRoom> {
        if self.marks.iter().flatten().any(|mark| mark.is_at(at)) {
            return Ok(());
        }
        for mark in &mut self.marks {
            let Some(held) = *mark else { return Ok(()) };
            let position = SlotPosition {
                bucket: held.bucket as usize,
                index: usize::from(held.index),
            };
            if obsolete(position, held.high) {
                *mark = None;
                return Ok(());
            }
        }
        Err(NoRoom)
    }

    /// Records that the slot at `at` held `high` before an undo lowered it. Only after
    /// [`make_room`](Self::make_room) for `at` succeeded, under the same lock.
    pub(crate) fn record(&mut self, at: SlotPosition, high: u64) {
        if let Some(mark) = self.marks.iter_mut().flatten().find(|mark| mark.is_at(at)) {
            mark.high = mark.high.max(high);
            return;
        }
        let free = self.marks.iter_mut().find(|mark| mark.is_none());
        debug_assert!(
            free.is_some(),
            "a mark is recorded only where room was made"
        );
        if let Some(free) = free {
            *free = Some(Mark {
                // Bucket numbers fit 32 bits and indices 8 (`Table::new`, `SLOTS_PER_BUCKET`).
                bucket: at.bucket as u32,
                index: at.index as u8,
                high,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(bucket: usize, index: usize) -> SlotPosition {
        SlotPosition { bucket, index }
    }

    #[test]
    fn a_marked_slot_is_judged_by_its_highest_word_until_cleared() {
        let mut lowered = LoweredSlots::default();
        assert!(lowered.is_empty());
        assert_eq!(lowered.judged_word(at(3, 1), 10), 10);
        lowered.make_room(at(3, 1), |_, _| false).unwrap();
        lowered.record(at(3, 1), 40);
        assert_eq!(lowered.judged_word(at(3, 1), 10), 40);
        assert_eq!(lowered.judged_word(at(3, 1), 50), 50);
        // Another slot, and the same slot's next undo: the highest stays.
        assert_eq!(lowered.judged_word(at(3, 2), 10), 10);
        lowered.make_room(at(3, 1), |_, _| false).unwrap();
        lowered.record(at(3, 1), 30);
        assert_eq!(lowered.judged_word(at(3, 1), 10), 40);
        lowered.clear(at(3, 1));
        assert_eq!(lowered.judged_word(at(3, 1), 10), 10);
        assert!(lowered.is_empty());
    }

    #[test]
    fn a_full_shard_drops_only_obsolete_marks_else_has_no_room() {
        let mut lowered = LoweredSlots::default();
        for index in 0..MARKS {
            lowered.make_room(at(0, index), |_, _| false).unwrap();
            lowered.record(at(0, index), 100 + index as u64);
        }
        assert_eq!(lowered.make_room(at(1, 0), |_, _| false), Err(NoRoom));
        // A slot already marked needs no room.
        assert_eq!(lowered.make_room(at(0, 3), |_, _| false), Ok(()));
        let mut offered = Vec::new();
        let made = lowered.make_room(at(1, 0), |position, high| {
            offered.push((position.index, high));
            high == 105
        });
        assert_eq!(made, Ok(()));
        assert_eq!(offered.last(), Some(&(5, 105)));
        assert_eq!(lowered.judged_word(at(0, 5), 0), 0);
        lowered.record(at(1, 0), 7);
        assert_eq!(lowered.judged_word(at(1, 0), 0), 7);
        assert_eq!(lowered.judged_word(at(0, 4), 0), 104);
    }
}

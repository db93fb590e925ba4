//! One-byte lookup hints, eight to a word: one word per bucket, byte `i` for slot `i`.
//!
//! A hint is 8 bits of a key's hash that placement does not use (never 0, which marks an empty
//! byte). A lookup compares all eight hints of a bucket at once and reads only the slots whose
//! hint matches, so it touches one word of hints and, usually, one slot, rather than every slot
//! of two buckets. Hints only filter: the identity words decide, and a stale read of a hint
//! word costs a trip to the locked slow path, where the hint words are exact (every writer of
//! one holds the shard's insert lock): there a key's own entry is among the slots whose byte
//! is its hint, and a vacant slot or a removed key's entry among those whose byte is 0.

/// 0x01 in every byte.
const BYTES_ONES: u64 = 0x0101_0101_0101_0101;
/// 0x7f in every byte.
const BYTES_LOW_SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The slots of a bucket whose hint byte equals a key's: a bit set per matching byte.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HintMatches(u64);

impl HintMatches {
    /// Every slot of a bucket, as if every hint matched.
    pub(crate) const ALL: HintMatches = HintMatches(0x8080_8080_8080_8080);

    /// The bytes of `hint_word` equal to `hint`, found without a branch per byte.
    #[inline]
    pub(crate) fn of(hint_word: u64, hint: u8) -> HintMatches {
        let differences = hint_word ^ (u64::from(hint) * BYTES_ONES);
        // The high bit of each byte is set iff that byte of `differences` is 0 (no carry can
        // cross a byte: each byte's low seven bits plus 0x7f stay below 0x100).
        HintMatches(
            !(((differences & BYTES_LOW_SEVEN) + BYTES_LOW_SEVEN) | differences | BYTES_LOW_SEVEN),
        )
    }
}

impl Iterator for HintMatches {
    /// A slot index within the bucket.
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let slot = (self.0.trailing_zeros() / 8) as usize;
        self.0 &= self.0 - 1;
        Some(slot)
    }
}

/// Slot `slot`'s hint byte in `hint_word` (0: no key's).
#[inline]
pub(crate) fn hint_at(hint_word: u64, slot: usize) -> u8 {
    (hint_word >> (8 * slot)) as u8
}

/// `hint_word` with slot `slot`'s hint byte replaced by `hint`.
#[inline]
pub(crate) fn with_hint(hint_word: u64, slot: usize, hint: u8) -> u64 {
    let shift = 8 * slot;
    (hint_word & !(0xff << shift)) | (u64::from(hint) << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_are_exactly_the_equal_bytes() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let hint = (seed >> 56) as u8;
            // Words with several copies of the hint, and bytes one bit away from it.
            let word = seed & 0x00ff_00ff_ff00_ff00 | (u64::from(hint) * 0x0100_0001_0000_0100);
            let expected: Vec<usize> = (0..8)
                .filter(|&slot| (word >> (8 * slot)) as u8 == hint)
                .collect();
            let found: Vec<usize> = HintMatches::of(word, hint).collect();
            assert_eq!(found, expected, "word {word:#018x}, hint {hint:#04x}");
        }
    }

    #[test]
    fn all_is_every_slot_in_order() {
        assert_eq!(
            HintMatches::ALL.collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
    }

    #[test]
    fn setting_a_hint_changes_only_its_byte() {
        let word = 0x8877_6655_4433_2211u64;
        assert_eq!(with_hint(word, 0, 0xaa), 0x8877_6655_4433_22aa);
        assert_eq!(with_hint(word, 7, 0xaa), 0xaa77_6655_4433_2211);
    }

    #[test]
    fn a_slot_s_hint_is_its_byte_and_reads_back_what_was_set() {
        let word = 0x8877_6655_4433_2211u64;
        assert_eq!(hint_at(word, 0), 0x11);
        assert_eq!(hint_at(word, 7), 0x88);
        for slot in 0..8 {
            let set = with_hint(word, slot, 0xaa);
            assert_eq!(hint_at(set, slot), 0xaa);
            for other in (0..8).filter(|&other| other != slot) {
                assert_eq!(hint_at(set, other), hint_at(word, other));
            }
        }
    }
}

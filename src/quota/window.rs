//! What the two window algorithms share: the validated window length and a division-free way
//! to turn a clock reading into (window index, time elapsed in that window).

use super::QUOTA_WORDS;
use crate::clock::Timestamp;
use crate::quota::QuotaError;
use core::time::Duration;

const HORIZON_NS: u64 = Timestamp::HORIZON.as_ns();

/// Dividends are below 2^60 (clock readings are at most 2^59).
const DIVIDEND_BITS: u32 = 60;
/// Windows of at least 16 ns make the reciprocal's shift at least 64 (`l >= 4`).
const MIN_SUPPORTED_NS: u64 = 16;

/// A window length with a precomputed reciprocal, so that `now / window_ns` is a multiply and a
/// shift (Granlund–Montgomery: with `l = ceil(log2 d)` and `m = ceil(2^(60+l) / d)`,
/// `floor(n / d) = floor(n·m / 2^(60+l))` for every `n < 2^60`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct WindowLength {
    pub(crate) window_ns: u64,
    reciprocal: u64,
    /// The reciprocal's shift less 64: applied to the product's high word (the shift is at
    /// least 64, so its low word never counts).
    reciprocal_high_shift: u32,
}

/// "Now" for window algorithms: which window, and how far into it. Made only by a quota's
/// [`instant`](crate::Quota::instant), so the elapsed time is always below the window.
///
/// ```
/// use nanolimit::{FixedWindow, Quota, Timestamp};
/// use std::time::Duration;
///
/// let quota = FixedWindow::new(10, Duration::from_secs(1))?;
/// let now = quota.instant(Timestamp::from_ns(2_500_000_000)?);
/// assert_eq!((now.window_index(), now.elapsed_ns()), (2, 500_000_000));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowInstant {
    pub(crate) window_index: u64,
    pub(crate) elapsed_ns: u64,
}

impl WindowInstant {
    /// Whole windows since the clock's origin.
    pub fn window_index(&self) -> u64 {
        self.window_index
    }

    /// Nanoseconds since the start of that window (below the window length).
    pub fn elapsed_ns(&self) -> u64 {
        self.elapsed_ns
    }
}

impl WindowLength {
    /// Validates a window quota: `1 <= limit <= max_limit` and `min_ns <= window <= horizon`.
    pub(crate) const fn with_limit(
        limit: u64,
        max_limit: u64,
        window: Duration,
        min_ns: u64,
    ) -> Result<WindowLength, QuotaError> {
        if limit == 0 {
            return Err(QuotaError::ZeroLimit);
        }
        if limit > max_limit {
            return Err(QuotaError::LimitTooLarge {
                requested: limit,
                max: max_limit,
            });
        }
        WindowLength::new(window, min_ns)
    }

    pub(crate) const fn new(window: Duration, min_ns: u64) -> Result<WindowLength, QuotaError> {
        let min_ns = if min_ns < MIN_SUPPORTED_NS {
            MIN_SUPPORTED_NS
        } else {
            min_ns
        };
        let window_ns = window.as_nanos();
        if window_ns == 0 {
            return Err(QuotaError::ZeroPeriod);
        }
        if window_ns < min_ns as u128 {
            return Err(QuotaError::WindowTooShort {
                min: Duration::from_nanos(min_ns),
            });
        }
        if window_ns > HORIZON_NS as u128 {
            return Err(QuotaError::PeriodTooLong {
                max: Duration::from_nanos(HORIZON_NS),
            });
        }
        Ok(WindowLength::of_ns(window_ns as u64))
    }

    /// The window of a "burst then never" quota: one nanosecond longer than the horizon, so
    /// every reading a clock can make falls in window 0, and a count never resets.
    pub(crate) const BEYOND_HORIZON: WindowLength = WindowLength::of_ns(HORIZON_NS + 1);

    /// A window of `window_ns` (at least 16, at most the horizon plus one) with its reciprocal.
    const fn of_ns(window_ns: u64) -> WindowLength {
        // l = ceil(log2(window_ns)), at most 60, and at least 4 for the windows quotas allow
        // (at least 1 µs), so the shift is at least 64 (see `instant`).
        let mut l = 0;
        while (1u64 << l) < window_ns {
            l += 1;
        }
        let shift = DIVIDEND_BITS + l;
        let reciprocal = (1u128 << shift).div_ceil(window_ns as u128);
        WindowLength {
            window_ns,
            // At most 2^60 + 1: fits u64.
            reciprocal: reciprocal as u64,
            reciprocal_high_shift: shift - 64,
        }
    }

    /// The largest distance, in windows modulo `index_mask + 1`, from a stored window index to
    /// now's that a window algorithm reads as time moving forward; larger ones are a reading
    /// behind the stored window (a clock that stepped back, or one taken before a preemption).
    ///
    /// If every window index up to the time horizon fits in the mask with `backward_windows`
    /// to spare, no index ever wraps: a forward distance is at most the last index, and every
    /// larger distance is a reading behind the stored window, whatever its lag. Otherwise
    /// indices wrap, and the split gives `backward_windows` to readings behind and the rest to
    /// keys idle for a long time.
    pub(crate) const fn forward_windows(&self, index_mask: u64, backward_windows: u64) -> u64 {
        let last_index = HORIZON_NS / self.window_ns;
        let wrapping_split = index_mask - backward_windows;
        if last_index < wrapping_split {
            last_index
        } else {
            wrapping_split
        }
    }

    /// The length as words, for a quota's encoding (`Encoded`).
    pub(crate) fn to_words(self) -> [u64; 3] {
        [
            self.window_ns,
            self.reciprocal,
            u64::from(self.reciprocal_high_shift),
        ]
    }

    /// A window quota's encoding (`Encoded`): its limit, its forward-window bound and this
    /// length, the same layout for both window algorithms.
    pub(crate) fn quota_words(self, limit: u64, forward_windows: u64) -> [u64; QUOTA_WORDS] {
        let [window_ns, reciprocal, reciprocal_high_shift] = self.to_words();
        [
            limit,
            forward_windows,
            window_ns,
            reciprocal,
            reciprocal_high_shift,
            0,
            0,
        ]
    }

    /// The limit, forward-window bound and length [`quota_words`](Self::quota_words) made
    /// `words` of.
    pub(crate) fn from_quota_words(words: [u64; QUOTA_WORDS]) -> (u64, u64, WindowLength) {
        let [limit, forward_windows, window_ns, reciprocal, reciprocal_high_shift, ..] = words;
        let length = WindowLength::from_words([window_ns, reciprocal, reciprocal_high_shift]);
        (limit, forward_windows, length)
    }

    /// The length [`to_words`](Self::to_words) made `words` of.
    pub(crate) fn from_words([window_ns, reciprocal, reciprocal_high_shift]: [u64; 3]) -> Self {
        WindowLength {
            window_ns,
            reciprocal,
            // Made from a `u32` by `to_words`.
            reciprocal_high_shift: reciprocal_high_shift as u32,
        }
    }

    /// The rule for window tiers: a window quota shares another's state only with the same
    /// window length (the counts are per window).
    pub(crate) fn shares_units_with(&self, base: &WindowLength) -> bool {
        self.window_ns == base.window_ns
    }

    /// The rebase of a window quota onto `base`'s state: itself, or an error.
    pub(crate) fn rebase<Q: Copy>(&self, quota: Q, base: &WindowLength) -> Result<Q, QuotaError> {
        if self.shares_units_with(base) {
            Ok(quota)
        } else {
            Err(QuotaError::IncompatibleQuota)
        }
    }

    /// `now` as nanoseconds since the clock's origin: the window quotas' time word.
    #[inline]
    pub(crate) fn time_word(&self, now: WindowInstant) -> u64 {
        now.window_index * self.window_ns + now.elapsed_ns
    }

    /// `now`, or the instant `time_word_ns` nanoseconds after the origin if that is later.
    #[inline]
    pub(crate) fn no_earlier_than(&self, now: WindowInstant, time_word_ns: u64) -> WindowInstant {
        if time_word_ns <= self.time_word(now) {
            return now;
        }
        WindowInstant {
            window_index: time_word_ns / self.window_ns,
            elapsed_ns: time_word_ns % self.window_ns,
        }
    }

    /// The start of the window `windows_back` windows before `now`'s, plus `windows_on`, as a
    /// time word (windows counted in full, not in the state's wrapping index), or 0 if that
    /// reaches before the origin.
    #[inline]
    pub(crate) fn window_start_word(
        &self,
        now: WindowInstant,
        windows_back: u64,
        windows_on: u64,
    ) -> u64 {
        (now.window_index + windows_on)
            .checked_sub(windows_back)
            .map_or(0, |index| index * self.window_ns)
    }

    #[inline]
    pub(crate) fn instant(&self, now: Timestamp) -> WindowInstant {
        let now_ns = now.as_ns();
        // The product's high word, shifted by the rest: one multiply and one shift of 64 bits.
        let product_high = ((now_ns as u128 * self.reciprocal as u128) >> 64) as u64;
        let window_index = product_high >> self.reciprocal_high_shift;
        WindowInstant {
            window_index,
            elapsed_ns: now_ns - window_index * self.window_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reading_falls_in_the_first_window_beyond_the_horizon() {
        let length = WindowLength::BEYOND_HORIZON;
        for now in [0, 1, 1 << 40, HORIZON_NS - 1, HORIZON_NS] {
            let instant = length.instant(Timestamp::from_ns(now).unwrap());
            assert_eq!((instant.window_index, instant.elapsed_ns), (0, now));
        }
    }

    #[test]
    fn reciprocal_division_matches_hardware_division() {
        let windows = [
            1_000_000u64,
            1_000_000_007,
            16,
            17,
            7_919,
            1 << 40,
            (1 << 59) - 1,
            86_400_000_000_000,
        ];
        for &window_ns in &windows {
            let length = WindowLength::new(Duration::from_nanos(window_ns), 1).unwrap();
            let probes = [
                0,
                1,
                window_ns - 1,
                window_ns,
                window_ns + 1,
                HORIZON_NS - 1,
                HORIZON_NS,
            ];
            let mut seed = window_ns;
            let randoms = (0..10_000).map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % (HORIZON_NS + 1)
            });
            for now in probes.into_iter().chain(randoms) {
                let instant = length.instant(Timestamp::from_ns(now).unwrap());
                assert_eq!(instant.window_index, now / window_ns, "{now} / {window_ns}");
                assert_eq!(instant.elapsed_ns, now % window_ns);
            }
        }
    }
}

//! GCRA as words, for a [`LiveLimiter`](crate::live::LiveLimiter)'s quota cell: every field, the
//! judging lead included.

use super::Gcra;
use crate::quota::{Encoded, QUOTA_WORDS};

impl Encoded for Gcra {
    fn to_words(&self) -> [u64; QUOTA_WORDS] {
        [
            self.count,
            self.period_ns,
            self.burst,
            self.ticks_per_ns_q59,
            self.emission_interval_ticks,
            self.tolerance_ticks,
            self.judging_lead_ticks,
        ]
    }

    fn from_words(words: [u64; QUOTA_WORDS]) -> Gcra {
        let [count, period_ns, burst, ticks_per_ns_q59, emission_interval_ticks, tolerance_ticks, judging_lead_ticks] =
            words;
        Gcra {
            count,
            period_ns,
            burst,
            ticks_per_ns_q59,
            emission_interval_ticks,
            tolerance_ticks,
            judging_lead_ticks,
        }
    }
}

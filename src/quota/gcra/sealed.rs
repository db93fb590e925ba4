//! What only the crate asks of GCRA: tiers (a quota rebased onto another's ticks), a
//! composite's refund step, and the judging lead.

use super::{tolerance, Gcra, PERIOD_TOO_LONG, TICKS_PER_NS_SHIFT};
use crate::quota::{QuotaError, Sealed, Step};

impl Sealed for Gcra {
    fn rebase(&self, base: &Gcra) -> Result<Gcra, QuotaError> {
        if self.shares_units_with(base) {
            return Ok(*self);
        }
        // T in the base's ticks: period × ticks_per_ns / count, rounded up so the rebased quota
        // never admits faster than configured.
        let numerator = self.period_ns as u128 * base.ticks_per_ns_q59 as u128;
        let denominator = (self.count as u128) << TICKS_PER_NS_SHIFT;
        let emission_interval_ticks =
            u64::try_from(numerator.div_ceil(denominator)).map_err(|_| PERIOD_TOO_LONG)?;
        let tolerance_ticks = tolerance(self.burst, emission_interval_ticks)?;
        Ok(Gcra {
            ticks_per_ns_q59: base.ticks_per_ns_q59,
            emission_interval_ticks,
            tolerance_ticks,
            judging_lead_ticks: tolerance_ticks,
            ..*self
        })
    }

    fn shares_units_with(&self, base: &Gcra) -> bool {
        self.ticks_per_ns_q59 == base.ticks_per_ns_q59
    }

    /// A reservation's cancellation for a booking that starts at once: the exact undo while
    /// `written` is still the state (restoring `max(previous, now)`, see
    /// [`Gcra::cancel_step`](crate::Gcra::cancel_step)), else nothing. Once another admission moved `tat` on from
    /// `written`, subtracting `n·T` may be looser than the state without this admission (the
    /// other one may have found the bucket idle, `max(tat, now) = now`), so nothing is given
    /// back and the units refill at the quota's rate.
    #[inline]
    fn refund_step(&self, state: u64, written: u64, cost: u64) -> Step {
        Gcra::cancel_step(state, written, self.increment_ticks(cost))
    }

    const JUDGES_BY_LEAD: bool = true;

    #[inline]
    fn lead_ticks(&self) -> u64 {
        self.tolerance_ticks
    }

    #[inline]
    fn judging_lead(self, lead_ticks: u64) -> Gcra {
        Gcra {
            judging_lead_ticks: lead_ticks,
            ..self
        }
    }
}

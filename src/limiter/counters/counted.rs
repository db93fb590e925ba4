//! [`Counters`]: the counts of a limiter built `with_counters()`, on per-thread stripes (needs
//! `std`: a thread's stripe is found through a thread-local).

use super::sealed;
use super::stripes::{Stripe, Stripes};
use crate::engine::stats::Stats;

/// Checks allowed (field), calls.
const ALLOWED_CALLS: usize = 0;
/// Allowed checks' units less their calls (so a check of one unit adds nothing here).
const ALLOWED_EXTRA_UNITS: usize = 1;
/// Checks denied, calls.
const DENIED_CALLS: usize = 2;
/// Denied checks' units less their calls.
const DENIED_EXTRA_UNITS: usize = 3;
/// The counts a limiter keeps per stripe.
const FIELDS: usize = 4;

/// The counters of a limiter built `with_counters()`: its checks' outcomes and costs, on
/// per-thread striped cache lines of their own (see the [module documentation](crate::counters)). Read
/// in the limiter's [`Stats`].
///
/// ```
/// use nanolimit::counters::Counters;
/// use nanolimit::{KeyedLimiter, ManualClock, SlidingWindow};
///
/// let limiter: KeyedLimiter<str, SlidingWindow, ManualClock, _, Counters> =
///     KeyedLimiter::builder(SlidingWindow::per_second(1)?)
///         .clock(ManualClock::new())
///         .with_counters()
///         .build()?;
/// let _ = limiter.check("a");
/// let _ = limiter.check("a");
/// let stats = limiter.stats();
/// assert_eq!((stats.allowed, stats.denied), (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Counters {
    stripes: Stripes<FIELDS>,
}

impl Counters {
    /// Counters with the default stripe count for this machine.
    pub(crate) fn new() -> Self {
        Counters {
            stripes: Stripes::for_this_machine(),
        }
    }

    /// `record` on shared stripe `number` (modulo the shared stripe count): for
    /// tests that pick the stripes their threads share.
    #[cfg(test)]
    pub(crate) fn record_on_stripe(&self, number: usize, allowed: bool, cost: u64) {
        self.record_on(self.stripes.on_shared_stripe(number), allowed, cost);
    }

    #[inline]
    fn record_on(&self, stripe: Stripe<'_, FIELDS>, allowed: bool, cost: u64) {
        let calls = if allowed { ALLOWED_CALLS } else { DENIED_CALLS };
        stripe.add(calls, 1);
        if cost != 1 {
            // Units are kept as calls plus this extra, modulo 2^64: a cost of 0 adds 2^64 − 1.
            stripe.add(calls + 1, cost.wrapping_sub(1));
        }
    }

    /// `record` for a thread that owns no slot: claims one if it is due to try (its
    /// first count, then every 4,096), and counts on it, or on a shared stripe. Out of line: a
    /// thread that owns a slot never calls it, and its count stays a few instructions.
    #[cold]
    #[inline(never)]
    fn record_unowned(&self, allowed: bool, cost: u64) {
        self.record_on(self.stripes.mine_after_claim(), allowed, cost);
    }

    /// The counts so far, as a limiter's stats report them.
    #[cfg(test)]
    fn read(&self) -> Stats {
        let mut stats = Stats::default();
        sealed::Sealed::add_to(self, &mut stats);
        stats
    }
}

impl sealed::Counting for Counters {}

impl sealed::Sealed for Counters {
    const COUNTS: bool = true;

    /// Counts one check of `cost` units, allowed or denied, on the calling thread's stripe: its
    /// slot's, inline, if it owns one; else on the cold path, which may claim one first.
    #[inline]
    fn record(&self, allowed: bool, cost: u64) {
        match self.stripes.owned_stripe() {
            Some(cells) => self.record_on(Stripe::Owned(cells), allowed, cost),
            None => self.record_unowned(allowed, cost),
        }
    }

    fn add_to(&self, stats: &mut Stats) {
        let allowed = self.stripes.sum(ALLOWED_CALLS);
        let denied = self.stripes.sum(DENIED_CALLS);
        stats.allowed = allowed;
        stats.denied = denied;
        stats.allowed_units = allowed.wrapping_add(self.stripes.sum(ALLOWED_EXTRA_UNITS));
        stats.denied_units = denied.wrapping_add(self.stripes.sum(DENIED_EXTRA_UNITS));
    }
}

#[cfg(all(test, not(nanolimit_loom)))]
mod tests {
    use super::*;

    #[test]
    fn units_are_exact_for_every_cost_including_zero_and_huge_ones() {
        let counters = Counters::new();
        let checks = [
            (true, 1),
            (true, 0),
            (true, 7),
            (false, 1),
            (false, 0),
            (false, u64::MAX),
        ];
        for (stripe, &(allowed, cost)) in checks.iter().enumerate() {
            counters.record_on_stripe(stripe, allowed, cost);
        }
        let stats = counters.read();
        assert_eq!((stats.allowed, stats.denied), (3, 3));
        assert_eq!(
            (stats.allowed_units, stats.denied_units),
            (8, 1u64.wrapping_add(u64::MAX))
        );
    }

    #[test]
    fn nothing_counted_reads_as_zero() {
        assert_eq!(Counters::new().read(), Stats::default());
    }
}

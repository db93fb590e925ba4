//! Building a [`StripedLimiter`]: stripes, lease sizes and lease lifetime (the shared lease
//! policy, `src/limiter/lease.rs`).

use super::lease::STRIPE_LEASES;
use super::StripedLimiter;
use crate::clock::{Clock, QuantaClock};
use crate::engine::error::BuildError;
use crate::limiter::lease::{LeasePolicy, STRIPE_LEASE_LIFETIME};
use crate::quota::Gcra;
use std::time::Duration;

/// The most stripes a limiter may have.
pub const MAX_STRIPES: usize = 1024;
/// The largest lease unless configured (also bounded by the burst; see
/// [`StripedLimiterBuilder::lease_units`]).
const DEFAULT_MAX_LEASE_UNITS: u64 = 256;

/// Configures a [`StripedLimiter`]; made by [`StripedLimiter::builder`].
///
/// ```
/// use nanolimit::striped::StripedLimiter;
/// use nanolimit::{Gcra, ManualClock};
/// use std::time::Duration;
///
/// let limiter = StripedLimiter::builder(Gcra::per_second(50_000)?)
///     .stripes(8)
///     .lease_units(1, 64)
///     .lease_lifetime(Duration::from_millis(5))
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.stripes(), 8);
/// // In any interval, at most 8 × 63 units beyond what the quota itself admits, and no more
/// // than 5 ms of the rate (250 units) either.
/// assert_eq!(limiter.over_admission_bound(), 250);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct StripedLimiterBuilder<C: Clock = QuantaClock> {
    quota: Gcra,
    stripes: Option<usize>,
    lease_units: Option<(u64, u64)>,
    lease_lifetime: Duration,
    clock: C,
}

impl StripedLimiterBuilder<QuantaClock> {
    pub(crate) fn new(quota: Gcra) -> Self {
        StripedLimiterBuilder {
            quota,
            stripes: None,
            lease_units: None,
            lease_lifetime: STRIPE_LEASE_LIFETIME,
            clock: QuantaClock::new(),
        }
    }
}

impl<C: Clock> StripedLimiterBuilder<C> {
    /// How many stripes (rounded up to a power of two; at most [`MAX_STRIPES`]). Default: twice
    /// the machine's available parallelism, rounded up. Twice, because threads take stripe
    /// numbers in the order they first check, not by core: with one stripe per core, two busy
    /// threads often share one stripe while another sits idle. Threads beyond the count share
    /// stripes (correct, with some contention on the shared stripe).
    pub fn stripes(mut self, stripes: usize) -> Self {
        self.stripes = Some(stripes);
        self
    }

    /// The smallest and largest lease, in units. Leases start at `min_units` and adapt between
    /// the two (see [`StripedLimiter`]). Default: 1 to the smallest of 256 and a quarter of the
    /// burst shared among the stripes (`burst / (4 × stripes)`, at least 1), so that the
    /// stripes together never hold more than a quarter of the burst. `max_units` may not
    /// exceed the burst.
    pub fn lease_units(mut self, min_units: u64, max_units: u64) -> Self {
        self.lease_units = Some((min_units, max_units));
        self
    }

    /// How long leased units may be spent after their lease: units left when it ends lapse
    /// (given back to the budget when no other lease was taken since). From four grains of the
    /// stripe word's clock (2^21 ns, about 2.1 ms) to an hour; default 10 ms (a stripe's units
    /// serve only its threads, so their lifetime is kept short). Shorter lifetimes tighten the
    /// over-admission bound for slow quotas.
    pub fn lease_lifetime(mut self, lifetime: Duration) -> Self {
        self.lease_lifetime = lifetime;
        self
    }

    /// The clock the limiter reads (default [`QuantaClock`]).
    pub fn clock<D: Clock>(self, clock: D) -> StripedLimiterBuilder<D> {
        StripedLimiterBuilder {
            quota: self.quota,
            stripes: self.stripes,
            lease_units: self.lease_units,
            lease_lifetime: self.lease_lifetime,
            clock,
        }
    }

    /// The limiter, or why the configuration cannot work.
    ///
    /// ```
    /// use nanolimit::striped::StripedLimiter;
    /// use nanolimit::{BuildError, Gcra};
    ///
    /// let quota = Gcra::per_second(100)?;
    /// let error = StripedLimiter::builder(quota).lease_units(1, 500).build().unwrap_err();
    /// assert_eq!(error, BuildError::LeaseAboveBurst { max_units: 500, burst: 100 });
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn build(self) -> Result<StripedLimiter<C>, BuildError> {
        let requested = self.stripes.unwrap_or_else(default_stripes);
        if requested == 0 || requested > MAX_STRIPES {
            return Err(BuildError::StripeCount {
                stripes: requested,
                max: MAX_STRIPES,
            });
        }
        let stripes = requested.next_power_of_two();
        let burst = self.quota.limit();
        let (min_units, max_units) = self.lease_units.unwrap_or_else(|| {
            let per_stripe = (burst / 4 / stripes as u64).clamp(1, DEFAULT_MAX_LEASE_UNITS);
            (1, per_stripe)
        });
        let lifetime = self.lease_lifetime;
        let policy = LeasePolicy::new(min_units, max_units, lifetime, burst, STRIPE_LEASES)?;
        Ok(StripedLimiter::from_parts(
            self.quota, stripes, policy, self.clock,
        ))
    }
}

/// Twice the machine's available parallelism (1 if unknown), so that busy threads rarely share a
/// stripe.
fn default_stripes() -> usize {
    std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1)
        .saturating_mul(2)
        .min(MAX_STRIPES)
}

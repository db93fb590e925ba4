//! GCRA: the generic cell rate algorithm, i.e. a token bucket (or a leaky bucket used as a
//! meter) kept as one number, the theoretical arrival time (`tat`).
//!
//! # State word
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 0..64 | `tat` | theoretical arrival time, in ticks since the clock's origin |
//!
//! The emission interval is an exact whole number of ticks, so no rounding error accumulates
//! however many requests pass:
//! - when it is a whole number of nanoseconds (`period` divisible by `count`: 1,000 per second,
//!   60 per minute...), a tick is 1/16 ns, the same for all such quotas;
//! - otherwise (3 per second, 12.5·10^9 bytes per second...) a tick is `emission_interval / 2^k`,
//!   with `k` chosen per quota, at most 1/8 ns unless the burst spans years.
//!
//! Either way decisions are precise to below a nanosecond, and the horizon fits 2^63 ticks. A
//! `tat` at or before now is a full bucket ([`Quota::FRESH`] is 0).
//!

use super::{Quota, SlotState, Step};
use crate::clock::Timestamp;
use crate::quota::QuotaError;
use core::time::Duration;

/// Fixed-point shift of `ticks_per_ns`: a reading in ticks is `(now_ns × ticks_per_ns) >> 59`.
pub(super) const TICKS_PER_NS_SHIFT: u32 = 59;
/// Ticks at the time horizon stay at or below 2^63 ...
const MAX_TICKS_LOG2: u32 = 63;
/// ... and the tolerance `burst × T` stays below 2^62, so `now + tau` and every word written
/// stay below 2^63 + 2^62: no overflow, and never the keyed table's two slot markers.
const MAX_TOLERANCE_TICKS: u64 = 1 << 62;
/// The shared scale of whole-nanosecond emission intervals: 2^4 = 16 ticks per ns ...
const NANOSECOND_GRID_SHIFT: u32 = 4;
/// ... which is this `ticks_per_ns_q59`.
const NANOSECOND_GRID_TICKS_PER_NS_Q59: u64 = 1 << (TICKS_PER_NS_SHIFT + NANOSECOND_GRID_SHIFT);
/// The fastest rate: a tick may not be longer than the emission interval, and the horizon must
/// fit 2^63 ticks, so `T >= 2^59 ns / 2^63 = 1/16 ns`.
const MAX_RATE_PER_SECOND: u64 = 16_000_000_000;
const HORIZON_NS: u64 = Timestamp::HORIZON.as_ns();
const PERIOD_TOO_LONG: QuotaError = QuotaError::PeriodTooLong {
    max: Duration::from_nanos(HORIZON_NS),
};

/// [`Gcra::unlimited`]: the fastest rate (on the nanosecond grid, an interval of one tick)
/// with the largest burst. Evaluated at compile time, so it is known to be valid.
const UNLIMITED: Gcra =
    match Gcra::with_burst_checked(MAX_RATE_PER_SECOND, 1_000_000_000, MAX_TOLERANCE_TICKS - 1) {
        Ok(quota) => quota,
        Err(_) => panic!("the unlimited quota is a valid quota"),
    };

/// A GCRA quota: `count` cost units per `period`, with bursts of up to `burst` units (the
/// quota's [`limit`](Self::limit)).
///
/// The emission interval `T = period / count` is kept exactly (as the rational it is), so the
/// admitted amount over a long run matches the quota to within the fixed-point error of the
/// clock conversion (below 10^-17 relative), from 1 per day up to 16·10^9 units per second
/// (100 Gbit/s counted in bytes is 12.5·10^9).
///
/// Limits, all checked at construction:
/// - `count >= 1`, `period >= 1 ns`, `burst >= 1`;
/// - rate at most 16·10^9 units per second ([`QuotaError::RateTooHigh`]);
/// - period at most [`Timestamp::HORIZON`] ([`QuotaError::PeriodTooLong`]);
/// - burst below 2^62 ([`QuotaError::LimitTooLarge`]).
///
/// # Rule
///
/// With `T` the emission interval and `tau = burst × T` the tolerance, a request of cost `n`
/// at time `now` passes iff `max(tat, now) + n·T <= now + tau`, and then
/// `tat := max(tat, now) + n·T`. A fresh key therefore admits `burst` units at once, then one
/// unit per `T`; a cost above the burst never passes.
///
/// # Example
///
/// ```
/// use nanolimit::Gcra;
/// use std::time::Duration;
///
/// // 100 requests per second, bursts of up to 10.
/// let quota = Gcra::per_second(100)?.with_burst(10)?;
/// assert_eq!(quota.limit(), 10);
/// assert_eq!(quota.emission_interval(), Duration::from_millis(10));
///
/// // Usable in constants too.
/// const PER_IP: Gcra = match Gcra::per_minute(600) {
///     Ok(quota) => quota,
///     Err(_) => panic!("invalid quota"),
/// };
/// assert_eq!(PER_IP.count(), 600);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Gcra {
    count: u64,
    period_ns: u64,
    burst: u64,
    /// `ticks per ns × 2^59`, rounded up: the scale of this quota's state word.
    pub(super) ticks_per_ns_q59: u64,
    /// `T` in ticks: 16 × T in ns, or a power of two, or (rebased onto another scale) rounded up.
    pub(super) emission_interval_ticks: u64,
    /// `tau = burst × T` in ticks.
    pub(super) tolerance_ticks: u64,
    /// How far ahead of the reading that wrote it a state may be, under any quota sharing the
    /// state (its tiers): at least `tau`. Decides when a reading is behind the state (see
    /// `judged_at`). Not part of the quota's identity: equality ignores it.
    judging_lead_ticks: u64,
}

impl PartialEq for Gcra {
    fn eq(&self, other: &Gcra) -> bool {
        (
            self.count,
            self.period_ns,
            self.burst,
            self.ticks_per_ns_q59,
            self.emission_interval_ticks,
        ) == (
            other.count,
            other.period_ns,
            other.burst,
            other.ticks_per_ns_q59,
            other.emission_interval_ticks,
        )
    }
}

impl Eq for Gcra {}

impl core::hash::Hash for Gcra {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        (
            self.count,
            self.period_ns,
            self.burst,
            self.ticks_per_ns_q59,
            self.emission_interval_ticks,
        )
            .hash(state);
    }
}

/// "Now" for [`Gcra`]: ticks since the clock's origin, at most 2^63. Made only by
/// [`Gcra::instant`](Quota::instant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GcraInstant(pub(super) u64);

impl GcraInstant {
    /// Ticks since the clock's origin (the unit of the quota's state word).
    pub fn ticks(self) -> u64 {
        self.0
    }
}

impl Gcra {
    /// `count` units per second; bursts of up to `count`.
    pub const fn per_second(count: u64) -> Result<Gcra, QuotaError> {
        Gcra::with_burst_checked(count, 1_000_000_000, count)
    }

    /// `count` units per minute; bursts of up to `count`.
    pub const fn per_minute(count: u64) -> Result<Gcra, QuotaError> {
        Gcra::with_burst_checked(count, 60 * 1_000_000_000, count)
    }

    /// `count` units per hour; bursts of up to `count`.
    pub const fn per_hour(count: u64) -> Result<Gcra, QuotaError> {
        Gcra::with_burst_checked(count, 3_600 * 1_000_000_000, count)
    }

    /// `count` units per day; bursts of up to `count`.
    pub const fn per_day(count: u64) -> Result<Gcra, QuotaError> {
        Gcra::with_burst_checked(count, 86_400 * 1_000_000_000, count)
    }

    /// `count` units per `period`; bursts of up to `count`.
    ///
    /// ```
    /// use nanolimit::Gcra;
    /// use std::time::Duration;
    ///
    /// let quota = Gcra::new(3, Duration::from_secs(1))?;
    /// assert_eq!(quota.emission_interval(), Duration::from_nanos(333_333_333));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn new(count: u64, period: Duration) -> Result<Gcra, QuotaError> {
        let period_ns = period.as_nanos();
        if period_ns > HORIZON_NS as u128 {
            return Err(PERIOD_TOO_LONG);
        }
        Gcra::with_burst_checked(count, period_ns as u64, count)
    }

    /// One unit every `interval`, no bursts (a burst of 1).
    ///
    /// ```
    /// use nanolimit::Gcra;
    /// use std::time::Duration;
    ///
    /// let quota = Gcra::every(Duration::from_millis(250))?;
    /// assert_eq!((quota.count(), quota.limit()), (1, 1));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn every(interval: Duration) -> Result<Gcra, QuotaError> {
        Gcra::new(1, interval)
    }

    /// No limit, in practice: the fastest rate (16·10^9 units per second) with the largest
    /// burst (2^62 − 1 units), for a tier that is not limited (Go's `rate.Inf`). A real
    /// workload is never denied by it: a fresh state admits any cost up to 2^62 − 1
    /// (4.6·10^18); a state that other tiers or bookings of the same key ran ahead of now
    /// admits any cost that fits in the rest of its 9-year tolerance (at least 2^60 units
    /// after the longest booking plus a year-long burst); and each admitted unit runs the state ahead by
    /// 1/16 ns (what it hands to a stricter tier of the same key: a key that sends 10^6 units
    /// under it, then is checked under another tier, owes 62.5 µs of that tier's time; nothing
    /// after the fact). It is a quota like any other, so it keeps every [`Quota`] invariant,
    /// and a limiter's [`tier`](crate::Limiter::tier) accepts it whatever the limiter's
    /// quota.
    ///
    /// Its decisions are what such a bucket reports: `remaining` about 4.6·10^18,
    /// `retry_after` zero (it denies nothing), and a `limit_window` of about 9 years. A server
    /// that should send no rate-limit headers for unlimited clients tests
    /// [`is_unlimited`](Self::is_unlimited).
    ///
    /// Made or used as a tier, it raises the limiter's judging lead to its tolerance (about
    /// 9 years; see [`Request::tier`](crate::Request::tier)): a reading behind a key's state is then judged at the
    /// reading, not at the earliest time the state can have been written, so a denial after a
    /// clock stepped back reports a wait counted from the reading (longer, never shorter).
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock, Request};
    ///
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(2)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// let premium = limiter.tier(Gcra::unlimited())?;
    /// for _ in 0..1_000 {
    ///     assert!(limiter.check_with(&"premium", Request::new().tier(premium))?.is_allowed());
    /// }
    /// assert!(limiter.check(&"free").is_allowed());
    /// assert!(limiter.check(&"free").is_allowed());
    /// assert!(limiter.check(&"free").is_denied());
    /// assert!(premium.is_unlimited());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn unlimited() -> Gcra {
        UNLIMITED
    }

    /// Whether this is [`Gcra::unlimited`] (also as a tier, on any limiter's scale).
    ///
    /// ```
    /// use nanolimit::Gcra;
    ///
    /// assert!(Gcra::unlimited().is_unlimited());
    /// assert!(!Gcra::per_second(1_000)?.is_unlimited());
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn is_unlimited(&self) -> bool {
        self.count == MAX_RATE_PER_SECOND
            && self.period_ns == 1_000_000_000
            && self.burst == MAX_TOLERANCE_TICKS - 1
    }

    /// The same rate with bursts of up to `burst` units: the quota's limit.
    ///
    /// ```
    /// use nanolimit::{Gcra, QuotaError};
    ///
    /// assert_eq!(Gcra::per_second(5)?.with_burst(0), Err(QuotaError::ZeroLimit));
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub const fn with_burst(self, burst: u64) -> Result<Gcra, QuotaError> {
        Gcra::with_burst_checked(self.count, self.period_ns, burst)
    }

    const fn with_burst_checked(
        count: u64,
        period_ns: u64,
        burst: u64,
    ) -> Result<Gcra, QuotaError> {
        if let Err(error) = Gcra::check_fields(count, period_ns, burst) {
            return Err(error);
        }
        // Emission intervals of a whole number of nanoseconds (every quota of whole units per
        // round period) share one scale, 16 ticks per ns: the state is exact, a clock reading
        // converts with a shift, and tiers of such quotas need no rebasing.
        if period_ns % count == 0 {
            let emission_interval_ticks = (period_ns / count) << NANOSECOND_GRID_SHIFT;
            if (burst as u128) * (emission_interval_ticks as u128) < MAX_TOLERANCE_TICKS as u128 {
                return Ok(Gcra {
                    count,
                    period_ns,
                    burst,
                    ticks_per_ns_q59: NANOSECOND_GRID_TICKS_PER_NS_Q59,
                    emission_interval_ticks,
                    tolerance_ticks: burst * emission_interval_ticks,
                    judging_lead_ticks: burst * emission_interval_ticks,
                });
            }
        }
        Gcra::on_power_of_two_ticks(count, period_ns, burst)
    }

    /// Why `count` per `period_ns` with bursts of `burst` cannot be a quota, if it cannot.
    const fn check_fields(count: u64, period_ns: u64, burst: u64) -> Result<(), QuotaError> {
        if count == 0 {
            return Err(QuotaError::ZeroRate);
        }
        if period_ns == 0 {
            return Err(QuotaError::ZeroPeriod);
        }
        if period_ns > HORIZON_NS {
            return Err(PERIOD_TOO_LONG);
        }
        if burst == 0 {
            return Err(QuotaError::ZeroLimit);
        }
        if (count as u128) > Gcra::tick_budget(period_ns) {
            return Err(QuotaError::RateTooHigh {
                max_per_second: MAX_RATE_PER_SECOND,
            });
        }
        if burst >= MAX_TOLERANCE_TICKS {
            return Err(QuotaError::LimitTooLarge {
                requested: burst,
                max: MAX_TOLERANCE_TICKS - 1,
            });
        }
        Ok(())
    }

    /// The tick is T / 2^k with the largest k such that the horizon fits 2^63 ticks
    /// (2^59 ns × 2^k / T <= 2^63, i.e. count × 2^k <= 16 × period: this budget) and the
    /// tolerance fits 2^62 ticks (burst × 2^k < 2^62). The second bound only binds for bursts
    /// worth years.
    const fn tick_budget(period_ns: u64) -> u128 {
        (period_ns as u128) << (MAX_TICKS_LOG2 - TICKS_PER_NS_SHIFT)
    }

    /// The quota on a scale of 2^k ticks per emission interval (see
    /// [`tick_budget`](Self::tick_budget)), for intervals that are no whole number of
    /// nanoseconds (or whose tolerance would not fit on the nanosecond grid).
    const fn on_power_of_two_ticks(
        count: u64,
        period_ns: u64,
        burst: u64,
    ) -> Result<Gcra, QuotaError> {
        let budget = Gcra::tick_budget(period_ns);
        let mut k: u32 = 0;
        while k < 62
            && ((count as u128) << (k + 1)) <= budget
            && ((burst as u128) << (k + 1)) < MAX_TOLERANCE_TICKS as u128
        {
            k += 1;
        }
        let emission_interval_ticks = 1u64 << k;
        // ticks per ns = 2^k × count / period; count × 2^k <= 16 × period keeps the Q59 value
        // at or below 2^63, and the shifted numerator below 2^127. Rounded up, so that a reading
        // of exactly `t` ns is never short of the ticks that `t` holds: a request made exactly
        // when it becomes due passes (at most one tick, 1/8 ns, early), and the clock's long-run
        // error is below 2^-59 relative.
        let ticks_per_ns_q59 =
            ((count as u128) << (k + TICKS_PER_NS_SHIFT)).div_ceil(period_ns as u128) as u64;
        match tolerance(burst, emission_interval_ticks) {
            Ok(tolerance_ticks) => Ok(Gcra {
                count,
                period_ns,
                burst,
                ticks_per_ns_q59,
                emission_interval_ticks,
                tolerance_ticks,
                judging_lead_ticks: tolerance_ticks,
            }),
            Err(error) => Err(error),
        }
    }

    /// Units per period, as configured.
    pub const fn count(&self) -> u64 {
        self.count
    }

    /// The period, as configured.
    pub const fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// The limit: the burst, the units a fresh key may use at once.
    pub const fn limit(&self) -> u64 {
        self.burst
    }

    /// `period / count`, rounded down to whole nanoseconds (the state keeps it exactly).
    pub const fn emission_interval(&self) -> Duration {
        Duration::from_nanos(self.period_ns / self.count)
    }

    /// The configured rate in units per second.
    pub fn rate_per_second(&self) -> f64 {
        self.count as f64 * 1e9 / self.period_ns as f64
    }

    /// The numbers a store outside the process needs to apply this quota's step to its word
    /// (the Redis scripts, `src/redis/`): the scale (`ticks per ns × 2^59`, so an instant is
    /// `(now_ns × scale) >> 59`), the tolerance and the emission interval, in ticks.
    #[cfg(feature = "redis")]
    pub(crate) fn scale_in_ticks(&self) -> GcraScale {
        GcraScale {
            ticks_per_ns_q59: self.ticks_per_ns_q59,
            ticks_per_ns_shift: TICKS_PER_NS_SHIFT,
            tolerance_ticks: self.tolerance_ticks,
            emission_interval_ticks: self.emission_interval_ticks,
        }
    }

    /// Converts a duration in ticks to nanoseconds, rounding up.
    #[inline]
    pub(super) fn ticks_to_ns(&self, ticks: u64) -> u64 {
        if self.ticks_per_ns_q59 >= NANOSECOND_GRID_TICKS_PER_NS_Q59 {
            // The same value as the division below, without its latency.
            return ticks.div_ceil(1 << NANOSECOND_GRID_SHIFT);
        }
        let ns = ((ticks as u128) << TICKS_PER_NS_SHIFT).div_ceil(self.ticks_per_ns_q59 as u128);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// The time a decision on `tat` is judged at: `now`, or for a reading behind the latest time
    /// the state has seen, the earliest time that state can have been written (`tat` less the
    /// most a state may lead its writer: `tau`, or a larger tier's), so that what a decision
    /// reports counts from there (see the quota module's "readings behind the state").
    #[inline]
    fn judged_at(&self, tat: u64, now: GcraInstant) -> u64 {
        now.0.max(tat.saturating_sub(self.judging_lead_ticks))
    }
}

/// See [`Gcra::scale_in_ticks`].
#[cfg(feature = "redis")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct GcraScale {
    pub(crate) ticks_per_ns_q59: u64,
    pub(crate) ticks_per_ns_shift: u32,
    pub(crate) tolerance_ticks: u64,
    pub(crate) emission_interval_ticks: u64,
}

const fn tolerance(burst: u64, emission_interval_ticks: u64) -> Result<u64, QuotaError> {
    let max = (MAX_TOLERANCE_TICKS - 1) / emission_interval_ticks;
    if burst > max {
        return Err(QuotaError::LimitTooLarge {
            requested: burst,
            max,
        });
    }
    Ok(burst * emission_interval_ticks)
}

impl Quota for Gcra {
    #[inline]
    fn instant(&self, now: Timestamp) -> GcraInstant {
        let now_ns = now.as_ns();
        // `>=` is `==` here (the scale never exceeds 16 ticks per ns), and compiles to a test of
        // the top bit.
        if self.ticks_per_ns_q59 >= NANOSECOND_GRID_TICKS_PER_NS_Q59 {
            // The same value as the multiply below, without its latency: at most 2^63.
            return GcraInstant(now_ns << NANOSECOND_GRID_SHIFT);
        }
        // At most 2^59 × 2^63 before the shift: fits u128; at most 2^63 after it.
        GcraInstant(((now_ns as u128 * self.ticks_per_ns_q59 as u128) >> TICKS_PER_NS_SHIFT) as u64)
    }

    #[inline]
    fn step(&self, tat: u64, now: GcraInstant, cost: u64) -> Step {
        // max(tat, now) + n·T <= now + tau  <=>  max(tat, now) <= now + tau − n·T. The bound does
        // not depend on the loaded word, so it is ready before the load completes. `now + tau`
        // stays below 2^63 + 2^62 (instants are at most 2^63, tolerances below 2^62); a cost
        // above the burst makes the bound fall below `now` (or below zero), so it is denied;
        // and an admitted word is at most `now + tau`. For n >= 1 the bound is computed as
        // now + (tau − T) − (n − 1)·T, the same value (tau = burst × T with burst >= 1, so
        // tau − T never wraps): for one unit, the cost of nearly every check, it is one
        // addition with nothing to check.
        let increment = cost.saturating_mul(self.emission_interval_ticks);
        let latest_base = match cost.checked_sub(1) {
            None => Some(now.0 + self.tolerance_ticks),
            Some(more_units) => (now.0 + (self.tolerance_ticks - self.emission_interval_ticks))
                .checked_sub(more_units.saturating_mul(self.emission_interval_ticks)),
        };
        let Some(latest_base) = latest_base else {
            return Step::Deny;
        };
        let base = if tat > now.0 { tat } else { now.0 };
        if base > latest_base {
            return Step::Deny;
        }
        Step::Allow(base + increment)
    }

    #[inline]
    fn limit(&self) -> u64 {
        self.burst
    }

    fn limit_window(&self) -> Duration {
        Duration::from_nanos(self.ticks_to_ns(self.tolerance_ticks))
    }

    fn remaining(&self, tat: u64, now: GcraInstant) -> u64 {
        let now = self.judged_at(tat, now);
        // `now + tau` cannot overflow: `now` is an instant (at most 2^63) or `tat` less a lead
        // of at least `tau`. Under a lead above `tau`, `tat` may exceed `now + tau`: nothing
        // remains.
        (now + self.tolerance_ticks).saturating_sub(tat.max(now)) / self.emission_interval_ticks
    }

    fn reset_after_ns(&self, tat: u64, now: GcraInstant) -> u64 {
        self.ticks_to_ns(tat.saturating_sub(self.judged_at(tat, now)))
    }

    fn retry_after_ns(&self, tat: u64, now: GcraInstant, cost: u64) -> u64 {
        let now = self.judged_at(tat, now);
        let new_tat = tat
            .max(now)
            .saturating_add(cost.saturating_mul(self.emission_interval_ticks));
        self.ticks_to_ns(new_tat.saturating_sub(now + self.tolerance_ticks))
    }

    #[inline]
    fn is_fresh(&self, tat: u64, now: GcraInstant) -> bool {
        tat <= now.0
    }
}

impl SlotState for Gcra {
    type Instant = GcraInstant;

    /// `tat` itself: the state resets at `tat`.
    #[inline]
    fn freshness_rank(&self, tat: u64, now: GcraInstant) -> Option<u64> {
        (tat > now.0).then_some(tat)
    }

    /// Ticks: every quota sharing a state counts in its ticks (see `rebase`).
    #[inline]
    fn time_word(&self, now: GcraInstant) -> u64 {
        now.0
    }

    #[inline]
    fn no_earlier_than(&self, now: GcraInstant, time_word: u64) -> GcraInstant {
        GcraInstant(now.0.max(time_word))
    }

    /// A state is fresh from its theoretical arrival time on.
    #[inline]
    fn fresh_since_word(&self, tat: u64, now: GcraInstant) -> u64 {
        tat.min(now.0)
    }
}

mod encoded;
mod sealed;
#[cfg(test)]
mod tests;

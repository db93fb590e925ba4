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

use super::{Encoded, Quota, Reservable, Sealed, SlotState, Step, QUOTA_WORDS};
use crate::clock::Timestamp;
use crate::quota::QuotaError;
use core::time::Duration;

/// Fixed-point shift of `ticks_per_ns`: a reading in ticks is `(now_ns × ticks_per_ns) >> 59`.
const TICKS_PER_NS_SHIFT: u32 = 59;
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
    ticks_per_ns_q59: u64,
    /// `T` in ticks: 16 × T in ns, or a power of two, or (rebased onto another scale) rounded up.
    emission_interval_ticks: u64,
    /// `tau = burst × T` in ticks.
    tolerance_ticks: u64,
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
pub struct GcraInstant(u64);

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
    /// assert!(premium.quota().is_unlimited());
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
        // The tick is T / 2^k with the largest k such that the horizon fits 2^63 ticks
        // (2^59 ns × 2^k / T <= 2^63, i.e. count × 2^k <= 16 × period) and the tolerance fits
        // 2^62 ticks (burst × 2^k < 2^62). The second bound only binds for bursts worth years.
        let budget = (period_ns as u128) << (MAX_TICKS_LOG2 - TICKS_PER_NS_SHIFT);
        if (count as u128) > budget {
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
    fn ticks_to_ns(&self, ticks: u64) -> u64 {
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

/// The longest wait a reservation may book, in ticks: with instants at most 2^63 and
/// tolerances below 2^62, a booked word stays below 2^63 + 2^62 + 2^61, clear of overflow and of
/// the keyed table's slot markers. At most 16 ticks per ns (the usual scale is 8 to 16), so this
/// is at least 4.5 years.
const MAX_WAIT_TICKS: u64 = 1 << 61;

/// Reservations: booking capacity ahead of time. A request is given a start time in the
/// future instead of a refusal, and the state records the booking, so that later requests queue
/// behind it (`tat := max(tat, now) + n·T`). Only GCRA can: a window's state counts within its
/// current window, and one word cannot hold bookings in windows to come, so limiters on window
/// quotas have no `reserve` at all (asking for one does not compile).
///
/// Like [`Quota`]'s, every method here is a pure function of its arguments; the limiters apply
/// [`reserve_step`](Self::reserve_step) and [`cancel_step`](Self::cancel_step) with the same
/// compare-and-swap driver as [`step`](Quota::step).
///
/// ```
/// use nanolimit::{Gcra, Quota, Step, Timestamp};
/// use std::time::Duration;
///
/// // 10 per second, burst 1: a unit every 100 ms.
/// let quota = Gcra::per_second(10)?.with_burst(1)?;
/// let now = quota.instant(Timestamp::ORIGIN);
/// let no_wait = quota.max_wait_ticks(Duration::ZERO);
/// let Step::Allow(first) = quota.reserve_step(Gcra::FRESH, now, 1, no_wait) else { panic!() };
/// // The next unit may start 100 ms from now: refused without a wait, booked with one.
/// assert_eq!(quota.reserve_step(first, now, 1, no_wait), Step::Deny);
/// let a_second = quota.max_wait_ticks(Duration::from_secs(1));
/// let Step::Allow(second) = quota.reserve_step(first, now, 1, a_second) else { panic!() };
/// assert_eq!(quota.start_ns(second, now), 100_000_000);
/// // Cancelling the last booking before it starts gives its unit back.
/// assert_eq!(Gcra::cancel_step(second, second, quota.increment_ticks(1)), Step::Allow(first));
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
impl Gcra {
    /// `max_wait` in the state's units, rounded down (a reservation never waits longer than
    /// asked), and capped at the longest wait a state word can book (at least 4.5 years).
    pub fn max_wait_ticks(&self, max_wait: Duration) -> u64 {
        let ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
        // Rounded down: a reservation never waits longer than asked.
        let ticks = (ns as u128 * self.ticks_per_ns_q59 as u128) >> TICKS_PER_NS_SHIFT;
        u64::try_from(ticks).unwrap_or(u64::MAX).min(MAX_WAIT_TICKS)
    }

    /// The reservation step: books `cost` at the earliest start at or after `now` the quota
    /// allows, if that start is at most `max_wait_ticks` after `now`; else denies and nothing
    /// is written. With a maximum wait of zero it is [`step`](Quota::step): the same decisions
    /// and the same words.
    #[inline]
    pub fn reserve_step(&self, tat: u64, now: GcraInstant, cost: u64, max_wait_ticks: u64) -> Step {
        let increment = cost.saturating_mul(self.emission_interval_ticks);
        if increment > self.tolerance_ticks {
            // Above the burst: no start time would ever admit it.
            return Step::Deny;
        }
        let base = if tat > now.0 { tat } else { now.0 };
        // The request starts when `max(tat, start) + n·T <= start + tau`: at `now` if that
        // holds, else at `tat + n·T − tau`. In time from now, saturating where a word books
        // far ahead of a reading far behind.
        let wait_ticks = (base - now.0)
            .saturating_add(increment)
            .saturating_sub(self.tolerance_ticks);
        if wait_ticks > max_wait_ticks.min(MAX_WAIT_TICKS) {
            return Step::Deny;
        }
        // A start past the time horizon could not be reported (nor waited for) on the clock:
        // refused, as a check there is. `now + wait` fits: both are below 2^63.
        if now.0 + wait_ticks > self.instant(Timestamp::HORIZON).0 {
            return Step::Deny;
        }
        // `base + n·T` is `now + wait + tau` when it waits, at most `now + tau` otherwise.
        Step::Allow(base + increment)
    }

    /// Nanoseconds from `now` until a request of `cost` could start on `state` (0 if it could
    /// start now): the wait a reservation would book, rounded up.
    pub fn wait_ns(&self, tat: u64, now: GcraInstant, cost: u64) -> u64 {
        let increment = cost.saturating_mul(self.emission_interval_ticks);
        let wait_ticks = tat
            .max(now.0)
            .saturating_sub(now.0)
            .saturating_add(increment)
            .saturating_sub(self.tolerance_ticks);
        self.ticks_to_ns(wait_ticks)
    }

    /// When a reservation that wrote `booked` at `now` starts, in nanoseconds since the clock's
    /// origin, rounded up (never early).
    #[inline]
    pub fn start_ns(&self, booked: u64, now: GcraInstant) -> u64 {
        self.ticks_to_ns(booked.saturating_sub(self.tolerance_ticks).max(now.0))
    }

    /// How much a request of `cost` moves the state on (`n·T`, in the state's units): what a
    /// cancellation may give back.
    #[inline]
    pub fn increment_ticks(&self, cost: u64) -> u64 {
        cost.saturating_mul(self.emission_interval_ticks)
    }

    /// How far a word a reservation booked at `now` leads `now`, in the state's units: the
    /// limiter's judging lead is raised to it before the word is written. Not part of the API.
    #[inline]
    pub(crate) fn booked_lead_ticks(&self, booked: u64, now: GcraInstant) -> u64 {
        booked.saturating_sub(now.0)
    }

    /// The cancellation step, for a reservation that wrote `booked` by adding
    /// `increment_ticks`, applied to the current `state` before the reservation starts.
    ///
    /// Undoes the booking exactly, giving back its whole cost, if it is still the latest one:
    /// the state is the word it wrote (nothing admitted since is still booked behind it).
    /// Otherwise denies, writing nothing: requests admitted since were scheduled behind it and
    /// keep their start times, so the time it held stays booked.
    ///
    /// Why the undo is never looser than if the reservation had not been made: it restores
    /// `booked − increment`, which is `max(previous, now)` for the word `previous` the
    /// reservation replaced and its reading `now`; every decision from then on, at a time no
    /// earlier than `now`, is the one `previous` would give. Cancelling several reservations
    /// latest first undoes them all; in any other order, each one that finds another booked
    /// behind it gives nothing back.
    ///
    /// Go's `x/time/rate` also gives back part of a cost when the requests admitted since used
    /// less than it: the cost less what they added. It measures that from the start of the
    /// latest reservation, which it keeps beside its tokens. Measured from the one state word
    /// instead, after another cancellation has lowered it, the part is overstated: with a rate
    /// of 1 per second and a burst of 4, booking 4, then A = 4, B = 4 and X = 1 at 0 s, then
    /// cancelling B and A, would give back 3 s and then 2 s, and the next bookings of 4 and 1
    /// would start at 8 s and 9 s beside X: 6 units where the quota allows 5. So partial
    /// returns are not made.
    ///
    /// The word a cancellation writes is lower than the one it replaces, but never a word the
    /// state held before the booking other than the one it replaced; keyed limiters never make
    /// a key's first booking (the one that inserted it, which replaced another key's word)
    /// cancellable, so a keyed slot's word never returns to a value it held under another key.
    #[inline]
    pub fn cancel_step(state: u64, booked: u64, increment_ticks: u64) -> Step {
        if state != booked || increment_ticks == 0 {
            // Something admitted since is booked behind it (or there is nothing to give).
            return Step::Deny;
        }
        match booked.checked_sub(increment_ticks) {
            Some(restored) => Step::Allow(restored),
            // Not a word this booking can have written.
            None => Step::Deny,
        }
    }
}

impl Reservable for Gcra {
    #[inline]
    fn max_wait_ticks(&self, max_wait: Duration) -> u64 {
        Gcra::max_wait_ticks(self, max_wait)
    }

    #[inline]
    fn reserve_step(&self, tat: u64, now: GcraInstant, cost: u64, max_wait_ticks: u64) -> Step {
        Gcra::reserve_step(self, tat, now, cost, max_wait_ticks)
    }

    #[inline]
    fn wait_ns(&self, tat: u64, now: GcraInstant, cost: u64) -> u64 {
        Gcra::wait_ns(self, tat, now, cost)
    }

    #[inline]
    fn start_ns(&self, booked: u64, now: GcraInstant) -> u64 {
        Gcra::start_ns(self, booked, now)
    }

    #[inline]
    fn increment_ticks(&self, cost: u64) -> u64 {
        Gcra::increment_ticks(self, cost)
    }

    #[inline]
    fn cancel_step(state: u64, booked: u64, increment_ticks: u64) -> Step {
        Gcra::cancel_step(state, booked, increment_ticks)
    }

    #[inline]
    fn booked_lead_ticks(&self, booked: u64, now: GcraInstant) -> u64 {
        Gcra::booked_lead_ticks(self, booked, now)
    }
}

#[cfg(test)]
mod tests;

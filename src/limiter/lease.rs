//! Leases: units a shared budget hands out ahead, to be spent where no shared word is written,
//! by a [`StripedLimiter`](crate::striped::StripedLimiter)'s stripes and a leased Redis limiter's keys.
//! One policy for both: how big leases may be, how long their units live, how a lease's size
//! adapts to the rate it is spent at, and why a configuration is refused. Each lease word
//! (`src/striped/stripe.rs`, `src/redis/leased/word.rs`) says what its own fields allow, and
//! how its last lease went ([`LastLease`]).

use crate::engine::error::BuildError;
use std::time::Duration;

/// The longest lease lifetime: an hour.
pub(crate) const MAX_LEASE_LIFETIME: Duration = Duration::from_secs(3_600);

/// A striped limiter's lease lifetime unless configured: 10 ms. A stripe's units serve only the
/// threads of its stripe, so the units one stripe holds while others are denied are the price
/// of striping; a short lifetime keeps that price, and the over-admission bound, small, and a
/// refill (one compare-and-swap in memory) is cheap.
pub(crate) const STRIPE_LEASE_LIFETIME: Duration = Duration::from_millis(10);

/// A leased Redis limiter's lease lifetime unless configured: 100 ms. A refill is a round trip
/// to Redis (hundreds of microseconds, far more under load), so leases live ten times longer
/// than a stripe's to save round trips, at the price of a bound ten times wider.
#[cfg(feature = "redis")]
pub(crate) const REDIS_LEASE_LIFETIME: Duration = Duration::from_millis(100);

/// What a lease word's fields allow: the most units it holds, the shortest lifetime its grains
/// can time, and how many of its grains a lifetime (in nanoseconds) spans.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseWord {
    pub(crate) max_units: u64,
    pub(crate) min_lifetime: Duration,
    pub(crate) lifetime_grains: fn(u64) -> u64,
}

/// How big leases are and how long they live, checked when a leasing limiter is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeasePolicy {
    /// The smallest lease a refill takes (unless the request needs more).
    pub(crate) min_units: u64,
    /// The largest lease a refill takes (unless the request needs more).
    pub(crate) max_units: u64,
    /// The configured lifetime.
    pub(crate) lifetime_ns: u64,
    /// The lifetime in the lease word's grains (as the word counts them).
    pub(crate) lifetime_grains: u64,
}

/// How a key's or a stripe's last lease went, as its lease word tells: what decides the size
/// of the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LastLease {
    /// No lease yet: start at the current size.
    Never,
    /// It lapsed with units unspent: the rate is below what leases hold, so they only widen the
    /// bound. Halve.
    LapsedUnspent,
    /// It was used up (or, for a refill made while units remained, half used) within the first
    /// quarter of its lifetime: the rate is above what leases hold, so larger ones save shared
    /// writes. Double.
    UsedUpQuickly,
    /// Anything else: keep the size.
    Steady,
}

impl LeasePolicy {
    /// Leases of `min_units` to `max_units` living `lifetime`, from a budget whose burst is
    /// `burst`, in `word`; or why they cannot work.
    pub(crate) fn new(
        min_units: u64,
        max_units: u64,
        lifetime: Duration,
        burst: u64,
        word: LeaseWord,
    ) -> Result<LeasePolicy, BuildError> {
        if min_units == 0 || min_units > max_units {
            return Err(BuildError::LeaseUnits {
                min_units,
                max_units,
            });
        }
        if max_units > burst {
            return Err(BuildError::LeaseAboveBurst { max_units, burst });
        }
        if max_units > word.max_units {
            return Err(BuildError::LeaseTooLarge {
                max_units,
                max: word.max_units,
            });
        }
        if !(word.min_lifetime..=MAX_LEASE_LIFETIME).contains(&lifetime) {
            return Err(BuildError::LeaseLifetime {
                lifetime,
                min: word.min_lifetime,
                max: MAX_LEASE_LIFETIME,
            });
        }
        // At most an hour: fits.
        let lifetime_ns = lifetime.as_nanos() as u64;
        Ok(LeasePolicy {
            min_units,
            max_units,
            lifetime_ns,
            lifetime_grains: (word.lifetime_grains)(lifetime_ns),
        })
    }

    /// The size of the next lease, from the size `current` the last one was taken at and how
    /// it went; always within the policy's range.
    pub(crate) fn next_units(&self, current: u64, last: LastLease) -> u64 {
        let current = current.clamp(self.min_units, self.max_units);
        match last {
            LastLease::Never | LastLease::Steady => current,
            LastLease::LapsedUnspent => (current / 2).max(self.min_units),
            LastLease::UsedUpQuickly => current.saturating_mul(2).min(self.max_units),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORD: LeaseWord = LeaseWord {
        max_units: 1_000,
        min_lifetime: Duration::from_millis(1),
        lifetime_grains: |lifetime_ns| lifetime_ns >> 16,
    };

    fn policy() -> LeasePolicy {
        LeasePolicy::new(2, 64, Duration::from_millis(10), 500, WORD).unwrap()
    }

    #[test]
    fn sizes_halve_double_and_keep_within_the_range() {
        let policy = policy();
        assert_eq!(policy.next_units(8, LastLease::UsedUpQuickly), 16);
        assert_eq!(policy.next_units(40, LastLease::UsedUpQuickly), 64);
        assert_eq!(policy.next_units(8, LastLease::LapsedUnspent), 4);
        assert_eq!(policy.next_units(3, LastLease::LapsedUnspent), 2);
        assert_eq!(policy.next_units(8, LastLease::Steady), 8);
        assert_eq!(policy.next_units(1, LastLease::Never), 2);
        assert_eq!(policy.next_units(100, LastLease::Never), 64);
    }

    #[test]
    fn a_configuration_that_cannot_work_is_refused_with_its_reason() {
        let new = |min, max, lifetime_ms| {
            LeasePolicy::new(min, max, Duration::from_millis(lifetime_ms), 500, WORD)
        };
        assert_eq!(
            new(0, 4, 10),
            Err(BuildError::LeaseUnits {
                min_units: 0,
                max_units: 4
            })
        );
        assert_eq!(
            new(5, 4, 10),
            Err(BuildError::LeaseUnits {
                min_units: 5,
                max_units: 4
            })
        );
        assert_eq!(
            new(1, 600, 10),
            Err(BuildError::LeaseAboveBurst {
                max_units: 600,
                burst: 500
            })
        );
        let wide = LeasePolicy::new(1, 2_000, Duration::from_millis(10), 5_000, WORD);
        assert_eq!(
            wide,
            Err(BuildError::LeaseTooLarge {
                max_units: 2_000,
                max: 1_000
            })
        );
        let short = new(1, 4, 0);
        assert!(matches!(short, Err(BuildError::LeaseLifetime { .. })));
        assert!(new(1, 4, 3_600_001).is_err());
        assert_eq!(policy().lifetime_grains, 10_000_000 >> 16);
    }
}

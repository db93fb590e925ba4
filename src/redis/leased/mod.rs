//! Leased local checks: a fleet-wide GCRA budget in Redis, spent locally in nanoseconds.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | [`LeasedRedisLimiter`]: checks, refills, give-backs; the bound |
//! | `options.rs` | the lease settings of the [`RedisLimiterBuilder`](super::RedisLimiterBuilder), their defaults and checks |
//! | `policy.rs` | lease sizes and lifetimes, and how a key's lease size adapts |
//! | `word.rs` | a key's local lease in one packed word, and its pure steps |
//! | `refill.rs` | a key's refill, its claim, and the calls to Redis (lease, direct check, give-back) |
//! | `table.rs` | the process's leases, one entry per key, bounded; the lease word's protocol |
//! | `loom_hooks.rs` | that protocol alone, for the loom models (`cfg(nanolimit_loom)` only) |
//!
//! # How a check runs
//!
//! 1. The process holds, per key, the unspent units of its latest lease and the grain they
//!    lapse at, in one word. A check that finds enough spendable units takes them with one
//!    compare-and-swap: no round trip, no write shared with other keys.
//! 2. A check that leaves the lease below half its size claims the key (a flag in the word)
//!    and, with background refills on, starts the next lease on a tokio task: one script call,
//!    the GCRA step of the lease's size on the key's shared word ([`RedisLimiter`]'s own
//!    script), topping the key up to the lease size. Checks go on spending meanwhile.
//! 3. A check that finds too few units takes the next lease itself (one round trip), or, when
//!    a refill is already in flight, checks Redis directly (one round trip, exact): nobody
//!    waits for another checker's refill. When the budget cannot grant the lease, the refill
//!    asks for just the request's cost; when it cannot grant that either, the request is
//!    denied with the shared word's own retry-after.
//!
//! # Over-admission bound
//!
//! Every unit a process admits was first admitted by the shared GCRA in Redis as part of a
//! lease, so the quota bounds the leases, and leasing only moves admissions later in time.
//! Units admitted by the fleet for one key in any interval are either from leases granted in
//! the interval (at most what the quota itself admits there) or were held by a process when
//! the interval began. A process holds at most its largest lease per key (a refill tops the
//! key up to the lease size: `lease − held` units, or the request's cost when that is more,
//! of which the request takes its cost), counting a refill in flight. So in any interval the
//! fleet admits at most **the quota's own allowance + processes × largest lease**
//! ([`over_admission_bound`](LeasedRedisLimiter::over_admission_bound)). With
//! `lease_units(1, 1)` every check is one script call and the fleet admits exactly the quota.
//! The interval is measured on Redis's clock (the quota's), and units lapse at most one lease
//! lifetime after the reading their refill started from.
//!
//! # Under-admission
//!
//! Units one process holds cannot serve another: a process may be denied while others hold up
//! to their leases, for at most a lease lifetime. Lapsed units are given back when the key's
//! next refill starts, and [`give_back_unused`](LeasedRedisLimiter::give_back_unused) returns
//! every held unit (at shutdown); both only while Redis still holds the word the key's latest
//! lease wrote, when no other process has taken from the key's budget since. Each unit given
//! back was leased and never admitted, so the quota's own bound holds (a unit carried over from
//! an earlier lease is credited at the latest lease's point of the budget, which frees at most
//! what the process held). Otherwise they lapse. Lease sizes adapt: a lease spent to its last
//! unit, or half spent in its first quarter-lifetime, doubles the next; one that lapsed with
//! units unspent halves it.

#[cfg(nanolimit_loom)]
#[doc(hidden)]
pub mod loom_hooks;
mod options;
mod policy;
mod refill;
mod table;
mod word;

pub(crate) use options::LeaseOptions;

use super::RedisLimiter;
use crate::clock::{Clock, QuantaClock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::engine::stats::Stats;
use crate::limiter::lease::LeasePolicy;
use crate::quota::{Gcra, Quota};
use crate::sync::{Arc, AtomicU64, Ordering};
use refill::{Claim, ClaimAll};
use table::{LeaseCell, LeaseTable};

/// A fleet-wide GCRA limit kept in Redis, checked locally from leases: each process takes
/// units of a key's shared budget in batches (one script call each) and admits from them with
/// one compare-and-swap, so a check costs nanoseconds instead of a round trip, at the price of
/// a stated over-admission: at most `processes × largest lease` units per key beyond the quota
/// in any interval ([`over_admission_bound`](Self::over_admission_bound) has the argument).
///
/// Built by the [`RedisLimiter`]'s builder of a [`Gcra`] limit
/// ([`build_leased`](super::RedisLimiterBuilder::build_leased)), on the
/// [`RedisLimiter<Gcra>`](RedisLimiter) that [`build`](super::RedisLimiterBuilder::build) would
/// make (its [`shared`](Self::shared) limiter), whose key names, epoch, timeout and failure
/// policy it uses: processes sharing a prefix share each key's budget, whether they lease or
/// check every request in Redis. The builder's lease settings
/// ([`lease_units`](super::RedisLimiterBuilder::lease_units) and the rest) size its leases.
///
/// | operation | shorthand | full form |
/// |---|---|---|
/// | consume if it fits | [`check(key)`](Self::check) | [`check_with(key, request)`](Self::check_with) |
/// | give the held units back (shutdown) | [`give_back_unused()`](Self::give_back_unused) | |
///
/// - Time: lease lifetimes are timed on the limiter's [`Clock`], and Redis judges at its own
///   `TIME`; a request's [`at`](Request::at) is used for both (a [`Timestamp`] since the
///   shared limiter's epoch). Use one or the other for a limiter, not both.
/// - Decisions: an admission served from a lease reports as `remaining` the units the process
///   holds plus what the shared budget could still lease at the latest refill (an estimate:
///   other processes lease too); a denial is Redis's, with the shared word's own retry-after.
/// - Failures: a refill that gets no reply in time is decided by the failure policy, for its
///   request only; the key takes no lease, and the next check tries again.
///
/// ```no_run
/// use nanolimit::redis::RedisLimiter;
/// use nanolimit::Gcra;
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // 10,000 requests per second per tenant across the fleet.
/// let limiter = RedisLimiter::builder(Gcra::per_second(10_000)?)
///     .build_leased("redis://127.0.0.1:6379")?;
/// for _ in 0..1_000 {
///     // Mostly served from the process's lease, with no round trip.
///     assert!(limiter.check("tenant-7").await.is_allowed());
/// }
/// limiter.give_back_unused().await; // at shutdown
/// # Ok(())
/// # }
/// ```
pub struct LeasedRedisLimiter<C: Clock = QuantaClock> {
    inner: Arc<Inner<C>>,
}

impl<C: Clock> Clone for LeasedRedisLimiter<C> {
    fn clone(&self) -> Self {
        LeasedRedisLimiter {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C: Clock> core::fmt::Debug for LeasedRedisLimiter<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LeasedRedisLimiter")
            .field("shared", &self.inner.shared)
            .field("policy", &self.inner.policy)
            .field("capacity", &self.inner.table.capacity())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Counters {
    leases: AtomicU64,
    leased_units: AtomicU64,
    direct_checks: AtomicU64,
    units_given_back: AtomicU64,
}

impl Counters {
    #[cold]
    fn add(counter: &AtomicU64, by: u64) {
        // ORDERING: Relaxed. A statistic: it orders nothing and pairs with nothing.
        counter.fetch_add(by, Ordering::Relaxed);
    }
}

struct Inner<C> {
    shared: RedisLimiter<Gcra>,
    policy: LeasePolicy,
    table: LeaseTable,
    clock: C,
    /// Where background refills run; `None` when they are off.
    runtime: Option<tokio::runtime::Handle>,
    counters: Counters,
}

/// What a local spend found.
enum Served {
    /// Taken from the lease; `held` units are left.
    Taken { held: u64 },
    /// Too few units: the slow path decides.
    Short,
}

impl<C: Clock + 'static> LeasedRedisLimiter<C> {
    /// Consumes one unit of `key`'s shared quota if it fits: from the process's lease when it
    /// holds one.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(100)?)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// assert!(limiter.check("tenant-1").await.is_allowed());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check(&self, key: &str) -> Decision<Gcra> {
        self.decide(key, 1, None).await
    }

    /// Consumes the request's cost of `key`'s shared quota if it fits, at the request's time
    /// (or the limiter's clock, and Redis's). Fails, without a call to Redis, for a cost above
    /// the quota's burst ([`RequestError::CostAboveLimit`]) or a request with a tier
    /// ([`RequestError::ForeignTier`]).
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::{Gcra, Request, Timestamp};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(100)?)
    ///     .background_refills(false)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// let now = Timestamp::from_ns(1_000_000_000)?;
    /// assert!(limiter.check_with("tenant-1", Request::cost(5).at(now)).await?.is_allowed());
    /// assert!(limiter.check_with("tenant-1", Request::cost(101)).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check_with(
        &self,
        key: &str,
        request: Request<Gcra>,
    ) -> Result<Decision<Gcra>, RequestError> {
        let cost = self.inner.shared.validate(&request)?;
        Ok(self.decide(key, cost, request.at).await)
    }

    /// Gives every unit the process holds back to Redis, for each key whose shared word is
    /// still the one its latest lease wrote (no other lease or admission has taken from the
    /// key's budget since: each unit given back was leased and never admitted, so the quota's
    /// bound holds); other keys' units lapse. Cancelling it (a shutdown timeout) leaves no key
    /// claimed. Checks may go on meanwhile and after: keys simply
    /// lease again. The units given back.
    ///
    /// ```no_run
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(100)?)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// limiter.check("tenant-1").await;
    /// let returned = limiter.give_back_unused().await;
    /// println!("{returned} units back to the fleet");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn give_back_unused(&self) -> u64 {
        let inner = &self.inner;
        let now_grain = word::grain(inner.clock.now());
        let mut given_back = 0;
        for (key, cell) in inner.table.cells() {
            let Some(observed) = cell.claim_all() else {
                continue; // a refill in flight, or a check moved the word: left as it is
            };
            let _claim = ClaimAll(&cell);
            let held = word::spendable(observed, now_grain);
            if held > 0 && inner.give_back(&key, &cell, held).await {
                given_back += held;
            }
        }
        given_back
    }

    /// The most units a fleet of `processes` leasing as this one does may admit for a key beyond
    /// the quota in any interval: `processes ×` the largest lease.
    ///
    /// Every unit a process admits was first admitted by the shared GCRA in Redis as part of a
    /// lease, so leasing only moves admissions later in time. The units admitted in an interval
    /// are either from leases granted within it (at most what the quota itself admits there)
    /// or were held by a process when it began; a process holds at most its largest lease per
    /// key, counting a refill in flight (a refill tops the key up to the lease size, or takes
    /// the request's cost when that is more, of which the request takes its cost). Intervals
    /// are on Redis's clock; units lapse at most a lease lifetime after the reading their
    /// refill started from. With `lease_units(1, 1)` every check is one script call: the bound
    /// is 0, the fleet admits exactly the quota.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .lease_units(1, 10)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.over_admission_bound(3), 30);
    /// # Ok(())
    /// # }
    /// ```
    pub fn over_admission_bound(&self, processes: u64) -> u64 {
        if self.inner.policy.max_units == 1 {
            return 0; // leasing off
        }
        processes.saturating_mul(self.max_lease_units())
    }

    /// The largest lease a refill takes.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.max_lease_units(), 125); // burst / 8
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_lease_units(&self) -> u64 {
        self.inner.policy.max_units
    }

    /// The shared limiter whose keys the leases come from: the one the builder's
    /// [`build`](super::RedisLimiterBuilder::build) would have made.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .prefix("api")
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.shared().key_name("tenant-7"), "api:gcra:{tenant-7}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn shared(&self) -> &RedisLimiter<Gcra> {
        &self.inner.shared
    }

    /// Keys the process holds a lease entry for.
    pub fn keys(&self) -> usize {
        self.inner.table.len()
    }

    /// How often the limiter went to Redis, and why.
    ///
    /// ```
    /// use nanolimit::redis::RedisLimiter;
    /// use nanolimit::Gcra;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::builder(Gcra::per_second(1_000)?)
    ///     .build_leased("redis://127.0.0.1:6379")?;
    /// assert_eq!(limiter.stats().leases, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        let counters = &self.inner.counters;
        // ORDERING: Relaxed: statistics (see `Counters::add`).
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Stats {
            leases: read(&counters.leases),
            leased_units: read(&counters.leased_units),
            direct_checks: read(&counters.direct_checks),
            units_given_back: read(&counters.units_given_back),
            ..self.inner.shared.stats()
        }
    }

    /// The core every check funnels into.
    async fn decide(&self, key: &str, cost: u64, at: Option<Timestamp>) -> Decision<Gcra> {
        let inner = &self.inner;
        let now = at.unwrap_or_else(|| inner.clock.now());
        let now_grain = word::grain(now);
        // A cost of zero reads the shared state (it consumes nothing, so it needs no lease and
        // must not start one); leasing off, or a cost no lease holds: one script call.
        if cost == 0 || cost > inner.policy.max_units || inner.policy.max_units == 1 {
            return inner.direct(key, cost, at).await;
        }
        let served = inner.table.with_cell(key, |cell| {
            let served = inner.spend(cell, now_grain, cost);
            if let Served::Taken { held } = served {
                inner.refill_in_background(self, key, cell, held, now, at);
            }
            (served, held_estimate(cell))
        });
        if let Some((Served::Taken { held }, shared_remaining)) = served {
            return inner.served_locally(held, shared_remaining, cost, now);
        }
        inner.refill_for(key, cost, now, at).await
    }
}

/// What the shared budget could lease at the latest refill.
#[inline]
pub(super) fn held_estimate(cell: &LeaseCell) -> u64 {
    // ORDERING: Relaxed: an estimate for the decision's remaining; orders nothing.
    cell.shared_remaining.load(Ordering::Relaxed)
}

impl<C: Clock + 'static> Inner<C> {
    pub(crate) fn new(
        shared: RedisLimiter<Gcra>,
        policy: LeasePolicy,
        capacity: usize,
        clock: C,
        runtime: Option<tokio::runtime::Handle>,
    ) -> Self {
        Inner {
            shared,
            policy,
            table: LeaseTable::new(capacity),
            clock,
            runtime,
            counters: Counters::default(),
        }
    }

    /// Spends `cost` from the key's lease, if it holds that many spendable units.
    #[inline]
    fn spend(&self, cell: &LeaseCell, now_grain: u64, cost: u64) -> Served {
        match cell.spend(now_grain, cost) {
            Some(held) => Served::Taken { held },
            None => Served::Short,
        }
    }

    /// After a local admission left `held` units: with background refills on, a lease below
    /// half its size is topped up on a task, if no refill of the key is in flight.
    #[inline]
    fn refill_in_background(
        &self,
        limiter: &LeasedRedisLimiter<C>,
        key: &str,
        cell: &Arc<LeaseCell>,
        held: u64,
        now: Timestamp,
        at: Option<Timestamp>,
    ) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        // ORDERING: Relaxed: a size, read as a hint; the refill reads it again under its claim.
        let lease_units = cell.lease_units.load(Ordering::Relaxed);
        if held.saturating_mul(2) >= lease_units {
            return;
        }
        self.start_background_refill(runtime, limiter, key, cell, now, at);
    }

    #[cold]
    fn start_background_refill(
        &self,
        runtime: &tokio::runtime::Handle,
        limiter: &LeasedRedisLimiter<C>,
        key: &str,
        cell: &Arc<LeaseCell>,
        now: Timestamp,
        at: Option<Timestamp>,
    ) {
        let now_grain = word::grain(now);
        let Some(previous) = cell.claim(now_grain) else {
            return;
        };
        // Made before the spawn and moved into the task: a task dropped unpolled releases it.
        let claim = Claim::new(Arc::clone(cell), now_grain, &self.policy);
        let limiter = limiter.clone();
        let key = key.to_owned();
        runtime.spawn(async move {
            limiter
                .inner
                .refill(&key, claim, previous, 0, now, at)
                .await;
        });
    }

    /// The slow path of a check: the key's entry (added if new), then its refill by this check,
    /// or one script call when a refill is in flight or the table is full.
    #[cold]
    async fn refill_for(
        &self,
        key: &str,
        cost: u64,
        now: Timestamp,
        at: Option<Timestamp>,
    ) -> Decision<Gcra> {
        let now_grain = word::grain(now);
        let Some(cell) = self
            .table
            .cell_or_insert(key, self.policy.min_units, now_grain)
        else {
            return self.direct(key, cost, at).await;
        };
        // A refill may have landed since the fast path looked.
        if let Served::Taken { held } = self.spend(&cell, now_grain, cost) {
            return self.served_locally(held, held_estimate(&cell), cost, now);
        }
        match cell.claim(now_grain) {
            Some(previous) => {
                let claim = Claim::new(Arc::clone(&cell), now_grain, &self.policy);
                match self.refill(key, claim, previous, cost, now, at).await {
                    Some(decision) => decision,
                    None => self.direct(key, cost, at).await,
                }
            }
            None => self.direct(key, cost, at).await,
        }
    }

    /// The decision of an admission served from the process's lease, `held` units left: as
    /// GCRA reports a state with `held + shared_remaining` units left (at most the burst).
    #[inline]
    fn served_locally(
        &self,
        held: u64,
        shared_remaining: u64,
        cost: u64,
        now: Timestamp,
    ) -> Decision<Gcra> {
        let quota = self.shared.quota();
        let instant = quota.instant(now);
        let remaining = held.saturating_add(shared_remaining).min(quota.limit());
        let full = instant
            .ticks()
            .saturating_add(quota.scale_in_ticks().tolerance_ticks);
        let state = full.saturating_sub(quota.increment_ticks(remaining));
        Decision::new(true, cost, state, instant, *quota)
    }
}

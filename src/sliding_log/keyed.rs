//! The keyed sliding log: an exact log per key, on the keyed limiters' bounded table
//! ([`KeyedSlidingLogLimiter`]).

use super::decision;
use super::ring::empty_records;
use super::slots::{LogOutcome, Logs};
use super::SlidingLog;
use crate::clock::{Clock, QuantaClock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::BuildError;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::engine::stats::Stats;
use crate::limiter::counters::NoCounters;
use crate::limiter::keyed_builder::KeyedBuilder;
use crate::store::table::{Hashed, KeyMode, Located, SlotOps, Table};
use crate::sync::AtomicU64;
use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;

/// The largest limit of a [`KeyedSlidingLogLimiter`]: 1,024 units per window per key. Every
/// slot of the table keeps a ring of records (8 bytes per unit of the limit, rounded up to a
/// power of two), so memory grows with the limit; the use cases of an exact per-key log (5
/// logins per 15 minutes, 10 messages per day) need a few.
pub const MAX_KEYED_LIMIT: u64 = 1_024;

/// An exact sliding log per key: at most `L` units of each key in any window of length `W`
/// (the rule of [`SlidingLogLimiter`](super::SlidingLogLimiter), per key), for small strict
/// limits such as 5 login attempts per 15 minutes per account.
///
/// Keys live in the bounded, sharded table of [`KeyedLimiter`](crate::KeyedLimiter) (the same sizing, key modes and
/// [`WhenFull`](crate::WhenFull) policies); every slot of the table has a ring of records beside it, so memory
/// is about `slots × 8 × L` bytes (`L` rounded up to a power of two; see
/// [`memory_bytes`](Self::memory_bytes)), and `L` is at most [`MAX_KEYED_LIMIT`]. A check of a
/// key the table holds is lock-free and writes nothing when denied; a new key takes its shard's
/// insert lock, as in a keyed rate limiter. A key's entry is reusable for another key once
/// every unit in its log has left the window (no sweeper).
///
/// | operation | shorthand | packet-loop form | full form |
/// |---|---|---|---|
/// | consume if it fits | [`check`](Self::check) | [`check_at`](Self::check_at) | [`check_with`](Self::check_with) |
/// | ask without consuming | [`peek`](Self::peek) | | [`peek_with`](Self::peek_with) |
///
/// What a user should know:
/// - **A new key in a reused slot** continues the log of the slot's previous key, all of whose
///   units had left the window at the time the slot was reused: a reading behind that time (a
///   timestamp taken before a preemption) may still count them, and get fewer admissions,
///   never more.
/// - **A key whose entry was reclaimed** and that comes back with a reading behind its old
///   units is judged no earlier than the time they left the window (each shard keeps that time
///   for its reclaimed entries), so a stale timestamp never gets a key more than `L` in a
///   window. The time is per shard: readings that ran ahead of the clock (another clock's
///   origin) push it ahead for every new key of the shard, as far as they ran.
/// - **Eviction** ([`WhenFull::EvictClosestToFresh`](crate::WhenFull::EvictClosestToFresh)) evicts the key whose latest unit is
///   oldest, and only for a new key that the evicted log admits: the new key inherits that
///   log's units, and the evicted key, if it comes back, starts on another log, as in the other
///   keyed limiters (its units in the window are forgotten).
/// - **Hashed keys** (the default) are told apart by their 64-bit hash: two keys with equal
///   hashes share one log (see the [`keyed`](crate::keyed) module); [`Exact`](crate::keyed::Exact) keys never do.
///
/// How the log's protocol runs on the table's slots, and why an admission always counts in its
/// own key's log, is in `src/sliding_log/slots.rs` (in these docs with
/// `--document-private-items`).
///
/// ```
/// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
/// use nanolimit::ManualClock;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// // 3 password resets per hour per account.
/// let resets = KeyedSlidingLogLimiter::<str>::builder(SlidingLog::per_hour(3)?)
///     .capacity(10_000)
///     .clock(clock.clone())
///     .build()?;
/// for _ in 0..3 {
///     assert!(resets.check("alice").is_allowed());
///     clock.advance(Duration::from_secs(600));
/// }
/// let denied = resets.check("alice");
/// assert!(denied.is_denied());
/// // Alice's first reset (at minute 0) leaves the window at minute 60: 30 minutes from now.
/// assert_eq!(denied.retry_after(), Duration::from_secs(30 * 60));
/// assert!(resets.check("bob").is_allowed()); // another key, its own log
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedSlidingLogLimiter<K: ?Sized, C: Clock = QuantaClock, M: KeyMode<K> = Hashed> {
    /// The table: each slot's word is its log's position.
    table: Table<M::Slot>,
    quota: SlidingLog,
    clock: C,
    /// Each slot's ring of records, `2^ring_bits` records.
    records: Box<[AtomicU64]>,
    ring_bits: u32,
    key: PhantomData<fn(&K)>,
}

impl<K: ?Sized, C: Clock, M: KeyMode<K>> fmt::Debug for KeyedSlidingLogLimiter<K, C, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedSlidingLogLimiter")
            .field("quota", self.quota())
            .field("capacity", &self.capacity())
            .field("shards", &self.shards())
            .finish_non_exhaustive()
    }
}

impl<K: Hash + ?Sized> KeyedSlidingLogLimiter<K> {
    /// A limiter of `quota` per key, for up to `capacity` keys, on the default clock, with
    /// default shards and [`WhenFull::Deny`](crate::WhenFull::Deny). Errors for a limit above [`MAX_KEYED_LIMIT`], a
    /// table that cannot be built, or records the allocator cannot provide.
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    ///
    /// let limiter = KeyedSlidingLogLimiter::<u64>::new(SlidingLog::per_day(10)?, 10_000)?;
    /// assert_eq!(limiter.quota().limit(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(quota: SlidingLog, capacity: usize) -> Result<Self, BuildError> {
        Self::builder(quota).capacity(capacity).build()
    }

    /// A builder for a limiter of `quota` per key, with the default capacity
    /// (65,536 keys) and shards, [`WhenFull::Deny`](crate::WhenFull::Deny), [`Hashed`] keys
    /// and the default clock.
    pub fn builder(quota: SlidingLog) -> KeyedBuilder<K, SlidingLog, QuantaClock, Hashed> {
        KeyedBuilder::with_defaults(quota, QuantaClock::new())
    }
}

impl<K: ?Sized, C: Clock, M: KeyMode<K>> KeyedSlidingLogLimiter<K, C, M> {
    /// Checks one unit for `key` now: records it if it fits.
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    ///
    /// let limiter = KeyedSlidingLogLimiter::<str>::new(SlidingLog::per_minute(1)?, 100)?;
    /// assert!(limiter.check("alice").is_allowed());
    /// assert!(limiter.check("alice").is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check(&self, key: &K) -> Decision<SlidingLog> {
        self.check_at(key, self.clock.now())
    }

    /// Checks one unit for `key` at `now`, a reading the caller already holds: no clock read,
    /// infallible.
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    /// use nanolimit::Timestamp;
    ///
    /// let limiter = KeyedSlidingLogLimiter::<u64>::new(SlidingLog::per_second(1)?, 100)?;
    /// let now = Timestamp::from_ns(5_000)?;
    /// assert!(limiter.check_at(&7, now).is_allowed());
    /// assert!(limiter.check_at(&7, now).is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_at(&self, key: &K, now: Timestamp) -> Decision<SlidingLog> {
        self.decide(key, 1, now)
    }

    /// Checks `request` (its cost and time; see [`Request`]) for `key`: records its units, all
    /// or nothing, if they fit. A cost of 0 records nothing and reads the metadata. Errors for a
    /// cost above [`max_cost`](SlidingLog::max_cost).
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    /// use nanolimit::{ManualClock, Request, RequestError};
    ///
    /// let limiter = KeyedSlidingLogLimiter::<str>::builder(SlidingLog::per_day(10)?)
    ///     .capacity(100)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.check_with("sms:+15550100", Request::cost(7))?.is_allowed());
    /// let denied = limiter.check_with("sms:+15550100", Request::cost(4))?;
    /// assert_eq!((denied.is_denied(), denied.remaining()), (true, 3));
    /// assert!(matches!(
    ///     limiter.check_with("sms:+15550100", Request::cost(11)),
    ///     Err(RequestError::CostAboveLimit { cost: 11, limit: 10 })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_with(
        &self,
        key: &K,
        request: Request<SlidingLog>,
    ) -> Result<Decision<SlidingLog>, RequestError> {
        let (cost, now) = self.resolve(&request)?;
        Ok(match cost {
            0 => self.peek_decision(key, 0, now),
            _ => self.decide(key, cost, now),
        })
    }

    /// Whether one unit for `key` would fit now, recording and inserting nothing.
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    ///
    /// let limiter = KeyedSlidingLogLimiter::<str>::new(SlidingLog::per_minute(1)?, 100)?;
    /// assert!(limiter.peek("alice").is_allowed());
    /// assert!(limiter.check("alice").is_allowed());
    /// assert!(limiter.peek("alice").is_denied());
    /// assert_eq!(limiter.entries(), 1); // the peeks inserted nothing
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek(&self, key: &K) -> Decision<SlidingLog> {
        self.peek_decision(key, 1, self.clock.now())
    }

    /// Whether `request` for `key` would fit, recording and inserting nothing; errors as
    /// [`check_with`](Self::check_with).
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    /// use nanolimit::{ManualClock, Request};
    ///
    /// let limiter = KeyedSlidingLogLimiter::<u64>::builder(SlidingLog::per_hour(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.check_with(&1, Request::cost(2))?.is_allowed());
    /// assert!(limiter.peek_with(&1, Request::cost(1))?.is_allowed());
    /// assert!(limiter.peek_with(&1, Request::cost(2))?.is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_with(
        &self,
        key: &K,
        request: Request<SlidingLog>,
    ) -> Result<Decision<SlidingLog>, RequestError> {
        let (cost, now) = self.resolve(&request)?;
        Ok(self.peek_decision(key, cost, now))
    }

    /// The quota every key gets.
    pub fn quota(&self) -> &SlidingLog {
        &self.quota
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// A reading of this limiter's clock, for [`check_at`](Self::check_at) and
    /// [`Request::at`].
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// How many live keys the table was sized for (as requested at construction).
    pub fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// How many slots the table has (see [`KeyedLimiter::slots`](crate::KeyedLimiter::slots)): each has a log.
    pub fn slots(&self) -> usize {
        self.table.slot_count()
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.table.shard_count()
    }

    /// Total bytes the table and its logs occupy, fixed at construction: the keyed table's
    /// bytes plus 8 per record, `slots × L` records (`L` rounded up to a power of two).
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    ///
    /// let limiter = KeyedSlidingLogLimiter::<u64>::new(SlidingLog::per_minute(5)?, 1_000)?;
    /// assert!(limiter.memory_bytes() >= limiter.slots() * 8 * 8);
    /// assert!(limiter.bytes_per_key() >= 1_500 * 8 * 8 / 1_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.table.memory_bytes() + core::mem::size_of_val(&*self.records)
    }

    /// Bytes per key of capacity, all overhead included, rounded to the nearest byte.
    pub fn bytes_per_key(&self) -> usize {
        let capacity = self.capacity();
        (self.memory_bytes() + capacity / 2) / capacity
    }

    /// How many slots hold an entry, with units in the window or not (entries are never
    /// removed, only reused). Scans the whole table: for monitoring, not for the hot path.
    pub fn entries(&self) -> usize {
        self.table.entries()
    }

    /// Slow-path event counters of the table.
    pub fn stats(&self) -> Stats {
        self.table.stats()
    }

    /// The logs: the table and the records beside it.
    #[inline]
    fn logs(&self) -> Logs<'_, M::Slot> {
        Logs {
            table: &self.table,
            records: &self.records,
            ring_bits: self.ring_bits,
            quota: self.quota,
        }
    }

    /// Where `key` lives in the table.
    #[inline]
    fn locate(&self, key: &K) -> Located<<M::Slot as SlotOps>::Identity> {
        self.table.locate::<K, M>(key)
    }

    /// The cost and time of `request`, or why it can never pass.
    #[inline]
    fn resolve(&self, request: &Request<SlidingLog>) -> Result<(u64, Timestamp), RequestError> {
        let max_cost = self.quota().max_cost();
        if request.cost > max_cost {
            return Err(RequestError::CostAboveLimit {
                cost: request.cost,
                limit: max_cost,
            });
        }
        Ok((request.cost, request.at.unwrap_or_else(|| self.now())))
    }

    /// The core every check funnels into: `cost` units (1 to the most a request may cost).
    #[inline]
    fn decide(&self, key: &K, cost: u64, now: Timestamp) -> Decision<SlidingLog> {
        let outcome = self.logs().check(self.locate(key), cost, now.as_ns());
        self.decision(outcome, cost, true)
    }

    /// The core every peek funnels into.
    fn peek_decision(&self, key: &K, cost: u64, now: Timestamp) -> Decision<SlidingLog> {
        let outcome = self.logs().peek(&self.locate(key), cost, now.as_ns());
        self.decision(outcome, cost, false)
    }

    #[inline]
    fn decision<'log>(
        &self,
        outcome: LogOutcome<'log>,
        cost: u64,
        check: bool,
    ) -> Decision<SlidingLog> {
        let quota = *self.quota();
        match outcome {
            LogOutcome::Judged { view, log } => {
                decision::on_log(view, cost, check && view.fits, quota, log)
            }
            LogOutcome::Empty { judged_ns } => {
                let fits = cost <= quota.limit();
                decision::without_log(fits, false, false, cost, quota, judged_ns, 0)
            }
            LogOutcome::Untracked { judged_ns } => {
                decision::without_log(true, check, true, cost, quota, judged_ns, 0)
            }
            LogOutcome::Refused {
                retry_after_ns,
                judged_ns,
            } => decision::without_log(
                false,
                false,
                true,
                cost,
                quota,
                judged_ns,
                retry_after_ns.unwrap_or(quota.window_ns()),
            ),
        }
    }
}

/// A keyed sliding log is built by the keyed limiters' one builder, [`KeyedBuilder`]
/// ([`KeyedSlidingLogLimiter::builder`]).
impl<K: ?Sized, C: Clock, M: KeyMode<K>> KeyedBuilder<K, SlidingLog, C, M, NoCounters> {
    /// Checks the limit (at most [`MAX_KEYED_LIMIT`]), then allocates the table and every
    /// slot's records, or says why not.
    ///
    /// ```
    /// use nanolimit::sliding_log::{KeyedSlidingLogLimiter, SlidingLog};
    /// use nanolimit::BuildError;
    ///
    /// let no_keys = KeyedSlidingLogLimiter::<u64>::builder(SlidingLog::per_minute(5)?)
    ///     .capacity(0)
    ///     .build();
    /// assert_eq!(no_keys.unwrap_err(), BuildError::ZeroCapacity);
    /// let too_large = KeyedSlidingLogLimiter::<u64>::builder(SlidingLog::per_minute(5_000)?).build();
    /// assert_eq!(too_large.unwrap_err(), BuildError::LimitTooLarge { limit: 5_000, max: 1_024 });
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn build(self) -> Result<KeyedSlidingLogLimiter<K, C, M>, BuildError> {
        let (quota, options, clock, NoCounters) = self.into_parts();
        let limit = quota.limit();
        if limit > MAX_KEYED_LIMIT {
            return Err(BuildError::LimitTooLarge {
                limit,
                max: MAX_KEYED_LIMIT,
            });
        }
        let table = Table::<M::Slot>::new(&options)?;
        // At most 1,024: a power of two that fits.
        let records_per_slot = (limit as usize).next_power_of_two();
        let count = table.slot_count().checked_mul(records_per_slot);
        let bytes = count
            .and_then(|count| count.checked_mul(8))
            .unwrap_or(usize::MAX);
        let records = count
            .and_then(empty_records)
            .ok_or(BuildError::AllocationFailed { bytes })?;
        Ok(KeyedSlidingLogLimiter {
            table,
            quota,
            clock,
            records,
            ring_bits: records_per_slot.trailing_zeros(),
            key: PhantomData,
        })
    }
}

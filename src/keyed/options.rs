//! Building a keyed limiter: the builder, the full-table policy, and why a table cannot be built.

use super::key_hash::KeyHashSeeds;
use super::key_mode::{Exact, Hashed, KeyMode};
use super::table::Table;
use super::KeyedLimiter;
use crate::clock::{Clock, QuantaClock};
use crate::counters::{Counters, Counting, NoCounters};
use crate::engine::request::JudgingLead;
use crate::quota::Quota;
use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;

/// What a keyed table does with a new key when every slot the key may use holds a live entry.
///
/// Whatever the policy, such a key's decision says so ([`Decision::is_untracked`]), and a
/// refused key reports nothing remaining and a `retry_after` no shorter than the time until one
/// of the slots it may use frees, never "retry now".
///
/// ```
/// use nanolimit::{FixedWindow, KeyedLimiter, ManualClock, WhenFull};
///
/// let limiter = KeyedLimiter::builder(FixedWindow::per_second(10)?)
///     .capacity(4)
///     .shards(1)
///     .when_full(WhenFull::Allow)
///     .clock(ManualClock::new())
///     .build()?;
/// for key in 0..100u32 {
///     assert!(limiter.check(&key).is_allowed());
/// }
/// assert!(limiter.stats().untracked_new_keys > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`Decision::is_untracked`]: crate::Decision::is_untracked
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WhenFull {
    /// Deny the new key (fail closed). The default: a flood of new keys can never push out a
    /// live key's state, so every live key keeps its exact limit.
    #[default]
    Deny,
    /// Allow the request without tracking the key (fail open).
    Allow,
    /// Evict the candidate entry closest to fresh (soonest to reset). The new key inherits its
    /// state, so an eviction never loosens a limit for the new key; if the inherited state
    /// denies the request, nothing is evicted and the new key is refused. The evicted key comes
    /// back as a new key (fresh if there is room then, else inheriting another entry's state).
    /// Under a sustained flood of new keys, inherited states run ahead of time, so many new
    /// keys are still refused, and a live key whose state is the closest to fresh among its
    /// candidates can lose its entry: prefer [`Deny`](Self::Deny) when live keys must keep their
    /// exact limits.
    EvictClosestToFresh,
}

/// Why a keyed table could not be built.
///
/// ```
/// use nanolimit::{Gcra, KeyedLimiter, TableError};
///
/// let zero = KeyedLimiter::<u64, _>::new(Gcra::per_second(1)?, 0);
/// assert_eq!(zero.err(), Some(TableError::ZeroCapacity));
/// let three_shards = KeyedLimiter::<u64, _>::builder(Gcra::per_second(1)?).shards(3).build();
/// assert_eq!(three_shards.err(), Some(TableError::ShardsNotPowerOfTwo { shards: 3 }));
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TableError {
    /// A capacity of zero keys.
    ZeroCapacity,
    /// A shard count that is zero or not a power of two.
    ShardsNotPowerOfTwo {
        /// The shard count asked for.
        shards: usize,
    },
    /// More shards than the table has buckets' worth of slots (a shard would hold less than a
    /// bucket), or more than 2^24 (a shard is named by the top bits of the 32 hash bits that
    /// draw a key's bucket, and at least 8 are left to draw the bucket within the shard).
    TooManyShards {
        /// The shard count asked for.
        shards: usize,
        /// The most this capacity allows.
        max: usize,
    },
    /// A capacity whose table would not fit in memory addressing, or would have more than
    /// 2^32 buckets (about 2.3 × 10^10 keys: placement draws a bucket from 32 hash bits).
    CapacityTooLarge {
        /// The capacity asked for.
        capacity: usize,
    },
    /// The allocator could not provide the table's memory.
    AllocationFailed {
        /// The bytes the table needs.
        bytes: usize,
    },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TableError::ZeroCapacity => f.write_str("keyed table capacity is zero"),
            TableError::ShardsNotPowerOfTwo { shards } => {
                write!(f, "keyed table shard count {shards} is not a power of two")
            }
            TableError::TooManyShards { shards, max } => write!(
                f,
                "keyed table shard count {shards} is above the {max} this capacity allows"
            ),
            TableError::CapacityTooLarge { capacity } => {
                write!(f, "keyed table capacity {capacity} is too large to address")
            }
            TableError::AllocationFailed { bytes } => {
                write!(f, "could not allocate {bytes} bytes for the keyed table")
            }
        }
    }
}

impl std::error::Error for TableError {}

/// Ties a builder to its key type and key mode without owning either.
type BuilderMarker<K, M> = PhantomData<(fn(&K), M)>;

/// Builds a [`KeyedLimiter`]: capacity, shards, full-table policy, clock, hash seed and key mode.
///
/// ```
/// use nanolimit::{KeyedLimiter, SlidingWindow, WhenFull};
///
/// let limiter = KeyedLimiter::builder(SlidingWindow::per_minute(60)?)
///     .capacity(10_000)
///     .shards(8)
///     .when_full(WhenFull::EvictClosestToFresh)
///     .build()?;
/// assert!(limiter.check(&42u64).is_allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct KeyedLimiterBuilder<K: ?Sized, Q, C, M, N = NoCounters> {
    quota: Q,
    capacity: usize,
    shards: Option<usize>,
    when_full: WhenFull,
    clock: C,
    seed: Option<u64>,
    counters: N,
    marker: BuilderMarker<K, M>,
}

impl<K: Hash + ?Sized, Q: Quota> KeyedLimiter<K, Q, QuantaClock, Hashed> {
    /// The default capacity of a builder: 65,536 keys.
    pub const DEFAULT_CAPACITY: usize = 1 << 16;

    /// A keyed limiter for up to `capacity` keys, on the default clock, with default shards and
    /// [`WhenFull::Deny`].
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::new(Gcra::per_second(10)?, 1_000)?;
    /// assert!(limiter.check(&"10.0.0.1").is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(quota: Q, capacity: usize) -> Result<Self, TableError> {
        Self::builder(quota).capacity(capacity).build()
    }

    /// A builder with the default capacity, shards, clock, [`WhenFull::Deny`] and [`Hashed`]
    /// keys.
    pub fn builder(quota: Q) -> KeyedLimiterBuilder<K, Q, QuantaClock, Hashed> {
        KeyedLimiterBuilder::with_defaults(quota, QuantaClock::new())
    }
}

impl<K: ?Sized, Q: Quota, C: Clock> KeyedLimiterBuilder<K, Q, C, Hashed> {
    /// The defaults of [`KeyedLimiter::builder`] on `clock`: for limiters built on the table
    /// (the keyed in-flight limiter), whose keys need not be `Hash` until they pick a mode.
    pub(crate) fn with_defaults(quota: Q, clock: C) -> Self {
        KeyedLimiterBuilder {
            quota,
            capacity: KeyedLimiter::<u64, Q>::DEFAULT_CAPACITY,
            shards: None,
            when_full: WhenFull::Deny,
            clock,
            seed: None,
            counters: NoCounters,
            marker: PhantomData,
        }
    }
}

impl<K: ?Sized, Q: Quota, C: Clock, M, N: Counting> KeyedLimiterBuilder<K, Q, C, M, N> {
    /// How many live keys the table is sized for ([sizing](super#sizing) says when the first
    /// new key may be refused). It allocates a half ([`Hashed`]) or a quarter ([`Exact`]) more
    /// slots as headroom (see [`KeyedLimiter::slots`]), once, at [`build`](Self::build); memory
    /// never grows.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// The number of shards, a power of two, at most one per bucket (8 slots) of the table
    /// and at most 2^24 ([`TableError::TooManyShards`]). Default: the smallest power of two at
    /// or above 4 × the available parallelism, reduced so that every shard holds at least
    /// 2,048 keys of capacity (which keeps shard overhead and rounding below 1 % of the table,
    /// so bytes per key barely depend on the machine's core count).
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// What to do with a new key when its candidate slots are all live.
    pub fn when_full(mut self, when_full: WhenFull) -> Self {
        self.when_full = when_full;
        self
    }

    /// The full-table policy set so far (for limiters that refuse some policies).
    pub(crate) fn when_full_policy(&self) -> WhenFull {
        self.when_full
    }

    /// Fixes the hash seed, for reproducible placement in tests and simulations. By default each
    /// table draws a random seed, so that clients cannot aim keys at one bucket: do not fix it
    /// in production.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Counts the limiter's checks: allowed and denied, calls and units
    /// ([`KeyedLimiter::totals`]), on per-thread striped counters off the slots' cache lines
    /// (see [the counters module](crate::counters)): the limiter is a `KeyedLimiter<K, Q, C, M,
    /// Counters>`. Without it ([`NoCounters`], the default), a check counts nothing and costs
    /// exactly what it did before counters existed.
    ///
    /// ```
    /// use nanolimit::{FixedWindow, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::builder(FixedWindow::per_second(1)?)
    ///     .with_counters()
    ///     .build()?;
    /// let _ = limiter.check(&7);
    /// assert_eq!(limiter.totals().map(|totals| totals.calls()), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_counters(self) -> KeyedLimiterBuilder<K, Q, C, M, Counters> {
        KeyedLimiterBuilder {
            quota: self.quota,
            capacity: self.capacity,
            shards: self.shards,
            when_full: self.when_full,
            clock: self.clock,
            seed: self.seed,
            counters: Counters::new(),
            marker: PhantomData,
        }
    }

    /// The clock to read.
    pub fn clock<C2: Clock>(self, clock: C2) -> KeyedLimiterBuilder<K, Q, C2, M, N> {
        KeyedLimiterBuilder {
            quota: self.quota,
            capacity: self.capacity,
            shards: self.shards,
            when_full: self.when_full,
            clock,
            seed: self.seed,
            counters: self.counters,
            marker: PhantomData,
        }
    }

    /// How keys are stored: [`Hashed`] (the default) or [`Exact`].
    ///
    /// ```
    /// use nanolimit::{Exact, Gcra, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::builder(Gcra::per_second(5)?)
    ///     .key_mode::<Exact>()
    ///     .build()?;
    /// assert_eq!(limiter.bytes_per_key(), 31);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key_mode<M2>(self) -> KeyedLimiterBuilder<K, Q, C, M2, N> {
        KeyedLimiterBuilder {
            quota: self.quota,
            capacity: self.capacity,
            shards: self.shards,
            when_full: self.when_full,
            clock: self.clock,
            seed: self.seed,
            counters: self.counters,
            marker: PhantomData,
        }
    }

    /// Shorthand for [`key_mode::<Exact>()`](Self::key_mode): integer keys up to 128 bits,
    /// stored exactly.
    pub fn exact_keys(self) -> KeyedLimiterBuilder<K, Q, C, Exact, N> {
        self.key_mode::<Exact>()
    }

    /// Allocates the table (and writes every slot's marker, so its memory is resident from
    /// here on), or says why it cannot, including an allocation the system refuses. On a system
    /// that overcommits memory, a table larger than the memory actually available can be
    /// granted and then fail as it is written: size tables for the machine.
    pub fn build(self) -> Result<KeyedLimiter<K, Q, C, M, N>, TableError>
    where
        M: KeyMode<K>,
    {
        let shards = match self.shards {
            Some(shards) => shards,
            None => default_shards(self.capacity),
        };
        let hasher = match self.seed {
            Some(seed) => ahash::RandomState::with_seeds(
                seed,
                !seed,
                seed.rotate_left(32),
                !seed.rotate_left(32),
            ),
            None => ahash::RandomState::new(),
        };
        Ok(KeyedLimiter {
            table: Table::new(self.capacity, shards)?,
            capacity: self.capacity,
            key_hash_seeds: KeyHashSeeds::from_hasher(&hasher),
            hasher,
            lead: JudgingLead::new(&self.quota),
            quota: self.quota,
            clock: self.clock,
            when_full: self.when_full,
            counters: self.counters,
            key: PhantomData,
        })
    }
}

/// The fewest keys of capacity a shard gets when the builder picks the shard count: 2,048 keys
/// are at least 384 buckets of 8 slots (256 with [`Exact`] keys' smaller headroom), against a
/// shard's fixed cost of its cache-padded writer part and at most one bucket of rounding.
const MIN_KEYS_PER_DEFAULT_SHARD: usize = 2_048;

fn default_shards(capacity: usize) -> usize {
    let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut shards = (parallelism * 4).next_power_of_two();
    while shards > 1 && capacity / shards < MIN_KEYS_PER_DEFAULT_SHARD {
        shards /= 2;
    }
    shards
}

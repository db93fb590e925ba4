//! A table's options: its size, its shards, what it does when full, its hash seed; and why a
//! table cannot be built.

use core::fmt;

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

/// The default capacity of a keyed table: 65,536 keys.
pub(crate) const DEFAULT_CAPACITY: usize = 1 << 16;

/// How a table is built: what every keyed limiter's builder sets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableOptions {
    /// Live keys the table is sized for.
    pub(crate) capacity: usize,
    /// The shard count asked for, or `None` for the default.
    pub(crate) shards: Option<usize>,
    pub(crate) when_full: WhenFull,
    /// A fixed hash seed (tests and simulations), or `None` for a random one.
    pub(crate) seed: Option<u64>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            capacity: DEFAULT_CAPACITY,
            shards: None,
            when_full: WhenFull::Deny,
            seed: None,
        }
    }
}

impl TableOptions {
    /// The shard count: as asked, or the default for the capacity.
    pub(crate) fn shards(&self) -> usize {
        self.shards.unwrap_or_else(|| default_shards(self.capacity))
    }

    /// The table's key hasher: seeded from the fixed seed, or at random.
    pub(crate) fn hasher(&self) -> ahash::RandomState {
        match self.seed {
            Some(seed) => ahash::RandomState::with_seeds(
                seed,
                !seed,
                seed.rotate_left(32),
                !seed.rotate_left(32),
            ),
            None => ahash::RandomState::new(),
        }
    }
}

/// The fewest keys of capacity a shard gets when the builder picks the shard count: 2,048 keys
/// are at least 384 buckets of 8 slots (256 with [`Exact`](super::Exact) keys' smaller headroom), against a
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

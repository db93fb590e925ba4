//! A table's options: its size, its shards, what it does when full, its hash seed.

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

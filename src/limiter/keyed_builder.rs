//! Building a keyed limiter: the one builder every keyed kind shares (its table's options, its
//! clock, its key mode), and what each kind builds from it.

use super::core::Core;
use super::counters::{Counters, Counting, NoCounters};
use super::keyed::KeyedLimiter;
use crate::clock::{Clock, QuantaClock};
use crate::engine::error::BuildError;
use crate::quota::Quota;
use crate::store::table::{
    Exact, Hashed, KeyMarker, KeyMode, Table, TableOptions, WhenFull, DEFAULT_CAPACITY,
};
use core::hash::Hash;
use core::marker::PhantomData;

/// Builds a keyed limiter: a [`KeyedLimiter`] ([`KeyedLimiter::builder`]), a keyed sliding log
/// ([`KeyedSlidingLogLimiter::builder`](crate::sliding_log::KeyedSlidingLogLimiter::builder)) or
/// a keyed in-flight limiter
/// ([`KeyedInFlightLimiter::builder`](crate::inflight::KeyedInFlightLimiter::builder)): the one
/// set of table options every keyed kind shares (capacity, shards, full-table policy, hash
/// seed, key mode), the clock, and counters (rate limiters only). `Q` is what each key is
/// limited by.
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
pub struct KeyedBuilder<K: ?Sized, Q, C, M, N = NoCounters> {
    /// What is built on the table: the quota (or the in-flight limit).
    pub(crate) quota: Q,
    pub(crate) table: TableOptions,
    pub(crate) clock: C,
    counters: N,
    marker: KeyMarker<K, M>,
}

impl<K: Hash + ?Sized, Q: Quota> KeyedLimiter<K, Q, QuantaClock, Hashed> {
    /// The default capacity of a builder: 65,536 keys.
    pub const DEFAULT_CAPACITY: usize = DEFAULT_CAPACITY;

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
    pub fn new(quota: Q, capacity: usize) -> Result<Self, BuildError> {
        Self::builder(quota).capacity(capacity).build()
    }

    /// A builder with the default capacity, shards, clock, [`WhenFull::Deny`] and [`Hashed`]
    /// keys.
    pub fn builder(quota: Q) -> KeyedBuilder<K, Q, QuantaClock, Hashed> {
        KeyedBuilder::with_defaults(quota, QuantaClock::new())
    }
}

impl<K: ?Sized, Q, C: Clock> KeyedBuilder<K, Q, C, Hashed> {
    /// The defaults of every keyed kind's `builder`, limiting keys by `quota`, on `clock`.
    pub(crate) fn with_defaults(quota: Q, clock: C) -> Self {
        KeyedBuilder {
            quota,
            table: TableOptions::default(),
            clock,
            counters: NoCounters,
            marker: PhantomData,
        }
    }
}

impl<K: ?Sized, Q, C: Clock, M, N: Counting> KeyedBuilder<K, Q, C, M, N> {
    /// How many live keys the table is sized for ([sizing](crate::keyed#sizing) says when the first
    /// new key may be refused). It allocates a half ([`Hashed`]) or a quarter ([`Exact`]) more
    /// slots as headroom (see [`KeyedLimiter::slots`]), once, at [`build`](Self::build); memory
    /// never grows.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.table.capacity = capacity;
        self
    }

    /// The number of shards, a power of two, at most one per bucket (8 slots) of the table
    /// and at most 2^24 ([`BuildError::TooManyShards`]). Default: the smallest power of two at
    /// or above 4 × the available parallelism, reduced so that every shard holds at least
    /// 2,048 keys of capacity (which keeps shard overhead and rounding below 1 % of the table,
    /// so bytes per key barely depend on the machine's core count).
    pub fn shards(mut self, shards: usize) -> Self {
        self.table.shards = Some(shards);
        self
    }

    /// What to do with a new key when its candidate slots are all live.
    pub fn when_full(mut self, when_full: WhenFull) -> Self {
        self.table.when_full = when_full;
        self
    }

    /// Fixes the hash seed, for reproducible placement in tests and simulations. By default each
    /// table draws a random seed, so that clients cannot aim keys at one bucket: do not fix it
    /// in production.
    pub fn seed(mut self, seed: u64) -> Self {
        self.table.seed = Some(seed);
        self
    }

    /// Counts the limiter's checks: allowed and denied, calls and units
    /// ([`KeyedLimiter::stats`]), on per-thread striped counters off the slots' cache lines
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
    /// assert_eq!(limiter.stats().calls(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_counters(self) -> KeyedBuilder<K, Q, C, M, Counters> {
        KeyedBuilder {
            quota: self.quota,
            table: self.table,
            clock: self.clock,
            counters: Counters::new(),
            marker: PhantomData,
        }
    }

    /// The clock to read.
    pub fn clock<C2: Clock>(self, clock: C2) -> KeyedBuilder<K, Q, C2, M, N> {
        KeyedBuilder {
            quota: self.quota,
            table: self.table,
            clock,
            counters: self.counters,
            marker: PhantomData,
        }
    }

    /// How keys are stored: [`Hashed`] (the default) or [`Exact`].
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    /// use nanolimit::keyed::Exact;
    ///
    /// let limiter = KeyedLimiter::<u64, _>::builder(Gcra::per_second(5)?)
    ///     .key_mode::<Exact>()
    ///     .build()?;
    /// assert_eq!(limiter.bytes_per_key(), 31);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key_mode<M2>(self) -> KeyedBuilder<K, Q, C, M2, N> {
        KeyedBuilder {
            quota: self.quota,
            table: self.table,
            clock: self.clock,
            counters: self.counters,
            marker: PhantomData,
        }
    }

    /// Shorthand for [`key_mode::<Exact>()`](Self::key_mode): integer keys up to 128 bits,
    /// stored exactly.
    pub fn exact_keys(self) -> KeyedBuilder<K, Q, C, Exact, N> {
        self.key_mode::<Exact>()
    }

    /// The table's options and the clock, to build the kind this builder is for.
    pub(crate) fn into_parts(self) -> (Q, TableOptions, C, N) {
        (self.quota, self.table, self.clock, self.counters)
    }
}

impl<K: ?Sized, Q: Quota, C: Clock, M: KeyMode<K>, N: Counting> KeyedBuilder<K, Q, C, M, N> {
    /// Allocates the table (and writes every slot's marker, so its memory is resident from
    /// here on), or says why it cannot, including an allocation the system refuses. On a system
    /// that overcommits memory, a table larger than the memory actually available can be
    /// granted and then fail as it is written: size tables for the machine.
    pub fn build(self) -> Result<KeyedLimiter<K, Q, C, M, N>, BuildError> {
        let table = Table::new(&self.table)?;
        let core = Core::new(table, self.quota, self.clock, self.counters);
        Ok(KeyedLimiter::from_core(core))
    }
}

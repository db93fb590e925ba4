//! Keyed limiters: [`KeyedLimiter`], one quota and one state word per key (per client IP, API
//! key, account or flow), on a bounded, sharded, cache-padded table built for hot paths and
//! hostile traffic, through the one core every rate limiter shares; its builder
//! ([`KeyedBuilder`]), key modes ([`Hashed`], [`Exact`]) and what it does when full
//! ([`WhenFull`]).
//!
//! ```
//! use nanolimit::{Gcra, KeyedLimiter, ManualClock, WhenFull};
//! use std::net::IpAddr;
//!
//! // 10 requests per second per client, for up to 100,000 clients at once.
//! let per_client = KeyedLimiter::<IpAddr, _>::builder(Gcra::per_second(10)?)
//!     .capacity(100_000)
//!     .when_full(WhenFull::Deny) // the default: live keys keep their exact limits
//!     .clock(ManualClock::new())
//!     .build()?;
//! let client: IpAddr = "203.0.113.7".parse()?;
//! assert!(per_client.check(&client).is_allowed());
//! assert_eq!(per_client.peek(&client).remaining(), 9);
//! println!("{} bytes for 100,000 clients", per_client.memory_bytes());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The table
//!
//! The table is allocated once: a power-of-two number of shards of 64-byte-aligned buckets of
//! 8 slots. A key may use the 16 slots of its two buckets, picked by a hash seeded at random
//! per table (ahash), so clients cannot aim their keys at one bucket.
//!
//! - **Checks of a present key** are lock-free: no lock, no allocation, no clone of the key. A
//!   word of one-byte hints per bucket lets a lookup read only the slots that may hold the key.
//! - **Inserts** take the shard's insert lock, so two threads inserting the same key make one
//!   entry; checks never take it. What lookups read of a shard and what inserts write sit on
//!   separate cache lines, so a flood of new keys does not slow a hot key's checks.
//! - **Bounded memory, no sweeper**: an entry whose state is equivalent to a fresh key's is
//!   reused by the next insert that needs its slot.
//! - **A full table**: when a new key's 16 slots all hold live entries, [`WhenFull`] decides:
//!   [`Deny`](WhenFull::Deny) (the default, failing closed: live keys keep their exact limits),
//!   [`Allow`](WhenFull::Allow) (the key passes untracked) or
//!   [`EvictClosestToFresh`](WhenFull::EvictClosestToFresh). A refused key's decision says so
//!   ([`is_untracked`](crate::Decision::is_untracked)), reports nothing remaining and a
//!   `retry_after` no shorter than the time until one of its slots frees: never "retry now"
//!   (the HTTP layer answers it with `503`, not the client's `429`).
//!   [`stats()`](KeyedLimiter::stats) counts inserts, reclaims, refused and untracked new keys,
//!   evictions and removals, beside the entries held.
//! - **Forgetting a key**: [`remove(&key)`](KeyedLimiter::remove) makes the key's next check a
//!   new key's (a login limiter cleared after a successful login; see [`live`](crate::live)).
//! - **Building**: a capacity or shard count that cannot be allocated is a
//!   [`BuildError`](crate::BuildError) (the allocator's refusal included), never an abort. A
//!   table is written in full when built, so on a system that overcommits memory, size it for
//!   the memory the machine really has.
//!
//! # Checks by a hash the caller holds
//!
//! A packet loop often has a flow hash already (the NIC's RSS hash, a 5-tuple hash computed once
//! per packet). That hash is a `u64` key: the table hashes it again with its own seed (a few
//! instructions for a `u64`), so hashes with few varying bits still spread over the whole table.
//! Two flows the caller hashed alike are one key to the table: the caller owns the hash's
//! resistance to chosen collisions (a Toeplitz hash with a secret key, a keyed 64-bit hash).
//!
//! ```
//! use nanolimit::{Gcra, KeyedLimiter};
//!
//! // 10,000 packets per second per flow, for up to 1,000,000 flows.
//! let flows = KeyedLimiter::<u64, _>::new(Gcra::per_second(10_000)?, 1_000_000)?;
//! let now = flows.now(); // once per batch
//! for rss_hash in [0x5f3a_91c2_u64, 0x0000_0007, 0x5f3a_91c2] {
//!     assert!(flows.check_at(&rss_hash, now).is_allowed());
//! }
//! assert_eq!(flows.entries(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Sizing
//!
//! | key mode | identity | slot | slots per key of capacity | bytes per key of capacity |
//! |---|---|---|---|---|
//! | [`Hashed`] (default) | the key's 64-bit seeded hash | 16 B, + a 1-byte hint | 1.5 | 25.5 |
//! | [`Exact`] | the key itself, up to 128 bits | 24 B, + a 1-byte hint | 1.25 | 31.25 |
//!
//! A key may only use the 16 slots of its two buckets (always two distinct ones, in a shard of
//! two buckets or more), hence the headroom. A new key goes to the bucket with more vacant
//! slots, and reuses a fresh-equivalent entry only when neither has one. Measured first refusal
//! of a new key while filling a table with live keys `0, 1, 2, …` (one table per seed, the
//! default shard count of a 2-core machine), as a fraction of capacity, lowest and median over
//! the seeds:
//!
//! | capacity | seeds | [`Hashed`]: tables refusing below capacity; lowest; median | [`Exact`]: the same |
//! |---|---|---|---|
//! | 16 | 20,000 | none; 112 %; 150 % | none; 112 %; 150 % |
//! | 256 | 20,000 | none; 105 %; 130 % | 3.3 %; 85 %; 109 % |
//! | 1,000 | 20,000 | none; 104 %; 124 % | 13 %; 86 %; 104 % |
//! | 4,096 | 5,000 | 1 table (at 99.7 %); 99.7 %; 119 % | 58 %; 84 %; 99.4 % |
//! | 20,000 | 2,000 | 1 table (at 99.98 %); 99.98 %; 114 % | 99 %; 84 %; 96 % |
//!
//! The tests `small_hashed_tables_hold_their_capacity_on_every_seed` (16, 64 and 256 keys, 45,000
//! seeds) and `a_table_of_live_keys_first_refuses_a_new_key_where_documented` (10^3 and 10^5
//! keys: hashed ones their capacity, exact ones 85 % of it) hold these figures. So a [`Hashed`]
//! table holds its capacity in live keys, but for the two-choice tail (in the measurements
//! above, one table in 5,000 of 4,096 keys refused its last 0.3 %, and one in 2,000 of 20,000
//! keys its last 0.02 %); size an [`Exact`] table about 20 % above the live keys you expect, or
//! use [`WhenFull::Allow`]. [`bytes_per_key()`](KeyedLimiter::bytes_per_key) and
//! [`memory_bytes()`](KeyedLimiter::memory_bytes) report what a table takes.
//!
//! # Key identity and collisions
//!
//! [`Hashed`] keeps a 64-bit seeded hash, not the key: two distinct keys share a state only if
//! all 64 bits of their hashes agree. For a lookup, the chance that one of the (at most 16)
//! entries in its two candidate buckets is another key with the same hash is at most
//! `16 / 2^(64 − b)`, where `2^b` is the number of buckets in the table (an entry's bucket
//! already matches about `b` bits of the hash): for a 100,000-key table, `b ≈ 14.2` and this is
//! about 2^-45.8, 1.6·10^-14 per lookup. [`Exact`] stores integer keys up to 128 bits (IPv4,
//! IPv6, `u64` ids) and never confuses two keys.
//!

use super::core::Core;
#[cfg(feature = "metrics")]
use super::counters;
use super::counters::{Counting, NoCounters};
use super::reservation::Reservation;
use crate::clock::{Clock, QuantaClock, Timestamp};
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::engine::stats::Stats;
use crate::quota::{Gcra, Quota, QuotaError};
use crate::store::table::{Located, SlotOps, Table};
use core::fmt;
use core::marker::PhantomData;

pub use super::keyed_builder::KeyedBuilder;

pub use crate::store::table::{Exact, ExactKey, Hashed, KeyMode, WhenFull};

/// A rate limiter with one state per key: client IPs, user ids, API keys, flow tuples.
///
/// Checks of a key already in the table are lock-free and allocation-free; see the
/// [module documentation](self) for the table, sizing and the slot protocol. Share it between
/// threads by reference or in an [`Arc`](std::sync::Arc).
///
/// `K` is the key type (`?Sized`: a `KeyedLimiter<str, _>` takes `&str`); `M` how keys are
/// stored: [`Hashed`] (default, any `Hash` key) or [`Exact`].
///
/// | operation | shorthand | packet-loop form | full form |
/// |---|---|---|---|
/// | consume if it fits | [`check`](Self::check) | [`check_at`](Self::check_at) | [`check_with`](Self::check_with) |
/// | ask without consuming | [`peek`](Self::peek) | | [`peek_with`](Self::peek_with) |
/// | book ahead (GCRA) | [`reserve`](Self::reserve) | | [`reserve_with`](Self::reserve_with) |
/// | block until the booked start (GCRA) | [`wait`](Self::wait) | | [`wait_with`](Self::wait_with) |
/// | forget a key (its next check is a new key's) | [`remove`](Self::remove) | | |
///
/// ```
/// use nanolimit::{Gcra, KeyedLimiter, ManualClock};
/// use std::net::Ipv4Addr;
///
/// let limiter = KeyedLimiter::builder(Gcra::per_second(2)?)
///     .capacity(100_000)
///     .clock(ManualClock::new())
///     .build()?;
/// let alice = Ipv4Addr::new(192, 0, 2, 1);
/// let bob = Ipv4Addr::new(192, 0, 2, 2);
/// assert!(limiter.check(&alice).is_allowed());
/// assert!(limiter.check(&alice).is_allowed());
/// assert!(limiter.check(&alice).is_denied());
/// assert!(limiter.check(&bob).is_allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedLimiter<
    K: ?Sized,
    Q: Quota,
    C: Clock = QuantaClock,
    M: KeyMode<K> = Hashed,
    N: Counting = NoCounters,
> {
    /// The table, the quota, the clock and the counters
    /// ([`Counters`](crate::counters::Counters), if built
    /// [`with_counters`](KeyedBuilder::with_counters), or nothing).
    pub(crate) core: Core<Q, Table<M::Slot>, C, N>,
    key: PhantomData<fn(&K)>,
}

impl<K: ?Sized, Q: Quota, C: Clock + fmt::Debug, M: KeyMode<K>, N: Counting> fmt::Debug
    for KeyedLimiter<K, Q, C, M, N>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLimiter")
            .field("quota", &self.core.quota)
            .field("clock", &self.core.clock)
            .field("table", &self.core.store)
            .finish_non_exhaustive()
    }
}

impl<K: ?Sized, Q: Quota, C: Clock, M: KeyMode<K>, N: Counting> KeyedLimiter<K, Q, C, M, N> {
    /// Checks one unit for `key` now: consumes it if it fits.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<str, _>::new(Gcra::per_minute(1)?, 1_000)?;
    /// assert!(limiter.check("api-key-1").is_allowed());
    /// let decision = limiter.check("api-key-1");
    /// assert!(decision.is_denied());
    /// assert!(decision.retry_after().as_secs() >= 59);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check(&self, key: &K) -> Decision<Q> {
        self.core.check_at(self.locate(key), self.core.clock.now())
    }

    /// Checks one unit for `key` at `now`, a reading the caller already holds: no clock read.
    /// The packet-loop form: infallible and as cheap as a check gets.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    /// use std::time::Duration;
    ///
    /// let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_second(1)?, 1_000)?;
    /// let now = limiter.now();
    /// for flow in [1u64, 2, 3] {
    ///     assert!(limiter.check_at(&flow, now).is_allowed());
    /// }
    /// assert!(limiter.check_at(&1, now).is_denied());
    /// assert!(limiter.check_at(&1, now.saturating_add(Duration::from_secs(1))).is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_at(&self, key: &K, now: Timestamp) -> Decision<Q> {
        self.core.check_at(self.locate(key), now)
    }

    /// Checks `request` for `key` (cost, time, tier; see [`Request`]): consumes its cost, all or
    /// nothing, if it fits.
    ///
    /// Errors when the request can never pass: a cost above its quota's limit, or a tier made
    /// by a limiter whose state counts in other units.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock, Request, Timestamp};
    ///
    /// // 1 MB/s per client, bursts of 64 KiB.
    /// let bytes = Gcra::per_second(1_000_000)?.with_burst(65_536)?;
    /// let limiter = KeyedLimiter::builder(bytes).clock(ManualClock::new()).build()?;
    /// assert!(limiter.check_with(&7u32, Request::cost(1_500))?.is_allowed());
    /// assert!(limiter.check_with(&7u32, Request::cost(100_000)).is_err());
    /// // This client's tier allows bursts of 1 MB; a second later its debt is paid.
    /// let bulk = limiter.tier(Gcra::per_second(1_000_000)?)?;
    /// let later = Timestamp::from_ns(1_000_000_000)?;
    /// assert!(limiter.check_with(&7, Request::cost(600_000).tier(bulk).at(later))?.is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_with(&self, key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        self.core.check_with(self.locate(key), request)
    }

    /// Whether one unit for `key` would pass now, consuming nothing and inserting nothing.
    ///
    /// ```
    /// use nanolimit::{FixedWindow, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<str, _>::new(FixedWindow::per_minute(2)?, 100)?;
    /// assert_eq!(limiter.peek("bob").remaining(), 2);
    /// assert_eq!(limiter.entries(), 0);
    /// let _ = limiter.check("bob");
    /// assert_eq!(limiter.peek("bob").remaining(), 1);
    /// assert_eq!(limiter.peek("bob").remaining(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek(&self, key: &K) -> Decision<Q> {
        self.core.peek_one(self.locate(key))
    }

    /// Whether `request` for `key` would pass, consuming nothing and inserting nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, Request};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_minute(10)?, 100)?;
    /// assert!(limiter.check_with(&9, Request::cost(8))?.is_allowed());
    /// assert!(limiter.peek_with(&9, Request::cost(2))?.is_allowed());
    /// assert!(limiter.peek_with(&9, Request::cost(3))?.is_denied());
    /// // Under a tier with bursts of 20, the same key has 12 left.
    /// let large = limiter.tier(Gcra::per_minute(10)?.with_burst(20)?)?;
    /// assert_eq!(limiter.peek_with(&9, Request::new().tier(large))?.remaining(), 12);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_with(&self, key: &K, request: Request<Q>) -> Result<Decision<Q>, RequestError> {
        self.core.peek_with(self.locate(key), request)
    }

    /// `quota` made ready for requests to this limiter ([`Request::tier`]): validated and
    /// expressed in its state's units once, here. See [`Request::tier`] for how a key's state carries
    /// over between tiers.
    ///
    /// ```
    /// use nanolimit::{FixedWindow, KeyedLimiter, QuotaError};
    ///
    /// let limiter = KeyedLimiter::<str, _>::new(FixedWindow::per_second(10)?, 100)?;
    /// assert!(limiter.tier(FixedWindow::per_second(100)?).is_ok());
    /// // Another window length cannot share the table's counts.
    /// assert_eq!(
    ///     limiter.tier(FixedWindow::per_minute(10)?).err(),
    ///     Some(QuotaError::IncompatibleQuota)
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tier(&self, quota: Q) -> Result<Q, QuotaError> {
        self.core.tier(quota)
    }

    /// Removes `key` from the table: its next check is judged as a new key's, on a fresh state
    /// (if a slot is free for it). Whether the table held `key`. For a limiter that forgets a
    /// key on an event: failed logins cleared by a successful one, a client an operator lets
    /// back in.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock};
    ///
    /// // Three failed logins per user, then one a minute.
    /// let failed_logins = KeyedLimiter::builder(Gcra::per_minute(1)?.with_burst(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// for _ in 0..3 {
    ///     assert!(failed_logins.check(&"alice").is_allowed());
    /// }
    /// assert!(failed_logins.check(&"alice").is_denied());
    /// // Alice logs in: her failures no longer count.
    /// assert!(failed_logins.remove(&"alice"));
    /// assert_eq!(failed_logins.peek(&"alice").remaining(), 3);
    /// assert!(!failed_logins.remove(&"bob"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// - **Concurrency.** It takes the key's shard insert lock, as an insert does, and writes
    ///   only the key's hint: checks never wait for it, nor slow down. A check of `key` that
    ///   races the removal is decided on the key's old state (as if made before the removal)
    ///   or as a new key's (after it), never on anything else; a check that happens after the
    ///   removal (on its thread, or synchronised with it) is a new key's.
    /// - **New key.** The key is judged as any new key: fresh, at its reading (no earlier than
    ///   its shard's floor for new keys: the latest moment a reclaimed entry there became
    ///   fresh), if a vacant slot or an entry equivalent to fresh is free for it; else as the
    ///   table's [`WhenFull`] says (refused until a slot frees, inheriting an evicted entry's
    ///   state, or admitted untracked).
    /// - **Slots.** The removed entry stays in its slot, detached from its key, and the key's
    ///   next check takes it back, fresh (unless the table evicts, below). Another key reuses
    ///   it only once its state would have been fresh, as it reuses any entry, or evicts it
    ///   ([`WhenFull::EvictClosestToFresh`]): so a check of the removed key that was under way
    ///   never lands on another key's state. A removal frees no capacity sooner. In a table
    ///   that evicts, the key's next check does not take its own entry back (an evicted state
    ///   may have been live in that slot): the entry waits, as another key's would. A
    ///   [`peek`](Self::peek) does not see the key's own removed entry: where the key's other
    ///   slots are all live, a peek right after the removal reports what a new key would get
    ///   (under [`WhenFull::Deny`], refused), while the check takes its entry back.
    /// - **Reservations and tiers.** A key has one state for every tier: removing it forgets
    ///   it for all. A [reservation](Self::reserve) of any key of the shard booked before the
    ///   removal gives nothing back if cancelled after it.
    ///
    /// Keyed sliding logs and keyed in-flight limiters have no `remove`.
    pub fn remove(&self, key: &K) -> bool {
        self.core.store.remove(&self.locate(key))
    }

    /// A reading of this limiter's clock, for [`check_at`](Self::check_at) and
    /// [`Request::at`]: a packet loop reads it once per batch.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<u32, _>::new(Gcra::per_second(1_000)?, 1_000)?;
    /// let now = limiter.now();
    /// let admitted = [1u32, 2, 3, 1].iter().filter(|flow| limiter.check_at(flow, now).is_allowed());
    /// assert_eq!(admitted.count(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.core.clock.now()
    }

    /// The table's quota.
    pub fn quota(&self) -> &Q {
        &self.core.quota
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.core.clock
    }

    /// How many live keys the table was sized for (as requested at construction).
    pub fn capacity(&self) -> usize {
        self.core.store.capacity()
    }

    /// How many slots the table has: the capacity plus its headroom (a half for [`Hashed`]
    /// keys, a quarter for [`Exact`] ones), rounded up to whole buckets.
    pub fn slots(&self) -> usize {
        self.core.store.slot_count()
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.core.store.shard_count()
    }

    /// Total bytes the table occupies, fixed at construction.
    pub fn memory_bytes(&self) -> usize {
        self.core.store.memory_bytes()
    }

    /// Bytes per key of capacity, all overhead (headroom, padding, shards) included, rounded to
    /// the nearest byte.
    pub fn bytes_per_key(&self) -> usize {
        (self.memory_bytes() + self.capacity() / 2) / self.capacity()
    }

    /// How many keys the table holds, live or equivalent to fresh (entries are reused, not
    /// swept; only [`remove`](Self::remove) takes one out). Scans the whole table: for
    /// monitoring, not for the hot path.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_second(1)?, 100_000)?;
    /// for key in 0..10 {
    ///     let _ = limiter.check(&key);
    /// }
    /// assert_eq!(limiter.entries(), 10);
    /// assert!(limiter.slots() >= 150_000);
    /// // Fixed at construction, whatever the traffic: at most 32 bytes per key of capacity.
    /// assert!(limiter.bytes_per_key() <= 32);
    /// assert!(limiter.memory_bytes() <= 100_000 * 32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entries(&self) -> usize {
        self.core.store.entries()
    }

    /// What this limiter counted ([`Stats`]): its table's occupancy and slow-path events, and
    /// its checks, allowed and denied, in calls and units, for a limiter built
    /// [`with_counters`](KeyedBuilder::with_counters) (zero otherwise; a refused new key
    /// counts as denied). Scans the whole table (for [`entries`](Stats::entries)): for
    /// monitoring, not for the hot path. Exact once the checking threads are joined.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock};
    ///
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(1)?)
    ///     .capacity(4)
    ///     .shards(1)
    ///     .clock(ManualClock::new())
    ///     .with_counters()
    ///     .build()?;
    /// for key in 0..100u32 {
    ///     let _ = limiter.check(&key);
    /// }
    /// let stats = limiter.stats();
    /// assert_eq!(stats.entries, limiter.slots() as u64);
    /// assert_eq!(stats.inserts, stats.entries);
    /// assert_eq!(stats.refused_new_keys, 100 - stats.entries);
    /// assert_eq!((stats.allowed, stats.denied), (stats.entries, stats.refused_new_keys));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let mut stats = self.core.store.stats();
        self.core.counters.add_to(&mut stats);
        stats
    }

    /// Records this limiter's [`stats`](Self::stats) (its checks, if it has counters; its
    /// table's occupancy and events) and capacity through the `metrics` facade (feature `metrics`),
    /// labelled `limiter = name`: `nanolimit_requests_total`, `nanolimit_units_total`,
    /// `nanolimit_keyed_entries`, `nanolimit_keyed_capacity`, `nanolimit_keyed_events_total`
    /// (see [`counters`](crate::counters#metrics-names-feature-metrics)). Scans the table, as
    /// `stats` does: call it at each scrape or on a timer, not per request.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    ///
    /// let per_ip = KeyedLimiter::builder(Gcra::per_second(10)?).with_counters().build()?;
    /// let _ = per_ip.check(&[192u8, 0, 2, 1]);
    /// // With a recorder installed, this sets nanolimit_keyed_entries{limiter="per-ip"} to 1.
    /// per_ip.record_metrics("per-ip");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "metrics")]
    pub fn record_metrics(&self, name: &str) {
        let stats = self.stats();
        if N::COUNTS {
            counters::export::record_checks(name, &stats);
        }
        counters::export::record_keyed(name, &stats, self.capacity());
    }

    /// The one-byte lookup hint `key` gets in this table: for the loom models, which need keys
    /// whose hints collide to reach some interleavings.
    #[cfg(nanolimit_loom)]
    pub fn lookup_hint(&self, key: &K) -> u8 {
        self.core.store.lookup_hint(self.locate(key).hash)
    }

    /// A keyed limiter over `core`.
    pub(crate) fn from_core(core: Core<Q, Table<M::Slot>, C, N>) -> Self {
        KeyedLimiter {
            core,
            key: PhantomData,
        }
    }

    /// Where `key` lives in the table.
    #[inline(always)]
    pub(crate) fn locate(&self, key: &K) -> Located<<M::Slot as SlotOps>::Identity> {
        self.core.store.locate::<K, M>(key)
    }
}

impl<K: ?Sized, C: Clock, M: KeyMode<K>, N: Counting> KeyedLimiter<K, Gcra, C, M, N> {
    /// Books one unit for `key` now, for the earliest start the quota allows: at once if it
    /// fits, else later, behind the key's earlier bookings. A key the table does not hold is
    /// inserted as a check would insert it; a full table may refuse it
    /// ([`WhenFull`]).
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock};
    /// use std::time::Duration;
    ///
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.reserve("alice").delay(), Duration::ZERO);
    /// assert_eq!(limiter.reserve("alice").delay(), Duration::from_secs(1));
    /// assert_eq!(limiter.reserve("bob").delay(), Duration::ZERO);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn reserve(&self, key: &K) -> Reservation<'_> {
        self.core.reserve_one(self.locate(key))
    }

    /// Books `request` for `key` (cost, time, tier, longest wait; see [`Request`]), or refuses
    /// it, booking nothing, if its start is further away than its
    /// [`max_wait`](Request::max_wait) (or the table has no room for a new key).
    ///
    /// Errors when the request can never pass: a cost above its quota's limit, or a tier made
    /// by a limiter whose state counts in other units.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, ManualClock, Request};
    /// use std::time::Duration;
    ///
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(10)?).clock(ManualClock::new()).build()?;
    /// let patient = Request::cost(10).max_wait(Duration::from_secs(1));
    /// assert!(limiter.reserve_with(&7u64, patient)?.is_allowed()); // now
    /// assert!(limiter.reserve_with(&7, patient)?.is_allowed()); // in 1 s
    /// assert!(limiter.reserve_with(&7, patient)?.is_denied()); // would be in 2 s
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn reserve_with(
        &self,
        key: &K,
        request: Request<Gcra>,
    ) -> Result<Reservation<'_>, RequestError> {
        self.core.reserve_with(self.locate(key), request)
    }

    /// Waits until one unit for `key` may start: books it ([`reserve`](Self::reserve)), then
    /// blocks the thread until its start. Returns the start.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<str, _>::new(Gcra::per_second(1_000)?, 1_000)?;
    /// let start = limiter.wait("tenant-1")?;
    /// assert!(limiter.now() >= start);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(&self, key: &K) -> Result<Timestamp, RequestError> {
        self.wait_with(key, Request::new())
    }

    /// Waits until `request` for `key` may start: books it
    /// ([`reserve_with`](Self::reserve_with)), then blocks until its start, plus its
    /// [`jitter`](Request::jitter). With a [`max_wait`](Request::max_wait), a request that
    /// could not start within it returns [`RequestError::WaitTooLong`] at once, booking nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter, Request, RequestError};
    /// use std::time::Duration;
    ///
    /// let limiter = KeyedLimiter::<u32, _>::new(Gcra::per_hour(1)?, 1_000)?;
    /// limiter.wait(&1)?;
    /// let request = Request::new().max_wait(Duration::from_secs(1));
    /// assert!(matches!(limiter.wait_with(&1, request), Err(RequestError::WaitTooLong { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_with(&self, key: &K, request: Request<Gcra>) -> Result<Timestamp, RequestError> {
        self.core.wait_with(self.locate(key), request)
    }

    /// Waits asynchronously until one unit for `key` may start (feature `tokio`); dropping
    /// the future before then cancels its reservation.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyedLimiter};
    /// use nanolimit::clock::TokioClock;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = KeyedLimiter::builder(Gcra::per_second(2)?.with_burst(1)?)
    ///     .clock(TokioClock::new())
    ///     .build()?;
    /// limiter.until_ready("alice").await?;
    /// let second = limiter.until_ready("alice").await?;
    /// assert_eq!(second.since_origin(), Duration::from_millis(500));
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn until_ready(&self, key: &K) -> Result<Timestamp, RequestError> {
        self.until_ready_with(key, Request::new()).await
    }

    /// Waits asynchronously until `request` for `key` may start (feature `tokio`), plus its
    /// [`jitter`](Request::jitter); with a [`max_wait`](Request::max_wait), returns
    /// [`RequestError::WaitTooLong`] at once if it could not start within it.
    #[cfg(feature = "tokio")]
    pub async fn until_ready_with(
        &self,
        key: &K,
        request: Request<Gcra>,
    ) -> Result<Timestamp, RequestError> {
        self.core.until_ready_with(self.locate(key), request).await
    }
}

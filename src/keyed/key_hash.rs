//! Checks by a hash the caller already holds: a packet loop's flow hash (the NIC's RSS hash, a
//! 5-tuple hash computed once per packet) names the key, so the table hashes nothing.
//!
//! The caller's hash is the key's identity, through a bijection the table keys with its own
//! seed ([`KeyHashSeeds`]): two distinct hashes stay two distinct keys, and where a key lands
//! (its shard, buckets and hint) stays unpredictable to whoever does not know the seed, even
//! for hashes that differ only in a few low bits (a 32-bit RSS hash has no high bits at all).
//! What the table cannot do for such a caller is tell apart two keys the caller hashed alike:
//! they share one state, so the caller owns the hash's resistance to chosen collisions.

use super::{Hashed, KeyedLimiter};
use crate::clock::{Clock, Timestamp};
use crate::counters::Counting;
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::operation::Consume;
use crate::engine::request::Request;
use crate::quota::Quota;
use core::hash::Hash;

/// A key's hash, computed by the caller: what [`KeyedLimiter::check_hash`] and its siblings take
/// instead of a key.
///
/// Keys with equal hashes are one key to the table. A NIC's RSS hash (Toeplitz with a secret
/// key) or a keyed 64-bit hash of the flow keeps chosen collisions out; an unkeyed hash of
/// attacker-chosen fields does not, and neither does a 32-bit hash over many flows (two of
/// 65,536 flows share a 32-bit hash with a chance of about 40 %). Prefer 64 bits where the flow
/// count is large.
///
/// ```
/// use nanolimit::{Gcra, KeyHash, KeyedLimiter};
///
/// let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_second(1)?, 1_000)?;
/// let flow = KeyHash::new(0x9e37_79b9);
/// assert!(limiter.check_hash(flow).is_allowed());
/// assert!(limiter.check_hash(flow).is_denied());
/// assert_eq!(flow.get(), 0x9e37_79b9);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyHash(u64);

impl KeyHash {
    /// The hash `hash` as a key's identity.
    #[inline]
    pub const fn new(hash: u64) -> KeyHash {
        KeyHash(hash)
    }

    /// The hash as the caller gave it.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// The odd multiplier of the first mixing round (2^64 / φ): any odd constant keeps the round a
/// bijection; this one spreads low input bits into high output bits.
const MIX_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// The secret words of a table's caller-hash bijection, drawn from its key hasher at
/// construction (so a table built with a fixed seed mixes reproducibly).
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyHashSeeds {
    /// XORed into the caller's hash before the first multiplication.
    offset: u64,
    /// The second round's multiplier, forced odd.
    odd_multiplier: u64,
}

impl KeyHashSeeds {
    /// Seeds drawn from `hasher`, the table's key hasher.
    pub(super) fn from_hasher(hasher: &ahash::RandomState) -> KeyHashSeeds {
        KeyHashSeeds {
            offset: hasher.hash_one(0x6b65_795f_6861_7368_u64),
            odd_multiplier: hasher.hash_one(0x6d75_6c74_6970_6c79_u64) | 1,
        }
    }

    /// The table's identity for a caller's hash: XOR with a constant, multiplications by odd
    /// constants and right xor-shifts are each invertible, so distinct hashes never meet.
    #[inline]
    pub(super) fn identity_hash(self, hash: KeyHash) -> u64 {
        let mut mixed = (hash.0 ^ self.offset).wrapping_mul(MIX_MULTIPLIER);
        mixed ^= mixed >> 32;
        mixed = mixed.wrapping_mul(self.odd_multiplier);
        mixed ^ (mixed >> 29)
    }
}

/// Checks and peeks by a caller's [`KeyHash`], on tables of [`Hashed`] keys (the identity of a
/// hashed key is a 64-bit hash already; an [`Exact`](super::Exact) table needs the key itself).
/// Use one form per table: a key checked by [`check`](KeyedLimiter::check) and the same key's
/// flow hash checked by [`check_hash`](KeyedLimiter::check_hash) are two keys.
impl<K: Hash + ?Sized, Q: Quota, C: Clock, N: Counting> KeyedLimiter<K, Q, C, Hashed, N> {
    /// Checks one unit for the key the caller hashed to `hash`, now.
    ///
    /// ```
    /// use nanolimit::{FixedWindow, KeyHash, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::new(FixedWindow::per_second(2)?, 1_000)?;
    /// let rss_hash = KeyHash::new(0x1234_5678);
    /// assert!(limiter.check_hash(rss_hash).is_allowed());
    /// assert!(limiter.check_hash(rss_hash).is_allowed());
    /// assert!(limiter.check_hash(rss_hash).is_denied());
    /// assert!(limiter.check_hash(KeyHash::new(0x1234_5679)).is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_hash(&self, hash: KeyHash) -> Decision<Q> {
        self.check_hash_at(hash, self.clock.now())
    }

    /// Checks one unit for the key hashed to `hash` at `now`, a reading the caller holds: the
    /// packet loop's form, with neither a key hash nor a clock read.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyHash, KeyedLimiter};
    ///
    /// let flows = KeyedLimiter::<u64, _>::new(Gcra::per_second(1_000)?, 100_000)?;
    /// let now = flows.now(); // once per batch of packets
    /// let batch = [0x0a0b_0c0d_u32, 0x0a0b_0c0e, 0x0a0b_0c0d];
    /// let admitted = batch
    ///     .iter()
    ///     .filter(|&&rss| flows.check_hash_at(KeyHash::new(rss.into()), now).is_allowed());
    /// assert_eq!(admitted.count(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_hash_at(&self, hash: KeyHash, now: Timestamp) -> Decision<Q> {
        let identity_hash = self.key_hash_seeds.identity_hash(hash);
        // Every quota's limit is at least 1.
        let decision = self.decide_identified(
            Consume,
            identity_hash,
            [identity_hash],
            &self.quota,
            1,
            self.quota.instant(now),
        );
        self.counters.record(decision.is_allowed(), 1);
        decision
    }

    /// Checks `request` (cost, time, tier; see [`Request`]) for the key hashed to `hash`:
    /// consumes its cost, all or nothing, if it fits. Errors as
    /// [`check_with`](KeyedLimiter::check_with) does.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyHash, KeyedLimiter, ManualClock, Request};
    ///
    /// // 1 MB/s per flow, bursts of 64 KiB, each packet charged its size.
    /// let bytes = Gcra::per_second(1_000_000)?.with_burst(65_536)?;
    /// let flows = KeyedLimiter::<u64, _>::builder(bytes).clock(ManualClock::new()).build()?;
    /// let flow = KeyHash::new(0xfeed_beef);
    /// assert!(flows.check_hash_with(flow, Request::cost(60_000))?.is_allowed());
    /// assert!(flows.check_hash_with(flow, Request::cost(9_000))?.is_denied());
    /// assert!(flows.check_hash_with(flow, Request::cost(70_000)).is_err()); // above the burst
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_hash_with(
        &self,
        hash: KeyHash,
        request: Request<Q>,
    ) -> Result<Decision<Q>, RequestError> {
        let resolved = request.resolve(&self.quota, &self.lead, &self.clock)?;
        let identity_hash = self.key_hash_seeds.identity_hash(hash);
        let identity = [identity_hash];
        // A check of no cost changes nothing: judged as a peek, counted as a check.
        let decision = if resolved.cost == 0 {
            self.peek_identified(identity_hash, &identity, &resolved.quota, 0, resolved.now)
        } else {
            self.decide_identified(
                Consume,
                identity_hash,
                identity,
                &resolved.quota,
                resolved.cost,
                resolved.now,
            )
        };
        self.counters.record(decision.is_allowed(), resolved.cost);
        Ok(decision)
    }

    /// Whether one unit for the key hashed to `hash` would pass now, consuming and inserting
    /// nothing.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyHash, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_minute(3)?, 1_000)?;
    /// let flow = KeyHash::new(7);
    /// assert_eq!(limiter.peek_hash(flow).remaining(), 3);
    /// assert_eq!(limiter.entries(), 0);
    /// let _ = limiter.check_hash(flow);
    /// assert_eq!(limiter.peek_hash(flow).remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_hash(&self, hash: KeyHash) -> Decision<Q> {
        let now = self.quota.instant(self.clock.now());
        let identity_hash = self.key_hash_seeds.identity_hash(hash);
        self.peek_identified(identity_hash, &[identity_hash], &self.quota, 1, now)
    }

    /// Removes the key hashed to `hash`, as [`remove`](KeyedLimiter::remove) removes a key:
    /// whether the table held it.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyHash, KeyedLimiter};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_minute(1)?, 1_000)?;
    /// let flow = KeyHash::new(7);
    /// assert!(limiter.check_hash(flow).is_allowed());
    /// assert!(limiter.check_hash(flow).is_denied());
    /// assert!(limiter.remove_hash(flow));
    /// assert!(limiter.check_hash(flow).is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_hash(&self, hash: KeyHash) -> bool {
        let identity_hash = self.key_hash_seeds.identity_hash(hash);
        self.remove_identified(identity_hash, &[identity_hash])
    }

    /// Whether `request` for the key hashed to `hash` would pass, consuming and inserting
    /// nothing. Errors as [`peek_with`](KeyedLimiter::peek_with) does.
    ///
    /// ```
    /// use nanolimit::{Gcra, KeyHash, KeyedLimiter, Request};
    ///
    /// let limiter = KeyedLimiter::<u64, _>::new(Gcra::per_minute(10)?, 1_000)?;
    /// let flow = KeyHash::new(42);
    /// assert!(limiter.check_hash_with(flow, Request::cost(8))?.is_allowed());
    /// assert!(limiter.peek_hash_with(flow, Request::cost(2))?.is_allowed());
    /// assert!(limiter.peek_hash_with(flow, Request::cost(3))?.is_denied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_hash_with(
        &self,
        hash: KeyHash,
        request: Request<Q>,
    ) -> Result<Decision<Q>, RequestError> {
        let resolved = request.resolve(&self.quota, &self.lead, &self.clock)?;
        let identity_hash = self.key_hash_seeds.identity_hash(hash);
        Ok(self.peek_identified(
            identity_hash,
            &[identity_hash],
            &resolved.quota,
            resolved.cost,
            resolved.now,
        ))
    }
}

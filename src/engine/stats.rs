//! [`Stats`]: what a limiter counted, for every limiter and integration.

/// What a limiter counted since it was built: its checks, allowed and denied, in calls and
/// units (a limiter built with counters); its keyed table's occupancy and slow-path events
/// (keyed limiters); what an HTTP layer did with requests; what a Redis limiter met. A limiter
/// leaves the figures it does not keep at zero. Read with the limiter's `stats()`: exact once
/// the threads that checked are joined; a snapshot of moving figures otherwise.
///
/// Once no operation is under way, a keyed table's
/// `entries == inserts - reclaims - evictions - removals`.
///
/// ```
/// use nanolimit::{Gcra, KeyedLimiter, ManualClock, Request};
///
/// let limiter = KeyedLimiter::builder(Gcra::per_second(2)?)
///     .clock(ManualClock::new())
///     .with_counters()
///     .build()?;
/// for _ in 0..3 {
///     let _ = limiter.check(&"alice");
/// }
/// let _ = limiter.check_with(&"bob", Request::cost(2))?;
/// let stats = limiter.stats();
/// assert_eq!((stats.allowed, stats.denied), (3, 1));
/// assert_eq!((stats.allowed_units, stats.denied_units), (4, 1));
/// assert_eq!((stats.entries, stats.inserts), (2, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stats {
    /// Checks allowed (with counters; an HTTP layer: requests passed on at once).
    pub allowed: u64,
    /// Checks denied, a keyed table's refused new keys included (with counters).
    pub denied: u64,
    /// The units (costs) of the allowed checks (with counters).
    pub allowed_units: u64,
    /// The units the denied checks asked for (with counters).
    pub denied_units: u64,

    /// Keys a keyed table holds, live or equivalent to fresh (entries are reused, not swept,
    /// so this grows to the table's slots under a stream of new keys; only a removal lowers
    /// it).
    pub entries: u64,
    /// New keys a keyed table gave a slot.
    pub inserts: u64,
    /// Inserts that reused the slot of an entry equivalent to fresh.
    pub reclaims: u64,
    /// New keys denied because their candidate slots were all live
    /// ([`WhenFull::Deny`](crate::WhenFull::Deny), or an inherited state that denied under
    /// [`WhenFull::EvictClosestToFresh`](crate::WhenFull::EvictClosestToFresh)).
    pub refused_new_keys: u64,
    /// New keys allowed without being tracked ([`WhenFull::Allow`](crate::WhenFull::Allow)).
    pub untracked_new_keys: u64,
    /// Live entries evicted for a new key
    /// ([`WhenFull::EvictClosestToFresh`](crate::WhenFull::EvictClosestToFresh)).
    pub evictions: u64,
    /// Keys removed ([`KeyedLimiter::remove`](crate::KeyedLimiter::remove)). A removed key's
    /// slot, reused later by a new key, counts as that key's insert only (neither a reclaim nor
    /// an eviction: its entry was no longer a key's).
    pub removals: u64,

    /// An HTTP layer's requests answered 429 (or 503 for a full table).
    pub rejected: u64,
    /// An HTTP layer's requests that shadow mode let through, which the limit would have
    /// rejected.
    pub would_reject: u64,
    /// An HTTP layer's requests that delay mode held back before passing them on.
    pub delayed: u64,
    /// An HTTP layer's requests answered for want of a usable key, or for a cost above the
    /// limit.
    pub unusable: u64,

    /// Redis calls that got no reply within the limiter's timeout (a server down, unreachable
    /// or slow, or a reconnection still under way); the failure policy decided them.
    pub timeouts: u64,
    /// Redis calls that failed before the timeout: a connection refused or lost, a script
    /// error (the server's clock outside the limiter's epoch and horizon, a key holding
    /// something that is not a state word), or a reply the limiter could not read; the failure
    /// policy decided them.
    pub errors: u64,
    /// Leases Redis granted a leased Redis limiter.
    pub leases: u64,
    /// Units those leases held.
    pub leased_units: u64,
    /// A leased Redis limiter's checks decided by one script call of their own: a refill of the
    /// key in flight, a request above the largest lease, leasing off, or a local table full of
    /// live leases.
    pub direct_checks: u64,
    /// Units a leased Redis limiter gave back to Redis (lapsed leases, `give_back_unused`).
    pub units_given_back: u64,
}

impl Stats {
    /// Every check counted: `allowed + denied`.
    ///
    /// ```
    /// assert_eq!(nanolimit::Stats::default().calls(), 0);
    /// ```
    pub fn calls(&self) -> u64 {
        self.allowed.wrapping_add(self.denied)
    }

    /// Every unit asked for: `allowed_units + denied_units`.
    ///
    /// ```
    /// assert_eq!(nanolimit::Stats::default().units(), 0);
    /// ```
    pub fn units(&self) -> u64 {
        self.allowed_units.wrapping_add(self.denied_units)
    }

    /// Redis calls that failed or timed out, whose decisions the failure policy made:
    /// `timeouts + errors`.
    ///
    /// ```
    /// assert_eq!(nanolimit::Stats::default().fallbacks(), 0);
    /// ```
    pub fn fallbacks(&self) -> u64 {
        self.timeouts.wrapping_add(self.errors)
    }
}

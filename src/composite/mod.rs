//! Composite limits: several limits checked as one, all or nothing. A request passes only if
//! every member admits it, and then every member consumes its cost; if any member denies, none
//! keeps anything.
//!
//! ```
//! use nanolimit::composite::Composite;
//! use nanolimit::{Gcra, KeyedLimiter, Limiter, ManualClock};
//! use std::net::Ipv4Addr;
//!
//! let clock = ManualClock::new();
//! // Per IP 100 per second; 3 per second for the whole service (tiny, to show it binding).
//! let per_ip = KeyedLimiter::builder(Gcra::per_second(100)?).clock(clock.clone()).build()?;
//! let service = Limiter::with_clock(Gcra::per_second(3)?, clock);
//! let limits = Composite::new((&per_ip, &service));
//!
//! for last_octet in 1..=3 {
//!     assert!(limits.check(&Ipv4Addr::new(192, 0, 2, last_octet)).is_allowed());
//! }
//! let client = Ipv4Addr::new(192, 0, 2, 9);
//! let denied = limits.check(&client);
//! assert!(denied.is_denied());
//! // The service's limit denied it, so the client's own unit was given back ...
//! assert_eq!(per_ip.peek(&client).remaining(), 100);
//! // ... and the headers tell the truth: the binding limit is the service's.
//! let headers = denied.headers();
//! assert_eq!((denied.binding(), headers.limit, headers.remaining), (1, 3, 0));
//! assert_eq!(headers.retry_after_seconds, Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | [`Composite`] and its operations; the protocol and its guarantees |
//! | `members.rs` | the members as a tuple (two to four), and the one core of every check |
//!
//! Members are two to four [`Limiter`](crate::Limiter)s and [`KeyedLimiter`](crate::KeyedLimiter)s,
//! owned or behind references or [`Arc`](std::sync::Arc)s, of any of the word algorithms
//! ([`Gcra`](crate::Gcra), [`SlidingWindow`](crate::SlidingWindow),
//! [`FixedWindow`](crate::FixedWindow)), mixed: several quotas on one key (10 per second with
//! bursts of 20, and 1,000 per day), or a per-client limit and one for the whole service (per IP
//! 100 per second, and 50,000 per second in all). Every keyed member takes the one key a check
//! names; direct members ignore it (a composite of direct members only is checked with `&()`).
//!
//! A [`StripedLimiter`](crate::striped::StripedLimiter) (a global GCRA budget that scales with cores)
//! may be a member too, and belongs **last**: there, nothing follows it to deny, so it admits
//! from the calling thread's stripe as its own check does, with no write to a line other cores
//! use. Anywhere else it is checked (and peeked) on its shared budget directly, as a plain
//! [`Limiter`](crate::Limiter) is, so that a later member's denial can give the cost back by
//! the GCRA refund step below (a unit spent from a stripe has no word that giving it back would
//! restore); it then contends as a plain limiter does. Its guarantees are its own
//! ([`over_admission_bound`](crate::striped::StripedLimiter::over_admission_bound)); a composite adds
//! nothing to them.
//!
//! Not members: the sliding logs (an admission is a record in a ring, not a step on one word)
//! and the in-flight limiters (units held until a permit drops, not a rate).
//!
//! | operation | shorthand | packet-loop form | full form |
//! |---|---|---|---|
//! | consume if every member admits | [`check(&key)`](Composite::check) | [`check_at(&key, now)`](Composite::check_at) | [`check_with(&key, request)`](Composite::check_with) |
//! | ask without consuming | [`peek(&key)`](Composite::peek) | | [`peek_with(&key, request)`](Composite::peek_with) |
//!
//! A check answers one [`Decision`] for all its members: when allowed, the
//! member with the smallest remaining binds; when denied, the denying member with the longest
//! retry-after. The decision's [`binding()`](crate::Decision::binding) names it, its `limit`,
//! `remaining`, `reset_after`, `retry_after` and `headers()` are that member's, so the
//! response headers tell the client the limit that holds it back, and
//! [`members()`](crate::Decision::members) gives every member's own decision. A cost above any
//! member's limit is [`RequestError::CostAboveLimit`],
//! naming the smallest limit, never a panic.
//!
//! # The protocol
//!
//! A check reads the clock once (the first member's: every member's clock must share its
//! origin, as every [`QuantaClock`](crate::QuantaClock) of a process and the clones of one
//! [`ManualClock`](crate::ManualClock) do), then checks the members in the tuple's order, each
//! exactly as its own check would (one load, the step, one compare-and-swap; a denial writes
//! nothing; a striped member other than the last: on its shared budget, below). If every
//! member admits, the check is allowed: that is the fast path, with no work beyond the members'
//! own checks (and, for a keyed member other than the last, one load of its shard's
//! reassignment count). If member `j` denies, the check is denied, and, on a
//! cold path, every member before `j` is given back what it consumed, latest first, by its
//! algorithm's *refund step* (a pure function of the state word, the word the admission wrote
//! and the cost) applied by the crate's one compare-and-swap driver, as a reservation's
//! cancellation is:
//!
//! | algorithm | refund step | when it gives nothing back |
//! |---|---|---|
//! | [`Gcra`](crate::Gcra) | the reservation cancellation's exact undo: the state was the word the admission wrote, and becomes `max(previous, now)` | another admission on the member since (the state moved on from the written word) |
//! | [`FixedWindow`](crate::FixedWindow) | the window's count less the cost, while the state names the admission's window | the window has ended (the units count nowhere any more) |
//! | [`SlidingWindow`](crate::SlidingWindow) | the current count less the cost in the admission's window, the previous count in the next one | two windows on (the units weigh nothing any more) |
//!
//! A keyed member is refunded only while its key's slot still holds the key, through the same
//! guarded driver and the same rule as a reservation's cancellation: nothing once the key's
//! shard has given a slot to another key (a reclaim or an eviction) since just before the
//! admission. So an admission that inserted its key is refunded only if it took a vacant slot,
//! one that never held another key; one that reclaimed or evicted another key's slot counted
//! that itself. Each refund writes a word no lower than the one its admission replaced, or
//! into a slot no other key ever held: a slot's word never returns to a value it held under
//! another key (see `src/store/table/protocol.rs` on why that keeps slots free of ABA).
//!
//! # Guarantees
//!
//! - **No member ever over-admits.** Every admission is the member's own check; a refund
//!   writes only a state that decides, at any time no earlier than the admission, as strictly as
//!   the state would without that admission; where it cannot tell, it gives nothing back.
//! - **A denied check keeps nothing, barring two stated cases**, each an under-admission of at
//!   most the check's cost on one member, never an over-admission: a GCRA member that admitted
//!   something else between the admission and its refund (the cost refills at the member's
//!   rate: cost × emission interval); a keyed admission whose shard reassigned a slot to
//!   another key between the admission and its refund, or that did so itself (a new key that
//!   took a reclaimed or evicted slot): the key's own cost, refilling at its rate or at its
//!   window's end. Window members otherwise give back exactly while the units still count.
//! - **Transient under-admission is bounded:** between a member's admission and its refund
//!   (one other member's check and the refund itself: nanoseconds, with no lock and no wait),
//!   a concurrent check of that member may be denied for units about to be given back. At most
//!   the cost of each composite check in flight is held that way, per member.
//! - **A member that denies first writes nothing.** Put the member most likely to deny first:
//!   the per-client one before a shared one (a client over its own limit is then denied without
//!   touching the shared one, whose refunds are the ones that meet concurrent admissions).

mod members;

pub(crate) use members::Members;

use crate::clock::Timestamp;
use crate::engine::decision::Decision;
use crate::engine::error::RequestError;
use crate::engine::request::Request;

/// Several limits checked as one, all or nothing: see the [module documentation](self) for
/// the members, the protocol and its guarantees.
///
/// `M` is a tuple of two to four [`RateLimit`](crate::RateLimit)s, checked in its order.
///
/// ```
/// use nanolimit::composite::Composite;
/// use nanolimit::{FixedWindow, Gcra, KeyedLimiter, ManualClock};
///
/// // Per API key: 10 per second with bursts of 20, and 1,000 per day.
/// let clock = ManualClock::new();
/// let burst = KeyedLimiter::builder(Gcra::per_second(10)?.with_burst(20)?)
///     .clock(clock.clone())
///     .build()?;
/// let daily = KeyedLimiter::builder(FixedWindow::new(1_000, std::time::Duration::from_secs(86_400))?)
///     .clock(clock)
///     .build()?;
/// let limits = Composite::new((burst, daily));
/// let admitted = (0..25).filter(|_| limits.check("key-1").is_allowed()).count();
/// assert_eq!(admitted, 20);
/// assert_eq!(limits.members().1.peek("key-1").remaining(), 980);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Composite<M> {
    members: M,
}

impl<M> Composite<M> {
    /// A composite of `members`, a tuple of two to four [`RateLimit`](crate::RateLimit)s, checked in its order (put
    /// the member most likely to deny first: see [the guarantees](self#guarantees)).
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{Gcra, Limiter, SlidingWindow};
    /// use std::sync::Arc;
    ///
    /// let global = Arc::new(Limiter::new(SlidingWindow::per_second(50_000)?));
    /// let api = Composite::new((Limiter::new(Gcra::per_second(1_000)?), Arc::clone(&global)));
    /// let admin = Composite::new((Limiter::new(Gcra::per_second(10)?), global));
    /// assert!(api.check(&()).is_allowed());
    /// assert!(admin.check(&()).is_allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn new(members: M) -> Self {
        Composite { members }
    }

    /// The members, as given.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{FixedWindow, Gcra, Limiter};
    ///
    /// let limits = Composite::new((
    ///     Limiter::new(Gcra::per_second(10)?),
    ///     Limiter::new(FixedWindow::per_minute(100)?),
    /// ));
    /// assert!(limits.check(&()).is_allowed());
    /// assert_eq!(limits.members().1.peek().remaining(), 99);
    /// # Ok::<(), nanolimit::QuotaError>(())
    /// ```
    pub fn members(&self) -> &M {
        &self.members
    }

    /// Checks one unit for `key` now (one reading of the first member's clock): consumes it
    /// from every member if every member admits it, else from none.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{Gcra, KeyedLimiter, Limiter};
    ///
    /// let per_user = KeyedLimiter::<str, _>::new(Gcra::per_minute(1)?, 1_000)?;
    /// let global = Limiter::new(Gcra::per_minute(100)?);
    /// let limits = Composite::new((&per_user, &global));
    /// assert!(limits.check("alice").is_allowed());
    /// assert!(limits.check("alice").is_denied());
    /// assert_eq!(global.peek().remaining(), 99);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check<K: ?Sized>(&self, key: &K) -> Decision<<M as Members<K>>::Quotas>
    where
        M: Members<K>,
    {
        self.check_at(key, self.members.first_member_now())
    }

    /// Checks one unit for `key` at `now`, a reading the caller already holds (of the members'
    /// clock, or one with the same origin): no clock read. The packet-loop form: infallible.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{FixedWindow, Gcra, KeyedLimiter, Limiter};
    ///
    /// let per_flow = KeyedLimiter::<u64, _>::new(Gcra::per_second(1)?, 1_000)?;
    /// let link = Limiter::new(FixedWindow::per_second(2)?);
    /// let limits = Composite::new((&per_flow, &link));
    /// let now = link.now();
    /// let admitted: Vec<bool> =
    ///     [1u64, 1, 2, 3].iter().map(|flow| limits.check_at(flow, now).is_allowed()).collect();
    /// assert_eq!(admitted, [true, false, true, false]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_at<K: ?Sized>(
        &self,
        key: &K,
        now: Timestamp,
    ) -> Decision<<M as Members<K>>::Quotas>
    where
        M: Members<K>,
    {
        // Every quota's limit is at least 1.
        self.members.check_all(key, 1, now)
    }

    /// Checks `request` for `key` (its cost and time; see [`Request`], which for a composite
    /// carries no tier): consumes its cost, all or nothing, from every member if every member
    /// admits it, else from none.
    ///
    /// Errors when the request can never pass: a cost above a member's limit.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{Gcra, Limiter, ManualClock, Request, RequestError};
    ///
    /// // Bytes per client: 1,000 per second with bursts of 2,000, and 50,000 per day.
    /// let clock = ManualClock::new();
    /// let burst = Limiter::with_clock(Gcra::per_second(1_000)?.with_burst(2_000)?, clock.clone());
    /// let daily = Limiter::with_clock(Gcra::per_day(50_000)?, clock);
    /// let limits = Composite::new((&burst, &daily));
    /// assert!(limits.check_with(&(), Request::cost(1_500))?.is_allowed());
    /// assert!(limits.check_with(&(), Request::cost(1_500))?.is_denied());
    /// assert_eq!(daily.peek().remaining(), 48_500);
    /// assert_eq!(
    ///     limits.check_with(&(), Request::cost(3_000)).err(),
    ///     Some(RequestError::CostAboveLimit { cost: 3_000, limit: 2_000 })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn check_with<K: ?Sized>(
        &self,
        key: &K,
        request: Request<()>,
    ) -> Result<Decision<<M as Members<K>>::Quotas>, RequestError>
    where
        M: Members<K>,
    {
        let now = self.resolve(&request)?;
        Ok(self.members.check_all(key, request.cost, now))
    }

    /// Whether one unit for `key` would pass every member now, consuming nothing and inserting
    /// nothing.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{Gcra, Limiter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let fast = Limiter::with_clock(Gcra::per_second(5)?, clock.clone());
    /// let slow = Limiter::with_clock(Gcra::per_minute(1)?, clock);
    /// let limits = Composite::new((&fast, &slow));
    /// assert!(limits.peek(&()).is_allowed());
    /// assert!(limits.check(&()).is_allowed());
    /// let peeked = limits.peek(&());
    /// assert!(peeked.is_denied());
    /// assert_eq!((peeked.binding(), peeked.headers().retry_after_seconds), (1, Some(60)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek<K: ?Sized>(&self, key: &K) -> Decision<<M as Members<K>>::Quotas>
    where
        M: Members<K>,
    {
        self.members
            .peek_all(key, 1, self.members.first_member_now())
    }

    /// Whether `request` for `key` would pass every member, consuming nothing and inserting
    /// nothing. Errors as [`check_with`](Self::check_with) does.
    ///
    /// ```
    /// use nanolimit::composite::Composite;
    /// use nanolimit::{FixedWindow, Gcra, Limiter, ManualClock, Request};
    ///
    /// let clock = ManualClock::new();
    /// let a = Limiter::with_clock(Gcra::per_second(10)?, clock.clone());
    /// let b = Limiter::with_clock(FixedWindow::per_second(8)?, clock);
    /// let limits = Composite::new((&a, &b));
    /// assert!(limits.check_with(&(), Request::cost(5))?.is_allowed());
    /// assert!(limits.peek_with(&(), Request::cost(3))?.is_allowed());
    /// assert!(limits.peek_with(&(), Request::cost(4))?.is_denied());
    /// assert!(limits.peek_with(&(), Request::cost(9)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_with<K: ?Sized>(
        &self,
        key: &K,
        request: Request<()>,
    ) -> Result<Decision<<M as Members<K>>::Quotas>, RequestError>
    where
        M: Members<K>,
    {
        let now = self.resolve(&request)?;
        Ok(self.members.peek_all(key, request.cost, now))
    }

    /// The time `request` is judged at, or why it can never pass.
    #[inline]
    fn resolve<K: ?Sized>(&self, request: &Request<()>) -> Result<Timestamp, RequestError>
    where
        M: Members<K>,
    {
        let limit = self.members.smallest_limit();
        if request.cost > limit {
            return Err(RequestError::CostAboveLimit {
                cost: request.cost,
                limit,
            });
        }
        Ok(request
            .at
            .unwrap_or_else(|| self.members.first_member_now()))
    }
}

#[cfg(test)]
mod tests;

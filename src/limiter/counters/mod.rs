//! Counters: how many checks a limiter allowed and denied, and how many units they asked for,
//! kept off the state word's cache line. Opt-in at construction
//! ([`Limiter::with_counters`](crate::Limiter::with_counters),
//! [`KeyedBuilder::with_counters`](crate::KeyedBuilder::with_counters)); read in
//! the limiter's [`Stats`] (`stats()`), and with the `metrics` feature exported through the
//! [`metrics`](https://docs.rs/metrics) facade (`record_metrics`, names below).
//!
//! ```
//! use nanolimit::{Gcra, KeyedLimiter, Limiter, ManualClock, Request};
//! use std::sync::Arc;
//!
//! let clock = ManualClock::new(); // frozen: no unit is earned back during the run
//! let global = Arc::new(Limiter::with_clock(Gcra::per_minute(1_000)?, clock).with_counters());
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let global = Arc::clone(&global);
//!         std::thread::spawn(move || (0..500).for_each(|_| drop(global.check())))
//!     })
//!     .collect();
//! workers.into_iter().for_each(|worker| worker.join().unwrap());
//! let totals = global.stats();
//! assert_eq!(totals.allowed + totals.denied, 2_000); // exact: every check counted once
//! assert_eq!(totals.allowed, 1_000); // the burst
//!
//! let per_key = KeyedLimiter::builder(Gcra::per_second(10)?)
//!     .clock(ManualClock::new())
//!     .with_counters()
//!     .build()?;
//! assert!(per_key.check_with(&"alice", Request::cost(4))?.is_allowed());
//! assert!(per_key.check_with(&"bob", Request::cost(20)).is_err()); // an error, not counted
//! let totals = per_key.stats();
//! assert_eq!((totals.allowed, totals.allowed_units), (1, 4));
//! assert_eq!(totals.entries, 1); // a keyed table's occupancy, with or without counters
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The HTTP layer's own statistics count on the same striped counters. [`StripedLimiter`],
//! [`SlidingLogLimiter`] and [`InFlightLimiter`] keep no counters.
//!
//! [`StripedLimiter`]: crate::striped::StripedLimiter
//! [`SlidingLogLimiter`]: crate::sliding_log::SlidingLogLimiter
//! [`InFlightLimiter`]: crate::inflight::InFlightLimiter
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the counters a limiter keeps |
//! | `stripes.rs` | striped, cache-padded `u64` counts, owned per thread or shared (also the HTTP layer's statistics) |
//! | `export.rs` | the `metrics` feature: names, labels, recording |
//!
//! # How a check is counted
//!
//! After its decision, a check adds one call to the allowed or the denied count of the calling
//! thread's stripe (a cache-padded line of its own per stripe) and, if its cost is not 1, its
//! cost less one to the matching "extra units" count. The state word is never written for
//! counting, so a denial still writes nothing to it, and threads on different stripes write
//! different lines.
//!
//! - A thread that owns a *counting slot* counts on its slot's stripe, which no other thread
//!   writes: each count is a Relaxed load and a Relaxed store of the sum, with no locked
//!   instruction (one of each for a check of one unit, two otherwise). A thread claims a slot
//!   (a compare-and-swap, Acquire) at its first counted check in the process, on the count's
//!   cold path (the hot path, for a thread that owns a slot, is a thread-local load, a bounds
//!   test and the add: no call), and a thread-local's destructor frees it (a Release store)
//!   when the thread ends; the next
//!   owner's loads then read the last owner's stores, so a slot passing from thread to thread
//!   loses nothing. There are twice as many slots as the machine has hardware threads (at least
//!   8, at most 256), shared by every set of counters in the process.
//! - A thread that owns none (more threads alive than slots, or a thread whose thread-locals
//!   are being destroyed) counts on a shared stripe picked by its number, with a Relaxed
//!   `fetch_add`, so threads sharing a stripe lose nothing; it tries to claim a slot again
//!   every 4,096 checks.
//!
//! The stripes and the slot protocol are in `stripes.rs` and `thread_index.rs`; a loom
//! model (`loom-tests/tests/counters.rs`) checks the totals when a slot passes from an ended
//! thread to another.
//!
//! Counted: checks ([`check`](crate::Limiter::check), [`check_at`](crate::Limiter::check_at),
//! [`check_with`](crate::Limiter::check_with), and their keyed forms), a check of cost 0 as one
//! call of no units. Not counted: peeks (they consume nothing), reservations and waits, and the
//! HTTP layer's own statistics (its `stats()`, on the same striped counts).
//!
//! # Guarantees
//!
//! - Exact: once the checking threads are joined (or otherwise synchronised with the reader),
//!   `allowed + denied` is the number of checks and the unit totals their summed costs.
//! - While checks run, a read sums each count as it was at some moment of the read: a total
//!   may miss checks that finish during the read, never counts one twice, and never goes down
//!   from one read to the next of the same thread (each count only grows).
//! - Totals are `u64` counts modulo 2^64, as hardware and Prometheus counters are: a count of
//!   units wraps after 2^64 units (1.8·10^19: 585 years of 10^9 units per second).
//! - Off (the default), a check is exactly the uncounted one: whether a limiter counts is its
//!   last type parameter ([`NoCounters`] or [`Counters`]), so the compiler
//!   leaves no trace of counting in a limiter without counters.
//!
//! # Metrics names (feature `metrics`)
//!
//! `record_metrics(name)` sets these to the limiter's current values, each labelled
//! `limiter = name` (Prometheus conventions: `_total` counters, snake case; OpenTelemetry's
//! Prometheus bridge and the `metrics` exporters map them as they are):
//!
//! | name | kind | labels | value |
//! |---|---|---|---|
//! | `nanolimit_requests_total` | counter | `limiter`, `outcome` = `allowed` \| `denied` | checks allowed, denied ([`Stats::allowed`](crate::Stats::allowed), [`Stats::denied`](crate::Stats::denied)) |
//! | `nanolimit_units_total` | counter | `limiter`, `outcome` = `allowed` \| `denied` | units of those checks ([`Stats::allowed_units`](crate::Stats::allowed_units), [`Stats::denied_units`](crate::Stats::denied_units)) |
//! | `nanolimit_keyed_entries` | gauge | `limiter` | slots holding an entry ([`Stats::entries`](crate::Stats::entries)) |
//! | `nanolimit_keyed_capacity` | gauge | `limiter` | live keys the table was sized for ([`KeyedLimiter::capacity`](crate::KeyedLimiter::capacity)) |
//! | `nanolimit_keyed_events_total` | counter | `limiter`, `event` = `insert` \| `reclaim` \| `refused_new_key` \| `untracked_new_key` \| `eviction` | the table's events ([`Stats`]) |
//!
//! The request and unit counters are recorded only by limiters built with counters; the keyed
//! ones by every keyed limiter. Counters are set with `absolute` (the limiter keeps the
//! totals), so calling `record_metrics` at each scrape, or on a timer, is all an exporter needs.

#[cfg(feature = "metrics")]
pub(crate) mod export;

/// Frees the calling thread's counting slot, as the thread's end would: for the loom models,
/// whose threads call it as their last act (loom runs thread-local destructors only after the
/// thread's `join` has returned; see `thread_index.rs`).
#[cfg(nanolimit_loom)]
#[doc(hidden)]
pub fn end_of_thread() {
    crate::thread_index::release_slot();
}
#[cfg(feature = "std")]
mod counted;
#[cfg(feature = "std")]
pub(crate) mod stripes;

use crate::engine::stats::Stats;
#[cfg(feature = "std")]
pub use counted::Counters;

pub(crate) mod sealed {
    use crate::engine::stats::Stats;

    /// Only this crate's [`NoCounters`](super::NoCounters) and [`Counters`](super::Counters)
    /// count checks; what a limiter asks of them.
    pub trait Sealed {
        /// Whether checks are counted (false for `NoCounters`).
        const COUNTS: bool;

        /// Counts one check of `cost` units, allowed or denied (nothing, for `NoCounters`).
        fn record(&self, allowed: bool, cost: u64);

        /// Sets `stats`' check figures to the counts so far (nothing, for `NoCounters`).
        fn add_to(&self, stats: &mut Stats);
    }

    /// Whether a limiter counts its checks: its last type parameter,
    /// [`NoCounters`](super::NoCounters) (the default) or [`Counters`](super::Counters)
    /// (`with_counters()`). A type, not a flag, so that a limiter without counters compiles to
    /// exactly the check it had before counters existed: not even a branch. Sealed, and named
    /// only inside the crate: a limiter's type names `NoCounters` or `Counters`.
    pub trait Counting: Sealed + Send + Sync + core::fmt::Debug {}
}
pub(crate) use sealed::Counting;

/// A limiter that counts nothing: the default. Its checks are the uncounted ones.
///
/// ```
/// use nanolimit::counters::NoCounters;
/// use nanolimit::{Gcra, Limiter, QuantaClock};
///
/// let limiter: Limiter<Gcra, QuantaClock, NoCounters> = Limiter::new(Gcra::per_second(5)?);
/// let _ = limiter.check();
/// assert_eq!(limiter.stats().calls(), 0);
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NoCounters;

impl sealed::Sealed for NoCounters {
    const COUNTS: bool = false;

    #[inline(always)]
    fn record(&self, _allowed: bool, _cost: u64) {}

    #[inline(always)]
    fn add_to(&self, _stats: &mut Stats) {}
}

impl sealed::Counting for NoCounters {}

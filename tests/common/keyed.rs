//! Helpers for the keyed-table tests, generic over the key mode: tables of `u64` keys on a
//! [`ManualClock`], built the same way whether keys are [`Hashed`](nanolimit::keyed::Hashed) or
//! [`Exact`](nanolimit::keyed::Exact), so that a test written once over `M: KeyMode<u64>` runs in both
//! modes.

use super::at;
use nanolimit::keyed::KeyMode;
use nanolimit::{Decision, KeyedLimiter, ManualClock, Quota, WhenFull};
use std::fmt::Display;
use std::ops::Range;

pub const MILLISECOND_NS: u64 = 1_000_000;

/// A manual clock reading `ns`.
pub fn clock_at(ns: u64) -> ManualClock {
    ManualClock::starting_at(at(ns))
}

/// How a test table is built: its size, its full-table policy and its hash seed.
#[derive(Debug, Clone, Copy)]
pub struct TableShape {
    pub capacity: usize,
    /// `None`: the builder's default for the capacity.
    pub shards: Option<usize>,
    pub when_full: WhenFull,
    /// `None`: a random seed.
    pub seed: Option<u64>,
}

impl TableShape {
    /// `capacity` keys, default shards, [`WhenFull::Deny`], a random seed.
    pub const fn capacity(capacity: usize) -> TableShape {
        TableShape {
            capacity,
            shards: None,
            when_full: WhenFull::Deny,
            seed: None,
        }
    }

    /// One shard of one bucket: 8 slots that are every key's 8 candidates (capacity 4 and its
    /// headroom round up to one bucket in both key modes).
    pub const fn one_bucket(when_full: WhenFull) -> TableShape {
        TableShape::capacity(4).shards(1).when_full(when_full)
    }

    pub const fn shards(self, shards: usize) -> TableShape {
        TableShape {
            shards: Some(shards),
            ..self
        }
    }

    pub const fn when_full(self, when_full: WhenFull) -> TableShape {
        TableShape { when_full, ..self }
    }

    pub const fn seed(self, seed: u64) -> TableShape {
        TableShape {
            seed: Some(seed),
            ..self
        }
    }
}

/// A table of `u64` keys stored in key mode `M`, shaped by `shape`, reading `clock`.
pub fn table<M: KeyMode<u64>, Q: Quota>(
    quota: Q,
    shape: TableShape,
    clock: &ManualClock,
) -> KeyedLimiter<u64, Q, ManualClock, M> {
    let builder = KeyedLimiter::<u64, Q>::builder(quota)
        .capacity(shape.capacity)
        .when_full(shape.when_full)
        .clock(clock.clone())
        .key_mode::<M>();
    let builder = match shape.shards {
        Some(shards) => builder.shards(shards),
        None => builder,
    };
    let builder = match shape.seed {
        Some(seed) => builder.seed(seed),
        None => builder,
    };
    builder.build().unwrap()
}

/// [`table`] of [`TableShape::one_bucket`]; asserts the layout the full-table tests reason on.
pub fn one_bucket<M: KeyMode<u64>, Q: Quota>(
    quota: Q,
    when_full: WhenFull,
    clock: &ManualClock,
) -> KeyedLimiter<u64, Q, ManualClock, M> {
    let limiter = table::<M, Q>(quota, TableShape::one_bucket(when_full), clock);
    assert_eq!(limiter.slots(), 8);
    assert_eq!(limiter.shards(), 1);
    limiter
}

/// Checks one unit of each of `keys` now, asserting that each is admitted and tracked (a new
/// entry, since the table had room).
pub fn fill<M: KeyMode<u64>, Q: Quota>(
    limiter: &KeyedLimiter<u64, Q, ManualClock, M>,
    keys: Range<u64>,
) {
    let inserts = limiter.stats().inserts;
    for key in keys.clone() {
        let decision = limiter.check(&key);
        assert!(decision.is_allowed(), "key {key}");
        assert!(!decision.is_untracked(), "key {key}");
    }
    assert_eq!(limiter.stats().inserts, inserts + keys.end - keys.start);
}

/// Asserts that two decisions agree on everything a caller can read. `context` is formatted
/// only on failure (pass `format_args!(..)` where the check must not allocate).
pub fn assert_same_decision<Q: Quota + PartialEq>(
    actual: &Decision<Q>,
    expected: &Decision<Q>,
    context: impl Display,
) {
    assert_eq!(
        actual.is_allowed(),
        expected.is_allowed(),
        "allowed: {context}"
    );
    assert_eq!(
        actual.is_untracked(),
        expected.is_untracked(),
        "untracked: {context}"
    );
    assert_eq!(actual.cost(), expected.cost(), "cost: {context}");
    assert_eq!(actual.limit(), expected.limit(), "limit: {context}");
    assert_eq!(
        actual.remaining(),
        expected.remaining(),
        "remaining: {context}"
    );
    assert_eq!(
        actual.reset_after(),
        expected.reset_after(),
        "reset: {context}"
    );
    assert_eq!(
        actual.retry_after(),
        expected.retry_after(),
        "retry: {context}"
    );
    assert_eq!(
        actual.state_word(),
        expected.state_word(),
        "state: {context}"
    );
    assert_eq!(actual.quota(), expected.quota(), "quota: {context}");
    assert_eq!(actual.headers(), expected.headers(), "headers: {context}");
}

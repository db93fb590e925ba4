//! Limits shared through Redis (`nanolimit::redis`, feature `redis`), against a real
//! redis-server, one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `steps` | the scripts' steps give exactly [`Quota::step`](nanolimit::Quota::step)'s decision and new word, for edge and random words and times; a peek writes nothing |
//! | `conformance` | the Redis limiter and the in-process `KeyedLimiter` make identical decisions on the same schedules, for GCRA, the sliding window and the fixed window |
//! | `limiter` | Redis time, expiry of idle keys, bad input, and the failure policy when the server is down, frozen, or back |
//! | `batch` | `check_many` judges every request as `check_with` would, in order, in one pipeline, on a fresh server and with the server gone |
//! | `leased` | the leased limiter: checks served from leases, the fleet's over-admission bound, exactness with leasing off, refills, give-backs, failures |
//! | `sliding_log` | `RedisLimiter<SlidingLog>` decides as a reference log and as the in-process sliding log; exact times past 2^53 ns, expiry, peeks, bad input, batches, failures |
//!
//! `support` holds what they share: the server `.ci/test-all` starts (found through
//! `NANOLIMIT_REDIS_URL`), private servers a fault test may stop and restart, and key prefixes
//! that keep parallel tests apart.

#[cfg(feature = "redis")]
mod batch;
#[cfg(feature = "redis")]
mod conformance;
#[cfg(feature = "redis")]
mod leased;
#[cfg(feature = "redis")]
mod limiter;
#[cfg(feature = "redis")]
mod sliding_log;
#[cfg(feature = "redis")]
mod steps;
#[cfg(feature = "redis")]
mod support;

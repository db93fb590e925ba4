//! Limits shared by many servers, kept in Redis (feature `redis`): [`RedisLimiter`], for the
//! quotas' state words and the exact sliding log, and [`LeasedRedisLimiter`], which spends a
//! [`Gcra`](crate::Gcra) budget in Redis from local leases.
//!
//! A limit that must hold across a fleet (per API key, per tenant) cannot live in one process.
//! [`RedisLimiter`] keeps each key's state in Redis and decides with one atomic Lua script per
//! call (loaded once, then `EVALSHA`), with the time taken from Redis `TIME` so the servers'
//! clocks don't matter. Its decisions are the in-process limiters' own:
//!
//! - The stored value is the quota's own state word (the `u64` of [`Gcra`](crate::Gcra),
//!   [`SlidingWindow`](crate::SlidingWindow) or [`FixedWindow`](crate::FixedWindow), as 16 hex
//!   digits), so the same quota's layout and rounding apply.
//! - Each script implements only the algorithm's step (admit? the new word), with exact
//!   integer arithmetic: Redis Lua numbers are doubles, exact only below 2^53, while GCRA ticks
//!   reach 2^63 and the sliding window multiplies counts by nanoseconds; so the scripts compute
//!   on limbs of 24 or 32 bits held in locals (`src/redis/lua/prelude.lua`), every product and
//!   sum below 2^53, from values the client computes with the quota's own code (the increment
//!   of the cost, the tolerance, the scale of the time) and passes already split into limbs.
//!   A script defines no functions and builds no tables but its reply: on the server, a check
//!   costs little more than its `TIME`, `GET` and `SET` (see `docs/performance.md`).
//! - The script returns the word it decided on and the time it judged at, and the client
//!   builds the [`Decision`](crate::Decision) (limit, remaining, reset-after, retry-after) with
//!   the same code as the in-process limiters. The tests (`tests/redis/`) check the
//!   scripts' steps against [`Quota::step`](crate::Quota::step) on edge and random words, and
//!   the limiter against a [`KeyedLimiter`](crate::KeyedLimiter) on random schedules, through a
//!   real server.
//!
//! | | [`KeyedLimiter`](crate::KeyedLimiter) | [`RedisLimiter`] |
//! |---|---|---|
//! | state | a slot of a bounded table in the process | a Redis key per limited key, expiring when idle |
//! | shared by | the threads of one process | every process using the same server |
//! | a check costs | nanoseconds | one round trip (tens of microseconds on a LAN) |
//! | when the state is out of reach | never | the [`FailurePolicy`] decides, within the timeout |
//!
//! | algorithm | limiter | what Redis holds per key | decision |
//! |---|---|---|---|
//! | [`Gcra`](crate::Gcra), [`SlidingWindow`](crate::SlidingWindow), [`FixedWindow`](crate::FixedWindow) | [`RedisLimiter`] | the quota's state word | [`Decision`](crate::Decision) |
//! | [`SlidingLog`](crate::sliding_log::SlidingLog) (exact) | [`RedisLimiter<SlidingLog>`](RedisLimiter#the-exact-sliding-log) | a sorted set, one member per unit in the window (up to [`MAX_SLIDING_LOG_LIMIT`]) | [`Decision`](crate::Decision) |
//! | [`Gcra`](crate::Gcra), spent from local leases | [`LeasedRedisLimiter`] (from the same builder) | the quota's state word | [`Decision`](crate::Decision) |
//!
//! The sliding log's script keeps every time exact without scores: its members are named by
//! their times as 16 hex digits, all of score 0, and it selects them by lexicographic ranges
//! (see [the sliding log](RedisLimiter#the-exact-sliding-log)); every kind shares the builder,
//! the time, the failure policy and the statistics below.
//!
//! # Time
//!
//! Times are nanoseconds since the limiter's epoch (by default 2025-01-01T00:00:00Z, see
//! [`RedisLimiterBuilder::epoch_unix_seconds`]), up to
//! [`Timestamp::HORIZON`](crate::Timestamp::HORIZON) (18.3 years on): the script reads `TIME`
//! and subtracts the epoch, or takes the request's [`at`](crate::Request::at). Every server
//! sharing a limit must use the same epoch. Expiry is Redis's, in the server's real time:
//! explicit times that run slower than the server's clock (a test replaying hours in
//! milliseconds is the other way round, and safe) may see idle keys forgotten early.
//!
//! # Failures
//!
//! Every call returns within the limiter's timeout (5 ms by default). A call that gets no
//! decision in time (server down, unreachable or slow, a script error) is decided by the
//! [`FailurePolicy`] (open by default), marked by
//! [`Decision::is_fallback`](crate::Decision::is_fallback), and counted in its [`Stats`](crate::Stats); the
//! connection manager reconnects in the background, so the limiter needs no rebuilding when
//! the server is back.

mod builder;
mod leased;
mod limiter;
mod policy;
mod quota;
mod sliding_log;
mod stats;
mod store;

pub use builder::{RedisLimiterBuilder, DEFAULT_EPOCH_UNIX_SECONDS, DEFAULT_TIMEOUT};
#[cfg(nanolimit_loom)]
#[doc(hidden)]
pub use leased::loom_hooks;
pub use leased::LeasedRedisLimiter;
pub use limiter::RedisLimiter;
pub use policy::FailurePolicy;
pub use quota::RedisQuota;
pub use sliding_log::MAX_SLIDING_LOG_LIMIT;

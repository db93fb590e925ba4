//! Limits shared by many servers, kept in Redis (feature `redis`): [`RedisLimiter`], for the
//! quotas' state words and the exact sliding log, and [`LeasedRedisLimiter`], which spends a
//! [`Gcra`](crate::Gcra) budget in Redis from local leases.
//!
//! A limit that must hold across a fleet (per API key, per tenant) cannot live in one process.
//! [`RedisLimiter`] keeps each key's state in Redis and decides with one atomic Lua script per
//! call (loaded once, then `EVALSHA`), with the time taken from Redis `TIME` so the servers'
//! clocks don't matter:
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use nanolimit::redis::{FailurePolicy, RedisLimiter};
//! use nanolimit::{Gcra, Request};
//! use std::time::Duration;
//!
//! // 100 requests per second per tenant, for every server using this Redis.
//! let limiter = RedisLimiter::builder(Gcra::per_second(100)?)
//!     .timeout(Duration::from_millis(5))
//!     .failure_policy(FailurePolicy::Open)
//!     .build("redis://127.0.0.1:6379")?;
//! let decision = limiter.check("tenant-7").await;
//! if decision.is_denied() {
//!     println!("429, Retry-After {:?}", decision.headers().retry_after_seconds);
//! }
//! let upload = limiter.check_with("tenant-7", Request::cost(10)).await?; // cost per call
//! println!("{} left", upload.remaining());
//! # Ok(())
//! # }
//! ```
//!
//! | you need | use |
//! |---|---|
//! | every unit exact across the fleet, and a round trip per check is affordable | [`RedisLimiter`] (GCRA or a window; `RedisLimiter<SlidingLog>`: at most `L` in any window) |
//! | checks that cost nanoseconds, with at most `processes × largest lease` over-admission | [`LeasedRedisLimiter`] |
//! | one process | [`KeyedLimiter`](crate::KeyedLimiter) |
//! | one process's threads sharing one budget | [`StripedLimiter`](crate::striped::StripedLimiter) |
//!
//! # Same decisions as in process
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
//! # Keys and expiry
//!
//! A key is stored as `{prefix}:{algorithm}:{{key}}` ([`RedisLimiter::key_name`]): the key is
//! the Redis Cluster hash tag. Each admission sets the key to expire once its state is as good
//! as fresh (its reset-after, rounded up to the millisecond, plus up to 2 ms), so idle keys
//! vanish. [`check_many`](RedisLimiter::check_many) judges many keys' requests in one pipeline
//! round trip, each exactly as `check_with` would, in order.
//!
//! # Failures
//!
//! Every call returns within the limiter's timeout (5 ms by default). A call that gets no
//! decision in time (server down, unreachable or slow, a script error) is decided by the
//! [`FailurePolicy`]: [`Open`](FailurePolicy::Open) (the default) admits,
//! [`Closed`](FailurePolicy::Closed) denies with a retry after 1 ns (`Retry-After: 1`). Either
//! decision is marked by [`Decision::is_fallback`](crate::Decision::is_fallback) and counted in
//! the limiter's [`Stats`](crate::Stats). The connection manager reconnects in the background,
//! so once the server is back checks decide through it again, with no rebuilding. A call that
//! timed out may still have been applied by the server.
//!
//! Bad input is an error before any round trip: a cost above the limit
//! ([`RequestError::CostAboveLimit`](crate::RequestError::CostAboveLimit)), or a request with
//! a tier ([`RequestError::ForeignTier`](crate::RequestError::ForeignTier): a Redis limiter has
//! no tiers).
//!
//! # Leased local checks: the fleet's budget at in-process speed
//!
//! A round trip per check costs about a thousand in-process checks. [`LeasedRedisLimiter`]
//! takes a key's units from the shared GCRA budget in leases (one script call each, the same
//! step as a [`RedisLimiter`] check of the lease's size) and admits from them locally with one
//! compare-and-swap:
//!
//! ```no_run
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use nanolimit::redis::RedisLimiter;
//! use nanolimit::Gcra;
//! use std::time::Duration;
//!
//! // 10,000 requests per second per tenant across the fleet; this process leases 8 to 256 units.
//! let limiter = RedisLimiter::builder(Gcra::per_second(10_000)?)
//!     .lease_units(8, 256)
//!     .lease_lifetime(Duration::from_millis(100))
//!     .build_leased("redis://127.0.0.1:6379")?;
//! if limiter.check("tenant-7").await.is_denied() { /* 429 */ }
//! // 20 servers like this one admit at most the quota + 20 × 256 per tenant in any interval.
//! assert_eq!(limiter.over_admission_bound(20), 5_120);
//! limiter.give_back_unused().await; // at shutdown: unused units back to the fleet
//! # Ok(())
//! # }
//! ```
//!
//! - **The bound.** Every unit admitted was first granted by the shared GCRA as part of a lease;
//!   leasing only moves admissions later. A process holds at most its largest lease per key,
//!   so in any interval the fleet admits at most the quota's own allowance plus
//!   **processes × largest lease** per key
//!   ([`over_admission_bound`](LeasedRedisLimiter::over_admission_bound)).
//!   `lease_units(1, 1)` turns leasing off: every check is one script call, exactly as a
//!   [`RedisLimiter`] decides.
//! - **Refills** never block other checkers: the check that leaves a key's lease below half
//!   starts the next one on a tokio task; a check that finds the lease empty takes the next
//!   itself, or, if a refill is already in flight, checks Redis directly. When the budget
//!   cannot grant a whole lease, the refill takes just the request's cost, or returns Redis's
//!   denial with its exact retry-after.
//! - **Lease sizes adapt** between the configured bounds: a key's next lease doubles when the
//!   last was spent to its last unit, or half spent in the first quarter of its lifetime, and
//!   halves when one lapsed with units unspent; a steady key settles where one lease lasts one
//!   lifetime.
//! - **Units lapse** at the end of the lease lifetime (100 ms by default). Lapsed units, and
//!   every held unit at [`give_back_unused()`](LeasedRedisLimiter::give_back_unused), go back
//!   to Redis while no other process has taken from the key since; otherwise they lapse. Units
//!   one process holds cannot serve another, so the fleet may under-admit by what processes
//!   hold, for at most a lifetime.
//! - **Failures**: a process keeps serving the units it holds while Redis is down; a key that
//!   needs a refill gets the failure policy's decision within the timeout, and leases again
//!   once the server is back.
//!
//! # Running the Redis tests and example
//!
//! Start a server on loopback with persistence off, and point `NANOLIMIT_REDIS_URL` at it
//! (`bash .ci/test-all` does all of this itself, installing `redis-server` when it is missing):
//!
//! ```sh
//! redis-server --port 6390 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes
//! NANOLIMIT_REDIS_URL=redis://127.0.0.1:6390 cargo run --features redis --example redis_fleet
//! NANOLIMIT_REDIS_URL=redis://127.0.0.1:6390 cargo test --all-features --test redis
//! redis-cli -p 6390 shutdown nosave
//! ```
//!
//! Without the variable the Redis tests skip, except under `CI=true`, where they fail. The
//! `redis` crate 1.x needs Rust 1.88; without the feature, the crate's minimum stays 1.85.

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

//! The Redis scenarios, run only when the benchmark is given `--redis URL` (and built with the
//! feature `redis`): a fleet-wide limit per key over [`REDIS_KEYS`] keys, each thread walking
//! them in order from its own offset, against a real `redis-server`. Rows:
//!
//! - `redis-script` (`nanolimit gcra`): `RedisLimiter<Gcra>::check(key)`, one `EVALSHA` of the
//!   GCRA script per call, on the server's time: what an exact fleet-wide check costs.
//! - `redis-naive` (`incr-expire fixed-window`): the seed article's fixed window, `INCR` of the
//!   key's counter and `EXPIRE key 1 NX` in one pipeline (one round trip, two commands), the
//!   call admitted while the count is at most the limit.
//! - `redis-leased` (`nanolimit gcra-leased`): `LeasedRedisLimiter::check(key)` on the same
//!   quota, with leases of 64 to 4,096 units living 10 s and background refills: most calls are
//!   served from the process's lease, one compare-and-swap, no round trip. Before the
//!   measurement (untimed), one pass over the keys gives every key its first lease, as a
//!   server's steady state would have; at 10,000 keys and a few million checks per second,
//!   each key sees a few hundred checks per second, so its leases settle at a few hundred to
//!   4,096 units (the state line prints the leases taken and their mean size).
//!
//! Each thread drives the calls itself (`Handle::block_on` on a tokio runtime of 2 workers,
//! where the connections' tasks run); a leased check is first polled once with a no-op waker,
//! as a server's task would find it ready, and handed to `block_on` only when it must wait for
//! Redis. The quota (10^6 per second per key, bursts of 10^5) is far above what the threads
//! offer, so every call passes and the rows price the pass path. Every call has a timeout of
//! 1 s (a fallback would be counted as denied: the allowed fraction shows it).

use crate::measure::{measure, Outcome, Worker, ALLOWED};
use crate::{Context, Job, LimiterKind, MeasuredRun};
use nanolimit::redis::{LeasedRedisLimiter, RedisLimiter, RedisLimiterBuilder};
use nanolimit::Gcra;
use redis::aio::ConnectionManager;
use std::future::Future;
use std::pin::pin;
use std::task::{Poll, Waker};
use std::time::{Duration, SystemTime};
use tokio::runtime::{Handle, Runtime};

/// The keys every scenario walks.
pub const REDIS_KEYS: usize = crate::REDIS_SCENARIO_KEYS;
/// The per-key rate, per second.
pub const RATE_PER_SECOND: u64 = 1_000_000;
/// The per-key burst (and the naive fixed window's limit per second).
pub const BURST: u64 = 100_000;
/// redis-leased's lease sizes: a key's leases adapt between these.
const LEASE_UNITS: (u64, u64) = (64, 4_096);
/// redis-leased's lease lifetime.
const LEASE_LIFETIME: Duration = Duration::from_secs(10);
/// Every call's timeout.
const TIMEOUT: Duration = Duration::from_secs(1);

/// The runtime the connections run on.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A key prefix of this run's own.
fn prefix(scenario: &str) -> String {
    let run = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!("bench:{scenario}:{run}")
}

fn keys() -> Vec<String> {
    (0..REDIS_KEYS).map(|key| format!("client-{key}")).collect()
}

/// Walks the keys in order from the thread's own offset.
struct Walk<'keys> {
    keys: &'keys [String],
    next: usize,
}

impl<'keys> Walk<'keys> {
    fn new(keys: &'keys [String], thread_index: usize, threads: usize) -> Self {
        Walk {
            keys,
            next: thread_index * keys.len() / threads.max(1),
        }
    }

    fn key(&mut self) -> &'keys str {
        let key = &self.keys[self.next];
        self.next = (self.next + 1) % self.keys.len();
        key
    }
}

struct ScriptWorker<'a> {
    limiter: &'a RedisLimiter<Gcra>,
    runtime: &'a Handle,
    walk: Walk<'a>,
}

impl Worker for ScriptWorker<'_> {
    fn operate(&mut self) -> Outcome {
        let decision = self.runtime.block_on(self.limiter.check(self.walk.key()));
        if decision.is_allowed() && !decision.is_fallback() {
            ALLOWED
        } else {
            0
        }
    }
}

struct NaiveWorker<'a> {
    connection: ConnectionManager,
    prefix: &'a str,
    runtime: &'a Handle,
    walk: Walk<'a>,
}

impl Worker for NaiveWorker<'_> {
    fn operate(&mut self) -> Outcome {
        let name = format!("{}:{{{}}}", self.prefix, self.walk.key());
        let connection = &mut self.connection;
        let count = self.runtime.block_on(async {
            let mut pipeline = redis::pipe();
            pipeline
                .incr(&name, 1)
                .cmd("EXPIRE")
                .arg(&name)
                .arg(1)
                .arg("NX")
                .ignore();
            let call = pipeline.query_async::<(u64,)>(connection);
            tokio::time::timeout(TIMEOUT, call).await
        });
        match count {
            Ok(Ok((count,))) if count <= BURST => ALLOWED,
            _ => 0,
        }
    }
}

struct LeasedWorker<'a> {
    limiter: &'a LeasedRedisLimiter,
    runtime: &'a Handle,
    walk: Walk<'a>,
    /// The runtime's context, entered for the thread's life: a check polled here may arm the
    /// timer of its call to Redis, as one polled by a task would.
    _entered: tokio::runtime::EnterGuard<'a>,
}

impl Worker for LeasedWorker<'_> {
    fn operate(&mut self) -> Outcome {
        let mut check = pin!(self.limiter.check(self.walk.key()));
        let decision = match check
            .as_mut()
            .poll(&mut std::task::Context::from_waker(Waker::noop()))
        {
            Poll::Ready(decision) => decision,
            Poll::Pending => self.runtime.block_on(check),
        };
        if decision.is_allowed() && !decision.is_fallback() {
            ALLOWED
        } else {
            0
        }
    }
}

fn quota() -> Gcra {
    Gcra::per_second(RATE_PER_SECOND)
        .and_then(|quota| quota.with_burst(BURST))
        .expect("a valid quota")
}

fn shared(scenario: &str) -> RedisLimiterBuilder<Gcra> {
    RedisLimiter::builder(quota())
        .prefix(&prefix(scenario))
        .timeout(TIMEOUT)
}

/// One Redis measurement on the server at `url`.
pub fn run(job: Job, context: &Context, url: &str) -> MeasuredRun {
    let (threads, timing) = (job.threads, context.timing);
    let runtime = runtime();
    let handle = runtime.handle();
    let keys = keys();
    let keys = &keys[..];
    let scenario = job.scenario.map_or("floor", crate::Scenario::name);
    let (measurement, state_report) = match (scenario, job.limiter) {
        ("redis-script", LimiterKind::Nanolimit) => {
            let limiter = runtime.block_on(async {
                shared(scenario)
                    .build(url)
                    .expect("a Redis URL the redis crate accepts")
            });
            let limiter = &limiter;
            let measurement = measure(threads, timing, |thread_index| ScriptWorker {
                limiter,
                runtime: handle,
                walk: Walk::new(keys, thread_index, threads),
            });
            let report = format!("fallbacks {}", limiter.stats().fallbacks());
            (measurement, Some(report))
        }
        ("redis-naive", LimiterKind::IncrExpire) => {
            let prefix = prefix(scenario);
            let prefix = &prefix[..];
            let connection = runtime.block_on(async {
                let client = redis::Client::open(url).expect("a valid Redis URL");
                ConnectionManager::new(client)
                    .await
                    .expect("the Redis server answers")
            });
            let connection = &connection;
            let measurement = measure(threads, timing, |thread_index| NaiveWorker {
                connection: connection.clone(),
                prefix,
                runtime: handle,
                walk: Walk::new(keys, thread_index, threads),
            });
            (measurement, None)
        }
        ("redis-leased", LimiterKind::Nanolimit) => {
            let limiter = runtime.block_on(async {
                shared(scenario)
                    .lease_units(LEASE_UNITS.0, LEASE_UNITS.1)
                    .lease_lifetime(LEASE_LIFETIME)
                    .build_leased(url)
                    .expect("a Redis URL the redis crate accepts, and leases that fit the quota")
            });
            let limiter = &limiter;
            // Untimed: every key takes its first lease, as in a server's steady state.
            let _entered = handle.enter();
            for key in keys {
                let _ = runtime.block_on(limiter.check(key));
            }
            let measurement = measure(threads, timing, |thread_index| LeasedWorker {
                limiter,
                runtime: handle,
                walk: Walk::new(keys, thread_index, threads),
                _entered: handle.enter(),
            });
            let stats = limiter.stats();
            let report = format!(
                "leases {} ({} units, {:.0} per lease), direct checks {}, fallbacks {}",
                stats.leases,
                stats.leased_units,
                stats.leased_units as f64 / stats.leases.max(1) as f64,
                stats.direct_checks,
                stats.fallbacks()
            );
            (measurement, Some(report))
        }
        (scenario, limiter) => unreachable!("{scenario} has no {limiter:?} row"),
    };
    MeasuredRun {
        measurement,
        // Never near the quota: no accuracy to judge.
        lifetime: Duration::ZERO,
        over_admission_bound: 0,
        state_report,
    }
}

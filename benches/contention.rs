//! # The contention benchmark
//!
//! How nanolimit behaves when many threads hit it at once, next to its peers and next to the
//! hardware floor, measured in one run:
//!
//! ```text
//! cargo bench --all-features --bench contention             # full run (about 2.7 min on 2 cores)
//! cargo bench --all-features --bench contention -- --quick  # under a minute, for CI and a first look
//! cargo bench --bench contention -- --scenario keyed-zipf-1m --threads 1,8,16 --csv out.csv
//! cargo bench --bench contention -- --scenario direct-allow --scenario direct-reserve --threads 1,2,4
//! cargo bench --all-features --bench contention -- --scenario http-layer
//! cargo bench --bench contention -- --scenario inflight --threads 1,2,4 --duration 1
//! ```
//!
//! The `http-layer` scenario needs the crate's features `http` and `axum` (`--all-features`, or
//! `--features http,axum`). Built without them the benchmark runs every other scenario and
//! prints a note that http-layer was skipped; asking for it with `--scenario http-layer` is
//! then an error that says how to build it.
//!
//! ## Flags
//!
//! - `--scenario NAME` (repeatable): run only these scenarios (default: all, in the order below).
//! - `--threads LIST`: comma-separated thread counts, for every scenario (default: 1 to the
//!   available cores, plus twice the cores, oversubscribed; with `--quick`: 1, the cores and
//!   twice the cores; except http-layer and inflight, whose own default is 1, 2 and 4, quick
//!   or not).
//! - `--duration SECS`: measured seconds per measurement (default 1; `--quick`: 0.17). Each
//!   measurement is preceded by an uncounted warm-up of a quarter of it (at most 0.25 s).
//! - `--quick`: the short durations and thread counts above: everything in under 60 s.
//! - `--runs N` (1 to 99, default 1): measure every row N times, in N rounds over all rows (so a
//!   slow spell of a shared machine spreads over the rows), and report each row's median run
//!   (by aggregate ns per call) in the table, the CSV and the chart; the range of the N runs is
//!   printed under the table. The many-key scenarios vary by up to 3× between single runs on a
//!   shared machine: `--quick --runs 5` shows their direction in about the time of one full run.
//! - `--csv PATH`: also write the results as CSV.
//! - `--redis URL`: a Redis server for the `redis-*` scenarios (feature `redis`), which run only
//!   when it is given (e.g. `--redis redis://127.0.0.1:6390 --scenario redis-script --scenario
//!   redis-naive --scenario redis-leased`; every other scenario runs as before).
//! - `--bench`: passed by `cargo bench`, accepted and otherwise ignored. Without it (as under
//!   `cargo test --benches`) the program runs a smoke test: every scenario at 1 and 2 threads
//!   for 10 ms, so that the harness is exercised but not timed (its chart goes to
//!   `target/contention/smoke-test.svg`); `cargo test --benches --all-features` includes
//!   http-layer (inflight runs in every build).
//!
//! A progress line goes to stderr; the table, and the paths of the files written, to stdout.
//! The chart (aggregate ns per call against threads, one panel per scenario) is written to
//! `target/contention/contention.svg` (under `$CARGO_TARGET_DIR` when that is set).
//!
//! ## Scenarios
//!
//! | name | what every thread does |
//! |---|---|
//! | `direct-allow` | checks one shared limiter whose quota is far above what the threads offer |
//! | `direct-reserve` | reserves one unit (`reserve()`, on the limiter's own clock, as `direct-allow` checks) on one shared GCRA limiter with `direct-allow`'s quota: every reservation is granted at once (zero delay), so the row prices a reservation against the allowed check of the `direct-allow` row, measured in the same run (nanolimit GCRA only: the one quota that reserves; governor and `ratelimit` have no reservations) |
//! | `direct-deny` | checks one shared limiter saturated by a tiny quota (an attack) |
//! | `direct-allow-counted` | checks one shared GCRA limiter with `direct-allow`'s quota and load, built with counters (`gcra-counted`: `Limiter::with_counters`), beside the same limiter without them (`gcra`) and the hardware floor of a counted check (`cas-fetch-add`: the compare-and-swap on one shared word, then a Relaxed `fetch_add` on the thread's own cache line), all in one run, so the ratio counted / uncounted is read at each thread count |
//! | `keyed-hot` | checks one key, the same for all threads |
//! | `keyed-spread` | cycles through its own 1,024 keys |
//! | `keyed-rotate-100k` | walks 100,000 keys (shared) in order, from its own offset |
//! | `keyed-zipf-1m` | replays 2^20 precomputed Zipf draws (s = 1.1) over 1,000,000 keys (fewer beyond 32 threads: 2^25 in all) |
//! | `keyed-flood` | checks a new key every call, except every 64th call: one of 4 legitimate hot keys |
//! | `keyed-hot-under-flood` | thread 0 checks one hot key, present in the table, on every call: the only thread measured; threads 1 and up each check a new key on every call (a flood) on the same table, and their calls are not counted (the row's line prints their call rate); at 1 thread the hot thread runs alone (the baseline). Shows whether a flood of new keys slows the checks of a present key (e.g. false sharing on the table's shard headers) |
//! | `packet-loop` | reads the clock once per batch of 32 checks (65,536 flows), passes it in |
//! | `http-layer` | sends an HTTP request through a tower service in process (no network, no runtime): through nanolimit's `RateLimitLayer`, through tower_governor's `GovernorLayer`, or straight to the inner service (the floor); per-IP keys, each thread cycling through its own random order of one pool of 10,000 client addresses (features `http` and `axum`) |
//! | `composite-2` | cycles through its own 1,024 keys, checking each against a composite (`nanolimit::composite::Composite`) of a per-key GCRA (`KeyedLimiter`, 10^8 / s, burst 10^6) and a global GCRA shared by all threads (`Limiter`, 10^9 / s, burst 10^6): every check passes both. Rows: `nanolimit gcra+gcra` (the composite's `check(&key)`), `nanolimit gcra+gcra-striped` (the same with the global GCRA a `StripedLimiter` on its defaults, last: admitted from the thread's stripe), `nanolimit gcra` (the per-key limiter alone, the same keys: one check, for the composite / one-check ratio printed under the table, the issue's target being at most 2.2) and `floor two-cas` (a clock read, an ahash of the key and a compare-and-swap on the thread's own word, then one on a word shared by all threads: what the composite needs at least); see `benches/contention/composite.rs` |
//! | `inflight` | takes one permit from one concurrency limiter shared by all threads (`try_acquire()`) and drops it at once: one call is the pair acquire + release; the limit (1,024 permits) is far above the permits held at once, so every acquire succeeds: through nanolimit's `InFlightLimiter`, through tokio's `Semaphore`, or as the pair's hardware floor (`fetch_add` then `fetch_sub` on one shared word) |
//! | `redis-script`, `redis-naive`, `redis-leased` | with `--redis URL` only: one fleet-wide check per call over 10,000 keys against a real server: `RedisLimiter<Gcra>::check` (one `EVALSHA`; limiter `nanolimit`, `gcra`), the seed's `INCR` + `EXPIRE NX` in one pipeline (`incr-expire`, `fixed-window`), and `LeasedRedisLimiter::check` (`nanolimit`, `gcra-leased`); per-key quota 10^6 / s, burst 10^5, every call passes; under the tables, script / naive time and leased / script throughput (the issue's targets: at most 1.2, at least 100); see `benches/contention/redis.rs` |
//!
//! Limiters: nanolimit (`gcra`, `sliding-window`, `fixed-window`) everywhere, and nanolimit
//! `gcra-striped` and `sliding-log` (the exact `SlidingLogLimiter`: one record per admitted
//! unit in a ring of the window's limit, at most one burst in any window of the window
//! algorithms' length) in direct-allow and direct-deny, and the keyed sliding log
//! (`KeyedSlidingLogLimiter`, the same quota per key) in keyed-hot and keyed-rotate-100k;
//! governor 0.10 (GCRA;
//! direct, and keyed on its default `DashMap` store with std's hasher) everywhere; the
//! `ratelimit` crate (a token bucket) in direct-allow and direct-deny; `mutex-hashmap`, a
//! `Mutex<HashMap<u64, (f64 tokens, Instant)>>` token bucket, in the keyed ones. In the packet
//! loop nanolimit uses `check_at` with the batch's reading of its own clock and the
//! mutex-hashmap takes the batch's `Instant`; governor has no API taking the caller's time, so it
//! reads its clock on every check (that cost is part of its row). keyed-hot-under-flood has no
//! mutex-hashmap row (governor is the peer). The keyed limiters are driven through the
//! `KeyedSubject` trait that every keyed benchmark shares (`benches/shared/keyed_subjects.rs`).
//!
//! `gcra-striped` is `StripedLimiter::new(quota)` (`nanolimit::striped`): the scenario's GCRA
//! quota as one shared budget, leased into per-thread stripes, with the defaults (stripes: twice
//! the available parallelism, rounded up to a power of two; leases of 1 to `min(256, burst / (4 ×
//! stripes))` units living 10 ms; the default `QuantaClock`), checked with `check()` like the
//! `gcra` row. Its thread's stripe serves most checks without writing the shared word. By its
//! contract it may admit up to `over_admission_bound()` units beyond the quota over a run (see
//! Columns, accuracy): with direct-allow's quota on 2 cores, 4 stripes × 255 = 1,020 units; with
//! direct-deny's burst of 10 the leases are of one unit, the bound is 0, and the row is the plain
//! GCRA limiter's decisions taken through a stripe (every admission a refill, every denial a
//! read-only test of the shared word).
//!
//! http-layer has its own rows (`benches/contention/http_layer.rs` says exactly what each
//! builds): `nanolimit gcra` (the layer over a `KeyedLimiter<IpAddr, Gcra>` keyed by `PeerIp`,
//! no headers on allowed responses: the layer's default), `tower_governor gcra`
//! (tower_governor 0.8's `GovernorLayer`, its default configuration: `PeerIpKeyExtractor`, no
//! headers on allowed responses, its governor `DashMap` store), `floor no-layer` (the inner
//! service alone) and `floor peer-ip-check` (the least a keyed layer must add: the client's
//! address from the extensions, one `QuantaClock` reading, the IP's ahash and one
//! compare-and-swap on a line of an array as large as nanolimit's table; no limiter). Each
//! call builds an empty `http::Request<axum::body::Body>` carrying its client's address as
//! axum's `ConnectInfo<SocketAddr>` (where both layers' extractors read it), calls `ready()`
//! and `call()` on the thread's clone of the service, polls each future once with a no-op
//! waker (the inner `service_fn` answers `200 OK` at once: a pending future panics), and
//! counts a `200` as allowed. Under the table a line gives the layers' overhead over the floor
//! (row − floor, aggregate ns per call) and nanolimit's overhead over tower_governor's, the
//! issue's target being at most 0.5, and a second line `peer-ip-check`'s overhead and its share
//! of tower_governor's: the lowest ratio a layer on the same clock could reach.
//!
//! inflight has its own rows too (`benches/contention/inflight.rs`): `nanolimit in-flight`
//! (`nanolimit::inflight::InFlightLimiter::new(1024)`: `try_acquire()`, then the `Permit`
//! dropped; with nobody waiting one load and one compare-and-swap, then one `fetch_add`, on its
//! one cache-padded word), `tokio-semaphore semaphore` (tokio's
//! `tokio::sync::Semaphore::new(1024)`: `try_acquire()`, then the `SemaphorePermit` dropped)
//! and `floor fetch-add-pair` (one `fetch_add(1)`, Acquire, then one `fetch_sub(1)`, Release,
//! on one cache-padded `AtomicU64` shared by all threads, as the limiters' word is: the two
//! read-modify-writes of one shared cache line that an acquire and a release need at least, with
//! no check and no retry). A call counts as allowed when its acquire succeeded. There is no
//! quota: accuracy is "-", as for every floor row. Under the table a line gives nanolimit's
//! aggregate ns per call over tokio-semaphore's at each thread count, the issue's target being
//! at most 1.
//!
//! nanolimit keyed tables are built with a capacity of the scenario's key space (at least 1,024
//! keys; the table adds its own headroom; http-layer: its 10,000 clients), except in keyed-flood and keyed-hot-under-flood:
//! 100,000 keys for unbounded distinct keys. Every table has the default shards and full
//! behaviour `WhenFull::Deny` (the default). governor's and the mutex-hashmap's maps are
//! unbounded; the table prints how many keys they hold after the run.
//!
//! Floor rows, measured once per thread count: `clock-read` (one `QuantaClock::now`, the
//! clock nanolimit reads by default), `cas` (one load and one compare-and-swap on the thread's own
//! cache-padded `AtomicU64`, nothing shared) and `ahash-cas` (ahash of a new `u64` key, then the
//! same compare-and-swap). "vs floor" divides a row's ns per call per thread by the sum of the
//! floors its work needs: clock-read + cas (direct, direct-reserve included), clock-read +
//! ahash-cas (keyed), clock-read + random-line-cas (the many-key scenarios below), and
//! clock-read / 32 + ahash-cas (packet loop). The many-key scenarios (keyed-rotate-100k,
//! keyed-zipf-1m, keyed-flood), whose tables outgrow the caches, have a floor of their own,
//! `random-line-cas` (limiter `floor`): the key's ahash picks one 64-byte line of an array as
//! large as nanolimit's table for the scenario, and one compare-and-swap updates it, following
//! the scenario's key sequence (no clock read, no probe, no identity). http-layer has its own
//! floors instead, measured in the scenario at each of its thread counts: `no-layer` (limiter
//! `floor`), the same requests sent to the inner service with no layer, what the request, the
//! call and the response cost without a limit, and `peer-ip-check` (limiter `floor`), the
//! same with the least a keyed layer must add. Their CSV rows appear under http-layer only;
//! the hardware floors are repeated under it as under every scenario. inflight likewise has its
//! own floor, `fetch-add-pair` (limiter `floor`), measured in the scenario at each of its
//! thread counts.
//!
//! ## Quotas
//!
//! Each is a rate and a burst; the window algorithms get the same rate with a window holding
//! one burst (limit = burst per window = burst / rate), governor a replenish interval of
//! 1 / rate with that burst, the token buckets that refill rate and bucket size.
//!
//! | scenarios | rate | burst | window | why |
//! |---|---|---|---|---|
//! | direct-allow, direct-reserve, direct-allow-counted | 10^9 / s | 10^6 | 1 ms | far above any thread count's offered load: nearly all allowed (reservations: granted at once), every allow (booking) writes (`gcra-striped`: every allow writes its own stripe; one in up to 256 takes a lease from the shared word) |
//! | direct-deny | 1,000 / s | 10 | 10 ms | saturated (above 99.99 % denied), yet enough admissions (~1,000 per second) to measure accuracy to a fraction of a percent (`gcra-striped`: leases of one unit, no over-admission) |
//! | keyed (all but keyed-hot-under-flood) | 1,000 / s per key | 50 | 50 ms | a per-client API quota: hot keys saturate, cold keys pass |
//! | keyed-hot-under-flood, GCRA (nanolimit, governor) | 1,000 / s per key | 10^9 | - | the hot key runs up debt, so its entry stays live (never reclaimable by a flood insert), yet it admits 10^9 checks (10 s of one thread's checks at 10^8 per second) before it saturates; a flood key's entry is live for 1 ms, then reclaimable |
//! | keyed-hot-under-flood, windows | 5·10^8 / s per key | 10^6 | 2 ms | the hot key would need 5·10^8 checks per second to reach its limit; its entry stays live while it is checked (a sliding window keeps the previous window's count; a fixed window's entry is fresh only from a window's start to the hot thread's first check in it); a flood key's entry is live for one or two windows |
//! | http-layer (nanolimit, tower_governor) | 10^6 / s per IP | 10^6 | - | far above what a client gets (10,000 clients share the calls: at most a few thousand requests per second each), so every request passes and both layers are priced on their pass path, the common one; the burst (1 s of the rate) lets a check pass even with a clock reading made long before its update (a thread preempted in between: with a burst of 1,000, i.e. 1 ms, about 1 request in 10^5 was denied at 4 threads on 2 cores); tower_governor gets it as `per_nanosecond(1_000)` and `burst_size(1_000_000)` |
//!
//! In keyed-hot-under-flood the hot key is never meant to be denied: its allowed fraction says
//! whether it was (it is counted as it is, like every row's). If the hot thread loses its core
//! for longer than a key stays live (more threads than cores), its entry may be reclaimed by a
//! flood key, and its next check inserts it again (counted as an ordinary call).
//!
//! ## Measurement
//!
//! For each (scenario, limiter, algorithm, threads) a fresh limiter is built, then the threads
//! set up their key sources and wait on a barrier; they run an uncounted warm-up, then the
//! measured phase, looping on a shared stop flag (checked every 64 calls) and counting calls and
//! admissions in locals, returned when they stop. Decisions are consumed (counted) and the
//! counts passed through `black_box`.
//!
//! ## Columns
//!
//! CSV (`--csv`), one row per measurement, floor rows repeated under every scenario:
//!
//! | column | meaning |
//! |---|---|
//! | `scenario` | scenario name |
//! | `limiter` | `nanolimit`, `governor`, `ratelimit`, `mutex-hashmap` or `floor`; http-layer: `nanolimit`, `tower_governor`, `floor`; inflight: `nanolimit`, `tokio-semaphore`, `floor` |
//! | `algorithm` | `gcra`, `gcra-striped` (nanolimit's `StripedLimiter`; direct-allow and direct-deny), `sliding-log` (nanolimit's `SlidingLogLimiter` in direct-allow and direct-deny, `KeyedSlidingLogLimiter` in keyed-hot and keyed-rotate-100k), `sliding-window`, `fixed-window`, `token-bucket`; floors: `clock-read`, `cas`, `ahash-cas`, and in the many-key scenarios `random-line-cas`; http-layer's floors: `no-layer`, `peer-ip-check`; direct-allow-counted: `gcra`, `gcra-counted` (built with counters), and its floor `cas-fetch-add`; composite-2: `gcra+gcra`, `gcra+gcra-striped`, `gcra` and its floor `two-cas`; inflight: `in-flight` (nanolimit's `InFlightLimiter`), `semaphore` (tokio's), and its floor `fetch-add-pair` |
//! | `threads` | threads calling at once |
//! | `keys` | distinct keys offered: 1 for direct limiters and inflight's limiters, keyed-hot and keyed-hot-under-flood (the hot key, the one counted), the key space for the other keyed scenarios, the distinct keys actually checked for keyed-flood; 0 for floors |
//! | `ops` | calls by all threads in the measured phase; keyed-hot-under-flood: the hot thread's calls only (the flood's are not counted) |
//! | `ns_per_op` | wall time / calls of one thread (averaged over threads): one call's cost as its caller sees it; keyed-hot-under-flood: the hot thread's |
//! | `agg_ns_per_op` | wall time / all calls (`ns_per_op / threads`); keyed-hot-under-flood: wall time / the hot thread's calls (= `ns_per_op`: one thread is measured) |
//! | `mops_per_s` | all calls per second, in millions; keyed-hot-under-flood: the hot thread's |
//! | `allowed_fraction` | admitted / calls in the measured phase (floors: 1); keyed-hot-under-flood: of the hot thread's calls; direct-reserve: reservations granted at once (zero delay) / calls (`reserve()` grants every request, perhaps for later: one granted with a delay would be booked ahead, not admitted now, so it is not counted, and the fraction and the accuracy show whether the quota ever made a reservation wait) |
//!
//! The table adds "vs gov" (governor's aggregate ns per call over the row's, same scenario and
//! threads; http-layer: tower_governor's; inflight: tokio-semaphore's), "vs floor" (above) and accuracy: the requests admitted over the limiter's life
//! (warm-up included, since its state carries over) against what its quota admits over that
//! span, summed over keys as min(requests to the key, per-key value), printed as a deviation
//! (above zero: more admitted than the quota allows). The span runs from the first possible
//! check (for window algorithms: from the start of the window the limiter was built in; windows
//! are aligned to the process's clock origin) to the last check. Per-key value: rate × span +
//! burst (GCRA, token buckets) and limit per window touched
//! (fixed window), both strict bounds; limit × max(1, span / window) for the sliding-window
//! counter, what a saturated key gets (the counter approximates by design). For `gcra-striped`
//! the per-key value also counts what the limiter may admit beyond its quota by contract: rate ×
//! span + burst + `over_admission_bound()` (the stripes' units, at most one lease lifetime of the
//! rate), still a strict bound; the cell then names that allowance ("incl. +1020 by contract").
//! "under quota" means
//! the offered load never needed a denial and everything passed. For keyed-flood the accuracy
//! is that of the legitimate hot keys only ("legit"): their admissions against their quota; for
//! keyed-hot-under-flood that of the hot key ("hot"). Under direct-reserve a last line divides
//! its aggregate ns per call by that of direct-allow's nanolimit gcra row at the same threads
//! (run both: `--scenario direct-allow --scenario direct-reserve`): a reservation's cost over an
//! allowed check's, measured in the same run.

#[path = "contention/composite.rs"]
mod composite;
#[path = "shared/http_clients.rs"]
mod http_clients;
#[cfg(all(feature = "http", feature = "axum"))]
#[path = "contention/http_layer.rs"]
mod http_layer;
#[cfg(all(feature = "http", feature = "axum"))]
#[path = "shared/http_requests.rs"]
mod http_requests;
#[path = "contention/inflight.rs"]
mod inflight;
#[path = "contention/keys.rs"]
mod keys;
#[path = "contention/measure.rs"]
mod measure;
#[path = "contention/quotas.rs"]
mod quotas;
#[cfg(feature = "redis")]
#[path = "contention/redis.rs"]
mod redis;
#[path = "contention/report.rs"]
mod report;
#[path = "contention/subjects.rs"]
mod subjects;
// Shared with the other keyed benchmarks: housekeeping, names and caller-counted time, and the
// per-minute and per-hour quotas, serve `benches/keyed.rs` and `benches/callgrind_keyed.rs`.
#[path = "shared/keyed_subjects.rs"]
#[allow(dead_code)]
mod keyed_subjects;
#[path = "shared/quota_spec.rs"]
#[allow(dead_code)]
mod quota_spec;

use keyed_subjects::{GovernorKeyed, KeyedSubject};
use keys::KeyPattern;
use measure::{measure, Measurement, Timing};
use nanolimit::keyed::Hashed;
use nanolimit::striped::StripedLimiter;
use nanolimit::{FixedWindow, Gcra, KeyedLimiter, QuantaClock, SlidingWindow};
use quota_spec::QuotaSpec;
use quotas::AlgorithmKind;
use report::{Accuracy, Row};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use subjects::{
    AhashCasFloor, CasFetchAddFloor, CasFloor, ClockReadFloor, DirectSubject, DirectWorker,
    KeyedWorker, MutexHashMap, PacketWorker, RandomLineCasFloor, Reserving,
};

/// direct-allow and direct-reserve: far above what any number of threads can offer.
const DIRECT_ALLOW_QUOTA: QuotaSpec = QuotaSpec::per_second(1_000_000_000, 1_000_000);
/// direct-deny: saturated, with enough admissions to measure accuracy.
const DIRECT_DENY_QUOTA: QuotaSpec = QuotaSpec::per_second(1_000, 10);
/// Every keyed scenario but keyed-hot-under-flood, per key.
const KEYED_QUOTA: QuotaSpec = QuotaSpec::per_second(1_000, 50);
/// keyed-hot-under-flood, GCRA (nanolimit and governor), per key: the hot key runs up debt (its
/// entry stays live) but admits 10^9 checks before it saturates.
const HOT_UNDER_FLOOD_GCRA_QUOTA: QuotaSpec = QuotaSpec::per_second(1_000, 1_000_000_000);
/// keyed-hot-under-flood, window algorithms, per key: 10^6 per 2 ms window, which the hot key
/// would need 5·10^8 checks per second to reach.
const HOT_UNDER_FLOOD_WINDOW_QUOTA: QuotaSpec = QuotaSpec::per_second(500_000_000, 1_000_000);
/// http-layer, per client IP: in `benches/shared/http_clients.rs`, shared with
/// `benches/callgrind_http.rs`.
use http_clients::HTTP_LAYER_QUOTA;
/// http-layer's thread counts unless `--threads` says otherwise (the smoke test: 1 and 2).
const HTTP_LAYER_THREADS: [usize; 3] = [1, 2, 4];
/// inflight's thread counts unless `--threads` says otherwise (the smoke test: 1 and 2).
const INFLIGHT_THREADS: [usize; 3] = [1, 2, 4];
/// composite-2's thread counts unless `--threads` says otherwise (the smoke test: 1 and 2).
const COMPOSITE_THREADS: [usize; 3] = [1, 2, 4];
/// Whether this build has http-layer (the features `http` and `axum`).
const HTTP_LAYER_BUILT: bool = cfg!(all(feature = "http", feature = "axum"));
/// What to build for http-layer.
const HTTP_LAYER_BUILD_HINT: &str =
    "http-layer needs the features http and axum: cargo bench --all-features --bench contention";
/// The keys the Redis scenarios walk.
const REDIS_SCENARIO_KEYS: usize = 10_000;
/// The Redis scenarios' thread counts unless `--threads` says otherwise.
const REDIS_THREADS: [usize; 3] = [1, 2, 4];
/// Whether this build has the Redis scenarios (the feature `redis`).
const REDIS_BUILT: bool = cfg!(feature = "redis");
/// What the Redis scenarios need.
const REDIS_HINT: &str = "the redis-* scenarios need the feature redis and a server: cargo bench --all-features --bench contention -- --redis redis://127.0.0.1:6379";
/// nanolimit's table capacity in keyed-flood and keyed-hot-under-flood.
const FLOOD_TABLE_CAPACITY: usize = 100_000;
/// Zipf draws each thread replays (a power of two)...
const ZIPF_DRAWS_PER_THREAD: usize = 1 << 20;
/// ... unless that makes more than this many draws in all (many-core machines): then fewer per
/// thread.
const ZIPF_DRAWS_TOTAL_MAX: usize = 1 << 25;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    DirectAllow,
    DirectReserve,
    DirectDeny,
    DirectAllowCounted,
    KeyedHot,
    KeyedSpread,
    KeyedRotate100k,
    KeyedZipf1m,
    KeyedFlood,
    KeyedHotUnderFlood,
    PacketLoop,
    HttpLayer,
    Inflight,
    Composite2,
    RedisScript,
    RedisNaive,
    RedisLeased,
}

impl Scenario {
    const ALL: [Scenario; 17] = [
        Scenario::DirectAllow,
        Scenario::DirectReserve,
        Scenario::DirectDeny,
        Scenario::DirectAllowCounted,
        Scenario::KeyedHot,
        Scenario::KeyedSpread,
        Scenario::KeyedRotate100k,
        Scenario::KeyedZipf1m,
        Scenario::KeyedFlood,
        Scenario::KeyedHotUnderFlood,
        Scenario::PacketLoop,
        Scenario::HttpLayer,
        Scenario::Inflight,
        Scenario::Composite2,
        Scenario::RedisScript,
        Scenario::RedisNaive,
        Scenario::RedisLeased,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::DirectAllow => "direct-allow",
            Scenario::DirectReserve => "direct-reserve",
            Scenario::DirectDeny => "direct-deny",
            Scenario::DirectAllowCounted => "direct-allow-counted",
            Scenario::KeyedHot => "keyed-hot",
            Scenario::KeyedSpread => "keyed-spread",
            Scenario::KeyedRotate100k => "keyed-rotate-100k",
            Scenario::KeyedZipf1m => "keyed-zipf-1m",
            Scenario::KeyedFlood => "keyed-flood",
            Scenario::KeyedHotUnderFlood => "keyed-hot-under-flood",
            Scenario::HttpLayer => "http-layer",
            Scenario::PacketLoop => "packet-loop",
            Scenario::Inflight => "inflight",
            Scenario::Composite2 => "composite-2",
            Scenario::RedisScript => "redis-script",
            Scenario::RedisNaive => "redis-naive",
            Scenario::RedisLeased => "redis-leased",
        }
    }

    fn description(self) -> String {
        let keyed_quota = format!(
            "per-key quota {}/s, burst {}",
            KEYED_QUOTA.count, KEYED_QUOTA.burst
        );
        match self {
            Scenario::DirectAllow => format!(
                "one limiter shared by all threads, quota 1e9/s burst {} (nearly all allowed)",
                DIRECT_ALLOW_QUOTA.burst
            ),
            Scenario::DirectReserve => format!(
                "one limiter shared by all threads, each call reserve()s one unit, quota 1e9/s burst {} (every reservation granted at once)",
                DIRECT_ALLOW_QUOTA.burst
            ),
            Scenario::DirectAllowCounted => format!(
                "direct-allow with counters: one GCRA limiter shared by all threads, quota 1e9/s burst {}, built with counters (gcra-counted) and without (gcra); floor = CAS on one shared word + fetch_add on the thread's own line",
                DIRECT_ALLOW_QUOTA.burst
            ),
            Scenario::DirectDeny => format!(
                "one limiter shared by all threads, quota {}/s burst {} (saturated: nearly all denied)",
                DIRECT_DENY_QUOTA.count, DIRECT_DENY_QUOTA.burst
            ),
            Scenario::KeyedHot => format!("all threads on one key; {keyed_quota}"),
            Scenario::KeyedSpread => format!(
                "each thread cycles through its own {} keys; {keyed_quota}",
                keys::SPREAD_KEYS_PER_THREAD
            ),
            Scenario::KeyedRotate100k => format!(
                "threads walk {} shared keys in order, each from its own offset; {keyed_quota}",
                keys::ROTATE_KEYS
            ),
            Scenario::KeyedZipf1m => format!(
                "Zipf (s = {}) draws over {} keys, precomputed per thread; {keyed_quota}",
                keys::ZIPF_EXPONENT,
                keys::ZIPF_KEYS,
            ),
            Scenario::KeyedFlood => format!(
                "a new key every call, every {}th call one of {} legitimate hot keys; nanolimit table {} keys; {keyed_quota}",
                keys::FLOOD_LEGITIMATE_EVERY,
                keys::FLOOD_LEGITIMATE_KEYS,
                FLOOD_TABLE_CAPACITY
            ),
            Scenario::KeyedHotUnderFlood => format!(
                "thread 0 checks one present hot key (only its calls are counted), threads 1.. a new key every call; nanolimit table {} keys; per-key quota: GCRA {}/s burst {}, windows {} per {} ms (the hot key never saturates)",
                FLOOD_TABLE_CAPACITY,
                HOT_UNDER_FLOOD_GCRA_QUOTA.count,
                HOT_UNDER_FLOOD_GCRA_QUOTA.burst,
                HOT_UNDER_FLOOD_WINDOW_QUOTA.burst,
                HOT_UNDER_FLOOD_WINDOW_QUOTA.window().as_millis(),
            ),
            Scenario::PacketLoop => format!(
                "batches of {} checks sharing one caller-read timestamp over {} flows (governor reads its clock per check); {keyed_quota}",
                subjects::PACKET_BATCH,
                keys::PACKET_FLOWS
            ),
            Scenario::HttpLayer => format!(
                "one request per call through a tower service in process (ready, call, one poll), {} client IPs, each thread in its own random order; per-IP quota {}/s, burst {} (every request passes); floor = the service with no layer; floor peer-ip-check = the least a keyed layer adds to it",
                keys::HTTP_CLIENTS,
                HTTP_LAYER_QUOTA.count,
                HTTP_LAYER_QUOTA.burst,
            ),
            Scenario::Inflight => format!(
                "one concurrency limiter shared by all threads, limit {} permits; each call try_acquire()s one permit and drops it (every acquire succeeds); floor = fetch_add + fetch_sub on one shared word",
                inflight::INFLIGHT_LIMIT,
            ),
            Scenario::Composite2 => format!(
                "each thread cycles through its own {} keys, checking a composite of a per-key GCRA ({}/s, burst {}) and a global GCRA ({}/s, burst {}; every check passes both); nanolimit gcra = the per-key limiter alone; floor = clock read + ahash + own CAS + shared CAS",
                composite::KEYS_PER_THREAD,
                composite::PER_KEY_QUOTA.count,
                composite::PER_KEY_QUOTA.burst,
                composite::GLOBAL_QUOTA.count,
                composite::GLOBAL_QUOTA.burst,
            ),
            Scenario::RedisScript => Self::redis_description(
                "one RedisLimiter<Gcra>::check per call: one EVALSHA of the GCRA script on the server's time",
            ),
            Scenario::RedisNaive => Self::redis_description(
                "INCR of the key's counter and EXPIRE key 1 NX in one pipeline per call (the seed's fixed window of 1 s)",
            ),
            Scenario::RedisLeased => Self::redis_description(
                "LeasedRedisLimiter::check per call (leases of 64 to 4,096 units living 10 s, background refills; every key leased once before, untimed)",
            ),
        }
    }

    fn redis_description(what: &str) -> String {
        format!(
            "{what}; threads walk {} keys from their own offsets; per-key quota 1e6/s, burst 1e5 (every call passes)",
            REDIS_SCENARIO_KEYS
        )
    }

    fn is_redis(self) -> bool {
        matches!(
            self,
            Scenario::RedisScript | Scenario::RedisNaive | Scenario::RedisLeased
        )
    }

    fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL
            .into_iter()
            .find(|scenario| scenario.name() == name)
    }

    fn is_direct(self) -> bool {
        matches!(
            self,
            Scenario::DirectAllow
                | Scenario::DirectReserve
                | Scenario::DirectDeny
                | Scenario::DirectAllowCounted
        )
    }

    /// The quota of the scenario's `algorithm` rows.
    fn quota(self, algorithm: AlgorithmKind) -> QuotaSpec {
        match (self, algorithm) {
            (Scenario::DirectAllow | Scenario::DirectReserve | Scenario::DirectAllowCounted, _) => {
                DIRECT_ALLOW_QUOTA
            }
            (Scenario::DirectDeny, _) => DIRECT_DENY_QUOTA,
            (
                Scenario::KeyedHotUnderFlood,
                AlgorithmKind::SlidingWindow | AlgorithmKind::FixedWindow,
            ) => HOT_UNDER_FLOOD_WINDOW_QUOTA,
            (Scenario::KeyedHotUnderFlood, _) => HOT_UNDER_FLOOD_GCRA_QUOTA,
            (Scenario::HttpLayer, _) => HTTP_LAYER_QUOTA,
            _ => KEYED_QUOTA,
        }
    }

    /// Threads whose calls a row counts: all, except in keyed-hot-under-flood (the hot thread).
    fn counted_threads(self, threads: usize) -> usize {
        match self {
            Scenario::KeyedHotUnderFlood => 1,
            _ => threads,
        }
    }

    /// nanolimit's table capacity: the key space, at least 1,024 (flood: fixed). The table adds
    /// its own headroom on top of the capacity it is asked for.
    fn table_capacity(self, threads: usize) -> usize {
        let key_space = match self {
            Scenario::KeyedSpread => keys::SPREAD_KEYS_PER_THREAD as usize * threads,
            Scenario::KeyedRotate100k => keys::ROTATE_KEYS as usize,
            Scenario::KeyedZipf1m => keys::ZIPF_KEYS as usize,
            Scenario::KeyedFlood | Scenario::KeyedHotUnderFlood => return FLOOD_TABLE_CAPACITY,
            Scenario::PacketLoop => keys::PACKET_FLOWS as usize,
            Scenario::HttpLayer => keys::HTTP_CLIENTS as usize,
            _ => 1,
        };
        key_space.max(1024)
    }

    /// The scenario's own thread counts, where it has them, used unless `--threads` is given
    /// (and outside the smoke test).
    fn own_threads(self) -> Option<&'static [usize]> {
        match self {
            Scenario::HttpLayer => Some(&HTTP_LAYER_THREADS),
            Scenario::Inflight => Some(&INFLIGHT_THREADS),
            Scenario::Composite2 => Some(&COMPOSITE_THREADS),
            Scenario::RedisScript | Scenario::RedisNaive | Scenario::RedisLeased => {
                Some(&REDIS_THREADS)
            }
            _ => None,
        }
    }

    /// Whether the scenario's keys outgrow the caches (its table, or the keys it offers): those
    /// get a `random-line-cas` floor row of their own.
    fn has_many_keys(self) -> bool {
        matches!(
            self,
            Scenario::KeyedRotate100k | Scenario::KeyedZipf1m | Scenario::KeyedFlood
        )
    }

    /// Whether this build can run the scenario.
    fn is_built(self) -> bool {
        match self {
            Scenario::HttpLayer => HTTP_LAYER_BUILT,
            _ if self.is_redis() => REDIS_BUILT,
            _ => true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LimiterKind {
    Nanolimit,
    Governor,
    Ratelimit,
    MutexHashMap,
    TowerGovernor,
    TokioSemaphore,
    IncrExpire,
    Floor,
}

impl LimiterKind {
    fn name(self) -> &'static str {
        match self {
            LimiterKind::Nanolimit => "nanolimit",
            LimiterKind::Governor => "governor",
            LimiterKind::Ratelimit => "ratelimit",
            LimiterKind::MutexHashMap => "mutex-hashmap",
            LimiterKind::TowerGovernor => "tower_governor",
            LimiterKind::TokioSemaphore => "tokio-semaphore",
            LimiterKind::IncrExpire => "incr-expire",
            LimiterKind::Floor => "floor",
        }
    }
}

/// The limiters measured in a scenario.
fn limiters_for(scenario: Scenario) -> Vec<(LimiterKind, AlgorithmKind)> {
    if scenario == Scenario::DirectReserve {
        // GCRA is the one quota that reserves; the peers have no reservations.
        return vec![(LimiterKind::Nanolimit, AlgorithmKind::Gcra)];
    }
    if scenario == Scenario::DirectAllowCounted {
        // The limiter without counters and with them, and the counted check's hardware floor.
        return vec![
            (LimiterKind::Nanolimit, AlgorithmKind::Gcra),
            (LimiterKind::Nanolimit, AlgorithmKind::GcraCounted),
            (LimiterKind::Floor, AlgorithmKind::CasFetchAdd),
        ];
    }
    if scenario == Scenario::HttpLayer {
        // The layers, the service with no layer (the scenario's own floor) and the least a
        // keyed layer must add to it.
        return vec![
            (LimiterKind::Nanolimit, AlgorithmKind::Gcra),
            (LimiterKind::TowerGovernor, AlgorithmKind::Gcra),
            (LimiterKind::Floor, AlgorithmKind::NoLayer),
            (LimiterKind::Floor, AlgorithmKind::PeerIpCheck),
        ];
    }
    if scenario == Scenario::Inflight {
        // The concurrency limiters, and the pair of atomic operations: the scenario's own floor.
        return vec![
            (LimiterKind::Nanolimit, AlgorithmKind::InFlight),
            (LimiterKind::TokioSemaphore, AlgorithmKind::Semaphore),
            (LimiterKind::Floor, AlgorithmKind::FetchAddPair),
        ];
    }
    match scenario {
        Scenario::RedisScript => return vec![(LimiterKind::Nanolimit, AlgorithmKind::Gcra)],
        Scenario::RedisNaive => return vec![(LimiterKind::IncrExpire, AlgorithmKind::FixedWindow)],
        Scenario::RedisLeased => {
            return vec![(LimiterKind::Nanolimit, AlgorithmKind::GcraLeased)];
        }
        _ => {}
    }
    if scenario == Scenario::Composite2 {
        // The composite, the per-key limiter alone (one check), and the work the composite
        // needs at least: the scenario's own floor.
        return vec![
            (LimiterKind::Nanolimit, AlgorithmKind::GcraPlusGcra),
            (LimiterKind::Nanolimit, AlgorithmKind::GcraPlusGcraStriped),
            (LimiterKind::Nanolimit, AlgorithmKind::Gcra),
            (LimiterKind::Floor, AlgorithmKind::TwoCas),
        ];
    }
    let mut limiters = vec![
        (LimiterKind::Nanolimit, AlgorithmKind::Gcra),
        (LimiterKind::Nanolimit, AlgorithmKind::SlidingWindow),
        (LimiterKind::Nanolimit, AlgorithmKind::FixedWindow),
        (LimiterKind::Governor, AlgorithmKind::Gcra),
    ];
    if scenario.is_direct() {
        // direct-allow and direct-deny (direct-reserve returned above): the striped limiter
        // after the plain GCRA row it is compared with.
        limiters.insert(1, (LimiterKind::Nanolimit, AlgorithmKind::GcraStriped));
        limiters.insert(4, (LimiterKind::Nanolimit, AlgorithmKind::SlidingLog));
        limiters.push((LimiterKind::Ratelimit, AlgorithmKind::TokenBucket));
    } else if scenario != Scenario::KeyedHotUnderFlood {
        if matches!(scenario, Scenario::KeyedHot | Scenario::KeyedRotate100k) {
            // The keyed sliding log, after the other nanolimit algorithms.
            limiters.insert(3, (LimiterKind::Nanolimit, AlgorithmKind::SlidingLog));
        }
        limiters.push((LimiterKind::MutexHashMap, AlgorithmKind::TokenBucket));
    }
    if scenario.has_many_keys() {
        // The physical floor of a table larger than the caches, after the limiters.
        limiters.push((LimiterKind::Floor, AlgorithmKind::RandomLineCas));
    }
    limiters
}

const FLOORS: [AlgorithmKind; 3] = [
    AlgorithmKind::ClockRead,
    AlgorithmKind::Cas,
    AlgorithmKind::AhashCas,
];

/// One measurement to make.
#[derive(Debug, Clone, Copy)]
struct Job {
    /// `None` for floors.
    scenario: Option<Scenario>,
    limiter: LimiterKind,
    algorithm: AlgorithmKind,
    threads: usize,
}

#[derive(Debug)]
struct Config {
    scenarios: Vec<Scenario>,
    /// Thread counts of the hardware floors and of every scenario without its own.
    threads: Vec<usize>,
    /// Whether every scenario runs at `threads` (`--threads`, or the smoke test).
    threads_for_all: bool,
    /// Scenarios left out because this build cannot run them (a note says so).
    skipped: Vec<Scenario>,
    timing: Timing,
    zipf_draws_per_thread: usize,
    csv: Option<PathBuf>,
    smoke_test: bool,
    /// The server of the Redis scenarios (`--redis URL`).
    redis_url: Option<String>,
    /// Measurements of each row (`--runs N`), interleaved; the row reported is the median's.
    runs: usize,
}

const USAGE: &str = "usage: cargo bench --bench contention -- [--quick] [--scenario NAME]... \
[--threads 1,2,4] [--duration SECS] [--runs N] [--csv PATH] [--redis URL]
scenarios: direct-allow direct-reserve direct-deny direct-allow-counted keyed-hot keyed-spread keyed-rotate-100k keyed-zipf-1m \
keyed-flood keyed-hot-under-flood packet-loop http-layer inflight composite-2 redis-script redis-naive redis-leased (http-layer: build with --all-features; \
redis-*: --all-features and --redis URL)";

fn parse_args(arguments: impl Iterator<Item = String>) -> Result<Config, String> {
    let mut scenarios = Vec::new();
    let mut threads: Option<Vec<usize>> = None;
    let mut duration_seconds: Option<f64> = None;
    let mut quick = false;
    let mut csv = None;
    let mut bench_flag = false;
    let mut redis_url = None;
    let mut runs = 1;
    let mut arguments = arguments.peekable();
    while let Some(argument) = arguments.next() {
        let mut value = |flag: &str| {
            arguments
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match argument.as_str() {
            "--bench" => bench_flag = true,
            "--quick" => quick = true,
            "--scenario" => {
                let name = value("--scenario")?;
                let scenario = Scenario::from_name(&name)
                    .ok_or_else(|| format!("unknown scenario {name:?}"))?;
                if !scenario.is_built() {
                    let hint = if scenario.is_redis() {
                        REDIS_HINT
                    } else {
                        HTTP_LAYER_BUILD_HINT
                    };
                    return Err(format!(
                        "this build has no scenario {name}: {hint} -- --scenario {name}"
                    ));
                }
                if !scenarios.contains(&scenario) {
                    scenarios.push(scenario);
                }
            }
            "--threads" => {
                let list = value("--threads")?;
                let parsed = list
                    .split(',')
                    .map(|item| match item.trim().parse::<usize>() {
                        Ok(count) if count > 0 => Ok(count),
                        _ => Err(format!("bad thread count {item:?} in --threads {list}")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                threads = Some(parsed);
            }
            "--duration" => {
                let text = value("--duration")?;
                match text.parse::<f64>() {
                    Ok(seconds) if seconds > 0.0 && seconds.is_finite() => {
                        duration_seconds = Some(seconds)
                    }
                    _ => return Err(format!("bad --duration {text:?} (seconds, above 0)")),
                }
            }
            "--csv" => csv = Some(PathBuf::from(value("--csv")?)),
            "--runs" => {
                let text = value("--runs")?;
                match text.parse::<usize>() {
                    Ok(count @ 1..=99) => runs = count,
                    _ => return Err(format!("bad --runs {text:?} (1 to 99)")),
                }
            }
            "--redis" => {
                if !REDIS_BUILT {
                    return Err(REDIS_HINT.to_string());
                }
                redis_url = Some(value("--redis")?);
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if redis_url.is_none() {
        if let Some(scenario) = scenarios.iter().find(|scenario| scenario.is_redis()) {
            return Err(format!(
                "scenario {} needs --redis URL: {REDIS_HINT}",
                scenario.name()
            ));
        }
    }
    let mut skipped = Vec::new();
    if scenarios.is_empty() {
        (scenarios, skipped) = Scenario::ALL
            .into_iter()
            // The Redis scenarios run only against a server named with --redis.
            .filter(|scenario| !scenario.is_redis() || redis_url.is_some())
            .partition(|scenario| scenario.is_built());
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let smoke_test = !bench_flag;
    let default_threads = if smoke_test {
        vec![1, 2]
    } else if quick {
        vec![1, cores, 2 * cores]
    } else {
        (1..=cores).chain([2 * cores]).collect()
    };
    let threads_for_all = threads.is_some() || smoke_test;
    let mut threads = threads.unwrap_or(default_threads);
    threads.sort_unstable();
    threads.dedup();
    let measured_seconds = duration_seconds.unwrap_or(if smoke_test {
        0.01
    } else if quick {
        0.17
    } else {
        1.0
    });
    let measured = Duration::from_secs_f64(measured_seconds);
    let warm_up = (measured / 4).min(Duration::from_millis(250));
    let zipf_draws_per_thread = if smoke_test {
        1 << 16
    } else {
        let max_threads = threads.last().copied().unwrap_or(1);
        let fitting = (ZIPF_DRAWS_TOTAL_MAX / max_threads).max(1 << 12);
        ZIPF_DRAWS_PER_THREAD.min(1 << fitting.ilog2())
    };
    Ok(Config {
        scenarios,
        threads,
        threads_for_all,
        skipped,
        timing: Timing { warm_up, measured },
        zipf_draws_per_thread,
        csv,
        smoke_test,
        redis_url,
        runs,
    })
}

/// Shared inputs of the measurements.
struct Context {
    timing: Timing,
    zipf_draws: Option<Arc<Vec<Vec<u32>>>>,
    /// The server of the Redis scenarios.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    redis_url: Option<String>,
}

/// A measurement and what the accounting needs from it.
struct MeasuredRun {
    measurement: Measurement,
    /// The span over which the quota bounds admissions: from the limiter's first possible
    /// check (or the start of that window, for window algorithms) to the last check.
    lifetime: Duration,
    /// The units the limiter may admit beyond its quota by its own contract (a striped
    /// limiter's `over_admission_bound()`; 0 for the exact limiters), added to the bound the
    /// accuracy is judged against.
    over_admission_bound: u64,
    state_report: Option<String>,
}

fn lifetime_since(created: Instant, measurement: &Measurement) -> Duration {
    measurement
        .finished_at()
        .map_or(Duration::ZERO, |finished| finished.duration_since(created))
}

/// Where the span that bounds admissions starts for a limiter built at `built`: there, or for
/// window algorithms the start of the window holding it (windows are aligned to the origin of
/// the process's QuantaClock, which every nanolimit limiter here reads).
fn accounting_start(job: &Job, quota: &QuotaSpec, built: Instant) -> Instant {
    if !QuotaSpec::windows_start_at_clock_origin(job.algorithm) {
        return built;
    }
    let origin = QuantaClock::new().origin();
    let window_ns = quota.window().as_nanos().max(1);
    let into_window_ns = built.saturating_duration_since(origin).as_nanos() % window_ns;
    built - Duration::from_nanos(into_window_ns as u64)
}

fn run_direct<S: DirectSubject>(
    build: impl FnOnce() -> S,
    job: Job,
    context: &Context,
) -> MeasuredRun {
    let created = Instant::now();
    let subject = build();
    let start = match job.scenario {
        Some(scenario) => accounting_start(&job, &scenario.quota(job.algorithm), created),
        None => created,
    };
    let measurement = measure(job.threads, context.timing, |_| DirectWorker {
        subject: &subject,
    });
    MeasuredRun {
        lifetime: lifetime_since(start, &measurement),
        measurement,
        over_admission_bound: subject.over_admission_bound(),
        state_report: None,
    }
}

/// nanolimit's keyed limiter as the keyed scenarios use it: `u64` keys, hashed (the default),
/// on the default clock.
type NanolimitKeyed<Q> = KeyedLimiter<u64, Q, QuantaClock, Hashed>;

fn run_keyed<S: KeyedSubject>(job: Job, context: &Context) -> MeasuredRun {
    let (threads, timing) = (job.threads, context.timing);
    let scenario = job.scenario.expect("keyed jobs have a scenario");
    let subject = S::build(
        &scenario.quota(job.algorithm),
        scenario.table_capacity(threads),
    );
    // Admissions are bounded from the first possible check (GCRA, token buckets: building a
    // large table takes milliseconds that must not count as refill time), or from the start of
    // its window where windows are aligned to the clock's origin.
    let built = Instant::now();
    let start = accounting_start(&job, &scenario.quota(job.algorithm), built);
    let subject = &subject;
    let measurement = match scenario {
        Scenario::KeyedHot => measure(threads, timing, |_| KeyedWorker {
            subject,
            keys: keys::HotKey,
        }),
        Scenario::KeyedSpread => measure(threads, timing, |thread_index| KeyedWorker {
            subject,
            keys: keys::SpreadKeys::new(thread_index),
        }),
        Scenario::KeyedRotate100k => measure(threads, timing, |thread_index| KeyedWorker {
            subject,
            keys: keys::RotateKeys::new(thread_index, threads),
        }),
        Scenario::KeyedZipf1m => {
            let draws = context
                .zipf_draws
                .as_ref()
                .expect("Zipf draws are prepared before keyed-zipf-1m runs");
            measure(threads, timing, |thread_index| KeyedWorker {
                subject,
                keys: keys::ZipfKeys::new(&draws[thread_index]),
            })
        }
        Scenario::KeyedFlood => measure(threads, timing, |thread_index| KeyedWorker {
            subject,
            keys: keys::FloodKeys::new(thread_index),
        }),
        Scenario::KeyedHotUnderFlood => measure(threads, timing, |thread_index| KeyedWorker {
            subject,
            keys: keys::HotUnderFloodKeys::new(thread_index),
        }),
        Scenario::PacketLoop => measure(threads, timing, |thread_index| {
            PacketWorker::new(subject, keys::FlowKeys::new(thread_index, threads))
        }),
        Scenario::DirectAllow
        | Scenario::DirectReserve
        | Scenario::DirectDeny
        | Scenario::DirectAllowCounted
        | Scenario::HttpLayer
        | Scenario::Inflight
        | Scenario::Composite2
        | Scenario::RedisScript
        | Scenario::RedisNaive
        | Scenario::RedisLeased => {
            unreachable!("not a keyed scenario of KeyedSubjects")
        }
    };
    MeasuredRun {
        lifetime: lifetime_since(start, &measurement),
        over_admission_bound: 0,
        state_report: Some(subject.state_report()),
        measurement,
    }
}

fn run_floor(job: Job, context: &Context) -> MeasuredRun {
    let (threads, timing) = (job.threads, context.timing);
    let measurement = match job.algorithm {
        AlgorithmKind::ClockRead => {
            let clock = QuantaClock::new();
            measure(threads, timing, |_| ClockReadFloor {
                clock: clock.clone(),
            })
        }
        AlgorithmKind::Cas => measure(threads, timing, |_| CasFloor::new()),
        AlgorithmKind::AhashCas => measure(threads, timing, |_| AhashCasFloor::new()),
        other => unreachable!("{other:?} is not a floor"),
    };
    MeasuredRun {
        measurement,
        lifetime: Duration::ZERO,
        over_admission_bound: 0,
        state_report: None,
    }
}

fn run_job(job: Job, context: &Context) -> MeasuredRun {
    let Some(scenario) = job.scenario else {
        return run_floor(job, context);
    };
    if scenario == Scenario::HttpLayer {
        return run_http_layer(job, context);
    }
    if scenario == Scenario::Inflight {
        return inflight::run(job, context);
    }
    if scenario == Scenario::Composite2 {
        return composite::run(job, context);
    }
    if scenario.is_redis() {
        return run_redis(job, context);
    }
    let quota = scenario.quota(job.algorithm);
    if scenario == Scenario::DirectAllowCounted {
        return match job.algorithm {
            AlgorithmKind::Gcra => {
                run_direct(|| nanolimit::Limiter::new(quota.gcra()), job, context)
            }
            AlgorithmKind::GcraCounted => run_direct(
                || nanolimit::Limiter::new(quota.gcra()).with_counters(),
                job,
                context,
            ),
            AlgorithmKind::CasFetchAdd => {
                let shared = CasFetchAddFloor::shared_word();
                let measurement = measure(job.threads, context.timing, |_| {
                    CasFetchAddFloor::new(&shared)
                });
                MeasuredRun {
                    measurement,
                    lifetime: Duration::ZERO,
                    over_admission_bound: 0,
                    state_report: None,
                }
            }
            other => unreachable!("direct-allow-counted has no {other:?} row"),
        };
    }
    if scenario == Scenario::DirectReserve {
        assert_eq!(
            (job.limiter, job.algorithm),
            (LimiterKind::Nanolimit, AlgorithmKind::Gcra),
            "direct-reserve measures nanolimit's GCRA only"
        );
        return run_direct(
            || Reserving(nanolimit::Limiter::new(quota.gcra())),
            job,
            context,
        );
    }
    match (scenario.is_direct(), job.limiter, job.algorithm) {
        (true, LimiterKind::Nanolimit, AlgorithmKind::Gcra) => {
            run_direct(|| nanolimit::Limiter::new(quota.gcra()), job, context)
        }
        (true, LimiterKind::Nanolimit, AlgorithmKind::GcraStriped) => {
            run_direct(|| StripedLimiter::new(quota.gcra()), job, context)
        }
        (true, LimiterKind::Nanolimit, AlgorithmKind::SlidingWindow) => run_direct(
            || nanolimit::Limiter::new(quota.sliding_window()),
            job,
            context,
        ),
        (true, LimiterKind::Nanolimit, AlgorithmKind::FixedWindow) => run_direct(
            || nanolimit::Limiter::new(quota.fixed_window()),
            job,
            context,
        ),
        (true, LimiterKind::Nanolimit, AlgorithmKind::SlidingLog) => run_direct(
            || {
                nanolimit::sliding_log::SlidingLogLimiter::new(quota.sliding_log())
                    .expect("the sliding log's ring fits in memory")
            },
            job,
            context,
        ),
        (true, LimiterKind::Governor, _) => run_direct(
            || governor::RateLimiter::direct(quota.governor()),
            job,
            context,
        ),
        (true, LimiterKind::Ratelimit, _) => run_direct(|| quota.ratelimit(), job, context),
        (false, LimiterKind::Nanolimit, AlgorithmKind::Gcra) => {
            run_keyed::<NanolimitKeyed<Gcra>>(job, context)
        }
        (false, LimiterKind::Nanolimit, AlgorithmKind::SlidingWindow) => {
            run_keyed::<NanolimitKeyed<SlidingWindow>>(job, context)
        }
        (false, LimiterKind::Nanolimit, AlgorithmKind::FixedWindow) => {
            run_keyed::<NanolimitKeyed<FixedWindow>>(job, context)
        }
        (false, LimiterKind::Nanolimit, AlgorithmKind::SlidingLog) => {
            run_keyed::<nanolimit::sliding_log::KeyedSlidingLogLimiter<u64>>(job, context)
        }
        (false, LimiterKind::Governor, _) => run_keyed::<GovernorKeyed>(job, context),
        (false, LimiterKind::MutexHashMap, _) => run_keyed::<MutexHashMap>(job, context),
        (false, LimiterKind::Floor, AlgorithmKind::RandomLineCas) => {
            run_keyed::<RandomLineCasFloor>(job, context)
        }
        (direct, limiter, algorithm) => {
            unreachable!("no {limiter:?} {algorithm:?} for direct = {direct}")
        }
    }
}

#[cfg(feature = "redis")]
fn run_redis(job: Job, context: &Context) -> MeasuredRun {
    let url = context
        .redis_url
        .as_deref()
        .expect("the Redis scenarios are planned only with --redis");
    redis::run(job, context, url)
}

#[cfg(not(feature = "redis"))]
fn run_redis(_job: Job, _context: &Context) -> MeasuredRun {
    unreachable!("the Redis scenarios are planned only where they are built ({REDIS_HINT})")
}

#[cfg(all(feature = "http", feature = "axum"))]
fn run_http_layer(job: Job, context: &Context) -> MeasuredRun {
    http_layer::run(job, context)
}

#[cfg(not(all(feature = "http", feature = "axum")))]
fn run_http_layer(_job: Job, _context: &Context) -> MeasuredRun {
    unreachable!("http-layer is planned only where it is built ({HTTP_LAYER_BUILD_HINT})")
}

fn key_pattern(scenario: Scenario, context: &Context) -> KeyPattern {
    match scenario {
        Scenario::DirectAllow
        | Scenario::DirectReserve
        | Scenario::DirectDeny
        | Scenario::DirectAllowCounted
        | Scenario::KeyedHot => KeyPattern::Single,
        Scenario::KeyedSpread => KeyPattern::Spread,
        Scenario::KeyedRotate100k => KeyPattern::Rotate,
        Scenario::KeyedZipf1m => KeyPattern::Zipf(
            context
                .zipf_draws
                .clone()
                .expect("Zipf draws are prepared before keyed-zipf-1m runs"),
        ),
        Scenario::KeyedFlood => KeyPattern::Flood,
        Scenario::KeyedHotUnderFlood => KeyPattern::HotUnderFlood,
        Scenario::PacketLoop => KeyPattern::Flows,
        Scenario::HttpLayer => KeyPattern::HttpClients,
        Scenario::Inflight => unreachable!("inflight has no keys"),
        Scenario::Composite2 => unreachable!("composite-2 reports its keys itself"),
        Scenario::RedisScript | Scenario::RedisNaive | Scenario::RedisLeased => {
            unreachable!("the Redis scenarios report their keys themselves")
        }
    }
}

fn make_row(job: Job, run: MeasuredRun, context: &Context) -> Row {
    let measurement = &run.measurement;
    // The threads a row counts come first (keyed-hot-under-flood: the hot thread, thread 0).
    let counted_threads = job.scenario.map_or(job.threads, |scenario| {
        scenario.counted_threads(job.threads)
    });
    let (counted, uncounted) = measurement.threads.split_at(counted_threads);
    let wall_seconds = measurement.measured_wall.as_secs_f64();
    let mut row = Row {
        scenario: job.scenario.map_or("floor", Scenario::name),
        limiter: job.limiter.name(),
        algorithm: job.algorithm.name(),
        threads: job.threads,
        counted_threads,
        keys: 0,
        operations: counted.iter().map(|t| t.measured_operations).sum(),
        allowed: counted.iter().map(|t| t.measured_allowed).sum(),
        flood_calls_per_second: (job.scenario == Some(Scenario::KeyedHotUnderFlood)).then(|| {
            uncounted.iter().map(|t| t.measured_operations).sum::<u64>() as f64 / wall_seconds
        }),
        wall_seconds,
        accuracy: None,
        state_report: run.state_report,
    };
    let Some(scenario) = job.scenario else {
        return row;
    };
    if job.limiter == LimiterKind::Floor {
        // A scenario's own floor (http-layer's service with no layer, inflight's pair of
        // atomic operations): no keys, no quota.
        return row;
    }
    if scenario == Scenario::Inflight {
        // One limiter shared by all threads, no quota: one key, no accuracy.
        row.keys = 1;
        return row;
    }
    if scenario == Scenario::Composite2 {
        // Each thread's own keys; quotas never reached: no accuracy.
        row.keys = composite::KEYS_PER_THREAD * job.threads as u64;
        return row;
    }
    if scenario.is_redis() {
        // The keys walked; quotas never reached: no accuracy.
        row.keys = REDIS_SCENARIO_KEYS as u64;
        return row;
    }
    let pattern = key_pattern(scenario, context);
    let operations_per_thread = measurement.lifetime_operations_per_thread();
    row.keys = pattern.distinct_keys(&operations_per_thread);
    // The quota's own bound, plus what the limiter may admit beyond it by contract (a striped
    // limiter: over the whole run, so once per key; its scenarios have one key).
    let bound_per_key = scenario
        .quota(job.algorithm)
        .admitted_bound_per_key(job.algorithm, run.lifetime)
        + run.over_admission_bound as f64;
    let hits = pattern.hits_per_key(&operations_per_thread);
    let (subject, admitted) = match scenario {
        Scenario::KeyedFlood => ("legit", measurement.lifetime_legitimate_allowed()),
        Scenario::KeyedHotUnderFlood => ("hot", counted.iter().map(|t| t.lifetime_allowed).sum()),
        _ => ("all", measurement.lifetime_allowed()),
    };
    row.accuracy = Some(Accuracy {
        subject,
        admitted,
        offered: hits.iter().sum(),
        over_admission_bound: run.over_admission_bound,
        bound: hits
            .iter()
            .map(|&requests| (requests as f64).min(bound_per_key))
            .sum(),
    });
    row
}

impl Config {
    /// The thread counts `scenario` runs at.
    fn threads_for(&self, scenario: Scenario) -> Vec<usize> {
        match scenario.own_threads() {
            Some(own) if !self.threads_for_all => own.to_vec(),
            _ => self.threads.clone(),
        }
    }
}

fn plan(config: &Config) -> Vec<Job> {
    let mut jobs = Vec::new();
    for &threads in &config.threads {
        for algorithm in FLOORS {
            jobs.push(Job {
                scenario: None,
                limiter: LimiterKind::Floor,
                algorithm,
                threads,
            });
        }
    }
    for &scenario in &config.scenarios {
        for threads in config.threads_for(scenario) {
            for (limiter, algorithm) in limiters_for(scenario) {
                jobs.push(Job {
                    scenario: Some(scenario),
                    limiter,
                    algorithm,
                    threads,
                });
            }
        }
    }
    jobs
}

/// Progress on stderr: one rewritten line on a terminal, one line per scenario otherwise.
struct Progress {
    total: usize,
    seconds_per_job: f64,
    terminal: bool,
    last_scenario: Option<&'static str>,
}

impl Progress {
    fn show(&mut self, done: usize, job: &Job) {
        let scenario = job.scenario.map_or("floor", Scenario::name);
        let left_seconds = (self.total - done) as f64 * self.seconds_per_job;
        let limiter = match job.scenario {
            Some(_) => format!("{} {}", job.limiter.name(), job.algorithm.name()),
            None => job.algorithm.name().to_string(),
        };
        let line = format!(
            "[{:>3}/{}] {scenario} {limiter}, {} threads, ~{left_seconds:.0} s left",
            done + 1,
            self.total,
            job.threads,
        );
        let mut stderr = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(stderr, "\r\x1b[2K{line}");
            let _ = stderr.flush();
        } else if self.last_scenario != Some(scenario) {
            let _ = writeln!(stderr, "{line}");
        }
        self.last_scenario = Some(scenario);
    }

    fn finish(&self) {
        if self.terminal {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// `target/contention/contention.svg`; the smoke test draws to `smoke-test.svg` beside it, so
/// that `cargo test --benches` never replaces a real run's chart.
fn svg_path(smoke_test: bool) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let file = if smoke_test {
        "smoke-test.svg"
    } else {
        "contention.svg"
    };
    target.join("contention").join(file)
}

/// The one-minute load average, where the system reports it.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split(':').nth(1))
        .map(|model| model.trim().to_string())
}

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("contention: {message}");
            }
            eprintln!("{USAGE}");
            return if message.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    let started = Instant::now();
    let jobs = plan(&config);
    let seconds_per_job = (config.timing.warm_up + config.timing.measured).as_secs_f64() + 0.005;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "nanolimit contention benchmark{}: {} cores available ({}), threads {:?}, {:.3} s measured after {:.3} s warm-up per measurement",
        if config.smoke_test {
            " (smoke test: no --bench flag)"
        } else {
            ""
        },
        cores,
        cpu_model().unwrap_or_else(|| "unknown CPU".to_string()),
        config.threads,
        config.timing.measured.as_secs_f64(),
        config.timing.warm_up.as_secs_f64(),
    );
    for &scenario in &config.scenarios {
        if config.threads_for(scenario) != config.threads {
            println!(
                "{}: threads {:?} (its own default; --threads sets every scenario's)",
                scenario.name(),
                config.threads_for(scenario)
            );
        }
    }
    for scenario in &config.skipped {
        println!(
            "note: scenario {} skipped: {HTTP_LAYER_BUILD_HINT}",
            scenario.name()
        );
    }
    if let Some(load) = load_average().filter(|&load| load > cores as f64 * 0.5) {
        println!(
            "warning: load average {load:.1} on {cores} cores: other processes compete for the CPUs, so the times below are inflated and noisy"
        );
    }
    let measurements = jobs.len() * config.runs;
    eprintln!(
        "contention: {measurements} measurements, about {:.0} s",
        measurements as f64 * seconds_per_job
    );
    let mut context = Context {
        timing: config.timing,
        zipf_draws: None,
        redis_url: config.redis_url.clone(),
    };
    let mut progress = Progress {
        total: measurements,
        seconds_per_job,
        terminal: std::io::stderr().is_terminal(),
        last_scenario: None,
    };
    // Rounds over every job, so that a slow spell of the machine spreads over all rows rather
    // than landing on the repetitions of one.
    let mut runs_per_job: Vec<Vec<Row>> = jobs.iter().map(|_| Vec::new()).collect();
    for round in 0..config.runs {
        for (index, job) in jobs.iter().enumerate() {
            progress.show(round * jobs.len() + index, job);
            if job.scenario == Some(Scenario::KeyedZipf1m) && context.zipf_draws.is_none() {
                let max_threads = config.threads.iter().copied().max().unwrap_or(1);
                context.zipf_draws =
                    Some(keys::zipf_draws(max_threads, config.zipf_draws_per_thread));
            }
            let run = run_job(*job, &context);
            runs_per_job[index].push(make_row(*job, run, &context));
        }
    }
    progress.finish();
    let (rows, spreads) = report::medians(runs_per_job);

    let scenarios: Vec<(&'static str, String)> = config
        .scenarios
        .iter()
        .map(|scenario| (scenario.name(), scenario.description()))
        .collect();
    let scenario_names: Vec<&'static str> = scenarios.iter().map(|(name, _)| *name).collect();
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = report::print_table(&mut stdout, &scenarios, &rows) {
        eprintln!("contention: writing the table failed: {error}");
        return ExitCode::FAILURE;
    }
    if config.runs > 1 {
        if let Err(error) = report::print_spreads(&mut stdout, config.runs, &spreads) {
            eprintln!("contention: writing the table failed: {error}");
            return ExitCode::FAILURE;
        }
    }
    let mut status = ExitCode::SUCCESS;
    if let Some(path) = &config.csv {
        match report::write_csv(path, &scenario_names, &rows) {
            Ok(()) => {
                let _ = writeln!(stdout, "\nCSV written to {}", path.display());
            }
            Err(error) => {
                eprintln!("contention: writing {} failed: {error}", path.display());
                status = ExitCode::FAILURE;
            }
        }
    }
    let svg = svg_path(config.smoke_test);
    match report::write_svg(&svg, &scenario_names, &rows) {
        Ok(()) => {
            let _ = writeln!(stdout, "\nchart written to {}", svg.display());
        }
        Err(error) => {
            eprintln!("contention: writing {} failed: {error}", svg.display());
            status = ExitCode::FAILURE;
        }
    }
    let _ = writeln!(
        stdout,
        "finished in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    status
}

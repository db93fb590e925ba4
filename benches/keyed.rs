//! Cost of one check on a keyed limiter, next to `governor`'s keyed limiter (a `DashMap`), in
//! the same groups so the ratios are comparable.
//!
//! Groups (ids read `group/implementation`, or `group/threads/implementation`); every case is
//! one `u64` key per call, counted as one element:
//! - `hot_key`: one key over and over, allowed (a quota no single thread can exhaust).
//! - `rotate_100k`: keys 0, 1, …, 99,999, 0, … in turn, allowed; every key is in the table
//!   before measuring (tables sized by [`capacity_for`]).
//! - `random_1m`: keys drawn uniformly from 1,000,000, allowed; every key is in the table before
//!   measuring (tables sized by [`capacity_for`]; nanolimit's table sizes are printed at setup:
//!   about 30 MiB hashed, 37 MiB exact, next to a 32 MiB L3 on the machine this was written on).
//! - `denied`: one key whose quota (one per hour) is spent.
//! - `new_key_each_call`: a key never seen before on every call: the insert path. See
//!   [`new_key_each_call`] for how each table is kept from filling up.
//! - `two_threads_distinct_keys`: `one_thread` and `two_threads`, each thread rotating over its
//!   own [`KEYS_PER_THREAD`] keys in a table sized for 100,000 (so some keys of the two
//!   threads share cache lines, as in any compact table). Time per element is wall time over all threads' calls, so
//!   `one_thread / two_threads` is the throughput scaling (2.0 is perfect). Each benchmark
//!   also prints its overlap (threads' on-CPU time over wall time): below 2.0 for
//!   `two_threads`, the threads did not run side by side all along: another process held a
//!   core part of the time (the scaling measured then says more about the machine than about
//!   the limiter), or one thread finished its share early.
//!
//! Implementations:
//! - `nanolimit_hashed`: GCRA, [`Hashed`](nanolimit::keyed::Hashed) keys (the default), default clock.
//! - `nanolimit_hashed_caller_time`: the same, time passed in by the caller (`check_at`, with a
//!   `Timestamp` made per call from the nanoseconds the loop counts).
//! - `nanolimit_exact`, `nanolimit_exact_caller_time`: [`Exact`](nanolimit::keyed::Exact) `u64` keys.
//! - `governor_dashmap`: governor's default keyed limiter (what `RateLimiter::keyed` builds: a
//!   `DashMap` with std's SipHash `RandomState`), default clock.
//! - `governor_dashmap_ahash`: the same map with `ahash`.
//! - `governor_dashmap_fake_clock`, `governor_dashmap_ahash_fake_clock`: the same two on
//!   governor's `FakeRelativeClock` (one atomic load per read) instead of a TSC read: the
//!   like-for-like peers of nanolimit's `_caller_time` cases (governor has no API taking the
//!   time). The clock is advanced every `FAKE_CLOCK_ADVANCE_NS` of caller time
//!   (`shared/governor_fake_clock.rs`), so that governor sees time move as nanolimit does.
//! - `nanolimit_hashed_upkeep_clock`, `governor_dashmap_upkeep_clock`: each on its upkeep clock
//!   (coarse time from a background thread, 100 µs steps), the cheap clock each offers.
//! - `floor_ahash_cas` (`hot_key` only): no limiter, the hardware's floor for a present key's
//!   check: ahash of the key and one compare-and-swap on one word ([`AhashCasFloor`]).
//!
//! Every implementation is driven through the [`KeyedSubject`] trait of
//! `shared/keyed_subjects.rs`, which `benches/callgrind_keyed.rs` and `benches/contention.rs`
//! share. Every case's outcome is verified outside the timed loop, so an "allowed" case cannot
//! silently measure denials, nor a "present key" case measure inserts.
//!
//! Run: `cargo bench --bench keyed` (about 5 minutes); one group: `cargo bench --bench keyed --
//! two_threads`. Instruction counts under callgrind: `bash benches/callgrind.sh keyed` (the
//! runner is `benches/callgrind_keyed.rs`).

#[path = "shared/governor_fake_clock.rs"]
mod governor_fake_clock;
#[path = "shared/keyed_quotas.rs"]
mod keyed_quotas;
// Shared with the other keyed benchmarks: the trait's own-clock checks and state reports, and
// the quota's rate, serve `benches/contention.rs`.
#[path = "shared/keyed_subjects.rs"]
#[allow(dead_code)]
mod keyed_subjects;
#[path = "shared/quota_spec.rs"]
#[allow(dead_code)]
mod quota_spec;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput,
};
use crossbeam_utils::CachePadded;
use governor::clock::QuantaUpkeepClock;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor_fake_clock::GovernorFakeClock;
use keyed_quotas::{KeyedQuota, CALLER_TIME_STEP_NS};
use keyed_subjects::{
    sweep_unbounded_map, unbounded_map_report, DefaultHasher, GovernorKeyed, KeyedSubject,
    NEW_KEY_TABLE_CAPACITY,
};
use nanolimit::clock::UpkeepClock;
use nanolimit::keyed::{Exact, Hashed};
use nanolimit::{Gcra, KeyedLimiter, ManualClock, QuantaClock, WhenFull};
use quota_spec::QuotaSpec;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// The one key of `hot_key` and `denied`.
const HOT_KEY: u64 = 0x5eed_0000_0000_0042;

/// Keys walked by `rotate_100k` (tables sized by [`capacity_for`]).
const ROTATE_KEYS: u64 = 100_000;

/// Keys drawn from by `random_1m` (tables sized by [`capacity_for`]).
const RANDOM_KEYS: u64 = 1_000_000;

/// Length of the precomputed sequence of random keys (read sequentially, wrapping around).
const RANDOM_SEQUENCE_LEN: usize = 1 << 20;

/// The capacity asked of a nanolimit table that must hold `keys` keys: 25 % more. A table built
/// with `capacity(n)` can refuse a new key before it holds `n` live ones (measured with [`Exact`]
/// keys: first refusal after 85-94 % of `n` for `n` = 100,000 and 1,000,000), and a refused key
/// would turn a "present key" case into a slow-path one. The
/// prefill asserts that every key is stored. [`Hashed`] tables get the same margin, so both
/// modes are sized alike.
fn capacity_for(keys: u64) -> usize {
    (keys + keys / 4) as usize
}

/// Keys of each thread in `two_threads_distinct_keys` (a power of two).
const KEYS_PER_THREAD: u64 = 4_096;

/// Capacity of the tables of `two_threads_distinct_keys` (and of `hot_key` and `denied`).
const SMALL_TABLE_CAPACITY: usize = 100_000;

/// Checks run after each benchmark to confirm it measured the outcome it is named after.
const OUTCOME_CHECKS: u64 = 100_000;

/// governor's default keyed limiter on its upkeep clock (a background thread stores the time;
/// a read is one atomic load and a conversion), with the same interval as nanolimit's
/// [`UpkeepClock`].
struct GovernorUpkeep(
    governor::RateLimiter<
        u64,
        DashMapStateStore<u64>,
        QuantaUpkeepClock,
        NoOpMiddleware<governor::clock::QuantaInstant>,
    >,
);

impl KeyedSubject for GovernorUpkeep {
    const NAME: &'static str = "governor_dashmap_upkeep_clock";

    /// Checks read the upkeep clock; governor has no API taking the time.
    type Timestamp = ();

    /// Unbounded, like [`GovernorKeyed`]: `capacity` is ignored.
    fn build(quota: &QuotaSpec, _capacity: usize) -> Self {
        GovernorUpkeep(governor::RateLimiter::new(
            quota.governor(),
            DashMapStateStore::default(),
            QuantaUpkeepClock::from_interval(UpkeepClock::DEFAULT_INTERVAL)
                .expect("quanta upkeep thread"),
        ))
    }

    #[inline]
    fn now(&self) {}

    #[inline]
    fn check_at(&self, key: u64, _now: ()) -> bool {
        self.0.check_key(&key).is_ok()
    }

    #[inline]
    fn check_at_caller_ns(&self, key: u64, _caller_ns: u64) -> bool {
        self.0.check_key(&key).is_ok()
    }

    fn stored_keys(&self) -> u64 {
        self.0.len() as u64
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    fn state_report(&self) -> String {
        unbounded_map_report(self.0.len())
    }

    /// As for [`GovernorKeyed`].
    fn sweep(&self) {
        sweep_unbounded_map(Self::NAME, || self.0.len(), || self.0.retain_recent());
    }
}

/// `floor_ahash_cas`, in `hot_key` only: what any keyed check of a present key costs at least
/// on this machine, with no table at all: ahash of the key (fixed seeds), then one
/// compare-and-swap on one word, as the contention benchmark's `ahash-cas` floor. A limiter's
/// check cannot be faster, so no ratio to a peer can exceed the peer's time over this one.
struct AhashCasFloor {
    hasher: ahash::RandomState,
    word: CachePadded<AtomicU64>,
}

impl KeyedSubject for AhashCasFloor {
    const NAME: &'static str = "floor_ahash_cas";

    type Timestamp = ();

    fn build(_quota: &QuotaSpec, _capacity: usize) -> Self {
        AhashCasFloor {
            hasher: ahash::RandomState::with_seeds(1, 2, 3, 4),
            word: CachePadded::new(AtomicU64::new(0)),
        }
    }

    #[inline]
    fn now(&self) {}

    #[inline]
    fn check_at(&self, key: u64, _now: ()) -> bool {
        let hash = self.hasher.hash_one(key);
        // ORDERING: as a limiter's check: Acquire load, AcqRel compare-and-swap.
        let observed = self.word.load(Ordering::Acquire);
        self.word
            .compare_exchange(
                observed,
                observed.wrapping_add(hash | 1),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    #[inline]
    fn check_at_caller_ns(&self, key: u64, _caller_ns: u64) -> bool {
        self.check_at(key, ())
    }

    /// The one word stands for the one key `hot_key` checks.
    fn stored_keys(&self) -> u64 {
        1
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    fn state_report(&self) -> String {
        "one word, no table".to_string()
    }
}

/// Runs `body` once for each implementation, in a fixed order.
macro_rules! for_each_subject {
    ($body:ident($($argument:expr),*)) => {
        $body::<KeyedLimiter<u64, Gcra, QuantaClock, Hashed>>($($argument),*);
        $body::<KeyedLimiter<u64, Gcra, ManualClock, Hashed>>($($argument),*);
        $body::<KeyedLimiter<u64, Gcra, QuantaClock, Exact>>($($argument),*);
        $body::<KeyedLimiter<u64, Gcra, ManualClock, Exact>>($($argument),*);
        $body::<GovernorKeyed<DefaultHasher>>($($argument),*);
        $body::<GovernorKeyed<ahash::RandomState>>($($argument),*);
        $body::<GovernorFakeClock<DefaultHasher>>($($argument),*);
        $body::<GovernorFakeClock<ahash::RandomState>>($($argument),*);
        $body::<KeyedLimiter<u64, Gcra, UpkeepClock, Hashed>>($($argument),*);
        $body::<GovernorUpkeep>($($argument),*);
    };
}

/// Checks every key of `keys` once, at caller time `now_ns`, and asserts that all were allowed
/// and that the table now holds exactly those keys.
fn prefill<S: KeyedSubject>(subject: &S, keys: impl Iterator<Item = u64>, now_ns: u64) {
    let mut count = 0u64;
    for key in keys {
        assert!(
            subject.check_at_caller_ns(key, now_ns),
            "{}: prefill check of key {key} denied",
            S::NAME
        );
        count += 1;
    }
    assert_eq!(
        subject.untracked_new_keys(),
        0,
        "{}: the table refused keys while being filled to its capacity",
        S::NAME
    );
    assert_eq!(subject.stored_keys(), count, "{}: keys stored", S::NAME);
}

/// Benchmarks `subject` on the keys `next_key` yields, then checks that [`OUTCOME_CHECKS`]
/// further calls all come out `expected_allowed` and that no key was inserted meanwhile.
fn bench_present_keys<S: KeyedSubject>(
    group: &mut Group<'_>,
    subject: &S,
    mut next_key: impl FnMut() -> u64,
    expected_allowed: bool,
) {
    let stored_before = subject.stored_keys();
    let mut now_ns = CALLER_TIME_STEP_NS;
    group.bench_function(S::NAME, |b| {
        b.iter(|| {
            now_ns += CALLER_TIME_STEP_NS;
            black_box(black_box(subject).check_at_caller_ns(black_box(next_key()), now_ns))
        })
    });
    for index in 0..OUTCOME_CHECKS {
        now_ns += CALLER_TIME_STEP_NS;
        assert_eq!(
            subject.check_at_caller_ns(next_key(), now_ns),
            expected_allowed,
            "{}: check {index} after the benchmark had the wrong outcome",
            S::NAME
        );
    }
    assert_eq!(
        subject.stored_keys(),
        stored_before,
        "{}: the benchmark inserted keys",
        S::NAME
    );
    assert_eq!(
        subject.untracked_new_keys(),
        0,
        "{}: untracked keys",
        S::NAME
    );
}

fn hot_key_case<S: KeyedSubject>(group: &mut Group<'_>) {
    let subject = S::build(&KeyedQuota::Generous.spec(), SMALL_TABLE_CAPACITY);
    prefill(&subject, [HOT_KEY].into_iter(), 0);
    bench_present_keys(group, &subject, || HOT_KEY, true);
}

fn hot_key(c: &mut Criterion) {
    let mut group = c.benchmark_group("hot_key");
    group.throughput(Throughput::Elements(1));
    for_each_subject!(hot_key_case(&mut group));
    hot_key_case::<AhashCasFloor>(&mut group);
    group.finish();
}

fn rotate_100k_case<S: KeyedSubject>(group: &mut Group<'_>) {
    let subject = S::build(
        &KeyedQuota::ManyKeysStayLive.spec(),
        capacity_for(ROTATE_KEYS),
    );
    prefill(&subject, 0..ROTATE_KEYS, 0);
    let mut next = 0u64;
    bench_present_keys(
        group,
        &subject,
        || {
            let key = next;
            next += 1;
            if next == ROTATE_KEYS {
                next = 0;
            }
            key
        },
        true,
    );
}

fn rotate_100k(c: &mut Criterion) {
    let mut group = c.benchmark_group("rotate_100k");
    group.throughput(Throughput::Elements(1));
    for_each_subject!(rotate_100k_case(&mut group));
    group.finish();
}

fn random_1m_case<S: KeyedSubject>(group: &mut Group<'_>, sequence: &[u64]) {
    let subject = S::build(
        &KeyedQuota::ManyKeysStayLive.spec(),
        capacity_for(RANDOM_KEYS),
    );
    prefill(&subject, 0..RANDOM_KEYS, 0);
    let mask = sequence.len() - 1;
    let mut index = 0usize;
    bench_present_keys(
        group,
        &subject,
        || {
            let key = sequence[index & mask];
            index += 1;
            key
        },
        true,
    );
}

fn random_1m(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(0x6b65_7965_6400_0001);
    let sequence: Vec<u64> = (0..RANDOM_SEQUENCE_LEN)
        .map(|_| rng.gen_range(0..RANDOM_KEYS))
        .collect();
    for (name, bytes) in [
        (
            "nanolimit_hashed",
            KeyedLimiter::<u64, Gcra>::builder(KeyedQuota::Generous.spec().gcra())
                .capacity(capacity_for(RANDOM_KEYS))
                .build()
                .expect("valid table")
                .memory_bytes(),
        ),
        (
            "nanolimit_exact",
            KeyedLimiter::<u64, Gcra>::builder(KeyedQuota::Generous.spec().gcra())
                .capacity(capacity_for(RANDOM_KEYS))
                .exact_keys()
                .build()
                .expect("valid table")
                .memory_bytes(),
        ),
    ] {
        eprintln!(
            "random_1m: {name} table: {:.1} MiB for {RANDOM_KEYS} keys",
            bytes as f64 / (1 << 20) as f64
        );
    }
    let mut group = c.benchmark_group("random_1m");
    group.throughput(Throughput::Elements(1));
    for_each_subject!(random_1m_case(&mut group, &sequence));
    group.finish();
}

fn denied_case<S: KeyedSubject>(group: &mut Group<'_>) {
    let subject = S::build(&KeyedQuota::OnePerHour.spec(), SMALL_TABLE_CAPACITY);
    prefill(&subject, [HOT_KEY].into_iter(), 0);
    bench_present_keys(group, &subject, || HOT_KEY, false);
}

fn denied(c: &mut Criterion) {
    let mut group = c.benchmark_group("denied");
    group.throughput(Throughput::Elements(1));
    for_each_subject!(denied_case(&mut group));
    group.finish();
}

/// A key never seen before on every call, under the generous quota.
///
/// - nanolimit: a table of [`NEW_KEY_TABLE_CAPACITY`] keys, `WhenFull::Deny`. Under the
///   generous quota an entry is equivalent to fresh 1 ns after its last check, and time moves
///   between calls (the default clock by itself, the caller's clock by
///   [`CALLER_TIME_STEP_NS`]), so every new key gets a slot: a vacant one until the table has
///   filled (during warm-up), then one reclaimed from an older key. Every measured call is
///   therefore a real insert (insert lock, second lookup, slot choice, claim, publish); the
///   counters are checked afterwards (no refusal, one insert per call).
/// - governor: its map grows by one entry per call. Left alone it would grow by tens of
///   millions of entries per benchmark, so between samples (untimed) it is swept with
///   `retain_recent` once it exceeds [`NEW_KEY_TABLE_CAPACITY`] keys: what its users run
///   periodically. The sweep keeps the map's allocation, so after the first samples the timed
///   inserts no longer pay for growth (favourable to governor).
fn new_key_each_call_case<S: KeyedSubject>(group: &mut Group<'_>) {
    let subject = S::build(&KeyedQuota::Generous.spec(), NEW_KEY_TABLE_CAPACITY);
    let first_key = 1u64 << 40;
    let mut next_key = first_key;
    let mut now_ns = 0u64;
    let mut denied_calls = 0u64;
    group.bench_function(S::NAME, |b| {
        b.iter_custom(|iterations| {
            let subject = black_box(&subject);
            let start = Instant::now();
            for _ in 0..iterations {
                now_ns += CALLER_TIME_STEP_NS;
                next_key += 1;
                denied_calls += u64::from(!subject.check_at_caller_ns(black_box(next_key), now_ns));
            }
            let elapsed = start.elapsed();
            subject.sweep();
            elapsed
        })
    });
    let calls = next_key - first_key;
    assert_eq!(denied_calls, 0, "{}: new keys denied", S::NAME);
    assert_eq!(
        subject.untracked_new_keys(),
        0,
        "{}: untracked keys",
        S::NAME
    );
    if calls > 0 {
        eprintln!(
            "new_key_each_call: {}: {calls} calls, {} keys held at the end",
            S::NAME,
            subject.stored_keys()
        );
    }
}

/// New keys into a nanolimit table full of live entries (one unit per hour, every key checked
/// once), with `WhenFull::Allow`: each call takes the insert lock, finds no usable slot among
/// its candidates and is allowed untracked. This is the cost of a key flood once the table is
/// full.
fn new_key_full_table_allow(group: &mut Group<'_>) {
    let limiter = KeyedLimiter::<u64, Gcra>::builder(KeyedQuota::OnePerHour.spec().gcra())
        .capacity(NEW_KEY_TABLE_CAPACITY)
        .when_full(WhenFull::Allow)
        .build()
        .expect("valid table");
    // Twice the slots: every slot gets a live key, then new keys start being left untracked.
    let fill_keys = 2 * limiter.slots() as u64;
    for key in 0..fill_keys {
        assert!(limiter.check(&key).is_allowed(), "fill key {key}");
    }
    let filled = limiter.stats();
    assert!(filled.untracked_new_keys > 0, "the table did not fill up");
    let first_key = 1u64 << 40;
    let mut next_key = first_key;
    group.bench_function("nanolimit_hashed_full_table_allow", |b| {
        b.iter(|| {
            next_key += 1;
            black_box(black_box(&limiter).check(&black_box(next_key)).is_allowed())
        })
    });
    let stats = limiter.stats();
    assert_eq!(stats.inserts, filled.inserts, "new keys were inserted");
    assert_eq!(
        stats.untracked_new_keys - filled.untracked_new_keys,
        next_key - first_key,
        "every measured call is an untracked new key"
    );
}

fn new_key_each_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("new_key_each_call");
    group.throughput(Throughput::Elements(1));
    for_each_subject!(new_key_each_call_case(&mut group));
    new_key_full_table_allow(&mut group);
    group.finish();
}

/// Nanoseconds the calling thread has spent on a CPU, if the kernel says (Linux).
fn thread_on_cpu_ns() -> Option<u64> {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    schedstat.split_whitespace().next()?.parse().ok()
}

/// Wall time and on-CPU time (summed over threads) of a thread benchmark's samples, to report
/// how much the threads really ran in parallel: on a shared machine another process can hold
/// a core, and two threads then take turns on one (a thread that finishes its share early
/// lowers it too).
#[derive(Default)]
struct Overlap {
    wall_ns: u128,
    on_cpu_ns: Option<u128>,
}

impl Overlap {
    /// On-CPU time over wall time: 2.0 when two threads ran side by side all along.
    fn ratio(&self) -> Option<f64> {
        self.on_cpu_ns
            .map(|on_cpu_ns| on_cpu_ns as f64 / self.wall_ns.max(1) as f64)
    }
}

/// Runs `calls` checks split over `threads` threads, each rotating over its own
/// [`KEYS_PER_THREAD`] keys (thread `t` owns keys `t << 32 ..`), all released together by a
/// barrier. Returns the wall time from the first thread's start to the last thread's end, and
/// adds it and the threads' on-CPU time to `overlap`. Each thread's caller clock starts at
/// `first_now_ns`.
fn run_threads<S: KeyedSubject>(
    subject: &S,
    threads: u64,
    calls: u64,
    first_now_ns: u64,
    overlap: &mut Overlap,
) -> Duration {
    let barrier = Barrier::new(threads as usize);
    let spans: Vec<(Instant, Instant, Option<u64>, u64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let thread_calls = calls / threads + u64::from(thread < calls % threads);
                    let key_base = thread << 32;
                    let mut now_ns = first_now_ns;
                    let mut allowed = 0u64;
                    barrier.wait();
                    let on_cpu_start_ns = thread_on_cpu_ns();
                    let start = Instant::now();
                    for call in 0..thread_calls {
                        now_ns += CALLER_TIME_STEP_NS;
                        let key = key_base | (call & (KEYS_PER_THREAD - 1));
                        allowed += u64::from(
                            black_box(subject).check_at_caller_ns(black_box(key), now_ns),
                        );
                    }
                    let end = Instant::now();
                    let on_cpu_ns = on_cpu_start_ns
                        .zip(thread_on_cpu_ns())
                        .map(|(start_ns, end_ns)| end_ns.saturating_sub(start_ns));
                    (start, end, on_cpu_ns, allowed, thread_calls)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("benchmark thread"))
            .collect()
    });
    for (_, _, _, allowed, thread_calls) in &spans {
        assert_eq!(allowed, thread_calls, "{}: denied checks", S::NAME);
    }
    let start = spans.iter().map(|span| span.0).min().expect("threads");
    let end = spans.iter().map(|span| span.1).max().expect("threads");
    let wall = end - start;
    overlap.wall_ns += wall.as_nanos();
    let on_cpu_ns: Option<u64> = spans.iter().map(|span| span.2).sum();
    overlap.on_cpu_ns = overlap
        .on_cpu_ns
        .unwrap_or(0)
        .checked_add(u128::from(on_cpu_ns.unwrap_or(0)))
        .filter(|_| on_cpu_ns.is_some());
    wall
}

fn two_threads_case<S: KeyedSubject>(group: &mut Group<'_>) {
    for (threads, label) in [(1u64, "one_thread"), (2, "two_threads")] {
        let subject = S::build(&KeyedQuota::ManyKeysStayLive.spec(), SMALL_TABLE_CAPACITY);
        let keys = (0..2u64).flat_map(|thread| (0..KEYS_PER_THREAD).map(move |i| thread << 32 | i));
        prefill(&subject, keys, 0);
        // The caller clock keeps moving forward from one sample to the next.
        let mut first_now_ns = CALLER_TIME_STEP_NS;
        let mut overlap = Overlap::default();
        group.bench_function(format!("{label}/{}", S::NAME), |b| {
            b.iter_custom(|calls| {
                let elapsed = run_threads(&subject, threads, calls, first_now_ns, &mut overlap);
                first_now_ns += calls * CALLER_TIME_STEP_NS;
                elapsed
            })
        });
        // Only over enough time to mean something (not in `--test` mode's single iterations).
        if let Some(ratio) = overlap.ratio().filter(|_| overlap.wall_ns >= 10_000_000) {
            eprintln!(
                "two_threads_distinct_keys/{label}/{}: overlap {ratio:.2} (on-CPU time over \
                 wall time; {threads}.00 if the threads always had a core each)",
                S::NAME
            );
        }
        assert_eq!(
            subject.stored_keys(),
            2 * KEYS_PER_THREAD,
            "{}: keys inserted while measuring",
            S::NAME
        );
    }
}

/// Long flat samples (about 150 ms each), so spawning the threads is noise.
fn two_threads_distinct_keys(c: &mut Criterion) {
    let mut group = c.benchmark_group("two_threads_distinct_keys");
    group.throughput(Throughput::Elements(1));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    for_each_subject!(two_threads_case(&mut group));
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = hot_key, rotate_100k, random_1m, denied, new_key_each_call, two_threads_distinct_keys
}
criterion_main!(benches);

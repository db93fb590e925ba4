//! Runs one keyed-limiter case many times, for counting instructions under callgrind (stable on
//! noisy machines, where `benches/keyed.rs` timings are not).
//!
//! Every nanolimit case's count, with the `loop_only` baselines, in one table (the cases of
//! `benches/callgrind_direct.rs` too, unless `keyed` is given):
//!
//! ```text
//! bash benches/callgrind.sh keyed
//! ```
//!
//! By hand:
//!
//! ```text
//! cargo bench --no-run --bench callgrind_keyed   # prints the executable's path
//! valgrind --tool=callgrind --toggle-collect='*measured_loop*' \
//!     --callgrind-out-file=/tmp/cg.out target/release/deps/callgrind_keyed-HASH CASE [ITERATIONS]
//! ```
//!
//! Instructions per call = (Ir at ITERATIONS − Ir at 0) / ITERATIONS, for the same CASE (the
//! script uses 200,000). The count includes the loop's own instructions and the key generator's:
//! the `PATTERN/loop_only` cases measure those. Cases are `PATTERN/IMPLEMENTATION` with the
//! patterns and implementations of `benches/keyed.rs` (`hot_key`: one key, allowed;
//! `denied_key`: one key whose quota is spent, denied; `rotate_100k`: keys 0..100,000 in turn;
//! `random_1m`: keys drawn uniformly from 0..1,000,000; all keys present before the loop;
//! `zipf_1m`: the contention benchmark's keyed-zipf-1m, 2^20 Zipf draws (s = 1.1) over
//! 1,000,000 keys from its first thread's seed, in a table of that capacity, replayed once
//! before the loop (so the loop, as that scenario's measured second, checks present keys; the
//! environment variable `ZIPF_TABLE_CAPACITY` sizes nanolimit's table otherwise, for measuring
//! what the table's size costs the same keys);
//! `new_key`: a key never seen on every call, the insert path, in a table of 100,000 keys that
//! fills as it goes: vacant slots first, then reclaims; `new_key_full`: the same in a table of
//! 1,024 keys already full of reclaimable entries, keyed-flood's steady state). For cache
//! misses per call, add `--cache-sim=yes` (and, to model this machine's last level,
//! `--LL=33554432,16,64`).
//!
//! Two more patterns time threads natively (not for callgrind): `one_thread` and `two_threads`,
//! each thread rotating over its own 4,096 keys as in `two_threads_distinct_keys`, ITERATIONS
//! calls in all. They print wall time per call, each thread's on-CPU time per call (from
//! `/proc/thread-self/schedstat`), and the overlap: on-CPU time summed over threads divided by
//! wall time, 2.0 when both threads really ran in parallel all along. On a shared machine a low
//! overlap mostly says another process held a core (or one thread finished its share early),
//! not that the limiter failed to scale; the per-thread on-CPU time per call, compared with
//! `one_thread`'s, shows what the threads cost each other (cache-line sharing, locks).
//!
//! Each run verifies that every call had the outcome its pattern is named after (allowed;
//! denied for `denied_key`; `loop_only` checks nothing) and that the loop inserted no key, and
//! exits non-zero otherwise. Under `cargo bench` (an argument `--bench` and no case) it lists
//! nothing and exits. With no arguments at all (as under `cargo test --benches`) it lists the
//! cases and runs each for 10,000 calls, verifying their outcomes: a smoke test.

// `hot_key` runs under `KeyedQuota::Generous`, `denied_key` (one key, spent: every call denied)
// under `KeyedQuota::OnePerHour`, `rotate_100k` and `random_1m` under
// `KeyedQuota::ManyKeysStayLive` (every entry stays live while the table is filled). Every
// implementation is driven through the `KeyedSubject` trait that `benches/keyed.rs` and
// `benches/contention.rs` share.
#[path = "shared/governor_fake_clock.rs"]
mod governor_fake_clock;
#[path = "shared/keyed_quotas.rs"]
mod keyed_quotas;
// Shared with the other keyed benchmarks: housekeeping, names, own-clock checks and state
// reports serve `benches/keyed.rs` and `benches/contention.rs`.
#[path = "shared/keyed_subjects.rs"]
#[allow(dead_code)]
mod keyed_subjects;
#[path = "shared/quota_spec.rs"]
#[allow(dead_code)]
mod quota_spec;
use governor_fake_clock::GovernorFakeClock;
use keyed_quotas::{KeyedQuota, CALLER_TIME_STEP_NS};
use keyed_subjects::{CountedKeyed, GovernorKeyed, KeyedSubject};
use nanolimit::keyed::{Exact, Hashed};
use nanolimit::{Gcra, KeyedLimiter, ManualClock, QuantaClock};
use quota_spec::QuotaSpec;
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::Instant;

/// The one key of `hot_key`.
const HOT_KEY: u64 = 0x5eed_0000_0000_0042;

/// Keys walked by `rotate_100k`.
const ROTATE_KEYS: u64 = 100_000;

/// The capacity of the tables of `rotate_100k` (as in `benches/keyed.rs`: 25 % more than the
/// keys, so that none is refused).
const ROTATE_CAPACITY: usize = (ROTATE_KEYS + ROTATE_KEYS / 4) as usize;

/// Keys drawn from by `random_1m`.
const RANDOM_KEYS: u64 = 1_000_000;

/// Length of the precomputed sequence of random keys (read sequentially, wrapping around).
const RANDOM_SEQUENCE_LEN: usize = 1 << 20;

/// Keys drawn from by `zipf_1m` (as keyed-zipf-1m in the contention benchmark).
const ZIPF_KEYS: u64 = 1_000_000;

/// keyed-zipf-1m's draws of its first thread: Zipf (s = 1.1) over `ZIPF_KEYS`, 2^20 of them,
/// from that thread's seed (`benches/contention/keys.rs`).
fn zipf_draws() -> Vec<u64> {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let distribution = rand_distr::Zipf::new(ZIPF_KEYS, 1.1).expect("valid Zipf parameters");
    let mut rng = StdRng::seed_from_u64(0x5EED_0000);
    (0..1 << 20)
        .map(|_| rng.sample(distribution) as u64 - 1)
        .collect()
}

/// The capacity of the tables of `hot_key`.
const HOT_KEY_CAPACITY: usize = 100_000;

/// The capacity of the table of `new_key_full`, filled before the loop.
const FULL_TABLE_CAPACITY: usize = 1_024;

const DEFAULT_ITERATIONS: u64 = 1_000_000;

/// Calls per case in the smoke test (no arguments, as under `cargo test --benches`).
const SMOKE_ITERATIONS: u64 = 10_000;

/// Keys of each thread in `one_thread` and `two_threads` (a power of two).
const KEYS_PER_THREAD: u64 = 4_096;

/// Capacity of the tables of `one_thread` and `two_threads`.
const THREADS_CAPACITY: usize = 100_000;

const PATTERNS: &[&str] = &[
    "hot_key",
    "denied_key",
    "new_key",
    "new_key_full",
    "rotate_100k",
    "random_1m",
    "zipf_1m",
    "one_thread",
    "two_threads",
];

const IMPLEMENTATIONS: &[&str] = &[
    "loop_only",
    "nanolimit_hashed",
    "nanolimit_hashed_caller_time",
    "nanolimit_hashed_counted_caller_time",
    "nanolimit_exact",
    "nanolimit_exact_caller_time",
    "governor_dashmap",
    "governor_dashmap_ahash",
    "governor_dashmap_fake_clock",
    "governor_dashmap_ahash_fake_clock",
];

/// An implementation that checks nothing: measures the loop and the key generator.
struct LoopOnly;

impl KeyedSubject for LoopOnly {
    const NAME: &'static str = "loop_only";

    type Timestamp = u64;

    fn build(_quota: &QuotaSpec, _capacity: usize) -> Self {
        LoopOnly
    }

    fn now(&self) -> u64 {
        0
    }

    #[inline]
    fn check_at(&self, key: u64, now: u64) -> bool {
        black_box((key, now));
        true
    }

    #[inline]
    fn check_at_caller_ns(&self, key: u64, caller_ns: u64) -> bool {
        black_box((key, caller_ns));
        true
    }

    fn stored_keys(&self) -> u64 {
        0
    }

    fn untracked_new_keys(&self) -> u64 {
        0
    }

    fn state_report(&self) -> String {
        "checks nothing".to_string()
    }
}

/// The only code callgrind counts (`--toggle-collect='*measured_loop*'`): `iterations` checks
/// of the keys `next_key` yields, at caller times advancing by [`CALLER_TIME_STEP_NS`],
/// returning how many were allowed.
#[inline(never)]
fn measured_loop<S: KeyedSubject>(
    subject: &S,
    iterations: u64,
    mut next_key: impl FnMut() -> u64,
) -> u64 {
    let mut now_ns = CALLER_TIME_STEP_NS;
    let mut allowed = 0;
    for _ in 0..iterations {
        now_ns += CALLER_TIME_STEP_NS;
        allowed += u64::from(black_box(subject).check_at_caller_ns(next_key(), now_ns));
    }
    allowed
}

/// The loop of `new_key` and `new_key_full`: a key never seen on every call, every one of
/// which must be admitted.
fn new_keys_loop<S: KeyedSubject>(
    subject: &S,
    pattern: &str,
    iterations: u64,
) -> Result<(), String> {
    let mut next = 1u64 << 40;
    let allowed = measured_loop(subject, iterations, || {
        next += 1;
        black_box(next)
    });
    println!("{pattern}: {iterations} calls, {allowed} allowed");
    if allowed == iterations {
        Ok(())
    } else {
        Err("some new keys were denied".into())
    }
}

/// Builds the subject, puts the pattern's keys in it (at caller time 0), runs the loop, and
/// returns an error unless every call had the pattern's outcome and no key was inserted by the
/// loop.
fn run<S: KeyedSubject>(pattern: &str, iterations: u64) -> Result<(), String> {
    // `loop_only` checks nothing: every call "passes", whatever the pattern.
    let checks_outcomes = S::NAME != LoopOnly::NAME;
    let allowed = match pattern {
        "hot_key" => {
            let subject = S::build(&KeyedQuota::Generous.spec(), HOT_KEY_CAPACITY);
            subject.check_at_caller_ns(HOT_KEY, 0);
            let stored = subject.stored_keys();
            let allowed = measured_loop(&subject, iterations, || black_box(HOT_KEY));
            if subject.stored_keys() != stored {
                return Err("the loop inserted keys".into());
            }
            allowed
        }
        "new_key" => {
            // A key never seen on every call, in a table whose entries are fresh (reclaimable)
            // 1 ns after use: the insert path, reclaiming a slot each time once the table is full.
            let subject = S::build(&KeyedQuota::Generous.spec(), HOT_KEY_CAPACITY);
            return new_keys_loop(&subject, pattern, iterations);
        }
        "new_key_full" => {
            // keyed-flood's steady state: a key never seen on every call, in a table already
            // full of entries that are fresh (reclaimable) 1 ns after use, so that every insert
            // surveys a key's 16 taken slots, ranks them and reclaims one.
            let subject = S::build(&KeyedQuota::Generous.spec(), FULL_TABLE_CAPACITY);
            // Four keys per key of capacity, all at time 0: nanolimit's table refuses the keys
            // whose slots are all taken (live until 1 ns), and ends with every slot taken.
            for key in 0..4 * FULL_TABLE_CAPACITY as u64 {
                let _ = subject.check_at_caller_ns((1 << 41) | key, 0);
            }
            return new_keys_loop(&subject, pattern, iterations);
        }
        "denied_key" => {
            let subject = S::build(&KeyedQuota::OnePerHour.spec(), HOT_KEY_CAPACITY);
            subject.check_at_caller_ns(HOT_KEY, 0);
            let stored = subject.stored_keys();
            let allowed = measured_loop(&subject, iterations, || black_box(HOT_KEY));
            if subject.stored_keys() != stored {
                return Err("the loop inserted keys".into());
            }
            println!("{pattern}: {iterations} calls, {allowed} allowed");
            if checks_outcomes && allowed != 0 {
                return Err("some calls were allowed".into());
            }
            return Ok(());
        }
        "rotate_100k" => {
            let subject = S::build(&KeyedQuota::ManyKeysStayLive.spec(), ROTATE_CAPACITY);
            for key in 0..ROTATE_KEYS {
                if !subject.check_at_caller_ns(key, 0) {
                    return Err(format!("filling: key {key} denied"));
                }
            }
            let stored = subject.stored_keys();
            let mut next = 0u64;
            let allowed = measured_loop(&subject, iterations, || {
                let key = next;
                next += 1;
                if next == ROTATE_KEYS {
                    next = 0;
                }
                black_box(key)
            });
            if subject.stored_keys() != stored {
                return Err("the loop inserted keys".into());
            }
            allowed
        }
        "random_1m" => {
            let subject = S::build(
                &KeyedQuota::ManyKeysStayLive.spec(),
                (RANDOM_KEYS + RANDOM_KEYS / 4) as usize,
            );
            for key in 0..RANDOM_KEYS {
                if !subject.check_at_caller_ns(key, 0) {
                    return Err(format!("filling: key {key} denied"));
                }
            }
            let stored = subject.stored_keys();
            // A fixed-seed xorshift: the same sequence for every implementation.
            let mut state = 0x6b65_7965_6400_0001u64;
            let sequence: Vec<u64> = (0..RANDOM_SEQUENCE_LEN)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state % RANDOM_KEYS
                })
                .collect();
            let mut index = 0usize;
            let allowed = measured_loop(&subject, iterations, || {
                let key = sequence[index & (RANDOM_SEQUENCE_LEN - 1)];
                index += 1;
                black_box(key)
            });
            if subject.stored_keys() != stored {
                return Err("the loop inserted keys".into());
            }
            allowed
        }
        "zipf_1m" => {
            let capacity = match std::env::var("ZIPF_TABLE_CAPACITY") {
                Ok(value) => value
                    .parse()
                    .map_err(|_| format!("ZIPF_TABLE_CAPACITY={value:?} is not a capacity"))?,
                Err(_) => ZIPF_KEYS as usize,
            };
            let subject = S::build(&KeyedQuota::ManyKeysStayLive.spec(), capacity);
            let sequence = zipf_draws();
            for &key in &sequence {
                if !subject.check_at_caller_ns(key, 0) {
                    return Err(format!("filling: key {key} denied"));
                }
            }
            let stored = subject.stored_keys();
            println!("{pattern}: {stored} keys present");
            let mut index = 0usize;
            let allowed = measured_loop(&subject, iterations, || {
                let key = sequence[index & (sequence.len() - 1)];
                index += 1;
                black_box(key)
            });
            if subject.stored_keys() != stored {
                return Err("the loop inserted keys".into());
            }
            allowed
        }
        "one_thread" | "two_threads" => {
            let threads = if pattern == "one_thread" { 1 } else { 2 };
            let subject = S::build(&KeyedQuota::ManyKeysStayLive.spec(), THREADS_CAPACITY);
            for thread in 0..2u64 {
                for index in 0..KEYS_PER_THREAD {
                    let key = thread << 32 | index;
                    if !subject.check_at_caller_ns(key, 0) {
                        return Err(format!("filling: key {key} denied"));
                    }
                }
            }
            let stored = subject.stored_keys();
            let allowed = run_threads(&subject, threads, iterations);
            if subject.stored_keys() != stored {
                return Err("the threads inserted keys".into());
            }
            allowed
        }
        _ => return Err(format!("unknown pattern {pattern:?}")),
    };
    println!("{pattern}: {iterations} calls, {allowed} allowed");
    if checks_outcomes && allowed != iterations {
        return Err("some calls were denied".into());
    }
    Ok(())
}

/// Nanoseconds this thread has spent on a CPU, if the kernel says (Linux).
fn thread_on_cpu_ns() -> Option<u64> {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    schedstat.split_whitespace().next()?.parse().ok()
}

/// Runs `calls` checks split over `threads` threads, each rotating over its own keys (thread
/// `t` owns keys `t << 32 ..`), released together by a barrier; prints the timings and returns
/// how many checks were allowed.
fn run_threads<S: KeyedSubject>(subject: &S, threads: u64, calls: u64) -> u64 {
    let barrier = Barrier::new(threads as usize);
    let spans: Vec<(Instant, Instant, Option<u64>, u64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let thread_calls = calls / threads + u64::from(thread < calls % threads);
                    let key_base = thread << 32;
                    let mut call = 0u64;
                    barrier.wait();
                    let cpu_start_ns = thread_on_cpu_ns();
                    let start = Instant::now();
                    let allowed = measured_loop(subject, thread_calls, || {
                        let key = key_base | (call & (KEYS_PER_THREAD - 1));
                        call += 1;
                        black_box(key)
                    });
                    let end = Instant::now();
                    let cpu_ns = cpu_start_ns
                        .zip(thread_on_cpu_ns())
                        .map(|(start_ns, end_ns)| end_ns - start_ns);
                    (start, end, cpu_ns, allowed, thread_calls)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("benchmark thread"))
            .collect()
    });
    let start = spans.iter().map(|span| span.0).min().expect("threads");
    let end = spans.iter().map(|span| span.1).max().expect("threads");
    let wall_ns = (end - start).as_nanos() as f64;
    let cpu_per_call: Vec<String> = spans
        .iter()
        .map(|span| match span.2 {
            Some(cpu_ns) => format!("{:.2}", cpu_ns as f64 / span.4.max(1) as f64),
            None => "?".into(),
        })
        .collect();
    let cpu_total_ns: Option<u64> = spans.iter().map(|span| span.2).sum();
    println!(
        "{threads} thread(s): wall {:.2} ns/call; on-CPU ns/call per thread [{}]; overlap {}",
        wall_ns / calls.max(1) as f64,
        cpu_per_call.join(", "),
        cpu_total_ns.map_or("?".into(), |total| format!("{:.2}", total as f64 / wall_ns)),
    );
    spans.iter().map(|span| span.3).sum()
}

fn run_case(case: &str, iterations: u64) -> Result<(), String> {
    let Some((pattern, implementation)) = case.split_once('/') else {
        return Err(format!("{case:?} is not PATTERN/IMPLEMENTATION"));
    };
    match implementation {
        "loop_only" => run::<LoopOnly>(pattern, iterations),
        "nanolimit_hashed" => {
            run::<KeyedLimiter<u64, Gcra, QuantaClock, Hashed>>(pattern, iterations)
        }
        "nanolimit_hashed_caller_time" => {
            run::<KeyedLimiter<u64, Gcra, ManualClock, Hashed>>(pattern, iterations)
        }
        "nanolimit_hashed_counted_caller_time" => run::<CountedKeyed<Gcra>>(pattern, iterations),
        "nanolimit_exact" => {
            run::<KeyedLimiter<u64, Gcra, QuantaClock, Exact>>(pattern, iterations)
        }
        "nanolimit_exact_caller_time" => {
            run::<KeyedLimiter<u64, Gcra, ManualClock, Exact>>(pattern, iterations)
        }
        "governor_dashmap" => run::<GovernorKeyed<std::hash::RandomState>>(pattern, iterations),
        "governor_dashmap_ahash" => run::<GovernorKeyed<ahash::RandomState>>(pattern, iterations),
        "governor_dashmap_fake_clock" => {
            run::<GovernorFakeClock<std::hash::RandomState>>(pattern, iterations)
        }
        "governor_dashmap_ahash_fake_clock" => {
            run::<GovernorFakeClock<ahash::RandomState>>(pattern, iterations)
        }
        _ => Err(format!("unknown implementation {implementation:?}")),
    }
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|argument| argument != "--bench")
        .collect();
    let under_cargo_bench = std::env::args().any(|argument| argument == "--bench");
    let Some(case) = arguments.first() else {
        if under_cargo_bench {
            println!("callgrind_keyed: a runner for valgrind; see benches/callgrind.sh");
            return ExitCode::SUCCESS;
        }
        // No case and no `--bench`: the smoke test of `cargo test --benches`, which lists the
        // cases and runs each briefly, checking its outcomes.
        eprintln!(
            "usage: callgrind_keyed PATTERN/IMPLEMENTATION [ITERATIONS]\n\
             (smoke test: every case below, {SMOKE_ITERATIONS} calls each)\ncases:"
        );
        let mut failures = 0;
        for pattern in PATTERNS {
            for implementation in IMPLEMENTATIONS {
                let case = format!("{pattern}/{implementation}");
                match run_case(&case, SMOKE_ITERATIONS) {
                    Ok(()) => eprintln!("  {case}"),
                    Err(error) => {
                        eprintln!("  {case}: FAILED: {error}");
                        failures += 1;
                    }
                }
            }
        }
        return if failures == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    };
    let iterations = match arguments.get(1).map(|text| text.parse::<u64>()) {
        None => DEFAULT_ITERATIONS,
        Some(Ok(iterations)) => iterations,
        Some(Err(error)) => {
            eprintln!("ITERATIONS must be a whole number: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run_case(case, iterations) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{case}: {error}");
            ExitCode::FAILURE
        }
    }
}

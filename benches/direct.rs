//! Single-thread cost of one check on a direct limiter, next to the floors it is built from
//! and next to `governor`, in one run so the ratios are comparable.
//!
//! Groups (ids read `group/case/implementation`):
//! - `floor`: one clock read (TSC through quanta, or the upkeep clock's atomic load) and one
//!   uncontended compare-and-swap on a cache-padded `AtomicU64`: the parts a check is made of.
//! - `gcra`, `sliding_window`, `fixed_window`: for each algorithm, allowed and denied checks
//!   with three sources of time: the default clock ([`QuantaClock`]), a caller-supplied
//!   timestamp (`check_at`, no clock read: the loop counts nanoseconds and makes a [`Timestamp`]
//!   of them per call) and the [`UpkeepClock`]. Allowed checks run on a
//!   quota no single thread can exhaust, denied ones on a saturated quota (one unit per hour,
//!   already used). `gcra` also holds `governor`'s direct limiter (a GCRA, the reference for all
//!   three groups), allowed and denied, on its default clock and on its upkeep clock (governor
//!   has no caller-time form for direct limiters).
//!
//! Every limiter's outcome is verified outside the timed loop (see [`assert_outcome`]), so an
//! "allowed" case cannot silently measure denials.
//!
//! Run: `cargo bench --bench direct` (add `-- --measurement-time 3` for longer samples).
//! Instruction counts of the same cases under callgrind: `bash benches/callgrind.sh direct` (the
//! runner is `benches/callgrind_direct.rs`).

#[path = "shared/direct_quotas.rs"]
mod direct_quotas;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use crossbeam_utils::CachePadded;
use direct_quotas::{
    generous_fixed_window, generous_gcra, generous_sliding_window, governor_generous_quota,
};
use governor::clock::{Clock as GovernorClock, QuantaUpkeepClock};
use nanolimit::clock::UpkeepClock;
use nanolimit::{Clock, FixedWindow, Gcra, Limiter, QuantaClock, Quota, SlidingWindow, Timestamp};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How far the caller-supplied clock moves between two checks: more than the generous quotas'
/// emission interval (1 ns), so every check at caller time is allowed.
const CALLER_TIME_STEP_NS: u64 = 4;

/// The upkeep interval of both upkeep clocks (nanolimit's default).
const UPKEEP_INTERVAL: Duration = UpkeepClock::DEFAULT_INTERVAL;

/// nanolimit's upkeep clock at [`UPKEEP_INTERVAL`] (its thread stops when the clock is dropped).
fn upkeep_clock() -> UpkeepClock {
    UpkeepClock::new(UPKEEP_INTERVAL).expect("upkeep thread")
}

/// Checks run after each benchmark to confirm it measured the outcome it is named after.
const OUTCOME_CHECKS: u32 = 100_000;

/// One unit per hour: after the first check, every check within the hour is denied.
fn governor_saturated() -> governor::DefaultDirectRateLimiter {
    let limiter = governor::RateLimiter::direct(governor::Quota::per_hour(NonZeroU32::MIN));
    assert!(
        limiter.check().is_ok(),
        "the first check consumes the quota"
    );
    limiter
}

/// Panics unless `OUTCOME_CHECKS` further checks all come out `expected_allowed`.
fn assert_outcome(name: &str, expected_allowed: bool, mut check: impl FnMut() -> bool) {
    for index in 0..OUTCOME_CHECKS {
        assert_eq!(
            check(),
            expected_allowed,
            "{name}: check {index} after the benchmark had the wrong outcome"
        );
    }
}

fn floor(c: &mut Criterion) {
    let mut group = c.benchmark_group("floor");
    group.throughput(Throughput::Elements(1));

    let quanta_clock = QuantaClock::new();
    group.bench_function(BenchmarkId::new("quanta_clock_now", "nanolimit"), |b| {
        b.iter(|| black_box(black_box(&quanta_clock).now()))
    });
    let governor_clock = governor::clock::QuantaClock::default();
    group.bench_function(BenchmarkId::new("quanta_clock_now", "governor"), |b| {
        b.iter(|| black_box(black_box(&governor_clock).now()))
    });

    let upkeep_clock = upkeep_clock();
    group.bench_function(BenchmarkId::new("upkeep_clock_now", "nanolimit"), |b| {
        b.iter(|| black_box(black_box(&upkeep_clock).now()))
    });
    drop(upkeep_clock);
    let governor_upkeep_clock =
        QuantaUpkeepClock::from_interval(UPKEEP_INTERVAL).expect("quanta upkeep thread");
    group.bench_function(BenchmarkId::new("upkeep_clock_now", "governor"), |b| {
        b.iter(|| black_box(black_box(&governor_upkeep_clock).now()))
    });
    drop(governor_upkeep_clock);

    let word = CachePadded::new(AtomicU64::new(0));
    group.bench_function(
        BenchmarkId::new("compare_and_swap", "cache_padded_atomic_u64"),
        |b| {
            b.iter(|| {
                let word = black_box(&word);
                let observed = word.load(Ordering::Acquire);
                black_box(
                    word.compare_exchange(
                        observed,
                        observed + 1,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok(),
                )
            })
        },
    );
    group.finish();
}

/// The six nanolimit cases of one algorithm: `generous` admits every check a single thread
/// can make, `saturated` admits one per hour. Each limiter (and its upkeep thread, if any) is
/// dropped before the next case runs.
fn nanolimit_cases<Q: Quota>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    generous: Q,
    saturated: Q,
) {
    let limiter = Limiter::new(generous);
    group.bench_function(
        BenchmarkId::new("allowed_default_clock", "nanolimit"),
        |b| b.iter(|| black_box(black_box(&limiter).check().is_allowed())),
    );
    assert_outcome("allowed_default_clock", true, || {
        limiter.check().is_allowed()
    });

    let limiter = Limiter::new(generous);
    let mut now_ns = 0u64;
    group.bench_function(BenchmarkId::new("allowed_caller_time", "nanolimit"), |b| {
        b.iter(|| {
            now_ns += CALLER_TIME_STEP_NS;
            black_box(
                black_box(&limiter)
                    .check_at(Timestamp::saturating_from_ns(now_ns))
                    .is_allowed(),
            )
        })
    });
    assert_outcome("allowed_caller_time", true, || {
        now_ns += CALLER_TIME_STEP_NS;
        limiter
            .check_at(Timestamp::saturating_from_ns(now_ns))
            .is_allowed()
    });

    let limiter = Limiter::new(saturated);
    assert!(
        limiter.check().is_allowed(),
        "the first check consumes the quota"
    );
    group.bench_function(BenchmarkId::new("denied", "nanolimit"), |b| {
        b.iter(|| black_box(black_box(&limiter).check().is_allowed()))
    });
    assert_outcome("denied", false, || limiter.check().is_allowed());

    let limiter = Limiter::new(saturated);
    assert!(
        limiter.check_at(Timestamp::ORIGIN).is_allowed(),
        "the first check consumes the quota"
    );
    let mut now_ns = 0u64;
    group.bench_function(BenchmarkId::new("denied_caller_time", "nanolimit"), |b| {
        b.iter(|| {
            now_ns += CALLER_TIME_STEP_NS;
            black_box(
                black_box(&limiter)
                    .check_at(Timestamp::saturating_from_ns(now_ns))
                    .is_allowed(),
            )
        })
    });
    assert_outcome("denied_caller_time", false, || {
        now_ns += CALLER_TIME_STEP_NS;
        limiter
            .check_at(Timestamp::saturating_from_ns(now_ns))
            .is_allowed()
    });

    {
        let limiter = Limiter::with_clock(generous, upkeep_clock());
        group.bench_function(BenchmarkId::new("allowed_upkeep_clock", "nanolimit"), |b| {
            b.iter(|| black_box(black_box(&limiter).check().is_allowed()))
        });
        assert_outcome("allowed_upkeep_clock", true, || {
            limiter.check().is_allowed()
        });
    }
    {
        let limiter = Limiter::with_clock(saturated, upkeep_clock());
        assert!(
            limiter.check().is_allowed(),
            "the first check consumes the quota"
        );
        group.bench_function(BenchmarkId::new("denied_upkeep_clock", "nanolimit"), |b| {
            b.iter(|| black_box(black_box(&limiter).check().is_allowed()))
        });
        assert_outcome("denied_upkeep_clock", false, || {
            limiter.check().is_allowed()
        });
    }
}

fn gcra(c: &mut Criterion) {
    let mut group = c.benchmark_group("gcra");
    group.throughput(Throughput::Elements(1));
    nanolimit_cases(
        &mut group,
        generous_gcra(),
        Gcra::per_hour(1).expect("valid quota"),
    );

    let limiter = governor::RateLimiter::direct(governor_generous_quota());
    group.bench_function(BenchmarkId::new("allowed_default_clock", "governor"), |b| {
        b.iter(|| black_box(black_box(&limiter).check().is_ok()))
    });
    assert_outcome("governor allowed_default_clock", true, || {
        limiter.check().is_ok()
    });

    let limiter = governor_saturated();
    group.bench_function(BenchmarkId::new("denied", "governor"), |b| {
        b.iter(|| black_box(black_box(&limiter).check().is_ok()))
    });
    assert_outcome("governor denied", false, || limiter.check().is_ok());

    // quanta runs one upkeep thread at a time: each governor upkeep limiter is dropped before
    // the next is built.
    {
        let upkeep_clock =
            QuantaUpkeepClock::from_interval(UPKEEP_INTERVAL).expect("quanta upkeep thread");
        let limiter =
            governor::RateLimiter::direct_with_clock(governor_generous_quota(), upkeep_clock);
        group.bench_function(BenchmarkId::new("allowed_upkeep_clock", "governor"), |b| {
            b.iter(|| black_box(black_box(&limiter).check().is_ok()))
        });
        assert_outcome("governor allowed_upkeep_clock", true, || {
            limiter.check().is_ok()
        });
    }
    {
        let upkeep_clock =
            QuantaUpkeepClock::from_interval(UPKEEP_INTERVAL).expect("quanta upkeep thread");
        let limiter = governor::RateLimiter::direct_with_clock(
            governor::Quota::per_hour(NonZeroU32::MIN),
            upkeep_clock,
        );
        assert!(
            limiter.check().is_ok(),
            "the first check consumes the quota"
        );
        group.bench_function(BenchmarkId::new("denied_upkeep_clock", "governor"), |b| {
            b.iter(|| black_box(black_box(&limiter).check().is_ok()))
        });
        assert_outcome("governor denied_upkeep_clock", false, || {
            limiter.check().is_ok()
        });
    }
    group.finish();
}

fn sliding_window(c: &mut Criterion) {
    let mut group = c.benchmark_group("sliding_window");
    group.throughput(Throughput::Elements(1));
    nanolimit_cases(
        &mut group,
        generous_sliding_window(),
        SlidingWindow::per_hour(1).expect("valid quota"),
    );
    group.finish();
}

fn fixed_window(c: &mut Criterion) {
    let mut group = c.benchmark_group("fixed_window");
    group.throughput(Throughput::Elements(1));
    nanolimit_cases(
        &mut group,
        generous_fixed_window(),
        FixedWindow::per_hour(1).expect("valid quota"),
    );
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = floor, gcra, sliding_window, fixed_window
}
criterion_main!(benches);

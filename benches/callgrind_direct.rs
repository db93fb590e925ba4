//! Runs one direct-limiter case many times, for counting instructions under callgrind (stable on
//! noisy machines, where `benches/direct.rs` timings are not).
//!
//! Every nanolimit case's count, with the `loop_only` baseline and the floors, in one table (the
//! cases of `benches/callgrind_keyed.rs` too, unless `direct` is given):
//!
//! ```text
//! bash benches/callgrind.sh direct
//! ```
//!
//! By hand:
//!
//! ```text
//! cargo bench --no-run --bench callgrind_direct   # prints the executable's path
//! valgrind --tool=callgrind --toggle-collect='*measured_loop*' \
//!     --callgrind-out-file=/tmp/cg.out target/release/deps/callgrind_direct-HASH CASE [ITERATIONS]
//! ```
//!
//! The `gcra_reserve_*` cases reserve one unit per call on a quota that grants every
//! reservation at once (zero delay): against the `gcra_allowed_*` case of the same clock, what a
//! reservation costs over an allowed check.
//!
//! `gcra_striped_allow` and `gcra_striped_deny` check a `StripedLimiter` (default stripes and
//! leases, default clock) with `check()`: against `gcra_allowed_default_clock` and
//! `gcra_denied`, what the striped limiter's check costs over the plain one on one thread (the
//! allowed case averages in its refills, one lease of up to 256 units at a time).
//!
//! `gcra_live_*` check a `LiveLimiter` whose quota never changes: against `gcra_allowed_*` and
//! `gcra_denied`, what reading the current quota (its quota cell) costs.
//!
//! Instructions per call = (Ir at ITERATIONS − Ir at 0) / ITERATIONS, for the same CASE (the
//! script uses 200,000). The count includes the loop's own few instructions: the `loop_only`
//! case measures those. Each run verifies that every call had the outcome the case is named
//! after, and exits non-zero otherwise. Under `cargo bench` (an argument `--bench` and no case)
//! it points to `benches/callgrind.sh` and exits. With no arguments at all (as under
//! `cargo test --benches`) it lists the cases and runs each for 10,000 calls, verifying their
//! outcomes: a smoke test.

#[path = "shared/direct_quotas.rs"]
mod direct_quotas;
use direct_quotas::{
    generous_fixed_window, generous_gcra, generous_sliding_window, governor_generous_quota,
};
use governor::clock::{Clock as GovernorClock, QuantaUpkeepClock};
use nanolimit::clock::UpkeepClock;
use nanolimit::live::LiveLimiter;
use nanolimit::sliding_log::{SlidingLog, SlidingLogLimiter};
use nanolimit::striped::StripedLimiter;
use nanolimit::{
    Clock, FixedWindow, Gcra, Limiter, QuantaClock, Quota, Request, Reservation, SlidingWindow,
    Timestamp,
};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How far the caller-supplied clock moves between two checks (see `benches/direct.rs`).
const CALLER_TIME_STEP_NS: u64 = 4;

const DEFAULT_ITERATIONS: u64 = 1_000_000;

/// What every call of a case must return: allowed, denied, or either (clock reads and the bare
/// loop have no outcome).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expected {
    Allowed,
    Denied,
    Any,
}

const CASES: &[&str] = &[
    "loop_only",
    "floor_quanta_clock_now",
    "floor_governor_quanta_clock_now",
    "floor_upkeep_clock_now",
    "floor_governor_upkeep_clock_now",
    "floor_compare_and_swap",
    "gcra_allowed_default_clock",
    "gcra_allowed_caller_time",
    "gcra_allowed_upkeep_clock",
    "gcra_denied",
    "gcra_denied_caller_time",
    "gcra_denied_upkeep_clock",
    "gcra_reserve_default_clock",
    "gcra_reserve_caller_time",
    "gcra_reserve_upkeep_clock",
    "gcra_striped_allow",
    "gcra_striped_deny",
    "gcra_live_allowed_default_clock",
    "gcra_live_allowed_caller_time",
    "gcra_live_denied",
    "gcra_counted_allowed_default_clock",
    "gcra_counted_allowed_caller_time",
    "gcra_counted_denied_caller_time",
    "sliding_log_allow",
    "sliding_log_deny",
    "sliding_window_allowed_default_clock",
    "sliding_window_allowed_caller_time",
    "sliding_window_allowed_upkeep_clock",
    "sliding_window_denied",
    "sliding_window_denied_caller_time",
    "sliding_window_denied_upkeep_clock",
    "fixed_window_allowed_default_clock",
    "fixed_window_allowed_caller_time",
    "fixed_window_allowed_upkeep_clock",
    "fixed_window_denied",
    "fixed_window_denied_caller_time",
    "fixed_window_denied_upkeep_clock",
    "governor_allowed_default_clock",
    "governor_allowed_upkeep_clock",
    "governor_denied",
    "governor_denied_upkeep_clock",
];

/// The only code callgrind counts (`--toggle-collect='*measured_loop*'`): `iterations` calls,
/// returning how many returned `true`.
#[inline(never)]
fn measured_loop(iterations: u64, mut call: impl FnMut() -> bool) -> u64 {
    let mut true_count = 0;
    for _ in 0..iterations {
        true_count += u64::from(call());
    }
    true_count
}

/// Runs one nanolimit case of an algorithm (`case` without the algorithm's prefix):
/// `generous` admits every call, `saturated` admits one per hour.
fn run_nanolimit_case<Q: Quota>(
    case: &str,
    iterations: u64,
    generous: Q,
    saturated: Q,
) -> Option<(u64, Expected)> {
    let upkeep_clock = || UpkeepClock::new(UpkeepClock::DEFAULT_INTERVAL).expect("upkeep thread");
    let check_default_clock = |limiter: &Limiter<Q>| {
        measured_loop(iterations, || black_box(limiter).check().is_allowed())
    };
    // A packet loop's timestamp: nanoseconds it counted itself, made a `Timestamp` per call
    // (the conversion clamps to the horizon, as the limiter did with raw readings before).
    let check_caller_time = |limiter: &Limiter<Q>| {
        let mut now_ns = 0u64;
        measured_loop(iterations, || {
            now_ns += CALLER_TIME_STEP_NS;
            black_box(limiter)
                .check_at(Timestamp::saturating_from_ns(now_ns))
                .is_allowed()
        })
    };
    let check_upkeep_clock = |limiter: &Limiter<Q, UpkeepClock>| {
        measured_loop(iterations, || black_box(limiter).check().is_allowed())
    };
    let saturated_limiter = || {
        let limiter = Limiter::new(saturated);
        assert!(
            limiter.check_at(Timestamp::ORIGIN).is_allowed(),
            "the first check consumes the quota"
        );
        limiter
    };
    let result = match case {
        "allowed_default_clock" => (
            check_default_clock(&Limiter::new(generous)),
            Expected::Allowed,
        ),
        "allowed_caller_time" => (
            check_caller_time(&Limiter::new(generous)),
            Expected::Allowed,
        ),
        "allowed_upkeep_clock" => (
            check_upkeep_clock(&Limiter::with_clock(generous, upkeep_clock())),
            Expected::Allowed,
        ),
        "denied" => (check_default_clock(&saturated_limiter()), Expected::Denied),
        "denied_caller_time" => (check_caller_time(&saturated_limiter()), Expected::Denied),
        "denied_upkeep_clock" => {
            let limiter = Limiter::with_clock(saturated, upkeep_clock());
            assert!(
                limiter.check().is_allowed(),
                "the first check consumes the quota"
            );
            (check_upkeep_clock(&limiter), Expected::Denied)
        }
        _ => return None,
    };
    Some(result)
}

/// Whether a reservation was granted at once: what a reservation case expects of every call. It
/// reads the start, as a caller that sleeps until it would.
#[inline]
fn granted_at_once(reservation: Reservation<'_>) -> bool {
    reservation.is_allowed() && reservation.delay().is_zero()
}

/// Runs one reservation case of a reservable algorithm (`case` without the algorithm's prefix,
/// `reserve_` either): `generous` grants every reservation at once, so each case prices a
/// reservation against the `allowed_` case of the same clock.
///
/// - `default_clock`: `reserve()`, reading the limiter's default clock (as `check()` does).
/// - `caller_time`: `reserve_with(Request::new().at(now))`, with the caller's time as in
///   `allowed_caller_time` (whose `check_at` takes no `Request`).
/// - `upkeep_clock`: `reserve()` on an `UpkeepClock`.
fn run_reserve_case(case: &str, iterations: u64, generous: Gcra) -> Option<(u64, Expected)> {
    let granted = match case {
        "default_clock" => {
            let limiter = Limiter::new(generous);
            measured_loop(iterations, || {
                granted_at_once(black_box(&limiter).reserve())
            })
        }
        "caller_time" => {
            let limiter = Limiter::new(generous);
            let mut now_ns = 0u64;
            measured_loop(iterations, || {
                now_ns += CALLER_TIME_STEP_NS;
                let request = Request::new().at(Timestamp::saturating_from_ns(now_ns));
                black_box(&limiter)
                    .reserve_with(request)
                    .is_ok_and(granted_at_once)
            })
        }
        "upkeep_clock" => {
            let clock = UpkeepClock::new(UpkeepClock::DEFAULT_INTERVAL).expect("upkeep thread");
            let limiter = Limiter::with_clock(generous, clock);
            measured_loop(iterations, || {
                granted_at_once(black_box(&limiter).reserve())
            })
        }
        _ => return None,
    };
    Some((granted, Expected::Allowed))
}

fn run_case(case: &str, iterations: u64) -> Option<(u64, Expected)> {
    let result = match case {
        "loop_only" => (measured_loop(iterations, || black_box(true)), Expected::Any),
        "floor_quanta_clock_now" => {
            let clock = QuantaClock::new();
            let reads = measured_loop(iterations, || {
                black_box(black_box(&clock).now()) != Timestamp::ORIGIN
            });
            (reads, Expected::Any)
        }
        "floor_governor_quanta_clock_now" => {
            let clock = governor::clock::QuantaClock::default();
            let start = clock.now();
            let reads = measured_loop(iterations, || black_box(black_box(&clock).now()) != start);
            (reads, Expected::Any)
        }
        "floor_upkeep_clock_now" => {
            let clock = UpkeepClock::new(UpkeepClock::DEFAULT_INTERVAL).expect("upkeep thread");
            let reads = measured_loop(iterations, || {
                black_box(black_box(&clock).now()) != Timestamp::ORIGIN
            });
            (reads, Expected::Any)
        }
        "floor_governor_upkeep_clock_now" => {
            let clock = QuantaUpkeepClock::from_interval(UpkeepClock::DEFAULT_INTERVAL)
                .expect("quanta upkeep thread");
            let start = clock.now();
            let reads = measured_loop(iterations, || black_box(black_box(&clock).now()) != start);
            (reads, Expected::Any)
        }
        "floor_compare_and_swap" => {
            let word = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
            let swaps = measured_loop(iterations, || {
                let word = black_box(&word);
                let observed = word.load(Ordering::Acquire);
                word.compare_exchange(observed, observed + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            });
            (swaps, Expected::Allowed)
        }
        "governor_allowed_default_clock" => {
            let limiter = governor::RateLimiter::direct(governor_generous_quota());
            (
                measured_loop(iterations, || black_box(&limiter).check().is_ok()),
                Expected::Allowed,
            )
        }
        "governor_denied" => {
            let limiter = governor::RateLimiter::direct(governor::Quota::per_hour(NonZeroU32::MIN));
            assert!(
                limiter.check().is_ok(),
                "the first check consumes the quota"
            );
            (
                measured_loop(iterations, || black_box(&limiter).check().is_ok()),
                Expected::Denied,
            )
        }
        "governor_denied_upkeep_clock" => {
            let clock = QuantaUpkeepClock::from_interval(UpkeepClock::DEFAULT_INTERVAL)
                .expect("quanta upkeep thread");
            let limiter = governor::RateLimiter::direct_with_clock(
                governor::Quota::per_hour(NonZeroU32::MIN),
                clock,
            );
            assert!(
                limiter.check().is_ok(),
                "the first check consumes the quota"
            );
            (
                measured_loop(iterations, || black_box(&limiter).check().is_ok()),
                Expected::Denied,
            )
        }
        "governor_allowed_upkeep_clock" => {
            let clock = QuantaUpkeepClock::from_interval(UpkeepClock::DEFAULT_INTERVAL)
                .expect("quanta upkeep thread");
            let limiter =
                governor::RateLimiter::direct_with_clock(governor_generous_quota(), clock);
            (
                measured_loop(iterations, || black_box(&limiter).check().is_ok()),
                Expected::Allowed,
            )
        }
        // A limiter built `with_counters()`: against `gcra_allowed_default_clock`,
        // `gcra_allowed_caller_time` and `gcra_denied_caller_time`, what counting costs a check
        "gcra_counted_allowed_default_clock" => {
            let limiter = Limiter::new(generous_gcra()).with_counters();
            (
                measured_loop(iterations, || black_box(&limiter).check().is_allowed()),
                Expected::Allowed,
            )
        }
        "gcra_counted_allowed_caller_time" | "gcra_counted_denied_caller_time" => {
            let allowed = case == "gcra_counted_allowed_caller_time";
            let quota = if allowed {
                generous_gcra()
            } else {
                Gcra::per_hour(1).expect("valid quota")
            };
            let limiter = Limiter::new(quota).with_counters();
            if !allowed {
                assert!(
                    limiter.check_at(Timestamp::ORIGIN).is_allowed(),
                    "the first check consumes the quota"
                );
            }
            let mut now_ns = 0u64;
            let admitted = measured_loop(iterations, || {
                now_ns += CALLER_TIME_STEP_NS;
                black_box(&limiter)
                    .check_at(Timestamp::saturating_from_ns(now_ns))
                    .is_allowed()
            });
            let expected = if allowed {
                Expected::Allowed
            } else {
                Expected::Denied
            };
            (admitted, expected)
        }
        // A `StripedLimiter` with the defaults (stripes: twice the available parallelism; adaptive
        // leases of up to 256 units) on the default clock, checked with `check()`: against
        // `gcra_allowed_default_clock` and `gcra_denied`, what the stripe costs over the plain
        // limiter's check. Allowed: the refills (one in up to 256 checks) are averaged in.
        "gcra_striped_allow" => {
            let limiter = StripedLimiter::new(generous_gcra());
            (
                measured_loop(iterations, || black_box(&limiter).check().is_allowed()),
                Expected::Allowed,
            )
        }
        // Denied: one unit per hour (leases of one unit), consumed by a first check; every call
        // then finds its stripe empty and denies on a read-only test of the shared word.
        "gcra_striped_deny" => {
            let limiter = StripedLimiter::new(Gcra::per_hour(1).expect("valid quota"));
            assert!(
                limiter.check().is_allowed(),
                "the first check consumes the quota"
            );
            (
                measured_loop(iterations, || black_box(&limiter).check().is_allowed()),
                Expected::Denied,
            )
        }
        // A `LiveLimiter` (a quota that can change at runtime, read through its quota cell),
        // never changed: against `gcra_allowed_*` and `gcra_denied`, what reading the current
        // quota costs a check.
        "gcra_live_allowed_default_clock" => {
            let limiter = LiveLimiter::new(generous_gcra());
            (
                measured_loop(iterations, || black_box(&limiter).check().is_allowed()),
                Expected::Allowed,
            )
        }
        "gcra_live_allowed_caller_time" => {
            let limiter = LiveLimiter::new(generous_gcra());
            let mut now_ns = 0u64;
            let checks = measured_loop(iterations, || {
                now_ns += CALLER_TIME_STEP_NS;
                black_box(&limiter)
                    .check_at(Timestamp::saturating_from_ns(now_ns))
                    .is_allowed()
            });
            (checks, Expected::Allowed)
        }
        "gcra_live_denied" => {
            let limiter = LiveLimiter::new(Gcra::per_hour(1).expect("valid quota"));
            assert!(
                limiter.check_at(Timestamp::ORIGIN).is_allowed(),
                "the first check consumes the quota"
            );
            (
                measured_loop(iterations, || black_box(&limiter).check().is_allowed()),
                Expected::Denied,
            )
        }
        // A `SlidingLogLimiter` of 2^20 units per millisecond (a ring of 8 MiB: no thread can
        // fill it) on the default clock, checked with `check()`: against
        // `gcra_allowed_default_clock` and `gcra_denied`, what an exact log costs over GCRA.
        "sliding_log_allow" => {
            let quota = SlidingLog::new(1 << 20, Duration::from_millis(1)).expect("valid quota");
            let limiter = SlidingLogLimiter::new(quota).expect("the ring fits in memory");
            (
                measured_loop(iterations, || black_box(&limiter).check().is_allowed()),
                Expected::Allowed,
            )
        }
        // Denied: one unit per hour, consumed by a first check.
        "sliding_log_deny" => {
            let quota = SlidingLog::per_hour(1).expect("valid quota");
            let limiter = SlidingLogLimiter::new(quota).expect("the ring fits in memory");
            assert!(
                limiter.check().is_allowed(),
                "the first check consumes the quota"
            );
            (
                measured_loop(iterations, || black_box(&limiter).check().is_allowed()),
                Expected::Denied,
            )
        }
        _ if case.starts_with("gcra_reserve_") => {
            return run_reserve_case(&case["gcra_reserve_".len()..], iterations, generous_gcra());
        }
        _ if case.starts_with("gcra_") => {
            return run_nanolimit_case(
                &case["gcra_".len()..],
                iterations,
                generous_gcra(),
                Gcra::per_hour(1).expect("valid quota"),
            );
        }
        _ if case.starts_with("sliding_window_") => {
            return run_nanolimit_case(
                &case["sliding_window_".len()..],
                iterations,
                generous_sliding_window(),
                SlidingWindow::per_hour(1).expect("valid quota"),
            );
        }
        _ if case.starts_with("fixed_window_") => {
            return run_nanolimit_case(
                &case["fixed_window_".len()..],
                iterations,
                generous_fixed_window(),
                FixedWindow::per_hour(1).expect("valid quota"),
            );
        }
        _ => return None,
    };
    Some(result)
}

/// Calls per case in the smoke test.
const SMOKE_ITERATIONS: u64 = 10_000;

/// Runs `case` for `iterations` calls and checks every outcome: `Err` with what went wrong.
fn run_and_verify(case: &str, iterations: u64) -> Result<u64, String> {
    let Some((true_count, expected)) = run_case(case, iterations) else {
        return Err(format!(
            "unknown case {case:?}; run with no arguments to list the cases"
        ));
    };
    let wrong = match expected {
        Expected::Allowed => true_count != iterations,
        Expected::Denied => true_count != 0,
        Expected::Any => false,
    };
    if wrong {
        return Err(format!(
            "{case}: {true_count} of {iterations} calls returned true: some calls did not have the outcome the case is named after"
        ));
    }
    Ok(true_count)
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|argument| argument != "--bench")
        .collect();
    let under_cargo_bench = std::env::args().any(|argument| argument == "--bench");
    let Some(case) = arguments.first() else {
        if under_cargo_bench {
            println!("callgrind_direct: a runner for valgrind; see benches/callgrind.sh");
            return ExitCode::SUCCESS;
        }
        // No case and no `--bench`: the smoke test of `cargo test --benches`, which lists the
        // cases and runs each briefly, checking its outcomes.
        eprintln!(
            "usage: callgrind_direct CASE [ITERATIONS]\n\
             (smoke test: every case below, {SMOKE_ITERATIONS} calls each)\ncases:"
        );
        let mut failures = 0;
        for case in CASES {
            match run_and_verify(case, SMOKE_ITERATIONS) {
                Ok(_) => eprintln!("  {case}"),
                Err(error) => {
                    eprintln!("  {case}: FAILED: {error}");
                    failures += 1;
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
    match run_and_verify(case, iterations) {
        Ok(true_count) => {
            println!("{case}: {iterations} calls, {true_count} returned true");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}

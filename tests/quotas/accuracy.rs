//! Long simulated runs under saturation (far more offered than the quota admits), on simulated
//! time (caller-supplied [`Timestamp`]s), measuring what the limiter admitted against the quota.
//!
//! - GCRA, from 1 per day to 16·10^9 per second, and byte rates up to 100 Gbit/s
//!   (12.5·10^9 bytes/s) with packet-sized costs: over a long run the admitted amount is
//!   `rate × duration + burst` to within 0.01 % (asserted; measured deviations are printed in
//!   ppm: run with `--nocapture`).
//! - Fixed windows: every window admits exactly the limit.
//! - Sliding windows: every window after the first admits exactly the limit (the first too, on
//!   a fresh key), as long as the client also arrives once the previous window's share has
//!   rounded down to zero; and after each drained arrival the rule's estimate (previous window
//!   weighted by its part still inside, rounded down, plus the current) is exactly the limit, so
//!   the unrounded weighted count is within one unit above it.
//!
//! To stay fast, time jumps in big steps and each arrival drains what is available with one
//! large check (the decision's `remaining` says how much; the next unit is then denied).

use nanolimit::{
    Decision, FixedWindow, Gcra, Limiter, ManualClock, Quota, Request, SlidingWindow, Timestamp,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;
const DAY_NS: u64 = 86_400 * SECOND_NS;
const YEAR_NS: u64 = 365 * DAY_NS;

/// The largest deviation allowed: 0.01 % = 100 ppm.
const MAX_DEVIATION_PPM: f64 = 100.0;

/// Checks `cost` at `now_ns` (a cost the quota admits at once).
fn check_cost_at<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    cost: u64,
    now_ns: u64,
) -> Decision<Q> {
    let now = Timestamp::from_ns(now_ns).unwrap();
    limiter.check_with(Request::cost(cost).at(now)).unwrap()
}

/// Checks one unit at `now_ns`.
fn check_at<Q: Quota>(limiter: &Limiter<Q, ManualClock>, now_ns: u64) -> Decision<Q> {
    limiter.check_at(Timestamp::from_ns(now_ns).unwrap())
}

/// How a saturating client offers traffic.
#[derive(Debug, Clone, Copy)]
enum Offer {
    /// At each arrival, take everything available: a check of the whole burst, or of what
    /// remains, then one more unit, which must be denied.
    Drain,
    /// At each arrival, one packet of this many units (bytes).
    Packets(u64),
    /// At each arrival, one packet of a random size in this range.
    RandomPackets(u64, u64),
}

struct GcraRun {
    name: &'static str,
    quota: Gcra,
    duration_ns: u64,
    /// Arrivals are spaced by a random gap in `1..=max_gap_ns`.
    max_gap_ns: u64,
    offer: Offer,
}

/// The admitted amount, and what the quota allows: `burst + count × duration / period` as an
/// exact fraction (numerator, denominator = period).
fn simulate_gcra(run: &GcraRun, seed: u64) -> (u128, u128, u128) {
    let quota = run.quota;
    let limiter = Limiter::with_clock(quota, ManualClock::new());
    let mut rng = StdRng::seed_from_u64(seed);
    let start = rng.gen_range(0..YEAR_NS);
    let end = start + run.duration_ns;
    let mut now = start;
    let mut admitted: u128 = 0;
    let mut offered: u128 = 0;
    loop {
        match run.offer {
            Offer::Drain => {
                let burst = quota.limit();
                let first = check_cost_at(&limiter, burst, now);
                offered += burst as u128;
                if first.is_allowed() {
                    admitted += burst as u128;
                } else if first.remaining() > 0 {
                    let rest = first.remaining();
                    assert!(check_cost_at(&limiter, rest, now).is_allowed());
                    admitted += rest as u128;
                }
                assert!(
                    check_at(&limiter, now).is_denied(),
                    "{}: not drained",
                    run.name
                );
            }
            Offer::Packets(size) => {
                offered += size as u128;
                if check_cost_at(&limiter, size, now).is_allowed() {
                    admitted += size as u128;
                }
            }
            Offer::RandomPackets(smallest, largest) => {
                let size = rng.gen_range(smallest..=largest);
                offered += size as u128;
                if check_cost_at(&limiter, size, now).is_allowed() {
                    admitted += size as u128;
                }
            }
        }
        if now == end {
            break;
        }
        now = (now + rng.gen_range(1..=run.max_gap_ns)).min(end);
    }
    let period = quota.period().as_nanos();
    let allowed_numerator =
        quota.limit() as u128 * period + quota.count() as u128 * run.duration_ns as u128;
    // Saturation: far more was offered than the quota allows.
    assert!(
        offered * period > 2 * allowed_numerator,
        "{}: not saturated ({offered} offered)",
        run.name
    );
    (admitted, allowed_numerator, period)
}

fn deviation_ppm(admitted: u128, numerator: u128, denominator: u128) -> f64 {
    let difference = (admitted * denominator) as f64 - numerator as f64;
    difference / numerator as f64 * 1e6
}

fn gcra_runs() -> Vec<GcraRun> {
    let quota = |count: u64, period_ns: u64, burst: u64| {
        Gcra::new(count, Duration::from_nanos(period_ns))
            .unwrap()
            .with_burst(burst)
            .unwrap()
    };
    // With a drained bucket holding less than one unit, a gap of at most (burst − 1) units'
    // time never overflows the bucket, so saturation loses nothing to the burst cap.
    vec![
        GcraRun {
            name: "1 per day",
            quota: quota(1, DAY_NS, 2),
            duration_ns: 3_650 * DAY_NS,
            max_gap_ns: DAY_NS / 2,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "1 per hour",
            quota: quota(1, 3_600 * SECOND_NS, 2),
            duration_ns: 10 * 8_760 * 3_600 * SECOND_NS,
            max_gap_ns: 1_800 * SECOND_NS,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "7 per minute",
            quota: quota(7, 60 * SECOND_NS, 4),
            duration_ns: YEAR_NS,
            max_gap_ns: 25 * SECOND_NS,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "3 per second",
            quota: quota(3, SECOND_NS, 3),
            duration_ns: 10 * DAY_NS,
            max_gap_ns: 600_000_000,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "1000 per second",
            quota: quota(1_000, SECOND_NS, 100),
            duration_ns: DAY_NS,
            max_gap_ns: 90_000_000,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "999,983 per 1.000000007 s",
            quota: quota(999_983, 1_000_000_007, 10_000),
            duration_ns: 3_600 * SECOND_NS,
            max_gap_ns: 9_000_000,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "1e6 per second",
            quota: quota(1_000_000, SECOND_NS, 1_000),
            duration_ns: 1_000 * SECOND_NS,
            max_gap_ns: 900_000,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "1e9 per second",
            quota: quota(1_000_000_000, SECOND_NS, 1_000_000),
            duration_ns: 1_000 * SECOND_NS,
            max_gap_ns: 900_000,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "16e9 per second",
            quota: quota(16_000_000_000, SECOND_NS, 16_000_000),
            duration_ns: 1_000 * SECOND_NS,
            max_gap_ns: 900_000,
            offer: Offer::Drain,
        },
        GcraRun {
            name: "10 Gbit/s, 1500-byte packets",
            quota: quota(1_250_000_000, SECOND_NS, 15_000),
            duration_ns: 2 * SECOND_NS,
            max_gap_ns: 1_000,
            offer: Offer::Packets(1_500),
        },
        GcraRun {
            name: "100 Gbit/s, 1500-byte packets",
            quota: quota(12_500_000_000, SECOND_NS, 1_250_000),
            duration_ns: SECOND_NS / 5,
            max_gap_ns: 100,
            offer: Offer::Packets(1_500),
        },
        GcraRun {
            name: "100 Gbit/s, 64..9000-byte packets",
            quota: quota(12_500_000_000, SECOND_NS, 1_250_000),
            duration_ns: SECOND_NS / 5,
            max_gap_ns: 300,
            offer: Offer::RandomPackets(64, 9_000),
        },
        GcraRun {
            name: "100 Gbit/s, drained every ~50 us",
            quota: quota(12_500_000_000, SECOND_NS, 12_500_000),
            duration_ns: 100 * SECOND_NS,
            max_gap_ns: 100_000,
            offer: Offer::Drain,
        },
    ]
}

#[test]
fn gcra_admits_rate_times_duration_plus_burst_from_one_per_day_to_100_gigabit() {
    println!(
        "{:<36} {:>14} {:>22} {:>22} {:>16}",
        "quota", "duration (s)", "admitted", "rate x duration + burst", "deviation (ppm)"
    );
    for (seed, run) in gcra_runs().iter().enumerate() {
        let (admitted, numerator, denominator) = simulate_gcra(run, seed as u64);
        let deviation = deviation_ppm(admitted, numerator, denominator);
        println!(
            "{:<36} {:>14} {:>22} {:>22.3} {:>16.6}",
            run.name,
            run.duration_ns as f64 / SECOND_NS as f64,
            admitted,
            numerator as f64 / denominator as f64,
            deviation
        );
        assert!(
            deviation.abs() <= MAX_DEVIATION_PPM,
            "{}: deviation {deviation} ppm",
            run.name
        );
        // Never more than allowed, beyond the clock conversion's one early tick (less than a
        // unit); never less than allowed minus what the last arrival could not take.
        let largest_request = match run.offer {
            Offer::Drain => 1,
            Offer::Packets(size) => size,
            Offer::RandomPackets(_, largest) => largest,
        };
        assert!(
            admitted * denominator < numerator + denominator,
            "{}",
            run.name
        );
        assert!(
            (admitted + largest_request as u128) * denominator > numerator,
            "{}: admitted {admitted}",
            run.name
        );
    }
}

/// Per-window admitted counts of a saturating client.
struct WindowRun {
    counts: Vec<u64>,
}

/// A saturating client: arrivals spaced by random gaps in `1..=max_gap_ns`, plus one in the last
/// `final_stretch_ns` nanoseconds of every window (at a random time there), each taking
/// everything available. After every drained arrival, `after_drain` gets the client's own counts:
/// (window number from the first, elapsed ns, previous window's count, this window's).
fn simulate_windows<Q: Quota>(
    limiter: &Limiter<Q, ManualClock>,
    window_ns: u64,
    windows: u64,
    max_gap_ns: u64,
    final_stretch_ns: u64,
    seed: u64,
    mut after_drain: impl FnMut(u64, u64, u64, u64),
) -> WindowRun {
    assert!((1..=window_ns).contains(&final_stretch_ns));
    let mut rng = StdRng::seed_from_u64(seed);
    let first_window = rng.gen_range(0..1_000_000);
    let mut now = first_window * window_ns + rng.gen_range(0..window_ns);
    let end = (first_window + windows) * window_ns;
    let mut counts = vec![0u64; windows as usize];
    let limit = limiter.quota().limit();
    let late_arrival = |rng: &mut StdRng, window_index: u64| {
        (window_index + 1) * window_ns - rng.gen_range(1..=final_stretch_ns)
    };
    let mut late = late_arrival(&mut rng, now / window_ns).max(now);
    while now < end {
        let window = now / window_ns - first_window;
        let first = check_cost_at(limiter, limit, now);
        let taken = if first.is_allowed() {
            limit
        } else {
            let rest = first.remaining();
            if rest > 0 {
                assert!(check_cost_at(limiter, rest, now).is_allowed());
            }
            rest
        };
        counts[window as usize] += taken;
        assert!(check_at(limiter, now).is_denied());
        let previous = if window > 0 {
            counts[window as usize - 1]
        } else {
            0
        };
        after_drain(window, now % window_ns, previous, counts[window as usize]);
        let next = now + rng.gen_range(1..=max_gap_ns);
        if now >= late {
            // This window's late arrival is done: the next window's is due.
            late = late_arrival(&mut rng, now / window_ns + 1);
        }
        now = next.min(late);
    }
    WindowRun { counts }
}

#[test]
fn fixed_windows_admit_exactly_the_limit_in_every_window() {
    const MAX_LIMIT: u64 = FixedWindow::MAX_LIMIT;
    const MIN_WINDOW_NS: u64 = FixedWindow::MIN_WINDOW.as_nanos() as u64;
    let cases = [
        (1, SECOND_NS),
        (10, SECOND_NS),
        (1_000, 60 * SECOND_NS),
        (MAX_LIMIT, MIN_WINDOW_NS),
        (MAX_LIMIT, SECOND_NS),
        (777, 1_000_000_007),
    ];
    for (seed, (limit, window_ns)) in cases.into_iter().enumerate() {
        let quota = FixedWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let windows = 20_000;
        let run = simulate_windows(
            &limiter,
            window_ns,
            windows,
            window_ns / 4,
            window_ns / 4,
            seed as u64,
            |_, _, _, _| {},
        );
        // Every window had an arrival (gaps are at most a quarter window), so each is full.
        for (window, &count) in run.counts.iter().enumerate() {
            assert_eq!(count, limit, "limit {limit}, window {window}");
        }
        println!(
            "fixed window {limit} per {window_ns} ns: {windows} windows, each exactly {limit}"
        );
    }
    // Unit requests arriving several times faster than the limit: exactly the limit per window.
    for (limit, window_ns) in [(1u64, SECOND_NS), (3, SECOND_NS), (50, 7_919_000)] {
        let quota = FixedWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let mut rng = StdRng::seed_from_u64(limit);
        let windows = 5_000u64;
        let mut counts = vec![0u64; windows as usize];
        let mut now = 0;
        while now < windows * window_ns {
            if check_at(&limiter, now).is_allowed() {
                counts[(now / window_ns) as usize] += 1;
            }
            now += rng.gen_range(1..=window_ns / (4 * limit));
        }
        assert!(counts.iter().all(|&count| count == limit), "limit {limit}");
    }
}

#[test]
fn saturated_sliding_windows_admit_exactly_the_limit_in_every_window() {
    const MAX_LIMIT: u64 = SlidingWindow::MAX_LIMIT;
    const MIN_WINDOW_NS: u64 = SlidingWindow::MIN_WINDOW.as_nanos() as u64;
    let cases = [
        (1, SECOND_NS),
        (2, SECOND_NS),
        (100, SECOND_NS),
        (1_000, 60 * SECOND_NS),
        (999_999, MIN_WINDOW_NS),
        (MAX_LIMIT, 1_048_561),
        (MAX_LIMIT, SECOND_NS),
        (777, 1_000_000_007),
    ];
    for (seed, (limit, window_ns)) in cases.into_iter().enumerate() {
        let quota = SlidingWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let windows = 20_000;
        // A previous count p <= limit has a share below one unit, rounded down to zero, once
        // p × (W − e) < W: in the last ceil(W / limit) − 1 nanoseconds of the window (at least
        // the last one, the limit being below W).
        let final_stretch_ns = window_ns.div_ceil(limit) - 1;
        let run = simulate_windows(
            &limiter,
            window_ns,
            windows,
            window_ns / 16,
            final_stretch_ns,
            seed as u64,
            |window, elapsed_ns, previous, current| {
                assert_saturated(limit, window_ns, window, elapsed_ns, previous, current);
            },
        );
        // The first window on a fresh key, and every window after it: the previous window's
        // share has rounded down to zero by its late arrival, which takes the rest.
        for (window, &count) in run.counts.iter().enumerate() {
            assert_eq!(
                count, limit,
                "limit {limit} per {window_ns} ns, window {window}"
            );
        }
        println!(
            "sliding window {limit} per {window_ns} ns: {windows} windows, each exactly {limit}"
        );
    }
}

/// The rule's own bound after a drained arrival, on the client's own counts: the estimate
/// `⌊previous × (W − e) / W⌋ + current` is exactly the limit (a unit more is denied), so the
/// unrounded weighted count is at least the limit and less than one unit above it.
fn assert_saturated(
    limit: u64,
    window_ns: u64,
    window: u64,
    elapsed_ns: u64,
    previous: u64,
    current: u64,
) {
    let scaled_share = previous as u128 * (window_ns - elapsed_ns) as u128;
    let estimate = scaled_share / window_ns as u128 + current as u128;
    assert_eq!(
        estimate, limit as u128,
        "limit {limit}: window {window} at {elapsed_ns} ns ({previous} previous, {current} current)"
    );
    let weighted = scaled_share + current as u128 * window_ns as u128;
    let scaled_limit = limit as u128 * window_ns as u128;
    assert!(weighted >= scaled_limit && weighted < scaled_limit + window_ns as u128);
}

/// With more units per window than nanoseconds (only limits above 10^6 with windows under
/// 1.05 ms), even at a window's last nanosecond a previous count p >= W still has a share of
/// ⌊p / W⌋ >= 1 unit: with the largest limit and the shortest window, a saturated key that
/// arrives at every window's last nanosecond admits the limit in the first window and one unit
/// less in every window after it (⌊p / W⌋ = 1 for every p from W to the limit). The rule's bound
/// holds all the same.
#[test]
fn with_more_units_than_nanoseconds_per_window_a_share_never_rounds_to_zero() {
    let limit = SlidingWindow::MAX_LIMIT;
    let window_ns = SlidingWindow::MIN_WINDOW.as_nanos() as u64;
    let quota = SlidingWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
    let limiter = Limiter::with_clock(quota, ManualClock::new());
    let run = simulate_windows(
        &limiter,
        window_ns,
        20_000,
        window_ns / 16,
        1,
        7,
        |window, elapsed_ns, previous, current| {
            assert_saturated(limit, window_ns, window, elapsed_ns, previous, current);
        },
    );
    assert_eq!(run.counts[0], limit);
    for (window, &count) in run.counts.iter().enumerate().skip(1) {
        assert_eq!(count, limit - 1, "window {window}");
    }
}

//! What the fixed- and sliding-window tests share: their quotas count per window and store their
//! window index modulo a documented wrap.

use super::{
    at, check_cost_at, limiter, monotonic, peek_at, random_schedule, HORIZON_NS, SECOND_NS, YEAR_NS,
};
use nanolimit::quota::Step;
use nanolimit::quota::WindowInstant;
use nanolimit::{
    Decision, FixedWindow, Limiter, ManualClock, Quota, QuotaError, SlidingWindow, Timestamp,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// A window quota, its constructors and its public bounds.
pub trait WindowQuota: Quota<Instant = WindowInstant> + PartialEq {
    /// The largest limit per window.
    const MAX_LIMIT: u64;
    /// The shortest window.
    const MIN_WINDOW: Duration;
    /// The documented modulus of the stored window index (2^24 sliding, 2^40 fixed).
    const INDEX_WRAP: u64;
    /// The documented `backward_windows()` of quotas whose index wraps before the horizon
    /// (2^16 sliding, 2^30 fixed).
    const WRAPPING_BACKWARD_WINDOWS: u64;

    /// `limit` per `window`.
    fn new(limit: u64, window: Duration) -> Result<Self, QuotaError>;
    /// `limit` per second.
    fn per_second(limit: u64) -> Result<Self, QuotaError>;
    /// `limit` per minute.
    fn per_minute(limit: u64) -> Result<Self, QuotaError>;
    /// `limit` per hour.
    fn per_hour(limit: u64) -> Result<Self, QuotaError>;
    /// The window length.
    fn window(&self) -> Duration;
    /// How many windows back a reading still counts as behind the stored window, for this
    /// quota.
    fn backward_windows(&self) -> u64;

    /// The window length in nanoseconds.
    fn window_ns(&self) -> u64 {
        self.window().as_nanos() as u64
    }

    /// The shortest window in nanoseconds.
    fn min_window_ns() -> u64 {
        Self::MIN_WINDOW.as_nanos() as u64
    }
}

/// Implements [`WindowQuota`] for a window quota type.
macro_rules! window_quota {
    ($quota:ident, index_bits: $index_bits:expr, wrapping_backward_bits: $backward_bits:expr) => {
        impl WindowQuota for $quota {
            const MAX_LIMIT: u64 = $quota::MAX_LIMIT;
            const MIN_WINDOW: Duration = $quota::MIN_WINDOW;
            const INDEX_WRAP: u64 = 1 << $index_bits;
            const WRAPPING_BACKWARD_WINDOWS: u64 = 1 << $backward_bits;

            fn new(limit: u64, window: Duration) -> Result<Self, QuotaError> {
                $quota::new(limit, window)
            }
            fn per_second(limit: u64) -> Result<Self, QuotaError> {
                $quota::per_second(limit)
            }
            fn per_minute(limit: u64) -> Result<Self, QuotaError> {
                $quota::per_minute(limit)
            }
            fn per_hour(limit: u64) -> Result<Self, QuotaError> {
                $quota::per_hour(limit)
            }
            fn window(&self) -> Duration {
                $quota::window(self)
            }
            fn backward_windows(&self) -> u64 {
                $quota::backward_windows(self)
            }
        }
    };
}

window_quota!(FixedWindow, index_bits: 40, wrapping_backward_bits: 30);
window_quota!(SlidingWindow, index_bits: 24, wrapping_backward_bits: 16);

/// Asserts that each invalid window quota is rejected with its own error (`too_short_ns`
/// lists windows below the shortest), that the errors read as people write durations, and
/// that the extremes themselves are accepted. Returns the quota with the longest window.
pub fn assert_every_invalid_window_quota_is_rejected<W: WindowQuota>(too_short_ns: &[u64]) -> W {
    let (max_limit, min_window_ns) = (W::MAX_LIMIT, W::min_window_ns());
    assert_eq!(W::per_second(0), Err(QuotaError::ZeroLimit));
    assert_eq!(
        W::new(0, Duration::from_secs(1)),
        Err(QuotaError::ZeroLimit)
    );
    assert_eq!(
        W::per_minute(max_limit + 1),
        Err(QuotaError::LimitTooLarge {
            requested: max_limit + 1,
            max: max_limit
        })
    );
    assert_eq!(
        W::per_hour(u64::MAX),
        Err(QuotaError::LimitTooLarge {
            requested: u64::MAX,
            max: max_limit
        })
    );
    assert_eq!(W::new(5, Duration::ZERO), Err(QuotaError::ZeroPeriod));
    for &too_short in too_short_ns {
        assert!(too_short < min_window_ns);
        assert_eq!(
            W::new(5, Duration::from_nanos(too_short)),
            Err(QuotaError::WindowTooShort { min: W::MIN_WINDOW })
        );
    }
    let period_too_long = Err(QuotaError::PeriodTooLong {
        max: Timestamp::HORIZON.since_origin(),
    });
    assert_eq!(
        W::new(5, Duration::from_nanos(HORIZON_NS + 1)),
        period_too_long
    );
    assert_eq!(W::new(5, Duration::MAX), period_too_long);
    assert_eq!(
        W::new(5, Duration::MAX).unwrap_err().to_string(),
        "quota period or window is longer than the supported maximum of 18.3 years"
    );
    let too_short = W::new(5, Duration::from_nanos(1)).unwrap_err().to_string();
    assert!(
        too_short.ends_with(&format!(
            "of {}",
            if min_window_ns == 1_000 {
                "1 µs"
            } else {
                "1 ms"
            }
        )),
        "{too_short}"
    );
    // The extremes themselves are accepted.
    let shortest = W::new(max_limit, W::MIN_WINDOW).unwrap();
    assert_eq!(shortest.limit(), max_limit);
    assert_eq!(shortest.window(), W::MIN_WINDOW);
    let longest = W::new(1, Timestamp::HORIZON.since_origin()).unwrap();
    assert_eq!(longest.window(), Duration::from_nanos(HORIZON_NS));
    assert!(limiter(longest).check_at(Timestamp::HORIZON).is_allowed());
    longest
}

/// Any valid quota: limits from one to the largest, windows from the shortest to the horizon.
pub fn any_window_quota<W: WindowQuota>() -> impl Strategy<Value = W> {
    let min_window_ns = W::min_window_ns();
    let limit = prop_oneof![1u64..=4, 1..=W::MAX_LIMIT, Just(W::MAX_LIMIT)];
    let window_ns = prop_oneof![
        Just(min_window_ns),
        min_window_ns..=SECOND_NS,
        min_window_ns..=HORIZON_NS,
        Just(HORIZON_NS),
    ];
    (limit, window_ns)
        .prop_map(|(limit, window_ns)| W::new(limit, Duration::from_nanos(window_ns)).unwrap())
}

/// [`random_schedule`] with gaps from a few nanoseconds to three windows (some ending just
/// before a boundary) and costs from one to the whole limit.
pub fn random_window_schedule<W: WindowQuota>(
    quota: W,
    seed: u64,
    checks: usize,
    visit: impl FnMut(&Limiter<W, ManualClock>, u64, u64, &Decision<W>),
) {
    let window_ns = quota.window_ns();
    let limit = quota.limit();
    let unit_ns = (window_ns / limit).max(1);
    let next = move |rng: &mut StdRng, now: u64| {
        let gap_ns = match rng.gen_range(0..8) {
            0 => 0,
            1 => rng.gen_range(0..=3),
            2 | 3 => rng.gen_range(0..=unit_ns * 2),
            4 | 5 => rng.gen_range(0..=window_ns / 3),
            6 => rng.gen_range(0..=window_ns * 3),
            _ => window_ns - now % window_ns - rng.gen_range(0..=1),
        };
        let cost = match rng.gen_range(0..3) {
            0 => 1,
            1 => rng.gen_range(1..=limit),
            _ => rng.gen_range(1..=limit.div_ceil(8)),
        };
        Some((gap_ns, cost))
    };
    random_schedule(quota, seed, checks, next, visit);
}

/// Fills `limiter` in window `index` and returns the reading used.
pub fn fill_window<W: WindowQuota>(limiter: &Limiter<W, ManualClock>, index: u64) -> u64 {
    let quota = limiter.quota();
    let reading = index * quota.window_ns() + quota.window_ns() / 3;
    assert!(check_cost_at(limiter, quota.limit(), reading).is_allowed());
    reading
}

/// How many windows a reading may lag behind a stored window and still be read as behind it,
/// as the quota module's documentation states it: for quotas whose last window index before
/// the horizon leaves the wrapping figure to spare below the index wrap (no wrap), every
/// index the wrap leaves above that last index; else the wrapping figure.
pub fn documented_backward_windows<W: WindowQuota>(quota: &W) -> u64 {
    let last_index = HORIZON_NS / quota.window_ns();
    let largest_index = W::INDEX_WRAP - 1;
    if last_index < largest_index - W::WRAPPING_BACKWARD_WINDOWS {
        largest_index - last_index
    } else {
        W::WRAPPING_BACKWARD_WINDOWS
    }
}

/// Asserts that quotas of each window length report the `backward_windows` given with it
/// (figures computed independently of the crate).
pub fn assert_backward_windows_are<W: WindowQuota>(cases: &[(Duration, u64)]) {
    for &(window, backward_windows) in cases {
        let quota = W::new(5, window).unwrap();
        assert_eq!(quota.backward_windows(), backward_windows, "{window:?}");
        assert_eq!(documented_backward_windows(&quota), backward_windows);
    }
}

/// The metadata a quota reports for `state` at `now`: (remaining, reset_after, retry_after
/// of one unit and of the whole limit, fresh).
fn metadata<W: WindowQuota>(
    quota: &W,
    state: u64,
    now: WindowInstant,
) -> (u64, u64, u64, u64, bool) {
    (
        quota.remaining(state, now),
        quota.reset_after_ns(state, now),
        quota.retry_after_ns(state, now, 1),
        quota.retry_after_ns(state, now, quota.limit()),
        quota.is_fresh(state, now),
    )
}

/// Asserts that `backward_windows` is the documented figure for every quota, and that a
/// spent window read at readings behind it, down to the origin where the quota's index never
/// wraps, stays spent, reports exactly what a reading at the stored window's start reports,
/// and is never overwritten.
pub fn assert_a_reading_behind_the_stored_window_grants_nothing<W: WindowQuota>(quotas: Vec<W>) {
    let mut never_wrapping = 0;
    for quota in quotas {
        let backward_windows = documented_backward_windows(&quota);
        assert_eq!(quota.backward_windows(), backward_windows, "{quota:?}");
        let window_ns = quota.window_ns();
        let last_index = HORIZON_NS / window_ns;
        if last_index < W::INDEX_WRAP - 1 - W::WRAPPING_BACKWARD_WINDOWS {
            never_wrapping += 1;
            assert!(backward_windows >= last_index.min(W::WRAPPING_BACKWARD_WINDOWS));
        }
        // A window late in the horizon, spent.
        let start = last_index - 2;
        let limiter = limiter(quota);
        let filled_at = fill_window(&limiter, start);
        let state = peek_at(&limiter, filled_at).state_word();
        let at_start = quota.instant(at(start * window_ns));
        let expected = metadata(&quota, state, at_start);
        assert_eq!(expected.0, 0);
        assert!(!expected.4);
        let start_decision = limiter.check_at(at(start * window_ns));
        for back in [
            1,
            2,
            3,
            1_000,
            start,
            backward_windows / 2,
            backward_windows,
        ] {
            let Some(index) = start.checked_sub(back).filter(|_| back <= backward_windows) else {
                continue;
            };
            for reading in [index * window_ns, index * window_ns + window_ns / 2] {
                let now = quota.instant(at(reading));
                assert_eq!(
                    metadata(&quota, state, now),
                    expected,
                    "{quota:?}: {back} back"
                );
                assert_eq!(quota.step(state, now, 1), Step::Deny);
                let decision = limiter.check_at(at(reading));
                assert!(decision.is_denied(), "{quota:?}: {back} back");
                assert_eq!(decision.remaining(), 0);
                assert_eq!(decision.retry_after(), start_decision.retry_after());
                assert_eq!(decision.reset_after(), start_decision.reset_after());
                assert_eq!(peek_at(&limiter, filled_at).state_word(), state);
            }
        }
        // One window further back is the documented limit: it reads as a key idle for a
        // very long time.
        if let Some(index) = start.checked_sub(backward_windows + 1) {
            assert!(
                quota.is_fresh(state, quota.instant(at(index * window_ns))),
                "{quota:?}"
            );
        }
    }
    assert!(never_wrapping > 0, "no quota whose index never wraps");
}

/// Asserts, over random schedules, what an earlier reading (by at most the quota's backward
/// windows) reports on the state a check left: never more remaining than the latest reading,
/// and nothing admitted that the latest reading denies; behind the stored window, exactly
/// what a reading at the stored window's start reports; in or after it, waits that end when
/// the latest reading's end (or before the latest reading).
pub fn assert_an_earlier_reading_sees_no_more_than_the_latest<W: WindowQuota>(quotas: Vec<W>) {
    let (mut behind, mut within) = (0, 0);
    for (index, quota) in quotas.into_iter().enumerate() {
        let window_ns = quota.window_ns();
        let backward_ns = quota.backward_windows().saturating_mul(window_ns);
        let mut rng = StdRng::seed_from_u64(300 + index as u64);
        // The window the state word stores: that of the last admitted check of a cost.
        let mut stored_window = None;
        random_window_schedule(
            quota,
            400 + index as u64,
            2_000,
            |_, now, cost, decision| {
                if decision.is_allowed() && cost > 0 {
                    stored_window = Some(now / window_ns);
                }
                let state = decision.state_word();
                let latest = quota.instant(at(now));
                for _ in 0..4 {
                    let back = match rng.gen_range(0..4) {
                        0 => rng.gen_range(0..=3),
                        1 => rng.gen_range(0..=window_ns),
                        2 => rng.gen_range(0..=3 * window_ns),
                        _ => rng.gen_range(0..=backward_ns),
                    };
                    let reading = now.saturating_sub(back);
                    let earlier = quota.instant(at(reading));
                    let context = format!("{quota:?}: state {state:#x} at {reading}, latest {now}");
                    assert!(
                        quota.remaining(state, earlier) <= quota.remaining(state, latest),
                        "{context}"
                    );
                    if let Step::Allow(_) = quota.step(state, earlier, cost) {
                        assert!(
                            matches!(quota.step(state, latest, cost), Step::Allow(_)),
                            "{context}: cost {cost}"
                        );
                    }
                    match stored_window {
                        Some(stored) if reading / window_ns < stored => {
                            behind += 1;
                            let start = quota.instant(at(stored * window_ns));
                            assert_eq!(
                                metadata(&quota, state, earlier),
                                metadata(&quota, state, start),
                                "{context}"
                            );
                            assert_eq!(
                                quota.retry_after_ns(state, earlier, cost),
                                quota.retry_after_ns(state, start, cost),
                                "{context}: cost {cost}"
                            );
                            assert_eq!(
                                quota.step(state, earlier, cost) == Step::Deny,
                                quota.step(state, start, cost) == Step::Deny,
                                "{context}: cost {cost}"
                            );
                        }
                        _ => {
                            within += 1;
                            // Judged at the reading itself: waiting from it ends at the same
                            // moment as waiting from the latest one, unless before it.
                            let retry_ns = quota.retry_after_ns(state, earlier, cost);
                            assert_eq!(
                                (reading + retry_ns).max(now),
                                now + quota.retry_after_ns(state, latest, cost),
                                "{context}: cost {cost}"
                            );
                            let reset_ns = quota.reset_after_ns(state, earlier);
                            assert_eq!(
                                (reading + reset_ns).max(now),
                                now + quota.reset_after_ns(state, latest),
                                "{context}"
                            );
                        }
                    }
                }
            },
        );
    }
    assert!(
        behind > 1_000 && within > 1_000,
        "{behind} behind, {within} within"
    );
}

/// Asserts that a written state word is greater than the one it replaces unless the window
/// index wrapped: the reading is in a later window than the stored one (by absolute index,
/// which the test knows) and the new index's residue modulo the wrap is smaller than the
/// stored one's. A reading behind the stored window, by as many windows as the quota reads as
/// behind, never makes the word smaller. Both kinds of reading, and wraps, must be exercised.
pub fn assert_a_written_state_grows_unless_the_index_wrapped<W: WindowQuota>(quotas: Vec<W>) {
    let mut rng = StdRng::seed_from_u64(7);
    let (mut wrapped, mut behind) = (0, 0);
    for quota in quotas {
        let window_ns = quota.window_ns();
        let limit = quota.limit();
        let backward_windows = documented_backward_windows(&quota);
        let backward_ns = backward_windows.saturating_mul(window_ns);
        for _ in 0..20_000 {
            let now_ns = rng.gen_range(0..=HORIZON_NS);
            let now = quota.instant(at(now_ns));
            // A state written a few windows before or after now, or at any time at most the
            // quota's backward windows after now (any time at all for quotas whose index
            // never wraps).
            let written_at = match rng.gen_range(0..3) {
                0 => now_ns.saturating_sub(rng.gen_range(0..=3 * window_ns)),
                1 => (now_ns + rng.gen_range(0..=3 * window_ns)).min(HORIZON_NS),
                _ => rng.gen_range(0..=now_ns.saturating_add(backward_ns).min(HORIZON_NS)),
            };
            let written_index = quota.instant(at(written_at)).window_index();
            if written_index > now.window_index() {
                let lag = written_index - now.window_index();
                if lag > backward_windows {
                    continue;
                }
            }
            let mut state = W::FRESH;
            for _ in 0..rng.gen_range(0..3) {
                let cost = rng.gen_range(1..=limit);
                if let Step::Allow(next) = quota.step(state, quota.instant(at(written_at)), cost) {
                    state = next;
                }
            }
            let cost = rng.gen_range(1..=limit);
            let Step::Allow(written) = quota.step(state, now, cost) else {
                continue;
            };
            // The two largest words are keyed tables' slot markers.
            assert!(written < u64::MAX - 1);
            if state != W::FRESH && written_index > now.window_index() {
                behind += 1;
            }
            if written > state {
                continue;
            }
            // Only a window index that wrapped may make the word smaller: now is a later
            // window than the stored one, and its residue is smaller.
            wrapped += 1;
            assert_ne!(state, W::FRESH);
            assert!(
                now.window_index() > written_index,
                "{quota:?}: {state:#x} -> {written:#x} at a reading {} windows behind",
                written_index - now.window_index()
            );
            assert!(
                now.window_index() % W::INDEX_WRAP < written_index % W::INDEX_WRAP,
                "{quota:?}: {state:#x} -> {written:#x}"
            );
        }
    }
    assert!(wrapped > 0, "no wrapped index was exercised");
    assert!(
        behind > 0,
        "no reading behind a stored window was exercised"
    );
}

/// Calls every pure method on edge states and random ones, at extreme and random readings:
/// none may panic.
pub fn assert_no_input_makes_a_step_panic<W: WindowQuota>(quotas: Vec<W>) {
    let mut rng = StdRng::seed_from_u64(8);
    for quota in quotas {
        let mut states: Vec<u64> = vec![0, 1, u64::MAX, u64::MAX - 1, W::INDEX_WRAP - 1];
        states.extend((0..200).map(|_| rng.gen::<u64>()));
        let mut readings: Vec<u64> = vec![0, 1, HORIZON_NS - 1, HORIZON_NS];
        readings.extend((0..200).map(|_| rng.gen_range(0..=HORIZON_NS)));
        for &state in &states {
            for &reading in &readings {
                super::call_every_method(&quota, state, quota.instant(at(reading)));
            }
        }
    }
}

/// Asserts that readings past the horizon cannot be made, that the horizon falls in the
/// window it should, and that a limiter there admits one window's limit and then denies,
/// whatever the clock does. Returns the clock, advanced as far as it goes.
pub fn assert_readings_past_the_horizon_cannot_be_made<W: WindowQuota>(quota: W) -> ManualClock {
    super::assert_readings_past_the_horizon_cannot_be_made(&quota);
    let at_horizon = quota.instant(Timestamp::HORIZON);
    assert_eq!(
        (at_horizon.window_index(), at_horizon.elapsed_ns()),
        (
            HORIZON_NS / quota.window_ns(),
            HORIZON_NS % quota.window_ns()
        )
    );
    // Nothing refills within the horizon's own window.
    let before_ns = (HORIZON_NS % quota.window_ns()).min(SECOND_NS);
    super::assert_a_limiter_at_the_horizon_fails_closed(quota, before_ns, 0)
}

/// Asserts that a limiter shifted by ten years of whole windows decides exactly as one at the
/// origin, over a random schedule seeded with `seed`.
pub fn assert_ten_years_later_behaves_as_at_the_origin<W: WindowQuota>(quota: W, seed: u64) {
    let window_ns = quota.window_ns();
    let limit = quota.limit();
    // Windows are aligned to the clock's origin: shift by whole windows.
    let offset = 10 * YEAR_NS / window_ns * window_ns;
    let origin = limiter(quota);
    let shifted = limiter(quota);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut now = 0;
    for _ in 0..3_000 {
        now += match rng.gen_range(0..4) {
            0 => 0,
            1 => rng.gen_range(0..=window_ns / limit),
            2 => rng.gen_range(0..=window_ns / 4),
            _ => rng.gen_range(0..=2 * window_ns),
        };
        let cost = rng.gen_range(1..=limit.div_ceil(4));
        let expected = check_cost_at(&origin, cost, now);
        let actual = check_cost_at(&shifted, cost, offset + now);
        assert_eq!(
            actual.is_allowed(),
            expected.is_allowed(),
            "{quota:?} at {now}"
        );
        assert_eq!(actual.remaining(), expected.remaining());
        assert_eq!(actual.retry_after(), expected.retry_after());
        assert_eq!(actual.reset_after(), expected.reset_after());
    }
}

/// Asserts, for a quota whose index wraps, that a full window read up to its backward
/// windows earlier (a clock that stepped back) is still spent, further back reads as idle,
/// and an index that aliases one `backward_windows` back after a wrap is not fresh either.
pub fn assert_an_index_ahead_of_now_is_a_clock_that_stepped_back<W: WindowQuota>(quota: W) {
    let window_ns = quota.window_ns();
    let index_wrap = W::INDEX_WRAP;
    let backward_windows = quota.backward_windows();
    assert_eq!(backward_windows, W::WRAPPING_BACKWARD_WINDOWS);
    for start in [
        3,
        backward_windows + 7,
        index_wrap + 1,
        5 * index_wrap + 100,
    ] {
        let limiter = limiter(quota);
        let filled_at = fill_window(&limiter, start);
        let state = peek_at(&limiter, filled_at).state_word();
        // Up to backward_windows windows back (as far as the origin allows): still spent.
        for back in [1, 2, 1_000, backward_windows] {
            let Some(index) = start.checked_sub(back) else {
                continue;
            };
            for reading in [index * window_ns, index * window_ns + window_ns - 1] {
                let now = quota.instant(at(reading));
                assert!(!quota.is_fresh(state, now));
                assert_eq!(quota.remaining(state, now), 0);
                let decision = limiter.check_at(at(reading));
                assert!(decision.is_denied(), "back {back} from window {start}");
            }
        }
        // Within the window, earlier readings are no better either.
        assert!(limiter.check_at(at(start * window_ns)).is_denied());
        // Further back than backward_windows reads as a key idle for nearly a whole wrap.
        if let Some(index) = start.checked_sub(backward_windows + 1) {
            assert!(quota.is_fresh(state, quota.instant(at(index * window_ns))));
        }
        // The same state idle for exactly a wrap less backward_windows windows is
        // backward_windows windows back.
        let index = start + index_wrap - backward_windows;
        assert!(!quota.is_fresh(state, quota.instant(at(index * window_ns))));
    }
}

/// Asserts that a limiter whose clock steps back (by up to the quota's backward windows)
/// never admits more than the same requests on the monotonic clock the schedule meant.
pub fn assert_a_backward_step_admits_no_more_than_a_monotonic_clock<W: WindowQuota>(
    quotas: Vec<W>,
) {
    let mut rng = StdRng::seed_from_u64(9);
    for quota in quotas {
        let window_ns = quota.window_ns();
        let unit_ns = (window_ns / quota.limit()).max(1);
        let cost = quota.limit().div_ceil(20);
        for _ in 0..40 {
            let mut readings = Vec::new();
            let mut latest = rng.gen_range(0..YEAR_NS);
            for _ in 0..300 {
                if rng.gen_ratio(1, 5) {
                    // Back by at most the quota's backward windows (further back reads as
                    // idle): the whole way back to the origin for quotas whose index never
                    // wraps.
                    let back = match rng.gen_range(0..3) {
                        0 => rng.gen_range(0..=3),
                        1 => rng.gen_range(0..=2 * window_ns),
                        _ => rng.gen_range(
                            0..=documented_backward_windows(&quota).saturating_mul(window_ns),
                        ),
                    };
                    readings.push(latest.saturating_sub(back));
                } else {
                    latest += rng.gen_range(0..=unit_ns * cost * 2);
                    readings.push(latest);
                }
            }
            let stepping = limiter(quota);
            let steady = limiter(quota);
            let (mut admitted_stepping, mut admitted_steady) = (0u64, 0u64);
            for (reading, monotonic_reading) in readings.iter().zip(monotonic(&readings)) {
                if check_cost_at(&stepping, cost, *reading).is_allowed() {
                    admitted_stepping += cost;
                }
                if check_cost_at(&steady, cost, monotonic_reading).is_allowed() {
                    admitted_steady += cost;
                }
                assert!(
                    admitted_stepping <= admitted_steady,
                    "{quota:?}: {admitted_stepping} admitted with backward steps, \
                     {admitted_steady} with a monotonic clock"
                );
            }
        }
    }
}

//! Helpers shared by the test binaries; each uses a part of them. Keyed-table helpers are in
//! [`keyed`]. The per-algorithm edge-case helpers (`gcra.rs`, `sliding_window.rs`,
//! `fixed_window.rs`) are written once over [`Algorithm`]: the capacity an algorithm reports is
//! the GCRA burst or the window limit.
#![allow(dead_code)]

pub mod keyed;

use nanolimit::{
    Algorithm, Decision, InsufficientCapacity, Limiter, ManualClock, Step, TIME_HORIZON_NS,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

pub const SECOND_NS: u64 = 1_000_000_000;
pub const DAY_NS: u64 = 86_400 * SECOND_NS;
pub const YEAR_NS: u64 = 365 * DAY_NS;

/// A limiter on a fresh [`ManualClock`] at its origin.
pub fn limiter<A: Algorithm>(quota: A) -> Limiter<A, ManualClock> {
    Limiter::with_clock(quota, ManualClock::new())
}

/// Drives a limiter with a random schedule and calls `visit(limiter, now, cost, decision)` after
/// every check. The first reading is in the first year; `next` draws each following
/// `(gap_ns, cost)` from the reading so far, or ends the schedule early with `None`.
pub fn random_schedule<A: Algorithm>(
    quota: A,
    seed: u64,
    checks: usize,
    mut next: impl FnMut(&mut StdRng, u64) -> Option<(u64, u64)>,
    mut visit: impl FnMut(&Limiter<A, ManualClock>, u64, u64, &Decision<A>),
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let limiter = limiter(quota);
    let mut now = rng.gen_range(0..YEAR_NS);
    for _ in 0..checks {
        let Some((gap_ns, cost)) = next(&mut rng, now) else {
            break;
        };
        now += gap_ns;
        let decision = limiter.check_n_at(cost, now).unwrap();
        visit(&limiter, now, cost, &decision);
    }
}

/// Asserts that `decision` (a check of `cost` at `now` on `limiter`) reports an exact
/// `retry_after`: zero when allowed; when denied, positive, long enough (the same cost passes
/// after waiting it), at most `slack_ns` too long (waiting `slack_ns + 1` less is still denied),
/// and equal to the pure [`Algorithm::retry_after_ns`]. Returns the wait of a denial.
pub fn assert_retry_after_is_exact<A: Algorithm>(
    limiter: &Limiter<A, ManualClock>,
    now: u64,
    cost: u64,
    decision: &Decision<A>,
    slack_ns: u64,
) -> Option<u64> {
    let quota = limiter.policy();
    if decision.is_allowed() {
        assert_eq!(decision.retry_after(), Duration::ZERO);
        return None;
    }
    let wait = decision.retry_after().as_nanos() as u64;
    assert!(wait > 0, "{quota:?}: denied at {now} with no wait");
    assert!(
        limiter.peek_n_at(cost, now + wait).unwrap().is_allowed(),
        "{quota:?}: cost {cost} denied at {now}, still denied after retry_after {wait} ns"
    );
    if wait > slack_ns {
        assert!(
            limiter
                .peek_n_at(cost, now + wait - slack_ns - 1)
                .unwrap()
                .is_denied(),
            "{quota:?}: cost {cost} denied at {now}, retry_after {wait} ns is more than \
             {slack_ns} ns too long"
        );
    }
    let state = decision.state_word();
    assert_eq!(quota.retry_after_ns(state, quota.instant(now), cost), wait);
    Some(wait)
}

/// Asserts that waiting `decision`'s `reset_after` from `now` restores the whole capacity, and
/// that the state is not yet fresh `slack_ns + 1` sooner. Returns the wait.
pub fn assert_reset_after_restores_the_capacity<A: Algorithm>(
    limiter: &Limiter<A, ManualClock>,
    now: u64,
    decision: &Decision<A>,
    slack_ns: u64,
) -> u64 {
    let quota = limiter.policy();
    let wait = decision.reset_after().as_nanos() as u64;
    let state = decision.state_word();
    assert_eq!(limiter.peek_at(now + wait).remaining(), quota.capacity());
    if wait > slack_ns {
        let sooner = quota.instant(now + wait - slack_ns - 1);
        assert!(!quota.is_fresh(state, sooner), "{quota:?} at {now}+{wait}");
    }
    wait
}

/// Asserts that `remaining` at `now_ns` counts exactly the unit requests that pass on `state`: a
/// cost of `remaining` passes and one more does not.
pub fn assert_remaining_matches_step<A: Algorithm>(
    quota: &A,
    state: u64,
    now_ns: u64,
    remaining: u64,
) {
    let instant = quota.instant(now_ns);
    if remaining > 0 {
        assert!(matches!(
            quota.step(state, instant, remaining),
            Step::Allow(_)
        ));
    }
    if remaining < quota.capacity() {
        assert_eq!(quota.step(state, instant, remaining + 1), Step::Deny);
    }
}

/// Asserts that a fresh state admits the whole capacity at any reading, from the origin to
/// `u64::MAX`, with nothing to wait for.
pub fn assert_a_fresh_state_admits_the_capacity<A: Algorithm>(quota: &A) {
    let capacity = quota.capacity();
    for now_ns in [0, 1, SECOND_NS, 10 * YEAR_NS, TIME_HORIZON_NS, u64::MAX] {
        let now = quota.instant(now_ns);
        assert!(
            matches!(quota.step(A::FRESH, now, capacity), Step::Allow(_)),
            "{quota:?} at {now_ns}"
        );
        assert!(quota.is_fresh(A::FRESH, now));
        assert_eq!(quota.remaining(A::FRESH, now), capacity);
        assert_eq!(quota.reset_after_ns(A::FRESH, now), 0);
        assert_eq!(quota.retry_after_ns(A::FRESH, now, capacity), 0);
    }
}

/// Asserts that a fresh limiter admits the whole capacity at once at `now_ns`, and then nothing.
pub fn assert_a_fresh_limiter_admits_the_capacity_once<A: Algorithm>(quota: A, now_ns: u64) {
    let limiter = limiter(quota);
    let decision = limiter.check_n_at(quota.capacity(), now_ns).unwrap();
    assert!(decision.is_allowed());
    assert_eq!(decision.remaining(), 0);
    assert!(limiter.check_at(now_ns).is_denied());
}

/// Asserts, on a fresh `limiter` whose capacity is 4, that a cost of 5 is an error (not a
/// denial) that consumes nothing, both when the capacity is there and once it is spent. Returns
/// the `retry_after` of the denial of the whole capacity once spent.
pub fn assert_a_cost_above_a_capacity_of_four_is_an_error<A: Algorithm>(
    limiter: &Limiter<A, ManualClock>,
) -> Duration {
    assert_eq!(limiter.policy().capacity(), 4);
    let too_much = InsufficientCapacity {
        cost: 5,
        capacity: 4,
    };
    // On a fresh state, where a denial is impossible for any cost up to the capacity.
    assert_eq!(limiter.check_n_at(5, 0).unwrap_err(), too_much);
    assert_eq!(limiter.peek_n_at(5, 0).unwrap_err(), too_much);
    // The error consumed nothing.
    assert!(limiter.check_n_at(4, 0).unwrap().is_allowed());
    // Once spent, the capacity is denied (not an error), and a larger cost is still an error.
    let denied = limiter.check_n_at(4, 0).unwrap();
    assert!(denied.is_denied());
    assert_eq!(limiter.check_n_at(5, 0).unwrap_err(), too_much);
    denied.retry_after()
}

/// Asserts that the pure step denies each of `costs` (all above the capacity) on each of
/// `states` at the origin, without panicking.
pub fn assert_the_step_denies_costs_above_the_capacity<A: Algorithm>(
    quota: &A,
    states: &[u64],
    costs: &[u64],
) {
    for &state in states {
        for &cost in costs {
            assert!(cost > quota.capacity());
            assert_eq!(quota.step(state, quota.instant(0), cost), Step::Deny);
        }
    }
}

/// Asserts, on a fresh `limiter` whose capacity is 2, that once spent a cost of zero still
/// passes, reports nothing remaining and no wait, and changes nothing. Returns the denial that
/// found it spent.
pub fn assert_a_cost_of_zero_on_a_spent_limiter_changes_nothing<A: Algorithm>(
    limiter: &Limiter<A, ManualClock>,
) -> Decision<A> {
    assert_eq!(limiter.policy().capacity(), 2);
    assert!(limiter.check_n_at(2, 0).unwrap().is_allowed());
    let spent = limiter.check_at(0);
    assert!(spent.is_denied());
    let zero = limiter.check_n_at(0, 0).unwrap();
    assert!(zero.is_allowed());
    assert_eq!(zero.retry_after(), Duration::ZERO);
    assert_eq!(zero.remaining(), 0);
    assert_eq!(zero.state_word(), spent.state_word());
    assert!(limiter.check_at(0).is_denied());
    spent
}

/// Calls every pure method on (`state`, `now`), with costs from zero past the capacity: none may
/// panic.
pub fn call_every_method<A: Algorithm>(quota: &A, state: u64, now: A::Instant) {
    let capacity = quota.capacity();
    for cost in [0, 1, capacity, capacity + 1, u64::MAX] {
        let _ = quota.step(state, now, cost);
    }
    let _ = quota.remaining(state, now);
    let _ = quota.reset_after_ns(state, now);
    let _ = quota.is_fresh(state, now);
    for cost in [0, 1, capacity] {
        let _ = quota.retry_after_ns(state, now, cost);
    }
}

/// Replaces each reading by the latest one so far: the monotonic clock the schedule meant.
pub fn monotonic(readings: &[u64]) -> Vec<u64> {
    let mut latest = 0;
    readings
        .iter()
        .map(|&reading| {
            latest = latest.max(reading);
            latest
        })
        .collect()
}

/// What the fixed- and sliding-window tests share: their quotas count per window and store a
/// wrapping window index above the counts.
// gcra.rs uses none of this module.
#[allow(dead_code)]
pub mod window {
    use super::{limiter, monotonic, random_schedule, SECOND_NS, YEAR_NS};
    use nanolimit::{
        fixed_window, sliding_window, Algorithm, Clock, Decision, FixedWindow, Limiter,
        ManualClock, QuotaError, SlidingWindow, Step, WindowInstant, TIME_HORIZON_NS,
    };
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::time::Duration;

    /// Clock readings at the edges: the origin, near and past the time horizon, the largest value.
    pub const EXTREME_READINGS_NS: [u64; 6] = [
        0,
        1,
        TIME_HORIZON_NS - 1,
        TIME_HORIZON_NS,
        1 << 62,
        u64::MAX,
    ];

    /// A window quota, its constructors and bounds, and the layout of its state word.
    pub trait WindowQuota: Algorithm<Instant = WindowInstant> + PartialEq {
        /// The largest limit per window.
        const MAX_LIMIT: u64;
        /// The shortest window.
        const MIN_WINDOW_NS: u64;
        /// The bit where the stored window index starts.
        const WINDOW_INDEX_SHIFT: u32;
        /// The stored window index's mask (after shifting down).
        const WINDOW_INDEX_MASK: u64;
        /// For quotas whose index wraps, how many windows back a reading still counts as
        /// behind the stored window.
        const BACKWARD_WINDOWS: u64;

        /// `limit` per `window`.
        fn new(limit: u64, window: Duration) -> Result<Self, QuotaError>;
        /// `limit` per second.
        fn per_second(limit: u64) -> Result<Self, QuotaError>;
        /// `limit` per minute.
        fn per_minute(limit: u64) -> Result<Self, QuotaError>;
        /// `limit` per hour.
        fn per_hour(limit: u64) -> Result<Self, QuotaError>;
        /// The limit per window.
        fn limit(&self) -> u64;
        /// The window length.
        fn window(&self) -> Duration;
        /// How many windows back a reading still counts as behind the stored window, for this
        /// quota.
        fn backward_windows(&self) -> u64;

        /// The window length in nanoseconds.
        fn window_ns(&self) -> u64 {
            self.window().as_nanos() as u64
        }

        /// The window index stored in a state word.
        fn stored_index(state: u64) -> u64 {
            state >> Self::WINDOW_INDEX_SHIFT
        }
    }

    /// Implements [`WindowQuota`] for a window quota type from the constants of its module.
    macro_rules! window_quota {
        ($quota:ident, $module:ident) => {
            impl WindowQuota for $quota {
                const MAX_LIMIT: u64 = $module::MAX_LIMIT;
                const MIN_WINDOW_NS: u64 = $module::MIN_WINDOW_NS;
                const WINDOW_INDEX_SHIFT: u32 = $module::WINDOW_INDEX_SHIFT;
                const WINDOW_INDEX_MASK: u64 = $module::WINDOW_INDEX_MASK;
                const BACKWARD_WINDOWS: u64 = $module::BACKWARD_WINDOWS;

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
                fn limit(&self) -> u64 {
                    $quota::limit(self)
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

    window_quota!(FixedWindow, fixed_window);
    window_quota!(SlidingWindow, sliding_window);

    /// Asserts that each invalid window quota is rejected with its own error (`too_short_ns`
    /// lists windows below the shortest), and that the extremes themselves are accepted.
    /// Returns the quota with the longest window.
    pub fn assert_every_invalid_window_quota_is_rejected<W: WindowQuota>(
        too_short_ns: &[u64],
    ) -> W {
        let (max_limit, min_window_ns) = (W::MAX_LIMIT, W::MIN_WINDOW_NS);
        assert_eq!(W::per_second(0), Err(QuotaError::ZeroBurst));
        assert_eq!(
            W::per_minute(max_limit + 1),
            Err(QuotaError::BurstTooLarge {
                requested: max_limit + 1,
                max: max_limit
            })
        );
        assert_eq!(
            W::per_hour(u64::MAX),
            Err(QuotaError::BurstTooLarge {
                requested: u64::MAX,
                max: max_limit
            })
        );
        assert_eq!(W::new(5, Duration::ZERO), Err(QuotaError::ZeroPeriod));
        for &too_short in too_short_ns {
            assert!(too_short < min_window_ns);
            assert_eq!(
                W::new(5, Duration::from_nanos(too_short)),
                Err(QuotaError::WindowTooShort {
                    min_ns: min_window_ns
                })
            );
        }
        let period_too_long = Err(QuotaError::PeriodTooLong {
            max_ns: TIME_HORIZON_NS,
        });
        assert_eq!(
            W::new(5, Duration::from_nanos(TIME_HORIZON_NS + 1)),
            period_too_long
        );
        assert_eq!(W::new(5, Duration::MAX), period_too_long);
        // The extremes themselves are accepted.
        let shortest = W::new(max_limit, Duration::from_nanos(min_window_ns)).unwrap();
        assert_eq!(shortest.limit(), max_limit);
        assert_eq!(shortest.capacity(), max_limit);
        assert_eq!(shortest.window(), Duration::from_nanos(min_window_ns));
        let longest = W::new(1, Duration::from_nanos(TIME_HORIZON_NS)).unwrap();
        assert_eq!(longest.window(), Duration::from_nanos(TIME_HORIZON_NS));
        assert!(limiter(longest).check_at(u64::MAX).is_allowed());
        longest
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
        let limit = quota.capacity();
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
        let quota = limiter.policy();
        let at = index * quota.window_ns() + quota.window_ns() / 3;
        assert!(limiter
            .check_n_at(quota.capacity(), at)
            .unwrap()
            .is_allowed());
        at
    }

    /// How many windows a reading may lag behind a stored window and still be read as behind it,
    /// as the module documentation states it: for quotas whose last window index before the
    /// time horizon leaves `BACKWARD_WINDOWS` to spare in the index mask (no wrap), everything
    /// the mask leaves above that last index; else `BACKWARD_WINDOWS`.
    pub fn documented_backward_windows<W: WindowQuota>(quota: &W) -> u64 {
        let last_index = TIME_HORIZON_NS / quota.window_ns();
        if last_index < W::WINDOW_INDEX_MASK - W::BACKWARD_WINDOWS {
            W::WINDOW_INDEX_MASK - last_index
        } else {
            W::BACKWARD_WINDOWS
        }
    }

    /// Asserts that quotas of each window length report the `backward_windows` given with it
    /// (figures computed independently of the crate).
    pub fn assert_backward_windows_are<W: WindowQuota>(cases: &[(Duration, u64)]) {
        for &(window, backward_windows) in cases {
            let quota = W::new(5, window).unwrap();
            assert_eq!(quota.backward_windows(), backward_windows, "{window:?}");
        }
    }

    /// Asserts that `backward_windows` is the documented figure for every quota, and that a
    /// spent window read at readings behind it, down to the origin where the quota's index
    /// never wraps, stays spent and is never overwritten by a smaller word.
    pub fn assert_a_reading_behind_the_stored_window_grants_nothing<W: WindowQuota>(
        quotas: Vec<W>,
    ) {
        let mut never_wrapping = 0;
        for quota in quotas {
            let backward_windows = documented_backward_windows(&quota);
            assert_eq!(quota.backward_windows(), backward_windows, "{quota:?}");
            let window_ns = quota.window_ns();
            let last_index = TIME_HORIZON_NS / window_ns;
            if last_index < W::WINDOW_INDEX_MASK - W::BACKWARD_WINDOWS {
                never_wrapping += 1;
                assert!(backward_windows >= last_index.min(W::BACKWARD_WINDOWS));
            }
            // A window late in the horizon, spent.
            let start = last_index - 2;
            let limiter = limiter(quota);
            let filled_at = fill_window(&limiter, start);
            let state = limiter.peek_at(filled_at).state_word();
            for back in [
                1,
                2,
                3,
                1_000,
                start,
                backward_windows / 2,
                backward_windows,
            ] {
                let Some(index) = start.checked_sub(back).filter(|_| back <= backward_windows)
                else {
                    continue;
                };
                for at in [index * window_ns, index * window_ns + window_ns / 2] {
                    let now = quota.instant(at);
                    assert!(!quota.is_fresh(state, now), "{quota:?}: {back} back");
                    assert_eq!(quota.remaining(state, now), 0, "{quota:?}: {back} back");
                    assert!(
                        quota.retry_after_ns(state, now, 1)
                            >= back.saturating_sub(1).saturating_mul(window_ns),
                        "{quota:?}: {back} back"
                    );
                    assert!(limiter.check_at(at).is_denied(), "{quota:?}: {back} back");
                    assert_eq!(limiter.peek_at(filled_at).state_word(), state);
                }
            }
            // One window further back is the documented limit: it reads as a key idle for a
            // very long time.
            if let Some(index) = start.checked_sub(backward_windows + 1) {
                assert!(
                    quota.is_fresh(state, quota.instant(index * window_ns)),
                    "{quota:?}"
                );
            }
        }
        assert!(never_wrapping > 0, "no quota whose index never wraps");
    }

    /// Asserts that a written state word is greater than the one it replaces unless the window
    /// index wrapped: the reading is in a later window than the stored one (by absolute index,
    /// which the test knows) and the new index's stored residue is smaller. A reading behind
    /// the stored window, by as many windows as the quota reads as behind, never makes the word
    /// smaller. Both kinds of reading, and wraps, must be exercised.
    pub fn assert_a_written_state_grows_unless_the_index_wrapped<W: WindowQuota>(quotas: Vec<W>) {
        let mut rng = StdRng::seed_from_u64(7);
        let (mut wrapped, mut behind) = (0, 0);
        for quota in quotas {
            let window_ns = quota.window_ns();
            let limit = quota.capacity();
            let backward_windows = documented_backward_windows(&quota);
            let backward_ns = backward_windows.saturating_mul(window_ns);
            for _ in 0..20_000 {
                let now_ns = rng.gen_range(0..=TIME_HORIZON_NS);
                let now = quota.instant(now_ns);
                // A state written a few windows before or after now, or at any time at most the
                // quota's backward windows after now (any time at all for quotas whose index
                // never wraps).
                let written_at = match rng.gen_range(0..3) {
                    0 => now_ns.saturating_sub(rng.gen_range(0..=3 * window_ns)),
                    1 => now_ns + rng.gen_range(0..=3 * window_ns),
                    _ => rng.gen_range(0..=now_ns.saturating_add(backward_ns).min(TIME_HORIZON_NS)),
                };
                let written_index = quota.instant(written_at).window_index();
                if written_index > now.window_index() {
                    let lag = written_index - now.window_index();
                    if lag > backward_windows {
                        continue;
                    }
                }
                let mut state = W::FRESH;
                for _ in 0..rng.gen_range(0..3) {
                    let cost = rng.gen_range(1..=limit);
                    if let Step::Allow(next) = quota.step(state, quota.instant(written_at), cost) {
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
                // window than the stored one, and its stored residue is smaller.
                wrapped += 1;
                assert!(
                    now.window_index() > written_index,
                    "{quota:?}: {state:#x} -> {written:#x} at a reading {} windows behind",
                    written_index - now.window_index()
                );
                let now_index = now.window_index() & W::WINDOW_INDEX_MASK;
                assert!(
                    now_index < W::stored_index(state),
                    "{quota:?}: {state:#x} -> {written:#x}"
                );
                assert_eq!(W::stored_index(written), now_index);
            }
        }
        assert!(wrapped > 0, "no wrapped index was exercised");
        assert!(
            behind > 0,
            "no reading behind a stored window was exercised"
        );
    }

    /// Calls every pure method on the edge states and random ones, at extreme and random
    /// readings: none may panic.
    pub fn assert_no_input_makes_a_step_panic<W: WindowQuota>(quotas: Vec<W>) {
        let mut rng = StdRng::seed_from_u64(8);
        for quota in quotas {
            let mut states: Vec<u64> = vec![0, 1, u64::MAX, u64::MAX - 1, W::WINDOW_INDEX_MASK];
            states.extend((0..200).map(|_| rng.gen::<u64>()));
            let mut readings: Vec<u64> = EXTREME_READINGS_NS.to_vec();
            readings.extend((0..200).map(|_| rng.gen::<u64>()));
            for &state in &states {
                for &reading in &readings {
                    super::call_every_method(&quota, state, quota.instant(reading));
                }
            }
        }
    }

    /// Asserts that readings past the time horizon are clamped to it and that a limiter there
    /// admits one window's limit and then denies, whatever the clock does. Returns the clock,
    /// advanced as far as it goes.
    pub fn assert_readings_past_the_horizon_are_clamped<W: WindowQuota>(quota: W) -> ManualClock {
        let at_horizon = quota.instant(TIME_HORIZON_NS);
        for past in [TIME_HORIZON_NS + 1, 1 << 60, u64::MAX] {
            assert_eq!(quota.instant(past), at_horizon);
        }
        assert_eq!(
            (at_horizon.window_index(), at_horizon.elapsed_ns()),
            (
                TIME_HORIZON_NS / quota.window_ns(),
                TIME_HORIZON_NS % quota.window_ns(),
            )
        );
        let clock = ManualClock::starting_at(TIME_HORIZON_NS);
        let limiter = Limiter::with_clock(quota, clock.clone());
        assert!(limiter.check_n(quota.capacity()).unwrap().is_allowed());
        for step_ns in [1, SECOND_NS, YEAR_NS, u64::MAX] {
            clock.advance_ns(step_ns);
            let decision = limiter.check();
            assert!(decision.is_denied(), "{quota:?} at {}", clock.now_ns());
            let _ = decision.headers();
        }
        clock
    }

    /// Asserts that a limiter shifted by ten years of whole windows decides exactly as one at the
    /// origin, over a random schedule seeded with `seed`.
    pub fn assert_ten_years_later_behaves_as_at_the_origin<W: WindowQuota>(quota: W, seed: u64) {
        let window_ns = quota.window_ns();
        let limit = quota.capacity();
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
            let expected = origin.check_n_at(cost, now).unwrap();
            let actual = shifted.check_n_at(cost, offset + now).unwrap();
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

    /// Asserts that a full window read up to `BACKWARD_WINDOWS` windows earlier (a clock that
    /// stepped back) is still spent, further back reads as idle, and an index that aliases one
    /// `BACKWARD_WINDOWS` back after a wrap is not fresh either.
    pub fn assert_an_index_ahead_of_now_is_a_clock_that_stepped_back<W: WindowQuota>(quota: W) {
        let window_ns = quota.window_ns();
        let index_wrap = W::WINDOW_INDEX_MASK + 1;
        let backward_windows = W::BACKWARD_WINDOWS;
        for start in [
            3,
            backward_windows + 7,
            index_wrap + 1,
            5 * index_wrap + 100,
        ] {
            let limiter = limiter(quota);
            let filled_at = fill_window(&limiter, start);
            let state = limiter.peek_at(filled_at).state_word();
            // Up to BACKWARD_WINDOWS windows back (as far as the origin allows): still spent.
            for back in [1, 2, 1_000, backward_windows] {
                let Some(index) = start.checked_sub(back) else {
                    continue;
                };
                for at in [index * window_ns, index * window_ns + window_ns - 1] {
                    let now = quota.instant(at);
                    assert!(!quota.is_fresh(state, now));
                    assert_eq!(quota.remaining(state, now), 0);
                    let decision = limiter.check_at(at);
                    assert!(decision.is_denied(), "back {back} from window {start}");
                }
            }
            // Within the window, earlier readings are no better either.
            assert!(limiter.check_at(start * window_ns).is_denied());
            // Further back than BACKWARD_WINDOWS reads as a key idle for nearly a whole wrap.
            if let Some(index) = start.checked_sub(backward_windows + 1) {
                assert!(quota.is_fresh(state, quota.instant(index * window_ns)));
            }
            // The same state idle for exactly a wrap less BACKWARD_WINDOWS windows is
            // BACKWARD_WINDOWS windows back.
            let index = start + index_wrap - backward_windows;
            assert!(!quota.is_fresh(state, quota.instant(index * window_ns)));
        }
    }

    /// Asserts that a limiter whose clock steps back (by up to `BACKWARD_WINDOWS` windows) never
    /// admits more than the same requests on the monotonic clock the schedule meant.
    pub fn assert_a_backward_step_admits_no_more_than_a_monotonic_clock<W: WindowQuota>(
        quotas: Vec<W>,
    ) {
        let mut rng = StdRng::seed_from_u64(9);
        for quota in quotas {
            let window_ns = quota.window_ns();
            let unit_ns = (window_ns / quota.capacity()).max(1);
            let cost = quota.capacity().div_ceil(20);
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
                    if stepping.check_n_at(cost, *reading).unwrap().is_allowed() {
                        admitted_stepping += cost;
                    }
                    if steady
                        .check_n_at(cost, monotonic_reading)
                        .unwrap()
                        .is_allowed()
                    {
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
}

//! White-box tests of the quotas: properties that need the packed state layouts, which are
//! internal to the crate.

use super::fixed_window as fixed;
use super::sliding_window as sliding;
use super::{FixedWindow, Quota, SlidingWindow, Step, WindowInstant};
use crate::clock::Timestamp;
use core::time::Duration;

const HORIZON_NS: u64 = Timestamp::HORIZON.as_ns();
const SECOND_NS: u64 = 1_000_000_000;

fn at(ns: u64) -> Timestamp {
    Timestamp::from_ns(ns).unwrap()
}

/// A small xorshift generator: deterministic, and enough to spread test inputs.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..=max`.
    fn up_to(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(bound) => self.next() % bound,
            None => self.next(),
        }
    }
}

/// A window quota and the layout of its state word.
trait Layout: Quota<Instant = WindowInstant> {
    const WINDOW_INDEX_SHIFT: u32;
    const WINDOW_INDEX_MASK: u64;
    const BACKWARD_WINDOWS: u64;
    /// The count fields: (shift, mask) of each.
    const COUNT_FIELDS: &'static [(u32, u64)];

    fn new(limit: u64, window: Duration) -> Self;
    fn window_ns(&self) -> u64;
    fn backward_windows(&self) -> u64;

    fn stored_index(word: u64) -> u64 {
        word >> Self::WINDOW_INDEX_SHIFT
    }

    /// The count of the window a word was written in (the current count).
    fn stored_count(word: u64) -> u64 {
        let (shift, mask) = Self::COUNT_FIELDS[0];
        (word >> shift) & mask
    }
}

impl Layout for SlidingWindow {
    const WINDOW_INDEX_SHIFT: u32 = sliding::WINDOW_INDEX_SHIFT;
    const WINDOW_INDEX_MASK: u64 = sliding::WINDOW_INDEX_MASK;
    const BACKWARD_WINDOWS: u64 = sliding::BACKWARD_WINDOWS;
    const COUNT_FIELDS: &'static [(u32, u64)] = &[
        (sliding::CURRENT_COUNT_SHIFT, sliding::COUNT_MASK),
        (sliding::PREVIOUS_COUNT_SHIFT, sliding::COUNT_MASK),
    ];

    fn new(limit: u64, window: Duration) -> Self {
        SlidingWindow::new(limit, window).unwrap()
    }
    fn window_ns(&self) -> u64 {
        self.window().as_nanos() as u64
    }
    fn backward_windows(&self) -> u64 {
        SlidingWindow::backward_windows(self)
    }
}

impl Layout for FixedWindow {
    const WINDOW_INDEX_SHIFT: u32 = fixed::WINDOW_INDEX_SHIFT;
    const WINDOW_INDEX_MASK: u64 = fixed::WINDOW_INDEX_MASK;
    const BACKWARD_WINDOWS: u64 = fixed::BACKWARD_WINDOWS;
    const COUNT_FIELDS: &'static [(u32, u64)] = &[(fixed::COUNT_SHIFT, fixed::COUNT_MASK)];

    fn new(limit: u64, window: Duration) -> Self {
        FixedWindow::new(limit, window).unwrap()
    }
    fn window_ns(&self) -> u64 {
        self.window().as_nanos() as u64
    }
    fn backward_windows(&self) -> u64 {
        FixedWindow::backward_windows(self)
    }
}

/// Asserts that the fields of a layout are disjoint and fill the word.
fn assert_the_fields_fill_the_word<L: Layout>() {
    let mut covered = L::WINDOW_INDEX_MASK << L::WINDOW_INDEX_SHIFT;
    let mut bits = L::WINDOW_INDEX_MASK.count_ones();
    assert_eq!(covered >> L::WINDOW_INDEX_SHIFT, L::WINDOW_INDEX_MASK);
    for &(shift, mask) in L::COUNT_FIELDS {
        assert_eq!(covered & (mask << shift), 0, "overlapping fields");
        covered |= mask << shift;
        bits += mask.count_ones();
    }
    assert_eq!((covered, bits), (u64::MAX, 64));
}

#[test]
fn the_sliding_window_layout_is_the_documented_one() {
    assert_the_fields_fill_the_word::<SlidingWindow>();
    assert_eq!(sliding::COUNT_BITS, 20);
    assert_eq!(
        (sliding::CURRENT_COUNT_SHIFT, sliding::PREVIOUS_COUNT_SHIFT),
        (0, 20)
    );
    assert_eq!(sliding::WINDOW_INDEX_SHIFT, 40);
    assert_eq!(sliding::WINDOW_INDEX_BITS, 24);
    // The public facts the layout stands behind.
    assert_eq!(sliding::WINDOW_INDEX_MASK + 1, 1 << 24);
    assert_eq!(sliding::BACKWARD_WINDOWS, 1 << 16);
    assert_eq!(sliding::MAX_LIMIT, SlidingWindow::MAX_LIMIT);
    assert_eq!(sliding::MAX_LIMIT, sliding::COUNT_MASK - 15);
    assert_eq!(
        Duration::from_nanos(sliding::MIN_WINDOW_NS),
        SlidingWindow::MIN_WINDOW
    );
}

#[test]
fn the_fixed_window_layout_is_the_documented_one() {
    assert_the_fields_fill_the_word::<FixedWindow>();
    assert_eq!(fixed::COUNT_BITS, 24);
    assert_eq!(fixed::COUNT_SHIFT, 0);
    assert_eq!(fixed::WINDOW_INDEX_SHIFT, 24);
    // The public facts the layout stands behind.
    assert_eq!(fixed::WINDOW_INDEX_MASK + 1, 1 << 40);
    assert_eq!(fixed::BACKWARD_WINDOWS, 1 << 30);
    assert_eq!(fixed::MAX_LIMIT, FixedWindow::MAX_LIMIT);
    assert_eq!(fixed::MAX_LIMIT, fixed::COUNT_MASK - 15);
    assert_eq!(
        Duration::from_nanos(fixed::MIN_WINDOW_NS),
        FixedWindow::MIN_WINDOW
    );
}

/// Asserts that `backward_windows` is what the layout leaves: the whole index range above the
/// last window before the horizon when that leaves `BACKWARD_WINDOWS` to spare (no wrap), else
/// `BACKWARD_WINDOWS`; checked on both sides of the window length where indices stop wrapping.
fn assert_backward_windows_follow_from_the_layout<L: Layout>(windows_ns: &[u64]) {
    let wrapping_split = L::WINDOW_INDEX_MASK - L::BACKWARD_WINDOWS;
    // The shortest window whose last index is below the split: indices never wrap from there.
    let threshold_ns = HORIZON_NS / wrapping_split + 1;
    assert!(HORIZON_NS / threshold_ns < wrapping_split);
    assert!(HORIZON_NS / (threshold_ns - 1) >= wrapping_split);
    let mut cases = windows_ns.to_vec();
    cases.extend([threshold_ns - 1, threshold_ns, threshold_ns + 1, HORIZON_NS]);
    for window_ns in cases {
        let quota = L::new(1, Duration::from_nanos(window_ns));
        let last_index = HORIZON_NS / window_ns;
        let expected = if last_index < wrapping_split {
            L::WINDOW_INDEX_MASK - last_index
        } else {
            L::BACKWARD_WINDOWS
        };
        assert_eq!(quota.backward_windows(), expected, "{window_ns} ns");
        assert!(quota.backward_windows() >= L::BACKWARD_WINDOWS);
    }
}

#[test]
fn backward_windows_follow_from_the_layout() {
    assert_backward_windows_follow_from_the_layout::<SlidingWindow>(&[
        1_000_000,
        SECOND_NS,
        34_500_000_000,
        60 * SECOND_NS,
        3_600 * SECOND_NS,
    ]);
    assert_backward_windows_follow_from_the_layout::<FixedWindow>(&[
        1_000, 530_000, 1_000_000, SECOND_NS,
    ]);
}

/// Asserts, for states written a few windows before or after a random reading (or at most the
/// quota's backward windows after it), what the written word stores: now's window index modulo
/// the wrap, or (for a reading behind the stored window) the stored index again; the count of
/// the window it is judged in plus the cost; never a count above the limit; and a smaller word
/// than the one replaced only when the index wrapped. Readings behind, wraps, and keys idle for
/// nearly a whole wrap (which alias a reading behind, as documented) must all be exercised.
fn assert_written_words_store_the_window_index_modulo_the_wrap<L: Layout>(quotas: &[L]) {
    let mut rng = Xorshift(0x5eed_0001);
    let (mut wrapped, mut behind, mut aliased) = (0, 0, 0);
    for quota in quotas {
        let window_ns = quota.window_ns();
        let limit = quota.limit();
        let backward_windows = quota.backward_windows();
        let backward_ns = backward_windows.saturating_mul(window_ns);
        for _ in 0..20_000 {
            let now_ns = rng.up_to(HORIZON_NS);
            let now = quota.instant(at(now_ns));
            let written_at = match rng.up_to(2) {
                0 => now_ns.saturating_sub(rng.up_to(3 * window_ns)),
                1 => (now_ns + rng.up_to(3 * window_ns)).min(HORIZON_NS),
                _ => rng.up_to(now_ns.saturating_add(backward_ns).min(HORIZON_NS)),
            };
            let written_index = quota.instant(at(written_at)).window_index();
            let reading_is_behind = written_index > now.window_index();
            if reading_is_behind && written_index - now.window_index() > backward_windows {
                continue;
            }
            let mut state = L::FRESH;
            for _ in 0..rng.up_to(2) {
                let cost = 1 + rng.up_to(limit - 1);
                if let Step::Allow(next) = quota.step(state, quota.instant(at(written_at)), cost) {
                    state = next;
                }
            }
            let cost = 1 + rng.up_to(limit - 1);
            let Step::Allow(written) = quota.step(state, now, cost) else {
                continue;
            };
            let context = format!("{quota:?}: {state:#x} -> {written:#x} at {now_ns}");
            for &(shift, mask) in L::COUNT_FIELDS {
                assert!((written >> shift) & mask <= limit, "{context}");
            }
            let now_index = now.window_index() & L::WINDOW_INDEX_MASK;
            // The quota tells a reading behind the stored window by the residues alone: a key
            // idle for nearly a whole wrap aliases one (documented), any reading behind by at
            // most `backward_windows` is one.
            let distance = now_index.wrapping_sub(L::stored_index(state)) & L::WINDOW_INDEX_MASK;
            let read_as_behind =
                state != L::FRESH && distance > L::WINDOW_INDEX_MASK - backward_windows;
            if state != L::FRESH && reading_is_behind {
                assert!(read_as_behind, "{context}");
            }
            if read_as_behind && !reading_is_behind {
                aliased += 1;
                let idle = now.window_index() - written_index;
                assert!(
                    idle > L::WINDOW_INDEX_MASK - backward_windows,
                    "{context}: idle for {idle} windows"
                );
            }
            if read_as_behind {
                behind += 1;
                // Judged in the stored window: the same index, its count plus the cost.
                assert_eq!(
                    L::stored_index(written),
                    L::stored_index(state),
                    "{context}"
                );
                assert_eq!(
                    L::stored_count(written),
                    L::stored_count(state) + cost,
                    "{context}"
                );
            } else {
                assert_eq!(L::stored_index(written), now_index, "{context}");
                if state != L::FRESH && written_index == now.window_index() {
                    assert_eq!(
                        L::stored_count(written),
                        L::stored_count(state) + cost,
                        "{context}"
                    );
                }
            }
            if written > state {
                continue;
            }
            // Only a window index that wrapped may make the word smaller.
            wrapped += 1;
            assert!(now.window_index() > written_index, "{context}");
            assert!(now_index < L::stored_index(state), "{context}");
        }
    }
    assert!(wrapped > 0, "no wrapped index was exercised");
    assert!(
        behind > 0,
        "no reading behind a stored window was exercised"
    );
    assert!(
        aliased > 0,
        "no key idle for nearly a whole wrap was exercised"
    );
}

#[test]
fn written_sliding_window_words_store_the_window_index_modulo_2_pow_24() {
    let quotas: Vec<SlidingWindow> = [
        (1, SECOND_NS),
        (10, SECOND_NS),
        (100, 60 * SECOND_NS),
        (7, 1_000_000),
        (sliding::MAX_LIMIT, 1_000_000),
        (1_000, 1_000_000_007),
        (3, 3_600 * SECOND_NS),
    ]
    .into_iter()
    .map(|(limit, window_ns)| {
        <SlidingWindow as Layout>::new(limit, Duration::from_nanos(window_ns))
    })
    .collect();
    assert_written_words_store_the_window_index_modulo_the_wrap(&quotas);
}

#[test]
fn written_fixed_window_words_store_the_window_index_modulo_2_pow_40() {
    let quotas: Vec<FixedWindow> = [
        (1, SECOND_NS),
        (100, 60 * SECOND_NS),
        (7, 1_000),
        (fixed::MAX_LIMIT, 1_000),
        (3, 1_000_000),
        (1_000, 1_000_000_007),
    ]
    .into_iter()
    .map(|(limit, window_ns)| <FixedWindow as Layout>::new(limit, Duration::from_nanos(window_ns)))
    .collect();
    assert_written_words_store_the_window_index_modulo_the_wrap(&quotas);
}

/// Words at the limits of each field (counts no step writes, indices at the mask, an index with
/// no count), at the origin, at window boundaries and at the horizon: no method panics, a cost
/// above the limit is denied, no slot marker is written, and a count above the limit leaves
/// nothing remaining in its window.
fn assert_words_at_the_field_limits_are_handled<L: Layout>(quotas: &[L]) {
    let index_field = L::WINDOW_INDEX_MASK << L::WINDOW_INDEX_SHIFT;
    let mut states = vec![
        0,
        u64::MAX,
        u64::MAX - 1,
        1 << L::WINDOW_INDEX_SHIFT,
        index_field,
        (L::WINDOW_INDEX_MASK - 1) << L::WINDOW_INDEX_SHIFT,
    ];
    for &(shift, mask) in L::COUNT_FIELDS {
        states.extend([mask << shift, index_field | (mask << shift), 1 << shift]);
    }
    for quota in quotas {
        let limit = quota.limit();
        let window_ns = quota.window_ns();
        let readings = [
            0,
            1,
            window_ns - 1,
            window_ns,
            HORIZON_NS / window_ns * window_ns,
            HORIZON_NS - 1,
            HORIZON_NS,
        ];
        for &state in &states {
            // A "burst then never" window ends past the horizon, where no reading is made.
            for now_ns in readings.into_iter().filter(|&ns| ns <= HORIZON_NS) {
                let now = quota.instant(at(now_ns));
                for cost in [0, 1, limit, limit + 1, u64::MAX] {
                    match quota.step(state, now, cost) {
                        Step::Allow(word) => {
                            assert!(cost <= limit, "{quota:?}: {state:#x}, cost {cost}");
                            assert!(word < u64::MAX - 1);
                        }
                        Step::Deny => {}
                    }
                }
                let remaining = quota.remaining(state, now);
                assert!(remaining <= limit);
                let _ = quota.reset_after_ns(state, now);
                let _ = quota.is_fresh(state, now);
                for cost in [0, 1, limit] {
                    let _ = quota.retry_after_ns(state, now, cost);
                }
                // A current count above the limit, read in its own window.
                let in_own_window =
                    now.window_index() & L::WINDOW_INDEX_MASK == L::stored_index(state);
                if in_own_window && L::stored_count(state) > limit {
                    assert_eq!(remaining, 0, "{quota:?}: {state:#x} at {now_ns}");
                    assert_eq!(quota.step(state, now, 1), Step::Deny);
                }
            }
        }
    }
}

#[test]
fn sliding_window_words_at_the_field_limits_are_handled() {
    assert_words_at_the_field_limits_are_handled(&[
        SlidingWindow::per_second(4).unwrap(),
        SlidingWindow::new(sliding::MAX_LIMIT, Duration::from_millis(1)).unwrap(),
        SlidingWindow::per_hour(3).unwrap(),
        SlidingWindow::new(1, Timestamp::HORIZON.since_origin()).unwrap(),
        SlidingWindow::burst_then_never(3).unwrap(),
    ]);
}

#[test]
fn fixed_window_words_at_the_field_limits_are_handled() {
    assert_words_at_the_field_limits_are_handled(&[
        FixedWindow::per_second(4).unwrap(),
        FixedWindow::new(fixed::MAX_LIMIT, Duration::from_micros(1)).unwrap(),
        FixedWindow::new(3, Duration::from_millis(1)).unwrap(),
        FixedWindow::new(1, Timestamp::HORIZON.since_origin()).unwrap(),
        FixedWindow::burst_then_never(3).unwrap(),
    ]);
}

/// States reached by a random schedule of checks on `quota` (forward gaps from nothing to a few
/// windows), each paired with the reading it was written at.
fn reachable_states<Q: Quota>(quota: Q, seed: u64, gap_ns: u64) -> Vec<(u64, u64)> {
    let mut random = Xorshift(seed);
    let mut state = Q::FRESH;
    let mut now_ns = random.up_to(1_000 * SECOND_NS);
    let mut states = Vec::new();
    for _ in 0..2_000 {
        now_ns += random.up_to(gap_ns);
        let cost = 1 + random.up_to(quota.limit() - 1);
        if let Step::Allow(word) = quota.step(state, quota.instant(at(now_ns)), cost) {
            state = word;
            states.push((state, now_ns));
        }
        if random.up_to(7) == 0 {
            state = Q::FRESH;
        }
    }
    states
}

/// A full keyed table picks the candidate to report (or evict) by `freshness_rank`, then computes
/// `reset_after_ns` for that one only: of two live states seen at one time, the smaller rank must
/// reset no later.
fn assert_freshness_rank_orders_reset_after<Q: Quota>(quota: Q, gap_ns: u64) {
    let states = reachable_states(quota, 0x5eed ^ gap_ns, gap_ns);
    let mut random = Xorshift(0xfeed ^ gap_ns);
    for _ in 0..20_000 {
        let (a, a_ns) = states[random.up_to(states.len() as u64 - 1) as usize];
        let (b, b_ns) = states[random.up_to(states.len() as u64 - 1) as usize];
        // Both read at a time no earlier than either was written: a table scans its slots at
        // its inserter's reading.
        let now = quota.instant(at(a_ns.max(b_ns) + random.up_to(gap_ns)));
        for state in [a, b] {
            assert_eq!(
                quota.freshness_rank(state, now).is_none(),
                quota.is_fresh(state, now),
                "{quota:?}: {state:#x}"
            );
        }
        let (Some(rank_a), Some(rank_b)) =
            (quota.freshness_rank(a, now), quota.freshness_rank(b, now))
        else {
            continue;
        };
        let (reset_a, reset_b) = (quota.reset_after_ns(a, now), quota.reset_after_ns(b, now));
        if rank_a < rank_b {
            assert!(
                reset_a <= reset_b,
                "{quota:?}: {a:#x} ({reset_a} ns) ranks before {b:#x} ({reset_b} ns)"
            );
        }
    }
}

#[test]
fn the_freshness_rank_orders_live_states_by_reset_after() {
    use super::Gcra;
    for gap_ns in [1_000_000, 100_000_000, 2 * SECOND_NS] {
        assert_freshness_rank_orders_reset_after(Gcra::per_second(10).unwrap(), gap_ns);
        assert_freshness_rank_orders_reset_after(
            Gcra::per_second(3).unwrap().with_burst(7).unwrap(),
            gap_ns,
        );
        assert_freshness_rank_orders_reset_after(SlidingWindow::per_second(9).unwrap(), gap_ns);
        assert_freshness_rank_orders_reset_after(FixedWindow::per_second(9).unwrap(), gap_ns);
    }
}

/// States a random schedule of bookings (reservations with random maximum waits, up to many
/// tolerances) leaves on `quota`.
fn booked_states(quota: super::Gcra, seed: u64) -> Vec<u64> {
    let mut random = Xorshift(seed);
    let tolerance_ns = quota.period().as_nanos() as u64 * quota.limit() / quota.count();
    let longest = quota.max_wait_ticks(Duration::from_nanos(10 * tolerance_ns + 1));
    let mut state = super::Gcra::FRESH;
    let mut now_ns = random.up_to(1_000 * SECOND_NS);
    let mut states = Vec::new();
    for _ in 0..2_000 {
        now_ns += random.up_to(tolerance_ns / 2);
        let cost = 1 + random.up_to(quota.limit() - 1);
        let max_wait = random.up_to(longest);
        if let Step::Allow(word) =
            quota.reserve_step(state, quota.instant(at(now_ns)), cost, max_wait)
        {
            state = word;
            states.push(state);
        }
    }
    states
}

/// With a maximum wait of zero, a reservation is a check: `reserve_step(state, now, cost, 0)`
/// is `step(state, now, cost)`, the same decision and the same word, on states reached by
/// checks and by bookings ahead, words at the edges of the range, readings from the origin to
/// the horizon and at a nanosecond either side of the instant a cost becomes admissible, and
/// costs on both sides of the limit.
#[test]
fn a_reservation_with_no_wait_is_a_check() {
    use super::Gcra;
    let quotas = [
        Gcra::per_second(10).unwrap(),
        Gcra::per_second(3).unwrap().with_burst(7).unwrap(),
        Gcra::new(999_983, Duration::from_nanos(1_000_000_007))
            .unwrap()
            .with_burst(1_000)
            .unwrap(),
        Gcra::per_second(12_500_000_000)
            .unwrap()
            .with_burst(1_250_000)
            .unwrap(),
        Gcra::new(16, Duration::from_nanos(1))
            .unwrap()
            .with_burst(100)
            .unwrap(),
        Gcra::per_day(1).unwrap().with_burst(2).unwrap(),
    ];
    let mut random = Xorshift(0x5eed_0005);
    let (mut allowed, mut denied) = (0, 0);
    for quota in quotas {
        let limit = quota.limit();
        assert_eq!(quota.max_wait_ticks(Duration::ZERO), 0);
        let mut states: Vec<u64> = reachable_states(quota, 0x5eed_0006, SECOND_NS)
            .into_iter()
            .map(|(state, _)| state)
            .collect();
        states.extend(booked_states(quota, 0x5eed_0007));
        states.extend([0, 1, u64::MAX, u64::MAX - 1, u64::MAX - 2, 1 << 63, 3 << 62]);
        for _ in 0..20_000 {
            let state = match random.up_to(3) {
                0 => random.next(),
                _ => states[random.up_to(states.len() as u64 - 1) as usize],
            };
            let cost = match random.up_to(5) {
                0 => 0,
                1 => limit + random.up_to(1),
                2 => u64::MAX - random.up_to(1),
                _ => 1 + random.up_to(limit - 1),
            };
            let now_ns = match random.up_to(3) {
                0 => random.up_to(HORIZON_NS),
                // Around the instant the cost becomes admissible, from a random reading.
                _ => {
                    let from_ns = random.up_to(HORIZON_NS / 2);
                    let wait_ns = quota.wait_ns(state, quota.instant(at(from_ns)), cost.min(limit));
                    (from_ns.saturating_add(wait_ns) + random.up_to(2))
                        .saturating_sub(1)
                        .min(HORIZON_NS)
                }
            };
            let now = quota.instant(at(now_ns));
            let checked = quota.step(state, now, cost);
            assert_eq!(
                quota.reserve_step(state, now, cost, 0),
                checked,
                "{quota:?}: {state:#x} at {now_ns} ns, cost {cost}"
            );
            match checked {
                Step::Allow(_) => allowed += 1,
                Step::Deny => denied += 1,
            }
        }
    }
    assert!(
        allowed > 10_000 && denied > 10_000,
        "{allowed} allowed, {denied} denied"
    );
}

/// Cancelling a booking while it is still the latest is an exact undo: it restores
/// `max(state, now)` for the word `state` the booking replaced at the reading `now`, and from
/// then on, at any reading no earlier than `now`, every check and booking decides as on
/// `state` and writes the same word (so the limiter is as if the booking had never been made).
/// Behind a later booking, or on a word it did not write, it gives nothing back. A granted
/// booking never starts past the horizon. On states reached by checks and bookings, words at
/// the edges, readings from the origin to the horizon.
#[test]
fn a_cancellation_of_the_latest_booking_is_an_exact_undo() {
    use super::Gcra;
    let quotas = [
        Gcra::per_second(10).unwrap(),
        Gcra::per_second(3).unwrap().with_burst(7).unwrap(),
        Gcra::new(999_983, Duration::from_nanos(1_000_000_007))
            .unwrap()
            .with_burst(1_000)
            .unwrap(),
        Gcra::new(16, Duration::from_nanos(1))
            .unwrap()
            .with_burst(100)
            .unwrap(),
        Gcra::per_day(1).unwrap().with_burst(2).unwrap(),
    ];
    let mut random = Xorshift(0x5eed_0008);
    let (mut undone, mut kept) = (0, 0);
    for quota in quotas {
        let limit = quota.limit();
        let tolerance_ns = quota.period().as_nanos() as u64 * limit / quota.count();
        let mut states: Vec<u64> = reachable_states(quota, 0x5eed_0009, SECOND_NS)
            .into_iter()
            .map(|(state, _)| state)
            .collect();
        states.extend(booked_states(quota, 0x5eed_000a));
        states.extend([0, 1, 1 << 62, 1 << 63]);
        for _ in 0..20_000 {
            let state = match random.up_to(4) {
                0 => random.next() >> 1,
                _ => states[random.up_to(states.len() as u64 - 1) as usize],
            };
            let now_ns = match random.up_to(3) {
                0 => HORIZON_NS - random.up_to(10 * tolerance_ns).min(HORIZON_NS),
                _ => random.up_to(HORIZON_NS),
            };
            let now = quota.instant(at(now_ns));
            let cost = 1 + random.up_to(limit - 1);
            let max_wait = match random.up_to(2) {
                0 => u64::MAX,
                _ => random.up_to(quota.max_wait_ticks(Duration::from_nanos(3 * tolerance_ns))),
            };
            let Step::Allow(booked) = quota.reserve_step(state, now, cost, max_wait) else {
                continue;
            };
            assert!(quota.start_ns(booked, now) <= HORIZON_NS, "{quota:?}");
            let increment = quota.increment_ticks(cost);
            // Behind a later booking (or a check), and on a word it did not write: nothing.
            if let Step::Allow(later) = quota.reserve_step(booked, now, 1, u64::MAX) {
                assert_eq!(Gcra::cancel_step(later, booked, increment), Step::Deny);
                kept += 1;
            }
            assert_eq!(Gcra::cancel_step(booked + 1, booked, increment), Step::Deny);
            assert_eq!(Gcra::cancel_step(booked - 1, booked, increment), Step::Deny);
            assert_eq!(Gcra::cancel_step(booked, booked, 0), Step::Deny);
            // The latest: undone.
            let restored = state.max(now.ticks());
            assert_eq!(
                Gcra::cancel_step(booked, booked, increment),
                Step::Allow(restored),
                "{quota:?}: {state:#x} at {now_ns} ns, cost {cost}"
            );
            undone += 1;
            for _ in 0..4 {
                let later_ns = (now_ns + random.up_to(3 * tolerance_ns)).min(HORIZON_NS);
                let later = quota.instant(at(later_ns));
                let cost = random.up_to(limit);
                assert_eq!(
                    quota.step(restored, later, cost),
                    quota.step(state, later, cost)
                );
                assert_eq!(
                    quota.reserve_step(restored, later, cost, max_wait),
                    quota.reserve_step(state, later, cost, max_wait)
                );
            }
        }
    }
    assert!(
        undone > 10_000 && kept > 10_000,
        "{undone} undone, {kept} kept"
    );
}

//! The window quotas' state layouts: fields that fill the word, the backward bound, the stored
//! index modulo its wrap, words at the fields' limits.

use super::*;

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
    let mut exercised = Exercised::default();
    for quota in quotas {
        for _ in 0..20_000 {
            assert_one_written_word(quota, &mut rng, &mut exercised);
        }
    }
    assert!(exercised.wrapped > 0, "no wrapped index was exercised");
    assert!(
        exercised.behind > 0,
        "no reading behind a stored window was exercised"
    );
    assert!(
        exercised.aliased > 0,
        "no key idle for nearly a whole wrap was exercised"
    );
}

/// How many cases of each kind the random written words exercised.
#[derive(Default)]
struct Exercised {
    wrapped: u64,
    behind: u64,
    aliased: u64,
}

/// One case of [`assert_written_words_store_the_window_index_modulo_the_wrap`]: a state written
/// at a random time near a random reading, then a check at the reading.
fn assert_one_written_word<L: Layout>(quota: &L, rng: &mut Xorshift, exercised: &mut Exercised) {
    let (window_ns, limit) = (quota.window_ns(), quota.limit());
    let backward_windows = quota.backward_windows();
    let backward_ns = backward_windows.saturating_mul(window_ns);
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
        return;
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
        return;
    };
    let context = format!("{quota:?}: {state:#x} -> {written:#x} at {now_ns}");
    for &(shift, mask) in L::COUNT_FIELDS {
        assert!((written >> shift) & mask <= limit, "{context}");
    }
    let case = WrittenWord {
        state,
        written,
        cost,
        now_index: now.window_index(),
        written_index,
        reading_is_behind,
        backward_windows,
    };
    case.assert_stored_window::<L>(&context, exercised);
}

/// A state word `state` written in window `written_index`, and the word `written` a check of
/// `cost` at window `now_index` stored over it.
struct WrittenWord {
    state: u64,
    written: u64,
    cost: u64,
    now_index: u64,
    written_index: u64,
    reading_is_behind: bool,
    backward_windows: u64,
}

impl WrittenWord {
    /// The stored window: now's index modulo the wrap, or, for a reading behind the stored
    /// window, the stored index again; the count of the window it is judged in plus the cost;
    /// and a smaller word than the one replaced only when the index wrapped.
    fn assert_stored_window<L: Layout>(&self, context: &str, exercised: &mut Exercised) {
        let (state, written, cost) = (self.state, self.written, self.cost);
        let now_index = self.now_index & L::WINDOW_INDEX_MASK;
        // The quota tells a reading behind the stored window by the residues alone: a key idle
        // for nearly a whole wrap aliases one (documented), any reading behind by at most
        // `backward_windows` is one.
        let distance = now_index.wrapping_sub(L::stored_index(state)) & L::WINDOW_INDEX_MASK;
        let read_as_behind =
            state != L::FRESH && distance > L::WINDOW_INDEX_MASK - self.backward_windows;
        if state != L::FRESH && self.reading_is_behind {
            assert!(read_as_behind, "{context}");
        }
        if read_as_behind && !self.reading_is_behind {
            exercised.aliased += 1;
            let idle = self.now_index - self.written_index;
            let alias = L::WINDOW_INDEX_MASK - self.backward_windows;
            assert!(idle > alias, "{context}: idle for {idle} windows");
        }
        let same_window = self.written_index == self.now_index;
        if read_as_behind {
            exercised.behind += 1;
            // Judged in the stored window: the same index, its count plus the cost.
            assert_eq!(
                L::stored_index(written),
                L::stored_index(state),
                "{context}"
            );
            let count = L::stored_count(state) + cost;
            assert_eq!(L::stored_count(written), count, "{context}");
        } else {
            assert_eq!(L::stored_index(written), now_index, "{context}");
            if state != L::FRESH && same_window {
                let count = L::stored_count(state) + cost;
                assert_eq!(L::stored_count(written), count, "{context}");
            }
        }
        if written <= state {
            // Only a window index that wrapped may make the word smaller.
            exercised.wrapped += 1;
            assert!(self.now_index > self.written_index, "{context}");
            assert!(now_index < L::stored_index(state), "{context}");
        }
    }
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

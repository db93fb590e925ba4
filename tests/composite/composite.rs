//! Composite limits against a sequential model, and under threads.
//!
//! - Property tests: a composite over random member quotas (keyed and direct, every word
//!   algorithm, mixed) decides exactly like a model that steps every member's word with the
//!   quota's own step function, commits the new words only when every member admits, and
//!   reports the binding member (smallest remaining if allowed, longest retry-after among the
//!   denying members if denied): every decision, every member's remaining after it, and the
//!   binding member's values. Single thread, times from a caller-held clock moving forward.
//! - Threads on a frozen clock: no member ever admits more than its limit, and every unit a
//!   window member holds is one an allowed composite check consumed (the refunds are exact).

use nanolimit::composite::Composite;
use nanolimit::quota::Step;
use nanolimit::striped::StripedLimiter;
use nanolimit::{
    Clock, Decision, FixedWindow, Gcra, KeyedLimiter, Limiter, ManualClock, Quota, Request,
    RequestError, SlidingWindow, Timestamp,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A member's quota as the model drives it, whatever its type.
trait ModelQuota {
    fn step(&self, word: u64, at_ns: u64, cost: u64) -> Step;
    fn remaining(&self, word: u64, at_ns: u64) -> u64;
    fn retry_after_ns(&self, word: u64, at_ns: u64, cost: u64) -> u64;
    fn limit(&self) -> u64;
    fn fresh(&self) -> u64;
}

fn timestamp(at_ns: u64) -> Timestamp {
    Timestamp::from_ns(at_ns).unwrap()
}

impl<Q: Quota> ModelQuota for Q {
    fn step(&self, word: u64, at_ns: u64, cost: u64) -> Step {
        Quota::step(self, word, self.instant(timestamp(at_ns)), cost)
    }
    fn remaining(&self, word: u64, at_ns: u64) -> u64 {
        Quota::remaining(self, word, self.instant(timestamp(at_ns)))
    }
    fn retry_after_ns(&self, word: u64, at_ns: u64, cost: u64) -> u64 {
        Quota::retry_after_ns(self, word, self.instant(timestamp(at_ns)), cost)
    }
    fn limit(&self) -> u64 {
        Quota::limit(self)
    }
    fn fresh(&self) -> u64 {
        Q::FRESH
    }
}

/// One member of the model: its quota, whether it is keyed, and its words by key (a direct
/// member keeps its one word under key 0).
struct ModelMember {
    quota: Box<dyn ModelQuota>,
    keyed: bool,
    words: HashMap<u64, u64>,
}

impl ModelMember {
    fn new(quota: impl ModelQuota + 'static, keyed: bool) -> Self {
        ModelMember {
            quota: Box::new(quota),
            keyed,
            words: HashMap::new(),
        }
    }

    fn word(&self, key: u64) -> u64 {
        let key = if self.keyed { key } else { 0 };
        self.words.get(&key).copied().unwrap_or(self.quota.fresh())
    }

    fn set(&mut self, key: u64, word: u64) {
        let key = if self.keyed { key } else { 0 };
        self.words.insert(key, word);
    }
}

/// What a composite decided, in the model's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Observed {
    allowed: bool,
    binding: usize,
    remaining: u64,
    retry_after_ns: u128,
    members_remaining: Vec<u64>,
}

/// The model's decision for `cost` on `key` at `at_ns`, committing the words if a check passes.
fn model_decide(
    members: &mut [ModelMember],
    key: u64,
    at_ns: u64,
    cost: u64,
    commit: bool,
) -> Result<Observed, RequestError> {
    let smallest_limit = members.iter().map(|m| m.quota.limit()).min().unwrap();
    if cost > smallest_limit {
        return Err(RequestError::CostAboveLimit {
            cost,
            limit: smallest_limit,
        });
    }
    let steps: Vec<Step> = members
        .iter()
        .map(|m| {
            if cost == 0 {
                Step::Allow(m.word(key))
            } else {
                m.quota.step(m.word(key), at_ns, cost)
            }
        })
        .collect();
    let allowed = steps.iter().all(|step| matches!(step, Step::Allow(_)));
    if allowed && commit && cost > 0 {
        for (member, step) in members.iter_mut().zip(&steps) {
            if let Step::Allow(word) = step {
                member.set(key, *word);
            }
        }
    }
    let members_remaining: Vec<u64> = members
        .iter()
        .map(|m| m.quota.remaining(m.word(key), at_ns))
        .collect();
    let (binding, retry_after_ns) = if allowed {
        let smallest = *members_remaining.iter().min().unwrap();
        let binding = members_remaining
            .iter()
            .position(|&r| r == smallest)
            .unwrap();
        (binding, 0)
    } else {
        let mut best: Option<(usize, u64)> = None;
        for (index, member) in members.iter().enumerate() {
            if steps[index] != Step::Deny {
                continue;
            }
            let retry = member.quota.retry_after_ns(member.word(key), at_ns, cost);
            if best.is_none_or(|(_, longest)| retry > longest) {
                best = Some((index, retry));
            }
        }
        best.unwrap()
    };
    Ok(Observed {
        allowed,
        binding,
        remaining: members_remaining[binding],
        retry_after_ns: retry_after_ns as u128,
        members_remaining,
    })
}

/// What a composite's decision reports, and each member's remaining (a macro: a composite's
/// decision is a `Decision` of a tuple of quotas, of any arity).
macro_rules! observe {
    ($decision:expr, $members_remaining:expr) => {{
        let decision = $decision;
        Observed {
            allowed: decision.is_allowed(),
            binding: decision.binding(),
            remaining: decision.remaining(),
            retry_after_ns: decision.retry_after().as_nanos(),
            members_remaining: $members_remaining,
        }
    }};
}

fn observe2<A: Quota, B: Quota>(decision: Decision<(A, B)>) -> Observed {
    let (a, b) = decision.members();
    observe!(decision, vec![a.remaining(), b.remaining()])
}

fn observe3<A: Quota, B: Quota, C: Quota>(decision: Decision<(A, B, C)>) -> Observed {
    let (a, b, c) = decision.members();
    observe!(decision, vec![a.remaining(), b.remaining(), c.remaining()])
}

/// One step of a schedule.
#[derive(Debug, Clone, Copy)]
struct Operation {
    advance_ns: u64,
    key: u64,
    cost: u64,
    peek: bool,
}

fn schedule(max_cost: u64, max_advance_ns: u64) -> impl Strategy<Value = Vec<Operation>> {
    prop::collection::vec(
        (
            0..=max_advance_ns,
            0..4u64,
            0..=max_cost,
            prop::bool::weighted(0.2),
        )
            .prop_map(|(advance_ns, key, cost, peek)| Operation {
                advance_ns,
                key,
                cost,
                peek,
            }),
        1..60,
    )
}

/// Runs `schedule` on the composite (through `decide`: key, request, whether to peek) and on
/// the model, asserting every decision equal.
fn assert_matches_model(
    mut model: Vec<ModelMember>,
    schedule: &[Operation],
    decide: impl Fn(u64, Request<()>, bool) -> Result<Observed, RequestError>,
) -> Result<(), TestCaseError> {
    let mut now_ns = 1_000;
    for (index, operation) in schedule.iter().enumerate() {
        now_ns += operation.advance_ns;
        let request = Request::cost(operation.cost).at(timestamp(now_ns));
        let real = decide(operation.key, request, operation.peek);
        let expected = model_decide(
            &mut model,
            operation.key,
            now_ns,
            operation.cost,
            !operation.peek,
        );
        prop_assert_eq!(real, expected, "operation {} of {:?}", index, schedule);
    }
    Ok(())
}

fn keyed<Q: Quota>(quota: Q, clock: &ManualClock) -> KeyedLimiter<u64, Q, ManualClock> {
    KeyedLimiter::builder(quota)
        .capacity(64)
        .clock(clock.clone())
        .build()
        .unwrap()
}

fn gcra(count: u64, burst: u64, period_ms: u64) -> Gcra {
    Gcra::new(count, Duration::from_millis(period_ms))
        .unwrap()
        .with_burst(burst)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// A per-key GCRA and a global GCRA: the issue's `composite-2`.
    #[test]
    fn keyed_gcra_and_direct_gcra_match_the_model(
        (count, burst, period_ms) in (1..8u64, 1..8u64, 10..1_000u64),
        (global_count, global_burst) in (1..16u64, 1..16u64),
        schedule in schedule(9, 200_000_000),
    ) {
        let clock = ManualClock::new();
        let per_key = keyed(gcra(count, burst, period_ms), &clock);
        let global = Limiter::with_clock(gcra(global_count, global_burst, 1_000), clock);
        let composite = Composite::new((&per_key, &global));
        let model = vec![
            ModelMember::new(gcra(count, burst, period_ms), true),
            ModelMember::new(gcra(global_count, global_burst, 1_000), false),
        ];
        assert_matches_model(model, &schedule, |key, request, peek| {
            let decision = if peek { composite.peek_with(&key, request) } else { composite.check_with(&key, request) };
            decision.map(observe2)
        })?;
    }

    /// A per-key GCRA, then a striped global GCRA with one stripe and leases of one unit (so
    /// exactly a plain GCRA: every unit is leased as it is admitted): the striped member last,
    /// admitting from its stripe, and first, checked on its shared budget.
    #[test]
    fn a_striped_global_member_first_or_last_matches_the_model(
        (count, burst, period_ms) in (1..8u64, 1..8u64, 10..1_000u64),
        (global_count, global_burst) in (1..16u64, 1..16u64),
        striped_last in any::<bool>(),
        schedule in schedule(9, 200_000_000),
    ) {
        let clock = ManualClock::new();
        let per_key = keyed(gcra(count, burst, period_ms), &clock);
        let global = StripedLimiter::builder(gcra(global_count, global_burst, 1_000))
            .stripes(1)
            .lease_units(1, 1)
            .clock(clock)
            .build()
            .unwrap();
        let per_key_model = ModelMember::new(gcra(count, burst, period_ms), true);
        let global_model = ModelMember::new(gcra(global_count, global_burst, 1_000), false);
        if striped_last {
            let composite = Composite::new((&per_key, &global));
            assert_matches_model(vec![per_key_model, global_model], &schedule, |key, request, peek| {
                let decision = if peek { composite.peek_with(&key, request) } else { composite.check_with(&key, request) };
                decision.map(observe2)
            })?;
        } else {
            let composite = Composite::new((&global, &per_key));
            assert_matches_model(vec![global_model, per_key_model], &schedule, |key, request, peek| {
                let decision = if peek { composite.peek_with(&key, request) } else { composite.check_with(&key, request) };
                decision.map(observe2)
            })?;
        }
    }

    /// Two windows on one key, then a global GCRA: three members, all algorithms.
    #[test]
    fn sliding_fixed_and_gcra_members_match_the_model(
        (sliding_limit, sliding_ms) in (1..10u64, 1..500u64),
        (fixed_limit, fixed_ms) in (1..20u64, 1..2_000u64),
        (global_count, global_burst) in (1..20u64, 1..20u64),
        schedule in schedule(11, 150_000_000),
    ) {
        let clock = ManualClock::new();
        let sliding = SlidingWindow::new(sliding_limit, Duration::from_millis(sliding_ms)).unwrap();
        let fixed = FixedWindow::new(fixed_limit, Duration::from_millis(fixed_ms)).unwrap();
        let short = keyed(sliding, &clock);
        let long = keyed(fixed, &clock);
        let global = Limiter::with_clock(gcra(global_count, global_burst, 1_000), clock);
        let composite = Composite::new((&short, &long, &global));
        let model = vec![
            ModelMember::new(sliding, true),
            ModelMember::new(fixed, true),
            ModelMember::new(gcra(global_count, global_burst, 1_000), false),
        ];
        assert_matches_model(model, &schedule, |key, request, peek| {
            let decision = if peek { composite.peek_with(&key, request) } else { composite.check_with(&key, request) };
            decision.map(observe3)
        })?;
    }

    /// Direct members only, the window first: a denial by the GCRA refunds the window.
    #[test]
    fn direct_fixed_window_and_gcra_match_the_model(
        (fixed_limit, fixed_ms) in (1..20u64, 1..2_000u64),
        (count, burst, period_ms) in (1..8u64, 1..8u64, 10..1_000u64),
        schedule in schedule(9, 200_000_000),
    ) {
        let clock = ManualClock::new();
        let fixed = FixedWindow::new(fixed_limit, Duration::from_millis(fixed_ms)).unwrap();
        let window = Limiter::with_clock(fixed, clock.clone());
        let bucket = Limiter::with_clock(gcra(count, burst, period_ms), clock);
        let composite = Composite::new((&window, &bucket));
        let model = vec![
            ModelMember::new(fixed, false),
            ModelMember::new(gcra(count, burst, period_ms), false),
        ];
        assert_matches_model(model, &schedule, |_key, request, peek| {
            let decision = if peek { composite.peek_with(&(), request) } else { composite.check_with(&(), request) };
            decision.map(observe2)
        })?;
    }
}

#[test]
fn a_denied_check_leaves_every_member_as_it_was() {
    // The report: chaining a per-IP and a global limit by hand spent the per-IP units
    // of requests the global limit then rejected.
    let clock = ManualClock::new();
    let per_ip = KeyedLimiter::builder(Gcra::per_second(5).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let global = Limiter::with_clock(Gcra::per_second(2).unwrap(), clock);
    let limits = Composite::new((&per_ip, &global));
    let served = (0..5)
        .filter(|_| limits.check("198.51.100.7").is_allowed())
        .count();
    assert_eq!(served, 2);
    assert_eq!(per_ip.peek("198.51.100.7").remaining(), 3);
    let denied = limits.check("198.51.100.7");
    assert_eq!((denied.binding(), denied.limit()), (1, 2));
    assert_eq!(denied.headers().retry_after_seconds, Some(1));
}

#[test]
fn a_cost_above_any_members_limit_is_an_error_and_changes_nothing() {
    let clock = ManualClock::new();
    let small = Limiter::with_clock(FixedWindow::per_second(3).unwrap(), clock.clone());
    let large = Limiter::with_clock(Gcra::per_second(100).unwrap(), clock);
    let limits = Composite::new((&large, &small));
    assert_eq!(
        limits.check_with(&(), Request::cost(4)).err(),
        Some(RequestError::CostAboveLimit { cost: 4, limit: 3 })
    );
    assert!(limits.peek_with(&(), Request::cost(4)).is_err());
    assert_eq!(large.peek().remaining(), 100);
}

#[test]
fn members_behind_arcs_share_one_global_limit() {
    let clock = ManualClock::new();
    let global = Arc::new(Limiter::with_clock(
        FixedWindow::per_second(3).unwrap(),
        clock.clone(),
    ));
    let api = Composite::new((
        Limiter::with_clock(Gcra::per_second(10).unwrap(), clock.clone()),
        Arc::clone(&global),
    ));
    let admin = Composite::new((
        Limiter::with_clock(Gcra::per_second(10).unwrap(), clock),
        Arc::clone(&global),
    ));
    assert!(api.check(&()).is_allowed());
    assert!(admin.check(&()).is_allowed());
    assert!(api.check(&()).is_allowed());
    assert!(admin.check(&()).is_denied());
    // The admin composite's own member was refunded.
    assert_eq!(admin.members().0.peek().remaining(), 9);
}

/// Runs `threads` threads, each making `checks` checks at `now` of the (key, cost)
/// `key_and_cost(thread, check)` gives (keys below 64) through `check(thread, key, request)`
/// (the thread's own composite's check: whether it admitted the request); returns the cost each
/// thread had admitted per key.
fn run_threads(
    threads: usize,
    checks: u64,
    now: Timestamp,
    key_and_cost: impl Fn(u64, u64) -> (u64, u64) + Sync,
    check: impl Fn(usize, u64, Request<()>) -> bool + Sync,
) -> Vec<Vec<u64>> {
    let (key_and_cost, check) = (&key_and_cost, &check);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                scope.spawn(move || {
                    let mut admitted = vec![0u64; 64];
                    for index in 0..checks {
                        let (key, cost) = key_and_cost(thread as u64, index);
                        if check(thread, key, Request::cost(cost).at(now)) {
                            admitted[key as usize] += cost;
                        }
                    }
                    admitted
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    })
}

/// Threads: `THREADS` threads, each with its own composite (a per-key GCRA of its own and a
/// keyed fixed window shared by all, then a global fixed window shared by all) on a frozen
/// clock, so that nothing refills.
#[test]
fn on_a_frozen_clock_no_member_ever_over_admits_and_window_refunds_are_exact() {
    const THREADS: usize = 4;
    const CHECKS: u64 = 4_000;
    const KEYS: u64 = 8;
    let clock = ManualClock::new();
    let per_key_window = Arc::new(
        KeyedLimiter::builder(FixedWindow::per_minute(40).unwrap())
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let global = Arc::new(Limiter::with_clock(
        FixedWindow::per_minute(250).unwrap(),
        clock.clone(),
    ));
    let own_limits: Vec<_> = (0..THREADS)
        .map(|_| {
            Arc::new(
                KeyedLimiter::builder(Gcra::per_minute(30).unwrap())
                    .clock(clock.clone())
                    .build()
                    .unwrap(),
            )
        })
        .collect();
    let now = clock.now();
    let composites: Vec<_> = own_limits
        .iter()
        .map(|own| Composite::new((own.as_ref(), per_key_window.as_ref(), global.as_ref())))
        .collect();
    let admitted_per_key = run_threads(
        composites.len(),
        CHECKS,
        now,
        |thread, check| ((check * 7 + thread) % KEYS, 1 + check % 3),
        |thread, key, request| {
            let decision = composites[thread].check_with(&key, request).unwrap();
            decision.is_allowed()
        },
    );
    let mut global_admitted = 0;
    for key in 0..KEYS {
        let admitted: u64 = admitted_per_key
            .iter()
            .map(|thread| thread[key as usize])
            .sum();
        global_admitted += admitted;
        assert!(admitted <= 40, "key {key}: {admitted} admitted of 40");
        let held = 40
            - per_key_window
                .peek_with(&key, Request::cost(0).at(now))
                .unwrap()
                .remaining();
        assert_eq!(
            held, admitted,
            "key {key}: the window holds {held}, {admitted} admitted"
        );
        for (thread, own) in own_limits.iter().enumerate() {
            let own_admitted = admitted_per_key[thread][key as usize];
            let own_held = 30
                - own
                    .peek_with(&key, Request::cost(0).at(now))
                    .unwrap()
                    .remaining();
            assert!(own_admitted <= 30);
            // A GCRA refund may give nothing back (never over-admitting), only under contention:
            // each thread's own limit had none, so its refunds were exact too.
            assert_eq!(own_held, own_admitted, "thread {thread}, key {key}");
        }
    }
    assert!(global_admitted <= 250, "{global_admitted} admitted of 250");
    let global_held = 250
        - global
            .peek_with(Request::cost(0).at(now))
            .unwrap()
            .remaining();
    assert_eq!(global_held, global_admitted);
    assert!(global_admitted > 0);
}

/// A striped global limit of `global_per_second` (its burst) in `stripes` stripes with leases of
/// 10 units, and a per-IP limit of 2 per second, on one manual clock.
fn striped_global_and_per_ip(
    stripes: usize,
    global_per_second: u64,
) -> (
    StripedLimiter<ManualClock>,
    KeyedLimiter<u32, Gcra, ManualClock>,
) {
    let clock = ManualClock::new();
    let global = StripedLimiter::builder(Gcra::per_second(global_per_second).unwrap())
        .stripes(stripes)
        .lease_units(10, 10)
        .clock(clock.clone())
        .build()
        .unwrap();
    let per_ip = KeyedLimiter::builder(Gcra::per_second(2).unwrap())
        .clock(clock)
        .build()
        .unwrap();
    (global, per_ip)
}

#[test]
fn a_striped_member_before_a_denying_one_gets_its_cost_back_exactly() {
    let (global, per_ip) = striped_global_and_per_ip(8, 100);
    // Not last: checked on the shared budget, one unit at a time, no lease taken.
    let limits = Composite::new((&global, &per_ip));
    assert!(limits.check(&7u32).is_allowed());
    assert!(limits.check(&7u32).is_allowed());
    assert_eq!(global.quota_remaining(), 98);
    let denied = limits.check(&7u32);
    assert!(denied.is_denied());
    assert_eq!(denied.binding(), 1);
    assert_eq!(global.quota_remaining(), 98);
    assert_eq!(
        (0..global.stripes())
            .map(|stripe| global.held_units(stripe))
            .sum::<u64>(),
        0
    );
}

#[test]
fn a_striped_member_last_admits_from_its_stripe() {
    let (global, per_ip) = striped_global_and_per_ip(1, 100);
    let limits = Composite::new((&per_ip, &global));
    let allowed = limits.check(&7u32);
    assert!(allowed.is_allowed());
    // One lease of 10 from the budget, one unit of it spent, nine held by the stripe.
    assert_eq!(global.quota_remaining(), 90);
    assert_eq!(global.held_units(0), 9);
    assert!(limits.check(&7u32).is_allowed());
    assert_eq!(global.held_units(0), 8);
    // The client's own limit denies first: the global member is not touched.
    assert!(limits.check(&7u32).is_denied());
    assert_eq!(global.held_units(0), 8);
}

/// Threads: each with its own per-key GCRA, then one striped global GCRA last (several stripes,
/// leases up to 8) on a frozen clock. Every unit the global member admits was leased from its
/// budget, so it admits at most its burst; the per-key members, refunded when the global one
/// denies, keep exactly what the allowed checks consumed.
#[test]
fn on_a_frozen_clock_a_striped_global_member_admits_at_most_its_budget() {
    const THREADS: usize = 4;
    const CHECKS: u64 = 3_000;
    const KEYS: u64 = 8;
    const GLOBAL_BURST: u64 = 300;
    let clock = ManualClock::new();
    let global = StripedLimiter::builder(
        Gcra::per_minute(60)
            .unwrap()
            .with_burst(GLOBAL_BURST)
            .unwrap(),
    )
    .stripes(4)
    .lease_units(1, 8)
    .clock(clock.clone())
    .build()
    .unwrap();
    let own_limits: Vec<_> = (0..THREADS)
        .map(|_| {
            KeyedLimiter::builder(Gcra::per_minute(40).unwrap())
                .clock(clock.clone())
                .build()
                .unwrap()
        })
        .collect();
    let now = clock.now();
    let composites: Vec<_> = own_limits
        .iter()
        .map(|own| Composite::new((own, &global)))
        .collect();
    let admitted = run_threads(
        composites.len(),
        CHECKS,
        now,
        |thread, check| ((check * 5 + thread) % KEYS, 1 + check % 2),
        |thread, key, request| {
            let decision = composites[thread].check_with(&key, request).unwrap();
            decision.is_allowed()
        },
    );
    let global_admitted: u64 = admitted.iter().flatten().sum();
    let held: u64 = (0..4).map(|stripe| global.held_units(stripe)).sum();
    assert!(
        global_admitted + held <= GLOBAL_BURST,
        "{global_admitted} admitted and {held} held of {GLOBAL_BURST}"
    );
    assert!(
        global_admitted >= GLOBAL_BURST - 4 * 8,
        "{global_admitted} admitted"
    );
    for (thread, own) in own_limits.iter().enumerate() {
        for key in 0..KEYS {
            let own_admitted = admitted[thread][key as usize];
            let own_held = 40
                - own
                    .peek_with(&key, Request::cost(0).at(now))
                    .unwrap()
                    .remaining();
            assert_eq!(own_held, own_admitted, "thread {thread}, key {key}");
        }
    }
}

#[test]
fn a_striped_member_is_peeked_as_it_is_checked_in_its_position() {
    let (global, per_ip) = striped_global_and_per_ip(1, 10);
    // The limiter's own check leases the whole budget: its stripe holds 9, the budget 0.
    assert!(global.check().is_allowed());
    assert_eq!((global.held_units(0), global.quota_remaining()), (9, 0));
    // First, it is checked (and so peeked) on its budget: denied both ways.
    let first = Composite::new((&global, &per_ip));
    assert!(first.peek(&7u32).is_denied());
    assert!(first.check(&7u32).is_denied());
    // Last, from the stripe: allowed both ways.
    let last = Composite::new((&per_ip, &global));
    assert!(last.peek(&7u32).is_allowed());
    assert!(last.check(&7u32).is_allowed());
    assert_eq!(global.held_units(0), 8);
}

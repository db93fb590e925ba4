//! The scripts' steps against the crate's own: for edge words and random ones, at edge times
//! and random ones, the word stored in Redis and a check through the real server give exactly
//! [`Quota::step`]'s decision and new word, and a peek writes nothing. Needs a server: see
//! `support`.

use crate::support::{raw_connection, redis_url, unique_prefix};
use nanolimit::quota::Step;
use nanolimit::redis::{FailurePolicy, RedisLimiter, RedisQuota};
use nanolimit::{FixedWindow, Gcra, Quota, Request, SlidingWindow, Timestamp};
use rand::{Rng, SeedableRng};
use redis::AsyncCommands;
use std::time::Duration;

const HORIZON_NS: u64 = Timestamp::HORIZON.as_ns();

async fn limiter<Q: RedisQuota>(url: &str, quota: Q, test: &str) -> RedisLimiter<Q> {
    RedisLimiter::builder(quota)
        .prefix(&unique_prefix(test))
        // Generous: a fallback here would be a test failure, not a policy under test.
        .timeout(Duration::from_secs(5))
        .failure_policy(FailurePolicy::Closed)
        .build(url)
        .unwrap()
}

/// One case: `word` stored (absent when `None`), a check of `cost` at `at` through Redis, then
/// a peek from the same word; both against the Rust step and views.
async fn assert_step<Q: RedisQuota>(
    limiter: &RedisLimiter<Q>,
    raw: &mut redis::aio::MultiplexedConnection,
    word: Option<u64>,
    at: Timestamp,
    cost: u64,
) {
    let quota = *limiter.quota();
    let key = limiter.key_name("step");
    let stored = word.unwrap_or(Q::FRESH);
    let now = quota.instant(at);
    let expected = quota.step(stored, now, cost);
    let context = format!(
        "{quota:?} word {stored:#x} at {} ns cost {cost}",
        at.as_ns()
    );
    for apply in [false, true] {
        match word {
            Some(word) => raw
                .set::<_, _, ()>(&key, format!("{word:016x}"))
                .await
                .unwrap(),
            None => raw.del::<_, ()>(&key).await.unwrap(),
        }
        let request = Request::cost(cost).at(at);
        let started = std::time::Instant::now();
        let decision = if apply {
            limiter.check_with("step", request).await.unwrap()
        } else {
            limiter.peek_with("step", request).await.unwrap()
        };
        assert!(!decision.is_fallback(), "{context}: {:?}", limiter.stats());
        let allowed = cost == 0 || matches!(expected, Step::Allow(_));
        assert_eq!(decision.is_allowed(), allowed, "{context} apply {apply}");
        let after = match expected {
            Step::Allow(new) if apply && cost > 0 => new,
            _ => stored,
        };
        assert_eq!(decision.state_word(), after, "{context} apply {apply}");
        assert_eq!(
            decision.remaining(),
            quota.remaining(after, now),
            "{context}"
        );
        assert_eq!(
            decision.reset_after(),
            Duration::from_nanos(quota.reset_after_ns(after, now)),
            "{context}"
        );
        let in_redis: Option<String> = raw.get(&key).await.unwrap();
        let in_redis = in_redis.map(|hex| u64::from_str_radix(&hex, 16).unwrap());
        if apply && after != stored {
            // A reset shorter than the round trips may have expired the word already.
            let gone_early =
                in_redis.is_none() && decision.reset_after() < Duration::from_millis(100);
            if !gone_early {
                assert_eq!(in_redis, Some(after), "{context}: the word written");
            }
            // Expires once fresh, never before: the expiry set (the PTTL read plus at most the
            // time since the call began) finds the state fresh, and for a reading in the
            // state's own time it is its reset-after, plus at most 2 ms. (Resets too short to
            // outlive the round trips are not measured.)
            let ttl_ms: i64 = redis::cmd("PTTL").arg(&key).query_async(raw).await.unwrap();
            let since_call = started.elapsed() + Duration::from_millis(1);
            let reset = decision.reset_after();
            if reset >= Duration::from_millis(100) {
                assert!(
                    ttl_ms > 0,
                    "{context}: PTTL {ttl_ms} for a reset-after of {reset:?}"
                );
                let ttl = Duration::from_millis(ttl_ms as u64);
                if let Some(expiry) = at.checked_add(ttl + since_call) {
                    let fresh = quota.is_fresh(after, quota.instant(expiry));
                    assert!(fresh, "{context}: PTTL {ttl:?} before fresh");
                }
                let judged_now = at
                    .checked_add(reset)
                    .is_some_and(|reset_at| quota.is_fresh(after, quota.instant(reset_at)));
                if judged_now {
                    assert!(
                        ttl <= ceil_ms(reset) + Duration::from_millis(2)
                            && ttl + since_call >= reset,
                        "{context}: PTTL {ttl:?} for a reset-after of {reset:?}"
                    );
                }
            }
        } else {
            assert_eq!(in_redis, word, "{context}: nothing written (apply {apply})");
        }
    }
}

/// A duration rounded up to whole milliseconds.
fn ceil_ms(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_nanos().div_ceil(1_000_000) as u64)
}

/// Times at the edges of the clock's range and of the scripts' limbs (24 bits; a double's 53
/// bits), and random ones.
fn times(rng: &mut impl Rng, extra: &[u64]) -> Vec<Timestamp> {
    let mut ns = vec![0, 1, 999_999_999, 1_000_000_000, HORIZON_NS - 1, HORIZON_NS];
    ns.extend([
        (1 << 24) - 1,
        1 << 24,
        (1 << 48) - 1,
        1 << 48,
        (1 << 53) + 1,
    ]);
    ns.extend_from_slice(extra);
    ns.extend((0..4).map(|_| rng.gen_range(0..=HORIZON_NS)));
    ns.into_iter()
        .map(|ns| Timestamp::from_ns(ns.min(HORIZON_NS)).unwrap())
        .collect()
}

async fn gcra_cases(url: &str, quota: Gcra, seed: u64) {
    let limiter = limiter(url, quota, "steps-gcra").await;
    let mut raw = raw_connection(url).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let limit = quota.limit();
    let costs = [0, 1, limit / 2, limit.saturating_sub(1), limit];
    // At 16 ticks per ns, 2^28 ns is 2^32 ticks: the scripts' tick limbs carry there.
    let edges = [
        86_400_000_000_000,
        1 << 58,
        (1 << 28) - 1,
        1 << 28,
        (1 << 28) + 1,
    ];
    for at in times(&mut rng, &edges) {
        let now = quota.instant(at).ticks();
        // The tolerance and one unit's increment, in ticks, from the quota's own step: the
        // admission of one unit on a fresh state writes now + T, of the burst now + tau.
        let Step::Allow(one) = quota.step(0, quota.instant(at), 1) else {
            panic!()
        };
        let Step::Allow(all) = quota.step(0, quota.instant(at), limit) else {
            panic!()
        };
        let (interval, tolerance) = (one - now, all - now);
        let mut words = vec![
            None,
            Some(0),
            Some(1),
            Some(now.saturating_sub(1)),
            Some(now),
            Some(now + 1),
            Some(now + interval),
            Some(now + tolerance - interval),
            Some(now + tolerance - interval + 1),
            Some(now + tolerance - 1),
            Some(now + tolerance),
            Some(now + tolerance + 1),
            Some(now.saturating_sub(tolerance)),
            // The low 32 bits all ones, and one past: a carry in the scripts' tick limbs.
            Some(now | 0xffff_ffff),
            Some((now | 0xffff_ffff) + 1),
            Some((now + tolerance) | 0xffff_ffff),
            Some((1 << 63) + (1 << 62)),
            Some(u64::MAX),
            Some(rng.gen()),
        ];
        words.extend((0..3).map(|_| Some(now.saturating_add(rng.gen_range(0..=2 * tolerance)))));
        for word in words {
            for cost in costs {
                assert_step(&limiter, &mut raw, word, at, cost).await;
            }
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn gcra_steps_match_the_rust_step() {
    let Some(url) = redis_url() else { return };
    let quotas = [
        // Whole-nanosecond intervals: 16 ticks per ns.
        Gcra::per_second(10).unwrap().with_burst(5).unwrap(),
        Gcra::per_minute(600).unwrap(),
        // Other intervals: a tick of T / 2^k.
        Gcra::new(3, Duration::from_secs(1)).unwrap(),
        Gcra::new(12_500_000_000, Duration::from_secs(1)).unwrap(),
        // The longest tolerance a day's interval allows (below 2^62 ticks).
        Gcra::per_day(1).unwrap().with_burst(3_000).unwrap(),
        Gcra::every(Duration::from_nanos(1)).unwrap(),
    ];
    for (seed, quota) in quotas.into_iter().enumerate() {
        gcra_cases(&url, quota, seed as u64).await;
    }
}

/// A window word from its fields (the layouts of `src/quota/*_window.rs`).
fn sliding_word(index: u64, previous: u64, current: u64) -> u64 {
    ((index & 0xff_ffff) << 40) | ((previous & 0xf_ffff) << 20) | (current & 0xf_ffff)
}

fn fixed_word(index: u64, count: u64) -> u64 {
    ((index & 0xff_ffff_ffff) << 24) | (count & 0xff_ffff)
}

async fn window_cases<Q: RedisQuota>(
    url: &str,
    quota: Q,
    window_ns: u64,
    seed: u64,
    word_of: impl Fn(u64, u64, u64) -> u64,
) {
    let limiter = limiter(url, quota, "steps-window").await;
    let mut raw = raw_connection(url).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let limit = quota.limit();
    let costs = [0, 1, limit.saturating_sub(1), limit];
    // The last window's start, and multiples of the window where the scripts' estimate of the
    // quotient (in doubles) is most likely off by one.
    let last = HORIZON_NS / window_ns * window_ns;
    let edges = [
        window_ns - 1,
        window_ns,
        window_ns + 1,
        3 * window_ns / 2,
        1 << 50,
        last - 1,
        last,
        last.saturating_add(1).min(HORIZON_NS),
        (1 << 55) / window_ns * window_ns,
        ((1 << 55) / window_ns * window_ns).saturating_sub(1),
    ];
    for at in times(&mut rng, &edges) {
        let index = at.as_ns() / window_ns;
        let counts = [0, 1, limit / 2, limit - 1, limit, 0xf_ffff];
        let indices = [
            index,
            index.wrapping_sub(1),
            index.wrapping_sub(2),
            index + 1,
            index + 1_000,
            index.wrapping_sub(1 << 16),
            index.wrapping_sub((1 << 16) + 1),
            index.wrapping_sub(1 << 30),
            rng.gen(),
        ];
        let mut words = vec![None, Some(0), Some(u64::MAX), Some(rng.gen())];
        for stored_index in indices {
            for previous in counts {
                let current = counts[rng.gen_range(0..counts.len())];
                words.push(Some(word_of(stored_index, previous, current)));
            }
        }
        for word in words {
            for cost in costs {
                assert_step(&limiter, &mut raw, word, at, cost).await;
            }
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn sliding_window_steps_match_the_rust_step() {
    let Some(url) = redis_url() else { return };
    let windows = [
        (7, 1_000_000_000u64),
        (100, 60_000_000_000),
        (SlidingWindow::MAX_LIMIT, 1_000_000),
        (1_000, 1_000_000_007),
        (5, 86_400_000_000_000 * 365),
    ];
    for (seed, (limit, window_ns)) in windows.into_iter().enumerate() {
        let quota = SlidingWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
        window_cases(&url, quota, window_ns, seed as u64, sliding_word).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn fixed_window_steps_match_the_rust_step() {
    let Some(url) = redis_url() else { return };
    let windows = [
        (7, 1_000_000_000u64),
        (100, 60_000_000_000),
        (FixedWindow::MAX_LIMIT, 1_000),
        (3, 1_000_000_007),
        (5, 86_400_000_000_000 * 365),
    ];
    for (seed, (limit, window_ns)) in windows.into_iter().enumerate() {
        let quota = FixedWindow::new(limit, Duration::from_nanos(window_ns)).unwrap();
        let word = |index, count, _| fixed_word(index, count);
        window_cases(&url, quota, window_ns, 10 + seed as u64, word).await;
    }
}

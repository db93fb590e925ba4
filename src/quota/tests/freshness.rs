//! The freshness rank a full table chooses by orders live states as their reset does.

use super::*;

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
    use crate::quota::Gcra;
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

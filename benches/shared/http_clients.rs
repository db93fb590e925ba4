//! The http-layer client pool, shared by the contention benchmark's scenario and
//! `benches/callgrind_http.rs`: how many clients there are and the order a thread walks them in.

use crate::quota_spec::QuotaSpec;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// http-layer, per client IP (nanolimit and tower_governor): far above what a client offers, so
/// every request passes; the burst lets a check pass with a clock reading up to 1 s old (a
/// thread preempted between its reading and its update, as happens with more threads than
/// cores).
pub const HTTP_LAYER_QUOTA: QuotaSpec = QuotaSpec::per_second(1_000_000, 1_000_000);

/// Client addresses in http-layer (one pool, shared by all threads).
pub const HTTP_CLIENTS: u32 = 10_000;

/// http-layer: the order in which thread `thread_index` walks the client pool, cycling: a
/// permutation of `0..HTTP_CLIENTS` seeded by thread index (the same on every call), so that
/// consecutive requests come from unrelated clients and threads do not move in step.
pub fn http_client_order(thread_index: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..HTTP_CLIENTS).collect();
    order.shuffle(&mut StdRng::seed_from_u64(
        0x4874_7470 + thread_index as u64,
    ));
    order
}

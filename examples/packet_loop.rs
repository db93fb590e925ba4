//! A byte-rate limit in a packet loop: 1 Gbit/s (125,000,000 bytes per second, bursts of 64 KiB)
//! charged per packet by its size, with one clock read per batch of packets.
//!
//! ```text
//! cargo run --release --example packet_loop
//! ```
//!
//! The loop reads the limiter's clock once per batch (`limiter.now()`, a [`Timestamp`]) and
//! passes it to every check of the batch, so a check costs no clock read. Packets are made up;
//! the loop runs for 200 ms of wall time and prints the rate it forwarded.

use nanolimit::{Gcra, Limiter, Request, Timestamp};
use std::time::{Duration, Instant};

const BYTES_PER_SECOND: u64 = 125_000_000;
const BATCH: usize = 32;
const RUN_FOR: Duration = Duration::from_millis(200);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let limiter = Limiter::new(Gcra::per_second(BYTES_PER_SECOND)?.with_burst(65_536)?);
    // Packet sizes from a small fixed-seed generator: 64 to 1,500 bytes.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next_size = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        64 + seed % (1_500 - 64 + 1)
    };

    let (mut forwarded_bytes, mut dropped_bytes, mut packets) = (0u64, 0u64, 0u64);
    let started = Instant::now();
    let first: Timestamp = limiter.now();
    let mut last = first;
    while started.elapsed() < RUN_FOR {
        let now = limiter.now();
        last = now;
        for _ in 0..BATCH {
            let size = next_size();
            packets += 1;
            // A packet is never above the burst, so the request is always valid.
            if limiter
                .check_with(Request::cost(size).at(now))?
                .is_allowed()
            {
                forwarded_bytes += size;
            } else {
                dropped_bytes += size;
            }
        }
    }
    let seconds = last.saturating_duration_since(first).as_secs_f64();
    let rate = (forwarded_bytes as f64 - 65_536.0) / seconds;
    println!(
        "{packets} packets in {seconds:.3} s; forwarded {forwarded_bytes} bytes, dropped \
         {dropped_bytes}; rate after the burst {:.1} Mbit/s (limit {} Mbit/s)",
        rate * 8.0 / 1e6,
        BYTES_PER_SECOND * 8 / 1_000_000
    );
    assert!(
        rate <= BYTES_PER_SECOND as f64 * 1.001,
        "never above the limit"
    );
    Ok(())
}

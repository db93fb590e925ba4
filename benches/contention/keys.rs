//! Key patterns of the keyed scenarios: the per-thread key sources used in the measured loop,
//! and, after a run, how often each key was checked (to compute what the quota allows).

pub use crate::http_clients::{http_client_order, HTTP_CLIENTS};
use crate::subjects::KeySource;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::Zipf;
use std::sync::Arc;

/// The key every thread checks in keyed-hot, and thread 0 in keyed-hot-under-flood.
pub const HOT_KEY: u64 = 0x00C0_FFEE;
/// Keys of each thread in keyed-spread (a power of two).
pub const SPREAD_KEYS_PER_THREAD: u64 = 1024;
/// Keys walked in keyed-rotate-100k (shared by all threads, each starting at its own offset).
pub const ROTATE_KEYS: u64 = 100_000;
/// Key space of keyed-zipf-1m.
pub const ZIPF_KEYS: u64 = 1_000_000;
/// Zipf exponent of keyed-zipf-1m.
pub const ZIPF_EXPONENT: f64 = 1.1;
/// Legitimate hot keys in keyed-flood, numbered `1..=FLOOD_LEGITIMATE_KEYS`.
pub const FLOOD_LEGITIMATE_KEYS: u64 = 4;
/// Every this many calls in keyed-flood, a thread checks a legitimate hot key instead of a new
/// one.
pub const FLOOD_LEGITIMATE_EVERY: u64 = 64;
/// Flows in the packet loop (a power of two; shared by all threads).
pub const PACKET_FLOWS: u64 = 65_536;

/// keyed-hot: one key.
pub struct HotKey;

impl KeySource for HotKey {
    #[inline]
    fn next_key(&mut self) -> (u64, bool) {
        (HOT_KEY, false)
    }
}

/// keyed-spread: thread `t` cycles through its own [`SPREAD_KEYS_PER_THREAD`] keys.
pub struct SpreadKeys {
    base: u64,
    index: u64,
}

impl SpreadKeys {
    /// Thread `thread_index`'s keys.
    pub fn new(thread_index: usize) -> Self {
        SpreadKeys {
            base: (thread_index as u64 + 1) << 32,
            index: 0,
        }
    }
}

impl KeySource for SpreadKeys {
    #[inline]
    fn next_key(&mut self) -> (u64, bool) {
        let key = self.base | (self.index & (SPREAD_KEYS_PER_THREAD - 1));
        self.index = self.index.wrapping_add(1);
        (key, false)
    }
}

/// Where thread `thread_index` of `thread_count` starts in a key space of `key_count` keys
/// walked in order: evenly spaced, so threads touch different keys at any moment.
fn start_position(thread_index: usize, thread_count: usize, key_count: u64) -> u64 {
    thread_index as u64 * key_count / thread_count as u64
}

/// keyed-rotate-100k: walks keys `0..ROTATE_KEYS` in order, from an offset per thread.
pub struct RotateKeys {
    position: u64,
}

impl RotateKeys {
    /// Thread `thread_index` of `thread_count`'s walk.
    pub fn new(thread_index: usize, thread_count: usize) -> Self {
        RotateKeys {
            position: start_position(thread_index, thread_count, ROTATE_KEYS),
        }
    }
}

impl KeySource for RotateKeys {
    #[inline]
    fn next_key(&mut self) -> (u64, bool) {
        let key = self.position;
        self.position += 1;
        if self.position == ROTATE_KEYS {
            self.position = 0;
        }
        (key, false)
    }
}

/// keyed-zipf-1m: replays a precomputed sequence of Zipf draws (sampling is not measured).
pub struct ZipfKeys<'a> {
    draws: &'a [u32],
    index: usize,
}

impl<'a> ZipfKeys<'a> {
    /// Replays `draws` (a power-of-two length) from the start.
    pub fn new(draws: &'a [u32]) -> Self {
        debug_assert!(draws.len().is_power_of_two());
        ZipfKeys { draws, index: 0 }
    }
}

impl KeySource for ZipfKeys<'_> {
    #[inline]
    fn next_key(&mut self) -> (u64, bool) {
        let key = self.draws[self.index];
        self.index = (self.index + 1) & (self.draws.len() - 1);
        (u64::from(key), false)
    }
}

/// Draws `draws_per_thread` Zipf ranks (`0..ZIPF_KEYS`, rank 0 the most frequent) for each of
/// `thread_count` threads, seeded by thread index, sampling on all cores.
pub fn zipf_draws(thread_count: usize, draws_per_thread: usize) -> Arc<Vec<Vec<u32>>> {
    let distribution = Zipf::new(ZIPF_KEYS, ZIPF_EXPONENT).expect("valid Zipf parameters");
    let sequences = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..thread_count)
            .map(|thread_index| {
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(0x5EED_0000 + thread_index as u64);
                    (0..draws_per_thread)
                        .map(|_| rng.sample(distribution) as u32 - 1)
                        .collect::<Vec<u32>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("Zipf sampling thread panicked"))
            .collect()
    });
    Arc::new(sequences)
}

/// keyed-flood: a new key on every call (thread index in the high bits, a counter in the low
/// bits), except every [`FLOOD_LEGITIMATE_EVERY`]th call, which checks one of the legitimate
/// hot keys `1..=FLOOD_LEGITIMATE_KEYS` in turn.
pub struct FloodKeys {
    base: u64,
    counter: u64,
}

impl FloodKeys {
    /// Thread `thread_index`'s keys.
    pub fn new(thread_index: usize) -> Self {
        FloodKeys {
            base: (thread_index as u64 + 1) << 40,
            counter: 0,
        }
    }
}

impl KeySource for FloodKeys {
    #[inline]
    fn next_key(&mut self) -> (u64, bool) {
        self.counter += 1;
        if self.counter % FLOOD_LEGITIMATE_EVERY == 0 {
            let turn = self.counter / FLOOD_LEGITIMATE_EVERY;
            (1 + turn % FLOOD_LEGITIMATE_KEYS, true)
        } else {
            (self.base | self.counter, false)
        }
    }
}

/// keyed-hot-under-flood: thread 0 (the measured thread) checks the hot key [`HOT_KEY`] on every
/// call; every other thread checks a new key on every call (thread index in the high bits, a
/// counter in the low bits, as in keyed-flood), never the hot key.
pub enum HotUnderFloodKeys {
    /// Thread 0.
    Hot,
    /// Threads 1 and up.
    Flood {
        /// This thread's high bits.
        base: u64,
        /// Keys checked so far.
        counter: u64,
    },
}

impl HotUnderFloodKeys {
    /// Thread `thread_index`'s keys.
    pub fn new(thread_index: usize) -> Self {
        if thread_index == 0 {
            HotUnderFloodKeys::Hot
        } else {
            HotUnderFloodKeys::Flood {
                base: (thread_index as u64) << 40,
                counter: 0,
            }
        }
    }
}

impl KeySource for HotUnderFloodKeys {
    #[inline]
    fn next_key(&mut self) -> (u64, bool) {
        match self {
            HotUnderFloodKeys::Hot => (HOT_KEY, false),
            HotUnderFloodKeys::Flood { base, counter } => {
                *counter += 1;
                (*base | *counter, false)
            }
        }
    }
}

/// packet-loop: walks the flow numbers in order, from an offset per thread, each mapped through
/// an odd multiplier (a permutation of `0..PACKET_FLOWS`) so that consecutive packets belong to
/// unrelated flows.
pub struct FlowKeys {
    position: u64,
}

impl FlowKeys {
    /// Thread `thread_index` of `thread_count`'s walk.
    pub fn new(thread_index: usize, thread_count: usize) -> Self {
        FlowKeys {
            position: start_position(thread_index, thread_count, PACKET_FLOWS),
        }
    }
}

impl KeySource for FlowKeys {
    #[inline]
    fn next_key(&mut self) -> (u64, bool) {
        let flow = self.position.wrapping_mul(0x9E37_79B9) & (PACKET_FLOWS - 1);
        self.position = (self.position + 1) & (PACKET_FLOWS - 1);
        (flow, false)
    }
}

/// A scenario's key pattern, for the accounting after a run.
#[derive(Clone)]
pub enum KeyPattern {
    /// One state for everyone (direct limiters, keyed-hot).
    Single,
    /// keyed-spread.
    Spread,
    /// keyed-rotate-100k.
    Rotate,
    /// keyed-zipf-1m, with the draws each thread replayed.
    Zipf(Arc<Vec<Vec<u32>>>),
    /// keyed-flood (only the legitimate hot keys are counted).
    Flood,
    /// keyed-hot-under-flood (only the hot key, thread 0's, is counted).
    HotUnderFlood,
    /// packet-loop.
    Flows,
    /// http-layer: each thread cycles through its own order of the shared client pool
    /// ([`http_client_order`]).
    HttpClients,
}

/// Adds one walk of `operations` keys in order from `start` over `0..key_count` to `hits`.
fn add_walk(hits: &mut [u64], start: u64, operations: u64) {
    let key_count = hits.len() as u64;
    let full_passes = operations / key_count;
    let partial = operations % key_count;
    for (key, count) in hits.iter_mut().enumerate() {
        let distance = (key as u64 + key_count - start) % key_count;
        *count += full_passes + u64::from(distance < partial);
    }
}

impl KeyPattern {
    /// How many times each key was checked, given each thread's operation count (for
    /// keyed-flood: each legitimate hot key only; for keyed-hot-under-flood: the hot key only).
    pub fn hits_per_key(&self, operations_per_thread: &[u64]) -> Vec<u64> {
        let thread_count = operations_per_thread.len();
        match self {
            KeyPattern::Single => vec![operations_per_thread.iter().sum()],
            KeyPattern::HotUnderFlood => vec![operations_per_thread.first().copied().unwrap_or(0)],
            KeyPattern::Spread => {
                let mut hits = Vec::new();
                for &operations in operations_per_thread {
                    let mut own = vec![0; SPREAD_KEYS_PER_THREAD as usize];
                    add_walk(&mut own, 0, operations);
                    hits.extend(own);
                }
                hits
            }
            KeyPattern::Rotate | KeyPattern::Flows => {
                let key_count = match self {
                    KeyPattern::Rotate => ROTATE_KEYS,
                    _ => PACKET_FLOWS,
                };
                let mut hits = vec![0; key_count as usize];
                for (thread_index, &operations) in operations_per_thread.iter().enumerate() {
                    let start = start_position(thread_index, thread_count, key_count);
                    add_walk(&mut hits, start, operations);
                }
                hits
            }
            KeyPattern::Zipf(sequences) => {
                let mut hits = vec![0; ZIPF_KEYS as usize];
                for (draws, &operations) in sequences.iter().zip(operations_per_thread) {
                    let length = draws.len() as u64;
                    let (full_passes, partial) = (operations / length, operations % length);
                    for (index, &key) in draws.iter().enumerate() {
                        hits[key as usize] += full_passes + u64::from((index as u64) < partial);
                    }
                }
                hits
            }
            KeyPattern::HttpClients => {
                let mut hits = vec![0; HTTP_CLIENTS as usize];
                for (thread_index, &operations) in operations_per_thread.iter().enumerate() {
                    let length = u64::from(HTTP_CLIENTS);
                    let (full_passes, partial) = (operations / length, operations % length);
                    for (position, &client) in http_client_order(thread_index).iter().enumerate() {
                        hits[client as usize] +=
                            full_passes + u64::from((position as u64) < partial);
                    }
                }
                hits
            }
            KeyPattern::Flood => {
                let mut hits = vec![0; FLOOD_LEGITIMATE_KEYS as usize];
                for &operations in operations_per_thread {
                    // Turns 1..=turns, turn t checks key 1 + t % FLOOD_LEGITIMATE_KEYS.
                    let turns = operations / FLOOD_LEGITIMATE_EVERY;
                    for (slot, count) in hits.iter_mut().enumerate() {
                        let residue = slot as u64;
                        // Turns in 1..=turns congruent to `residue`.
                        let first = if residue == 0 {
                            FLOOD_LEGITIMATE_KEYS
                        } else {
                            residue
                        };
                        if turns >= first {
                            *count += (turns - first) / FLOOD_LEGITIMATE_KEYS + 1;
                        }
                    }
                }
                hits
            }
        }
    }

    /// Distinct keys offered (the CSV's `keys`): the key space, for keyed-flood the new keys
    /// plus the legitimate ones actually checked, for keyed-hot-under-flood the hot key (the one
    /// whose calls are counted).
    pub fn distinct_keys(&self, operations_per_thread: &[u64]) -> u64 {
        let thread_count = operations_per_thread.len() as u64;
        match self {
            KeyPattern::Single | KeyPattern::HotUnderFlood => 1,
            KeyPattern::Spread => SPREAD_KEYS_PER_THREAD * thread_count,
            KeyPattern::Rotate => ROTATE_KEYS,
            KeyPattern::Zipf(_) => ZIPF_KEYS,
            KeyPattern::Flows => PACKET_FLOWS,
            KeyPattern::HttpClients => u64::from(HTTP_CLIENTS),
            KeyPattern::Flood => {
                let total: u64 = operations_per_thread.iter().sum();
                let legitimate: u64 = operations_per_thread
                    .iter()
                    .map(|operations| operations / FLOOD_LEGITIMATE_EVERY)
                    .sum();
                total - legitimate + legitimate.min(FLOOD_LEGITIMATE_KEYS)
            }
        }
    }
}

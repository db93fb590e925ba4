//! Every atomic and lock the crate uses, in one place.
//!
//! Normal builds take them from `core`/`std`. Builds with `RUSTFLAGS="--cfg nanolimit_loom"` take
//! them from [`loom`](https://docs.rs/loom), which then explores every interleaving of the code
//! that uses them (see `loom-tests/`). No other module imports atomics directly, so the model
//! checker sees every synchronising operation the crate performs.

#[cfg(not(nanolimit_loom))]
pub(crate) use alloc::sync::Arc;
#[cfg(all(feature = "std", not(nanolimit_loom)))]
pub(crate) use core::sync::atomic::{fence, AtomicBool};
#[cfg(not(nanolimit_loom))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
/// The leased Redis limiter's table of keys (feature `redis`).
#[cfg(all(not(nanolimit_loom), feature = "redis"))]
pub(crate) use std::sync::RwLock;
#[cfg(all(feature = "std", not(nanolimit_loom)))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(nanolimit_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
#[cfg(all(nanolimit_loom, feature = "redis"))]
pub(crate) use loom::sync::RwLock;
#[cfg(nanolimit_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(nanolimit_loom)]
pub(crate) use loom::thread::{current as current_thread, park, Thread};

/// The hint a spinning reader gives while a writer finishes (the live limiter's quota cell):
/// core's in normal builds, loom's under the model checker, which then lets the writer run.
#[cfg(all(feature = "std", not(nanolimit_loom)))]
pub(crate) use core::hint::spin_loop;
#[cfg(nanolimit_loom)]
pub(crate) use loom::hint::spin_loop;
/// Parking a thread that waits for something another thread hands it (the in-flight limiter's
/// blocking acquire): std's in normal builds, loom's under the model checker, which then explores
/// the unparks racing the parks.
#[cfg(all(feature = "std", not(nanolimit_loom)))]
pub(crate) use std::thread::{current as current_thread, park, Thread};

/// The counter that numbers threads for striped limiters (`thread_index`): std's in
/// every build. It is a `static` (loom's atomics cannot be), and it orders nothing: it only
/// hands out distinct numbers, so no model needs to see it. Loom models pick stripes explicitly.
#[cfg(feature = "std")]
pub(crate) use core::sync::atomic::AtomicUsize as ThreadCounter;

/// How many counting slots the machine gets (`striped::thread_index::slot_count`), computed
/// once: std's in normal builds (loom builds use a constant, and never touch it). Configuration,
/// not synchronisation: every thread reads the same number, and nothing else is ordered by it.
#[cfg(all(feature = "std", not(nanolimit_loom)))]
pub(crate) use std::sync::OnceLock;

//! The in-flight (concurrency) limiters (`nanolimit::inflight`), one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `direct` | `InFlightLimiter` acquires and releases as a sequential counter model; threads never exceed the limit; waiters, blocking and async, are served first come first served; cancellation and bad input |
//! | `keyed` | `KeyedInFlightLimiter` acquires and releases per key as a sequential model; threads never exceed a key's limit and return every unit; full tables under each `WhenFull` policy; only entries whose permits are all dropped are reclaimed |

mod direct;
mod keyed;

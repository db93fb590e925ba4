//! The quotas (GCRA, sliding window, fixed window) and the clock, through the pure
//! [`Quota`](nanolimit::Quota) methods and a direct [`Limiter`](nanolimit::Limiter), one module
//! per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `gcra` | GCRA's edge cases: invalid quotas, costs of zero and above the burst, exact `retry_after` and `reset_after`, readings behind the state, far ahead and past the horizon, the step as the GCRA inequality |
//! | `sliding_window` | the sliding window's edge cases: the previous window's weight, the overshoot across a boundary, exact waits, readings behind the stored window, index wrap, the horizon |
//! | `fixed_window` | the fixed window's edge cases: the count starting over at each boundary, exact waits, readings behind the stored window, index wrap, the horizon |
//! | `reference_models` | each algorithm decides as a plain model written with wide integers, on random schedules and costs (GCRA to within one tick) |
//! | `accuracy` | over long saturated runs, GCRA admits `rate × duration + burst` to within 0.01 % and every window admits exactly its limit |
//! | `concurrency` | threads on one direct limiter and a frozen clock admit exactly its limit: no lost update, no lost capacity |
//! | `clock` | [`Timestamp`](nanolimit::Timestamp) past the horizon is an error, its arithmetic saturates, and [`ManualClock`](nanolimit::ManualClock) stops at the horizon |
//!
//! The per-quota edge-case helpers, written once over [`Quota`](nanolimit::Quota), are in
//! `tests/common/` (`quota_assertions.rs`, `horizon.rs`, `window.rs`).

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod clock;
mod concurrency;
mod fixed_window;
mod gcra;
mod reference_models;
mod sliding_window;

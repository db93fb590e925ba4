//! Counters (`with_counters`, `totals`, `nanolimit::counters`), one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `totals` | totals are exact after multi-thread runs, direct and keyed, however many short-lived threads come and go; limiters without counters decide the same and report none |
//! | `export` | `record_metrics` records the documented names, labels and values through a real recorder (feature `metrics`) |

#[cfg(feature = "metrics")]
mod export;
mod totals;

//! Keyed limiters through their public API, one module per concern:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `concurrency` | every key admits exactly its limit under concurrent checks and inserts |
//! | `tiers` | requests under a tier: its rate or limit, the state shared with the table's quota, tiers that cannot be made or used |
//! | `peek_and_cost` | peeks consume and insert nothing; costs are all or nothing; decisions report what a direct limiter's would |
//! | `full_table` | what each [`WhenFull`](nanolimit::WhenFull) policy does with a new key when every candidate slot is live |
//! | `refused_keys` | a refused new key reports nothing remaining and when a slot frees, never "retry now" |
//! | `reclaim` | expired entries are reused without a sweep; live ones, even to a stale reading, are not |
//! | `remove` | a removed key's next check is a new key's; other keys, reservations and racing checks are unaffected |
//! | `key_modes` | what `Exact` and `Hashed` keys are |
//! | `key_hash` | a flow hash the caller holds, as a `u64` key, spreads over the whole table |
//! | `construction` | construction errors, sizes, and when a table of live keys first refuses one |
//!
//! The flood (millions of keys, memory) is in `keyed_flood.rs`; the comparison with a reference
//! `HashMap` model under random schedules in `keyed_model.rs`. The keyed helpers, written once
//! over the key mode, are `tests/common/keyed.rs`.

#[path = "../common/mod.rs"]
mod common;

mod concurrency;
mod construction;
mod full_table;
mod key_hash;
mod key_modes;
mod peek_and_cost;
mod reclaim;
mod refused_keys;
mod remove;
mod tiers;

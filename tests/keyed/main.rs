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
//! | `model` | a keyed limiter decides exactly as a reference `HashMap` model driven by the quota's step, under random schedules of keys, readings, costs, peeks, tiers and removals, on roomy and crowded tables |
//! | `flood` | millions of distinct keys through a bounded table: the hot key keeps its exact limit, no allocation on the check path, each policy counts what it refuses, and flooded slots are reused |
//! | `table_allocation` | every table size the builder accepts is allocated or a [`BuildError`](nanolimit::BuildError), never an abort, in a child process under an address-space limit |
//!
//! `flood` installs this binary's global allocator, which counts allocations per thread, so the
//! other modules' tests running beside it do not disturb its counts. `table_allocation` re-runs
//! this binary as its child, with a filter naming its child test by its module path. The flood
//! measured as the operating system sees it (resident memory) is `tests/keyed_flood_rss.rs`, a
//! binary of its own. The keyed helpers, written once over the key mode, are
//! `tests/common/keyed.rs`.

#[path = "../common/mod.rs"]
mod common;

mod concurrency;
mod construction;
mod flood;
mod full_table;
mod key_hash;
mod key_modes;
mod model;
mod peek_and_cost;
mod reclaim;
mod refused_keys;
mod remove;
mod table_allocation;
mod tiers;

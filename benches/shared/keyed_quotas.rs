//! The quotas of the keyed-limiter benchmarks, shared by `benches/keyed.rs` and
//! `benches/callgrind_keyed.rs` (included by `#[path]`, after `quota_spec.rs`), so both measure
//! the same thing.

use crate::quota_spec::QuotaSpec;

/// How far the caller-supplied clock moves between two checks: more than the generous quota's
/// emission interval (1 ns), so every allowed check stays allowed and every entry is fresh
/// (reclaimable) one check after its last use.
pub const CALLER_TIME_STEP_NS: u64 = 4;

/// The quota a case runs under.
#[derive(Debug, Clone, Copy)]
pub enum KeyedQuota {
    /// One unit per nanosecond, bursts of 10^9: no single key can be exhausted by this benchmark,
    /// and an entry is equivalent to fresh 1 ns after its last check. For one key, and for
    /// `new_key_each_call`, where fresh entries must be reclaimable at once.
    Generous,
    /// One unit per minute, bursts of 10^6: each key admits a million checks (far more than any
    /// key gets here), and a checked key's entry stays live (not equivalent to fresh, so not
    /// reclaimable) for at least a minute. For the cases over many keys: under
    /// [`KeyedQuota::Generous`], filling a nanolimit table would reclaim the slots of keys filled
    /// a moment earlier (their entries are already equivalent to fresh), so that not every key
    /// would be present when measuring starts.
    ManyKeysStayLive,
    /// One unit per hour: after the first check of a key, every check within the hour is denied.
    OnePerHour,
}

impl KeyedQuota {
    /// The rate and burst every implementation is built with.
    pub const fn spec(self) -> QuotaSpec {
        match self {
            KeyedQuota::Generous => QuotaSpec::per_second(1_000_000_000, 1_000_000_000),
            KeyedQuota::ManyKeysStayLive => QuotaSpec::per_minute(1, 1_000_000),
            KeyedQuota::OnePerHour => QuotaSpec::per_hour(1, 1),
        }
    }
}

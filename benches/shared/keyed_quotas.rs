//! The quotas of the keyed-limiter benchmarks, shared by `benches/keyed.rs` and
//! `examples/callgrind_keyed.rs` (included by `#[path]`), so both measure the same thing.

use nanolimit::Gcra;
use std::num::NonZeroU32;

/// The quota a case runs under.
#[derive(Clone, Copy)]
pub enum Quota {
    /// One unit per nanosecond, bursts of 10^9: no single key can be exhausted by this benchmark,
    /// and an entry is equivalent to fresh 1 ns after its last check. For one key, and for
    /// `new_key_each_call`, where fresh entries must be reclaimable at once.
    Generous,
    /// One unit per minute, bursts of 10^6: each key admits a million checks (far more than any
    /// key gets here), and a checked key's entry stays live (not equivalent to fresh, so not
    /// reclaimable) for at least a minute. For the cases over many keys: under
    /// [`Quota::Generous`], filling a nanolimit table would reclaim the slots of keys filled a
    /// moment earlier (their entries are already equivalent to fresh), so that not every key
    /// would be present when measuring starts.
    ManyKeysStayLive,
    /// One unit per hour: after the first check of a key, every check within the hour is denied.
    OnePerHour,
}

impl Quota {
    pub fn nanolimit(self) -> Gcra {
        match self {
            Quota::Generous => Gcra::per_second(1_000_000_000)
                .and_then(|quota| quota.with_burst(1_000_000_000))
                .expect("valid quota"),
            Quota::ManyKeysStayLive => Gcra::per_minute(1)
                .and_then(|quota| quota.with_burst(1_000_000))
                .expect("valid quota"),
            Quota::OnePerHour => Gcra::per_hour(1).expect("valid quota"),
        }
    }

    pub fn governor(self) -> governor::Quota {
        match self {
            Quota::Generous => {
                governor::Quota::per_second(NonZeroU32::new(1_000_000_000).expect("non-zero"))
            }
            Quota::ManyKeysStayLive => governor::Quota::per_minute(NonZeroU32::MIN)
                .allow_burst(NonZeroU32::new(1_000_000).expect("non-zero")),
            Quota::OnePerHour => governor::Quota::per_hour(NonZeroU32::MIN),
        }
    }
}

//! The `metrics` feature: a limiter's counters and a keyed table's occupancy recorded through
//! the [`metrics`](https://docs.rs/metrics) facade, under the names and labels the
//! [module documentation](super#metrics-names-feature-metrics) lists.

use crate::engine::stats::Stats;

/// Checks allowed and denied.
pub(crate) const REQUESTS_TOTAL: &str = "nanolimit_requests_total";
/// Units of the checks allowed and denied.
pub(crate) const UNITS_TOTAL: &str = "nanolimit_units_total";
/// Slots of a keyed table that hold an entry.
pub(crate) const KEYED_ENTRIES: &str = "nanolimit_keyed_entries";
/// Live keys a keyed table was sized for.
pub(crate) const KEYED_CAPACITY: &str = "nanolimit_keyed_capacity";
/// A keyed table's slow-path events.
pub(crate) const KEYED_EVENTS_TOTAL: &str = "nanolimit_keyed_events_total";

/// Sets the request and unit counters of `limiter` to its `stats`' check figures.
pub(crate) fn record_checks(limiter: &str, stats: &Stats) {
    for (outcome, calls, units) in [
        ("allowed", stats.allowed, stats.allowed_units),
        ("denied", stats.denied, stats.denied_units),
    ] {
        metrics::counter!(REQUESTS_TOTAL, "limiter" => limiter.to_owned(), "outcome" => outcome)
            .absolute(calls);
        metrics::counter!(UNITS_TOTAL, "limiter" => limiter.to_owned(), "outcome" => outcome)
            .absolute(units);
    }
}

/// Sets the occupancy gauges and event counters of keyed `limiter`.
pub(crate) fn record_keyed(limiter: &str, stats: &Stats, capacity: usize) {
    // Gauges are f64; entry counts are far below 2^53, where the conversion is exact.
    metrics::gauge!(KEYED_ENTRIES, "limiter" => limiter.to_owned()).set(stats.entries as f64);
    metrics::gauge!(KEYED_CAPACITY, "limiter" => limiter.to_owned()).set(capacity as f64);
    for (event, count) in [
        ("insert", stats.inserts),
        ("reclaim", stats.reclaims),
        ("refused_new_key", stats.refused_new_keys),
        ("untracked_new_key", stats.untracked_new_keys),
        ("eviction", stats.evictions),
    ] {
        metrics::counter!(KEYED_EVENTS_TOTAL, "limiter" => limiter.to_owned(), "event" => event)
            .absolute(count);
    }
}

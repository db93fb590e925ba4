//! The `metrics` feature: `record_metrics` through a real recorder (metrics-util's
//! `DebuggingRecorder`), names, labels and values as documented in `nanolimit::counters`.

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use nanolimit::{Gcra, KeyedLimiter, Limiter, ManualClock, Request};

/// A recorded metric: kind, name, sorted labels, value.
type Recorded = (MetricKind, String, Vec<(String, String)>, DebugValue);

/// Every metric recorded while `record` ran.
fn recorded(record: impl FnOnce()) -> Vec<Recorded> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, record);
    let mut metrics: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _unit, _description, value)| {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|label| (label.key().to_owned(), label.value().to_owned()))
                .collect();
            labels.sort();
            (kind, key.name().to_owned(), labels, value)
        })
        .collect();
    metrics.sort_by(|a, b| (&a.1, &a.2).cmp(&(&b.1, &b.2)));
    metrics
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut labels: Vec<_> = pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    labels.sort();
    labels
}

#[test]
fn a_direct_limiter_records_its_totals_as_counters() {
    let limiter =
        Limiter::with_clock(Gcra::per_second(10).unwrap(), ManualClock::new()).with_counters();
    assert!(limiter.check_with(Request::cost(9)).unwrap().is_allowed());
    assert!(limiter.check_with(Request::cost(4)).unwrap().is_denied());
    assert!(limiter.check().is_allowed());
    let metrics = recorded(|| limiter.record_metrics("global"));
    let expected = [
        ("nanolimit_requests_total", "allowed", 2),
        ("nanolimit_requests_total", "denied", 1),
        ("nanolimit_units_total", "allowed", 10),
        ("nanolimit_units_total", "denied", 4),
    ];
    assert_eq!(metrics.len(), expected.len(), "{metrics:?}");
    for ((kind, name, got_labels, value), (want_name, outcome, count)) in
        metrics.iter().zip(expected)
    {
        assert_eq!(*kind, MetricKind::Counter);
        assert_eq!(name, want_name);
        assert_eq!(
            *got_labels,
            labels(&[("limiter", "global"), ("outcome", outcome)])
        );
        assert_eq!(*value, DebugValue::Counter(count));
    }
}

#[test]
fn recording_again_sets_the_counters_to_the_new_totals() {
    let limiter =
        Limiter::with_clock(Gcra::per_second(10).unwrap(), ManualClock::new()).with_counters();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let _ = limiter.check();
        limiter.record_metrics("api");
        let _ = limiter.check();
        let _ = limiter.check();
        limiter.record_metrics("api");
    });
    let allowed = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .find(|(key, ..)| {
            key.key().name() == "nanolimit_requests_total"
                && key
                    .key()
                    .labels()
                    .any(|label| label.key() == "outcome" && label.value() == "allowed")
        })
        .map(|(.., value)| value);
    assert_eq!(allowed, Some(DebugValue::Counter(3)));
}

#[test]
fn a_limiter_without_counters_records_no_request_metrics() {
    let limiter = Limiter::new(Gcra::per_second(10).unwrap());
    let _ = limiter.check();
    assert!(recorded(|| limiter.record_metrics("plain")).is_empty());
}

#[test]
fn a_keyed_limiter_records_occupancy_events_and_totals() {
    let limiter = KeyedLimiter::builder(Gcra::per_second(1).unwrap())
        .capacity(4)
        .shards(1)
        .clock(ManualClock::new())
        .with_counters()
        .build()
        .unwrap();
    for key in 0..20u32 {
        let _ = limiter.check(&key);
    }
    let stats = limiter.stats();
    let metrics = recorded(|| limiter.record_metrics("per-ip"));
    let value_of = |name: &str, extra: &[(&str, &str)]| {
        let mut want = vec![("limiter", "per-ip")];
        want.extend_from_slice(extra);
        let want = labels(&want);
        metrics
            .iter()
            .find(|(_, got_name, got_labels, _)| got_name == name && *got_labels == want)
            .map(|(kind, _, _, value)| (*kind, format!("{value:?}")))
    };
    let gauge = |value: u64| {
        let value = DebugValue::Gauge((value as f64).into());
        Some((MetricKind::Gauge, format!("{value:?}")))
    };
    let counter = |value: u64| {
        let value = DebugValue::Counter(value);
        Some((MetricKind::Counter, format!("{value:?}")))
    };
    assert_eq!(
        value_of("nanolimit_keyed_entries", &[]),
        gauge(stats.entries)
    );
    assert_eq!(value_of("nanolimit_keyed_capacity", &[]), gauge(4));
    assert_eq!(
        value_of("nanolimit_keyed_events_total", &[("event", "insert")]),
        counter(stats.inserts)
    );
    assert_eq!(
        value_of(
            "nanolimit_keyed_events_total",
            &[("event", "refused_new_key")]
        ),
        counter(stats.refused_new_keys)
    );
    for event in ["reclaim", "untracked_new_key", "eviction"] {
        assert_eq!(
            value_of("nanolimit_keyed_events_total", &[("event", event)]),
            counter(0)
        );
    }
    assert!(stats.refused_new_keys > 0);
    assert_eq!(
        value_of("nanolimit_requests_total", &[("outcome", "allowed")]),
        counter(stats.entries)
    );
    assert_eq!(
        value_of("nanolimit_requests_total", &[("outcome", "denied")]),
        counter(20 - stats.entries)
    );
    assert_eq!(metrics.len(), 11, "{metrics:?}");
}

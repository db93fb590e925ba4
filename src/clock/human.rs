//! Durations printed for people, in error messages.

use core::fmt;
use core::time::Duration;

/// Formats a duration for people: three significant digits in the largest unit that keeps it
/// at or above 1 (`16 ns`, `1 ms`, `18.3 years`).
pub(crate) struct HumanDuration(pub(crate) Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, f64); 8] = [
            ("years", 365.0 * 86_400e9),
            ("days", 86_400e9),
            ("hours", 3_600e9),
            ("minutes", 60e9),
            ("s", 1e9),
            ("ms", 1e6),
            ("µs", 1e3),
            ("ns", 1.0),
        ];
        let ns = self.0.as_nanos() as f64;
        let (unit, size) = UNITS
            .into_iter()
            .find(|&(_, size)| ns >= size)
            .unwrap_or(("ns", 1.0));
        let value = ns / size;
        // `value % 1.0`: `f64::fract` needs `std`.
        let digits = if value >= 100.0 || value % 1.0 == 0.0 {
            0
        } else if value >= 10.0 {
            1
        } else {
            2
        };
        write!(f, "{value:.digits$} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_in_their_largest_unit() {
        let cases = [
            (Duration::from_nanos(16), "16 ns"),
            (Duration::from_micros(1), "1 µs"),
            (Duration::from_millis(1), "1 ms"),
            (Duration::from_millis(1_500), "1.50 s"),
            (Duration::from_secs(90), "1.50 minutes"),
            (Duration::from_nanos(1 << 59), "18.3 years"),
        ];
        for (duration, text) in cases {
            assert_eq!(HumanDuration(duration).to_string(), text);
        }
    }
}

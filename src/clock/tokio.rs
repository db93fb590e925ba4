//! A clock that follows tokio's time (feature `tokio`).

use super::{Clock, Timestamp};

/// A clock that reads tokio's time ([`tokio::time::Instant`]), so that limiters follow
/// tokio's paused time in tests (`#[tokio::test(start_paused = true)]`, `tokio::time::advance`)
/// exactly as the timers of their async waits do.
///
/// Outside a paused runtime it reads the OS monotonic clock, like
/// [`QuantaClock`](crate::QuantaClock) but slower to read. Its origin is its creation; clones
/// share it.
///
/// ```
/// use nanolimit::Clock;
/// use nanolimit::clock::TokioClock;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let clock = TokioClock::new();
/// tokio::time::sleep(Duration::from_secs(5)).await; // paused time: instant
/// assert_eq!(clock.now().since_origin(), Duration::from_secs(5));
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }

    /// The clock's origin, as a tokio instant.
    pub fn origin(&self) -> tokio::time::Instant {
        self.origin
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    #[inline]
    fn now(&self) -> Timestamp {
        let since_origin = tokio::time::Instant::now().saturating_duration_since(self.origin);
        Timestamp::from_duration(since_origin).unwrap_or(Timestamp::HORIZON)
    }
}

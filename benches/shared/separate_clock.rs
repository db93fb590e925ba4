//! A clock type of the counted benchmark cases' own: the default clock under another type, so
//! that a limiter built with counters is a separate instantiation from the plain one it is
//! compared with. (With one type for both, the second caller of the same generic check changes
//! the compiler's inlining of the first, and the plain case's count would measure that.)

use nanolimit::{Clock, QuantaClock, Timestamp};

/// [`QuantaClock`], read as it is, under a type of its own.
#[derive(Debug, Clone, Default)]
pub struct SeparateClock(pub QuantaClock);

impl Clock for SeparateClock {
    #[inline]
    fn now(&self) -> Timestamp {
        self.0.now()
    }
}

//! What each quota hands its Redis script: the script (the quota's step in Lua, on the quota's
//! own state word) and the per-call arguments, computed here with the quota's own numbers so
//! that the script does only exact integer additions, comparisons and the instant's
//! conversion. The arguments are decimal numbers below 2^53, already split into the limbs the
//! script computes on, so that it reads each by coercion, with no function call (see
//! `lua/prelude.lua`).

use crate::engine::error::BuildError;
use crate::quota::{FixedWindow, Gcra, Quota, SlidingWindow, WindowLength};
use ::redis::Script;
use std::sync::LazyLock;

/// A quota whose state word a [`RedisLimiter`](super::RedisLimiter) keeps in Redis: [`Gcra`],
/// [`SlidingWindow`] and [`FixedWindow`]. The stored value is the quota's own state word (16
/// hex digits), and the script applies the same step as the in-process limiters. (The exact
/// [`SlidingLog`](crate::sliding_log::SlidingLog) is no state word: Redis keeps its log, see
/// [`RedisLimiter<SlidingLog>`](super::RedisLimiter#the-exact-sliding-log).)
///
/// ```
/// use nanolimit::redis::RedisQuota;
/// use nanolimit::{FixedWindow, Gcra, SlidingWindow};
///
/// fn algorithm<Q: RedisQuota>(_: &Q) -> &'static str {
///     Q::ALGORITHM
/// }
/// assert_eq!(algorithm(&Gcra::per_second(10)?), "gcra");
/// assert_eq!(algorithm(&SlidingWindow::per_minute(10)?), "sliding-window");
/// assert_eq!(algorithm(&FixedWindow::per_minute(10)?), "fixed-window");
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
pub trait RedisQuota: Quota {
    /// The algorithm's name in Redis key names (`{prefix}:{ALGORITHM}:{{key}}`), so that
    /// limiters of different algorithms never read each other's words.
    const ALGORITHM: &'static str;

    /// The script: the common prelude (`src/redis/lua/prelude.lua`) and the quota's step.
    #[doc(hidden)]
    fn script() -> &'static Script;

    /// Appends the quota's arguments (from `ARGV[4]` on) for a request of `cost` (at most the
    /// limit).
    #[doc(hidden)]
    fn push_arguments(&self, cost: u64, arguments: &mut Vec<String>);
}

pub(crate) mod sealed {
    use crate::engine::error::BuildError;

    /// What a [`RedisLimiter`](crate::redis::RedisLimiter) limits by: a
    /// [`RedisQuota`](super::RedisQuota), whose state word Redis keeps, or the exact
    /// [`SlidingLog`](crate::sliding_log::SlidingLog), whose log it keeps. What the parts of
    /// the limiter and its builder that are the same for both need. Sealed, and named only
    /// inside the crate: a limiter's type names its quota.
    pub trait RedisKind: core::fmt::Debug {
        /// The algorithm's name in Redis key names (`{prefix}:{ALGORITHM}:{{key}}`).
        const ALGORITHM: &'static str;

        /// Why a limiter of this quota cannot be built, if it cannot.
        fn check_buildable(&self) -> Result<(), BuildError>;
    }
}
pub(crate) use sealed::RedisKind;

/// Every quota whose state word Redis keeps: any such quota fits.
impl<Q: RedisQuota> RedisKind for Q {
    const ALGORITHM: &'static str = <Q as RedisQuota>::ALGORITHM;

    fn check_buildable(&self) -> Result<(), BuildError> {
        Ok(())
    }
}

/// A u64 as the scripts read a word or a time: 16 hex digits.
pub(crate) fn hex(value: u64) -> String {
    format!("{value:016x}")
}

/// A u64 as two decimal arguments: its bits 48 and up, and its low 48 bits (the scripts split
/// the latter into limbs of 24 bits).
pub(crate) fn push_high_and_low_48(value: u64, arguments: &mut Vec<String>) {
    arguments.extend([
        (value >> 48).to_string(),
        (value & ((1 << 48) - 1)).to_string(),
    ]);
}

/// A u64 as two decimal arguments: its high and low 32 bits.
fn push_high_and_low_32(value: u64, arguments: &mut Vec<String>) {
    arguments.extend([(value >> 32).to_string(), (value & 0xffff_ffff).to_string()]);
}

static GCRA_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/prelude.lua"),
        include_str!("lua/gcra.lua")
    ))
});

static SLIDING_WINDOW_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/prelude.lua"),
        include_str!("lua/window.lua"),
        include_str!("lua/sliding_window.lua")
    ))
});

static FIXED_WINDOW_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/prelude.lua"),
        include_str!("lua/window.lua"),
        include_str!("lua/fixed_window.lua")
    ))
});

impl RedisQuota for Gcra {
    const ALGORITHM: &'static str = "gcra";

    fn script() -> &'static Script {
        &GCRA_SCRIPT
    }

    fn push_arguments(&self, cost: u64, arguments: &mut Vec<String>) {
        let scale = self.scale_in_ticks();
        // At most the tolerance (below 2^62): the cost is at most the burst.
        let increment_ticks = cost.saturating_mul(scale.emission_interval_ticks);
        // For the expiry only: a little over the true value, so a key never expires early.
        let ns_per_tick = (1u64 << scale.ticks_per_ns_shift) as f64 / scale.ticks_per_ns_q59 as f64
            * (1.0 + f64::EPSILON * 4.0);
        // The script's reading is `(now_ns × scale) >> 59`, the shift written out in it.
        debug_assert_eq!(scale.ticks_per_ns_shift, 59);
        // The scale is at most 2^63: its bits 48 and up are at most 2^15.
        push_high_and_low_48(scale.ticks_per_ns_q59, arguments);
        match scale.tolerance_ticks.checked_sub(increment_ticks) {
            Some(slack) => push_high_and_low_32(slack, arguments),
            // Never admitted (the script's `-1`).
            None => arguments.extend(["-1".to_owned(), "0".to_owned()]),
        }
        push_high_and_low_32(increment_ticks, arguments);
        arguments.push(format!("{ns_per_tick:e}"));
    }
}

/// The window scripts' arguments (`src/redis/lua/window.lua`).
fn push_window_arguments(
    length: WindowLength,
    forward_windows: u64,
    limit: u64,
    cost: u64,
    arguments: &mut Vec<String>,
) {
    push_high_and_low_48(length.window_ns, arguments);
    arguments.extend([
        limit.to_string(),
        forward_windows.to_string(),
        cost.to_string(),
    ]);
}

impl RedisQuota for SlidingWindow {
    const ALGORITHM: &'static str = "sliding-window";

    fn script() -> &'static Script {
        &SLIDING_WINDOW_SCRIPT
    }

    fn push_arguments(&self, cost: u64, arguments: &mut Vec<String>) {
        let (length, forward_windows) = self.length_and_forward_windows();
        push_window_arguments(length, forward_windows, self.limit(), cost, arguments);
    }
}

impl RedisQuota for FixedWindow {
    const ALGORITHM: &'static str = "fixed-window";

    fn script() -> &'static Script {
        &FIXED_WINDOW_SCRIPT
    }

    fn push_arguments(&self, cost: u64, arguments: &mut Vec<String>) {
        let (length, forward_windows) = self.length_and_forward_windows();
        push_window_arguments(length, forward_windows, self.limit(), cost, arguments);
    }
}

//! Why a request can never be judged, and why a limiter cannot be built.

use crate::clock::HumanDuration;
use alloc::string::String;
use core::fmt;
use core::time::Duration;

/// Why a request was not served as asked: either it can never be (its cost, its tier), or a
/// wait for it could not start in time.
///
/// The first kind is not "not now": waiting will never make such a request pass, and it is
/// reported apart from a denied [`Decision`](crate::Decision) so that a caller can tell a client
/// to split the request (an HTTP server might answer 413 rather than 429). The second kind
/// comes only from waits (`wait`, `until_ready`), which report a start they cannot meet
/// instead of a denial; [`retry_after`](Self::retry_after) says when trying again may succeed.
///
/// ```
/// use nanolimit::{Gcra, Limiter, ManualClock, Request, RequestError};
/// use std::time::Duration;
///
/// let limiter = Limiter::with_clock(Gcra::per_second(10)?, ManualClock::new());
/// assert_eq!(
///     limiter.check_with(Request::cost(11)).unwrap_err(),
///     RequestError::CostAboveLimit { cost: 11, limit: 10 }
/// );
/// // Ten units now; an eleventh would wait 100 ms, more than the 10 ms allowed.
/// assert!(limiter.check_with(Request::cost(10))?.is_allowed());
/// let soon = Request::new().max_wait(Duration::from_millis(10));
/// let error = limiter.wait_with(soon).unwrap_err();
/// assert_eq!(error, RequestError::WaitTooLong { wait: Duration::from_millis(100) });
/// assert_eq!(error.retry_after(), Some(Duration::from_millis(100)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestError {
    /// The cost is larger than the quota (or the request's tier) admits at once.
    CostAboveLimit {
        /// The cost that was asked for.
        cost: u64,
        /// The most the quota admits at once: the GCRA burst, or the limit per window.
        limit: u64,
    },
    /// The request's tier was made by a limiter whose quota counts in other units (another
    /// GCRA tick, another window length), so its state cannot be shared with this limiter's.
    /// Make tiers with the limiter that uses them.
    ForeignTier,
    /// A wait would have had to last `wait`, longer than the request's maximum wait
    /// ([`Request::max_wait`](crate::Request::max_wait)): a deadline it cannot meet, or a full
    /// [`LeakyBucket`](crate::LeakyBucket) queue. Nothing was booked.
    WaitTooLong {
        /// How long it would have had to wait.
        wait: Duration,
    },
    /// A wait found a keyed table full of live keys, with no slot for its key
    /// ([`WhenFull::Deny`](crate::WhenFull::Deny)). Nothing was booked.
    TableFull {
        /// How long until a slot frees for it, at least 1 ns.
        retry_after: Duration,
    },
}

impl RequestError {
    /// For a wait that could not start in time, how long until trying again may succeed;
    /// `None` for a request that can never pass as it is.
    pub fn retry_after(&self) -> Option<Duration> {
        match *self {
            RequestError::WaitTooLong { wait } => Some(wait),
            RequestError::TableFull { retry_after } => Some(retry_after),
            RequestError::CostAboveLimit { .. } | RequestError::ForeignTier => None,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RequestError::CostAboveLimit { cost, limit } => write!(
                f,
                "cost {cost} exceeds the quota's limit of {limit}: it can never be admitted"
            ),
            RequestError::ForeignTier => f.write_str(
                "the request's tier was made by a limiter whose quota counts in other units",
            ),
            RequestError::WaitTooLong { wait } => write!(
                f,
                "the request would have to wait {wait:?}, longer than its maximum wait"
            ),
            RequestError::TableFull { retry_after } => write!(
                f,
                "the keyed table is full of live keys; a slot frees in {retry_after:?}"
            ),
        }
    }
}

impl core::error::Error for RequestError {}

/// Why a limiter could not be built: every constructor and `build` that can fail says why
/// with one of these, before anything is allocated or started (and
/// [`InFlightLimiter::add_permits`](crate::inflight::InFlightLimiter::add_permits), for a raised limit
/// the limiter could not have been built with).
///
/// ```
/// use nanolimit::{BuildError, Gcra, KeyedLimiter};
///
/// let zero = KeyedLimiter::<u64, _>::new(Gcra::per_second(1)?, 0);
/// assert_eq!(zero.err(), Some(BuildError::ZeroCapacity));
/// let three_shards = KeyedLimiter::<u64, _>::builder(Gcra::per_second(1)?).shards(3).build();
/// assert_eq!(three_shards.err(), Some(BuildError::ShardsNotPowerOfTwo { shards: 3 }));
/// # Ok::<(), nanolimit::QuotaError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BuildError {
    /// A limit of zero: an in-flight limiter that could never grant a permit.
    ZeroLimit,
    /// A limit above what the limiter keeps: a keyed sliding log's per-key limit, an in-flight
    /// limit (at construction, or raised by `add_permits`), a Redis sliding log's limit.
    LimitTooLarge {
        /// The limit asked for.
        limit: u64,
        /// The largest this limiter allows.
        max: u64,
    },
    /// A keyed table (or a leased limiter's local one) for zero keys.
    ZeroCapacity,
    /// A shard count that is zero or not a power of two.
    ShardsNotPowerOfTwo {
        /// The shard count asked for.
        shards: usize,
    },
    /// More shards than the table has buckets' worth of slots (a shard would hold less than a
    /// bucket), or more than 2^24 (a shard is named by the top bits of the 32 hash bits that
    /// draw a key's bucket, and at least 8 are left to draw the bucket within the shard).
    TooManyShards {
        /// The shard count asked for.
        shards: usize,
        /// The most this capacity allows.
        max: usize,
    },
    /// A capacity whose table would not fit in memory addressing, would have more than 2^32
    /// buckets (about 2.3 × 10^10 keys: placement draws a bucket from 32 hash bits), or is
    /// above a limiter's own maximum.
    CapacityTooLarge {
        /// The capacity asked for.
        capacity: usize,
        /// The largest this limiter allows.
        max: usize,
    },
    /// The allocator could not provide the limiter's memory (a table, a sliding log's records).
    AllocationFailed {
        /// The bytes asked for.
        bytes: usize,
    },
    /// An eviction policy ([`WhenFull::EvictClosestToFresh`](crate::WhenFull)) for a keyed
    /// in-flight limiter, whose entries with units in flight must keep their slots: use
    /// `WhenFull::Deny` or `WhenFull::Allow`.
    EvictionNotSupported,
    /// A striped limiter of no stripes, or of more than the maximum.
    StripeCount {
        /// The stripe count asked for.
        stripes: usize,
        /// The most a striped limiter may have.
        max: usize,
    },
    /// Lease sizes that are not a range of at least one unit (a smallest lease of zero, or
    /// above the largest).
    LeaseUnits {
        /// The smallest lease asked for.
        min_units: u64,
        /// The largest lease asked for.
        max_units: u64,
    },
    /// A largest lease above the quota's burst: the shared quota could never grant it.
    LeaseAboveBurst {
        /// The largest lease asked for.
        max_units: u64,
        /// The quota's burst.
        burst: u64,
    },
    /// A largest lease above what the lease's word holds.
    LeaseTooLarge {
        /// The largest lease asked for.
        max_units: u64,
        /// The most the word holds.
        max: u64,
    },
    /// A lease lifetime outside the range the lease's word can time.
    LeaseLifetime {
        /// The lifetime asked for.
        lifetime: Duration,
        /// The shortest allowed.
        min: Duration,
        /// The longest allowed.
        max: Duration,
    },
    /// A Redis limiter's timeout of zero: every call would fall back.
    ZeroTimeout,
    /// A Redis limiter's epoch so late that the server's clock would read before it (seconds
    /// since the Unix epoch were expected).
    EpochTooLate {
        /// The epoch asked for, in seconds since the Unix epoch.
        epoch_unix_seconds: u64,
    },
    /// A Redis URL or connection configuration the client refused.
    Connection {
        /// The client's message.
        message: String,
    },
    /// Background refills asked for outside a tokio runtime: build within one, or turn them
    /// off.
    NoRuntime,
    /// An HTTP rate-limit policy name that is empty or not printable ASCII: it could not be
    /// written in a header.
    InvalidPolicyName {
        /// The name asked for.
        name: String,
    },
    /// An IPv6 prefix longer than an address, for keying clients by their network.
    InvalidPrefixLength {
        /// The prefix length asked for, in bits.
        bits: u8,
        /// The longest prefix, in bits: the whole address.
        max: u8,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(written) = self.fmt_lease(f) {
            return written;
        }
        if let Some(written) = self.fmt_integration(f) {
            return written;
        }
        self.fmt_size(f)
    }
}

impl BuildError {
    /// The message of a limit, table or allocation that cannot be.
    fn fmt_size(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroLimit => f.write_str("a limit of zero: nothing could ever pass"),
            BuildError::LimitTooLarge { limit, max } => {
                write!(f, "a limit of {limit} is above this limiter's maximum of {max}")
            }
            BuildError::ZeroCapacity => f.write_str("a keyed table's capacity is zero"),
            BuildError::ShardsNotPowerOfTwo { shards } => {
                write!(f, "a keyed table's shard count {shards} is not a power of two")
            }
            BuildError::TooManyShards { shards, max } => write!(
                f,
                "a keyed table's shard count {shards} is above the {max} this capacity allows"
            ),
            BuildError::CapacityTooLarge { capacity, max } => write!(
                f,
                "a capacity of {capacity} keys is above the maximum of {max} (or cannot be addressed)"
            ),
            BuildError::AllocationFailed { bytes } => {
                write!(f, "could not allocate {bytes} bytes for the limiter")
            }
            BuildError::EvictionNotSupported => f.write_str(
                "a keyed in-flight limiter cannot evict entries with units in flight: \
                 use WhenFull::Deny or WhenFull::Allow",
            ),
            _ => f.write_str("the limiter could not be built"),
        }
    }

    /// The message of a stripe or lease configuration that cannot work, if this is one.
    fn fmt_lease(&self, f: &mut fmt::Formatter<'_>) -> Option<fmt::Result> {
        Some(match self {
                BuildError::StripeCount { stripes, max } => {
                    write!(f, "a striped limiter needs 1 to {max} stripes, not {stripes}")
                }
                BuildError::LeaseUnits {
                    min_units,
                    max_units,
                } => write!(
                    f,
                    "lease sizes {min_units}..={max_units} are not a range of at least one unit"
                ),
                BuildError::LeaseAboveBurst { max_units, burst } => write!(
                    f,
                    "a lease of {max_units} units exceeds the quota's burst of {burst}: it could never be granted"
                ),
                BuildError::LeaseTooLarge { max_units, max } => write!(
                    f,
                    "a lease of {max_units} units exceeds the {max} a lease holds"
                ),
                BuildError::LeaseLifetime { lifetime, min, max } => write!(
                    f,
                    "a lease lifetime of {} is outside {} to {}",
                    HumanDuration(*lifetime),
                    HumanDuration(*min),
                    HumanDuration(*max)
                ),
            _ => return None,
        })
    }

    /// The message of an integration (Redis, HTTP) that cannot be set up, if this is one.
    fn fmt_integration(&self, f: &mut fmt::Formatter<'_>) -> Option<fmt::Result> {
        Some(match self {
                BuildError::ZeroTimeout => {
                    f.write_str("a Redis limiter's timeout is zero: every call would fall back")
                }
                BuildError::EpochTooLate { epoch_unix_seconds } => write!(
                    f,
                    "an epoch of {epoch_unix_seconds} Unix seconds is too late (seconds, not milliseconds?)"
                ),
                BuildError::Connection { message } => write!(f, "Redis connection: {message}"),
                BuildError::NoRuntime => f.write_str(
                    "background refills need a tokio runtime: build within one, or turn them off",
                ),
                BuildError::InvalidPolicyName { name } => write!(
                    f,
                    "a rate-limit policy name must be non-empty printable ASCII, not {name:?}"
                ),
                BuildError::InvalidPrefixLength { bits, max } => {
                    write!(f, "an IPv6 prefix of {bits} bits is longer than the {max} of an address")
                }

            _ => return None,
        })
    }
}

impl core::error::Error for BuildError {}

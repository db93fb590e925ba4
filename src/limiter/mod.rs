//! The rate limiters: one core ([`core`]) over a store of state words, under the public
//! [`Limiter`](crate::Limiter) (one word) and [`KeyedLimiter`](crate::KeyedLimiter) (the keyed
//! table); their reservations and waits, and their counters.

pub(crate) mod core;
pub mod counters;
pub(crate) mod direct;
#[cfg(feature = "std")]
pub mod keyed;
#[cfg(feature = "std")]
pub(crate) mod keyed_builder;
#[cfg(feature = "std")]
pub(crate) mod leaky_bucket;
#[cfg(feature = "std")]
pub(crate) mod lease;
pub(crate) mod rate_limit;
#[cfg(feature = "tokio")]
pub(crate) mod ready;
pub(crate) mod reservation;
#[cfg(feature = "std")]
pub(crate) mod wait;

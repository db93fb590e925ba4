//! The engine: how any state word is updated and what a limiter answers. One compare-and-swap
//! driver applies any operation's pure step ([`driver`], [`operation`]); a request says what to
//! judge ([`request`]); a decision says what was judged ([`decision`]).

pub(crate) mod decision;
pub(crate) mod driver;
pub(crate) mod error;
pub(crate) mod judge;
pub(crate) mod operation;
pub(crate) mod request;
pub(crate) mod stats;
pub(crate) mod tuple;

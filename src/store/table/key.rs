//! Key modes: how a keyed table stores a key's identity, [`Hashed`] (any `Hash` key, as a 64-bit
//! seeded hash) or [`Exact`] (integer keys up to 128 bits, stored as they are).

use super::slot::{Slot, SlotOps};
use super::Table;
use core::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Keys stored exactly by [`Exact`] tables: integers up to 128 bits and IP addresses.
///
/// [`IpAddr::V4`] is stored as its IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), so it shares a
/// state with that address written as IPv6: the same host.
///
/// ```
/// use nanolimit::keyed::ExactKey;
/// use std::net::Ipv4Addr;
///
/// assert_eq!(Ipv4Addr::new(10, 0, 0, 1).to_u128(), 0x0a00_0001);
/// ```
pub trait ExactKey {
    /// The key as a 128-bit integer; distinct keys must give distinct integers.
    fn to_u128(&self) -> u128;
}

macro_rules! exact_unsigned {
    ($($t:ty),*) => {$(
        impl ExactKey for $t {
            #[inline]
            fn to_u128(&self) -> u128 {
                *self as u128
            }
        }
    )*};
}
exact_unsigned!(u8, u16, u32, u64, u128, usize);

macro_rules! exact_signed {
    ($($t:ty => $u:ty),*) => {$(
        impl ExactKey for $t {
            #[inline]
            fn to_u128(&self) -> u128 {
                *self as $u as u128
            }
        }
    )*};
}
exact_signed!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128, isize => usize);

impl ExactKey for Ipv4Addr {
    #[inline]
    fn to_u128(&self) -> u128 {
        u32::from(*self) as u128
    }
}

impl ExactKey for Ipv6Addr {
    #[inline]
    fn to_u128(&self) -> u128 {
        u128::from(*self)
    }
}

impl ExactKey for IpAddr {
    #[inline]
    fn to_u128(&self) -> u128 {
        match self {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(*v6),
        }
    }
}

impl<T: ExactKey + ?Sized> ExactKey for &T {
    #[inline]
    fn to_u128(&self) -> u128 {
        (**self).to_u128()
    }
}

/// Key mode: keys are stored as their 64-bit seeded hash (any `Hash` key: strings, tuples,
/// addresses). The default. Its cost per key is under [sizing](crate::keyed#sizing), its collision
/// probability under [key identity and collisions](crate::keyed#key-identity-and-collisions).
///
/// ```
/// use nanolimit::{Gcra, KeyedLimiter, QuantaClock};
/// use nanolimit::keyed::Hashed;
/// use std::net::Ipv4Addr;
///
/// // `Hashed` is the default key mode: these two types are the same.
/// let limiter: KeyedLimiter<(Ipv4Addr, u16), Gcra> = KeyedLimiter::new(Gcra::per_second(5)?, 1_000)?;
/// let spelled_out: &KeyedLimiter<(Ipv4Addr, u16), Gcra, QuantaClock, Hashed> = &limiter;
/// assert!(spelled_out.check(&(Ipv4Addr::LOCALHOST, 443)).is_allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Hashed;

/// Key mode: integer keys up to 128 bits (IPv4, IPv6, `u64` ids; see [`ExactKey`]) are stored
/// exactly, so two keys never share a state. Its cost per key is under [sizing](crate::keyed#sizing).
///
/// ```
/// use nanolimit::{Gcra, KeyedLimiter, QuantaClock};
/// use nanolimit::keyed::Exact;
/// use std::net::IpAddr;
///
/// let limiter: KeyedLimiter<IpAddr, Gcra, QuantaClock, Exact> =
///     KeyedLimiter::builder(Gcra::per_second(5)?).capacity(1_000).exact_keys().build()?;
/// assert!(limiter.check(&"2001:db8::1".parse()?).is_allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Exact;

/// How a keyed table stores its keys: [`Hashed`] or [`Exact`]. Sealed: what a mode does is
/// internal to the table.
pub trait KeyMode<K: ?Sized>: private::Sealed<K> + Send + Sync + 'static {}

impl<K: Hash + ?Sized> KeyMode<K> for Hashed {}
impl<K: ExactKey + ?Sized> KeyMode<K> for Exact {}

impl<K: Hash + ?Sized> private::Sealed<K> for Hashed {
    type Slot = Slot<1>;

    #[inline]
    fn identify(hasher: &ahash::RandomState, key: &K) -> (u64, [u64; 1]) {
        let hash = hasher.hash_one(key);
        (hash, [hash])
    }
}

impl<K: ExactKey + ?Sized> private::Sealed<K> for Exact {
    type Slot = Slot<2>;

    #[inline]
    fn identify(hasher: &ahash::RandomState, key: &K) -> (u64, [u64; 2]) {
        let value = key.to_u128();
        (hasher.hash_one(value), [value as u64, (value >> 64) as u64])
    }
}

/// Ties a builder to its key type and key mode without owning either.
pub(crate) type KeyMarker<K, M> = core::marker::PhantomData<(fn(&K), M)>;

/// A key located in a table: its hash (where it may live) and its identity words (what its
/// slot stores), computed once per call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Located<I> {
    pub(crate) hash: u64,
    pub(crate) identity: I,
}

impl<S: SlotOps> Table<S> {
    /// Where `key`, stored as mode `M` says, lives in this table.
    #[inline]
    pub(crate) fn locate<K: ?Sized, M: KeyMode<K, Slot = S>>(
        &self,
        key: &K,
    ) -> Located<S::Identity> {
        let (hash, identity) = M::identify(self.hasher(), key);
        Located { hash, identity }
    }
}

pub(crate) mod private {
    use super::super::slot::SlotOps;

    /// Seals [`KeyMode`](super::KeyMode), and holds what the table needs of a mode.
    pub trait Sealed<K: ?Sized> {
        /// The slot a key of this mode lives in.
        type Slot: SlotOps;
        /// The key's hash (for placement) and identity words (stored in its slot).
        fn identify(
            hasher: &ahash::RandomState,
            key: &K,
        ) -> (u64, <Self::Slot as SlotOps>::Identity);
    }
}

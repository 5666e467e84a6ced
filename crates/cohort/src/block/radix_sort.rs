//! Block radix sort (CUB's `BlockRadixSort`): a tile of keys (and values) held in the blocked
//! arrangement, sorted by a range of their bits, ascending or descending, stable.
//!
//! **Design.** Least-significant digit first, [`RANK_BITS`] (2) bits per rank pass. A pass is
//! CUB's `BlockRadixRank` with packed counters: each thread counts its items' digits in one
//! `u64` of four 16-bit counters (`+= 1 << 16 * digit`: no per-digit array, so no local
//! memory), a block exclusive scan ([`scan_items`](super::scan_items)) of those words gives
//! every thread the counts of each digit before its items, and the tile's aggregate, shifted
//! and added to itself, the first rank of each digit (`c0 + … + c(d-1)` in counter `d`). An
//! item's rank is then `first[d] + before_thread[d] + before_item_in_thread[d]`: the tile's
//! items in order of digit, and in input order within a digit (stable). The keys (and values)
//! are scattered to the ranks in shared memory and read back blocked: the next pass sees them
//! in the new order. The counters never carry into each other because no count exceeds the
//! tile's length, which must be below 2^16 (`block_size() * N < 65536`).
//!
//! **Results.** After the sort, thread `t` holds the tile's sorted elements `t * N .. t * N + N`
//! (blocked), as `items[0..N]`; ties keep their input order (input position `t * N + j`).
//! Every thread holds `N` items: to sort a partial tile, fill the missing items with a key that
//! sorts last (the maximum for an ascending sort, e.g. [`RadixKey::LAST`]); they stay after
//! every real item with the same key (stability), so the real items are the tile's first ones.
//!
//! **Key order** ([`RadixKey`]): unsigned integers as they are; signed ones with the sign bit
//! flipped; floats by their bits, the sign bit flipped for a positive sign and all bits for a
//! negative one (the usual twiddle), which gives `-NaN < -inf < … < -0.0 < +0.0 < … < +inf <
//! +NaN` (a NaN with its sign bit set first, one without last; NaNs among themselves by
//! payload), where `partial_cmp` would call `-0.0 == +0.0` and NaN unordered. Descending is the
//! reverse of that order, still stable (equal keys in input order).

use crate::DeviceCopy;
use crate::shared::SharedSlice;
use crate::thread;

/// Bits of a key per block rank pass (four digits: four 16-bit counters in a `u64`).
pub const RANK_BITS: u32 = 2;

/// A key that radix sorts: its bits as an unsigned number whose order is the key's.
pub trait RadixKey: DeviceCopy {
    /// Bits of the key (at most 64).
    const BITS: u32;
    /// A key that sorts first (ascending) among keys of this type: every twiddled bit zero.
    const FIRST: Self;
    /// A key that sorts last (ascending) among keys of this type: every twiddled bit one.
    const LAST: Self;
    /// The key's bits, twiddled so that unsigned order of the results is the key order (see
    /// the [module docs](self)); the low [`BITS`](Self::BITS) bits are used.
    fn to_radix(self) -> u64;
}

macro_rules! radix_unsigned {
    ($($t:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            const FIRST: Self = 0;
            const LAST: Self = <$t>::MAX;
            #[inline(always)]
            fn to_radix(self) -> u64 {
                self as u64
            }
        }
    )*};
}
radix_unsigned!(u8, u16, u32, u64);

macro_rules! radix_signed {
    ($($t:ty => $u:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            const FIRST: Self = <$t>::MIN;
            const LAST: Self = <$t>::MAX;
            #[inline(always)]
            fn to_radix(self) -> u64 {
                ((self as $u) ^ (1 << (<$t>::BITS - 1))) as u64
            }
        }
    )*};
}
radix_signed!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

impl RadixKey for f32 {
    const BITS: u32 = 32;
    /// `-NaN` with every payload bit set (bits `0xffff_ffff`).
    const FIRST: Self = f32::from_bits(0xffff_ffff);
    /// `+NaN` with every payload bit set (bits `0x7fff_ffff`).
    const LAST: Self = f32::from_bits(0x7fff_ffff);
    #[inline(always)]
    fn to_radix(self) -> u64 {
        let b = self.to_bits();
        let mask = if b >> 31 != 0 { u32::MAX } else { 1 << 31 };
        (b ^ mask) as u64
    }
}

impl RadixKey for f64 {
    const BITS: u32 = 64;
    /// `-NaN` with every payload bit set.
    const FIRST: Self = f64::from_bits(u64::MAX);
    /// `+NaN` with every payload bit set.
    const LAST: Self = f64::from_bits(0x7fff_ffff_ffff_ffff);
    #[inline(always)]
    fn to_radix(self) -> u64 {
        let b = self.to_bits();
        let mask = if b >> 63 != 0 { u64::MAX } else { 1 << 63 };
        b ^ mask
    }
}

/// Which bits a radix sort sorts by, and in which direction: bits `begin .. end` of the
/// twiddled key ([`RadixKey::to_radix`]), `end` clamped to the key's width; an empty range
/// leaves the keys as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RadixBits {
    /// The first (least significant) bit sorted by.
    pub begin: u32,
    /// One past the last bit sorted by.
    pub end: u32,
    /// Largest key first (equal keys still in input order).
    pub descending: bool,
}

impl RadixBits {
    /// Every bit of `K`, ascending.
    #[must_use]
    pub const fn all<K: RadixKey>() -> Self {
        Self { begin: 0, end: K::BITS, descending: false }
    }

    /// Every bit of `K`, descending.
    #[must_use]
    pub const fn all_descending<K: RadixKey>() -> Self {
        Self { begin: 0, end: K::BITS, descending: true }
    }

    /// The range with `end` clamped to `K`'s width (empty if `begin >= end`).
    #[inline(always)]
    #[must_use]
    pub const fn clamped<K: RadixKey>(self) -> (u32, u32) {
        let end = if self.end < K::BITS { self.end } else { K::BITS };
        let begin = if self.begin < end { self.begin } else { end };
        (begin, end)
    }

    /// The digit of `key` of `width` bits from bit `shift` (`shift < 64`), complemented when
    /// descending, so that the smallest digit goes first either way.
    #[inline(always)]
    #[must_use]
    pub fn digit<K: RadixKey>(self, key: K, shift: u32, width: u32) -> u32 {
        let mask = (1u64 << width) - 1;
        let d = (key.to_radix() >> shift) & mask;
        (if self.descending { mask - d } else { d }) as u32
    }
}

/// The tile's stable ranks of `digits` (each below 4), held blocked: item `j` of thread `t`
/// goes to rank `r[j]`, the number of the tile's items with a smaller digit, or with the same
/// digit and a smaller position `t * N + j`. Every thread of the block must call it (block size
/// a multiple of 32, `block_size() * N < 65536`). The ranks are a permutation of the tile's
/// positions `0 .. block_size() * N`.
#[inline(always)]
#[track_caller]
#[must_use]
pub fn rank_digits<const N: usize>(digits: &[u32; N]) -> [u32; N] {
    assert!(
        (thread::block_size() as usize).saturating_mul(N) < 1 << 16,
        "block radix rank: a tile of block_size() * N items must be shorter than 65536"
    );
    // `local[j]`: the thread's counts of each digit before item `j`, one 16-bit counter per
    // digit; no counter exceeds the tile's length (< 2^16), so none carries into the next.
    let mut run = 0u64;
    let mut local = [0u64; N];
    let mut j = 0;
    while j < N {
        local[j] = run;
        run = run.wrapping_add(1 << (16 * (digits[j] & 3)));
        j += 1;
    }
    let add = |a: u64, b: u64| a.wrapping_add(b);
    let s = super::scan_items(&[run], add);
    let agg = s.aggregate;
    // Counter `d` of `first`: c0 + … + c(d-1), the tile's items with a digit below `d`.
    let first = (agg << 16).wrapping_add(agg << 32).wrapping_add(agg << 48);
    let base = first.wrapping_add(s.prefix.unwrap_or(0));
    core::array::from_fn(|j| ((base.wrapping_add(local[j]) >> (16 * (digits[j] & 3))) & 0xffff) as u32)
}

/// Moves `items` to `ranks` through `scratch` and back in the blocked arrangement: thread `t`
/// gets the items ranked `t * N .. t * N + N`.
#[inline(always)]
#[track_caller]
fn scatter_blocked<T: DeviceCopy, const N: usize>(
    scratch: &SharedSlice<T>,
    items: &[T; N],
    ranks: &[u32; N],
) -> [T; N] {
    let bs = thread::block_size() as usize;
    assert!(scratch.len() >= bs * N, "block radix sort: the shared scratch holds fewer than block_size() * N elements");
    let t = thread::thread_rank_in_block() as usize;
    let mut j = 0;
    while j < N {
        // Checked: the ranks are a permutation of `0 .. bs * N` (`rank_digits`), so every slot
        // is written by one item only; the check costs a compare and keeps a broken rank from
        // leaving the scratch.
        scratch.store(ranks[j] as usize, items[j]);
        j += 1;
    }
    crate::sync::sync_threads();
    // SAFETY: `t * N + j < bs * N <= scratch.len()` (checked above).
    let out = core::array::from_fn(|j| unsafe { scratch.load_unchecked(t * N + j) });
    crate::sync::sync_threads();
    out
}

/// Sorts the tile of `keys` (blocked: thread `t` holds tile elements `t * N + j`) by `bits`,
/// stable, through `scratch` (shared memory of at least `block_size() * N` keys). Thread `t`
/// gets sorted elements `t * N .. t * N + N`. Every thread of the block must call it (block
/// size a multiple of 32, `block_size() * N < 65536`).
///
/// # Panics
/// If `scratch` is too small or the tile too long.
#[inline(always)]
#[track_caller]
#[must_use]
pub fn radix_sort_keys<K: RadixKey, const N: usize>(scratch: &SharedSlice<K>, keys: [K; N], bits: RadixBits) -> [K; N] {
    let (begin, end) = bits.clamped::<K>();
    let mut keys = keys;
    let mut shift = begin;
    while shift < end {
        let width = if end - shift < RANK_BITS { end - shift } else { RANK_BITS };
        let digits = core::array::from_fn(|j| bits.digit(keys[j], shift, width));
        let ranks = rank_digits(&digits);
        keys = scatter_blocked(scratch, &keys, &ranks);
        shift += width;
    }
    keys
}

/// [`radix_sort_keys`] carrying a value with each key (CUB's `SortBlockedToBlocked` of pairs):
/// thread `t` gets sorted keys `t * N ..` and their values; `values_scratch` holds at least
/// `block_size() * N` values.
///
/// # Panics
/// As [`radix_sort_keys`].
#[inline(always)]
#[track_caller]
#[must_use]
pub fn radix_sort_pairs<K: RadixKey, V: DeviceCopy, const N: usize>(
    keys_scratch: &SharedSlice<K>,
    values_scratch: &SharedSlice<V>,
    keys: [K; N],
    values: [V; N],
    bits: RadixBits,
) -> ([K; N], [V; N]) {
    let (begin, end) = bits.clamped::<K>();
    let (mut keys, mut values) = (keys, values);
    let mut shift = begin;
    while shift < end {
        let width = if end - shift < RANK_BITS { end - shift } else { RANK_BITS };
        let digits = core::array::from_fn(|j| bits.digit(keys[j], shift, width));
        let ranks = rank_digits(&digits);
        keys = scatter_blocked(keys_scratch, &keys, &ranks);
        values = scatter_blocked(values_scratch, &values, &ranks);
        shift += width;
    }
    (keys, values)
}

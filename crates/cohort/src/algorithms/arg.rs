//! Device argmin / argmax (CUB's `DeviceReduce::ArgMin`, `ArgMax`): the first position of the
//! smallest / largest element, and the element, as a reduction over (value, index) pairs
//! ([`ArgPair`]) with a total order: a better value wins, equal values the smaller index. That
//! operator is associative and commutative, so the device reduce's two launches work
//! unchanged ([`arg_tiles`], then [`reduce_tiles`](super::reduce_tiles) over the partials).
//!
//! **Order** ([`ArgValue`]): integers as usual; floats by [`RadixKey`] order (`-inf < … < -0.0
//! < +0.0 < … < +inf`, so `-0.0` is the smaller zero) with **every NaN better than any
//! number** for both argmin and argmax (as `torch.argmin`/`argmax`: the first NaN's position
//! is the answer when there is one; all NaNs are equal, whatever their sign or payload).

use crate::DeviceCopy;
use crate::block::{self, RadixKey, load_blocked};
use crate::thread;

/// Threads per block of the arg kernels.
pub const ARG_BLOCK: u32 = 256;
/// Bytes per thread of a tile (four 16-byte vectors).
pub const ARG_BYTES: usize = 64;

/// A value and its position.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArgPair<T> {
    /// The value.
    pub value: T,
    /// The position's low and high 32 bits.
    pub index: [u32; 2],
}

// SAFETY: `#[repr(C)]` of a `DeviceCopy` `T` and two `u32`s: valid for every bit pattern, no
// references; `__NO_PADDING` fails to compile for a `T` that would leave padding.
unsafe impl<T: DeviceCopy> DeviceCopy for ArgPair<T> {
    const __NO_PADDING: () = {
        assert!(
            size_of::<Self>() == 8 + size_of::<T>(),
            "argmin/argmax: the element type leaves padding before two u32s (its size must be a multiple of 4 and of its alignment)"
        );
        T::__NO_PADDING
    };
}

impl<T> ArgPair<T> {
    /// `value` at position `index`.
    #[inline(always)]
    #[must_use]
    pub const fn new(value: T, index: u64) -> Self {
        Self { value, index: [index as u32, (index >> 32) as u32] }
    }

    /// The position.
    #[inline(always)]
    #[must_use]
    pub const fn index(&self) -> u64 {
        self.index[0] as u64 | (self.index[1] as u64) << 32
    }
}

/// An element type of argmin / argmax: ordered by [`RadixKey`], with NaNs first.
pub trait ArgValue: RadixKey {
    /// Whether the value is a NaN (never, for integers).
    fn is_nan_value(self) -> bool;
}

macro_rules! arg_ints {
    ($($t:ty),*) => {$(
        impl ArgValue for $t {
            #[inline(always)]
            fn is_nan_value(self) -> bool {
                false
            }
        }
    )*};
}
arg_ints!(u32, i32, u64, i64);

impl ArgValue for f32 {
    #[inline(always)]
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}

impl ArgValue for f64 {
    #[inline(always)]
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}

/// The order key of `v`: smaller is better (argmin: the [`RadixKey`] bits; argmax: their
/// complement), and every NaN is 0, before every number (a number's key is never 0: a float's
/// twiddled bits are at least those of `-inf`, `0x007f_ffff`; an integer has no NaN).
#[inline(always)]
#[must_use]
pub fn arg_key<T: ArgValue>(v: T, max: bool) -> u64 {
    let r = v.to_radix();
    if v.is_nan_value() {
        0
    } else if max {
        !r
    } else {
        r
    }
}

/// Whether `a` is strictly better than `b` (smaller for argmin, larger for argmax; a NaN
/// better than any number, two NaNs equal).
#[inline(always)]
#[must_use]
pub fn arg_better<T: ArgValue>(a: T, b: T, max: bool) -> bool {
    arg_key(a, max) < arg_key(b, max)
}

/// The better of two pairs (equal values: the smaller index): associative and commutative.
#[inline(always)]
#[must_use]
pub fn arg_combine<T: ArgValue>(a: ArgPair<T>, b: ArgPair<T>, max: bool) -> ArgPair<T> {
    let (ka, kb) = (arg_key(a.value, max), arg_key(b.value, max));
    if kb < ka || (kb == ka && b.index() < a.index()) { b } else { a }
}

/// One block's share of an argmin (`max == false`) or argmax over `input`: the best
/// [`ArgPair`] of tiles `b, b + G, …` (tiles of `block_size() * N`; full ones read as
/// vector-striped 16-byte loads), to every thread; `None` if the block has no element. Every
/// thread of the block calls it (block size a multiple of 32).
#[inline(always)]
#[track_caller]
#[must_use]
pub fn arg_tiles<T: ArgValue, const N: usize>(input: &[T], max: bool) -> Option<ArgPair<T>> {
    let bs = thread::block_size() as usize;
    let tile_len = bs * N;
    let n = input.len();
    let full = (n / tile_len) as u64;
    let t = thread::thread_rank_in_block() as usize;
    // Elements per 16-byte vector (vector-striped full tiles).
    let per_vec = (16 / size_of::<T>()).max(1);
    // The thread's best so far: its key, position and value (items come in increasing
    // position, so a strictly smaller key replaces it: the first of equals stays).
    let mut best: Option<(u64, usize, T)> = None;
    for tile in block::tiles(n.div_ceil(tile_len) as u64) {
        let id = tile.id();
        let base = id as usize * tile_len;
        let vectors = if id < full { super::reduce::load_full_vectors::<T, N>(input, id) } else { None };
        let (items, valid, striped) = match vectors {
            Some(items) => (items, N, true),
            None => {
                let (items, valid) = load_blocked::<T, N>(input, id, input[0]);
                (items, valid, false)
            }
        };
        crate::unroll::<N>(|j| {
            if j < valid {
                // Item `j`: vector `j / per_vec` of the thread (vector `t + k * bs` of the
                // tile), element `j % per_vec` of it; or blocked, element `t * N + j`.
                let at = if striped { (t + (j / per_vec) * bs) * per_vec + j % per_vec } else { t * N + j };
                let k = arg_key(items[j], max);
                best = match best {
                    Some((bk, _, _)) if bk <= k => best,
                    _ => Some((k, base + at, items[j])),
                };
            }
        });
    }
    let best = best.map(|(_, i, v)| ArgPair::new(v, i as u64));
    let (v, valid) = match best {
        Some(b) => (b, 1),
        None => (ArgPair::new(input.first().copied().unwrap_or_else(super::scan::placeholder), 0), 0),
    };
    block::reduce_items(&[v], valid, move |a, b| arg_combine(a, b, max))
}

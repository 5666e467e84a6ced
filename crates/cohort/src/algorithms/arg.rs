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

/// Whether `a` is strictly better than `b` (smaller for argmin, larger for argmax; a NaN
/// better than any number, two NaNs equal).
#[inline(always)]
#[must_use]
pub fn arg_better<T: ArgValue>(a: T, b: T, max: bool) -> bool {
    match (a.is_nan_value(), b.is_nan_value()) {
        (true, false) => true,
        (_, true) => false,
        _ => {
            let (x, y) = (a.to_radix(), b.to_radix());
            if max { x > y } else { x < y }
        }
    }
}

/// The better of two pairs (equal values: the smaller index): associative and commutative.
#[inline(always)]
#[must_use]
pub fn arg_combine<T: ArgValue>(a: ArgPair<T>, b: ArgPair<T>, max: bool) -> ArgPair<T> {
    if arg_better(b.value, a.value, max) {
        b
    } else if arg_better(a.value, b.value, max) || a.index() <= b.index() {
        a
    } else {
        b
    }
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
    let mut best: Option<ArgPair<T>> = None;
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
                let p = ArgPair::new(items[j], (base + at) as u64);
                best = Some(match best {
                    Some(b) => arg_combine(b, p, max),
                    None => p,
                });
            }
        });
    }
    let (v, valid) = match best {
        Some(b) => (b, 1),
        None => (ArgPair::new(input.first().copied().unwrap_or_else(super::scan::placeholder), 0), 0),
    };
    block::reduce_items(&[v], valid, move |a, b| arg_combine(a, b, max))
}

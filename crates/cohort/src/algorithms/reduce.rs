//! Device reduce: each block folds tiles `b, b + G, …` into one partial; a second launch of
//! one block folds the partials.

use crate::DeviceCopy;
use crate::block::{self, load_blocked};
use crate::cg::ReduceOp;
use crate::thread;

/// Threads per block of the reduce kernels.
pub const REDUCE_BLOCK: u32 = 256;
/// Items per thread of the reduce kernels (16 × 4 bytes: four 16-byte loads a tile).
pub const REDUCE_ITEMS: usize = 16;

#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct V16([u32; 4]);

/// Folds this thread's `N` items.
#[inline(always)]
fn fold<T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(items: &[T; N], valid: usize, op: Op) -> T {
    let mut acc = items[0];
    let mut j = 1;
    while j < N {
        if j < valid {
            acc = op.combine(acc, items[j]);
        }
        j += 1;
    }
    acc
}

/// A full tile of `src` in the **vector-striped** arrangement: the tile as 16-byte vectors,
/// vector `t + k * block_size()` to thread `t` (every warp access coalesced, each a
/// `ld.global.v4`); `None` when the tile does not start 16-byte aligned or `N * size_of::<T>()`
/// is not a multiple of 16. The order of items is not the elements' (fine for a commutative
/// reduction).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(super) fn load_full_vectors<T: DeviceCopy, const N: usize>(src: &[T], tile: u64) -> Option<[T; N]> {
    let bs = thread::block_size() as usize;
    let len = bs * N;
    let base = (tile as usize).checked_mul(len)?;
    // Whole elements per 16-byte vector: an element that straddles two vectors (12, 24 or
    // 32 bytes) would be put together from parts of different elements (vector `t + k * bs`
    // is not next to vector `t + (k - 1) * bs`). Such types take the blocked path.
    let size = size_of::<T>();
    if size == 0 || size > 16 || !16usize.is_multiple_of(size) {
        return None;
    }
    if !(N * size).is_multiple_of(16) || base > src.len() || src.len() - base < len {
        return None;
    }
    // SAFETY: `base < src.len()` (a full tile lies inside).
    let p = unsafe { src.as_ptr().add(base) };
    if !(p as usize).is_multiple_of(16) {
        return None;
    }
    let per = N * size_of::<T>() / 16;
    let t = thread::thread_rank_in_block() as usize;
    let mut out = core::mem::MaybeUninit::<[T; N]>::uninit();
    let dst = out.as_mut_ptr().cast::<[u32; 4]>();
    let vp = p.cast::<V16>();
    let mut k = 0;
    while k < per {
        // SAFETY: vector `t + k * bs < bs * per` lies in the tile (whose `len * size_of::<T>()`
        // bytes are `bs * per` vectors), 16-byte aligned (checked); `dst` has room for `per`
        // `[u32; 4]`s (`N * size_of::<T>()` bytes), written unaligned.
        unsafe { dst.add(k).write_unaligned(vp.add(t + k * bs).read().0) };
        k += 1;
    }
    crate::assert_no_padding::<T>();
    // SAFETY: every byte of `out` was written (`per * 16 == N * size_of::<T>()`), and every
    // bit pattern is a valid `T` (`DeviceCopy`, no padding).
    Some(unsafe { out.assume_init() })
}

/// One block's share of a device reduction: the combination (`op`, which must be associative
/// and commutative) of tiles `b, b + G, …` of `input` (tiles of `block_size() * N` elements,
/// `G` blocks), to every thread; `None` if the block has no element. Every thread of the block
/// must call it (block size a multiple of 32).
///
/// The full tiles are read as coalesced 16-byte vectors without per-element checks when
/// `input` is aligned; only the last partial tile checks bounds.
#[inline(always)]
#[track_caller]
#[must_use]
pub fn reduce_tiles<T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(input: &[T], op: Op) -> Option<T> {
    let tile_len = thread::block_size() as usize * N;
    let n = input.len();
    let full = (n / tile_len) as u64;
    let total = n.div_ceil(tile_len) as u64;
    let mut acc: Option<T> = None;
    for tile in block::tiles(total) {
        let id = tile.id();
        let (items, valid) = if id < full {
            match load_full_vectors::<T, N>(input, id) {
                Some(items) => (items, N),
                None => load_blocked::<T, N>(input, id, input[0]),
            }
        } else {
            // The last, partial tile (n > 0 here, so `input[0]` exists).
            load_blocked::<T, N>(input, id, input[0])
        };
        if valid > 0 {
            let f = fold(&items, valid, op);
            acc = Some(match acc {
                Some(a) => op.combine(a, f),
                None => f,
            });
        }
    }
    // A thread without items passes a placeholder that `reduce_items` skips (`valid == 0`);
    // every thread calls it at this one site.
    let (v, valid) = match acc {
        Some(a) => (a, 1),
        None => (zeroed(), 0),
    };
    block::reduce_items(&[v], valid, op)
}

/// A `T` of zero bytes, as a placeholder that is never combined.
#[inline(always)]
fn zeroed<T: DeviceCopy>() -> T {
    crate::assert_no_padding::<T>();
    // SAFETY: every bit pattern, zero included, is a valid `DeviceCopy` value.
    unsafe { core::mem::zeroed() }
}

//! Block loads: a tile of a `&[T]` into `N` items per thread, blocked or striped.

use super::{V16, tile_span, vectors};
use crate::DeviceCopy;
use crate::thread;

/// Tile `tile` of `src` in the **blocked** arrangement: thread `t` gets elements
/// `t * N .. t * N + N` of the tile as `items[0..N]`; elements past the end of `src` are
/// `fill`. Returns the items and how many of them are in `src` (`N` except in a last partial
/// tile).
///
/// A full tile is read without per-element checks, as 16-byte vector loads when the tile
/// starts 16-byte aligned and `N * size_of::<T>()` is a multiple of 16 (CUB's
/// `BLOCK_LOAD_VECTORIZE`), else element by element (`BLOCK_LOAD_DIRECT`); a tile of such
/// items that is not 16-byte aligned is read element by element with checks.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn load_blocked<T: DeviceCopy, const N: usize>(src: &[T], tile: u64, fill: T) -> ([T; N], usize) {
    let (len, base) = tile_span(tile, N);
    let first = base.saturating_add(thread::thread_rank_in_block() as usize * N);
    let full = base <= src.len() && src.len() - base >= len;
    // A full tile whose items are 16-byte vectors but not aligned takes the checked path:
    // one unchecked path per type, so that the compiler cannot merge a vector path's loads
    // with a scalar one's (it did, splitting 8-byte `T`s' vectors into scalar loads).
    if full && (!vectors::<T, N>() || (src.as_ptr().wrapping_add(first) as usize).is_multiple_of(16)) {
        // SAFETY: `first .. first + N` is inside the tile (rank < block size), inside `src`.
        let p = unsafe { src.as_ptr().add(first) };
        if vectors::<T, N>() {
            let mut out = core::mem::MaybeUninit::<[T; N]>::uninit();
            let dst = out.as_mut_ptr().cast::<u8>();
            let vp = p.cast::<V16>();
            let mut k = 0;
            while k < N * size_of::<T>() / 16 {
                // SAFETY: vector `k` of the thread's `N` elements is in bounds (above) and
                // 16-byte aligned (checked); `out` has room for it at byte `16k` (written
                // unaligned).
                unsafe { dst.add(16 * k).cast::<[u32; 4]>().write_unaligned(vp.add(k).read().0) };
                k += 1;
            }
            crate::assert_no_padding::<T>();
            // SAFETY: every byte of `out` was written (`N * size_of::<T>()` is a multiple of
            // 16), and every bit pattern is a valid `T` (`DeviceCopy`, no padding).
            (unsafe { out.assume_init() }, N)
        } else {
            // SAFETY: in bounds (above); any alignment of `T` is kept.
            (core::array::from_fn(|j| unsafe { p.add(j).read() }), N)
        }
    } else {
        let valid = src.len().saturating_sub(first).min(N);
        // SAFETY: `first + j < src.len()` when `j < valid`.
        (core::array::from_fn(|j| if j < valid { unsafe { *src.as_ptr().add(first + j) } } else { fill }), valid)
    }
}

/// Tile `tile` of `src` in the **striped** arrangement: thread `t` gets elements
/// `t + j * block_size()` of the tile as `items[j]` (every access of a warp coalesced);
/// elements past the end are `fill`. Returns the items and how many are in `src` (they are
/// the first ones: `items[..valid]`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn load_striped<T: DeviceCopy, const N: usize>(src: &[T], tile: u64, fill: T) -> ([T; N], usize) {
    let (len, base) = tile_span(tile, N);
    let bs = thread::block_size() as usize;
    let first = base.saturating_add(thread::thread_rank_in_block() as usize);
    if base <= src.len() && src.len() - base >= len {
        // SAFETY: `first + j * bs` is inside the tile for j < N, inside `src`.
        (core::array::from_fn(|j| unsafe { *src.get_unchecked(first + j * bs) }), N)
    } else {
        let mut valid = 0;
        let items = core::array::from_fn(|j| match src.get(first.saturating_add(j * bs)) {
            Some(v) => {
                valid += 1;
                *v
            }
            None => fill,
        });
        (items, valid)
    }
}

//! Block loads: a tile of a `&[T]` into `N` items per thread, blocked or striped.

use super::tile_span;
use crate::DeviceCopy;
use crate::thread;

/// `N` items, 16-byte aligned: read as whole 16-byte vectors (`ld.global.v4`).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Aligned16<A>(A);

/// Tile `tile` of `src` in the **blocked** arrangement: thread `t` gets elements
/// `t * N .. t * N + N` of the tile as `items[0..N]`; elements past the end of `src` are
/// `fill`. Returns the items and how many of them are in `src` (`N` except in a last partial
/// tile).
///
/// A full tile is read without per-element checks, as 16-byte vector loads when the tile
/// starts 16-byte aligned and `N * size_of::<T>()` is a multiple of 16 (CUB's
/// `BLOCK_LOAD_VECTORIZE`), else element by element (`BLOCK_LOAD_DIRECT`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn load_blocked<T: DeviceCopy, const N: usize>(src: &[T], tile: u64, fill: T) -> ([T; N], usize) {
    let (len, base) = tile_span(tile, N);
    let first = base.saturating_add(thread::thread_rank_in_block() as usize * N);
    if base <= src.len() && src.len() - base >= len {
        // SAFETY: `first .. first + N` is inside the tile (rank < block size), inside `src`.
        let p = unsafe { src.as_ptr().add(first) };
        if (N * size_of::<T>()).is_multiple_of(16) && (p as usize).is_multiple_of(16) {
            // SAFETY: in bounds (above), 16-byte aligned (checked), and `Aligned16<[T; N]>`
            // is exactly `[T; N]` (its size is a multiple of 16): no padding is read.
            (unsafe { p.cast::<Aligned16<[T; N]>>().read() }.0, N)
        } else {
            // SAFETY: in bounds (above); any alignment of `T` is kept.
            (core::array::from_fn(|j| unsafe { p.add(j).read() }), N)
        }
    } else {
        let valid = src.len().saturating_sub(first).min(N);
        (core::array::from_fn(|j| if j < valid { src[first + j] } else { fill }), valid)
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

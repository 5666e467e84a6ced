//! Block stores: `N` items per thread into this block's tile of a [`Blocked`] or [`Striped`]
//! output.

use super::{Tile, V16, tile_span, vectors};
use crate::DeviceCopy;
use crate::slice::DisjointSlice;
use crate::thread::{self, Blocked, Striped};

/// Writes `items` where thread `t` owns them in `tile` of a blocked output (elements
/// `t * N + j` of the tile); elements past the end of `out` are not written. Returns how many
/// were written. A full tile is written without per-element checks, as 16-byte vectors when
/// aligned (see [`load_blocked`](super::load_blocked)).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_blocked<T: DeviceCopy, const N: usize>(
    out: &mut DisjointSlice<'_, T, Blocked<N>>,
    tile: &Tile,
    items: &[T; N],
) -> usize {
    store_blocked_valid(out, tile, items, usize::MAX)
}

/// [`store_blocked`] of the tile's first `valid` elements only (CUB's `valid_items`): the
/// last, partial tile of an input shorter than the output.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_blocked_valid<T: DeviceCopy, const N: usize>(
    out: &mut DisjointSlice<'_, T, Blocked<N>>,
    tile: &Tile,
    items: &[T; N],
    valid: usize,
) -> usize {
    let (len, base) = tile_span(tile.id(), N);
    let first = base.saturating_add(thread::thread_rank_in_block() as usize * N);
    let n = out.len().min(base.saturating_add(valid));
    let p = out.as_mut_ptr();
    // Every item is indexed by a constant (the loops unroll), so `items` stays in registers:
    // no local-memory copy of the array.
    if base <= n && n - base >= len {
        // SAFETY: `first .. first + N` is in the tile, in bounds (`n <= out.len()`). This thread owns those
        // elements: the slice is `Blocked<N>` (every thread of the launch places items this
        // way), the tile is this block's alone (`Tile`), and `first` is this thread's rank's
        // share of it, which no other thread of the block has.
        let q = unsafe { p.add(first) };
        if vectors::<T, N>() && (q as usize).is_multiple_of(16) {
            let src = items.as_ptr().cast::<u8>();
            let dst = q.cast::<V16>();
            let mut k = 0;
            while k < N * size_of::<T>() / 16 {
                // SAFETY: bytes `16k .. 16k + 16` of `items` (`N * size_of::<T>()` bytes, a
                // multiple of 16) are initialized and read unaligned; vector `k` of the
                // thread's `N` elements is in bounds and owned (above), 16-byte aligned
                // (checked), and a `T` has no padding to expose.
                unsafe { dst.add(k).write(V16(src.add(16 * k).cast::<[u32; 4]>().read_unaligned())) };
                k += 1;
            }
        } else {
            let mut j = 0;
            while j < N {
                // SAFETY: as above.
                unsafe { q.add(j).write(items[j]) };
                j += 1;
            }
        }
        N
    } else {
        let valid = n.saturating_sub(first).min(N);
        let mut j = 0;
        while j < N {
            if j < valid {
                // SAFETY: `first + j < n` (valid), and owned as above.
                unsafe { p.add(first + j).write(items[j]) };
            }
            j += 1;
        }
        valid
    }
}

/// Writes `items` where thread `t` owns them in `tile` of a striped output (elements
/// `t + j * block_size()`): coalesced. Elements past the end are not written; returns how many
/// were written.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_striped<T: DeviceCopy, const N: usize>(
    out: &mut DisjointSlice<'_, T, Striped<N>>,
    tile: &Tile,
    items: &[T; N],
) -> usize {
    store_striped_valid(out, tile, items, usize::MAX)
}

/// [`store_striped`] of the tile's first `valid` elements only.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_striped_valid<T: DeviceCopy, const N: usize>(
    out: &mut DisjointSlice<'_, T, Striped<N>>,
    tile: &Tile,
    items: &[T; N],
    valid: usize,
) -> usize {
    let (len, base) = tile_span(tile.id(), N);
    let bs = thread::block_size() as usize;
    let first = base.saturating_add(thread::thread_rank_in_block() as usize);
    let n = out.len().min(base.saturating_add(valid));
    let p = out.as_mut_ptr();
    let full = base <= n && n - base >= len;
    let mut written = 0;
    for (j, v) in items.iter().enumerate() {
        let i = first.saturating_add(j * bs);
        if full || i < n {
            // SAFETY: in bounds (a full tile, or checked). Owned: the slice is `Striped<N>`,
            // the tile is this block's alone, and `t + j * bs` (t < bs, j < N) is this rank's.
            unsafe { p.add(i).write(*v) };
            written += 1;
        }
    }
    written
}

//! Blocked tiles through coalesced accesses: CUB's `BLOCK_LOAD_WARP_TRANSPOSE` and
//! `BLOCK_STORE_WARP_TRANSPOSE`.
//!
//! [`load_blocked`] reads a thread's `N` consecutive items with its own (vector) loads, so the
//! loads of a warp are `N · size_of::<T>()` bytes apart: with 16 `u32`s a thread, each 16-byte
//! load uses half of every 32-byte sector it touches, and the other half comes from another
//! load in flight at the same time. On an H200 the single-pass scan moved half the bytes it
//! could that way (ncu: 16 of 32 bytes used per sector, 48 % excess L2 sectors, loads and
//! stores alike). Here each warp reads its `32 · N` items *striped* — lane `l` the 16-byte
//! vectors `l, l + 32, …` of the warp's span, every access of the warp one contiguous run —
//! stages them in shared memory, and each lane takes its blocked items back out (stores the
//! other way round). The shared staging is per warp, padded with one word every 32, so
//! neither side has bank conflicts for 4-, 8- or 16-word items per thread.
//!
//! The exchange is a warp collective: it runs only when all 32 lanes of the warp execute the
//! call together (`activemask` is full; no branch between that test and the two
//! `bar.warp.sync`s, so each lane meets the others at the same barrier), the tile is whole,
//! `T` is made of 32-bit words, the block is whole warps and the staging fits
//! ([`COALESCED_WORDS`]). Otherwise the thread reads and writes its own items as
//! [`load_blocked`] / [`store_blocked_valid`] do: the same result, by the same thread's
//! ownership, only slower. So a divergent or partial call can't make one lane write what
//! another lane didn't hand it.

use super::{Tile, V16, load_blocked, store_blocked_valid, tile_span};
use crate::DeviceCopy;
use crate::raw;
use crate::shared::SharedSlice;
use crate::slice::DisjointSlice;
use crate::thread::{self, Blocked};

/// Words of the shared staging: 8 warps of 16 words a thread, padded (`33 · 16` words a warp),
/// 16.5 KiB. A block of 256 threads with 16 four-byte (or 8 eight-byte) items each fits; a
/// larger block or more items per thread takes the per-thread path.
pub const COALESCED_WORDS: usize = 8 * 33 * 16;

crate::shared! {
    /// Each warp's staging: `33 · M` words from `warp · 33 · M` (`M` words a thread).
    static COALESCED_STAGE: [u32; COALESCED_WORDS];
}

/// Words a thread's `N` items of `T` take, if the warp exchange can move them: `T` a whole
/// number of 32-bit words, the block whole warps, the staging big enough.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn words_per_thread<T, const N: usize>() -> Option<usize> {
    let m = N * size_of::<T>() / 4;
    let bs = thread::block_size() as usize;
    let ok = size_of::<T>() != 0
        && size_of::<T>().is_multiple_of(4)
        && bs.is_multiple_of(32)
        && bs / 32 * 33 * m <= COALESCED_WORDS;
    ok.then_some(m)
}

/// Index `i` of a warp's span in its padded staging.
#[inline(always)]
const fn padded(i: usize) -> usize {
    i + i / 32
}

/// Whether all 32 lanes of the warp execute this call together. Warp-uniform: a lane that
/// sees all 32 saw every lane at this instruction, and every lane saw the same.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn whole_warp() -> bool {
    raw::activemask() == u32::MAX
}

/// [`load_blocked`] with coalesced loads: thread `t` gets elements `t * N .. t * N + N` of tile
/// `tile` of `src` as `items[0..N]` (past the end of `src`: `fill`), and how many are in `src`.
/// A whole tile is read by each warp striped and exchanged through shared memory (module docs);
/// anything else as [`load_blocked`] reads it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn load_blocked_coalesced<T: DeviceCopy, const N: usize>(src: &[T], tile: u64, fill: T) -> ([T; N], usize) {
    let (len, base) = tile_span(tile, N);
    let full = base <= src.len() && src.len() - base >= len;
    let plan = words_per_thread::<T, N>();
    let (Some(m), true) = (plan, full && (src.as_ptr() as usize).is_multiple_of(4)) else {
        return load_blocked(src, tile, fill);
    };
    if !whole_warp() {
        return load_blocked(src, tile, fill);
    }
    crate::assert_no_padding::<T>();
    let rank = thread::thread_rank_in_block() as usize;
    let (lane, warp) = (rank % 32, rank / 32);
    let stage = COALESCED_STAGE.get().as_slice();
    let region = warp * 33 * m;
    // SAFETY: the warp's span `base + 32·N·warp ..+ 32·N` lies in the whole tile, in `src`.
    let span = unsafe { src.as_ptr().add(base + 32 * N * warp) }.cast::<u32>();
    // The lanes are done with the staging's last use.
    // SAFETY: all 32 lanes are here together (`whole_warp`), and nothing between that test and
    // this barrier branches by lane, so each lane reaches it with the full mask.
    unsafe { raw::bar_warp_sync(u32::MAX) };
    stage_in(&stage, region, span, m, lane);
    // SAFETY: as above (`stage_in`'s loops have the same trip count in every lane).
    unsafe { raw::bar_warp_sync(u32::MAX) };
    let mut out = core::mem::MaybeUninit::<[T; N]>::uninit();
    let dst = out.as_mut_ptr().cast::<u8>();
    let mut j = 0;
    while j < m {
        // SAFETY: `region + padded(lane·m + j)` < `region + 33·m` ≤ the staging
        // (`words_per_thread`); byte `4j` of `out` is inside its `4m` bytes.
        unsafe { dst.add(4 * j).cast::<u32>().write_unaligned(stage.load_unchecked(region + padded(lane * m + j))) };
        j += 1;
    }
    // SAFETY: all `4m = N · size_of::<T>()` bytes were written, and every bit pattern is a
    // valid `T` (`DeviceCopy`, no padding).
    (unsafe { out.assume_init() }, N)
}

/// The warp's `32·m` words from `span` into its staging, striped: 16-byte vectors where the
/// span is 16-byte aligned and `m` a multiple of 4, else words.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn stage_in(stage: &SharedSlice<u32>, region: usize, span: *const u32, m: usize, lane: usize) {
    if m.is_multiple_of(4) && (span as usize).is_multiple_of(16) {
        let mut k = 0;
        while k < m / 4 {
            let v = lane + 32 * k;
            // SAFETY: vector `v < 8m` of the span's `32m` words, 16-byte aligned (checked).
            let x = unsafe { span.cast::<V16>().add(v).read() }.0;
            let mut c = 0;
            while c < 4 {
                // SAFETY: `padded(4v + c) < 33m`: inside the warp's region.
                unsafe { stage.store_unchecked(region + padded(4 * v + c), x[c]) };
                c += 1;
            }
            k += 1;
        }
    } else {
        let mut k = 0;
        while k < m {
            let i = lane + 32 * k;
            // SAFETY: word `i < 32m` of the span (4-byte aligned: checked by the caller);
            // `padded(i) < 33m`.
            unsafe { stage.store_unchecked(region + padded(i), span.add(i).read()) };
            k += 1;
        }
    }
}

/// [`store_blocked_valid`] with coalesced stores: writes thread `t`'s `items` at elements
/// `t * N .. t * N + N` of `tile` of `out`, only the tile's first `valid` elements and only
/// inside `out`; returns how many of this thread's items were written. A whole tile is
/// exchanged within each warp through shared memory and written striped (module docs);
/// anything else as [`store_blocked_valid`] writes it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_blocked_coalesced_valid<T: DeviceCopy, const N: usize>(
    out: &mut DisjointSlice<'_, T, Blocked<N>>,
    tile: &Tile,
    items: &[T; N],
    valid: usize,
) -> usize {
    let (len, base) = tile_span(tile.id(), N);
    let n = out.len().min(base.saturating_add(valid));
    let full = base <= n && n - base >= len;
    let plan = words_per_thread::<T, N>();
    let (Some(m), true) = (plan, full && (out.as_mut_ptr() as usize).is_multiple_of(4)) else {
        return store_blocked_valid(out, tile, items, valid);
    };
    if !whole_warp() {
        return store_blocked_valid(out, tile, items, valid);
    }
    crate::assert_no_padding::<T>();
    let rank = thread::thread_rank_in_block() as usize;
    let (lane, warp) = (rank % 32, rank / 32);
    let stage = COALESCED_STAGE.get().as_slice();
    let region = warp * 33 * m;
    // SAFETY: all 32 lanes are here together (`whole_warp`), and nothing between that test and
    // this barrier branches by lane, so each lane reaches it with the full mask.
    unsafe { raw::bar_warp_sync(u32::MAX) };
    let src = items.as_ptr().cast::<u8>();
    let mut j = 0;
    while j < m {
        // SAFETY: byte `4j` of `items`' `4m` bytes (read unaligned; no padding: asserted);
        // `padded(lane·m + j) < 33m`.
        unsafe { stage.store_unchecked(region + padded(lane * m + j), src.add(4 * j).cast::<u32>().read_unaligned()) };
        j += 1;
    }
    // SAFETY: as above (the loop's trip count is the same in every lane).
    unsafe { raw::bar_warp_sync(u32::MAX) };
    // SAFETY: the warp's span `base + 32·N·warp ..+ 32·N` is in the whole tile, inside `out`.
    // Its elements are exactly the ones the warp's 32 lanes own in the `Blocked<N>` slice
    // (thread `t` owns `t·N ..+ N` of the tile, this block's alone: `Tile`), and all 32 lanes
    // are in this call (`whole_warp`): each word written below is one that its owning lane
    // handed over in the staging just now, and no two lanes write the same word.
    let span = unsafe { out.as_mut_ptr().add(base + 32 * N * warp) }.cast::<u32>();
    if m.is_multiple_of(4) && (span as usize).is_multiple_of(16) {
        let mut k = 0;
        while k < m / 4 {
            let v = lane + 32 * k;
            // SAFETY: `padded(4v + c) < 33m`.
            let x: [u32; 4] = core::array::from_fn(|c| unsafe { stage.load_unchecked(region + padded(4 * v + c)) });
            // SAFETY: vector `v < 8m` of the span, 16-byte aligned (checked); owned as above.
            unsafe { span.cast::<V16>().add(v).write(V16(x)) };
            k += 1;
        }
    } else {
        let mut k = 0;
        while k < m {
            let i = lane + 32 * k;
            // SAFETY: word `i < 32m` of the span (4-byte aligned: checked); owned as above.
            unsafe { span.add(i).write(stage.load_unchecked(region + padded(i))) };
            k += 1;
        }
    }
    N
}

/// [`store_blocked_coalesced_valid`] of the whole tile.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_blocked_coalesced<T: DeviceCopy, const N: usize>(
    out: &mut DisjointSlice<'_, T, Blocked<N>>,
    tile: &Tile,
    items: &[T; N],
) -> usize {
    store_blocked_coalesced_valid(out, tile, items, usize::MAX)
}

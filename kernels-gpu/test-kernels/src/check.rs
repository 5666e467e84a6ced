//! Kernels of the checked-mode tests (`tests/gpu/check.rs`): collectives that only part of their
//! group reaches, each of which must end the launch with an `Err` naming the call site. (This
//! crate is built in checked mode always: its `build.rs` says so.)

use cohort::prelude::*;

/// Lanes 0–15 and 16–31 of each warp call `shfl` at two different sites.
#[kernel]
pub fn diverge_shfl(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = *i as u32;
    let r = if warp.thread_rank() < 16 {
        warp.shfl(v, 0) // the first site
    } else {
        warp.shfl(v, 31) // the second site
    };
    out.set(i, r);
}

/// A tile-of-32 `reduce` split across two branches.
#[kernel]
pub fn diverge_reduce(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = *i as u32;
    let r = if v % 2 == 0 { cg::reduce(&warp, v, cg::plus) } else { cg::reduce(&warp, v + 1, cg::plus) };
    out.set(i, r);
}

/// Warps of one block at two different `sync_threads_count` calls.
#[kernel]
pub fn diverge_sync_count(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let n = if thread::warp_id() == 0 {
        cohort::sync::sync_threads_count(true)
    } else {
        cohort::sync::sync_threads_count(false)
    };
    out.set(i, n);
}

/// Block 1 skips the grid sync (and exits): without checked mode the others wait forever.
#[kernel(cooperative)]
pub fn diverge_grid_skip(grid: GridGroup, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    if grid.block_rank() != 1 {
        grid.sync();
    }
    out.set(i, 1);
}

/// The same collectives, converged: every member at one site (must not be reported).
#[kernel]
pub fn converged_controls(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let v = *i as u32;
    let a = warp.shfl(v, 0);
    let b = cg::reduce(&warp, v, cg::plus);
    let c = cohort::sync::sync_threads_count(v % 3 == 0);
    // A coalesced group of a divergent branch: exactly its lanes call its collectives.
    let d = if v % 2 == 0 {
        let g = cg::coalesced_threads();
        cg::reduce(&g, 1u32, cg::plus)
    } else {
        let g = cg::coalesced_threads();
        cg::reduce(&g, 2u32, cg::plus)
    };
    out.set(i, a.wrapping_add(b).wrapping_add(c).wrapping_add(d));
}

/// Threads of each block publish two different vectors: without the per-vector barrier and the
/// block check, the threads at `b` would read `b` while others still hold it for writing.
#[kernel(cooperative)]
pub fn diverge_publish(grid: GridGroup, a: GridVec<u32>, b: GridVec<u32>, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let v = if thread::thread_rank_in_block() < 128 {
        a.publish(&grid)[0] // the first vector
    } else {
        b.publish(&grid)[0] // the second vector
    };
    out.set(i, v);
}

// --- Calls that share a source location (issue 31) ------------------------------------------
//
// `Location::caller()` is the same for every call inside one `macro_rules!` expansion and for
// every call reached through one `#[track_caller]` helper; checked mode (and the CPU device)
// must still tell the calls apart.

/// Two divergent shuffles written inside one macro body.
macro_rules! split_shfl {
    ($warp:expr, $v:expr) => {
        if $warp.thread_rank() < 16 { $warp.shfl($v, 0) } else { $warp.shfl($v, 31) }
    };
}

/// Lanes 0–15 and 16–31 of each warp shuffle at two calls of one macro expansion.
#[kernel]
pub fn diverge_macro_shfl(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let r = split_shfl!(warp, *i as u32);
    out.set(i, r);
}

/// A divergent shuffle inside a `#[track_caller]` helper.
#[track_caller]
fn shfl_low_or_high<P: cg::TileParent>(warp: &cg::ThreadBlockTile<32, P>, v: u32) -> u32 {
    if warp.thread_rank() < 16 { warp.shfl(v, 0) } else { warp.shfl(v, 31) }
}

/// Lanes 0–15 and 16–31 of each warp shuffle at two calls of one `#[track_caller]` helper.
#[kernel]
pub fn diverge_helper_shfl(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let r = shfl_low_or_high(&warp, *i as u32);
    out.set(i, r);
}

/// Two divergent `sync_threads_count` calls inside one macro body.
macro_rules! split_count {
    ($first:expr) => {
        if $first { cohort::sync::sync_threads_count(true) } else { cohort::sync::sync_threads_count(false) }
    };
}

/// Warp 0 and the other warps of each block at two calls of one macro expansion.
#[kernel]
pub fn diverge_macro_sync_count(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let n = split_count!(thread::warp_id() == 0);
    out.set(i, n);
}

/// A divergent `sync_threads_count` inside a `#[track_caller]` helper.
#[track_caller]
fn count_first_warp(first: bool) -> u32 {
    if first { cohort::sync::sync_threads_count(true) } else { cohort::sync::sync_threads_count(false) }
}

/// Warp 0 and the other warps of each block at two calls of one `#[track_caller]` helper.
#[kernel]
pub fn diverge_helper_sync_count(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let n = count_first_warp(thread::warp_id() == 0);
    out.set(i, n);
}

/// Block 0 and the other blocks at two different `grid.sync()` calls: the driver's barrier
/// counts arrivals, so without the comparison they pass together.
#[kernel(cooperative)]
pub fn diverge_grid_sites(grid: GridGroup, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    if grid.block_rank() == 0 {
        grid.sync(); // block 0's site
    } else {
        grid.sync(); // the other blocks' site
    }
    out.set(i, 1);
}

/// Block 0 reduces first and then syncs; the other blocks sync first and then reduce. Once the
/// reduction synchronized on the driver's word, block 0's reduction passed the others' sync and
/// read partials not written yet (a total of one block's values). Its barrier is now the
/// scratch's own word, which the others' `grid.sync()` cannot complete.
#[kernel(cooperative)]
pub fn diverge_reduce_grid(grid: GridGroup, scratch: GridVec<u32>, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let mut scratch = cg::GridScratch::new(&grid, scratch);
    let total = if grid.block_rank() == 0 {
        let t = cg::reduce_grid(&grid, 1u32, cg::plus, &mut scratch);
        grid.sync();
        t
    } else {
        grid.sync();
        cg::reduce_grid(&grid, 1u32, cg::plus, &mut scratch)
    };
    out.set(i, total);
}

/// Stands in for `x.publish(grid)` in warp 1 with barriers of its own, which the hardware's
/// block barrier 0 counts as arrivals as well as publish's: warp 1 then writes `x` while the
/// others read it. A `#[track_caller]` helper, so that every barrier of both paths shares one
/// location (as on the CPU device, which meets threads only at one call).
#[track_caller]
fn publish_or_stand_in(grid: &GridGroup, mut x: GridVec<'_, u32>, i: &ThreadIndex) -> u32 {
    if thread::warp_id() == 1 {
        // Publish's block barriers, one each (two more in checked mode's check), and its grid
        // barrier, from which thread 0 (not in this warp) alone goes to the grid's word.
        cohort::sync::sync_threads();
        cohort::sync::sync_threads();
        let _ = cohort::sync::sync_threads_or(false);
        grid.sync();
        x.set(i, 7); // while the others read
        7
    } else {
        let all = x.publish(grid);
        all.iter().fold(0u32, |a, &v| a.wrapping_add(v))
    }
}

/// See [`publish_or_stand_in`].
#[kernel(cooperative)]
pub fn diverge_publish_stand_in(grid: GridGroup, x: GridVec<u32>, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let v = publish_or_stand_in(&grid, x, &i);
    out.set(i, v);
}

/// Warp 1 of each block returns instead of publishing: the others wait at the block's phase
/// barrier, which only phase changes arrive on (before, the hardware's block barrier let them
/// pass without it).
#[kernel(cooperative)]
pub fn diverge_publish_exited(grid: GridGroup, x: GridVec<u32>, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    if thread::warp_id() == 1 {
        return;
    }
    let all = x.publish(&grid);
    let v = all[0];
    out.set(i, v);
}

/// An `#[inline(always)]` helper with collectives, called from several places.
#[inline(always)]
fn warp_sum_and_count<P: cg::TileParent>(warp: &cg::ThreadBlockTile<32, P>, v: u32) -> u32 {
    let s = cg::reduce(warp, v, cg::plus);
    s.wrapping_add(cohort::sync::sync_threads_count(v % 5 == 0))
}

/// Collectives that members reach together though their calls are duplicated or share a
/// location: in a loop, in `unroll`'s copies, in an `#[inline(always)]` helper called from
/// several places, in one macro expansion whose condition is the same in the whole block, and
/// grid syncs in a loop. None may be reported. Writes `[loop, unrolled, helper, macro]`.
#[kernel(cooperative)]
pub fn converged_shared_sites(grid: GridGroup, mut out: DisjointSlice<[u32; 4]>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = *i as u32;
    let mut looped = 0u32;
    for k in 0..4u32 {
        looped = looped.wrapping_add(warp.shfl(v, k)).wrapping_add(cohort::sync::sync_threads_count(v % 3 == k % 3));
        grid.sync();
    }
    let mut unrolled = 0u32;
    cohort::unroll::<4>(|k| unrolled = unrolled.wrapping_add(warp.shfl_xor(v, 1 << k)));
    let mut helper = warp_sum_and_count(&warp, v);
    if grid.block_rank() % 2 == 0 {
        helper = helper.wrapping_add(warp_sum_and_count(&warp, v + 1));
    } else {
        helper = helper.wrapping_add(warp_sum_and_count(&warp, v + 2));
    }
    let by_macro = split_count!(grid.block_rank() % 2 == 0);
    out.set(i, [looped, unrolled, helper, by_macro]);
}

/// Lanes 0–15 and 16–31 of each warp call `invoke_one_broadcast` at two different sites.
#[kernel]
pub fn diverge_invoke_broadcast(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = *i as u32;
    let r = if warp.thread_rank() < 16 {
        cg::invoke_one_broadcast(&warp, || v) // the first site
    } else {
        cg::invoke_one_broadcast(&warp, || v + 1) // the second site
    };
    out.set(i, r);
}

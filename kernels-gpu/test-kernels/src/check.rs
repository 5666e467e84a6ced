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

//! Multi-grid launches (`#[kernel(multi_grid)]`): ranks, phase exchanges across GPUs, and the
//! divergences that must end a launch with an `Err`.

use cohort::prelude::*;

/// Each thread writes its multi-grid rank and `grid_rank * 1000 + num_grids` at its grid's
/// `index_1d`, and the multi-grid thread count into `threads`.
#[kernel(multi_grid)]
pub fn mg_ranks(
    multi: MultiGridGroup,
    mut ranks: DisjointSlice<u64>,
    mut meta: DisjointSlice<u32>,
    mut threads: DisjointSlice<u64>,
) {
    let i = thread::index_1d();
    ranks.set(&i, multi.thread_rank());
    meta.set(&i, multi.grid_rank() * 1000 + multi.num_grids());
    threads.set(&i, multi.num_threads());
}

/// The value round `round` writes to element `j`.
#[inline(always)]
#[must_use]
pub fn round_value(round: u32, j: u32) -> u32 {
    (j.wrapping_mul(2_654_435_761) ^ round.wrapping_mul(40_503)).wrapping_add(round)
}

/// `rounds` rounds: every thread writes its own elements of `v` (a grid-stride loop over every
/// grid), publishes, then sums 8 elements spread over the whole vector (most written by other
/// GPUs) into its own element of `sums` (per grid, `index_1d`), and reclaims; a plain
/// `multi.sync()` between rounds. A stale or missing write shows as a wrong sum.
#[kernel(multi_grid)]
pub fn mg_rounds(multi: MultiGridGroup, mut v: MultiGridVec<u32>, mut sums: DisjointSlice<u32>, rounds: u32) {
    let n = v.len() as u32;
    let me = thread::index_1d();
    let t = multi.thread_rank() as u32;
    let mut acc = 0u32;
    for round in 0..rounds {
        for i in multi.stride(v.len()) {
            let j = *i as u32;
            v.set(&i, round_value(round, j));
        }
        let view = v.publish(&multi);
        for k in 0..8u32 {
            let j = (t.wrapping_mul(7919).wrapping_add(k.wrapping_mul(n / 8 + 1)).wrapping_add(round)) % n;
            acc = acc.wrapping_add(view[j as usize]);
        }
        v = view.reclaim(&multi);
        multi.sync();
    }
    sums.set(&me, acc);
}

/// Grid `skip` skips the second of two multi-grid syncs: the other grids wait until the
/// launch's time limit and end with an `Err`.
#[kernel(multi_grid)]
pub fn mg_skip_sync(multi: MultiGridGroup, skip: u32, mut out: DisjointSlice<u32>) {
    multi.sync();
    if multi.grid_rank() != skip {
        multi.sync();
    }
    out.set(thread::index_1d(), 1);
}

/// Grid 0 publishes `a` while the others publish `b`: grid 0 sees another vector's tag and
/// ends the launch with an `Err`.
#[kernel(multi_grid)]
pub fn mg_wrong_vec(multi: MultiGridGroup, a: MultiGridVec<u32>, b: MultiGridVec<u32>, mut out: DisjointSlice<u32>) {
    if multi.grid_rank() == 0 {
        let _ = a.publish(&multi);
    } else {
        let _ = b.publish(&multi);
    }
    out.set(thread::index_1d(), 1);
}

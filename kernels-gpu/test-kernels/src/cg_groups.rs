//! Members of every group: ranks, meta ranks, shuffles, votes, matches, sync; shuffles of
//! many element types; grid-wide reduction.

use cohort::cg::{self, GridGroup, ThreadGroup, WarpGroup};
use cohort::prelude::*;

use crate::cg_collectives::S24;

/// Results per thread of [`tile_members`], [`dyn_tile_members`], [`coalesced_members`].
pub const MEMBER_SLOTS: usize = 16;

/// Inputs of the member tests.
#[repr(C)]
#[derive(Clone, Copy, Debug, DeviceCopy)]
pub struct MemberArgs {
    /// `shfl_up` / `shfl_down` distance.
    pub delta: u32,
    /// `shfl_xor` mask.
    pub xor_mask: u32,
}

cohort::shared! {
    /// One value per thread of the block, to check that `sync` orders shared memory.
    static EXCHANGE: [u32; 1024];
}

#[inline(always)]
fn members<G: WarpGroup>(
    g: &G,
    i: usize,
    vals: &[u32],
    srcs: &[u32],
    preds: &[u32],
    keys: &[u32],
    a: MemberArgs,
) -> [u32; MEMBER_SLOTS] {
    let (v, p, key) = (vals[i], preds[i] & 1 == 1, keys[i]);
    let n = g.num_threads();
    let (m, all_eq) = g.match_all(key);
    // `sync` orders shared memory among the members: write, sync, read a neighbour's.
    let ex = EXCHANGE.get();
    let me = thread::thread_rank_in_block() as usize;
    ex.store(me, v);
    g.sync();
    let neighbour = g.shfl(me as u32, (g.thread_rank() + 1) % n) as usize;
    let seen = ex.load(neighbour);
    g.sync();
    [
        g.thread_rank(),
        n,
        g.meta_group_rank(),
        g.meta_group_size(),
        g.shfl(v, srcs[i] % n),
        g.shfl_up(v, a.delta),
        g.shfl_down(v, a.delta),
        // A rank the group does not have: the caller's own value (tiles put `shfl_xor` here).
        g.shfl(v, n + srcs[i] % 32),
        g.any(p) as u32,
        g.all(p) as u32,
        g.ballot(p),
        g.match_any(key),
        m,
        all_eq as u32,
        seen,
        g.lane_mask(),
    ]
}

/// Every member of a tile of `N`, per thread (`out[i]`), with `shfl_xor` in slot 7.
#[kernel(instances(1, 2, 4, 8, 16, 32))]
pub fn tile_members<const N: u32>(
    vals: &[u32],
    srcs: &[u32],
    preds: &[u32],
    keys: &[u32],
    a: MemberArgs,
    mut out: DisjointSlice<[u32; MEMBER_SLOTS]>,
) where
    cg::Size<N>: cg::TileSize<cg::ThreadBlock, Tile = cg::ThreadBlockTile<N>>,
{
    let i = thread::index_1d();
    let t = cg::tiled_partition::<N>(&cg::this_thread_block());
    let mut r = members(&t, *i, vals, srcs, preds, keys, a);
    r[7] = t.shfl_xor(vals[*i], a.xor_mask);
    out.set(&i, r);
}

/// As [`tile_members`] for a tile whose size `n` is known only at run time, cut from a tile
/// of 32 (so its parent is a tile, not the block).
#[kernel]
pub fn dyn_tile_members(
    n: u32,
    vals: &[u32],
    srcs: &[u32],
    preds: &[u32],
    keys: &[u32],
    a: MemberArgs,
    mut out: DisjointSlice<[u32; MEMBER_SLOTS]>,
) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let t = cg::tiled_partition_dyn(&warp, n);
    let mut r = members(&t, *i, vals, srcs, preds, keys, a);
    r[7] = t.shfl_xor(vals[*i], a.xor_mask);
    out.set(&i, r);
}

/// As [`tile_members`] for the coalesced group of a divergent branch (`branch[i] & 1`): both
/// sides form their own group. Slot 15 holds the group's lane mask.
// The two branches are identical on purpose: each forms its own coalesced group.
#[allow(clippy::if_same_then_else)]
#[kernel]
pub fn coalesced_members(
    branch: &[u32],
    vals: &[u32],
    srcs: &[u32],
    preds: &[u32],
    keys: &[u32],
    a: MemberArgs,
    mut out: DisjointSlice<[u32; MEMBER_SLOTS]>,
) {
    let i = thread::index_1d();
    let r = if branch[*i] & 1 == 1 {
        let g = cg::coalesced_threads();
        members(&g, *i, vals, srcs, preds, keys, a)
    } else {
        let g = cg::coalesced_threads();
        members(&g, *i, vals, srcs, preds, keys, a)
    };
    out.set(&i, r);
}

/// Results per thread of [`large_members`].
pub const LARGE_SLOTS: usize = 9;

/// Members of a large tile of `N` (blocks of 512): rank, size, meta rank, meta size, `shfl`
/// from rank `(7 * meta_rank + 3) % N`, `any`, `all`, a value read after `sync` from another
/// warp of the tile, and the tile's sum (`reduce`).
#[kernel(instances(64, 128, 256, 512))]
pub fn large_members<const N: u32>(vals: &[u32], preds: &[u32], mut out: DisjointSlice<[u32; LARGE_SLOTS]>)
where
    cg::Size<N>: cg::TileSize<cg::ThreadBlock, Tile = cg::LargeTile<N>>,
{
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let t = cg::tiled_partition::<N>(&block);
    let v = vals[*i];
    let p = preds[*i] & 1 == 1;
    let src = (7 * t.meta_group_rank() + 3) % N;
    let ex = EXCHANGE.get();
    let me = block.thread_rank();
    ex.store(me as usize, v);
    t.sync();
    let base = me - t.thread_rank();
    let seen = ex.load((base + (t.thread_rank() + 33) % N) as usize);
    t.sync();
    out.set(
        &i,
        [
            t.thread_rank(),
            t.num_threads(),
            t.meta_group_rank(),
            t.meta_group_size(),
            t.shfl(v, src),
            t.any(p) as u32,
            t.all(p) as u32,
            seen,
            cg::reduce(&t, v, cg::plus),
        ],
    );
}

/// A tile of 4 cut from a large tile of 128 (a large parent): rank, meta rank, meta size and
/// the sub-tile's sum.
#[kernel]
pub fn tile_of_large(vals: &[u32], mut out: DisjointSlice<[u32; 4]>) {
    let i = thread::index_1d();
    let t128 = cg::tiled_partition::<128>(&cg::this_thread_block());
    let t4 = cg::tiled_partition::<4>(&t128);
    out.set(&i, [t4.thread_rank(), t4.meta_group_rank(), t4.meta_group_size(), cg::reduce(&t4, vals[*i], cg::plus)]);
}

/// Shuffles of a `T` split into 32-bit words, on a warp: `shfl` from rank `(5r + 3) % 32`,
/// `shfl_up(3)`, `shfl_down(5)`, `shfl_xor(9)`.
#[kernel(instances(u8, u16, u64, f64, [u32; 3], S24, [u64; 4]))]
pub fn shfl_types<T: DeviceCopy>(vals: &[T], mut out: DisjointSlice<[T; 4]>) {
    let i = thread::index_1d();
    let w = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = vals[*i];
    let r = w.thread_rank();
    out.set(&i, [w.shfl(v, (5 * r + 3) % 32), w.shfl_up(v, 3), w.shfl_down(v, 5), w.shfl_xor(v, 9)]);
}

/// Grid-wide reductions in a row (`cg::reduce_grid` on one `GridScratch`), every thread writes
/// all: the sum, the maximum, the sum of `v ^ 1`, and the total of 8 more sums of `v + k`
/// (11 reductions back to back, so each half of the scratch is reused while slow blocks may
/// still be finishing the reduction before).
#[kernel(cooperative)]
pub fn grid_reduce(grid: GridGroup, data: &[u64], scratch: GridVec<u64>, mut out: DisjointSlice<[u64; 4]>) {
    let i = thread::index_1d();
    let v = data.get(*i).copied().unwrap_or(0);
    let mut scratch = cg::GridScratch::new(&grid, scratch);
    let sum = cg::reduce_grid(&grid, v, cg::plus, &mut scratch);
    let max = cg::reduce_grid(&grid, v, cg::greater, &mut scratch);
    let sum_xor = cg::reduce_grid(&grid, v ^ 1, cg::plus, &mut scratch);
    let mut more = 0u64;
    for k in 0..8 {
        more = more.wrapping_add(cg::reduce_grid(&grid, v + k, cg::plus, &mut scratch));
    }
    out.set(&i, [sum, max, sum_xor, more]);
}

/// `this_grid()` and `this_thread_block()` members, per thread: grid thread rank (free
/// function on the `GridGroup`), block rank,
/// num threads, num blocks, dim_blocks.x/y/z, block_index.x/y/z, block dim_threads.x/y/z,
/// thread_index.x/y/z, block rank in grid (through `GridGroup`) — 17 values.
#[kernel(cooperative)]
pub fn grid_members(grid: GridGroup, mut out: DisjointSlice<[u64; 17]>) {
    let i = thread::index_1d();
    let g = cg::this_grid();
    let b = cg::this_thread_block();
    let (db, bi, dt, ti) = (g.dim_blocks(), g.block_index(), b.dim_threads(), b.thread_index());
    out.set(
        &i,
        [
            cg::thread_rank(&grid),
            g.block_rank(),
            g.num_threads(),
            g.num_blocks(),
            db.x as u64,
            db.y as u64,
            db.z as u64,
            bi.x as u64,
            bi.y as u64,
            bi.z as u64,
            dt.x as u64,
            dt.y as u64,
            dt.z as u64,
            ti.x as u64,
            ti.y as u64,
            ti.z as u64,
            if grid.is_valid() && g.thread_rank() == grid.thread_rank() { grid.block_rank() } else { u64::MAX },
        ],
    );
}

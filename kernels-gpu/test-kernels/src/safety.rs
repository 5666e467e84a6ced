//! Kernels of the safety tests (`tests/gpu/safety.rs`): declarations that disagree between host
//! and device on purpose, and the safe patterns that replace `unsafe` in ported kernels.

use cohort::prelude::*;

/// The device side of a kernel whose host side (below) was declared differently: a `#[cfg]`
/// split. Loading its launcher must fail the ABI check, never launch.
#[cfg(target_arch = "nvptx64")]
#[kernel]
pub fn abi_skew(a: u64, b: u64, mut out: DisjointSlice<u64>) {
    let i = thread::index_1d();
    out.set(&i, a ^ b);
}

/// The host side of [`abi_skew`]: `(ptr, len)` where the device takes two integers.
#[cfg(not(target_arch = "nvptx64"))]
#[kernel]
pub fn abi_skew(a: &[u64], mut out: DisjointSlice<u64>) {
    let i = thread::index_1d();
    out.set(&i, a.len() as u64);
}

/// Device side: a grid-sync kernel.
#[cfg(target_arch = "nvptx64")]
#[kernel(cooperative)]
pub fn abi_skew_coop(grid: GridGroup, mut out: DisjointSlice<u32>) {
    grid.sync();
    out.set(thread::index_1d(), 1);
}

/// Host side: the same name without `cooperative`, which would launch it normally.
#[cfg(not(target_arch = "nvptx64"))]
#[kernel]
pub fn abi_skew_coop(mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), 1);
}

/// Host side wider elements than the device: the device writes `u32`s, the launcher would
/// pass a buffer of `u16`s (the device would write past its end).
#[cfg(target_arch = "nvptx64")]
#[kernel]
pub fn abi_skew_elem(mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), 7);
}

/// Host side of [`abi_skew_elem`].
#[cfg(not(target_arch = "nvptx64"))]
#[kernel]
pub fn abi_skew_elem(mut out: DisjointSlice<u16>) {
    out.set(thread::index_1d(), 7);
}

/// A kernel over zero-sized elements: the host passes address 0 for them.
#[kernel]
pub fn zero_sized_elements(units: &[()], mut out: DisjointSlice<u64>) {
    let i = thread::index_1d();
    // Walk the elements (each read is of zero bytes at a dangling, aligned address).
    let mut n = 0u64;
    for _unit in units {
        n += 1;
    }
    out.set(&i, n + units.len() as u64);
}

/// One writer per block and per tile, without `unsafe`: block `b`'s leader writes
/// `per_block[b] = b * 1000 + block sum`; the leader of every tile of 8 (and of 64) writes its
/// tile's sum at the tile's grid rank.
#[kernel]
pub fn leaders(
    vals: &[u32],
    mut per_block: DisjointSlice<u32, PerBlock>,
    mut per_tile8: DisjointSlice<u32, PerTile<8>>,
    mut per_tile64: DisjointSlice<u32, PerTile<64>>,
) {
    let i = thread::index_1d();
    let v = vals.get(*i).copied().unwrap_or(0);
    let block = cg::this_thread_block();
    let total = cg::reduce(&block, v, cg::plus);
    if let Some(b) = block.leader_index() {
        let rank = *b as u32;
        per_block.set(b, rank.wrapping_mul(1000).wrapping_add(total));
    }
    let t8 = cg::tiled_partition::<8>(&block);
    let s8 = cg::reduce(&t8, v, cg::plus);
    if let Some(t) = t8.leader_index() {
        per_tile8.set(t, s8);
    }
    let t64 = cg::tiled_partition::<64>(&block);
    let s64 = cg::reduce(&t64, v, cg::plus);
    if let Some(t) = t64.leader_index() {
        per_tile64.set(t, s64);
    }
}

/// 16-byte vectors: the input, viewed as `f32x4` with `slice::cast`, scaled per component;
/// `u32x4` from a `&[u32x4]` parameter summed per lane.
#[kernel]
pub fn vectors(
    src: &[f32],
    words: &[cohort::vec::u32x4],
    mut out: DisjointSlice<cohort::vec::f32x4>,
    mut sums: DisjointSlice<u32>,
) {
    let i = thread::index_1d();
    let quads: &[cohort::vec::f32x4] = cohort::slice::cast(src).unwrap_or(&[]);
    if let Some(q) = quads.get(*i) {
        let q = *q;
        out.set(&i, cohort::vec::f32x4::new(2.0 * q.x, 3.0 * q.y, 4.0 * q.z, 5.0 * q.w));
    }
    if let Some(w) = words.get(*i) {
        sums.set(&i, w.x.wrapping_add(w.y).wrapping_add(w.z).wrapping_add(w.w));
    }
}

/// Phases of an iterative kernel, without `unsafe`: each thread writes its own
/// `x[i] = vals[i]`, publishes, reads its right neighbour into `seen[i][0]`, reclaims, writes
/// `x[i] = 2 * neighbour`, publishes again and reads its left neighbour into `seen[i][1]`.
#[kernel(cooperative)]
pub fn phases(grid: GridGroup, vals: &[u32], mut x: GridVec<u32>, mut seen: DisjointSlice<[u32; 2]>) {
    let i = thread::index_1d();
    let n = x.len();
    x.set(&i, vals.get(*i).copied().unwrap_or(0));
    let all = x.publish(&grid);
    let right = if n == 0 { 0 } else { all[(*i + 1) % n] };
    let mut x = all.reclaim(&grid);
    x.set(&i, right.wrapping_mul(2));
    let all = x.publish(&grid);
    let left = if n == 0 { 0 } else { all[(*i + n - 1) % n] };
    seen.set(i, [right, left]);
}

/// Stream compaction without `unsafe`: every thread whose value is divisible by `k` pushes it.
#[kernel]
pub fn compact(vals: &[u32], k: u32, hits: AppendSlice<u32>) {
    for i in thread::grid_stride(vals.len()) {
        let v = vals[*i];
        if v.is_multiple_of(k) {
            let _ = hits.push(v);
        }
    }
}

/// [`compact`] with warp-aggregated pushes (one atomic per group of lanes that pass the test
/// together): `form` 0 `push_aggregated`; 1 each thread `reserve`s a chunk for its value and
/// its value + 1 (two slots, consecutive).
#[kernel]
pub fn compact_aggregated(vals: &[u32], k: u32, form: u32, hits: AppendSlice<u32>) {
    for i in thread::grid_stride(vals.len()) {
        let v = vals[*i];
        if v.is_multiple_of(k) {
            if form == 0 {
                let _ = hits.push_aggregated(v);
            } else {
                let mut chunk = hits.reserve(2);
                chunk.set(0, v);
                chunk.set(1, v.wrapping_add(1));
                let _ = chunk.set(2, 0); // past the chunk: refused, writes nothing
            }
        }
    }
}

/// A block sum written by the block's last thread (`last_index`) and per tile of 32 by each
/// tile's last member: the inclusive scan's total sits there.
#[kernel]
pub fn last_writers(
    vals: &[u32],
    mut per_block: DisjointSlice<u32, PerBlock>,
    mut per_tile: DisjointSlice<u32, PerTile<32>>,
) {
    let block = cg::this_thread_block();
    let i = thread::index_1d();
    let v = vals.get(*i).copied().unwrap_or(0);
    let tile = cg::tiled_partition::<32>(&block);
    let t = cg::inclusive_scan(&tile, v, cg::plus);
    if let Some(w) = tile.last_index() {
        per_tile.set(w, t);
    }
    let total = cg::reduce(&block, v, cg::plus);
    if let Some(w) = block.last_index() {
        per_block.set(w, total ^ thread::thread_rank_in_block());
    }
}

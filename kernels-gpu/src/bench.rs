//! Benchmark kernels (`cohort bench`), each the same algorithm as its CUDA C++ twin in
//! `host/benches/cuda_twins.cu`.

use cohort::prelude::*;

/// Four `u32` in one 16-byte aligned element, so the load is one `ld.global.v4`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceCopy)]
pub struct U32x4(pub [u32; 4]);

/// Sum of `data` (wrapping) into `total[0]`: grid-stride scalar loads, `cg::reduce` over a
/// tile of 32 (`redux.sync`), one atomic per warp.
#[kernel]
pub fn bench_reduce_u32(data: &[u32], total: &[AtomicU32]) {
    let mut acc = 0u32;
    for i in thread::grid_stride(data.len()) {
        acc = acc.wrapping_add(data[*i]);
    }
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let acc = cg::reduce(&warp, acc, cg::plus);
    if warp.thread_rank() == 0 {
        total[0].add(acc, Ordering::Relaxed);
    }
}

/// As [`bench_reduce_u32`] with 16-byte loads.
#[kernel]
pub fn bench_reduce_u32_vec4(data: &[U32x4], total: &[AtomicU32]) {
    let mut acc = 0u32;
    for i in thread::grid_stride(data.len()) {
        let [a, b, c, d] = data[*i].0;
        acc = acc.wrapping_add(a).wrapping_add(b).wrapping_add(c).wrapping_add(d);
    }
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let acc = cg::reduce(&warp, acc, cg::plus);
    if warp.thread_rank() == 0 {
        total[0].add(acc, Ordering::Relaxed);
    }
}

/// Per-tile-of-32 inclusive prefix sums: `out[i]` = sum of `data` over its tile up to `i`.
#[kernel]
pub fn bench_scan_u32(data: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    // `if` rather than `data.get(..)`: the `Option` of a reference makes LLVM also test the
    // (global-space) pointer for null, three instructions before the load.
    let v = if *i < data.len() { data[*i] } else { 0 };
    // Partition after the load, as the C++ twin does: the block-size check then runs while the
    // load is in flight (measured: 0.976 of C++ this way, 0.954 with the partition first).
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let s = cg::inclusive_sum(&warp, v);
    out.set(&i, s);
}

/// `iters` grid syncs; `marks[b]` counts the rounds block `b` completed.
#[kernel(cooperative)]
pub fn bench_grid_sync(grid: GridGroup, iters: u32, mut marks: DisjointSlice<u32>) {
    let mut k = 0;
    while k < iters {
        grid.sync();
        k += 1;
    }
    if thread::thread_rank_in_block() == 0 {
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *marks.get_unchecked_mut(grid.block_rank() as usize) = k };
    }
}

//! Kernels the GPU tests use to check the runtime and the foundation of the device library.

use cohort::prelude::*;

/// Does nothing: measures launch overhead.
#[kernel]
pub fn empty() {}

/// Does nothing with three arguments: measures argument marshalling.
#[kernel]
pub fn empty_args(a: &[f32], n: u32, mut out: DisjointSlice<f32>) {
    let _ = (a, n, &mut out);
}

/// Every index and extent a thread can ask for, as 16 `u64` per thread, at its global rank:
/// `threadIdx.xyz, blockIdx.xyz, blockDim.xyz, gridDim.xyz, lane, warp, rank in block, rank
/// in grid`.
#[kernel]
pub fn thread_indices(mut out: DisjointSlice<[u64; 16]>) {
    let i = thread::index_1d();
    let (t, b, bd, gd) = (thread::thread_idx(), thread::block_idx(), thread::block_dim(), thread::grid_dim());
    let rec = [
        t.x as u64,
        t.y as u64,
        t.z as u64,
        b.x as u64,
        b.y as u64,
        b.z as u64,
        bd.x as u64,
        bd.y as u64,
        bd.z as u64,
        gd.x as u64,
        gd.y as u64,
        gd.z as u64,
        thread::lane_id() as u64,
        thread::warp_id() as u64,
        thread::thread_rank_in_block() as u64,
        thread::global_id(),
    ];
    out.set(&i, rec);
}

/// `out[i] = data[index]`: panics (index out of bounds) when `index >= data.len()`.
#[kernel]
pub fn checked_read(data: &[u32], index: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let v = data[index as usize];
    out.set(&i, v);
}

/// Uses `bytes_per_block` of dynamic shared memory (to test the launch limits).
#[kernel]
pub fn block_barrier_count(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let n = sync::sync_threads_count(thread::thread_idx_x() % 3 == 0);
    out.set(&i, n);
}

use cohort::sync;

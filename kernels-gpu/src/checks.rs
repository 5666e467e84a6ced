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

/// `y[i] = a * x[i] + y[i]` with CUDA C++'s `__launch_bounds__(128, 4)`: at most 128 threads per
/// block (the entry's `.maxntid 128, 1, 1`), and few enough registers that 4 blocks fit one SM
/// (`.minnctapersm 4`). A block of more threads is an `Err`.
#[kernel(launch_bounds(128, 4))]
pub fn bounded_saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = thread::index_1d();
    if let Some(v) = y.get_mut(&i) {
        *v += a * x[i.get()];
    }
}

/// Sixteen running polynomials per element (enough live values to want more than 24 registers)
/// with CUDA C++'s `__maxnreg__(24)`: the entry's `.maxnreg 24` holds ptxas to 24 registers (it
/// takes 32 without).
#[kernel(max_registers(24))]
pub fn capped_polynomials(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index_1d();
    let Some(v) = x.get(i.get()).copied() else { return };
    let mut acc = [0.0f32; 16];
    let mut p = 1.0f32;
    for _ in 0..8 {
        for (k, a) in acc.iter_mut().enumerate() {
            *a = *a * v + p * (k as f32 + 1.0);
        }
        p = p * 0.5 + v;
    }
    let mut s = 0.0f32;
    for (k, a) in acc.iter().enumerate() {
        s += *a * (k as f32 - 7.5);
    }
    out.set(&i, s);
}

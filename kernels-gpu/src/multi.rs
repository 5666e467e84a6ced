//! Multi-grid kernels (one cooperative grid per GPU, synchronized across GPUs): the Jacobi
//! solver of `cohort multi-grid` and the barrier-latency kernel of `cohort bench multi-grid`.

use cohort::prelude::*;

/// `iters` multi-grid syncs; block leaders write `iters` to `marks` (one per block of this
/// grid) so the host sees every block finish.
#[kernel(multi_grid)]
pub fn bench_multi_grid_sync(multi: MultiGridGroup, iters: u32, mut marks: DisjointSlice<u32, PerBlock>) {
    let mut k = 0;
    while k < iters {
        multi.sync();
        k += 1;
    }
    if let Some(leader) = cg::this_thread_block().leader_index() {
        marks.set(leader, k);
    }
}

/// One Jacobi update of row `i` of the CSR system `A x = b` (diagonal in `diag`, off-diagonal
/// entries in `row_ptr` / `cols` / `vals`): `(b[i] - Σ a_ij x_j) / a_ii`, summed in column order.
#[inline(always)]
pub fn jacobi_row(row_ptr: &[u32], cols: &[u32], vals: &[f32], diag: &[f32], b: &[f32], x: &[f32], i: usize) -> f32 {
    let (start, end) = (row_ptr[i] as usize, row_ptr[i + 1] as usize);
    let mut sum = 0.0f32;
    for k in start..end {
        sum += vals[k] * x[cols[k] as usize];
    }
    (b[i] - sum) / diag[i]
}

/// `2 * pairs` Jacobi sweeps of the CSR system `A x = b` split across the GPUs of a multi-grid
/// launch: every thread of every grid updates its rows (a grid-stride loop over all grids),
/// reading the previous iterate from its GPU's replica; `x` and `y` alternate as the iterate
/// (the result is in `x`). The matrix is replicated on every GPU (read-only).
#[kernel(multi_grid)]
#[allow(clippy::too_many_arguments)]
pub fn jacobi_multi(
    multi: MultiGridGroup,
    row_ptr: &[u32],
    cols: &[u32],
    vals: &[f32],
    diag: &[f32],
    b: &[f32],
    mut x: MultiGridVec<f32>,
    mut y: MultiGridVec<f32>,
    pairs: u32,
) {
    let n = b.len();
    for _ in 0..pairs {
        let xv = x.publish(&multi);
        for i in multi.stride(n) {
            let v = jacobi_row(row_ptr, cols, vals, diag, b, &xv, *i);
            y.set(&i, v);
        }
        x = xv.reclaim(&multi);
        let yv = y.publish(&multi);
        for i in multi.stride(n) {
            let v = jacobi_row(row_ptr, cols, vals, diag, b, &yv, *i);
            x.set(&i, v);
        }
        y = yv.reclaim(&multi);
    }
}

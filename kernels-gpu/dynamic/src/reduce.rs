//! Recursive reductions of `n` ints in blocks of `b` threads (the CUDA dynamic-parallelism
//! article's kernels, on CDP2): each block reduces its `b` elements in place and writes one
//! partial sum to `out[block]`; the host adds the partial sums.
//!
//! They reduce in place in global memory, a block's half handed to a child while other blocks
//! still run, so they are `unsafe fn` kernels with raw pointers, as in CUDA C++: the caller
//! passes `data` with `gridDim.x * blockDim.x` elements and `out` with `gridDim.x`.

use cohort::launch::{FireAndForget, LaunchConfig, TailLaunch};
use cohort::prelude::*;

/// Neighbored pairs, no nesting (the baseline): stride 1, 2, 4, … with a block barrier between.
///
/// # Safety
/// `data` holds `gridDim.x * blockDim.x` ints and `out` `gridDim.x`, both device memory that
/// nothing else accesses during the launch; `blockDim.x` is a power of two.
#[kernel]
pub unsafe fn reduce_neighbored(data: *mut i32, out: *mut i32) {
    let tid = thread::thread_idx_x();
    let b = thread::block_dim_x();
    // SAFETY: this block's `b` elements, in bounds by the caller's contract.
    let idata = unsafe { data.add((thread::block_idx_x() * b) as usize) };
    let mut stride = 1;
    while stride < b {
        if tid.is_multiple_of(2 * stride) {
            // SAFETY: `tid + stride < b`; only this thread writes element `tid` in this round,
            // and element `tid + stride` was last written before the previous barrier.
            unsafe { *idata.add(tid as usize) += *idata.add((tid + stride) as usize) };
        }
        sync_threads();
        stride *= 2;
    }
    if tid == 0 {
        // SAFETY: one writer per block, in bounds.
        unsafe { *out.add(thread::block_idx_x() as usize) = *idata };
    }
}

/// "Nested, no sync": the block adds its upper half onto its lower half, then its thread 0
/// launches a one-block child with half the threads on that half (fire-and-forget), down to
/// two elements. `size` is the number of elements of the block's part (`blockDim.x` at first).
///
/// # Safety
/// As [`reduce_neighbored`]; `size` is a power of two, at least 2, and `blockDim.x >= size / 2`.
/// A child owns the lower half of its parent block's part, which the parent block no longer
/// touches once it has launched the child.
#[kernel]
pub unsafe fn reduce_nested(data: *mut i32, out: *mut i32, size: u32) {
    let tid = thread::thread_idx_x();
    let bid = thread::block_idx_x();
    // SAFETY: this block's part, in bounds by the caller's contract.
    let idata = unsafe { data.add((bid * thread::block_dim_x()) as usize) };
    if size == 2 {
        if tid == 0 {
            // SAFETY: the last two elements of the part, and one writer of `out[bid]`.
            unsafe { *out.add(bid as usize) = *idata + *idata.add(1) };
        }
        return;
    }
    let half = size / 2;
    if tid < half {
        // SAFETY: `tid + half < size`; each thread writes its own element.
        unsafe { *idata.add(tid as usize) += *idata.add((tid + half) as usize) };
    }
    // Every thread's write is ordered before thread 0's launch (the child sees them).
    sync_threads();
    if tid == 0 {
        let cfg = LaunchConfig::new(1, half / 2);
        // SAFETY: the child takes this block's lower half (`half` elements) and `out[bid]`,
        // which no thread of this grid touches after the barrier above.
        let r = unsafe { reduce_nested::launch_from_device(&cfg, FireAndForget, idata, out.add(bid as usize), half) };
        if r.is_err() {
            // SAFETY: one writer of `out[bid]`; the host sees a wrong sum.
            unsafe { *out.add(bid as usize) = i32::MIN };
        }
    }
}

/// "Nested, synchronizing", rewritten with tail launches: as [`reduce_nested`], but each
/// block's child is a tail launch, which runs after this whole grid has completed (the CDP2
/// replacement of the child-then-`cudaDeviceSynchronize()` of CDP1).
///
/// # Safety
/// As [`reduce_nested`].
#[kernel]
pub unsafe fn reduce_nested_tail(data: *mut i32, out: *mut i32, size: u32) {
    let tid = thread::thread_idx_x();
    let bid = thread::block_idx_x();
    // SAFETY: this block's part, in bounds by the caller's contract.
    let idata = unsafe { data.add((bid * thread::block_dim_x()) as usize) };
    if size == 2 {
        if tid == 0 {
            // SAFETY: the last two elements of the part, and one writer of `out[bid]`.
            unsafe { *out.add(bid as usize) = *idata + *idata.add(1) };
        }
        return;
    }
    let half = size / 2;
    if tid < half {
        // SAFETY: `tid + half < size`; each thread writes its own element.
        unsafe { *idata.add(tid as usize) += *idata.add((tid + half) as usize) };
    }
    if tid == 0 {
        let cfg = LaunchConfig::new(1, half / 2);
        // SAFETY: the tail child runs after this grid has completed and takes this block's
        // lower half and `out[bid]`; the grid's tail launches run one at a time.
        let r = unsafe { reduce_nested_tail::launch_from_device(&cfg, TailLaunch, idata, out.add(bid as usize), half) };
        if r.is_err() {
            // SAFETY: one writer of `out[bid]`; the host sees a wrong sum.
            unsafe { *out.add(bid as usize) = i32::MIN };
        }
    }
}

/// "Nested 2": every block adds `data[b*dim + t + stride]` onto `data[b*dim + t]` for its
/// `stride` threads; then block 0's thread 0 launches the next level — the whole grid again,
/// with half the threads — as a tail launch, so that it runs when every block of this level is
/// done. At stride 1 each block writes its partial sum. `dim` is the elements per block.
///
/// # Safety
/// `data` holds `gridDim.x * dim` ints and `out` `gridDim.x`; `blockDim.x == stride`, a power
/// of two, and `dim == 2 * stride` at the first level.
#[kernel]
pub unsafe fn reduce_nested2(data: *mut i32, out: *mut i32, stride: u32, dim: u32) {
    let tid = thread::thread_idx_x();
    let bid = thread::block_idx_x();
    // SAFETY: this block's part, in bounds by the caller's contract.
    let idata = unsafe { data.add((bid * dim) as usize) };
    if stride == 1 {
        if tid == 0 {
            // SAFETY: the last two elements of the part, and one writer of `out[bid]`.
            unsafe { *out.add(bid as usize) = *idata + *idata.add(1) };
        }
        return;
    }
    // SAFETY: `tid < stride`, `tid + stride < dim`; each thread writes its own element.
    unsafe { *idata.add(tid as usize) += *idata.add((tid + stride) as usize) };
    if tid == 0 && bid == 0 {
        let cfg = LaunchConfig::new(thread::grid_dim_x(), stride / 2);
        // SAFETY: the next level runs after this grid has completed (tail launch) on the same
        // memory, which nothing else touches.
        let r = unsafe { reduce_nested2::launch_from_device(&cfg, TailLaunch, data, out, stride / 2, dim) };
        if r.is_err() {
            // SAFETY: `out[0]`, which this level does not write; the host sees a wrong sum.
            unsafe { *out = i32::MIN };
        }
    }
}

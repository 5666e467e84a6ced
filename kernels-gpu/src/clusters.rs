//! `cohort bench clusters`: thread-block clusters and distributed shared memory, beside their
//! CUDA C++ twins (`host/benches/cluster_twins.cu`).
//!
//! - [`cluster_hist`]: the Programming Guide's distributed-shared-memory histogram (its
//!   `clusterHist_kernel`): the cluster's `nbins` bins split over its blocks' dynamic shared
//!   memory, every element a remote atomic to the bin's owner, each block's part added to the
//!   global bins at the end; [`block_hist`] the same without clusters (one block's shared
//!   histogram holds every bin).
//! - [`cluster_sum`]: a cluster reduction: each block reduces its grid-stride share, block rank
//!   0 of each cluster adds the other blocks' partial sums (remote loads) and makes one global
//!   atomic per cluster.
//! - [`cluster_stencil3`]: a three-point stencil whose halo comes from the neighbour blocks'
//!   shared memory inside a cluster (from global memory at a cluster's ends).

use cohort::atomic::{AtomicU32, Ordering};
use cohort::cg::{self, ThreadGroup};
use cohort::prelude::*;
use cohort::shared;

/// `clusterHist_kernel`: `bins_per_block = nbins / cluster blocks` bins per block in dynamic
/// shared memory (the launch gives `4 · bins_per_block` bytes); input values at or past `nbins`
/// count in the last bin. Grid-stride over `input`.
#[kernel(cluster)]
pub fn cluster_hist(input: &[u32], nbins: u32, bins: &[AtomicU32]) {
    let cluster = cg::this_cluster();
    let smem = cohort::shared::dynamic::<u32>();
    let per_block = smem.len() as u32;
    let mut i = thread::thread_rank_in_block();
    while i < per_block {
        smem.store(i as usize, 0);
        i += thread::block_size();
    }
    cluster.sync();
    for i in thread::grid_stride(input.len()) {
        let bin = input[*i].min(nbins - 1);
        let dst = cluster.map_shared_rank_slice(&smem, bin / per_block);
        dst.atomic((bin % per_block) as usize).fetch_add(1, Ordering::Relaxed);
    }
    cluster.sync();
    let base = (cluster.block_rank() * per_block) as usize;
    let mut i = thread::thread_rank_in_block();
    while i < per_block {
        bins[base + i as usize].fetch_add(smem.load(i as usize), Ordering::Relaxed);
        i += thread::block_size();
    }
}

/// The same histogram without clusters: each block's dynamic shared memory holds all `nbins`
/// bins (shared atomics), added to the global bins at the end.
#[kernel]
pub fn block_hist(input: &[u32], nbins: u32, bins: &[AtomicU32]) {
    let smem = cohort::shared::dynamic::<u32>();
    let mut i = thread::thread_rank_in_block();
    while i < nbins {
        smem.store(i as usize, 0);
        i += thread::block_size();
    }
    sync_threads();
    for i in thread::grid_stride(input.len()) {
        let bin = input[*i].min(nbins - 1);
        smem.atomic(bin as usize).fetch_add(1, Ordering::Relaxed);
    }
    sync_threads();
    let mut i = thread::thread_rank_in_block();
    while i < nbins {
        bins[i as usize].fetch_add(smem.load(i as usize), Ordering::Relaxed);
        i += thread::block_size();
    }
}

shared! {
    /// A block's partial sum (the cluster reduction).
    static PARTIAL: [u32; 1];
    /// A block's tile of the stencil's input.
    static TILE: [u32; 512];
}

/// A cluster reduction: the wrapping sum of `input` into `out`. Each block reduces its
/// grid-stride share (a block reduce), the cluster syncs, and thread 0 of the cluster's block
/// rank 0 adds the other blocks' partial sums (remote loads) and the cluster's total to `out[0]`.
#[kernel(cluster)]
pub fn cluster_sum(input: &[u32], out: &[AtomicU32]) {
    let cluster = cg::this_cluster();
    let block = cg::this_thread_block();
    let mut v = 0u32;
    for i in thread::grid_stride(input.len()) {
        v = v.wrapping_add(input[*i]);
    }
    let total = cg::reduce(&block, v, |a: u32, b: u32| a.wrapping_add(b));
    let partial = PARTIAL.get();
    if block.thread_rank() == 0 {
        partial.store(0, total);
    }
    cluster.sync();
    if cluster.thread_rank() == 0 {
        let mut sum = 0u32;
        for r in 0..cluster.num_blocks() {
            sum = sum.wrapping_add(cluster.map_shared_rank(partial, r).load(0));
        }
        out[0].fetch_add(sum, Ordering::Relaxed);
    }
}

/// `out[i] = input[i-1] + 2·input[i] + input[i+1]` (wrapping; 0 past the ends), one element per
/// thread, blocks of 512 threads, 1-D clusters: each block loads its tile into shared memory, the
/// cluster syncs, and a tile's edge reads its missing neighbour from the previous / next block of
/// the cluster (a remote load), or from global memory at the cluster's ends.
#[kernel(cluster)]
pub fn cluster_stencil3(input: &[u32], mut out: DisjointSlice<u32>) {
    let cluster = cg::this_cluster();
    let t = thread::thread_rank_in_block() as usize;
    let n = thread::block_size() as usize;
    let i = thread::index_1d();
    let len = input.len();
    let tile = TILE.get();
    let here = if *i < len { input[*i] } else { 0 };
    tile.store(t, here);
    cluster.sync();
    if *i >= len {
        return;
    }
    let me = cluster.block_rank();
    let left = if t > 0 {
        tile.load(t - 1)
    } else if me > 0 {
        cluster.map_shared_rank(tile, me - 1).load(n - 1)
    } else if *i > 0 {
        input[*i - 1]
    } else {
        0
    };
    let right = if t + 1 < n {
        tile.load(t + 1)
    } else if me + 1 < cluster.num_blocks() {
        cluster.map_shared_rank(tile, me + 1).load(0)
    } else if *i + 1 < len {
        input[*i + 1]
    } else {
        0
    };
    out.set(i, left.wrapping_add(here.wrapping_mul(2)).wrapping_add(right));
}

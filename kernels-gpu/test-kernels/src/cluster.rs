//! Kernels of the cluster tests (`tests/gpu/thread.rs` for now: the cluster registers).

use cohort::prelude::*;

/// Every thread writes its block's rank in its cluster and the cluster's size in blocks.
#[kernel]
pub fn cluster_ranks(mut out: DisjointSlice<[u32; 2]>) {
    let i = thread::index_1d();
    out.set(i, [cohort::raw::cluster_ctarank(), cohort::raw::cluster_nctarank()]);
}

//! Kernels of the cluster tests (`tests/gpu/cluster.rs`, and `tests/gpu/thread.rs` for the
//! cluster registers without clusters).

use cohort::atomic::{AtomicU32, Ordering};
use cohort::cg::{self, ThreadGroup};
use cohort::prelude::*;

/// Every thread writes its block's rank in its cluster and the cluster's size in blocks.
#[kernel]
pub fn cluster_ranks(mut out: DisjointSlice<[u32; 2]>) {
    let i = thread::index_1d();
    out.set(i, [cohort::raw::cluster_ctarank(), cohort::raw::cluster_nctarank()]);
}

/// Every member of the cluster group and the grid's cluster members, per thread:
/// `[block_rank, num_blocks, dim_blocks xyz, block_index xyz, dim_threads xyz, thread_rank,
/// num_threads, is_valid, grid cluster_rank, num_clusters, dim_clusters xyz, cluster_index xyz]`.
#[kernel(cluster)]
pub fn cluster_members(mut out: DisjointSlice<[u32; 24]>) {
    let c = cg::this_cluster();
    let g = cg::this_grid();
    let (db, bi, dt) = (c.dim_blocks(), c.block_index(), c.dim_threads());
    let (dc, ci) = (g.dim_clusters(), g.cluster_index());
    out.set(
        thread::index_1d(),
        [
            c.block_rank(),
            c.num_blocks(),
            db.x,
            db.y,
            db.z,
            bi.x,
            bi.y,
            bi.z,
            dt.x,
            dt.y,
            dt.z,
            c.thread_rank(),
            c.num_threads(),
            u32::from(c.is_valid()),
            g.cluster_rank() as u32,
            g.num_clusters() as u32,
            dc.x,
            dc.y,
            dc.z,
            ci.x,
            ci.y,
            ci.z,
            0,
            0,
        ],
    );
}

cohort::shared! {
    /// One block's values, read by the other blocks of its cluster.
    static VALUES: [u32; 256];
    /// The histogram part of a block (the DSMEM histogram).
    static BINS: [u32; 1024];
    /// The remote-write test's array: every block writes its own part of each other block's.
    static PARTS: [u32; 256];
}

/// Each block puts `input` of its threads into its shared `VALUES`, the cluster syncs, and each
/// thread writes, for every rank `r` of its cluster, the value of thread `t` in block `r`
/// (a remote load), summed with weights: `out[i] = Σ_r (r + 1) · VALUES_r[t]`. Threads with
/// `t >= live` return before anything (they exit early: the cluster's sync lets them through,
/// and only the block's last thread to leave its body waits for the other blocks).
/// Blocks of at most 256 threads.
#[kernel(cluster)]
pub fn cluster_remote_sum(input: &[u32], live: u32, mut out: DisjointSlice<u32>) {
    let c = cg::this_cluster();
    let t = thread::thread_rank_in_block();
    let i = thread::index_1d();
    if t >= live {
        return;
    }
    let values = VALUES.get();
    values.store(t as usize, input[*i]);
    c.sync();
    let mut sum = 0u32;
    for r in 0..c.num_blocks() {
        let remote = c.map_shared_rank(values, r);
        sum = sum.wrapping_add((r + 1).wrapping_mul(remote.load(t as usize)));
    }
    out.set(i, sum);
}

/// The Programming Guide's distributed-shared-memory histogram: the cluster's `nbins` bins are
/// split over its blocks (`nbins / num_blocks` each, in each block's `BINS`); every thread adds
/// its elements (grid-stride) to the bin's owner with a remote atomic; after a cluster sync each
/// block adds its part to `out`. `nbins / num_blocks <= 1024`.
#[kernel(cluster)]
pub fn cluster_histogram(input: &[u32], nbins: u32, out: &[AtomicU32]) {
    let c = cg::this_cluster();
    let per_block = nbins / c.num_blocks();
    let bins = BINS.get();
    let t = thread::thread_rank_in_block();
    let mut b = t;
    while b < per_block {
        bins.store(b as usize, 0);
        b += thread::block_size();
    }
    c.sync();
    for i in thread::grid_stride(input.len()) {
        let bin = input[*i] % nbins;
        let remote = c.map_shared_rank(bins, bin / per_block);
        remote.atomic((bin % per_block) as usize).fetch_add(1, Ordering::Relaxed);
    }
    c.sync();
    let base = c.block_rank() * per_block;
    let mut b = t;
    while b < per_block {
        let v = bins.load(b as usize);
        if v != 0 {
            out[(base + b) as usize].fetch_add(v, Ordering::Relaxed);
        }
        b += thread::block_size();
    }
}

/// Remote writes through the disjoint scheme: block `me` stores, into its own part of every
/// block `r`'s `PARTS`, the values `1000·me + 100·r + j`; after a cluster sync each block writes
/// its whole `PARTS` (256 elements, one per thread) to `out`. Blocks of 256 threads.
#[kernel(cluster)]
pub fn cluster_store_own(mut out: DisjointSlice<u32>) {
    let c = cg::this_cluster();
    let t = thread::thread_rank_in_block() as usize;
    let me = c.block_rank();
    let parts = PARTS.get();
    for r in 0..c.num_blocks() {
        let remote = c.map_shared_rank(parts, r);
        if t < remote.part_len() {
            remote.store_own(t, 1000 * me + 100 * r + t as u32);
        }
    }
    c.sync();
    out.set(thread::index_1d(), parts.load(t));
}

/// A 1-D three-point stencil whose halo comes from the neighbour blocks' shared memory: each
/// block loads its tile of `input` into `VALUES`, the cluster syncs, and the first and last
/// threads read their missing neighbour from the previous / next block of the cluster (a
/// remote load); at the cluster's ends (and the grid's) the halo is the global input, 0 past
/// the ends. `out[i] = input[i-1] + 2·input[i] + input[i+1]`. Blocks of at most 256 threads,
/// 1-D clusters, `input.len()` = the grid's threads.
#[kernel(cluster)]
pub fn cluster_stencil(input: &[u32], mut out: DisjointSlice<u32>) {
    let c = cg::this_cluster();
    let t = thread::thread_rank_in_block();
    let n = thread::block_size();
    let i = thread::index_1d();
    let values = VALUES.get();
    values.store(t as usize, input[*i]);
    c.sync();
    let me = c.block_rank();
    let left = if t > 0 {
        values.load(t as usize - 1)
    } else if me > 0 {
        c.map_shared_rank(values, me - 1).load(n as usize - 1)
    } else if *i > 0 {
        input[*i - 1]
    } else {
        0
    };
    let right = if t + 1 < n {
        values.load(t as usize + 1)
    } else if me + 1 < c.num_blocks() {
        c.map_shared_rank(values, me + 1).load(0)
    } else if *i + 1 < input.len() {
        input[*i + 1]
    } else {
        0
    };
    out.set(i, left.wrapping_add(values.load(t as usize).wrapping_mul(2)).wrapping_add(right));
}

/// A kernel that is not a cluster kernel: launching it in clusters is an `Err`.
#[kernel]
pub fn not_a_cluster_kernel(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    out.set(i, cg::this_cluster().num_blocks());
}

/// The split-phase cluster barrier: every thread stores its element into `VALUES`, arrives,
/// computes on its own while the others arrive, then waits and sums the cluster's elements as
/// [`cluster_remote_sum`] does. `mode` picks the wait: 0 `token.wait()`, 1
/// `cluster.barrier_wait(token)`, 2 `drop(token)`; threads with `t >= live` return between the
/// arrival and the wait (the token's drop waits). `out[i]` = the weighted remote sum + `t * 3`
/// (the work between arrival and wait).
#[kernel(cluster)]
pub fn cluster_split_sum(input: &[u32], mode: u32, live: u32, mut out: DisjointSlice<u32>) {
    let c = cg::this_cluster();
    let t = thread::thread_rank_in_block();
    let i = thread::index_1d();
    let values = VALUES.get();
    values.store(t as usize, input[*i]);
    let token = c.barrier_arrive();
    let own = t.wrapping_mul(3);
    if t >= live {
        return;
    }
    match mode {
        0 => token.wait(),
        1 => c.barrier_wait(token),
        _ => drop(token),
    }
    let mut sum = own;
    for r in 0..c.num_blocks() {
        let remote = c.map_shared_rank(values, r);
        sum = sum.wrapping_add((r + 1).wrapping_mul(remote.load(t as usize)));
    }
    out.set(i, sum);
}

/// Misuse of the split barrier, each a panic (not a hang, not undefined barrier state): mode 0
/// `cluster.sync()` between an arrival and its wait; mode 1 a second arrival after forgetting
/// the first token. Mode 2 forgets the token and leaves: the exit protocol waits for the
/// arrival, and the launch ends normally (`out[i] = 1`).
#[kernel(cluster)]
pub fn cluster_split_misuse(mode: u32, mut out: DisjointSlice<u32>) {
    let c = cg::this_cluster();
    let token = c.barrier_arrive();
    match mode {
        0 => {
            c.sync();
            token.wait();
        }
        1 => {
            core::mem::forget(token);
            c.barrier_arrive().wait();
        }
        _ => core::mem::forget(token),
    }
    out.set(thread::index_1d(), 1);
}

//! Cooperative Groups (Programming Guide, CUDA 11 edition, §"Cooperative Groups").
//!
//! Groups are small `Copy` handles sharing one trait, [`ThreadGroup`] (`thread_rank`,
//! `num_threads`, `sync`). Groups that live inside one warp (tiles of ≤ 32 threads, coalesced
//! groups) also implement [`WarpGroup`]: shuffles, votes, matches and meta ranks. Collectives
//! ([`reduce`], [`inclusive_scan`], [`exclusive_scan`]) work on every group through
//! [`Collective`].
//!
//! | CUDA C++ (`namespace cg = cooperative_groups`) | Cohort (`cohort::cg`) |
//! |---|---|
//! | `thread_group` (the common interface) | [`ThreadGroup`] trait (+ [`WarpGroup`], [`Collective`]) |
//! | `cg::this_thread_block()` → `thread_block` | [`this_thread_block()`] → [`ThreadBlock`] |
//! | `block.sync()`, `thread_rank()`, `group_index()`, `thread_index()`, `dim_threads()`, `num_threads()`, `size()`, `group_dim()` | same names |
//! | `cg::this_cluster()` → `cluster_group` (sm_90) | [`this_cluster()`] → [`ClusterGroup`] (see [`cluster`]) |
//! | `block.barrier_arrive()` → token, `block.barrier_wait(std::move(token))` | [`ThreadBlock::barrier_arrive`] → [`BlockArrival`], [`BlockArrival::wait`] (see [`split`]) |
//! | `grid.barrier_arrive()` → token, `grid.barrier_wait(std::move(token))` | [`GridGroup::barrier_arrive`] → [`GridArrival`], [`GridArrival::wait`] (see [`split`]) |
//! | `cluster.barrier_arrive()` → token, `cluster.barrier_wait(std::move(token))` | [`ClusterGroup::barrier_arrive`] → [`ClusterArrival`], [`ClusterArrival::wait`] (see [`cluster`]) |
//! | `cg::this_grid()` → `grid_group` (in a cooperative launch) | a `grid: GridGroup` parameter of a `#[kernel(cooperative)]` kernel; [`this_grid()`] → [`Grid`] (no `sync`) elsewhere |
//! | `grid.sync()`, `is_valid()`, `thread_rank()`, `block_rank()`, `num_threads()`, `num_blocks()`, `dim_blocks()`, `block_index()` | same names on [`GridGroup`] |
//! | `cg::tiled_partition<N>(parent)` → `thread_block_tile<N>` | [`tiled_partition::<N>(&parent)`](TileParent::tiled_partition) → [`ThreadBlockTile<N, P>`] (N ≤ 32) or [`LargeTile<N, P>`] (64–512) |
//! | `cg::tiled_partition(parent, n)` → `thread_group` | [`tiled_partition_dyn(&parent, n)`](tiled_partition_dyn) → [`DynTile`] |
//! | `cg::this_thread()` | [`this_thread()`] (a tile of 1) |
//! | `tile.shfl`, `shfl_up`, `shfl_down`, `shfl_xor` | same names (`shfl_xor` on tiles) |
//! | `tile.any`, `all`, `ballot`, `match_any`, `match_all` | same names (`match_all` returns `(mask, pred)`) |
//! | `tile.meta_group_rank()`, `meta_group_size()` | same names |
//! | `cg::coalesced_threads()` → `coalesced_group` | [`coalesced_threads()`] → [`CoalescedGroup`] |
//! | `cg::labeled_partition(g, label)` | [`labeled_partition(&g, label)`](labeled_partition) |
//! | `cg::binary_partition(g, pred)` | [`binary_partition(&g, pred)`](binary_partition) |
//! | `cg::reduce(g, v, op)` | [`reduce(&g, v, op)`](reduce) |
//! | `cg::inclusive_scan(g, v[, op])`, `cg::exclusive_scan(g, v[, op])` | [`inclusive_scan`], [`exclusive_scan`] (with op); [`inclusive_sum`], [`exclusive_sum`] (default plus) |
//! | `cg::exclusive_scan_update(g, atomic, v)`, `inclusive_scan_update` | [`exclusive_scan_update`], [`inclusive_scan_update`] |
//! | `cg::invoke_one(g, fn, args...)` (every group) | [`invoke_one(&g, \|\| …)`](invoke_one) → `Some` in the member that ran it (rank 0); see [`invoke`] |
//! | `cg::invoke_one_broadcast(g, fn, args...)` (tiles, coalesced groups) | [`invoke_one_broadcast(&g, \|\| …)`](invoke_one_broadcast) (the [`Broadcast`] groups) |
//! | `cg::reduce_update_async(g, atomic, v, op)` | [`reduce_update_async(&g, &atomic, v, op)`](reduce_update_async): rank 0 applies the result with one atomic RMW |
//! | `cg::reduce_store_async(g, atomic, v, op)`, `(g, ptr, v, op)` | [`reduce_store_async(&g, &atomic, v, op)`](reduce_store_async), or with an `Option<&mut T>` (the destination's owner stores) |
//! | `cg::plus<T>`, `less`, `greater`, `bit_and`, `bit_or`, `bit_xor` | [`plus`], [`less`], [`greater`], [`bit_and`], [`bit_or`], [`bit_xor`] (or any closure) |
//! | `cg::memcpy_async(g, dst, src, bytes)`, `cg::wait(g)`, `cg::wait_prior<N>(g)` | [`memcpy_async`] → [`AsyncCopy::wait`] (the destination comes back from the wait); [`AsyncCopies`] for several copies in flight |
//! | `cuda::barrier<thread_scope_block>` (`mbarrier`), `cuda::memcpy_async(…, barrier)`, the sm_90 bulk copy | [`AsyncBarrier`] in a [`scope`](AsyncBarrierStatic::scope) of an [`async_barrier!`](crate::async_barrier) static: [`Arrival`], [`Transfer`] (see [`AsyncBarrier`]'s module docs in `cg/async_barrier.rs`) |
//! | `cg::sync(g)`, `cg::thread_rank(g)`, `cg::num_threads(g)` | [`sync`], [`thread_rank`], [`num_threads`] |
//! | (grid-wide reduction by hand) | [`reduce_grid`] with a [`GridScratch`] |
//!
//! Block-level reduce and scan (not in CUDA's `cg`, which reduces tiles only): `reduce(&block,
//! v, op)` and the scans also accept the [`ThreadBlock`]; every thread gets the result.
//!
//! ## Convergence
//!
//! Every collective — `sync`, shuffles, votes, matches, `reduce` and the scans, partitions,
//! `memcpy_async`'s wait, grid sync, `reduce_grid` — must be called by **every member of its
//! group, at the same call**. As in CUDA, a collective reached by only part of its group
//! (lanes 0–15 at one `shfl`, 16–31 at another; one block skipping `grid.sync()`) is undefined: it
//! can return wrong values or hang. "The same call" is one call in the code as compiled: two
//! calls written inside one `macro_rules!` body, or reached through one `#[track_caller]`
//! helper, are two calls, though they share a source location; one call in a loop is one call.
//! Blocks at two different grid syncs break the rule too (the hardware's grid barrier counts
//! arrivals, and would let them pass each other). Cohort emits the *non-aligned* block barriers
//! (`barrier.sync`, `barrier.red`), so warps that reach one `sync_threads*` from different
//! instructions are defined. In checked mode ([`crate::check`]; on by default in debug builds)
//! partial participation in a tile, coalesced-group or block collective, blocks at different
//! grid syncs, and a grid sync that not every block reaches, end the launch with an `Err`
//! naming the collective and the call site (the CPU device reports the same, always). The
//! collectives' docs refer to this section.
//!
//! `this_multi_grid()` (removed from CUDA 13) is a `multi: MultiGridGroup` parameter of a
//! `#[kernel(multi_grid)]` kernel, launched on several GPUs at once through
//! `cohort_runtime::MultiGrid`: [`MultiGridGroup`] (`sync`, `num_grids`, `grid_rank`,
//! `thread_rank`, `num_threads`).
//!
//! Thread-block clusters (sm_90) and distributed shared memory: [`cluster`] (`#[kernel(cluster)]`,
//! [`this_cluster()`] → [`ClusterGroup`], [`ClusterGroup::map_shared_rank`] → [`RemoteArray`]),
//! with its own CUDA C++ ↔ Cohort table.

mod async_barrier;
pub mod cluster;
mod coalesced;
pub(crate) mod grid;
mod grid_vec;
pub mod invoke;
mod large;
mod memcpy;
mod multi_grid;
mod reduce;
pub(crate) mod shfl;
pub mod split;
mod tile;

pub(crate) use async_barrier::{ARRIVED, fail_with as async_barrier_fail_with};
pub use async_barrier::{Arrival, AsyncBarrier, AsyncBarrierStatic, Transfer};
pub use cluster::{ClusterArrival, ClusterGroup, RemoteArray, RemoteSlice, this_cluster};
pub use coalesced::{CoalescedGroup, binary_partition, coalesced_threads, labeled_partition};
pub use grid::{Grid, GridGroup, this_grid};
pub use grid_vec::{GridVec, GridVecView};
pub use invoke::{Broadcast, invoke_one, invoke_one_broadcast};
pub use large::LargeTile;
pub use memcpy::{
    AsyncCopies, AsyncCopy, AsyncTiles, commit_async_copies, memcpy_async, memcpy_async_tile, wait_prior,
};
pub use multi_grid::{
    MULTI_GRID_MAX, MultiGridGroup, MultiGridIndex, MultiGridStride, MultiGridVec, MultiGridVecView, MultiGridWords,
};
pub use reduce::{
    AddSelf, AtomicAdd, AtomicKind, AtomicReduce, BitAndSelf, BitOrSelf, BitXorSelf, Collective, GridScratch, ReduceOp,
    StoreTarget, bit_and, bit_or, bit_xor, exclusive_scan, exclusive_scan_update, exclusive_sum, greater,
    inclusive_scan, inclusive_scan_update, inclusive_sum, less, plus, reduce, reduce_grid, reduce_store_async,
    reduce_update_async,
};
pub use shfl::{MatchBits, MatchValue};
pub use split::{BlockArrival, GridArrival};
pub use tile::TileParent::tiled_partition;
pub use tile::{DynTile, Size, ThreadBlockTile, TileParent, TileSize, this_thread, tiled_partition_dyn};

use crate::DeviceCopy;
use crate::thread::{self, Dim3};

/// What every group offers (CUDA's `thread_group` interface).
pub trait ThreadGroup {
    /// The integer type of ranks and sizes: `u32`, or `u64` for the grid.
    type Size: Copy + Into<u64>;

    /// This thread's rank in the group, `0..num_threads()`.
    fn thread_rank(&self) -> Self::Size;

    /// How many threads are in the group.
    fn num_threads(&self) -> Self::Size;

    /// Waits until every thread of the group arrives (and orders their memory accesses).
    /// Every thread of the group must call it at the same site (the [convergence rule](crate::cg#convergence)).
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self);

    /// Legacy name of [`num_threads`](Self::num_threads).
    fn size(&self) -> Self::Size {
        self.num_threads()
    }
}

/// Groups inside one warp: tiles of ≤ 32 threads and coalesced groups. Ranks in every member
/// are ranks in the group.
/// Every member must call each method at the same site: the [convergence rule](crate::cg#convergence).
pub trait WarpGroup: ThreadGroup<Size = u32> + Copy {
    /// The group's lanes within the warp (bit *i* = lane *i*).
    fn lane_mask(&self) -> u32;
    /// This group's rank among the groups its parent was split into.
    fn meta_group_rank(&self) -> u32;
    /// How many groups the parent was split into.
    fn meta_group_size(&self) -> u32;
    /// The value `v` of the member of rank `src_rank` (`shfl`).
    #[doc(alias = "__shfl_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl<T: DeviceCopy>(&self, v: T, src_rank: u32) -> T;
    /// The value of the member `delta` ranks lower; members with no such member keep their
    /// own (`shfl_up`).
    #[doc(alias = "__shfl_up_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_up<T: DeviceCopy>(&self, v: T, delta: u32) -> T;
    /// The value of the member `delta` ranks higher; members with no such member keep their
    /// own (`shfl_down`).
    #[doc(alias = "__shfl_down_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_down<T: DeviceCopy>(&self, v: T, delta: u32) -> T;
    /// Whether `pred` holds for any member.
    #[doc(alias = "__any_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn any(&self, pred: bool) -> bool;
    /// Whether `pred` holds for every member.
    #[doc(alias = "__all_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn all(&self, pred: bool) -> bool;
    /// Bit *r* set when the member of rank *r* passed `true`.
    #[doc(alias = "__ballot_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn ballot(&self, pred: bool) -> u32;
    /// The members (bit per rank) whose `v` equals this member's.
    #[doc(alias = "__match_any_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_any<T: MatchValue>(&self, v: T) -> u32;
    /// `(all members, true)` when every member's `v` is equal, else `(0, false)`.
    #[doc(alias = "__match_all_sync")]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_all<T: MatchValue>(&self, v: T) -> (u32, bool);
    #[doc(hidden)]
    fn redux_mask(&self) -> Option<u32>;
    #[doc(hidden)]
    fn is_tile(&self) -> bool;
}

/// `cg::sync(group)`.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn sync<G: ThreadGroup>(group: &G) {
    group.sync()
}

/// `cg::thread_rank(group)`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn thread_rank<G: ThreadGroup>(group: &G) -> G::Size {
    group.thread_rank()
}

/// `cg::num_threads(group)`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn num_threads<G: ThreadGroup>(group: &G) -> G::Size {
    group.num_threads()
}

/// The threads of this block (`cg::thread_block`).
#[derive(Clone, Copy, Debug)]
pub struct ThreadBlock {
    _private: (),
}

/// `cg::this_thread_block()`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn this_thread_block() -> ThreadBlock {
    ThreadBlock { _private: () }
}

impl ThreadBlock {
    /// `blockIdx`: this block's index in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn group_index(&self) -> Dim3 {
        thread::block_idx()
    }

    /// `threadIdx`: this thread's index in the block.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn thread_index(&self) -> Dim3 {
        thread::thread_idx()
    }

    /// `blockDim`: the block's extent.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn dim_threads(&self) -> Dim3 {
        thread::block_dim()
    }

    /// Legacy name of [`dim_threads`](Self::dim_threads).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn group_dim(&self) -> Dim3 {
        self.dim_threads()
    }

    /// The block's own element of a [`DisjointSlice<T, PerBlock>`](crate::slice::DisjointSlice)
    /// (its rank in the grid), held by the block's leader (thread rank 0) alone; `None` in
    /// every other thread. CUDA's `if (threadIdx.x == 0) out[blockIdx.x] = v;`, safely.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn leader_index(&self) -> Option<crate::thread::ThreadIndex<crate::thread::PerBlock>> {
        (thread::thread_rank_in_block() == 0)
            .then(|| crate::thread::ThreadIndex::from_rank(thread::block_rank() as usize))
    }

    /// The block's own element of a [`DisjointSlice<T, PerBlock>`](crate::slice::DisjointSlice),
    /// held by the block's **last** thread (rank `block_size() - 1`) alone: where a block scan
    /// leaves the total (`if (threadIdx.x == blockDim.x - 1) totals[blockIdx.x] = sum;`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn last_index(&self) -> Option<crate::thread::ThreadIndex<crate::thread::PerBlock>> {
        (thread::thread_rank_in_block() == thread::block_size() - 1)
            .then(|| crate::thread::ThreadIndex::from_rank(thread::block_rank() as usize))
    }
}

impl ThreadGroup for ThreadBlock {
    type Size = u32;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u32 {
        thread::thread_rank_in_block()
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u32 {
        thread::block_size()
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        crate::sync::sync_threads()
    }
}

//! Tiles of 64, 128, 256 and 512 threads (CUDA's experimental large tiles): several whole
//! warps, synchronized and combined through shared-memory scratch the library allocates.
//!
//! **Sync** is a hardware named barrier, `barrier.sync 1 + tile, N` (ids 1 to 13; id 0 is the
//! block's `__syncthreads`, id 14 the block's split waits (`cg::split`), id 15 the library's
//! phase barrier of `GridVec`s), which orders memory among the tile's threads and which
//! compute-sanitizer's racecheck understands. The shapes that need more — 14 to 16 tiles of 64
//! in a block of 896 to 1024 — use CUDA's
//! warp-leader barrier in shared memory instead:
//! each warp syncs itself, its lane 0 arrives with an `acq_rel` atomic at block scope, the last
//! arrival resets the count and releases a new generation, the others spin on it with acquire
//! loads, then the warp syncs again. (Do not use named barriers 1–13 yourself in kernels with
//! large tiles, 14 in kernels with split block barriers, nor 15 in kernels with a `GridVec`.)
//!
//! Scratch (static shared memory, present only in kernels that use large tiles): the
//! fallback barrier's words, a 32-byte broadcast slot per tile, and a 32-byte partial per
//! warp — 1.6 KiB per block.

use super::reduce::{
    Collective, ReduceOp, SlotWrites, finish_two_level_scan, fold_warp_slots, scan_incl_warp, tile_reduce,
};
use super::tile::{Size, TileParent, TileSize, sealed};
use super::{ThreadBlock, ThreadGroup};
use crate::DeviceCopy;
use crate::atomic::Ordering;
use crate::shared::{load_words, store_words};
use crate::sync::Scope;
use crate::{raw, thread};

crate::shared! {
    /// (count, generation) per large tile of the block.
    static LT_BARRIER: [u32; 32];
    /// One 32-byte broadcast slot per large tile.
    static LT_BROADCAST: [[u32; 8]; 16];
    /// One 32-byte partial per warp.
    static LT_WARP: [[u32; 8]; 32];
    /// How many times each warp has written its slot of `LT_WARP` (see `SlotWrites`).
    static LT_WARP_WRITES: [u32; 32];
}

/// The large tiles' per-warp scratch, its writes counted (a collective inside a reduce's op is
/// reported, not left to overwrite the partials: see `SlotWrites`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn scratch() -> SlotWrites {
    SlotWrites { slots: LT_WARP.get().as_slice(), writes: LT_WARP_WRITES.get().as_slice() }
}

/// A tile of `N` ∈ {64, 128, 256, 512} threads: `N / 32` whole warps of its parent `P`.
#[derive(Debug)]
pub struct LargeTile<const N: u32, P = ThreadBlock> {
    parent: P,
}

impl<const N: u32, P: Copy> Clone for LargeTile<N, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<const N: u32, P: Copy> Copy for LargeTile<N, P> {}

impl<const N: u32, P: ThreadGroup<Size = u32> + Copy> LargeTile<N, P> {
    /// Sets up this tile's barrier; every thread of `parent` calls it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(crate) fn new(parent: P) -> Self {
        let tile = Self { parent };
        // Nobody may still be using an older large tile's scratch when it is reset.
        parent.sync();
        if tile.thread_rank() == 0 {
            let bar = LT_BARRIER.get();
            bar.store(2 * tile.index() as usize, 0);
            bar.store(2 * tile.index() as usize + 1, 0);
        }
        parent.sync();
        tile
    }

    /// This tile's index in the block: below 16 (1024 threads at most, N ≥ 64). The modulo
    /// says so to LLVM, so indexing the per-tile scratch needs no bounds check.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index(&self) -> u32 {
        thread::thread_rank_in_block() / N % 16
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn first_warp(&self) -> u32 {
        self.index() * (N / 32)
    }

    /// How many tiles of this size the parent holds.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn meta_group_size(&self) -> u32 {
        self.parent.num_threads().div_ceil(N)
    }

    /// This tile's index among them.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn meta_group_rank(&self) -> u32 {
        self.parent.thread_rank() / N
    }

    /// The tile's own element of a [`DisjointSlice<T, PerTile<N>>`](crate::slice::DisjointSlice)
    /// (its rank among all tiles of `N` in the grid), held by the tile's leader (rank 0) alone;
    /// `None` in the other members.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn leader_index(&self) -> Option<crate::thread::ThreadIndex<crate::thread::PerTile<N>>> {
        (self.thread_rank() == 0).then(|| crate::thread::ThreadIndex::from_rank(super::tile::global_tile_rank(N)))
    }

    /// The value of `v` held by the member of rank `src_rank` (every member passes the same
    /// `src_rank`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn shfl<T: DeviceCopy>(&self, v: T, src_rank: u32) -> T {
        let slot = LT_BROADCAST.get().as_slice().sub(self.index() as usize, 1).shared_addr();
        if self.thread_rank() == src_rank {
            // SAFETY: this tile's broadcast slot; one writer between two tile barriers.
            unsafe { store_words(slot, v) };
        }
        self.sync();
        // SAFETY: written above, before the barrier.
        let r = unsafe { load_words(slot, v) };
        self.sync();
        r
    }

    /// The leader's (rank 0's) `v`, in every member: `v` is `Some` in the leader (the others'
    /// are ignored). The word-wise [`shfl`](Self::shfl) for a value only the leader has
    /// (`invoke_one_broadcast`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(crate) fn broadcast_from_leader<T: DeviceCopy>(&self, v: Option<T>) -> T {
        let slot = LT_BROADCAST.get().as_slice().sub(self.index() as usize, 1).shared_addr();
        let n = size_of::<T>().div_ceil(4);
        if self.thread_rank() == 0 {
            let words = crate::copy::words_of(v);
            crate::host::on_device!("large-tile broadcast" => {
                let mut i = 0;
                while i < n {
                    // SAFETY: this tile's 32-byte broadcast slot; one writer between two tile
                    // barriers.
                    unsafe { raw::st_shared_b32(slot + 4 * i as u32, words[i]) };
                    i += 1;
                }
            } host => {
                // SAFETY: as above (the slot holds 8 words).
                unsafe { crate::shared::st_shared(slot, words) };
            });
        }
        self.sync();
        let words: [u32; 8] = crate::host::on_device!("large-tile broadcast" => {
            let mut words = [0u32; 8];
            let mut i = 0;
            while i < n {
                // SAFETY: the slot's words, written by the leader before the barrier.
                words[i] = unsafe { raw::ld_shared_b32(slot + 4 * i as u32) };
                i += 1;
            }
            words
        } host => {
            let _ = n;
            // SAFETY: as above.
            unsafe { crate::shared::ld_shared(slot) }
        });
        self.sync();
        // SAFETY: the leader stored the words of its `Some` value (`invoke_one_broadcast` passes
        // `Some` in rank 0); `from_words` reads only the first `size_of::<T>()` bytes.
        unsafe { crate::copy::from_words(&words) }
    }

    /// Whether `pred` holds for any member.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn any(&self, pred: bool) -> bool {
        self.vote(pred, false)
    }

    /// Whether `pred` holds for every member.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn all(&self, pred: bool) -> bool {
        self.vote(pred, true)
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn vote(&self, pred: bool, all: bool) -> bool {
        // SAFETY: a large tile consists of whole warps, all of whose lanes are here.
        let w = unsafe { if all { raw::vote_sync_all(u32::MAX, pred) } else { raw::vote_sync_any(u32::MAX, pred) } };
        let scratch = scratch();
        if raw::laneid() == 0 {
            // SAFETY: this warp's own slot, its lane 0, before the barrier.
            unsafe { scratch.write(thread::warp_id(), w as u32) };
        }
        self.sync();
        let (first, count) = (self.first_warp(), N / 32);
        // SAFETY: slots of this tile's warps (≤ 32 warps in a block, 32 slots), written before
        // the barrier.
        let r = unsafe {
            if all {
                fold_warp_slots(&scratch.slots, first, count, 0u32, super::bit_and)
            } else {
                fold_warp_slots(&scratch.slots, first, count, 0u32, super::bit_or)
            }
        };
        self.sync();
        r != 0
    }

    /// Combines every member's `v` with `op`; every member gets the result.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub(crate) fn reduce_impl<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        let part = tile_reduce(u32::MAX, 32, v, op);
        let scratch = scratch();
        if raw::laneid() == 0 {
            // SAFETY: this warp's own slot, its lane 0, before the barrier.
            unsafe { scratch.write(thread::warp_id(), part) };
        }
        self.sync();
        let seen = scratch.seen();
        // SAFETY: slots of this tile's warps (≤ 32 warps in a block, 32 slots), written before
        // the barrier.
        let acc = unsafe { fold_warp_slots(&scratch.slots, self.first_warp(), N / 32, v, op) };
        // The op may have run a large-tile collective of its own over these slots.
        scratch.check(seen);
        self.sync();
        acc
    }

    /// Inclusive (or, with `exclusive`, exclusive) scan over the tile's ranks.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub(crate) fn scan_impl<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op, exclusive: Option<T>) -> T {
        let lane = raw::laneid();
        let incl = scan_incl_warp(u32::MAX, 32, lane, v, op);
        let scratch = scratch();
        if lane == 31 {
            // SAFETY: this warp's own slot, one lane, before the barrier.
            unsafe { scratch.write(thread::warp_id(), incl) };
        }
        self.sync();
        let seen = scratch.seen();
        let mine = thread::warp_id() - self.first_warp();
        // SAFETY: totals of this tile's warps before this one (in range: ≤ 32 warps in a
        // block), written before the barrier.
        let prefix = unsafe { fold_warp_slots(&scratch.slots, self.first_warp(), mine, v, op) };
        scratch.check(seen);
        self.sync();
        // SAFETY: the full warp executes this shuffle.
        let exclusive =
            exclusive.map(|zero| (zero, unsafe { super::shfl::up(u32::MAX, incl, 1, raw::shfl_c(32, true)) }));
        finish_two_level_scan(op, mine == 0, lane == 0, prefix, incl, exclusive)
    }
}

impl<const N: u32, P: ThreadGroup<Size = u32> + Copy> Collective for LargeTile<N, P> {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn reduce_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        self.reduce_impl(v, op)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        self.scan_impl(v, op, None)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        self.scan_impl(v, op, Some(T::default()))
    }
}

impl<const N: u32, P: ThreadGroup<Size = u32> + Copy> ThreadGroup for LargeTile<N, P> {
    type Size = u32;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u32 {
        thread::thread_rank_in_block() % N
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u32 {
        N
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn sync(&self) {
        let tiles = thread::block_size() / N;
        // Ids 1–13: 14 is the block's split waits' (`cg::split::SPLIT_BARRIER_ID`).
        if tiles < super::split::SPLIT_BARRIER_ID {
            // SAFETY: every thread of this tile (whole warps, N of them) arrives at its own
            // barrier id; other tiles use other ids.
            unsafe { raw::barrier_sync_named(1 + self.index(), N) }
        } else {
            barrier(self.index(), N / 32)
        }
    }
}

/// The warp-leader barrier of large tile `tile` made of `warps` warps.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn barrier(tile: u32, warps: u32) {
    let tile = tile % 16; // tile indices are below 16 (see `LargeTile::index`)
    // SAFETY: a large tile is made of whole warps, all present.
    unsafe { raw::bar_warp_sync(u32::MAX) };
    if raw::laneid() == 0 {
        let bar = LT_BARRIER.get();
        let count = bar.atomic(2 * tile as usize);
        let generation = bar.atomic(2 * tile as usize + 1);
        let gen_now = generation.load_scoped(Ordering::Relaxed, Scope::Block);
        if count.fetch_add_scoped(1, Ordering::AcqRel, Scope::Block) == warps - 1 {
            count.store_scoped(0, Ordering::Relaxed, Scope::Block);
            generation.store_scoped(gen_now.wrapping_add(1), Ordering::Release, Scope::Block);
        } else {
            while generation.load_scoped(Ordering::Acquire, Scope::Block) == gen_now {
                // On the CPU device the other threads of the block run only when this one
                // yields.
                #[cfg(not(target_arch = "nvptx64"))]
                cohort_cpu::yield_now();
            }
        }
    }
    // SAFETY: as above.
    unsafe { raw::bar_warp_sync(u32::MAX) };
}

// The large tiles among the tile parents and `tiled_partition`'s sizes (`tile.rs` defines the
// traits and the warp tiles' impls; these are here so that `tile.rs` needs nothing of this file).
impl<const M: u32, Q: TileParent> sealed::Sealed for LargeTile<M, Q> {}

impl<const M: u32, Q: TileParent> TileParent for LargeTile<M, Q> {
    const STATIC_SIZE: u32 = M;
}

macro_rules! large_tile_sizes {
    ($($n:literal)*) => {$(
        impl<P: TileParent> TileSize<P> for Size<$n> {
            type Tile = LargeTile<$n, P>;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn make(parent: &P) -> Self::Tile {
                LargeTile::new(*parent)
            }
        }
    )*};
}
large_tile_sizes!(64 128 256 512);

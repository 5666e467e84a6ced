//! The multi-grid group: see [`MultiGridGroup`].

use super::{GridGroup, ThreadGroup};
use crate::raw;

/// Most grids (GPUs) of one multi-grid launch.
pub const MULTI_GRID_MAX: usize = 16;

/// The barrier block of one multi-grid launch, in host-mapped memory (shared by the device side
/// and the host runtime, which allocates and initializes it).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MultiGridWords {
    /// Non-zero: the host aborted the launch (a later grid failed to launch); waiting grids end.
    pub abort: u32,
    /// How long a grid waits for the others, in milliseconds (0: forever).
    pub timeout_ms: u32,
    /// Unused; keeps `arrived` 32-byte aligned.
    pub pad: [u32; 6],
    /// Grid `i > 0` stores 1 into `arrived[i]` when it reaches a sync; grid 0 stores 0 back
    /// to release it.
    pub arrived: [u32; MULTI_GRID_MAX],
}

impl MultiGridWords {
    /// A fresh block: nobody arrived, not aborted.
    #[must_use]
    pub const fn new(timeout_ms: u32) -> Self {
        Self { abort: 0, timeout_ms, pad: [0; 6], arrived: [0; MULTI_GRID_MAX] }
    }
}

/// `this_multi_grid()`: the grids of a multi-grid launch, one per GPU, each a cooperative grid
/// of the same configuration. Ranks and sizes count threads of every grid, in grid-rank order.
///
/// The multi-grid group: one cooperative grid per GPU, synchronized across GPUs.
///
/// CUDA 13 removed `this_multi_grid()` and `cudaLaunchCooperativeKernelMultiDevice`. Cohort
/// brings them back on the pattern NVIDIA's multi-device samples moved to: a cooperative launch
/// per GPU, and a barrier in host-mapped memory that every GPU reaches.
///
/// [`MultiGridGroup::sync`]: a grid sync on each GPU; then thread 0 of each grid exchanges an
/// arrival flag through the launch's barrier block in host-mapped memory — grid 0 waits until
/// every other grid has stored 1 into its flag (`st.release.sys`, read with `ld.acquire.sys`),
/// then stores 0 into each, which releases them (each grid stores the tag of the barrier it is
/// at, and grid 0 checks that all agree); then a grid sync again. Writes made before the
/// sync by any thread of any grid happen before reads made after it by any thread of any grid
/// (release/acquire at GPU scope inside a grid, at system scope between grids; causality order
/// is transitive in the PTX memory model).
///
/// A kernel gets a `MultiGridGroup` by declaring a parameter of that type in a
/// `#[kernel(multi_grid)]` kernel; the host launches such kernels only through
/// `cohort_runtime::MultiGrid`, which checks co-residency on each GPU, gives each grid its rank
/// and orders the launches so that every grid of the group runs at once.
///
/// Every wait polls a host-written abort word and a time limit (the launch's
/// `MultiGrid::timeout`, 10 s unless set): a grid that never arrives (it skipped the sync,
/// trapped, or its launch failed) ends the waiting grids with an `Err` naming the sync's call
/// site, never a hang.
#[derive(Clone, Copy, Debug)]
pub struct MultiGridGroup {
    grid: GridGroup,
    words: u64,
    rank: u32,
    grids: u32,
}

impl MultiGridGroup {
    /// The multi-grid group of the current launch.
    ///
    /// # Safety
    /// The kernel must have been launched cooperatively on every one of `grids` GPUs at once,
    /// all with the same configuration, this grid with rank `rank < grids`, and `words` must be
    /// the generic address of one [`MultiGridWords`] in memory every grid can reach, used by no
    /// other launch while this one runs and initialized with [`MultiGridWords::new`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub unsafe fn new_unchecked(words: u64, rank: u32, grids: u32) -> Self {
        // SAFETY: a multi-grid launch is a cooperative launch on each GPU (the contract).
        let grid = unsafe { GridGroup::new_unchecked() };
        Self { grid, words, rank, grids }
    }
    /// Always true: a `MultiGridGroup` exists only in multi-grid launches.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn is_valid(&self) -> bool {
        true
    }
    /// How many grids (GPUs) the launch has.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn num_grids(&self) -> u32 {
        self.grids
    }
    /// This grid's rank, `0..num_grids()` (the position of its GPU in the `MultiGrid`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn grid_rank(&self) -> u32 {
        self.rank
    }
    /// This GPU's grid, with grid sync.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn grid(&self) -> GridGroup {
        self.grid
    }
    /// Synchronizes every thread of every grid: see [`MultiGridGroup`] for the algorithm
    /// and the ordering it gives. Every thread of every grid must call it, at the same site,
    /// the same number of times; a grid that does not arrive within the launch's time limit
    /// ends the others with an `Err` naming this call site.
    #[inline(always)]
    #[track_caller]
    pub fn sync(&self) {
        let loc = core::panic::Location::caller();
        self.grid.sync();
        if self.grids > 1 && self.grid.thread_rank() == 0 {
            crate::host::on_device!("MultiGridGroup::sync" => {
                exchange(self.words, self.rank, self.grids, SYNC_TAG, "multi_grid.sync", loc)
            });
        }
        self.grid.sync();
    }
}

impl ThreadGroup for MultiGridGroup {
    type Size = u64;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u64 {
        self.rank as u64 * self.grid.num_threads() + self.grid.thread_rank()
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u64 {
        self.grids as u64 * self.grid.num_threads()
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        MultiGridGroup::sync(self)
    }
}

/// The arrival value of a plain [`MultiGridGroup::sync`]; a `MultiGridVec`'s phase changes
/// arrive with the vector's own tags (even: publish, odd: reclaim; at least 2).
const SYNC_TAG: u32 = 1;

/// How often a waiting grid looks at the abort word and the clock, in nanoseconds.
#[cfg(target_arch = "nvptx64")]
const CHECK_EVERY_NS: u64 = 20_000;

/// The cross-GPU half of [`MultiGridGroup::sync`], run by thread 0 of each grid.
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
fn exchange(
    words: u64,
    rank: u32,
    grids: u32,
    tag: u32,
    op: &'static str,
    loc: &'static core::panic::Location<'static>,
) {
    let words = words as *mut MultiGridWords;
    // SAFETY: `words` is the launch's barrier block (the constructor's contract); these are
    // field addresses, no reference is made.
    let (abort, timeout, arrived) = unsafe {
        (
            core::ptr::addr_of_mut!((*words).abort),
            core::ptr::addr_of_mut!((*words).timeout_ms),
            core::ptr::addr_of_mut!((*words).arrived).cast::<u32>(),
        )
    };
    // SAFETY (for every `ld_acquire_sys_u32` / `st_release_sys_u32` below): the words are in
    // the launch's barrier block, aligned, reachable from every GPU, and written only with
    // these system-scope operations (and by the host before the launch, or `abort` while it
    // runs, with a volatile store).
    //
    // The abort word and the time limit are read only after the first `CHECK_EVERY_NS` of
    // waiting: each read of host memory is a round trip over the bus, which a sync that
    // completes in a few microseconds should not pay.
    let start = raw::globaltimer();
    let mut next_check = start + CHECK_EVERY_NS;
    let mut limit_ms = None;
    let mut check = || {
        let now = raw::globaltimer();
        if now >= next_check {
            next_check = now + CHECK_EVERY_NS;
            // SAFETY: as above.
            if unsafe { raw::ld_acquire_sys_u32(abort) } != 0 {
                crate::panic::fail_check(crate::panic::CheckKind::MultiGrid, op, 0, grids, loc, None);
            }
            // SAFETY: as above.
            let limit = *limit_ms.get_or_insert_with(|| unsafe { raw::ld_acquire_sys_u32(timeout) });
            let waited_ms = now.wrapping_sub(start) / 1_000_000;
            if limit != 0 && waited_ms >= limit as u64 {
                crate::panic::fail_check(
                    crate::panic::CheckKind::MultiGrid,
                    op,
                    waited_ms.max(1) as u32,
                    grids,
                    loc,
                    None,
                );
            }
        }
    };
    if rank == 0 {
        for i in 1..grids as usize {
            let seen = loop {
                // SAFETY: as above; `i < grids <= MULTI_GRID_MAX`.
                let v = unsafe { raw::ld_acquire_sys_u32(arrived.add(i)) };
                if v != 0 {
                    break v;
                }
                check();
            };
            if seen != tag {
                // Grid `i` is at another barrier (another vector's phase, or a plain sync).
                crate::panic::fail_check(crate::panic::CheckKind::MultiGridPhase, op, i as u32, grids, loc, None);
            }
        }
        for i in 1..grids as usize {
            // SAFETY: as above.
            unsafe { raw::st_release_sys_u32(arrived.add(i), 0) };
        }
    } else {
        // SAFETY: as above; `rank < grids <= MULTI_GRID_MAX`.
        let mine = unsafe { arrived.add(rank as usize) };
        // SAFETY: as above.
        unsafe { raw::st_release_sys_u32(mine, tag) };
        // SAFETY: as above.
        while unsafe { raw::ld_acquire_sys_u32(mine) } != 0 {
            check();
        }
    }
}

/// A thread's own element of a [`MultiGridVec`]: a rank among the threads of every grid, of
/// which no other thread of the launch has the same ([`MultiGridGroup::thread_index`],
/// [`MultiGridGroup::stride`]). Dereferences to the element index.
///
/// Not `Send` or `Sync`: it proves that this thread owns the element.
#[derive(Debug)]
pub struct MultiGridIndex {
    rank: usize,
    _not_send: core::marker::PhantomData<*const ()>,
}

impl core::ops::Deref for MultiGridIndex {
    type Target = usize;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn deref(&self) -> &usize {
        &self.rank
    }
}

/// The elements `rank, rank + num_threads, …` below `len` of one thread: a grid-stride loop
/// over every grid ([`MultiGridGroup::stride`]).
///
/// Not `Send` or `Sync`, as the [`MultiGridIndex`]es it hands out.
#[derive(Debug)]
pub struct MultiGridStride {
    next: u64,
    step: u64,
    len: u64,
    _not_send: core::marker::PhantomData<*const ()>,
}

impl Iterator for MultiGridStride {
    type Item = MultiGridIndex;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn next(&mut self) -> Option<MultiGridIndex> {
        (self.next < self.len).then(|| {
            let rank = self.next as usize;
            self.next += self.step;
            MultiGridIndex { rank, _not_send: core::marker::PhantomData }
        })
    }
}

impl MultiGridGroup {
    /// This thread's own element index across every grid: [`thread_rank`](ThreadGroup::thread_rank).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn thread_index(&self) -> MultiGridIndex {
        MultiGridIndex { rank: ThreadGroup::thread_rank(self) as usize, _not_send: core::marker::PhantomData }
    }
    /// This thread's elements of a vector of `len`: a grid-stride loop over the threads of
    /// every grid (no two threads of the launch get the same element).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn stride(&self, len: usize) -> MultiGridStride {
        MultiGridStride {
            next: ThreadGroup::thread_rank(self),
            step: ThreadGroup::num_threads(self),
            len: len as u64,
            _not_send: core::marker::PhantomData,
        }
    }
}

/// A vector every grid of a multi-grid launch reads whole, kept as one replica per GPU: it
/// alternates between **write phases** (each thread writes only its own elements, by
/// [`MultiGridIndex`]; a write goes to every GPU's replica, through peer access) and **read
/// phases** (every thread reads every element of its own GPU's replica), separated by
/// multi-grid barriers — the exchange step of solvers split across GPUs, safely.
///
/// `publish` and `reclaim` synchronize every grid (as [`MultiGridGroup::sync`]) on this
/// vector's own barrier: a grid-wide barrier on a word of the vector, after checking that every
/// thread of the block is at the same vector's barrier, then the cross-GPU exchange with a tag
/// that names the vector and the phase change, which grid 0 checks. Grids or blocks that diverge
/// never pass a barrier together; they end the launch with an `Err` (or wait until the
/// launch's time limit) instead of reading what others still write.
///
/// As a `#[kernel(multi_grid)]` parameter it is passed from the host as
/// `&mut MultiGridVecBuffer<T>`, made for the launch's GPUs.
#[derive(Debug)]
pub struct MultiGridVec<'a, T> {
    table: *const u64,
    mine: NonNull<T>,
    len: usize,
    replicas: u32,
    barrier: *mut u32,
    tag: u32,
    _life: PhantomData<&'a mut [T]>,
}

use core::marker::PhantomData;
use core::ptr::NonNull;

impl<'a, T: Copy> MultiGridVec<'a, T> {
    /// Wraps the replicas of a vector.
    ///
    /// # Safety
    /// `table` must hold the device addresses (valid on this GPU: local or peer memory with
    /// peer access on) of `replicas` allocations of `len` elements, one per grid of the launch,
    /// in grid-rank order; `mine` must be this grid's entry; `barrier` a `u32` of this GPU's
    /// memory used only by this vector's barriers (0, or left by complete rounds); `tag_id`
    /// (at least 1, below 2³¹) must be the same in every grid and differ from every other
    /// vector's of the launch; nothing else may access them during the launch. Every thread
    /// of the block calls this at the same point, before any phase change and while no thread
    /// of the block is in one (at kernel entry, as `#[kernel]`'s parameter rebuild does): it
    /// makes the block's phase barrier ready, with a block barrier.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub unsafe fn from_raw_parts(
        table: *const u64,
        mine: *mut T,
        len: usize,
        replicas: u32,
        barrier: *mut u32,
        tag_id: u32,
    ) -> Self {
        super::grid::phase_init();
        // SAFETY: the caller's contract (a live allocation, so non-null; dangling if empty).
        let mine = unsafe { NonNull::new_unchecked(if len == 0 { NonNull::dangling().as_ptr() } else { mine }) };
        Self { table, mine, len, replicas, barrier, tag: tag_id.wrapping_mul(2), _life: PhantomData }
    }
    /// Elements.
    #[inline(always)]
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no elements.
    #[inline(always)]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Writes `value` to the element `index` owns, in every GPU's replica; `false` (nothing
    /// written) past the end.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn set(&mut self, index: &MultiGridIndex, value: T) -> bool {
        let i = index.rank;
        if i >= self.len {
            return false;
        }
        for r in 0..self.replicas as usize {
            // SAFETY: `table` has `replicas` entries, each the address of `len` elements
            // (the constructor's contract); `i < len`; `index` is this thread's own, so no
            // other thread writes the element, and no thread reads it in the write phase.
            unsafe {
                let replica = self.table.add(r).read() as *mut T;
                replica.add(i).write(value);
            }
        }
        true
    }
    /// Ends the write phase: a barrier of every grid on this vector, after which every thread
    /// may read every element. Every thread of every grid must call it.
    #[inline(always)]
    #[track_caller]
    pub fn publish(self, multi: &MultiGridGroup) -> MultiGridVecView<'a, T> {
        self.phase(multi, self.tag, "MultiGridVec::publish");
        MultiGridVecView { vec: self }
    }
    #[inline(always)]
    #[track_caller]
    fn phase(&self, multi: &MultiGridGroup, tag: u32, op: &'static str) {
        let loc = core::panic::Location::caller();
        let grid = multi.grid();
        grid.phase_barrier(self.barrier as u64, op);
        if multi.grids > 1 && grid.thread_rank() == 0 {
            crate::host::on_device!("MultiGridVec phase" => {
                exchange(multi.words, multi.rank, multi.grids, tag, op, loc)
            });
        }
        grid.phase_barrier(self.barrier as u64, op);
        let _ = loc;
    }
}

/// A [`MultiGridVec`] in a read phase: dereferences to `&[T]` (this GPU's replica);
/// [`reclaim`](Self::reclaim) ends the phase.
#[derive(Debug)]
pub struct MultiGridVecView<'a, T> {
    vec: MultiGridVec<'a, T>,
}

impl<'a, T: Copy> MultiGridVecView<'a, T> {
    /// Ends the read phase: a barrier of every grid on this vector, after which threads write
    /// their own elements again. Every thread of every grid must call it.
    #[inline(always)]
    #[track_caller]
    pub fn reclaim(self, multi: &MultiGridGroup) -> MultiGridVec<'a, T> {
        self.vec.phase(multi, self.vec.tag | 1, "MultiGridVec::reclaim");
        self.vec
    }
}

impl<T> core::ops::Deref for MultiGridVecView<'_, T> {
    type Target = [T];
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn deref(&self) -> &[T] {
        // SAFETY: this GPU's replica of `len` elements; in the read phase no thread of any
        // grid writes it (writes resume only after `reclaim`'s barrier).
        unsafe { core::slice::from_raw_parts(self.vec.mine.as_ptr(), self.vec.len) }
    }
}

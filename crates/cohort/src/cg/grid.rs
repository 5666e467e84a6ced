//! The grid group and grid-wide synchronization.
//!
//! Grid sync uses the barrier the driver provides to cooperative launches: the address of a
//! `{ u32 size; u32 barrier; }` workspace is in `%envreg2` (low half) and `%envreg1` (high
//! half), as CUDA packs them (`mov.b64 %r, {%envreg2, %envreg1}`). The algorithm is CUDA's (`cooperative_groups/details/sync.h`): a block barrier; one
//! thread per block adds 1 to the barrier word (block 0 adds `0x8000_0000 - (nblocks - 1)`, so
//! the last arrival flips bit 31) with a release atomic at GPU scope, then spins with acquire
//! loads until bit 31 differs from what it saw; a block barrier.
//!
//! That barrier counts arrivals: blocks at two different grid syncs pass it together. So the
//! grid syncs that protect data are on words of their own — a `GridVec`'s phase changes and
//! `reduce_grid` synchronize on the vector's word, which no other grid sync arrives at — and
//! in checked mode every block compares its grid sync's call with block 0's
//! ([`crate::check`]). A phase change's block part is a barrier that only phase changes arrive
//! on — hardware barrier 15 (exited threads let through, as at barrier 0), or in checked mode
//! an `mbarrier` in shared memory set up at kernel entry by the vector's rebuild, whose wait is
//! bounded — not block barrier 0, which a thread's own `sync_threads()` would complete.
//!
//! On driver 580 the workspace pointer is non-null for normal launches too, so the device
//! cannot tell whether grid sync is safe. Cohort makes it a type: only a
//! `#[kernel(cooperative)]` kernel receives a [`GridGroup`] (the host API launches those
//! kernels only cooperatively, after checking that the grid fits on the GPU at once);
//! elsewhere [`this_grid`] gives a [`Grid`], which has every member but `sync`.

use super::ThreadGroup;
use crate::raw;
use crate::thread::{self, Dim3};

/// The grid of a launch, without `sync` (`cg::grid_group` in a normal launch).
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    _private: (),
}

/// `cg::this_grid()` without grid sync; see [`GridGroup`] for the synchronizing handle.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn this_grid() -> Grid {
    Grid { _private: () }
}

impl Grid {
    /// Whether the driver set up a grid workspace for this launch. On driver 580 this is true
    /// for normal launches as well, so it does not prove the launch was cooperative.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn is_valid(&self) -> bool {
        workspace() != 0
    }
    /// This thread's rank in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn thread_rank(&self) -> u64 {
        thread::global_id()
    }
    /// This block's rank in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn block_rank(&self) -> u64 {
        thread::block_rank()
    }
    /// Threads in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn num_threads(&self) -> u64 {
        thread::grid_size()
    }
    /// Blocks in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn num_blocks(&self) -> u64 {
        thread::num_blocks()
    }
    /// `gridDim`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn dim_blocks(&self) -> Dim3 {
        thread::grid_dim()
    }
    /// `blockIdx`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn block_index(&self) -> Dim3 {
        thread::block_idx()
    }
    /// This block's cluster's index in the grid of clusters (`%clusterid`; `blockIdx` where
    /// every block is a cluster of one).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn cluster_index(&self) -> Dim3 {
        Dim3::new(raw::clusterid_x(), raw::clusterid_y(), raw::clusterid_z())
    }
    /// The grid's extent in clusters (`%nclusterid`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn dim_clusters(&self) -> Dim3 {
        Dim3::new(raw::nclusterid_x(), raw::nclusterid_y(), raw::nclusterid_z())
    }
    /// Clusters in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn num_clusters(&self) -> u64 {
        let d = self.dim_clusters();
        u64::from(d.x) * u64::from(d.y) * u64::from(d.z)
    }
    /// This block's cluster's rank in the grid (x fastest).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn cluster_rank(&self) -> u64 {
        let (i, d) = (self.cluster_index(), self.dim_clusters());
        u64::from(i.x) + u64::from(d.x) * (u64::from(i.y) + u64::from(d.y) * u64::from(i.z))
    }
}

/// The grid of a cooperative launch: [`Grid`]'s members plus [`sync`](ThreadGroup::sync).
///
/// A `#[kernel(cooperative)]` kernel gets one by declaring a parameter of this type; the host
/// passes nothing for it.
#[derive(Clone, Copy, Debug)]
pub struct GridGroup {
    grid: Grid,
}

impl GridGroup {
    /// The grid group of the current launch.
    ///
    /// # Safety
    /// The kernel must have been launched cooperatively (`cuLaunchCooperativeKernel`), so that
    /// every block of the grid is resident at once; otherwise `sync` can hang.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub unsafe fn new_unchecked() -> Self {
        Self { grid: this_grid() }
    }
    /// Always true: a `GridGroup` exists only in cooperative launches.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn is_valid(&self) -> bool {
        true
    }
    /// This block's rank in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn block_rank(&self) -> u64 {
        self.grid.block_rank()
    }
    /// Blocks in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn num_blocks(&self) -> u64 {
        self.grid.num_blocks()
    }
    /// `gridDim`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn dim_blocks(&self) -> Dim3 {
        self.grid.dim_blocks()
    }
    /// `blockIdx`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn block_index(&self) -> Dim3 {
        self.grid.block_index()
    }
    /// This block's cluster's index in the grid of clusters.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn cluster_index(&self) -> Dim3 {
        self.grid.cluster_index()
    }
    /// The grid's extent in clusters.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn dim_clusters(&self) -> Dim3 {
        self.grid.dim_clusters()
    }
    /// Clusters in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn num_clusters(&self) -> u64 {
        self.grid.num_clusters()
    }
    /// This block's cluster's rank in the grid.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn cluster_rank(&self) -> u64 {
        self.grid.cluster_rank()
    }
    /// The same grid without `sync`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn as_grid(&self) -> Grid {
        self.grid
    }
}

impl ThreadGroup for GridGroup {
    type Size = u64;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u64 {
        self.grid.thread_rank()
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u64 {
        self.grid.num_threads()
    }
    /// `grid.sync()`: every thread of the grid waits for all others. In checked mode
    /// ([`crate::check`]) the block's threads must be at this call, every block must be at
    /// this call too (not at another grid sync), and a block that never arrives (it skipped the
    /// sync or exited) ends the kernel with an `Err` after 5 s instead of a hang.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        crate::check::split_state::grid_sync_allowed("grid.sync");
        let call = crate::check::block("grid.sync");
        crate::host::on_device!("GridGroup::sync" => {
            grid_barrier(workspace() + 4, "grid.sync", call)
        } host => {
            let _ = call;
            raw::mark_instruction();
            cohort_cpu::grid_sync()
        })
    }
}

/// The grid workspace address: `%envreg2` is the low half and `%envreg1` the high half
/// (CUDA packs them as `mov.b64 %r, {%envreg2, %envreg1}`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn workspace() -> u64 {
    (raw::envreg1() as u64) << 32 | raw::envreg2() as u64
}

/// CUDA's grid barrier on the `u32` at `barrier` (generic address of global memory): a block
/// barrier; thread 0 arrives and waits for the other blocks ([`grid_arrive_wait`]); a block
/// barrier. `call` is the call's number in checked mode (0 otherwise).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[cfg_attr(cohort_checked, track_caller)]
fn grid_barrier(barrier: u64, op: &'static str, call: u32) {
    crate::sync::barrier_unchecked();
    if raw::tid_x() + raw::tid_y() + raw::tid_z() == 0 {
        grid_arrive_wait(barrier, op, call);
    }
    crate::sync::barrier_unchecked();
}

/// Thread 0's part of CUDA's grid barrier on the `u32` at `barrier`: add 1 (block 0 adds
/// `0x8000_0000 - (nblocks - 1)`, so the last arrival flips bit 31) with release at GPU scope,
/// then spin with acquire loads until bit 31 differs from what it saw. Complete rounds leave
/// the low 31 bits as they found them (0), so a word can serve any number of rounds and
/// launches.
///
/// In checked mode the wait is bounded (5 s), and the blocks compare their calls: block 0
/// publishes `call` for this generation before it arrives, the others compare theirs once the
/// barrier completes ([`crate::check`]'s `grid_sites`): blocks at different grid syncs (which
/// pass each other's barrier) end the kernel with an `Err` naming both.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[cfg_attr(cohort_checked, track_caller)]
fn grid_arrive_wait(barrier: u64, op: &'static str, call: u32) {
    let old = grid_arrive(barrier, op, call);
    #[cfg(cohort_checked)]
    let loc = core::panic::Location::caller();
    #[cfg(not(cohort_checked))]
    let loc = ();
    grid_wait(barrier, old, op, call, loc);
}

/// Where checked mode's reports of a grid barrier point: the call (nothing outside checked mode).
#[cfg(all(target_arch = "nvptx64", cohort_checked))]
pub(super) type Site = &'static core::panic::Location<'static>;
/// Where checked mode's reports of a grid barrier point: the call (nothing outside checked mode).
#[cfg(not(all(target_arch = "nvptx64", cohort_checked)))]
pub(super) type Site = ();

/// The arrival half of [`grid_arrive_wait`] (thread 0 of the block): in checked mode block 0
/// publishes `call`; the block's arrival on the word; returns the word as it was before.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[cfg_attr(cohort_checked, track_caller)]
fn grid_arrive(barrier: u64, op: &'static str, call: u32) -> u32 {
    let _ = (op, call);
    let expected = raw::nctaid_x() * raw::nctaid_y() * raw::nctaid_z();
    let gpu_master = raw::ctaid_x() + raw::ctaid_y() + raw::ctaid_z() == 0;
    #[cfg(cohort_checked)]
    if gpu_master {
        // SAFETY: the barrier word is valid global memory for the whole launch (the driver's
        // workspace, by the `GridGroup` constructor's contract, or a `GridVec`'s own word), and
        // every access to it is atomic.
        let now = unsafe { raw::ld_relaxed_gpu_u32(barrier) };
        crate::check::grid_sites::publish(barrier, now >> 31, call, core::panic::Location::caller());
    }
    let nb: u32 = if gpu_master { 0x8000_0000u32.wrapping_sub(expected - 1) } else { 1 };
    // SAFETY: as above.
    unsafe { raw::atom_add_release_gpu_u32(barrier, nb) }
}

/// The waiting half of [`grid_arrive_wait`] (thread 0 of the block, after [`grid_arrive`]
/// returned `old`): spins until the generation flips; in checked mode bounded, then compares
/// this block's `call` with block 0's (reports point at `loc`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn grid_wait(barrier: u64, old: u32, op: &'static str, call: u32, loc: Site) {
    let _ = (op, call, loc);
    #[cfg(cohort_checked)]
    let (start, expected) = (raw::globaltimer(), raw::nctaid_x() * raw::nctaid_y() * raw::nctaid_z());
    loop {
        #[cfg(cohort_checked)]
        crate::check::grid_waited(start, expected, op, loc);
        // SAFETY: as in `grid_arrive`.
        let current = unsafe { raw::ld_acquire_gpu_u32(barrier) };
        if (old ^ current) & 0x8000_0000 != 0 {
            break;
        }
    }
    #[cfg(cohort_checked)]
    if raw::ctaid_x() + raw::ctaid_y() + raw::ctaid_z() != 0
        && let Some((first, first_loc)) = crate::check::grid_sites::read(barrier, old >> 31)
        && first != call
    {
        use crate::panic::CheckKind;
        let same =
            first_loc.line() == loc.line() && first_loc.column() == loc.column() && first_loc.file() == loc.file();
        let kind = if same { CheckKind::GridSiteSameSite } else { CheckKind::GridSite };
        crate::panic::fail_check(kind, op, crate::thread::block_rank() as u32, 0, loc, Some(first_loc));
    }
}

/// The arrival of the grid's split barrier ([`GridGroup::barrier_arrive`]): a block barrier,
/// then thread 0 arrives on the driver's barrier word; returns thread 0's `old` (0 elsewhere).
/// On the CPU device thread 0 arrives on the launch's split counter (`cohort_cpu`).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(super) fn grid_split_arrive(op: &'static str, call: u32) -> u64 {
    // Every thread's accesses before its arrival are ordered before thread 0's release.
    crate::sync::barrier_unchecked();
    crate::host::on_device!("GridGroup::barrier_arrive" => {
        if raw::tid_x() + raw::tid_y() + raw::tid_z() == 0 {
            u64::from(grid_arrive(workspace() + 4, op, call))
        } else {
            0
        }
    } host => {
        let _ = (op, call);
        if crate::thread::thread_rank_in_block() == 0 {
            raw::mark_instruction();
            cohort_cpu::grid_split_arrive()
        } else {
            0
        }
    })
}

/// The wait of the grid's split barrier ([`GridArrival::wait`](super::GridArrival::wait)):
/// thread 0 waits for the generation `old` arrived in to complete, then a block barrier.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(super) fn grid_split_wait(old: u64, op: &'static str, call: u32, loc: Site) {
    crate::host::on_device!("GridArrival::wait" => {
        if raw::tid_x() + raw::tid_y() + raw::tid_z() == 0 {
            grid_wait(workspace() + 4, old as u32, op, call, loc);
        }
    } host => {
        let _ = (op, call, loc);
        if crate::thread::thread_rank_in_block() == 0 {
            cohort_cpu::grid_split_wait(old);
        }
    });
    // Thread 0's acquire is ordered before every thread's accesses after the wait.
    crate::sync::barrier_unchecked();
}

crate::shared! {
    /// The barrier word a block's thread 0 is about to use, for the phase check.
    static PHASE_WORD: [u64; 1];
}

#[cfg(all(target_arch = "nvptx64", cohort_checked))]
crate::shared! {
    /// The block's phase barrier in checked mode, which only phase changes arrive on: an
    /// `mbarrier` (sm_80+), or a count and a generation (older GPUs).
    static PHASE_BAR: [u32; 2];
}

/// The hardware barrier id of phase changes outside checked mode: no other code of the library
/// uses it (large tiles use ids 1–13, the block's split waits 14), and safe code cannot name a barrier id.
#[cfg(all(target_arch = "nvptx64", not(cohort_checked)))]
const PHASE_BARRIER_ID: u32 = 15;

/// Makes the block's phase barrier ready: every thread of the block calls it, at kernel entry
/// (the rebuild of a `GridVec` or `MultiGridVec` parameter), before any phase change.
///
/// In checked mode the phase barrier is an `mbarrier` (so that a wait can end in a report):
/// thread 0 initializes it for the block's threads, then a block barrier orders that before any
/// use — no user code has run yet, so no thread can stand in for another at it. Outside checked
/// mode it is hardware barrier [`PHASE_BARRIER_ID`], which needs nothing.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn phase_init() {
    #[cfg(all(target_arch = "nvptx64", cohort_checked))]
    {
        if crate::thread::thread_rank_in_block() == 0 {
            let bar = PHASE_BAR.get();
            #[cfg(target_feature = "sm_80")]
            // SAFETY: the block's own 8-byte aligned `PHASE_BAR` (shared statics are 16-byte
            // aligned); no thread uses it until the barrier below (this runs before any phase
            // change of the kernel).
            unsafe {
                raw::mbarrier_init(bar.as_slice().shared_addr(), crate::thread::block_size())
            };
            #[cfg(not(target_feature = "sm_80"))]
            {
                bar.store(0, 0);
                bar.store(1, 0);
            }
        }
        crate::sync::barrier_unchecked();
    }
}

/// Every thread of the block arrives at the block's phase barrier and waits until every
/// thread of the block has: a barrier that only phase changes arrive on, so no thread's own
/// `sync_threads()` can make the others go on (the hardware's block barrier 0 counts arrivals,
/// from any code). In checked mode the wait ends the kernel with an `Err` after 5 s.
///
/// Outside checked mode it is hardware barrier [`PHASE_BARRIER_ID`] for every thread of the
/// block: user code cannot arrive at it, and, like barrier 0, it lets through the threads of a
/// block whose only missing threads have exited (an exited thread writes nothing more). A
/// thread waiting at another barrier keeps the block waiting (a hang, never a race). In checked
/// mode it is the block's `mbarrier`, whose wait is bounded: a thread elsewhere, or one that
/// exited before the phase change, is then an `Err`.
#[cfg(all(target_arch = "nvptx64", not(cohort_checked)))]
#[inline(always)]
fn block_arrive_wait(_op: &'static str) {
    // SAFETY: every non-exited thread of the block arrives here from a phase change (or the
    // block waits, which is what the phase check needs); only phase changes use this id.
    unsafe { raw::barrier_sync_all(PHASE_BARRIER_ID) }
}

/// The checked-mode form of the block's phase barrier (see above).
#[cfg(all(target_arch = "nvptx64", cohort_checked))]
#[inline(always)]
#[track_caller]
fn block_arrive_wait(op: &'static str) {
    #[cfg(cohort_checked)]
    let (start, loc) = (raw::globaltimer(), core::panic::Location::caller());
    let bar = PHASE_BAR.get();
    #[cfg(target_feature = "sm_80")]
    {
        let addr = bar.as_slice().shared_addr();
        // SAFETY: `phase_init` made `PHASE_BAR` an mbarrier of the block's threads at kernel
        // entry; each thread arrives once per phase (it waits for the phase before it can
        // arrive again).
        let state = unsafe { raw::mbarrier_arrive(addr) };
        // SAFETY: as above; `state` comes from this mbarrier.
        while !unsafe { raw::mbarrier_wait_done(addr, state) } {
            #[cfg(cohort_checked)]
            crate::check::phase_waited(start, op, loc);
        }
    }
    #[cfg(not(target_feature = "sm_80"))]
    {
        use crate::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
        // A sense-reversing counter: the generation cannot move before this thread arrives.
        let (count, generation) = (bar.atomic(0), bar.atomic(1));
        let g = generation.load(Acquire);
        if count.fetch_add(1, AcqRel) == crate::thread::block_size() - 1 {
            count.store(0, Relaxed);
            generation.store(g.wrapping_add(1), Release);
        } else {
            while generation.load(Acquire) == g {
                raw::nanosleep(20);
                #[cfg(cohort_checked)]
                crate::check::phase_waited(start, op, loc);
            }
        }
    }
}

/// On the CPU device: the engine's grid barrier (every thread of every block), met only by
/// blocks at the same call (the engine compares call sites and instructions across blocks).
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
#[track_caller]
fn grid_barrier(_barrier: u64, _op: &'static str, _call: u32) {
    raw::mark_instruction();
    cohort_cpu::grid_sync()
}

impl GridGroup {
    /// A grid barrier on the `u32` word at `barrier` (a `GridVec`'s own), after checking that
    /// every thread of the block is at a barrier on the same word (always, not only in checked
    /// mode: a thread past a barrier of another vector could write what this one publishes).
    ///
    /// On a GPU: thread 0 notes the word; every thread arrives at the block's phase barrier
    /// (which only phase changes arrive on: hardware barrier 15, or in checked mode an
    /// `mbarrier`) and waits for the whole block; `barrier.red.or` of "my word differs" (only
    /// phase changes can be at block barrier 0 now: every live thread of the block is in one);
    /// thread 0 arrives at the grid barrier on the word and waits for the other blocks; a block
    /// barrier. A thread elsewhere (at its own `sync_threads()`) keeps the block waiting — and in
    /// checked mode ends the kernel with an `Err` — instead of letting the others read what it
    /// may still write. A thread that exited before the phase change is let through outside
    /// checked mode (it writes nothing more) and reported in checked mode (every thread must
    /// take part, as on the CPU device).
    ///
    /// On the CPU device the engine's barriers meet only threads at the same call, and its
    /// grid barrier only blocks at the same call: the block check below and the grid barrier.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn phase_barrier(&self, barrier: u64, op: &'static str) {
        let call = crate::check::block(op);
        let rank = crate::thread::thread_rank_in_block();
        let cell = PHASE_WORD.get();
        #[cfg(target_arch = "nvptx64")]
        {
            if rank == 0 {
                cell.store(0, barrier);
            }
            // Orders thread 0's store before every thread's load (a block barrier; in checked
            // mode the mbarrier's arrive releases and its wait acquires, at block scope).
            block_arrive_wait(op);
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            crate::sync::barrier_unchecked();
            if rank == 0 {
                cell.store(0, barrier);
            }
            crate::sync::barrier_unchecked();
        }
        let differs = cell.load(0) != barrier;
        // SAFETY: every thread of the block reaches this barrier: on a GPU every thread of the
        // block is in a phase change (the phase barrier above completed), and phase changes
        // reach no other block barrier in between; on the CPU device the engine meets only
        // threads at this call.
        if unsafe { raw::barrier_sync_or(differs) } {
            if differs {
                crate::panic::fail_check(
                    crate::panic::CheckKind::Block,
                    op,
                    rank,
                    0,
                    core::panic::Location::caller(),
                    None,
                );
            }
            // The thread that differs traps the launch; wait for it.
            loop {
                raw::nanosleep(1000);
            }
        }
        #[cfg(target_arch = "nvptx64")]
        {
            if rank == 0 {
                grid_arrive_wait(barrier, op, call);
            }
            crate::sync::barrier_unchecked();
        }
        #[cfg(not(target_arch = "nvptx64"))]
        grid_barrier(barrier, op, call);
    }
}

//! The grid group and grid-wide synchronization.
//!
//! Grid sync uses the barrier the driver provides to cooperative launches: the address of a
//! `{ u32 size; u32 barrier; }` workspace is in `%envreg2` (low half) and `%envreg1` (high
//! half), as CUDA packs them (`mov.b64 %r, {%envreg2, %envreg1}`). The algorithm is CUDA's (`cooperative_groups/details/sync.h`): a block barrier; one
//! thread per block adds 1 to the barrier word (block 0 adds `0x8000_0000 - (nblocks - 1)`, so
//! the last arrival flips bit 31) with a release atomic at GPU scope, then spins with acquire
//! loads until bit 31 differs from what it saw; a block barrier.
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
    /// ([`crate::check`]) the block's threads must be at this call, and a block that never
    /// arrives (it skipped the sync or exited) ends the kernel with an `Err` after 5 s instead
    /// of a hang.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        crate::check::block("grid.sync");
        crate::host::on_device!("GridGroup::sync" => {
            grid_sync(workspace())
        } host => {
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

/// CUDA's `sync_grids`, on the driver's barrier word at `workspace + 4`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn grid_sync(workspace: u64) {
    grid_barrier(workspace + 4, "grid.sync")
}

/// CUDA's grid barrier on the `u32` at `barrier` (generic address of global memory): a block
/// barrier; one thread per block adds 1 (block 0 adds `0x8000_0000 - (nblocks - 1)`, so the last
/// arrival flips bit 31) with release at GPU scope, then spins with acquire loads until bit 31
/// differs from what it saw; a block barrier. Complete rounds leave the low 31 bits as they
/// found them (0), so a word can serve any number of rounds and launches.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn grid_barrier(barrier: u64, op: &'static str) {
    use core::arch::asm;
    let _ = op;
    crate::sync::barrier_unchecked();
    if raw::tid_x() + raw::tid_y() + raw::tid_z() == 0 {
        let expected = raw::nctaid_x() * raw::nctaid_y() * raw::nctaid_z();
        let gpu_master = raw::ctaid_x() + raw::ctaid_y() + raw::ctaid_z() == 0;
        let nb: u32 = if gpu_master { 0x8000_0000u32.wrapping_sub(expected - 1) } else { 1 };
        let old: u32;
        // SAFETY: the driver's grid workspace is valid global memory for the whole cooperative
        // launch (guaranteed by the `GridGroup` constructor's contract).
        unsafe {
            asm!("atom.add.release.gpu.u32 {0}, [{1}], {2};", out(reg32) old, in(reg64) barrier, in(reg32) nb, options(nostack));
        }
        #[cfg(cohort_checked)]
        let (start, loc) = (raw::globaltimer(), core::panic::Location::caller());
        loop {
            #[cfg(cohort_checked)]
            crate::check::grid_waited(start, expected, op, loc);
            let current: u32;
            // SAFETY: as above.
            unsafe {
                asm!("ld.acquire.gpu.u32 {0}, [{1}];", out(reg32) current, in(reg64) barrier, options(nostack));
            }
            if (old ^ current) & 0x8000_0000 != 0 {
                break;
            }
        }
    }
    crate::sync::barrier_unchecked();
}

/// On the CPU device: the engine's grid barrier (every thread of every block).
#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
fn grid_barrier(_barrier: u64, _op: &'static str) {
    cohort_cpu::grid_sync()
}

crate::shared! {
    /// The barrier word a block's thread 0 is about to use, for the `GridVec` phase check.
    static PHASE_WORD: [u64; 1];
}

impl GridGroup {
    /// A grid barrier on the `u32` word at `barrier` (a `GridVec`'s own), after checking that
    /// every thread of the block is at a barrier on the same word (always, not only in checked
    /// mode: a thread past a barrier of another vector could write what this one publishes).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn phase_barrier(&self, barrier: u64, op: &'static str) {
        crate::check::block(op);
        // The same code on both targets: the block check on shared memory and barriers, then
        // the grid barrier (on the host, the CPU engine's).
        {
            let cell = PHASE_WORD.get();
            crate::sync::barrier_unchecked();
            let rank = crate::thread::thread_rank_in_block();
            if rank == 0 {
                cell.store(0, barrier);
            }
            crate::sync::barrier_unchecked();
            let differs = cell.load(0) != barrier;
            // SAFETY: every thread of the block reaches this barrier (the two above show it).
            if unsafe { raw::barrier_sync_or(differs) } {
                if differs {
                    crate::panic::fail_check(
                        crate::panic::CheckKind::Block,
                        op,
                        rank,
                        0,
                        core::panic::Location::caller(),
                    );
                }
                // The thread that differs traps the launch; wait for it.
                loop {
                    raw::nanosleep(1000);
                }
            }
            grid_barrier(barrier, op)
        }
    }
}

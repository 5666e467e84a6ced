//! Split-phase barriers of the block and of the grid (CUDA 12.2's
//! `auto token = g.barrier_arrive(); …; g.barrier_wait(std::move(token));`).
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `block.barrier_arrive()` → `thread_block::arrival_token` | [`ThreadBlock::barrier_arrive`] → [`BlockArrival`] |
//! | `block.barrier_wait(std::move(token))` | [`BlockArrival::wait`] or [`ThreadBlock::barrier_wait`] |
//! | `grid.barrier_arrive()` → `grid_group::arrival_token` | [`GridGroup::barrier_arrive`] → [`GridArrival`] (a `#[kernel(cooperative)]` kernel's `GridGroup`) |
//! | `grid.barrier_wait(std::move(token))` | [`GridArrival::wait`] or [`GridGroup::barrier_wait`] |
//! | `cluster.barrier_arrive()` / `barrier_wait` | [`ClusterGroup::barrier_arrive`](super::ClusterGroup::barrier_arrive) (see [`cluster`](super::cluster)) |
//!
//! A thread arrives, does work that needs nothing from the others, then waits; after the wait
//! every thread's memory accesses before *its arrival* happen before this thread's accesses
//! after the wait (CUDA's guarantee; see each group below for what the implementation gives
//! beyond it). As for every collective, every thread of the group arrives and waits once per
//! phase (the [convergence rule](crate::cg#convergence)).
//!
//! # The block's: a barrier of its own
//!
//! The arrival does nothing on a GPU; the wait is `barrier.sync 14` — a hardware barrier id that
//! only split waits use (id 0 is every `sync_threads()` and block collective, 1–13 large tiles,
//! 15 `GridVec` phase changes; safe code cannot name an id). The block barrier counts arrivals
//! from anywhere, so a split wait on barrier 0 would be completed by another thread's
//! `sync_threads()` inside the window; on id 14 nothing but split waits can meet it. Any
//! number of arrival sites pair correctly (divergent branches may each arrive): when every
//! thread of the block is at a split wait, each has arrived in this phase. A thread that
//! exited is let through, as at barrier 0.
//!
//! Why not the `mbarrier` a true split barrier is made of: it must be initialised by one
//! thread and that ordered before every use by a block barrier — at kernel entry, in every
//! kernel, for the few that use it. What the hardware barrier gives up: a thread's wait ends
//! when every thread has reached its *wait* (not only its arrival), so the slowest thread's
//! independent work delays the others; it costs one `barrier.sync`, as `sync_threads()`. For a
//! full arrive/wait barrier with phases, transaction counts and copies completing on it, use
//! [`AsyncBarrier`](super::AsyncBarrier).
//!
//! # The grid's: CUDA's grid barrier, split
//!
//! As `grid.sync()` (see [`GridGroup::sync`](super::GridGroup)): the arrival is a block barrier, then thread 0
//! adds the block's arrival to the grid's barrier word (release at GPU scope); the wait is thread
//! 0's spin until the word's generation flips (acquire), then a block barrier. Work between
//! the two overlaps the other blocks' arrivals. Both block barriers are the block's
//! `barrier.sync 0` (as in `grid.sync()`), so the arrival and the wait are block collectives
//! too: every thread of the block reaches each at the same call (checked in checked mode).
//!
//! # Tokens
//!
//! [`BlockArrival`] and [`GridArrival`] are not `Clone`/`Copy` and not `Send`, `#[must_use]`, and
//! waiting consumes them: an arrival is waited once, by the thread that made it (compile
//! errors; `tests/ui`). What types cannot see — a token forgotten (`mem::forget` is safe) then a
//! second arrival, a `sync` of the group between arrival and wait, a token moved into a
//! closure that is dropped — is checked at run time in checked mode on a GPU and always on the
//! CPU device, from a pending bit per thread and group (set by the arrival, cleared by the wait;
//! in shared memory, cleared by the kernel's entry), each an `Err` naming the call
//! ([`CheckKind::SplitMisuse`](crate::panic::CheckKind::SplitMisuse)):
//!
//! | misuse | checked mode / CPU device | release build on a GPU |
//! |---|---|---|
//! | a second arrival before the wait (a token forgotten) | `Err` naming the arrival | the block: harmless (its waits still pair); the grid: the block counts twice and blocks may pass each other's barrier (wrong values, never memory unsafety: no library data rides on this barrier) |
//! | `sync_threads()`, a block `reduce`/scan between a block arrival and its wait | the CPU device: `Err` naming the barrier (CUDA leaves it undefined); a GPU, checked or not: works (no pairing: another barrier id; a check in every checked `sync_threads()` spilled the tightest kernels) | works (as in checked mode) |
//! | `grid.sync()` between a grid arrival and its wait | `Err` naming it | the block counts twice (as above) |
//! | the token dropped unwaited (an early `return`, `?`, a closure never called) | `Err` naming the arrival | the drop waits |
//! | the token forgotten and the thread leaves the kernel | `Err` at the kernel's exit | the block: the others' waits let an exited thread through; the grid: the arrival counted, never waited |
//! | threads of the block at different wait calls, or one at its wait while another is at a `sync_threads()` | `Err` naming both (the block check of [`crate::check`]) | a hang, as any divergent barrier |
//!
//! On the CPU device the block's wait meets only threads at the same call (a thread elsewhere
//! is a deadlock error naming both), and the grid's arrival counts blocks as a GPU does: thread
//! 0 of each block adds to the launch's counter and its wait spins until every block arrived,
//! while the block's other threads and the other blocks run (see `cohort_cpu`'s split module).

use core::marker::PhantomData;
#[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
use core::panic::Location;

use super::{GridGroup, ThreadBlock};
use crate::raw;

/// The hardware barrier id of the block's split waits: used by nothing else (see the module
/// docs; large tiles use 1–13, `GridVec` phase changes 15).
pub(crate) const SPLIT_BARRIER_ID: u32 = 14;

use crate::check::split_state::{BLOCK, GRID, arrive, set_pending};
#[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
use crate::check::split_state::{misuse, pending};

/// Kernel entry (every `#[kernel]` entry calls it first, every thread): in checked mode on a
/// GPU, clears this thread's pending bits (shared memory starts with anything in it).
#[doc(hidden)]
#[inline(always)]
pub fn __thread_enter() {
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    {
        set_pending(BLOCK, false);
        set_pending(GRID, false);
    }
}

/// Kernel exit (every `#[kernel]` entry calls it after the body returned, every thread that
/// returns): in checked mode and on the CPU device, a report when the thread leaves with an
/// arrival it never waited for (a forgotten token).
#[doc(hidden)]
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn __thread_exit() {
    // Two tests, not a loop over the groups: a loop over an array stays an indexed local array
    // in some builds (`tests/ptx`: no kernel has one).
    #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
    {
        if pending(BLOCK) {
            misuse("kernel exit", 4, BLOCK, Location::caller());
        }
        if pending(GRID) {
            misuse("kernel exit", 4, GRID, Location::caller());
        }
    }
}

impl ThreadBlock {
    /// `block.barrier_arrive()`: this thread arrives at the block's split barrier and goes on;
    /// the returned token's [`wait`](BlockArrival::wait) (or [`barrier_wait`](Self::barrier_wait))
    /// waits until every thread of the block has (see [`cg::split`](crate::cg::split) for the
    /// barrier and for what may happen in between). Every thread of the block must arrive, and
    /// wait, once per phase; arrivals may be at different calls, waits must be at one.
    ///
    /// # Panics
    /// In checked mode and on the CPU device: if this thread has an arrival it has not waited
    /// for (a forgotten token).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn barrier_arrive(&self) -> BlockArrival {
        arrive(BLOCK, "thread_block.barrier_arrive");
        BlockArrival {
            #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
            site: Location::caller(),
            _not_send: PhantomData,
        }
    }

    /// `block.barrier_wait(std::move(token))`: the same as `token.wait()`.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn barrier_wait(&self, token: BlockArrival) {
        token.wait();
    }
}

/// A split arrival at the block's barrier ([`ThreadBlock::barrier_arrive`]), waited for by
/// [`wait`](Self::wait) (or [`ThreadBlock::barrier_wait`]). Not `Clone`/`Copy` (one wait per
/// arrival) and not `Send` (it is this thread's arrival). Dropped without a wait: an `Err` in
/// checked mode and on the CPU device, a wait in release builds on a GPU.
#[must_use = "a split arrival must be waited for (`token.wait()`)"]
#[derive(Debug)]
pub struct BlockArrival {
    #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
    site: &'static Location<'static>,
    _not_send: PhantomData<*const ()>,
}

impl BlockArrival {
    /// Waits until every thread of the block has arrived (on a GPU: until every thread of the
    /// block is at its wait, `barrier.sync 14`); then every thread's accesses before its arrival
    /// happen before this thread's accesses after the wait. Every thread of the block must wait
    /// here, at this one call (a block collective).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn wait(self) {
        core::mem::forget(self);
        block_wait();
    }
}

/// The block's split wait, for a token consumed by `wait` or dropped (release builds).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn block_wait() {
    set_pending(BLOCK, false);
    // Checked mode: every thread of the block at this wait (not at a `sync_threads()` of its own,
    // not at another wait call): the threads meet at barrier 0 for the check, then at id 14.
    crate::check::block("thread_block.barrier_wait");
    crate::host::on_device!("BlockArrival::wait" => {
        // SAFETY: only split waits use this id (`SPLIT_BARRIER_ID`), with no thread count: the
        // barrier completes when every non-exited thread of the block is at a split wait, each
        // having arrived (a wait consumes its arrival's token). A thread elsewhere keeps the
        // block waiting: a hang (reported in checked mode by the check above), never a race.
        unsafe { raw::barrier_sync_all(SPLIT_BARRIER_ID) }
    } host => {
        raw::mark_instruction();
        cohort_cpu::block_split_wait()
    })
}

impl Drop for BlockArrival {
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn drop(&mut self) {
        // On the CPU device a kernel's panic unwinds through the body: the launch is over.
        #[cfg(not(target_arch = "nvptx64"))]
        if std::thread::panicking() {
            return;
        }
        #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
        misuse("thread_block.barrier_arrive", 3, BLOCK, self.site);
        #[cfg(all(not(cohort_checked), target_arch = "nvptx64"))]
        block_wait();
    }
}

impl GridGroup {
    /// `grid.barrier_arrive()`: this block arrives at the grid's barrier (a block barrier, then
    /// thread 0 adds the block's arrival) and goes on; the returned token's
    /// [`wait`](GridArrival::wait) (or [`barrier_wait`](Self::barrier_wait)) waits until every
    /// block of the grid has arrived. Work in between overlaps the other blocks' arrival. Every
    /// thread of every block must arrive and wait once per phase, each at one call per block,
    /// and every block at the same arrival call (checked in checked mode, as `grid.sync()`).
    ///
    /// # Panics
    /// In checked mode and on the CPU device: if this thread has a grid arrival it has not
    /// waited for (a forgotten token).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn barrier_arrive(&self) -> GridArrival {
        arrive(GRID, "grid.barrier_arrive");
        let call = crate::check::block("grid.barrier_arrive");
        let old = super::grid::grid_split_arrive("grid.barrier_arrive", call);
        GridArrival {
            old,
            #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
            call,
            #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
            site: Location::caller(),
            _not_send: PhantomData,
        }
    }

    /// `grid.barrier_wait(std::move(token))`: the same as `token.wait()`.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn barrier_wait(&self, token: GridArrival) {
        token.wait();
    }
}

/// A split arrival at the grid's barrier ([`GridGroup::barrier_arrive`]), waited for by
/// [`wait`](Self::wait) (or [`GridGroup::barrier_wait`]). Not `Clone`/`Copy`, not `Send`;
/// dropped without a wait: an `Err` in checked mode and on the CPU device, a wait in release
/// builds on a GPU.
#[must_use = "a split arrival must be waited for (`token.wait()`)"]
#[derive(Debug)]
pub struct GridArrival {
    /// Thread 0's view of the barrier word before its arrival (0 in the other threads); on the
    /// CPU device, the generation it arrived in.
    old: u64,
    /// The arrival's call number (checked mode), for the comparison across blocks.
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    call: u32,
    #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
    site: &'static Location<'static>,
    _not_send: PhantomData<*const ()>,
}

impl GridArrival {
    /// Waits until every block of the grid has arrived: then every thread's accesses before its
    /// arrival happen before this thread's accesses after the wait. Every thread of the block
    /// must wait here, at this one call (a block collective).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn wait(self) {
        let this = core::mem::ManuallyDrop::new(self);
        grid_wait(&this);
    }
}

/// The grid's split wait, for a token consumed by `wait` or dropped (release builds).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn grid_wait(t: &GridArrival) {
    set_pending(GRID, false);
    let _ = crate::check::block("grid.barrier_wait");
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    let (call, site) = (t.call, t.site);
    #[cfg(not(all(cohort_checked, target_arch = "nvptx64")))]
    let (call, site) = (0u32, ());
    super::grid::grid_split_wait(t.old, "grid.barrier_wait", call, site);
}

impl Drop for GridArrival {
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn drop(&mut self) {
        #[cfg(not(target_arch = "nvptx64"))]
        if std::thread::panicking() {
            return;
        }
        #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
        misuse("grid.barrier_arrive", 3, GRID, self.site);
        #[cfg(all(not(cohort_checked), target_arch = "nvptx64"))]
        grid_wait(self);
    }
}

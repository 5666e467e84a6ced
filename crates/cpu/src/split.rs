//! Split-phase barriers of the block and of the grid (CUDA 12.2's `barrier_arrive(g)` → token,
//! `barrier_wait(g, token)`) on the CPU device: what the device library's
//! `ThreadBlock::barrier_arrive` and `GridGroup::barrier_arrive` need beyond the block barrier.
//!
//! - Each CUDA thread's *pending* state: whether it has a block or a grid arrival it has not
//!   waited for ([`split_pending`], [`set_split_pending`]). The device library keeps the same
//!   state in shared memory in checked mode on a GPU; here it is in the thread's context, which
//!   the scheduler makes fresh for every thread.
//! - The block's split wait ([`block_split_wait`]): a barrier of every thread of the block at
//!   one call (as `sync_threads`, so threads at another barrier — a `sync_threads()` inside
//!   the window — are a deadlock the scheduler names), on barrier id 14, the one a GPU's split
//!   wait uses.
//! - The grid's arrival counter ([`grid_split_arrive`], [`grid_split_wait`]): each block's
//!   thread 0 adds its block's arrival and later spins (with [`yield_now`](crate::yield_now))
//!   until every block of the launch has arrived — the algorithm of a GPU's grid barrier, split
//!   in two, so that blocks run between their arrival and their wait, and a block may pass its
//!   wait while another is still between its own. Blocks whose thread 0 arrives at different
//!   calls (which on a GPU would pass each other's barrier) end the launch with
//!   [`CpuError::GridSyncMismatch`](crate::CpuError::GridSyncMismatch); a block that never
//!   arrives leaves the others spinning until [`LaunchSpec::spin_limit`](crate::LaunchSpec::spin_limit).

use core::panic::Location;
use std::sync::Mutex;

use crate::Dim3;
use crate::ctx::{CTX, current, misuse, raise, take_token};
use crate::error::CpuError;

/// The pending bit of a block split arrival.
pub const SPLIT_BLOCK: u8 = 1;
/// The pending bit of a grid split arrival.
pub const SPLIT_GRID: u8 = 2;

/// Whether the running thread has a split arrival of `group` ([`SPLIT_BLOCK`] or
/// [`SPLIT_GRID`]) it has not waited for.
#[must_use]
#[inline]
#[track_caller]
pub fn split_pending(group: u8) -> bool {
    current().split & group != 0
}

/// Sets or clears the running thread's pending bit of `group`.
#[inline]
#[track_caller]
pub fn set_split_pending(group: u8, on: bool) {
    current();
    CTX.with(|x| {
        let mut c = x.get();
        if on {
            c.split |= group;
        } else {
            c.split &= !group;
        }
        x.set(c);
    });
}

/// `barrier.sync 14` for the block's split wait: every thread of the block at this call.
#[track_caller]
pub fn block_split_wait() {
    crate::ops::bar_at("thread_block.barrier_wait", 14);
}

/// The grid split barrier of a cooperative launch.
pub(crate) struct GridSplit {
    total: u64,
    m: Mutex<SplitState>,
}

#[derive(Default)]
struct SplitState {
    arrived: u64,
    generation: u64,
    /// The first block to arrive in this generation, its call site and instruction.
    first: Option<(Dim3, &'static Location<'static>, u64)>,
}

impl GridSplit {
    /// The grid split barrier of a launch of `blocks` blocks.
    pub(crate) fn new(blocks: u64) -> Self {
        Self { total: blocks, m: Mutex::new(SplitState::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SplitState> {
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The running launch's grid split barrier; a misuse outside a cooperative launch.
#[track_caller]
fn grid(op: &'static str) -> &'static GridSplit {
    let c = current();
    if !c.cooperative || c.grid_split.is_null() {
        misuse(op, Location::caller(), "a grid barrier in a launch that is not cooperative".into());
    }
    // SAFETY: the engine points `grid_split` at the launch's barrier, which lives (on the
    // launching thread's stack) until every thread of the launch has finished; the reference does
    // not escape this device operation.
    unsafe { &*c.grid_split }
}

/// Thread 0 of a block arrives at the grid's split barrier for its block (after the block's
/// barrier); returns the generation to wait for with [`grid_split_wait`]. A block arriving at
/// another call than the generation's first block ends the launch.
#[must_use]
#[track_caller]
pub fn grid_split_arrive() -> u64 {
    let site = Location::caller();
    let token = take_token();
    let g = grid("grid.barrier_arrive");
    let bid = current().bid;
    let mut s = g.lock();
    let generation = s.generation;
    if let Some((first_block, first, first_token)) = s.first
        && (first != site || first_token != token)
    {
        drop(s);
        raise(CpuError::GridSyncMismatch {
            first_block,
            first: ("grid.barrier_arrive", first, first_token),
            second_block: bid,
            second: ("grid.barrier_arrive", site, token),
        });
    }
    s.first.get_or_insert((bid, site, token));
    s.arrived += 1;
    if s.arrived == g.total {
        s.arrived = 0;
        s.first = None;
        s.generation += 1;
    }
    generation
}

/// Thread 0 of a block waits until every block has arrived in `generation` (from
/// [`grid_split_arrive`]), letting the other threads (and blocks) run meanwhile.
#[track_caller]
pub fn grid_split_wait(generation: u64) {
    let g = grid("grid.barrier_wait");
    while g.lock().generation == generation {
        crate::ops::yield_now();
    }
}

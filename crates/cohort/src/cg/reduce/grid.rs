//! Grid-scope reduction in a cooperative kernel: block reductions, one partial per block in
//! a [`GridVec`], a phase barrier on the vector's own word.

use super::ReduceOp;
use super::block::block_reduce;
use crate::DeviceCopy;
use crate::cg::{GridGroup, GridVec};
use crate::thread;

/// Scratch memory of [`reduce_grid`]: a [`GridVec`] of at least two elements per block
/// (the host passes `&mut GridVecBuffer<T>`), owned by the reductions.
///
/// Each reduction writes one partial per block into one half, synchronizes the grid on **the
/// vector's own barrier word** (a phase barrier, as `GridVec::publish`: only threads in this
/// scratch's reductions can complete it, not a `grid.sync()` elsewhere nor a thread's own
/// `sync_threads()`), then every block reads the half's partials.
///
/// Why two halves make one barrier per reduction enough: reduction *k* writes and then reads
/// half *k mod 2*, with the barrier between. Reduction *k + 2* writes the same half again, but
/// every thread reaches it only after passing the barrier of reduction *k + 1*, which no
/// thread passes before every thread of the grid has finished reduction *k* (its reads
/// included): each barrier on the word is some reduction's of this scratch, and a block's
/// *k*-th barrier on it is its *k*-th reduction.
#[derive(Debug)]
pub struct GridScratch<'a, T> {
    vec: GridVec<'a, T>,
    half: usize,
    phase: bool,
}

impl<'a, T: DeviceCopy> GridScratch<'a, T> {
    /// Takes `vec` (at least `2 * grid.num_blocks()` elements) for grid reductions. Starts with
    /// a barrier on the vector's word, so that the kernel's earlier writes to it have finished.
    /// Every thread of the grid must call it.
    ///
    /// # Panics
    /// If `vec` is shorter than two elements per block.
    #[inline(always)]
    #[track_caller]
    pub fn new(grid: &GridGroup, vec: GridVec<'a, T>) -> Self {
        let nblocks = grid.num_blocks();
        assert!(vec.len() as u64 >= 2 * nblocks, "GridScratch: needs two elements per block of the grid");
        grid.phase_barrier(vec.barrier_word(), "GridScratch::new");
        Self { vec, half: nblocks as usize, phase: false }
    }

    /// Gives the vector back (in its write phase), after a barrier on its word (so that every
    /// reduction's reads have finished). Every thread of the grid must call it.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn into_inner(self, grid: &GridGroup) -> GridVec<'a, T> {
        grid.phase_barrier(self.vec.barrier_word(), "GridScratch::into_inner");
        self.vec
    }
}

/// Grid-wide reduction in a cooperative kernel: every thread of the grid gets the
/// combination of every thread's `value`. Every thread of the grid must call it, at the same
/// call (in checked mode blocks at different calls end the kernel with an `Err`; without it,
/// they still never read a partial that is not written: see [`GridScratch`]).
///
/// Cost: one phase barrier on the scratch's own word and two block reductions
/// ([`GridScratch`] says why one barrier is enough).
#[inline(always)]
#[track_caller]
pub fn reduce_grid<T: DeviceCopy, Op: ReduceOp<T>>(
    grid: &GridGroup,
    value: T,
    op: Op,
    scratch: &mut GridScratch<'_, T>,
) -> T {
    let nblocks = grid.num_blocks();
    let base_index = if scratch.phase { scratch.half } else { 0 };
    scratch.phase = !scratch.phase;
    let part = block_reduce(value, op, thread::block_size());
    let block = grid.block_rank() as usize;
    let elems = scratch.vec.elements();
    if thread::thread_rank_in_block() == 0 {
        // SAFETY: in bounds (`GridScratch::new` checked 2 * nblocks); only thread 0 of block
        // `b` writes element `base + b` in this reduction, and no thread reads this half
        // until the barrier below, nor still reads it from two reductions ago (see
        // `GridScratch`).
        unsafe { elems.add(base_index + block).write(part) };
    }
    grid.phase_barrier(scratch.vec.barrier_word(), "reduce_grid");
    // SAFETY: `base_index .. base_index + nblocks` is in bounds (checked at `new`).
    let base = unsafe { (elems as *const T).add(base_index) };
    let (tid, bdim) = (thread::thread_rank_in_block(), thread::block_size());
    let active = (nblocks.min(bdim as u64)) as u32;
    let mut acc = value;
    if tid < active {
        // SAFETY: element `tid` < `nblocks` of this half was written before the barrier, by a
        // thread of this reduction (every block wrote its own).
        acc = unsafe { base.add(tid as usize).read() };
        let mut i = (tid + bdim) as u64;
        while i < nblocks {
            // SAFETY: as above.
            acc = op.combine(acc, unsafe { base.add(i as usize).read() });
            i += bdim as u64;
        }
    }
    block_reduce(acc, op, active)
}

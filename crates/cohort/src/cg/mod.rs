//! Cooperative Groups (Programming Guide, CUDA 11, §"Cooperative Groups").
//!
//! Groups are small `Copy` handles sharing one trait, [`ThreadGroup`]: `thread_rank`,
//! `num_threads`, `sync`. The implicit groups are [`this_thread_block`] and the grid
//! ([`GridGroup`], which a `#[kernel(cooperative)]` kernel receives as a parameter).

mod grid;

pub use grid::{Grid, GridGroup, this_grid};

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
    fn sync(&self);

    /// Legacy name of [`num_threads`](Self::num_threads).
    fn size(&self) -> Self::Size {
        self.num_threads()
    }
}

/// `cg::sync(group)`.
#[inline(always)]
pub fn sync<G: ThreadGroup>(group: &G) {
    group.sync()
}

/// `cg::thread_rank(group)`.
#[inline(always)]
pub fn thread_rank<G: ThreadGroup>(group: &G) -> G::Size {
    group.thread_rank()
}

/// `cg::num_threads(group)`.
#[inline(always)]
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
#[must_use]
pub fn this_thread_block() -> ThreadBlock {
    ThreadBlock { _private: () }
}

impl ThreadBlock {
    /// `blockIdx`: this block's index in the grid.
    #[inline(always)]
    #[must_use]
    pub fn group_index(&self) -> Dim3 {
        thread::block_idx()
    }

    /// `threadIdx`: this thread's index in the block.
    #[inline(always)]
    #[must_use]
    pub fn thread_index(&self) -> Dim3 {
        thread::thread_idx()
    }

    /// `blockDim`: the block's extent.
    #[inline(always)]
    #[must_use]
    pub fn dim_threads(&self) -> Dim3 {
        thread::block_dim()
    }

    /// Legacy name of [`dim_threads`](Self::dim_threads).
    #[inline(always)]
    #[must_use]
    pub fn group_dim(&self) -> Dim3 {
        self.dim_threads()
    }
}

impl ThreadGroup for ThreadBlock {
    type Size = u32;
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        thread::thread_rank_in_block()
    }
    #[inline(always)]
    fn num_threads(&self) -> u32 {
        thread::block_size()
    }
    #[inline(always)]
    fn sync(&self) {
        crate::sync::sync_threads()
    }
}

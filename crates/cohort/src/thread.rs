//! Thread, block and grid indexing (Programming Guide §"Thread Hierarchy").
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `threadIdx` / `blockIdx` / `blockDim` / `gridDim` | [`thread_idx`], [`block_idx`], [`block_dim`], [`grid_dim`] (each a [`Dim3`]) |
//! | `threadIdx.x` … | [`thread_idx_x`] … (and `_y`, `_z`) |
//! | `warpSize` | [`WARP_SIZE`], [`warp_size`] |
//! | `__lane_id()` / `threadIdx.x % 32` | [`lane_id`] |
//! | `threadIdx.x / 32` (flattened) | [`warp_id`] |
//! | `blockIdx.x * blockDim.x + threadIdx.x` | [`global_id`] (fully flattened, 64-bit) or [`index_1d`] (an owning [`ThreadIndex`]) |
//! | grid-stride loop | [`grid_stride`] |
//!
//! Linear ranks flatten x fastest, then y, then z, as CUDA's cooperative groups do.

use core::marker::PhantomData;
use core::ops::Deref;

use crate::raw;

/// A three-dimensional extent or index (CUDA's `dim3` / `uint3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Dim3 {
    /// x, the fastest-varying dimension.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z, the slowest-varying dimension.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    #[must_use]
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }
    /// `x * y * z`, as a `u64` (a grid's thread count can exceed `u32`).
    #[must_use]
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
    /// The linear rank of index `self` within extent `dim`: `x + dim.x * (y + dim.y * z)`.
    #[must_use]
    pub const fn linear_in(self, dim: Dim3) -> u64 {
        self.x as u64 + dim.x as u64 * (self.y as u64 + dim.y as u64 * self.z as u64)
    }
}

/// Threads in a warp: 32 on every NVIDIA GPU so far (`warpSize`).
pub const WARP_SIZE: u32 = 32;

/// Threads in a warp (`warpSize`).
#[inline(always)]
#[must_use]
pub const fn warp_size() -> u32 {
    WARP_SIZE
}

/// `threadIdx.x`.
#[doc(alias = "threadIdx")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn thread_idx_x() -> u32 {
    raw::tid_x()
}
/// `threadIdx.y`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn thread_idx_y() -> u32 {
    raw::tid_y()
}
/// `threadIdx.z`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn thread_idx_z() -> u32 {
    raw::tid_z()
}
/// `blockIdx.x`.
#[doc(alias = "blockIdx")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_idx_x() -> u32 {
    raw::ctaid_x()
}
/// `blockIdx.y`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_idx_y() -> u32 {
    raw::ctaid_y()
}
/// `blockIdx.z`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_idx_z() -> u32 {
    raw::ctaid_z()
}
/// `blockDim.x`.
#[doc(alias = "blockDim")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_dim_x() -> u32 {
    raw::ntid_x()
}
/// `blockDim.y`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_dim_y() -> u32 {
    raw::ntid_y()
}
/// `blockDim.z`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_dim_z() -> u32 {
    raw::ntid_z()
}
/// `gridDim.x`.
#[doc(alias = "gridDim")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn grid_dim_x() -> u32 {
    raw::nctaid_x()
}
/// `gridDim.y`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn grid_dim_y() -> u32 {
    raw::nctaid_y()
}
/// `gridDim.z`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn grid_dim_z() -> u32 {
    raw::nctaid_z()
}

/// `threadIdx`: this thread's index in its block.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn thread_idx() -> Dim3 {
    Dim3::new(raw::tid_x(), raw::tid_y(), raw::tid_z())
}
/// `blockIdx`: this block's index in the grid.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_idx() -> Dim3 {
    Dim3::new(raw::ctaid_x(), raw::ctaid_y(), raw::ctaid_z())
}
/// `blockDim`: the block's extent in threads.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_dim() -> Dim3 {
    Dim3::new(raw::ntid_x(), raw::ntid_y(), raw::ntid_z())
}
/// `gridDim`: the grid's extent in blocks.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn grid_dim() -> Dim3 {
    Dim3::new(raw::nctaid_x(), raw::nctaid_y(), raw::nctaid_z())
}

/// Threads per block (`blockDim.x * blockDim.y * blockDim.z`, at most 1024).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_size() -> u32 {
    raw::ntid_x() * raw::ntid_y() * raw::ntid_z()
}

/// This thread's rank in its block, x fastest (`thread_block::thread_rank()`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn thread_rank_in_block() -> u32 {
    raw::tid_x() + raw::ntid_x() * (raw::tid_y() + raw::ntid_y() * raw::tid_z())
}

/// This block's rank in the grid, x fastest (`grid_group::block_rank()`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_rank() -> u64 {
    block_idx().linear_in(grid_dim())
}

/// Blocks in the grid (`grid_group::num_blocks()`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn num_blocks() -> u64 {
    grid_dim().volume()
}

/// Threads in the grid (`grid_group::num_threads()`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn grid_size() -> u64 {
    num_blocks() * block_size() as u64
}

/// This thread's rank in the grid: `block_rank() * block_size() + thread_rank_in_block()`
/// (`grid_group::thread_rank()`). For a 1-D launch it is
/// `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn global_id() -> u64 {
    // On the CPU device: the engine keeps the rank (one context read instead of seven).
    #[cfg(not(target_arch = "nvptx64"))]
    return cohort_cpu::global_rank();
    // All four are >= 1, so their bitwise OR is 1 exactly when each is: one test instead of
    // four, on values the SASS reads from the constant bank (uniform registers, no multiply).
    if raw::nctaid_y() | raw::nctaid_z() | raw::ntid_y() | raw::ntid_z() == 1 {
        // The common 1-D case: one wide multiply-add, as CUDA C++ compiles it.
        raw::ctaid_x() as u64 * raw::ntid_x() as u64 + raw::tid_x() as u64
    } else {
        global_id_nd()
    }
}

/// [`global_id`] of a 2-D or 3-D launch, out of line so the 1-D path stays short.
#[cold]
#[inline(never)]
fn global_id_nd() -> u64 {
    block_rank() * block_size() as u64 + thread_rank_in_block() as u64
}

/// This thread's lane in its warp, 0..32.
#[doc(alias = "__lane_id")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn lane_id() -> u32 {
    raw::laneid()
}

/// This thread's warp in its block: `thread_rank_in_block() / 32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn warp_id() -> u32 {
    thread_rank_in_block() / WARP_SIZE
}

/// Warps in this block, counting a partial last warp.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn warps_per_block() -> u32 {
    block_size().div_ceil(WARP_SIZE)
}

// ---------------------------------------------------------------------------------------------
// Indices a thread owns: the elements of a `DisjointSlice` (and `GridVec`, `DisjointMatrix`) it
// may write.

/// Which partition of the launch an index counts in: the kind of a [`ThreadIndex`] and of the
/// [`DisjointSlice`](crate::slice::DisjointSlice) it indexes. Indices of one kind are unique
/// across the launch; indices of different kinds are not (thread 5's own index and block 5's
/// leader index are both 5), so a slice accepts the indices of its own kind only.
pub trait IndexKind: sealed::Sealed + 'static {}

/// One element per thread: [`index_1d`], [`grid_stride`]. The default kind.
#[derive(Debug)]
pub enum PerThread {}
/// One element per block, written by its leader (thread 0):
/// [`ThreadBlock::leader_index`](crate::cg::ThreadBlock::leader_index).
#[derive(Debug)]
pub enum PerBlock {}
/// One element per tile of `N` threads, written by its leader (rank 0):
/// `tile.leader_index()` (tiles of 1–512 threads).
#[derive(Debug)]
pub enum PerTile<const N: u32> {}

/// `N` consecutive elements per thread of a block's tile: a tile of `block_size() * N`
/// elements where thread `t` owns elements `t * N .. t * N + N` (CUB's *blocked* arrangement).
/// Written only by the block stores of [`block`](crate::block), through a
/// [`Tile`](crate::block::Tile) that one block alone holds; no [`ThreadIndex`] of this kind
/// exists.
#[derive(Debug)]
pub enum Blocked<const N: usize> {}
/// `N` elements per thread of a block's tile, a block apart: thread `t` owns elements
/// `t + k * block_size()` for `k < N` (CUB's *striped* arrangement). As [`Blocked`], written
/// only by the block stores.
#[derive(Debug)]
pub enum Striped<const N: usize> {}
/// Elements at positions a device-wide scan hands out (a select's or partition's outputs):
/// written only by the kernel bodies of [`algorithms`](crate::algorithms), under their
/// `unsafe` contracts (the scan's state cleared before the launch), which make the positions
/// disjoint. No [`ThreadIndex`] of this kind exists and no safe store writes it.
#[derive(Debug)]
pub enum Scattered {}

impl IndexKind for PerThread {}
impl IndexKind for PerBlock {}
impl<const N: u32> IndexKind for PerTile<N> {}
impl<const N: usize> IndexKind for Blocked<N> {}
impl<const N: usize> IndexKind for Striped<N> {}
impl IndexKind for Scattered {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::PerThread {}
    impl Sealed for super::PerBlock {}
    impl<const N: u32> Sealed for super::PerTile<N> {}
    impl<const N: usize> Sealed for super::Blocked<N> {}
    impl<const N: usize> Sealed for super::Striped<N> {}
    impl Sealed for super::Scattered {}
}

/// An index into a [`DisjointSlice`](crate::slice::DisjointSlice) that belongs to the calling
/// thread alone, among the indices of kind `K`.
///
/// It dereferences to `usize`, so it also indexes ordinary slices: `a[*i]`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex<K: IndexKind = PerThread> {
    rank: usize,
    // Not Send/Sync, not Copy: it must not reach another thread.
    _not_send: PhantomData<(*const (), K)>,
}

impl<K: IndexKind> ThreadIndex<K> {
    /// Only the functions that hand out indices of kind `K` (thread positions, block and tile
    /// leaders) may call this.
    #[inline(always)]
    pub(crate) const fn from_rank(rank: usize) -> Self {
        Self { rank, _not_send: PhantomData }
    }

    /// The index as a plain number.
    #[inline(always)]
    #[must_use]
    pub const fn get(&self) -> usize {
        self.rank
    }

    /// Makes an index from any number.
    ///
    /// # Safety
    /// No other thread of the launch may use an index with the same value on the same
    /// [`DisjointSlice`](crate::slice::DisjointSlice) while this one is in use (otherwise two
    /// threads write one element).
    #[inline(always)]
    #[must_use]
    pub const unsafe fn new_unchecked(rank: usize) -> Self {
        Self::from_rank(rank)
    }
}

impl<K: IndexKind> Deref for ThreadIndex<K> {
    type Target = usize;
    #[inline(always)]
    fn deref(&self) -> &usize {
        &self.rank
    }
}

/// This thread's global index as an owning [`ThreadIndex`]: the one element of a
/// [`DisjointSlice`](crate::slice::DisjointSlice) this thread may write.
///
/// The index is the thread's full linear rank in the grid (see [`global_id`]), so it is
/// unique to this thread whatever the launch's shape.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn index_1d() -> ThreadIndex {
    ThreadIndex::from_rank(global_id() as usize)
}

/// A grid-stride loop over `0..n`: yields `global_id()`, `global_id() + grid_size()`, …
/// as owning [`ThreadIndex`]es. Different threads never yield the same index.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn grid_stride(n: usize) -> GridStride {
    GridStride { next: global_id() as usize, step: grid_size() as usize, end: n, _not_send: core::marker::PhantomData }
}

/// Iterator returned by [`grid_stride`].
///
/// Not `Send` or `Sync`, as the [`ThreadIndex`]es it hands out: it is this thread's share of
/// the elements. (On the CPU device a kernel may use `std`: sent to another kernel thread
/// through a `static Mutex`, it would let two threads own one element.)
#[derive(Debug)]
pub struct GridStride {
    next: usize,
    step: usize,
    end: usize,
    _not_send: core::marker::PhantomData<*const ()>,
}

impl Iterator for GridStride {
    type Item = ThreadIndex;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn next(&mut self) -> Option<ThreadIndex> {
        if self.next < self.end {
            let i = self.next;
            self.next += self.step;
            Some(ThreadIndex::from_rank(i))
        } else {
            None
        }
    }
}

impl From<u32> for Dim3 {
    /// `(x, 1, 1)`.
    fn from(x: u32) -> Self {
        Self::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    /// `(x, y, 1)`.
    fn from((x, y): (u32, u32)) -> Self {
        Self::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self::new(x, y, z)
    }
}

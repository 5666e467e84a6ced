//! Thread-block tiles: `tiled_partition::<N>(&parent)` for N in {1, 2, 4, 8, 16, 32} (one
//! warp or less) and {64, 128, 256, 512} (several warps, CUDA's "large tiles"), plus the
//! dynamic `tiled_partition(&parent, n)`.
//!
//! `tiled_partition` is [`TileParent::tiled_partition`], re-exported as a function: a trait
//! method can take the size as its only generic argument while the parent, its `Self`, is
//! inferred from the argument (`tiled_partition::<32>(&block)`, as CUDA writes it). A free
//! function would need the parent as a second generic argument, which Rust does not let a
//! caller leave out.

use super::shfl::{self, MatchValue};
use super::{ThreadBlock, ThreadGroup, WarpGroup};
use crate::DeviceCopy;
use crate::raw;

/// A tile of `N` consecutive threads (`N` ≤ 32: within one warp) of its parent `P` (a block
/// or a larger tile). Every member is a warp-level instruction on the tile's lanes. Tiles of
/// 64 to 512 threads are [`LargeTile`](super::LargeTile)s.
#[derive(Debug)]
pub struct ThreadBlockTile<const N: u32, P = ThreadBlock> {
    parent: P,
}

impl<const N: u32, P: Copy> Clone for ThreadBlockTile<N, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<const N: u32, P: Copy> Copy for ThreadBlockTile<N, P> {}

/// Groups a tile can be cut from: the [`ThreadBlock`] and the static tiles
/// ([`ThreadBlockTile`], [`LargeTile`](super::LargeTile)). Sealed: a tile's lane masks assume
/// that its parent's threads are consecutive ranks of the block, which only Cohort's groups
/// guarantee.
pub trait TileParent: ThreadGroup<Size = u32> + Copy + sealed::Sealed {
    /// The parent's size when it is known at compile time (tiles); 0 for the block.
    const STATIC_SIZE: u32;

    /// `cg::tiled_partition<N>(parent)`: the tile of `N` threads of this group that this
    /// thread belongs to. Re-exported as `cg::tiled_partition`,
    /// so CUDA's spelling works with only the size written and the parent inferred:
    /// `cg::tiled_partition::<32>(&block)` (or `block.tiled_partition::<32>()`).
    ///
    /// `N` must be 1, 2, 4, 8, 16 or 32 (giving a [`ThreadBlockTile`]), or 64, 128, 256 or 512
    /// (giving a [`LargeTile`](super::LargeTile)); when the parent is a tile, `N` must divide
    /// its size. Both are checked at compile time. Every thread of the parent must call this (large tiles set up
    /// their shared scratch with two parent barriers), and the parent's size must be a
    /// multiple of `N` (checked at run time: a panic names the call site).
    ///
    /// ```
    /// use cohort::prelude::*;
    ///
    /// #[kernel]
    /// pub fn warp_sums(data: &[u32], sums: &[AtomicU32]) {
    ///     let block = cg::this_thread_block();
    ///     let warp = cg::tiled_partition::<32>(&block); // a `ThreadBlockTile<32>`
    ///     let quad = cg::tiled_partition::<4>(&warp); // a `ThreadBlockTile<4, ThreadBlockTile<32>>`
    ///     let i = thread::index_1d();
    ///     let v = data.get(*i).copied().unwrap_or(0);
    ///     let s = cg::reduce(&warp, v, cg::plus);
    ///     if warp.thread_rank() == 0 && quad.meta_group_rank() == 0 {
    ///         sums[0].fetch_add(s, Ordering::Relaxed);
    ///     }
    /// }
    /// ```
    ///
    /// A size that is no tile size is a compile error:
    ///
    /// ```compile_fail,E0277
    /// use cohort::prelude::*;
    ///
    /// #[kernel]
    /// pub fn bad() {
    ///     let _ = cg::tiled_partition::<3>(&cg::this_thread_block()); // there are no tiles of this size
    /// }
    /// ```
    #[inline(always)]
    #[track_caller]
    fn tiled_partition<const N: u32>(&self) -> <Size<N> as TileSize<Self>>::Tile
    where
        Size<N>: TileSize<Self>,
    {
        const {
            assert!(
                Self::STATIC_SIZE == 0 || (N <= Self::STATIC_SIZE && Self::STATIC_SIZE % N == 0),
                "a tile must divide its parent tile"
            );
        };
        assert!(
            self.num_threads().is_multiple_of(N),
            "tiled_partition: the parent's size is not a multiple of the tile size"
        );
        <Size<N> as TileSize<Self>>::make(self)
    }
}

pub(super) mod sealed {
    /// Only Cohort's groups are tile parents (see [`super::TileParent`]); `large.rs` seals
    /// `LargeTile`.
    pub trait Sealed {}
    impl Sealed for crate::cg::ThreadBlock {}
    impl<const M: u32, Q: super::TileParent> Sealed for super::ThreadBlockTile<M, Q> {}
}

impl TileParent for ThreadBlock {
    const STATIC_SIZE: u32 = 0;
}

impl<const M: u32, Q: TileParent> TileParent for ThreadBlockTile<M, Q> {
    const STATIC_SIZE: u32 = M;
}

/// The tile sizes `tiled_partition` accepts, and the type each gives.
#[diagnostic::on_unimplemented(
    message = "there are no tiles of this size",
    note = "tile sizes are 1, 2, 4, 8, 16 and 32 (one warp), and 64, 128, 256 and 512 (large tiles)"
)]
pub trait TileSize<P: TileParent> {
    /// `ThreadBlockTile<N, P>` or `LargeTile<N, P>`.
    type Tile: ThreadGroup<Size = u32> + Copy;
    #[doc(hidden)]
    fn make(parent: &P) -> Self::Tile;
}

/// A tile size as a type, for [`TileSize`].
#[derive(Debug)]
pub struct Size<const N: u32>;

macro_rules! warp_tile_sizes {
    ($($n:literal)*) => {$(
        impl<P: TileParent> TileSize<P> for Size<$n> {
            type Tile = ThreadBlockTile<$n, P>;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn make(parent: &P) -> Self::Tile {
                ThreadBlockTile { parent: *parent }
            }
        }
    )*};
}
warp_tile_sizes!(1 2 4 8 16 32);

/// `cg::this_thread()`: a tile of one thread.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn this_thread() -> ThreadBlockTile<1, ThreadBlock> {
    ThreadBlockTile { parent: super::this_thread_block() }
}

impl<const N: u32, P: TileParent> ThreadBlockTile<N, P> {
    /// How many tiles of this size the parent was cut into (`meta_group_size()`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn meta_group_size(&self) -> u32 {
        self.parent.num_threads().div_ceil(N)
    }

    /// This tile's index among them (`meta_group_rank()`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn meta_group_rank(&self) -> u32 {
        self.parent.thread_rank() / N
    }

    /// The parent group.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn parent(&self) -> &P {
        &self.parent
    }

    /// The tile's own element of a [`DisjointSlice<T, PerTile<N>>`](crate::slice::DisjointSlice)
    /// (its rank among all tiles of `N` in the grid), held by the tile's leader (rank 0) alone;
    /// `None` in the other members.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn leader_index(&self) -> Option<crate::thread::ThreadIndex<crate::thread::PerTile<N>>> {
        (self.thread_rank() == 0).then(|| crate::thread::ThreadIndex::from_rank(global_tile_rank(N)))
    }

    /// The tile's own element of a [`DisjointSlice<T, PerTile<N>>`](crate::slice::DisjointSlice),
    /// held by the tile's last member (rank `N - 1`) alone: where a tile scan leaves the total.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn last_index(&self) -> Option<crate::thread::ThreadIndex<crate::thread::PerTile<N>>> {
        (self.thread_rank() == N - 1).then(|| crate::thread::ThreadIndex::from_rank(global_tile_rank(N)))
    }

    /// `shfl_xor(v, mask)`: the value of the member whose rank is `thread_rank() ^ mask`
    /// (tiles of at most 32).
    #[doc(alias = "__shfl_xor_sync")]
    #[inline(always)]
    #[must_use]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn shfl_xor<T: DeviceCopy>(&self, v: T, mask: u32) -> T {
        crate::check::warp("shfl_xor", self.lane_mask());
        // SAFETY: every lane of the tile executes the tile's collective with the tile's mask.
        unsafe { shfl::bfly(self.lane_mask(), v, mask, raw::shfl_c(N, false)) }
    }
}

impl<const N: u32, P: TileParent> ThreadGroup for ThreadBlockTile<N, P> {
    type Size = u32;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u32 {
        // Warps are cut from the block's linear thread ranks, so the lane id is that rank
        // modulo 32; N divides 32 (and the parent tile's size). One special-register read
        // instead of three and two multiply-adds.
        raw::laneid() % N
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u32 {
        N
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        crate::check::warp("sync", self.lane_mask());
        // SAFETY: the tile's lanes all reach their tile's sync with the tile's mask.
        unsafe { raw::bar_warp_sync(self.lane_mask()) }
    }
}

/// Lane mask of the `n`-thread tile (`n` a power of two ≤ 32) holding this lane.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn tile_lane_mask(n: u32) -> u32 {
    if n >= 32 { u32::MAX } else { ((1u32 << n) - 1) << (raw::laneid() & !(n - 1)) }
}

impl<const N: u32, P: TileParent> WarpGroup for ThreadBlockTile<N, P> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn lane_mask(&self) -> u32 {
        tile_lane_mask(N)
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn meta_group_rank(&self) -> u32 {
        ThreadBlockTile::meta_group_rank(self)
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn meta_group_size(&self) -> u32 {
        ThreadBlockTile::meta_group_size(self)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl<T: DeviceCopy>(&self, v: T, src_rank: u32) -> T {
        crate::check::warp("shfl", self.lane_mask());
        // SAFETY: every lane of the tile executes the tile's collective with the tile's mask.
        unsafe { shfl::idx(tile_lane_mask(N), v, src_rank, raw::shfl_c(N, false)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_up<T: DeviceCopy>(&self, v: T, delta: u32) -> T {
        crate::check::warp("shfl_up", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { shfl::up(self.lane_mask(), v, delta, raw::shfl_c(N, true)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_down<T: DeviceCopy>(&self, v: T, delta: u32) -> T {
        crate::check::warp("shfl_down", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { shfl::down(self.lane_mask(), v, delta, raw::shfl_c(N, false)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn any(&self, pred: bool) -> bool {
        crate::check::warp("any", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { raw::vote_sync_any(tile_lane_mask(N), pred) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn all(&self, pred: bool) -> bool {
        crate::check::warp("all", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { raw::vote_sync_all(tile_lane_mask(N), pred) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn ballot(&self, pred: bool) -> u32 {
        crate::check::warp("ballot", self.lane_mask());
        let mask = self.lane_mask();
        // SAFETY: as for `shfl`.
        let b = unsafe { raw::vote_sync_ballot(mask, pred) };
        b >> (raw::laneid() & !(N - 1))
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_any<T: MatchValue>(&self, v: T) -> u32 {
        crate::check::warp("match_any", self.lane_mask());
        let mask = self.lane_mask();
        // SAFETY: as for `shfl`.
        let m = unsafe { shfl::match_any(mask, v) };
        m >> (raw::laneid() & !(N - 1))
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_all<T: MatchValue>(&self, v: T) -> (u32, bool) {
        crate::check::warp("match_all", self.lane_mask());
        let mask = self.lane_mask();
        // SAFETY: as for `shfl`.
        let (m, p) = unsafe { shfl::match_all(mask, v) };
        (m >> (raw::laneid() & !(N - 1)), p)
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn redux_mask(&self) -> Option<u32> {
        // CUDA uses redux.sync for full tiles of 16 or 32.
        if N == 16 || N == 32 { Some(self.lane_mask()) } else { None }
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn is_tile(&self) -> bool {
        true
    }
}

/// A tile whose size is known only at run time (`cg::tiled_partition(parent, n)`, CUDA's
/// type-erased `thread_group`), for `n` a power of two up to 32.
#[derive(Clone, Copy, Debug)]
pub struct DynTile {
    n: u32,
    parent_rank: u32,
    parent_size: u32,
}

/// `cg::tiled_partition(parent, n)`.
///
/// # Panics
/// Unless `n` is a power of two ≤ 32 that divides the parent's size.
#[inline(always)]
#[track_caller]
pub fn tiled_partition_dyn<P: TileParent>(parent: &P, n: u32) -> DynTile {
    assert!(n.is_power_of_two() && n <= 32, "tiled_partition: n must be a power of two up to 32");
    assert!(parent.num_threads().is_multiple_of(n), "tiled_partition: the parent's size is not a multiple of n");
    DynTile { n, parent_rank: parent.thread_rank(), parent_size: parent.num_threads() }
}

impl ThreadGroup for DynTile {
    type Size = u32;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u32 {
        self.parent_rank % self.n
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u32 {
        self.n
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        crate::check::warp("sync", self.lane_mask());
        // SAFETY: the tile's lanes all reach their tile's sync with the tile's mask.
        unsafe { raw::bar_warp_sync(self.lane_mask()) }
    }
}

impl WarpGroup for DynTile {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn lane_mask(&self) -> u32 {
        tile_lane_mask(self.n)
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn meta_group_rank(&self) -> u32 {
        self.parent_rank / self.n
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn meta_group_size(&self) -> u32 {
        self.parent_size.div_ceil(self.n)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl<T: DeviceCopy>(&self, v: T, src_rank: u32) -> T {
        crate::check::warp("shfl", self.lane_mask());
        // SAFETY: every lane of the tile executes the tile's collective with the tile's mask.
        unsafe { shfl::idx(self.lane_mask(), v, src_rank, raw::shfl_c(self.n, false)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_up<T: DeviceCopy>(&self, v: T, delta: u32) -> T {
        crate::check::warp("shfl_up", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { shfl::up(self.lane_mask(), v, delta, raw::shfl_c(self.n, true)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn shfl_down<T: DeviceCopy>(&self, v: T, delta: u32) -> T {
        crate::check::warp("shfl_down", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { shfl::down(self.lane_mask(), v, delta, raw::shfl_c(self.n, false)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn any(&self, pred: bool) -> bool {
        crate::check::warp("any", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { raw::vote_sync_any(self.lane_mask(), pred) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn all(&self, pred: bool) -> bool {
        crate::check::warp("all", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { raw::vote_sync_all(self.lane_mask(), pred) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn ballot(&self, pred: bool) -> u32 {
        crate::check::warp("ballot", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { raw::vote_sync_ballot(self.lane_mask(), pred) >> (raw::laneid() & !(self.n - 1)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_any<T: MatchValue>(&self, v: T) -> u32 {
        crate::check::warp("match_any", self.lane_mask());
        // SAFETY: as for `shfl`.
        unsafe { shfl::match_any(self.lane_mask(), v) >> (raw::laneid() & !(self.n - 1)) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn match_all<T: MatchValue>(&self, v: T) -> (u32, bool) {
        crate::check::warp("match_all", self.lane_mask());
        // SAFETY: as for `shfl`.
        let (m, p) = unsafe { shfl::match_all(self.lane_mask(), v) };
        (m >> (raw::laneid() & !(self.n - 1)), p)
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn redux_mask(&self) -> Option<u32> {
        if self.n >= 16 { Some(self.lane_mask()) } else { None }
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn is_tile(&self) -> bool {
        true
    }
}

impl DynTile {
    /// `shfl_xor` within the tile.
    #[inline(always)]
    #[must_use]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn shfl_xor<T: DeviceCopy>(&self, v: T, mask: u32) -> T {
        crate::check::warp("shfl_xor", self.lane_mask());
        // SAFETY: every lane of the tile executes the tile's collective with the tile's mask.
        unsafe { shfl::bfly(self.lane_mask(), v, mask, raw::shfl_c(self.n, false)) }
    }
}

/// The rank, among all tiles of `n` threads in the grid, of the tile holding this thread. Tiles
/// are cut from the block's linear thread ranks and the block's size is a multiple of `n`
/// (checked by `tiled_partition`), so this is the thread's grid rank divided by `n`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn global_tile_rank(n: u32) -> usize {
    (crate::thread::global_id() / u64::from(n)) as usize
}

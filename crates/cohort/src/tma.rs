//! The Tensor Memory Accelerator (TMA, sm_90) on the device: tiled copies of a box of a tensor
//! between global memory and a tile in shared memory, described by a tensor map the host made
//! (`cohort_runtime::TensorMap`, `cuTensorMapEncodeTiled`).
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `const __grid_constant__ CUtensorMap map` (read) | `src: TensorMap<f32, 2>` kernel parameter; host `&TensorMap::new(&buffer, spec)?` |
//! | the same, for stores | `dst: TensorMapMut<f32, 2>`; host `&mut TensorMapMut::new(&mut buffer, spec)?` |
//! | `__shared__ alignas(128) float tile[64 * 64];` | `cohort::tma_tile! { static TILE: [f32; 64 * 64]; }` |
//! | `cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, x, y, bar)` + `barrier_arrive_tx(bar, 1, sizeof tile)` | `bar.tensor_load(&mut tile, &src, [x, y]).wait()` ([`AsyncBarrier::tensor_load`]) |
//! | `fence_proxy_async_shared_cta(); __syncthreads(); if (t == 0) { cp_async_bulk_tensor_2d_shared_to_global(&map, x, y, &tile); commit_group(); wait_group<0>(); } __syncthreads();` | `dst.store_owned(&block, &tile, k)` ([`TensorMapMut::store_owned`]; it waits for the whole store, so a box stored twice lands in program order) |
//!
//! **The map.** A kernel gets a tensor map as the address of a 256-byte device allocation the
//! host map owns: the 128-byte `CUtensorMap` (on the CPU device a
//! [`TensorMapDesc`](cohort_cpu::TensorMapDesc) the CPU model reads), then a header with the
//! box and the number of boxes per dimension ([`TensorMapHeader`]). Passing the map by value,
//! as C++ does, crashes rustc (a 64-byte aligned parameter; see `HOPPER-FACTS.md`). Before its
//! first copy through a map the issuing thread runs `fence.proxy.tensormap::generic.acquire.gpu`
//! (PTX ISA 8.3: within the builder's `+ptx84`, sm_90 only).
//!
//! **Loads are safe at any coordinates.** The host checked that the whole tensor the map
//! describes lies inside its buffer (`TensorMapSpec::check`), and the map borrows the buffer
//! for as long as it lives (a freed buffer, or one written by anyone during the launch, does not
//! compile: it is the tracker's read operand, as a `&[T]` would be). The hardware clips a box
//! that reaches outside the tensor: a load fills those elements with zeros (or NaN: `OobFill`),
//! so coordinates are free, negative ones included — except that the innermost one must sit at
//! a multiple of 16 bytes (`coords[0] · size_of::<T>()`; the hardware raises an illegal
//! instruction on another, which ends the CUDA context: measured on an H200, in CUDA C++ as
//! well), checked at the call. The tile must be exactly the map's box
//! (`tile.len()` elements) and 128-byte aligned: checked at the call, a report naming it
//! otherwise (every build, a compare or two: a wrong size would let the copy engine write past
//! the tile). The copy completes on an [`AsyncBarrier`] phase, through the same [`Transfer`] as
//! `bulk_copy`: the tile stays borrowed until the phase completes, with the box's exact bytes
//! announced (`expect_tx`, out-of-bounds elements included, as the hardware counts them).
//!
//! **Stores are disjoint by construction.** A store map (`TensorMapMut`) borrows its buffer
//! exclusively, and a block writes only the boxes it *owns*: the tensor is cut into boxes
//! (`ceil(dim / box)` per dimension, a box at a multiple of the box size), numbered innermost
//! dimension first, and block `b` of a grid of `n` blocks owns boxes `b, b + n, b + 2n, …`
//! ([`TensorMapMut::owned_box`]). The box's coordinates are computed, never given, so two blocks
//! cannot store overlapping boxes, and no block can store outside the tensor (the host also
//! refuses a store map whose strides make rows overlap). A store is a block-wide collective:
//! every thread fences its writes of the tile for the async proxy, a block barrier, thread 0
//! issues the store, commits and waits until the tile has been read, a block barrier: the tile
//! can be written again when it returns. (The global writes complete before the grid does.)
//!
//! On the CPU device the copies are made by the CPU model (`cohort_cpu::tensor_load`,
//! `tensor_store`) when issued, element by element with the same clipping and fill; a load
//! completes its bytes on the barrier's model.
//!
//! **Swizzled maps.** A map made with a swizzle (`TensorMapSpec::swizzle`) loads only into a tile
//! whose type carries the same [`Swizzle`]: a [`wgmma::Tile`](crate::wgmma::Tile)
//! (`AsyncBarrier::tensor_load_tile`, or a [`wgmma::PipelineStatic`](crate::wgmma::PipelineStatic)'s
//! stages), checked against the map's header at the call; a plain [`SharedSlice`] refuses it.
//!
//! Not supported yet: interleaved maps, element strides other than 1, im2col, multicast to a
//! cluster, reductions into global memory (`cp.reduce.async.bulk.tensor`).

use core::cell::Cell;
use core::marker::PhantomData;

use crate::DeviceCopy;
use crate::cg::{AsyncBarrier, ThreadBlock, Transfer};
use crate::raw;
use crate::shared::SharedSlice;

/// The most dimensions a tensor map has.
pub const MAX_RANK: usize = 5;

/// Bytes of the device allocation of a map: the 128-byte map, then the [`TensorMapHeader`].
pub const MAP_BYTES: usize = 256;

/// Where the header starts in a map's allocation.
pub const HEADER_OFFSET: usize = 128;

/// The header after a map's 128 bytes: what the device reads of the map (the `CUtensorMap`
/// itself is opaque).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorMapHeader {
    /// The box, elements per dimension (`rank` used, the rest 1).
    pub box_dims: [u32; MAX_RANK],
    /// Boxes per dimension: `ceil(dim / box)` (the rest 1).
    pub boxes: [u32; MAX_RANK],
    /// The map's swizzle span in bytes: 0 (none), 32, 64 or 128 ([`Swizzle::SPAN`]).
    pub swizzle: u32,
}

mod swizzle_sealed {
    pub trait Sealed {}
    impl Sealed for super::NoSwizzle {}
    impl Sealed for super::Swizzle32B {}
    impl Sealed for super::Swizzle64B {}
    impl Sealed for super::Swizzle128B {}
}

/// How a tile's bytes are arranged in shared memory: a swizzle mode, as a type (sealed), so that
/// a tile's type says its layout and everything that reads or writes it (a TMA load, a `wgmma`
/// descriptor, a thread's element access) follows it — they cannot disagree.
///
/// With a swizzle of `SPAN` bytes (32, 64, 128) the byte at unswizzled shared address `a` is
/// kept at `a ^ (((a >> 7) & m) << 4)` (`m` = 1, 3, 7): within every 8 rows of `SPAN` bytes the
/// 16-byte chunks of a row are permuted by the row ([`raw::swizzle_address`]). The copy engine
/// (`CU_TENSOR_MAP_SWIZZLE_{32B,64B,128B}`) and `wgmma`'s descriptors (layout types 3, 2, 1)
/// compute the same function of the address bits, which is why a swizzled tile is 1024-byte
/// aligned (every pattern's period divides 1024).
pub trait Swizzle: swizzle_sealed::Sealed + 'static {
    /// The swizzle span in bytes (0: none), as a map's header records it.
    const SPAN: u32;
    /// `wgmma`'s layout type for it (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
    const WGMMA_MODE: u32;
    /// The width of a row of the tile's atoms, bytes: `SPAN`, or 16 without swizzle (an
    /// unswizzled `wgmma` operand is made of 8 × 16-byte core matrices).
    const ATOM_BYTES: u32;
}

/// No swizzle: rows land as they are (for a `wgmma` tile: 8 × 16-byte core matrices).
#[derive(Clone, Copy, Debug)]
pub enum NoSwizzle {}
/// 32-byte swizzle (`CU_TENSOR_MAP_SWIZZLE_32B`).
#[derive(Clone, Copy, Debug)]
pub enum Swizzle32B {}
/// 64-byte swizzle (`CU_TENSOR_MAP_SWIZZLE_64B`).
#[derive(Clone, Copy, Debug)]
pub enum Swizzle64B {}
/// 128-byte swizzle (`CU_TENSOR_MAP_SWIZZLE_128B`): what a fast GEMM's tiles of 64 BF16 per row use.
#[derive(Clone, Copy, Debug)]
pub enum Swizzle128B {}

impl Swizzle for NoSwizzle {
    const SPAN: u32 = 0;
    const WGMMA_MODE: u32 = 0;
    const ATOM_BYTES: u32 = 16;
}
impl Swizzle for Swizzle32B {
    const SPAN: u32 = 32;
    const WGMMA_MODE: u32 = 3;
    const ATOM_BYTES: u32 = 32;
}
impl Swizzle for Swizzle64B {
    const SPAN: u32 = 64;
    const WGMMA_MODE: u32 = 2;
    const ATOM_BYTES: u32 = 64;
}
impl Swizzle for Swizzle128B {
    const SPAN: u32 = 128;
    const WGMMA_MODE: u32 = 1;
    const ATOM_BYTES: u32 = 128;
}

/// Element types a tensor map can describe, with their `CUtensorMapDataType`.
///
/// # Safety
/// `DATA_TYPE` is a data type of `size_of::<Self>()` bytes; `FLOAT` only for floating-point
/// types.
pub unsafe trait TensorElement: DeviceCopy {
    /// `CUtensorMapDataType`.
    const DATA_TYPE: u32;
    /// Whether NaN fill is allowed.
    const FLOAT: bool;
}

macro_rules! tensor_element {
    ($($t:ty => $dt:literal, $f:literal;)*) => {$(
        // SAFETY: the driver's data type of the same size (signed 8/16-bit integers move as the
        // unsigned type of their size: a copy does not interpret them).
        unsafe impl TensorElement for $t {
            const DATA_TYPE: u32 = $dt;
            const FLOAT: bool = $f;
        }
    )*};
}
tensor_element! {
    u8 => 0, false; i8 => 0, false; u16 => 1, false; i16 => 1, false; u32 => 2, false; i32 => 3, false;
    u64 => 4, false; i64 => 5, false; half::f16 => 6, true; f32 => 7, true; f64 => 8, true; half::bf16 => 9, true;
}

/// A read-only tensor map as a kernel parameter: box loads into shared memory
/// ([`AsyncBarrier::tensor_load`]). The host argument is `&cohort_runtime::TensorMap<T, RANK>`.
#[derive(Debug)]
pub struct TensorMap<'a, T, const RANK: usize> {
    map: u64,
    fenced: Cell<bool>,
    _t: PhantomData<&'a [T]>,
}

/// A tensor map for stores, as a kernel parameter: each block stores the boxes it owns
/// ([`store_owned`](Self::store_owned)). The host argument is
/// `&mut cohort_runtime::TensorMapMut<T, RANK>`.
#[derive(Debug)]
pub struct TensorMapMut<'a, T, const RANK: usize> {
    map: u64,
    fenced: Cell<bool>,
    _t: PhantomData<&'a mut [T]>,
}

/// What both kinds of map share.
macro_rules! map_common {
    ($($ty:ident),*) => {$(
        impl<T: TensorElement, const RANK: usize> $ty<'_, T, RANK> {
            /// The map at device address `map`.
            ///
            /// # Safety
            /// `map` is the address of a map allocation made by the runtime for elements `T`
            /// and rank `RANK` (a valid tensor map or CPU description, then its header), alive
            /// and unchanged for `'a`, whose tensor is readable (for `TensorMapMut`: writable,
            /// by this launch only) for `'a`.
            #[doc(hidden)]
            #[inline(always)]
            #[must_use]
            pub unsafe fn from_raw(map: u64) -> Self {
                const { assert!(RANK >= 1 && RANK <= MAX_RANK, "a tensor map has 1 to 5 dimensions") };
                Self { map, fenced: Cell::new(false), _t: PhantomData }
            }

            #[inline(always)]
            fn header(&self) -> TensorMapHeader {
                // SAFETY: the map's allocation holds its header at this offset (`from_raw`),
                // 4-byte aligned (the allocation is 256-byte aligned), unchanged meanwhile.
                unsafe { core::ptr::read((self.map as usize + HEADER_OFFSET) as *const TensorMapHeader) }
            }

            /// The box: elements per dimension, innermost first.
            #[inline(always)]
            #[must_use]
            pub fn box_dims(&self) -> [u32; RANK] {
                let h = self.header();
                core::array::from_fn(|d| h.box_dims[d])
            }

            /// Elements of one box (what a tile for it holds).
            #[inline(always)]
            #[must_use]
            pub fn box_elements(&self) -> usize {
                self.box_dims().iter().map(|&b| b as usize).product()
            }

            /// Boxes per dimension (`ceil(dim / box)`).
            #[inline(always)]
            #[must_use]
            pub fn boxes(&self) -> [u32; RANK] {
                let h = self.header();
                core::array::from_fn(|d| h.boxes[d])
            }

            /// The map's swizzle span in bytes (0: none; see [`Swizzle`]).
            #[inline(always)]
            #[must_use]
            pub fn swizzle_span(&self) -> u32 {
                self.header().swizzle
            }

            /// The map's fence, once per thread, before its first copy through it.
            #[inline(always)]
            pub(crate) fn fence_once(&self) {
                if !self.fenced.get() {
                    // SAFETY: `map` is a 256-byte aligned map in global memory (`from_raw`).
                    unsafe { raw::fence_proxy_tensormap_acquire(self.map) };
                    self.fenced.set(true);
                }
            }

            /// The tile's checks (size and alignment), its byte count.
            #[inline(always)]
            #[track_caller]
            fn check_tile(&self, tile: &SharedSlice<T>, op: &'static str) -> u32 {
                // A plain tile has no swizzle in its type: a swizzled map's box would land in a
                // layout its readers do not follow (load it into a `wgmma::Tile` of that
                // swizzle instead).
                if self.swizzle_span() != 0 {
                    crate::cg::async_barrier_fail_with(12, self.swizzle_span(), op);
                }
                let want = self.box_elements() * size_of::<T>();
                let have = tile.len() * size_of::<T>();
                if have != want {
                    crate::cg::async_barrier_fail_with(8, have.min(u32::MAX as usize) as u32, op);
                }
                if !tile.shared_addr().is_multiple_of(128) {
                    crate::cg::async_barrier_fail_with(9, tile.shared_addr(), op);
                }
                // A tile is shared memory: far below 2^20 bytes on every GPU (228 KiB on sm_90).
                if want >= 1 << 20 {
                    crate::cg::async_barrier_fail_with(5, want.min(u32::MAX as usize) as u32, op);
                }
                want as u32
            }
        }
    )*};
}
map_common!(TensorMap, TensorMapMut);

impl<T: TensorElement, const RANK: usize> TensorMap<'_, T, RANK> {
    /// The map's device address (for the raw copies of `wgmma` tiles).
    #[inline(always)]
    pub(crate) fn addr(&self) -> u64 {
        self.map
    }
}

impl<T: TensorElement, const RANK: usize> TensorMapMut<'_, T, RANK> {
    /// The coordinates of the `k`-th box this block owns: box number
    /// `k · num_blocks + block_rank` of the tensor's boxes (numbered innermost dimension first),
    /// at a multiple of the box size in each dimension; `None` past the last box.
    #[inline(always)]
    #[must_use]
    pub fn owned_box(&self, k: u32) -> Option<[i32; RANK]> {
        let h = self.header();
        let mut b = u128::from(k) * u128::from(crate::thread::num_blocks()) + u128::from(crate::thread::block_rank());
        let mut c = [0i32; RANK];
        for d in 0..RANK {
            let n = u128::from(h.boxes[d].max(1));
            // Lossless: below `boxes[d]` ≤ 2^31 boxes of at least one element, and the host
            // refuses dimensions past 2^31 elements (TMA coordinates are signed 32-bit).
            c[d] = ((b % n) as u64 * u64::from(h.box_dims[d])) as i32;
            b /= n;
        }
        (b == 0).then_some(c)
    }

    /// Stores `tile` (the map's box, dense, dimension 0 fastest) as this block's `k`-th box
    /// ([`owned_box`](Self::owned_box); nothing if the block owns no `k`-th box): a block-wide
    /// collective (every thread of the block calls it with the same arguments). Elements of
    /// the box outside the tensor are not written. When it returns, the tile may be written
    /// again.
    ///
    /// # Panics
    /// A tile that is not the map's box (its size) or not 128-byte aligned: a report naming
    /// the call (every build; the CPU device too).
    #[inline(always)]
    #[track_caller]
    pub fn store_owned(&self, block: &ThreadBlock, tile: &SharedSlice<T>, k: u32) {
        let _ = block;
        crate::check::block("TensorMapMut::store_owned");
        let bytes = self.check_tile(tile, "TensorMapMut::store_owned");
        crate::check::block_uniform(
            "TensorMapMut::store_owned",
            [u64::from(tile.shared_addr()) | (tile.len() as u64) << 32, self.map, u64::from(k)],
        );
        // Each thread's writes of the tile, for the async proxy; then every thread's before
        // thread 0 issues the store.
        raw::fence_proxy_async_shared();
        crate::sync::barrier_unchecked();
        if crate::thread::thread_rank_in_block() == 0
            && let Some(c) = self.owned_box(k)
        {
            self.fence_once();
            // SAFETY: a valid map of this type (`from_raw`) whose tensor this launch alone
            // writes, and only in the boxes its blocks own: this block's `k`-th, which no other
            // block owns; `tile` is 128-byte aligned shared memory of the box's bytes (checked),
            // fenced and ordered by the barrier above, and no thread writes it before the
            // barrier below, which thread 0 reaches after the store completed.
            unsafe { raw::cp_async_bulk_tensor_store::<RANK>(self.map, c, tile.shared_addr(), bytes) };
            raw::cp_async_bulk_commit_group();
            // The whole store, not only its read of the tile (`.read`): a second store of the
            // same box by this block is then ordered after this one (two stores in flight to
            // one box could land in either order). A split store token that waits `.read` here
            // and the writes later would keep the overlap; not done yet.
            raw::cp_async_bulk_wait_group();
        }
        crate::sync::barrier_unchecked();
    }
}

impl<'b> AsyncBarrier<'b> {
    /// A TMA tile load (`cp.async.bulk.tensor.{RANK}d…mbarrier::complete_tx::bytes`): thread 0
    /// announces the box's bytes on the current phase and starts the copy of the box of `map`
    /// at `coords` (elements, innermost first; any values: elements outside the tensor are
    /// filled per the map's `OobFill`) into `tile`; every other thread arrives. The tile is
    /// reachable again through [`Transfer::wait`]. Every thread of the block must call it with
    /// the same arguments: the copy is thread 0's, and every thread's `Transfer` borrows its own
    /// `tile` (checked mode and the CPU device report a thread whose tile, map or coordinates
    /// differ from thread 0's). sm_90 only (traps below).
    ///
    /// # Panics
    /// A tile that is not exactly the map's box (`map.box_elements()` elements) or not 128-byte
    /// aligned (declare it with [`tma_tile!`](crate::tma_tile)), or an innermost coordinate
    /// `coords[0]` whose byte offset (`coords[0] · size_of::<T>()`) is not a multiple of 16 (the
    /// hardware traps on it): a report naming the call.
    #[inline(always)]
    #[track_caller]
    pub fn tensor_load<'d, T: TensorElement, const RANK: usize>(
        &mut self,
        tile: &'d mut SharedSlice<T>,
        map: &TensorMap<'_, T, RANK>,
        coords: [i32; RANK],
    ) -> Transfer<'b, '_, 'd, T> {
        let bytes = map.check_tile(tile, "AsyncBarrier::tensor_load");
        // The box's first element must sit at a multiple of 16 bytes along the innermost
        // dimension: a TMA load at another coordinate is an illegal instruction, which ends the
        // CUDA context (measured on an H200, in CUDA C++ too: x = -7 of `f32` traps, -8 and 100
        // load).
        if (i64::from(coords[0]) * size_of::<T>() as i64) % 16 != 0 {
            crate::cg::async_barrier_fail_with(11, coords[0] as u32, "AsyncBarrier::tensor_load");
        }
        self.before_arrival("AsyncBarrier::tensor_load");
        crate::check::block_uniform(
            "AsyncBarrier::tensor_load",
            [
                u64::from(tile.shared_addr()) | (tile.len() as u64) << 32,
                map.map,
                coords.iter().fold(0u64, |h, c| h.rotate_left(13) ^ u64::from(*c as u32)),
            ],
        );
        if crate::thread::thread_rank_in_block() == 0 {
            map.fence_once();
            // SAFETY: live barrier, this thread's arrival not yet made (`before_arrival`); the
            // phase cannot complete before it, and then waits for `bytes` (< 2^20, checked),
            // which the copy below completes. The copy: a valid, fenced map of this element type
            // and rank (`from_raw`) whose tensor lies in a buffer nobody writes during the launch;
            // `tile` is 128-byte aligned shared memory of exactly the box's bytes (checked),
            // borrowed by every thread's `Transfer` until the phase completes.
            unsafe {
                let _ = raw::mbarrier_arrive_expect_tx_shared(self.addr, bytes);
                raw::cp_async_bulk_tensor_load::<RANK>(tile.shared_addr(), map.map, coords, self.addr, bytes);
            }
        } else {
            // SAFETY: live barrier, this thread's arrival not yet made.
            let _ = unsafe { raw::mbarrier_arrive_shared(self.addr) };
        }
        self.state |= crate::cg::ARRIVED;
        self.transfer()
    }
}

/// Declares shared-memory tiles for TMA copies: as [`shared!`](macro@crate::shared), 128-byte aligned
/// (what a tensor copy's shared address needs).
///
/// ```
/// cohort::tma_tile! {
///     /// One 64 × 64 box of `f32`.
///     static TILE: [f32; 64 * 64];
/// }
/// ```
#[macro_export]
macro_rules! tma_tile {
    ($($(#[$m:meta])* $vis:vis static $name:ident: [$t:ty; $n:expr];)*) => {$(
        $crate::__shared_static!($(#[$m])* $vis static $name: [$t; $n], align $crate::tma::__align::<$t>());
    )*};
}

#[doc(hidden)]
#[must_use]
pub const fn __align<T>() -> usize {
    if align_of::<T>() > 128 { align_of::<T>() } else { 128 }
}

//! Hopper's warpgroup MMA from safe Rust (`wgmma`, sm_90a): shared-memory operand tiles whose
//! type says their swizzle, register accumulators that cannot be read while an MMA may still
//! write them, and the warp-specialized TMA pipeline of the fast GEMMs (one producer warpgroup
//! loading tiles with the Tensor Memory Accelerator, consumer warpgroups multiplying them).
//!
//! | CUDA C++ / CUTLASS / PTX | Cohort |
//! |---|---|
//! | a warpgroup: `threadIdx.x / 128`, `cutlass::canonical_warp_group_idx()` | [`Warpgroup`] ([`Warpgroup::new`], or a pipeline's consumer's [`Consumer::warpgroup`]) |
//! | `__shared__ alignas(1024) bf16 a[64 * 64]` in a GMMA layout (`GMMA::Layout_K_SW128_Atom`, …) | [`Tile<bf16, 64, 64, Swizzle128B>`](Tile) over shared memory declared with [`wgmma_tile!`](crate::wgmma_tile) or carved from dynamic shared memory |
//! | `cute::GmmaDescriptor` (start, LBO, SBO, layout type) | made only from a [`Tile`] inside [`MmaScope::issue`]: [`OperandTiles::a`], [`OperandTiles::b`] |
//! | `float d[128]` accumulators of `SM90_64x256x16_F32BF16BF16_SS` | [`Accumulator<N256>`](Accumulator) |
//! | `warpgroup_fence_operand(d); warpgroup_arrive(); gemm(…); warpgroup_commit_batch();` | [`MmaScope::issue`] (`wgmma.fence` with the accumulators as operands, the MMAs, `commit_group`) |
//! | `warpgroup_wait<N>()` | [`MmaScope::retire`] (the wait that covers a group; its operands come back), the end of [`Warpgroup::mma`] (`wait_group 0`) |
//! | `cutlass::arch::warpgroup_reg_dealloc<40>()` / `_alloc<232>()` | [`SplitRegisters<40, 232>`](SplitRegisters) given to [`PipelineStatic::scope`] |
//! | `PipelineTmaAsync` with full / empty barriers, `producer_acquire` + TMA + `consumer_wait` / `consumer_release` | [`tma_pipeline!`](crate::tma_pipeline), [`PipelineStatic::scope`], [`Producer::fill`], [`Consumer::acquire`], dropping the [`Stage`] |
//!
//! ## Tiles and swizzles
//!
//! A [`Tile<T, R, C, S>`](Tile) is `R` rows of `C` elements (`bf16` or `f16`) in shared memory,
//! K-major (a row is one row of A, or one column of B: Bᵀ stored row-major), in the layout a
//! `wgmma` descriptor of swizzle `S` reads: atoms of `S::ATOM_BYTES` per row ([`Swizzle`]), each
//! atom column `R × ATOM_BYTES` bytes, the 16-byte chunks of every row permuted by the swizzle.
//! A TMA load of a map of the same swizzle whose box is `[C, R]` writes exactly that layout
//! (for `C` elements of one atom: 64 BF16 with 128-byte swizzle), so a GEMM's tiles go from
//! global memory to the tensor cores with no thread touching them. The swizzle is part of the
//! tile's type; the descriptor is made from it; a TMA load checks the map's swizzle and box
//! against it. So the three cannot disagree. A thread reads and writes elements by (row, k)
//! ([`Tile::load`], [`Tile::store`]), through the same layout ([`sync_tile_stores`] before MMAs
//! read what threads stored). Tiles are 1024-byte aligned (checked where one is made).
//!
//! ## MMAs
//!
//! A warpgroup is four consecutive warps of a block starting at a multiple of four: 128
//! threads. [`Warpgroup::mma`] gives the warpgroup an [`MmaScope`] that **owns** the
//! accumulator until every MMA has completed: there is no way to read it while an MMA is in
//! flight (it is not borrowed, it is moved in: forgetting anything leaves nothing to read).
//! [`MmaScope::issue`] takes the operands' tiles **by value** (a pipeline [`Stage`], or a pair
//! of [`Tile`] handles), fences, issues the MMAs the closure asks for on descriptors it can
//! only make from those tiles (a brand lifetime: a tile from elsewhere does not compile), and
//! commits them as one [`Group`]; [`MmaScope::retire`] waits until that group has completed
//! (`wgmma.wait_group` with the newer groups left in flight) and hands the tiles back. A tile is
//! thus never writable, nor a stage released to the producer, while an MMA may read it. A
//! dropped group waits first.
//!
//! ## The pipeline
//!
//! [`tma_pipeline!`](crate::tma_pipeline) declares a ring's barriers; [`PipelineStatic::scope`]
//! carves the ring's stages (a tile of A and one of B each) from dynamic shared memory, makes
//! the barriers live, and runs each thread's part: warp 0 of warpgroup 0 is the
//! [`Producer`], whose [`fill`](Producer::fill) waits until the consumers have released the next
//! stage and loads both its tiles with TMA (each exactly once: the closure must return both
//! loads' receipts, which only a load makes), completing on the stage's full barrier with
//! exactly their bytes announced; the other warpgroups are [`Consumer`]s, whose
//! [`acquire`](Consumer::acquire) waits for the next full stage and whose [`Stage`], dropped,
//! releases it (one arrival per warp, after the warp's own accesses). Before the scope ends
//! every load has landed and the barriers are retired. The release of a stage needs the stage
//! back from the MMA group that read it: the producer can never overwrite tiles an MMA reads.
//!
//! ## Misuse
//!
//! What types cannot stop is checked: a warpgroup collective reached by part of the warpgroup
//! (checked mode and the CPU device: [`CheckKind::WgmmaMisuse`](crate::panic::CheckKind)),
//! descriptors outside their tile, a block that is not whole warpgroups, stages that do not fit
//! in the launch's dynamic shared memory, a map whose swizzle or box is not the tile's (every
//! build), waits that never complete (checked mode: 5 s, then an `Err`).
//!
//! ## Targets and the CPU device
//!
//! `wgmma` and `setmaxnreg` exist only in `sm_90a` PTX: a kernels crate that uses this module
//! asks `cohort-build` for that module (`Builder::arch_specific(&[90])`); the runtime loads it on
//! a 9.0 device, and refuses to launch these kernels from any other module
//! (`Error::NeedsArchSpecific`). On the CPU device every MMA is computed when issued, from the
//! shared memory its descriptors address (see [`raw::wgmma`]), and TMA loads
//! land swizzled as the copy engine lands them: a layout mismatch fails there too.

mod mma;
mod pipeline;
mod tile;

pub use mma::{
    Accumulator, Desc, Group, Issue, MmaScope, N8, N16, N32, N64, N128, N256, OperandTiles, Operands, Shape,
};
pub use pipeline::{
    Consumer, KeepRegisters, Loaded, PipelineStatic, Producer, RegisterPlan, Slot, SplitRegisters, Stage,
};
pub use tile::{MmaElement, Tile, TileShape};

pub use crate::tma::{NoSwizzle, Swizzle, Swizzle32B, Swizzle64B, Swizzle128B};

use crate::cg::ThreadBlock;
use crate::raw;

/// One warpgroup of the block: four consecutive warps, the first a multiple of four (threads
/// `128 g .. 128 g + 128`), the unit of `wgmma`. Made for the calling thread's own warpgroup.
#[derive(Debug)]
pub struct Warpgroup {
    index: u32,
}

impl Warpgroup {
    /// The calling thread's warpgroup.
    ///
    /// # Panics
    /// If the block's size is not a multiple of 128 (a report naming the call, every build).
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn new(block: &ThreadBlock) -> Self {
        let _ = block;
        let n = crate::thread::block_size();
        if !n.is_multiple_of(128) {
            fail(1, n, "Warpgroup::new");
        }
        Self { index: crate::thread::thread_rank_in_block() / 128 }
    }

    /// A warpgroup the caller has checked (whole warpgroups in the block).
    #[inline(always)]
    pub(crate) fn of_thread() -> Self {
        Self { index: crate::thread::thread_rank_in_block() / 128 }
    }

    /// Which warpgroup of the block (0 for threads 0..128).
    #[inline(always)]
    #[must_use]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// This thread's warp within the warpgroup (0..4).
    #[inline(always)]
    #[must_use]
    pub fn warp(&self) -> u32 {
        (crate::thread::thread_rank_in_block() / 32) % 4
    }

    /// This thread's rank within the warpgroup (0..128).
    #[inline(always)]
    #[must_use]
    pub fn thread_rank(&self) -> u32 {
        crate::thread::thread_rank_in_block() % 128
    }
}

/// Makes every thread's [`Tile::store`]s visible to the block's MMAs: each thread fences its
/// shared-memory stores for the async proxy (`fence.proxy.async.shared::cta`, which `wgmma`'s
/// reads of shared memory belong to), then a block barrier (CUTLASS's
/// `fence_view_async_shared(); __syncthreads();`). Without it an MMA may read what the tile
/// held before. A block-wide collective. (Tiles a TMA load filled need nothing: the copy and
/// the MMA are both in the async proxy, ordered by the barrier phase.)
#[inline(always)]
#[track_caller]
pub fn sync_tile_stores(block: &ThreadBlock) {
    let _ = block;
    raw::fence_proxy_async_shared();
    crate::sync::sync_threads();
}

/// An invariant lifetime brand (one per scope or group: a value of another does not fit).
pub(crate) type Brand<'a> = core::marker::PhantomData<fn(&'a ()) -> &'a ()>;

/// Ends the kernel for a misused `wgmma` facility (see
/// [`CheckKind::WgmmaMisuse`](crate::panic::CheckKind::WgmmaMisuse)).
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn fail(code: u32, n: u32, op: &'static str) -> ! {
    crate::panic::fail_check(crate::panic::CheckKind::WgmmaMisuse, op, code, n, core::panic::Location::caller(), None)
}

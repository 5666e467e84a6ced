//! Barriers and memory fences (Programming Guide §"Synchronization Functions",
//! §"Memory Fence Functions").
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `__syncthreads()` | [`sync_threads`] |
//! | `__syncthreads_count(p)` / `_and` / `_or` | [`sync_threads_count`], [`sync_threads_and`], [`sync_threads_or`] |
//! | `__syncwarp(mask)` | [`sync_warp`] |
//! | `__threadfence_block()` / `__threadfence()` / `__threadfence_system()` | [`fence_block`], [`fence_device`], [`fence_system`] (or [`fence`] with a [`Scope`]) |
//!
//! Barriers must be reached by every (non-exited) thread of the block or of the mask, at the same
//! call (the convergence rule in [`crate::cg`]). The block barriers are the non-aligned PTX
//! forms (`barrier.sync`, `barrier.red`), so warps may reach them from different instructions;
//! in checked mode ([`crate::check`]) threads at *different* barriers are an error naming the
//! call site.

/// A block barrier without checked mode's check: for the library's own barriers, whose
/// threads are all at one call by construction.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn barrier_unchecked() {
    // SAFETY: used only where every thread of the block reaches the same call.
    unsafe { raw::barrier_sync() }
}

use crate::raw;
#[doc(inline)]
pub use crate::raw::Scope;

/// `__syncthreads()`: waits until every thread of the block arrives, and makes the shared and
/// global memory writes of each visible to all.
/// Every thread of the block must reach this call (the [convergence rule](crate::cg#convergence)).
#[doc(alias = "__syncthreads")]
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn sync_threads() {
    crate::check::block_collective("sync_threads");
    // SAFETY: a block barrier in divergent code is a liveness bug (hang or fault), not a memory
    // hazard of this call; documented above.
    unsafe { raw::barrier_sync() }
}

/// `__syncthreads_count(pred)`: a block barrier that returns how many threads passed `true`.
#[doc(alias = "__syncthreads_count")]
#[inline(always)]
#[must_use]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn sync_threads_count(pred: bool) -> u32 {
    crate::check::block_collective("sync_threads_count");
    // SAFETY: as for `sync_threads`.
    unsafe { raw::barrier_sync_count(pred) }
}

/// `__syncthreads_and(pred)`: a block barrier that returns whether every thread passed `true`.
#[doc(alias = "__syncthreads_and")]
#[inline(always)]
#[must_use]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn sync_threads_and(pred: bool) -> bool {
    crate::check::block_collective("sync_threads_and");
    // SAFETY: as for `sync_threads`.
    unsafe { raw::barrier_sync_and(pred) }
}

/// `__syncthreads_or(pred)`: a block barrier that returns whether any thread passed `true`.
#[doc(alias = "__syncthreads_or")]
#[inline(always)]
#[must_use]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn sync_threads_or(pred: bool) -> bool {
    crate::check::block_collective("sync_threads_or");
    // SAFETY: as for `sync_threads`.
    unsafe { raw::barrier_sync_or(pred) }
}

/// `__syncwarp(mask)`: the lanes of `mask` wait for each other.
///
/// # Safety
/// The calling lane must be in `mask`, and every lane of `mask` must call `sync_warp` with
/// the same mask.
#[doc(alias = "__syncwarp")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn sync_warp(mask: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { raw::bar_warp_sync(mask) }
}

/// A sequentially consistent fence at `scope` (`fence.sc.{cta,gpu,sys}`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence(scope: Scope) {
    raw::fence_sc(scope)
}

/// An acquire-release fence at `scope` (`fence.acq_rel.{cta,gpu,sys}`): cheaper than
/// [`fence`], enough to pair a relaxed flag with the data it guards.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence_acq_rel(scope: Scope) {
    raw::fence_acq_rel(scope)
}

/// `__threadfence_block()`.
#[doc(alias = "__threadfence_block")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence_block() {
    raw::fence_sc_cta()
}

/// `__threadfence()`.
#[doc(alias = "__threadfence")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence_device() {
    raw::fence_sc_gpu()
}

/// `__threadfence_system()`.
#[doc(alias = "__threadfence_system")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence_system() {
    raw::fence_sc_sys()
}

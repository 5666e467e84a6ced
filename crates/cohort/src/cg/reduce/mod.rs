//! Collectives: `reduce`, `inclusive_scan`, `exclusive_scan`, `*_scan_update`, at every scope.
//!
//! | group | how | who holds the result |
//! |---|---|---|
//! | tile of 16 or 32, coalesced group; 32-bit integer op (`plus`, `less`, `greater`, `bit_*` on `u32`/`i32`), sm_80+ | one `redux.sync` | every member |
//! | tile of ≤ 32 (other cases) | butterfly of `shfl.sync.bfly` | every member |
//! | coalesced group (other cases) | tree of rank-relative `shfl_down`, then a broadcast | every member |
//! | large tile (64–512) | per-warp as above, then the warps' partials through shared scratch | every member |
//! | thread block ([`this_thread_block`](super::this_thread_block)) | per-warp as above, then the warps' partials through shared scratch (any block size) | every thread |
//! | grid ([`reduce_grid`]) | block reduce, one partial per block in a scratch [`GridVec`], a grid barrier on the scratch's own word, each block combines the partials | every thread of the grid |
//!
//! Scans (`inclusive_scan`, `exclusive_scan`) run on the same groups; thread *r* gets the
//! combination of ranks `0..=r` (inclusive) or `0..r` (exclusive: rank 0 gets
//! `T::default()`, as CUDA's value-initialized result). Ops combine in rank order where the
//! algorithm allows, but floating-point results of a reduction may differ from a sequential
//! sum in the last bits, as in CUDA.
//!
//! **Ops that call collectives.** The op is a `Fn(T, T) -> T + Copy` closure (it cannot write
//! an output), called by the library as often as its algorithm needs: a tile's butterfly calls
//! it in every lane at every step, so a tile collective inside it is converged; a scan calls
//! it only in the lanes with a partner at each step, so one inside a scan's op is divergent
//! (checked mode and the CPU device report it). A block-level or large-tile collective inside
//! the op of a block-level or large-tile one would overwrite the per-warp partials being
//! combined: it ends the launch with a panic naming the outer call, never a wrong value.
//!
//! The algorithms by scope, as CUB arranges them: [`ops`] (the operators: `plus`, … and
//! [`ReduceOp`]), [`warp`] (one warp or less: tiles of ≤ 32, coalesced groups; the
//! `*_scan_update` collectives), [`block`] (several warps through shared scratch: the thread
//! block, and the two-level pieces large tiles use too), [`grid`] (a cooperative grid). This
//! module holds what every scope shares: the [`Collective`] trait and the functions that call it.

mod block;
mod grid;
mod ops;
mod update;
mod warp;

use core::ops::Add;

pub(crate) use block::{SlotWrites, finish_two_level_scan, fold_warp_slots};
pub use grid::{GridScratch, reduce_grid};
pub use ops::{
    AddSelf, AtomicKind, BitAndSelf, BitOrSelf, BitXorSelf, ReduceOp, bit_and, bit_or, bit_xor, greater, less, plus,
};
pub use update::{AtomicReduce, StoreTarget, reduce_store_async, reduce_update_async};
pub use warp::{AtomicAdd, exclusive_scan_update, inclusive_scan_update};
pub(crate) use warp::{scan_incl_warp, tile_reduce};

use super::ThreadGroup;
use crate::DeviceCopy;

/// Groups that support `reduce` and the scans.
pub trait Collective: ThreadGroup {
    /// See [`reduce`].
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn reduce_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T;
    /// See [`inclusive_scan`].
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T;
    /// See [`exclusive_scan`].
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T;
}

/// `cg::reduce(group, value, op)`: combines every member's `value` with `op`; every member
/// gets the result. See the module table for how each group does it.
/// Every member must call it at the same site (the [convergence rule](crate::cg#convergence)).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn reduce<G: Collective, T: DeviceCopy, Op: ReduceOp<T>>(group: &G, value: T, op: Op) -> T {
    group.reduce_with(value, op)
}

/// `cg::inclusive_scan(group, value, op)`: member *r* gets `v0 op v1 op … op vr`.
/// Every member must call it at the same site (the [convergence rule](crate::cg#convergence)).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn inclusive_scan<G: Collective, T: DeviceCopy, Op: ReduceOp<T>>(group: &G, value: T, op: Op) -> T {
    group.inclusive_scan_with(value, op)
}

/// `cg::exclusive_scan(group, value, op)`: member *r* gets `v0 op … op v(r-1)`; rank 0 gets
/// `T::default()`.
/// Every member must call it at the same site (the [convergence rule](crate::cg#convergence)).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn exclusive_scan<G: Collective, T: DeviceCopy + Default, Op: ReduceOp<T>>(group: &G, value: T, op: Op) -> T {
    group.exclusive_scan_with(value, op)
}

/// `cg::inclusive_scan(group, value)` with the default `plus`.
#[doc(alias = "inclusive_scan")]
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn inclusive_sum<G: Collective, T: DeviceCopy + Add<Output = T>>(group: &G, value: T) -> T {
    group.inclusive_scan_with(value, plus)
}

/// `cg::exclusive_scan(group, value)` with the default `plus`.
#[doc(alias = "exclusive_scan")]
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn exclusive_sum<G: Collective, T: DeviceCopy + Default + Add<Output = T>>(group: &G, value: T) -> T {
    group.exclusive_scan_with(value, plus)
}

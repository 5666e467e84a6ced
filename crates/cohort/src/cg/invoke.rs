//! `invoke_one` and `invoke_one_broadcast` (CUDA's `cooperative_groups/details/invoke.h`).
//!
//! | CUDA C++ | Cohort | groups |
//! |---|---|---|
//! | `cg::invoke_one(g, fn, args...)` | [`invoke_one(&g, \|\| fn(args))`](invoke_one) → `Option<R>` (`Some` in the member that ran it) | every group ([`ThreadGroup`]) |
//! | `cg::invoke_one_broadcast(g, fn, args...)` → `R` | [`invoke_one_broadcast(&g, \|\| fn(args))`](invoke_one_broadcast) → `R` in every member | tiles (≤ 32 and large), [`DynTile`], [`CoalescedGroup`] ([`Broadcast`]) |
//!
//! **Which member.** CUDA picks "a single arbitrary thread" (on sm_90, `elect.sync` over the
//! group's mask, which elects its lowest lane). Cohort picks the member of rank 0: for tiles
//! and coalesced groups that is the same lane `elect.sync` elects, and for every group it is
//! deterministic, so the member that ran `f` is the one that got `Some`.
//!
//! **Convergence.** `invoke_one` is a plain `if g.thread_rank() == 0 { f() }`: it has no
//! barrier, so it is defined however many members reach it (the closure runs if rank 0 does).
//! `invoke_one_broadcast` is a collective (a shuffle, or a large tile's barriers after the
//! leader ran `f`): every member must call it at the same site, the
//! [convergence rule](crate::cg#convergence), checked like a shuffle in checked mode and on the
//! CPU device. As in CUDA, `f` must not communicate with the rest of its group (a collective of
//! the group inside `f` is reached by the leader alone: a divergence, reported in checked mode
//! and on the CPU device); it may communicate with threads outside the group.
//!
//! **The result.** `R: DeviceCopy` of at most 32 bytes (CUDA: trivially copyable, ≤ 32 bytes
//! for warp groups, ≤ 8 for larger tiles; Cohort's large tiles move 32 through their shared
//! broadcast slot). It travels word by word from the leader; the other members never make a
//! value of `R` of their own, so any `DeviceCopy` type works (no `Default` needed).

use super::coalesced::CoalescedGroup;
use super::large::LargeTile;
use super::tile::{DynTile, ThreadBlockTile, TileParent};
use super::{ThreadGroup, WarpGroup};
use crate::DeviceCopy;
use crate::raw;

/// `cg::invoke_one(group, fn)`: the member of rank 0 calls `f`; it gets `Some(f())`, the other
/// members `None`. Not a barrier (see the [module docs](self)).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn invoke_one<G: ThreadGroup, R>(group: &G, f: impl FnOnce() -> R) -> Option<R> {
    if group.thread_rank().into() == 0 { Some(f()) } else { None }
}

/// `cg::invoke_one_broadcast(group, fn)`: the member of rank 0 calls `f`, and every member gets
/// its result. A collective: every member calls it at the same site
/// ([convergence rule](crate::cg#convergence)).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn invoke_one_broadcast<G: Broadcast, R: DeviceCopy>(group: &G, f: impl FnOnce() -> R) -> R {
    let v = if group.thread_rank() == 0 { Some(f()) } else { None };
    group.broadcast_leader(v)
}

mod sealed {
    pub trait Sealed {}
}

/// Groups with [`invoke_one_broadcast`]: tiles (≤ 32 threads and large), dynamic tiles and
/// coalesced groups (CUDA's `thread_block_tile` and `coalesced_group`).
pub trait Broadcast: ThreadGroup<Size = u32> + sealed::Sealed {
    /// Every member gets the `Some` value rank 0 passed.
    #[doc(hidden)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn broadcast_leader<R: DeviceCopy>(&self, v: Option<R>) -> R;
}

/// Rank 0's `v` in every member of a warp-level group: one `shfl.sync.idx` per word of `R`
/// from the group's lowest lane (rank 0 in tiles and coalesced groups).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn warp_broadcast<G: WarpGroup, R: DeviceCopy>(g: &G, v: Option<R>) -> R {
    let mask = g.lane_mask();
    crate::check::warp("invoke_one_broadcast", mask);
    let leader = mask.trailing_zeros();
    let mut words = crate::copy::words_of(v);
    let n = size_of::<R>().div_ceil(4);
    // A loop rather than a closure: on the host the engine sees the caller's site.
    let mut i = 0;
    while i < n {
        // SAFETY: every member of the group executes this with the group's mask (the convergence
        // rule, checked above in checked mode); `leader` is a lane of the mask.
        words[i] = unsafe { raw::shfl_sync_idx_b32(mask, words[i], leader, raw::shfl_c(32, false)) };
        i += 1;
    }
    // SAFETY: the words are the leader's: rank 0 passed `Some` (`invoke_one_broadcast`), so
    // they are the bytes of a value of `R` (`words_of`).
    unsafe { crate::copy::from_words(&words) }
}

impl<const N: u32, P: TileParent> sealed::Sealed for ThreadBlockTile<N, P> {}
impl<const N: u32, P: TileParent> Broadcast for ThreadBlockTile<N, P> {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn broadcast_leader<R: DeviceCopy>(&self, v: Option<R>) -> R {
        warp_broadcast(self, v)
    }
}

impl sealed::Sealed for DynTile {}
impl Broadcast for DynTile {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn broadcast_leader<R: DeviceCopy>(&self, v: Option<R>) -> R {
        warp_broadcast(self, v)
    }
}

impl sealed::Sealed for CoalescedGroup {}
impl Broadcast for CoalescedGroup {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn broadcast_leader<R: DeviceCopy>(&self, v: Option<R>) -> R {
        warp_broadcast(self, v)
    }
}

impl<const N: u32, P: ThreadGroup<Size = u32> + Copy> sealed::Sealed for LargeTile<N, P> {}
impl<const N: u32, P: ThreadGroup<Size = u32> + Copy> Broadcast for LargeTile<N, P> {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn broadcast_leader<R: DeviceCopy>(&self, v: Option<R>) -> R {
        self.broadcast_from_leader(v)
    }
}

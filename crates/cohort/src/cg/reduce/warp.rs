//! Warp-scope collectives: tiles of ≤ 32 threads (a butterfly of shuffles, or one
//! `redux.sync`), coalesced groups (rank-relative shuffles), and the `*_scan_update`
//! collectives on any warp-level group.

use core::ops::Add;

use super::{Collective, ReduceOp, plus};
use crate::DeviceCopy;
use crate::atomic::{Atomic, Ordering, Space};
use crate::cg::coalesced::CoalescedGroup;
use crate::cg::tile::{DynTile, ThreadBlockTile, TileParent};
use crate::cg::{ThreadGroup, WarpGroup, shfl};
use crate::raw;

/// Butterfly reduction over a tile of `n` lanes (power of two ≤ 32) with lane mask `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn tile_reduce<T: DeviceCopy, Op: ReduceOp<T>>(mask: u32, n: u32, v: T, op: Op) -> T {
    if (n == 16 || n == 32)
        && let Some(r) = op.redux(mask, v)
    {
        return r;
    }
    let c = raw::shfl_c(n, false);
    let mut x = v;
    let mut off = n / 2;
    while off > 0 {
        // SAFETY: every lane of the tile runs the reduction with the tile's mask.
        let y = unsafe { shfl::bfly(mask, x, off, c) };
        x = op.combine(x, y);
        off /= 2;
    }
    x
}

/// Inclusive scan over a tile of `n` lanes (power of two ≤ 32); `rank` is the lane's rank in
/// the tile.
///
/// Only the lanes of rank ≥ `d` call the op at step `d`: a collective inside the op is reached
/// by part of the tile while the other lanes go on to the next step's shuffle. In checked mode
/// each step after the first is checked like a collective of its own (a warp barrier, then the
/// call's number compared), so those lanes meet the nested collective's check at a check of
/// their own, and the mismatch is reported; a bare `shfl.sync` would not pair with the nested
/// check's warp barrier, and the tile would hang.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn scan_incl_warp<T: DeviceCopy, Op: ReduceOp<T>>(mask: u32, n: u32, rank: u32, v: T, op: Op) -> T {
    let c = raw::shfl_c(n, true);
    let mut x = v;
    let mut d = 1;
    while d < n {
        if d > 1 {
            crate::check::warp("inclusive_scan step", mask);
        }
        // SAFETY: every lane of the tile runs the scan with the tile's mask.
        let y = unsafe { shfl::up(mask, x, d, c) };
        if rank >= d {
            x = op.combine(y, x);
        }
        d *= 2;
    }
    x
}

/// Reduction over any warp-level group through its rank-relative shuffles.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn group_reduce<G: WarpGroup, T: DeviceCopy, Op: ReduceOp<T>>(g: &G, v: T, op: Op) -> T {
    if let Some(mask) = g.redux_mask()
        && let Some(r) = op.redux(mask, v)
    {
        return r;
    }
    let (rank, n) = (g.thread_rank(), g.num_threads());
    let mut x = v;
    let mut d = 1;
    while d < n {
        let y = g.shfl_down(x, d);
        if rank + d < n {
            x = op.combine(x, y);
        }
        d *= 2;
    }
    g.shfl(x, 0)
}

/// Inclusive scan over any warp-level group through its rank-relative shuffles.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn group_scan<G: WarpGroup, T: DeviceCopy, Op: ReduceOp<T>>(g: &G, v: T, op: Op) -> T {
    let (rank, n) = (g.thread_rank(), g.num_threads());
    let mut x = v;
    let mut d = 1;
    while d < n {
        let y = g.shfl_up(x, d);
        if rank >= d {
            x = op.combine(y, x);
        }
        d *= 2;
    }
    x
}

/// A warp-level group's exclusive scan from its inclusive one: the previous rank's value,
/// `T::default()` at rank 0.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn exclusive_from_inclusive<G: WarpGroup, T: DeviceCopy + Default>(group: &G, incl: T) -> T {
    let ex = group.shfl_up(incl, 1);
    if group.thread_rank() == 0 { T::default() } else { ex }
}

impl<const N: u32, P: TileParent> Collective for ThreadBlockTile<N, P> {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn reduce_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("reduce", self.lane_mask());
        tile_reduce(self.lane_mask(), N, v, op)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("inclusive_scan", self.lane_mask());
        scan_incl_warp(self.lane_mask(), N, self.thread_rank(), v, op)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("exclusive_scan", self.lane_mask());
        exclusive_from_inclusive(self, self.inclusive_scan_with(v, op))
    }
}

impl Collective for DynTile {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn reduce_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("reduce", self.lane_mask());
        tile_reduce(self.lane_mask(), self.num_threads(), v, op)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("inclusive_scan", self.lane_mask());
        scan_incl_warp(self.lane_mask(), self.num_threads(), self.thread_rank(), v, op)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("exclusive_scan", self.lane_mask());
        exclusive_from_inclusive(self, self.inclusive_scan_with(v, op))
    }
}

impl Collective for CoalescedGroup {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn reduce_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("reduce", self.lane_mask());
        if self.mask() == u32::MAX { tile_reduce(u32::MAX, 32, v, op) } else { group_reduce(self, v, op) }
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("inclusive_scan", self.lane_mask());
        group_scan(self, v, op)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::warp("exclusive_scan", self.lane_mask());
        exclusive_from_inclusive(self, group_scan(self, v, op))
    }
}

/// Values whose atomics can add (for the `*_scan_update` collectives).
pub trait AtomicAdd: DeviceCopy + Default + Add<Output = Self> {
    /// `a.fetch_add(v)` at device scope, relaxed.
    fn fetch_add_on<S: Space>(a: &Atomic<Self, S>, v: Self) -> Self;
}

macro_rules! atomic_add {
    ($($t:ty)*) => {$(
        impl AtomicAdd for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn fetch_add_on<S: Space>(a: &Atomic<$t, S>, v: $t) -> $t {
                a.fetch_add(v, Ordering::Relaxed)
            }
        }
    )*};
}
atomic_add!(u32 i32 u64 i64 f32 f64);

/// The shared part of the `*_scan_update` collectives: this member's inclusive sum, and the
/// atomic's value before the group's total was added to it (one atomic per group, by the last
/// member, broadcast to all).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn scan_update<G: Collective + WarpGroup, T: AtomicAdd, S: Space>(group: &G, dst: &Atomic<T, S>, value: T) -> (T, T) {
    let incl = group.inclusive_scan_with(value, plus);
    let last = group.num_threads() - 1;
    let mut old = T::default();
    if group.thread_rank() == last {
        old = T::fetch_add_on(dst, incl);
    }
    (incl, group.shfl(old, last))
}

/// `cg::exclusive_scan_update(group, atomic, value)`: an exclusive sum over the group, offset
/// by the atomic's value, which grows by the group's total (one atomic per group). The classic
/// use is carving a shared buffer: each member gets where its part starts.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn exclusive_scan_update<G: Collective + WarpGroup, T: AtomicAdd, S: Space>(
    group: &G,
    dst: &Atomic<T, S>,
    value: T,
) -> T {
    let (incl, old) = scan_update(group, dst, value);
    let ex = group.shfl_up(incl, 1);
    if group.thread_rank() == 0 { old } else { old + ex }
}

/// `cg::inclusive_scan_update(group, atomic, value)`: as [`exclusive_scan_update`], inclusive.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn inclusive_scan_update<G: Collective + WarpGroup, T: AtomicAdd, S: Space>(
    group: &G,
    dst: &Atomic<T, S>,
    value: T,
) -> T {
    let (incl, old) = scan_update(group, dst, value);
    old + incl
}

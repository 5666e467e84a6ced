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

use core::any::TypeId;
use core::ops::{Add, BitAnd, BitOr, BitXor};

use super::GridVec;
use super::coalesced::CoalescedGroup;
use super::large::LargeTile;
use super::tile::{DynTile, ThreadBlockTile, TileParent};
use super::{GridGroup, ThreadBlock, ThreadGroup, WarpGroup};
use crate::DeviceCopy;
use crate::atomic::{Atomic, Ordering, Space};
use crate::raw;
use crate::shared::{SharedSlice, load_words, store_words};
use crate::thread;

/// A binary operation for collectives: one of [`plus`], [`less`], [`greater`], [`bit_and`],
/// [`bit_or`], [`bit_xor`], or any `Fn(T, T) -> T + Copy` closure.
pub trait ReduceOp<T>: Copy {
    /// `a op b`.
    fn combine(self, a: T, b: T) -> T;
    /// The whole reduction in one `redux.sync` over `mask`, where the hardware has it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn redux(self, mask: u32, v: T) -> Option<T> {
        let _ = (mask, v);
        None
    }
}

impl<T, F: Fn(T, T) -> T + Copy> ReduceOp<T> for F {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn combine(self, a: T, b: T) -> T {
        self(a, b)
    }
}

/// Reinterprets `v` as `U` when `T` is `U`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[cfg_attr(not(all(target_arch = "nvptx64", target_feature = "sm_80")), allow(dead_code))]
fn cast<T: 'static + Copy, U: 'static + Copy>(v: T) -> Option<U> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: `T` and `U` are the same type.
        Some(unsafe { core::mem::transmute_copy::<T, U>(&v) })
    } else {
        None
    }
}

/// `redux.sync` for `u32` or `i32` values, given the two instruction forms.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn redux_32<T: 'static + Copy>(
    mask: u32,
    v: T,
    on_u32: unsafe fn(u32, u32) -> u32,
    on_i32: unsafe fn(u32, i32) -> i32,
) -> Option<T> {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    {
        if let Some(x) = cast::<T, u32>(v) {
            // SAFETY: reductions are called by every member of the group with its mask.
            return cast(unsafe { on_u32(mask, x) });
        }
        if let Some(x) = cast::<T, i32>(v) {
            // SAFETY: as above.
            return cast(unsafe { on_i32(mask, x) });
        }
    }
    let _ = (mask, v, on_u32, on_i32);
    None
}

macro_rules! ops {
    ($($(#[$m:meta])* $name:ident: $bound:ident, |$a:ident, $b:ident| $e:expr, $ru:path, $ri:path;)*) => {$(
        $(#[$m])*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;

        impl<T: DeviceCopy + $bound> ReduceOp<T> for $name {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn combine(self, $a: T, $b: T) -> T {
                $e
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn redux(self, mask: u32, v: T) -> Option<T> {
                redux_32(mask, v, $ru, $ri)
            }
        }
    )*};
}

/// `T + T -> T`.
pub trait AddSelf: Add<Output = Self> + Sized {}
impl<T: Add<Output = T>> AddSelf for T {}
/// `T & T -> T`.
pub trait BitAndSelf: BitAnd<Output = Self> + Sized {}
impl<T: BitAnd<Output = T>> BitAndSelf for T {}
/// `T | T -> T`.
pub trait BitOrSelf: BitOr<Output = Self> + Sized {}
impl<T: BitOr<Output = T>> BitOrSelf for T {}
/// `T ^ T -> T`.
pub trait BitXorSelf: BitXor<Output = Self> + Sized {}
impl<T: BitXor<Output = T>> BitXorSelf for T {}

/// `a & b` on `i32` for `redux.sync.and.b32` (bitwise, sign-agnostic).
unsafe fn redux_and_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_and_b32(m, v as u32) as i32 }
}
unsafe fn redux_or_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_or_b32(m, v as u32) as i32 }
}
unsafe fn redux_xor_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_xor_b32(m, v as u32) as i32 }
}
unsafe fn redux_add_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_add_u32(m, v as u32) as i32 }
}

ops! {
    /// `cg::plus`: `a + b` (wrapping for integers, as on the device without overflow checks).
    plus: AddSelf, |a, b| a + b, raw::redux_sync_add_u32, redux_add_i32;
    /// `cg::less`: the smaller (`if b < a { b } else { a }`), as CUDA's `cg::less` returns the
    /// value, not a bool.
    less: PartialOrd, |a, b| if b < a { b } else { a }, raw::redux_sync_min_u32, raw::redux_sync_min_s32;
    /// `cg::greater`: the larger (`if a < b { b } else { a }`).
    greater: PartialOrd, |a, b| if a < b { b } else { a }, raw::redux_sync_max_u32, raw::redux_sync_max_s32;
    /// `cg::bit_and`: `a & b`.
    bit_and: BitAndSelf, |a, b| a & b, raw::redux_sync_and_b32, redux_and_i32;
    /// `cg::bit_or`: `a | b`.
    bit_or: BitOrSelf, |a, b| a | b, raw::redux_sync_or_b32, redux_or_i32;
    /// `cg::bit_xor`: `a ^ b`.
    bit_xor: BitXorSelf, |a, b| a ^ b, raw::redux_sync_xor_b32, redux_xor_i32;
}

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
        let y = unsafe { super::shfl::bfly(mask, x, off, c) };
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
        let y = unsafe { super::shfl::up(mask, x, d, c) };
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

impl<const N: u32, P: ThreadGroup<Size = u32> + Copy> Collective for LargeTile<N, P> {
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn reduce_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        self.reduce_impl(v, op)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        self.scan_impl(v, op, None)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        self.scan_impl(v, op, Some(T::default()))
    }
}

/// Combines, in order, the partials that warps `first..first + count` stored in `slots` with
/// `store_words`; `init` when `count` is 0 (`init` also fixes `T`). The second level of the
/// block and large-tile reductions and scans.
///
/// # Safety
/// Those slots (of the 32 in `slots`) hold `T`s written before a barrier that every caller has
/// passed since.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn fold_warp_slots<T: DeviceCopy, Op: ReduceOp<T>>(
    slots: &SharedSlice<[u32; 8]>,
    first: u32,
    count: u32,
    init: T,
    op: Op,
) -> T {
    let mut acc = init;
    let mut k = 0;
    while k < count {
        // SAFETY: written before the barrier (the caller's contract).
        let p = unsafe { load_words(warp_slot(slots, first + k), init) };
        acc = if k == 0 { p } else { op.combine(acc, p) };
        k += 1;
    }
    acc
}

/// One thread's result of a two-level scan: `incl` is its inclusive scan within its warp,
/// `prefix` the combined totals of the group's warps before its own (ignored in the first
/// warp), and for an exclusive scan `exclusive` is `Some((zero, ex))`, `ex` being the previous
/// lane's `incl` and `zero` rank 0's value.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn finish_two_level_scan<T: DeviceCopy, Op: ReduceOp<T>>(
    op: Op,
    first_warp: bool,
    first_lane: bool,
    prefix: T,
    incl: T,
    exclusive: Option<(T, T)>,
) -> T {
    match exclusive {
        None => {
            if first_warp {
                incl
            } else {
                op.combine(prefix, incl)
            }
        }
        Some((zero, ex)) => match (first_warp, first_lane) {
            (true, true) => zero,
            (true, false) => ex,
            (false, true) => prefix,
            (false, false) => op.combine(prefix, ex),
        },
    }
}

crate::shared! {
    /// One 32-byte partial per warp, for block-level collectives.
    static BLOCK_WARP: [[u32; 8]; 32];
    /// How many times each warp has written its slot of `BLOCK_WARP` (wrapping): see
    /// [`SlotWrites`].
    static BLOCK_WARP_WRITES: [u32; 32];
}

/// The per-warp scratch of the collectives that combine warps' partials through shared memory
/// (block-level, large tiles), guarded against a collective *inside the op*.
///
/// Such a collective combines the partials after a barrier, calling the op between reads of
/// the slots; an op that itself calls a collective of the same scratch (every thread calls the
/// op equally often, so that inner collective is converged and legal) would overwrite the slots
/// the outer one is still reading, and the outer result would silently be wrong. So each warp
/// counts its slot writes, and each thread compares its own warp's count before and after the
/// combining: an inner collective run by this thread wrote this thread's warp's slot (every
/// warp of its group writes its own) and passed a barrier, so the count has changed, and the
/// thread panics (an `Err` from the launch) instead of returning a wrong value.
pub(crate) struct SlotWrites {
    pub(crate) slots: SharedSlice<[u32; 8]>,
    pub(crate) writes: SharedSlice<u32>,
}

impl SlotWrites {
    /// Lane 0's write of warp `w`'s partial `v`, counted.
    ///
    /// # Safety
    /// Only warp `w`'s lane 0 writes its slot, between two barriers of the collective.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(crate) unsafe fn write<T: DeviceCopy>(&self, w: u32, v: T) {
        // SAFETY: the caller's contract.
        unsafe { store_words(warp_slot(&self.slots, w), v) };
        let w = (w % 32) as usize;
        self.writes.store(w, self.writes.load(w).wrapping_add(1));
    }

    /// This thread's warp's count, read after the barrier that follows the writes.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(crate) fn seen(&self) -> u32 {
        self.writes.load((thread::warp_id() % 32) as usize)
    }

    /// Panics if this thread's warp's slot was written since `seen` (by a collective inside
    /// the op).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub(crate) fn check(&self, seen: u32) {
        if self.seen() != seen {
            nested_collective();
        }
    }
}

#[cold]
#[inline(never)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn nested_collective() -> ! {
    panic!(
        "a block-level collective was called inside the op of another one (a block's or large tile's reduce): \
         both use the block's per-warp scratch, and the inner one overwrote the partials the outer one was \
         combining; call it before or after"
    )
}

/// The block-level collectives' scratch.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn block_scratch() -> SlotWrites {
    SlotWrites { slots: BLOCK_WARP.get().as_slice(), writes: BLOCK_WARP_WRITES.get().as_slice() }
}

/// Shared address of warp `w`'s slot in a per-warp scratch array of 32 slots (one per warp a
/// block can have). `w` is below 32 for every warp of a block (1024 threads at most); taking it
/// modulo 32 tells LLVM so, which removes the bounds check and its panic path.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn warp_slot(slots: &SharedSlice<[u32; 8]>, w: u32) -> u32 {
    slots.sub((w % 32) as usize, 1).shared_addr()
}

/// This warp's lanes that exist in the block (all 32, except in a last partial warp).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn warp_in_block(active: u32) -> CoalescedGroup {
    let base = thread::warp_id() * 32;
    let n = active.saturating_sub(base).min(32);
    let mask = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
    // SAFETY: exactly the lanes of this warp whose block rank is below `active` take part,
    // and each of them computes the same mask.
    unsafe { CoalescedGroup::from_mask(mask) }
}

/// Block-level reduction over the threads of rank `< active` (the others pass through and
/// receive the result too). Every thread of the block must call it.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn block_reduce<T: DeviceCopy, Op: ReduceOp<T>>(v: T, op: Op, active: u32) -> T {
    let rank = thread::thread_rank_in_block();
    let scratch = block_scratch();
    if rank < active {
        let part = warp_in_block(active).reduce_with(v, op);
        if raw::laneid() == 0 {
            // SAFETY: this warp's own slot, its lane 0, before the barrier.
            unsafe { scratch.write(thread::warp_id(), part) };
        }
    }
    crate::sync::barrier_unchecked();
    let seen = scratch.seen();
    // SAFETY: the slots of the active warps (at least one: active > 0; at most 32, one per warp
    // of the block), written before the barrier.
    let acc = unsafe { fold_warp_slots(&scratch.slots, 0, active.div_ceil(32), v, op) };
    // The op may have run a block-level collective of its own over these slots.
    scratch.check(seen);
    crate::sync::barrier_unchecked();
    acc
}

/// Block-level scan; `exclusive` holds rank 0's value for an exclusive scan.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn block_scan<T: DeviceCopy, Op: ReduceOp<T>>(v: T, op: Op, exclusive: Option<T>) -> T {
    let size = thread::block_size();
    let warp = warp_in_block(size);
    let incl = warp.inclusive_scan_with(v, op);
    let scratch = block_scratch();
    if warp.thread_rank() + 1 == warp.num_threads() {
        // SAFETY: this warp's own slot, one lane, before the barrier.
        unsafe { scratch.write(thread::warp_id(), incl) };
    }
    crate::sync::barrier_unchecked();
    let seen = scratch.seen();
    let mine = thread::warp_id();
    // SAFETY: totals of the warps before this one (fewer than 32), written before the barrier.
    let prefix = unsafe { fold_warp_slots(&scratch.slots, 0, mine, v, op) };
    scratch.check(seen);
    crate::sync::barrier_unchecked();
    let exclusive = exclusive.map(|zero| (zero, warp.shfl_up(incl, 1)));
    finish_two_level_scan(op, mine == 0, warp.thread_rank() == 0, prefix, incl, exclusive)
}

impl Collective for ThreadBlock {
    /// Block-wide reduction; every thread gets the result. Uses 1 KiB of library-allocated
    /// shared memory and two block barriers.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn reduce_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::block("reduce");
        block_reduce(v, op, thread::block_size())
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::block("inclusive_scan");
        block_scan(v, op, None)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::block("exclusive_scan");
        block_scan(v, op, Some(T::default()))
    }
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

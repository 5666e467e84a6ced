//! Block-scope collectives: each warp's partial through shared scratch, then every thread
//! combines the partials (any block size). The two-level pieces ([`SlotWrites`],
//! [`fold_warp_slots`], [`finish_two_level_scan`]) serve large tiles too.

use super::{Collective, ReduceOp};
use crate::DeviceCopy;
use crate::cg::coalesced::CoalescedGroup;
use crate::cg::{ThreadBlock, ThreadGroup, WarpGroup};
use crate::raw;
use crate::shared::{SharedSlice, load_words, store_words};
use crate::thread;

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
pub(super) fn block_reduce<T: DeviceCopy, Op: ReduceOp<T>>(v: T, op: Op, active: u32) -> T {
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
        crate::check::block_collective("reduce");
        block_reduce(v, op, thread::block_size())
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn inclusive_scan_with<T: DeviceCopy, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::block_collective("inclusive_scan");
        block_scan(v, op, None)
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn exclusive_scan_with<T: DeviceCopy + Default, Op: ReduceOp<T>>(&self, v: T, op: Op) -> T {
        crate::check::block_collective("exclusive_scan");
        block_scan(v, op, Some(T::default()))
    }
}

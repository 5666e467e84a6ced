//! Block reduce and scan over `N` items per thread, keeping the elements' order (the ops need
//! only be associative): a thread's items in sequence, then the warp's lanes by shuffles, then
//! the warps' totals through shared memory.

use crate::DeviceCopy;
use crate::cg::{self, Collective, ReduceOp, ThreadBlock, ThreadBlockTile, ThreadGroup, WarpGroup};
use crate::shared::SharedSlice;
use crate::thread;

crate::shared! {
    /// One 32-byte partial per warp (the block collectives over items).
    static ITEMS_WARP: [[u32; 8]; 32];
    /// Whether a warp's partial holds a value (`reduce_items` over partial tiles).
    static ITEMS_HAS: [u32; 32];
    /// The look-back callback's result, for the whole block.
    static ITEMS_PREFIX: [[u32; 8]; 1];
}

/// `a op b`, or `b` when there is no `a`.
#[inline(always)]
pub(crate) fn cat<T: DeviceCopy, Op: ReduceOp<T>>(op: Op, a: Option<T>, b: T) -> T {
    match a {
        Some(a) => op.combine(a, b),
        None => b,
    }
}

/// Stores `v` in slot `w` (of 32 32-byte slots) as 32-bit words.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn put<T: DeviceCopy>(slots: &SharedSlice<[u32; 8]>, w: usize, v: T) {
    const { assert!(size_of::<T>() <= 32, "the block collectives over items move at most 32 bytes per value") };
    crate::assert_no_padding::<T>();
    let mut slot = [0u32; 8];
    // SAFETY: `T` is at most 32 bytes (asserted above) and has no padding: its bytes fill the
    // first `size_of::<T>()` bytes of the slot.
    unsafe {
        core::ptr::copy_nonoverlapping(&v as *const T as *const u8, slot.as_mut_ptr() as *mut u8, size_of::<T>())
    };
    slots.store(w % 32, slot);
}

/// The `T` that [`put`] stored in slot `w`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn get<T: DeviceCopy>(slots: &SharedSlice<[u32; 8]>, w: usize) -> T {
    let slot = slots.load(w % 32);
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: the slot's first `size_of::<T>()` bytes are a `T`'s (or, if never written, any
    // bytes: every bit pattern is a valid `DeviceCopy` value).
    unsafe {
        core::ptr::copy_nonoverlapping(slot.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, size_of::<T>());
        out.assume_init()
    }
}

/// The warp of the calling thread, and the block.
#[inline(always)]
#[track_caller]
pub(crate) fn warp_of_block(what: &'static str) -> (ThreadBlock, ThreadBlockTile<32, ThreadBlock>) {
    let block = cg::this_thread_block();
    assert!(
        thread::block_size().is_multiple_of(32),
        "{what}: the block collectives over items need a block size that is a multiple of 32"
    );
    let warp = cg::tiled_partition::<32>(&block);
    (block, warp)
}

/// Combines the lanes' values in lane order, skipping lanes without one (`has == false`);
/// every lane gets the result (and whether there was any value).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn warp_reduce_ordered<T: DeviceCopy, Op: ReduceOp<T>>(
    warp: &ThreadBlockTile<32, ThreadBlock>,
    v: T,
    has: bool,
    op: Op,
) -> (T, bool) {
    let lane = warp.thread_rank();
    let (mut x, mut h) = (v, has as u32);
    let mut d = 1;
    while d < 32 {
        let y = warp.shfl_down(x, d);
        let yh = warp.shfl_down(h, d);
        if lane + d < 32 && yh != 0 {
            x = if h != 0 { op.combine(x, y) } else { y };
            h = 1;
        }
        d *= 2;
    }
    (warp.shfl(x, 0), warp.shfl(h, 0) != 0)
}

/// Block-wide reduction of every thread's first `valid` items (`valid <= N`; the rest are
/// ignored), in the order of the threads' ranks and of each thread's items: every thread gets
/// the result, or `None` if no thread had a valid item. Every thread of the block must call
/// it (block size a multiple of 32); `T` is at most 32 bytes.
#[inline(always)]
#[track_caller]
#[must_use]
pub fn reduce_items<T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(items: &[T; N], valid: usize, op: Op) -> Option<T> {
    let (block, warp) = warp_of_block("reduce_items");
    let mut acc = items[0];
    let mut j = 1;
    while j < N {
        if j < valid {
            acc = op.combine(acc, items[j]);
        }
        j += 1;
    }
    let (w, wh) = warp_reduce_ordered(&warp, acc, valid > 0, op);
    let (slots, has) = (ITEMS_WARP.get().as_slice(), ITEMS_HAS.get().as_slice());
    let me = thread::warp_id() as usize;
    block.sync();
    if warp.thread_rank() == 0 {
        put(&slots, me, w);
        has.store(me % 32, wh as u32);
    }
    block.sync();
    let mut total: Option<T> = None;
    let mut k = 0;
    while k < warp.meta_group_size() as usize {
        if has.load(k % 32) != 0 {
            total = Some(cat(op, total, get(&slots, k)));
        }
        k += 1;
    }
    total
}

/// What [`scan_items`] gives each thread: where its items stand in the tile.
#[derive(Clone, Copy, Debug)]
pub struct ScanPrefix<T> {
    /// The combination of every item before this thread's first one (in the tile, preceded by
    /// the callback's prefix in [`scan_items_with_prefix`]); `None` when nothing precedes it.
    pub prefix: Option<T>,
    /// The combination of the whole tile's items (every thread's, in order; without the
    /// callback's prefix).
    pub aggregate: T,
}

impl<T: DeviceCopy> ScanPrefix<T> {
    /// The inclusive scan of this thread's items: `out[j]` = prefix op `items[0]` op … op
    /// `items[j]`.
    #[inline(always)]
    #[must_use]
    pub fn inclusive<Op: ReduceOp<T>, const N: usize>(&self, items: &[T; N], op: Op) -> [T; N] {
        let mut run = self.prefix;
        core::array::from_fn(|j| {
            let v = cat(op, run, items[j]);
            run = Some(v);
            v
        })
    }

    /// The exclusive scan of this thread's items: `out[j]` = prefix op `items[0]` op … op
    /// `items[j - 1]`, and `first` where nothing precedes an item (the scan's very first
    /// element; pass the scan's initial value as the callback's prefix to have one).
    #[inline(always)]
    #[must_use]
    pub fn exclusive<Op: ReduceOp<T>, const N: usize>(&self, items: &[T; N], op: Op, first: T) -> [T; N] {
        let mut run = self.prefix;
        core::array::from_fn(|j| {
            let out = run.unwrap_or(first);
            run = Some(cat(op, run, items[j]));
            out
        })
    }
}

/// Block-wide scan of the tile held in the blocked arrangement (thread `t`'s `items` are
/// elements `t * N ..` of the tile): each thread gets what precedes its first item and the
/// tile's aggregate ([`ScanPrefix`]); `inclusive`/`exclusive` then give its outputs. Every
/// thread of the block must call it (block size a multiple of 32); `T` is at most 32 bytes.
#[inline(always)]
#[track_caller]
#[must_use]
pub fn scan_items<T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(items: &[T; N], op: Op) -> ScanPrefix<T> {
    scan_items_impl::<T, Op, N, false>(items, op, |_, _| None)
}

/// [`scan_items`] with a tile prefix: after the block has the tile's aggregate, the block's
/// first warp (all its 32 lanes) calls `prefix(warp, aggregate)`, and lane 0's answer (the
/// combination of everything before the tile, or `None`) precedes every thread's prefix. This
/// is where a single-pass device scan looks back at the tiles before it (CUB's
/// `BlockPrefixCallbackOp`).
#[inline(always)]
#[track_caller]
#[must_use]
pub fn scan_items_with_prefix<T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(
    items: &[T; N],
    op: Op,
    prefix: impl FnOnce(&ThreadBlockTile<32, ThreadBlock>, T) -> Option<T>,
) -> ScanPrefix<T> {
    scan_items_impl::<T, Op, N, true>(items, op, prefix)
}

/// [`scan_items_with_prefix`]; without `WITH_PREFIX`, [`scan_items`]: no callback and none of
/// its two barriers (the prefix's slot is neither written nor read; the warps' slots are
/// written again only after the next collective's first barrier, which every thread reaches
/// after its reads here).
#[inline(always)]
#[track_caller]
fn scan_items_impl<T: DeviceCopy, Op: ReduceOp<T>, const N: usize, const WITH_PREFIX: bool>(
    items: &[T; N],
    op: Op,
    prefix: impl FnOnce(&ThreadBlockTile<32, ThreadBlock>, T) -> Option<T>,
) -> ScanPrefix<T> {
    let (block, warp) = warp_of_block("scan_items");
    let mut total = items[0];
    let mut j = 1;
    while j < N {
        total = op.combine(total, items[j]);
        j += 1;
    }
    let lane = warp.thread_rank();
    let incl = warp.inclusive_scan_with(total, op);
    let before_in_warp = warp.shfl_up(incl, 1);
    let slots = ITEMS_WARP.get().as_slice();
    let me = thread::warp_id() as usize;
    block.sync();
    if lane == 31 {
        put(&slots, me, incl);
    }
    block.sync();
    let nwarps = warp.meta_group_size();
    let (warps_before, aggregate) = if size_of::<T>() <= 4 {
        // Each thread combines the warps' totals from their slots, one by one.
        let mut before: Option<T> = None;
        let mut aggregate = incl;
        let mut k = 0;
        while k < nwarps as usize {
            let w: T = get(&slots, k);
            if k < me {
                before = Some(cat(op, before, w));
            }
            aggregate = if k == 0 { w } else { op.combine(aggregate, w) };
            k += 1;
        }
        (before, aggregate)
    } else {
        // Wider values: the warps' totals across the lanes (lane `l` holds warp `l`'s; the
        // lanes past the last warp a copy of warp 0's, which only those lanes' results
        // combine), scanned by shuffles, the same few instructions whatever the number of
        // warps. Measured on an H200 (8 warps): the shuffles made the scan by key's 8-byte
        // block scan 10 % faster and the `u32` scan 9 % slower (4 more registers: 5 blocks a
        // multiprocessor became 4), so values of at most 4 bytes keep the loop.
        let totals = warp.inclusive_scan_with(get::<T>(&slots, if lane < nwarps { lane as usize } else { 0 }), op);
        let before = if me == 0 { None } else { Some(warp.shfl(totals, me as u32 - 1)) };
        (before, warp.shfl(totals, nwarps - 1))
    };
    let mut mine = if lane == 0 { warps_before } else { Some(cat(op, warps_before, before_in_warp)) };
    if !WITH_PREFIX {
        return ScanPrefix { prefix: mine, aggregate };
    }
    // The tile prefix, from the first warp, for every thread.
    let pslot = ITEMS_PREFIX.get().as_slice();
    if me == 0 {
        let p = prefix(&warp, aggregate);
        if lane == 0 {
            let (v, has) = match p {
                Some(v) => (v, 1u32),
                None => (aggregate, 0),
            };
            put(&pslot, 0, v);
            ITEMS_HAS.get().store(0, has);
        }
    }
    block.sync();
    if ITEMS_HAS.get().load(0) != 0 {
        let p: T = get(&pslot, 0);
        mine = Some(match mine {
            Some(m) => op.combine(p, m),
            None => p,
        });
    }
    block.sync();
    ScanPrefix { prefix: mine, aggregate }
}

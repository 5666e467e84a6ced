//! Select, partition, unique and the heads of run-length encoding: one tile per block, the
//! selected items counted, their positions from a single-pass scan of the counts (decoupled
//! look-back over [`Counts`] slots), then compacted in shared memory and written coalesced.

use super::scan::{Counts, draw_tile, look_back};
use crate::DeviceCopy;
use crate::atomic::AtomicU64;
use crate::block;
use crate::cg::{self, ThreadGroup};
use crate::shared::SharedSlice;
use crate::slice::DisjointSlice;
use crate::thread::{self, Scattered};

/// Threads per block of the select kernels.
pub const SELECT_BLOCK: u32 = 256;

/// Items per thread of the select kernels for `T`: 64 bytes of items per thread (16 `u32`s,
/// 8 `u64`s), at least one; the tile's shared staging is `SELECT_BLOCK * 64` bytes (16 KiB).
#[must_use]
pub const fn select_items<T>() -> usize {
    let s = if size_of::<T>() == 0 { 1 } else { size_of::<T>() };
    let n = 64 / s;
    if n == 0 { 1 } else { n }
}

/// The length (in `u64`s) of a select's state for `n` elements in tiles of `tile_len`: the tile
/// counter, then one status word per tile.
#[must_use]
pub const fn select_state_len(n: usize, tile_len: usize) -> usize {
    1 + n.div_ceil(tile_len)
}

crate::shared! {
    /// The tile's prefix (items selected before it), from the look-back, for the whole block.
    static SELECT_BEFORE: [u64; 1];
}

/// Where a select writes.
#[derive(Debug)]
pub struct SelectOut<'a, T> {
    /// The selected items, in input order, from element 0; with `partition`, the rejected ones
    /// too, from the last element backwards (CUB's `DevicePartition::If`).
    pub items: DisjointSlice<'a, T, Scattered>,
    /// Whether rejected items are written too (a partition).
    pub partition: bool,
    /// If given, the input index of each selected item, beside it (run-length encoding: the
    /// run heads' offsets).
    pub indices: Option<DisjointSlice<'a, u64, Scattered>>,
    /// Element 0: how many items were selected (written by the last tile's first thread).
    pub count: DisjointSlice<'a, u64, Scattered>,
}

/// Which of this thread's items `flags` selects: for [`select_tile`]'s `flags_of`, the
/// predicate form (`DeviceSelect::If`).
#[inline(always)]
#[must_use]
pub fn flags_if<T: DeviceCopy, const N: usize>(items: &[T; N], pred: impl Fn(&T) -> bool) -> [bool; N] {
    let mut f = [false; N];
    let mut j = 0;
    while j < N {
        f[j] = pred(&items[j]);
        j += 1;
    }
    f
}

/// The heads of runs of equal items (`DeviceSelect::Unique`): item `j` of this thread (input
/// element `first + j`) is selected when it is the input's first element or differs from the
/// element before it (`!=`: a NaN is a run of its own, `-0.0` continues a run of `0.0`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn flags_unique<T: DeviceCopy + PartialEq, const N: usize>(input: &[T], items: &[T; N], first: usize) -> [bool; N] {
    let mut f = [false; N];
    let before = match first.checked_sub(1) {
        Some(p) => input.get(p).copied(),
        None => None,
    };
    f[0] = match before {
        Some(b) => b != items[0],
        None => true,
    };
    let mut j = 1;
    while j < N {
        f[j] = items[j] != items[j - 1];
        j += 1;
    }
    f
}

/// One tile of a device-wide select: the items of tile `t` (drawn from `state`'s counter) that
/// `flags_of(items, t, first)` flags (the calling thread holds input elements `first ..
/// first + N` in the blocked arrangement, as [`block::load_blocked`] of tile `t` gives them;
/// flags past the input's end are ignored) go to `out.items`
/// in input order, after every item selected in earlier tiles; with `out.partition` the others
/// go to the back, last first. The last tile writes the number selected to `out.count[0]`.
///
/// Launch contract (the host API keeps it): one block per tile of `block_size() * N`
/// elements, blocks of a size that is a multiple of 32, dynamic shared memory for at least
/// `block_size() * N` `T`s (`smem`), `state` at least [`select_state_len`] words and **all
/// zero** before the launch, used by this launch alone; `out.items` (and `out.indices`) at
/// least as long as the input for a partition, as the number selected otherwise. Broken, the
/// results are wrong, or the kernel panics; writes past the outputs' ends are skipped.
///
/// # Safety
/// `state` is all zero before the launch and no other launch uses it meanwhile, and nothing
/// else in the launch writes the outputs: the positions come from the scan of the tiles'
/// counts, which gives every selected (and rejected) item a position of its own only when the
/// counter starts at zero and the status slots start empty.
#[inline(always)]
#[track_caller]
pub unsafe fn select_tile<T: DeviceCopy, const N: usize>(
    input: &[T],
    flags_of: impl FnOnce(&[T; N], u64, usize) -> [bool; N],
    mut out: SelectOut<'_, T>,
    state: &[AtomicU64],
    smem: &SharedSlice<T>,
) {
    const { assert!(N <= 64, "select: at most 64 items per thread (the flags are the bits of a u64)") };
    let bs = thread::block_size() as usize;
    let tile_len = bs * N;
    let n = input.len();
    let tiles = n.div_ceil(tile_len);
    assert!(state.len() >= select_state_len(n, tile_len), "select: the state holds fewer words than select_state_len");
    assert!(smem.len() >= tile_len, "select: the dynamic shared memory holds fewer than block_size() * N items");
    let (counter, slots) = state.split_at(1);
    let status = Counts { slots: &slots[..tiles] };
    let id = draw_tile(&counter[0]);
    if id >= tiles {
        return;
    }
    let rank = thread::thread_rank_in_block() as usize;
    let base = id * tile_len;
    let first = base + rank * N;
    let valid_in_tile = (n - base).min(tile_len);
    let fill = if valid_in_tile == tile_len { super::scan::placeholder() } else { input[0] };
    let (items, valid) = block::load_blocked_coalesced::<T, N>(input, id as u64, fill);
    let raw = flags_of(&items, id as u64, first);
    // The flags as the bits of one word (bit `j`: item `j`), only items in the input: a count
    // is one population count, and no flag takes a predicate register (`[bool; N]` cost about
    // eight instructions an item, moving predicates in and out of registers). Tile-local
    // counts and positions are `u32` (a tile holds at most 1024 threads × 64 items), global
    // positions `usize`.
    let in_input = if valid >= 64 { u64::MAX } else { (1u64 << valid) - 1 };
    let mut bits = 0u64;
    crate::unroll::<N>(|j| bits |= (raw[j] as u64) << j);
    bits &= in_input;
    let mine = bits.count_ones();
    // Tile-local exclusive prefix of the counts, the tile's count, then the tile's prefix.
    let local = block::scan_items(&[mine], |a: u32, b: u32| a.wrapping_add(b));
    let in_tile = local.aggregate;
    let local_before = local.prefix.unwrap_or(0);
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let shared_before = SELECT_BEFORE.get();
    if thread::warp_id() == 0 {
        let plus = |a: u64, b: u64| a.wrapping_add(b);
        let before = look_back(&warp, &status, id, in_tile as u64, None, plus).unwrap_or(0);
        if warp.thread_rank() == 0 {
            shared_before.store(0, before);
        }
    }
    // Compact into shared memory: selected items at their tile rank, rejected ones (a
    // partition) after all selected ones, in order.
    let tile_len32 = tile_len as u32;
    let partition = out.partition;
    // Positions below `tile_len` (the block scan's counts are exact; checked without a
    // panic path, so that the loop unrolls and `items` stays in registers).
    let mut s = local_before;
    let mut r = (rank * N) as u32 - local_before;
    crate::unroll::<N>(|j| {
        // Counters bumped by arithmetic, not in branches: the compiler kept them in local
        // memory when each branch incremented its own.
        let take = (bits >> j) & 1 != 0;
        let reject = partition && !take && (in_input >> j) & 1 != 0;
        let at = if take { s } else { in_tile + r };
        if (take || reject) && at < tile_len32 {
            // SAFETY: `at < tile_len <= smem.len()` (asserted above).
            unsafe { smem.store_unchecked(at as usize, items[j]) };
        }
        s += take as u32;
        r += reject as u32;
    });
    block.sync();
    let before = shared_before.load(0) as usize;
    let rejected_before = base - before;
    let len = out.items.len();
    let dst = out.items.as_mut_ptr();
    let sel_in_tile = in_tile as usize;
    let limit = if partition { valid_in_tile as u32 } else { in_tile };
    // Whether every selected item of the tile lands inside `out.items` (then no check per item).
    let selected_fit = before.checked_add(sel_in_tile).is_some_and(|end| end <= len);
    // Item `k = rank + j * block_size()` of the compacted tile, `j < N` (`limit <= tile_len`).
    crate::unroll::<N>(|j| {
        let k = rank as u32 + j as u32 * bs as u32;
        if k < limit {
            let (at, fits) = if k < in_tile {
                (before + k as usize, selected_fit)
            } else {
                (n.wrapping_sub(1 + rejected_before + (k - in_tile) as usize), false)
            };
            if fits || at < len {
                // SAFETY: in bounds (checked, or inside `before .. before + sel_in_tile <=
                // len`). Disjoint: the caller's contract makes the scan exact, so selected
                // item `k` of this tile goes to `before + k`, below the next tile's `before`,
                // and rejected item `q` to `n - 1 - (rejected_before + q)`, above every
                // selected position (`before + sel_in_tile <= base + valid <= n - rejected
                // after`); within the block, `k` runs over distinct values per thread.
                // Shared: `k < limit <= tile_len <= smem.len()`.
                unsafe { dst.add(at).write(smem.load_unchecked(k as usize)) };
            }
        }
    });
    if let Some(idx) = &mut out.indices {
        let len = idx.len();
        let dst = idx.as_mut_ptr();
        let mut at = before + local_before as usize;
        crate::unroll::<N>(|j| {
            if (bits >> j) & 1 != 0 {
                if at < len {
                    // SAFETY: in bounds (checked); disjoint as the items' positions above
                    // (the same positions, each selected item's own).
                    unsafe { dst.add(at).write((first + j) as u64) };
                }
                at += 1;
            }
        });
    }
    if id == tiles - 1 && rank == 0 && !out.count.is_empty() {
        // SAFETY: one thread of the launch (the last tile's first) writes element 0.
        unsafe { *out.count.get_unchecked_mut(0) = (before + sel_in_tile) as u64 };
    }
}

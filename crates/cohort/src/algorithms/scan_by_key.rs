//! Single-pass scan by key (CUB's `DeviceScan::InclusiveScanByKey` / `ExclusiveScanByKey`):
//! the scan restarts at every **segment head**, an element whose key differs (`!=`) from the
//! one before it. The same decoupled look-back as the plain scan (see the [module
//! docs](super)), with two changes:
//!
//! - **Inside a tile** each thread folds its items into a (flags, value) [`Piece`] — the value
//!   since its last head, and whether it has one — and the block scans the pieces with the
//!   segmented operator ([`piece_op`]: a head on the right drops the left's value), which is
//!   associative whenever `op` is.
//! - **Across tiles** the look-back carries plain values. A tile that holds a head publishes
//!   its value from its last head to its end as its **inclusive prefix** at once, before it
//!   looks back (nothing after its last head depends on earlier tiles), and looks back only if
//!   its first element is not a head; a tile without a head publishes its aggregate and looks
//!   back as a plain scan does ([`look_back_by_key`]). Forward progress is the plain scan's: a
//!   tile waits only for tiles with smaller ids.
//!
//! Values are at most 24 bytes with a size that is a multiple of 4 (a [`Piece`] is two `u32`s
//! and the value, and the block scan moves at most 32 bytes; a larger type does not compile);
//! keys any `DeviceCopy + PartialEq`.

use crate::DeviceCopy;
use crate::atomic::AtomicU64;
use crate::block::{self, Tile, cat, load_blocked, store_blocked_valid};
use crate::cg::{ReduceOp, WarpGroup};
use crate::slice::DisjointSlice;
use crate::thread::{self, Blocked};

use super::scan::{Status, draw_tile, look_back_by_key, placeholder, scan_state_len, slot_words};
use super::segmented_reduce::{HAS, Piece, START, piece_op};

/// Items per thread of the built-in scan-by-key kernels (keys and values both in registers).
pub const SCAN_BY_KEY_ITEMS: usize = 8;

/// One tile of a single-pass scan by key of `input` into `out` with `op` (associative; the
/// order of elements is kept), tiles of `block_size() * N` elements: a segment is a maximal
/// run of consecutive equal `keys`. `init`: `Some(x)` for an **exclusive** scan (`out[i] = x`
/// at a segment's first element, else `x op in[h] op … op in[i - 1]` from the segment's first
/// element `h`), `None` for an **inclusive** one (`out[i] = in[h] op … op in[i]`). `n` is the
/// shortest of `keys`, `input` and `out`.
///
/// Launch contract (the host API keeps it), as [`scan_tile`](super::scan_tile)'s: one block
/// per tile, blocks of a size that is a multiple of 32, `state` at least [`scan_state_len`]
/// words for `T` and **all zero** before the launch, used by this launch alone. Broken, the
/// results are wrong or the kernel panics after its bounded wait (never an out-of-bounds
/// access nor a race).
///
/// # Safety
/// Nothing else in the launch writes `out` (the tiles are numbered by the state's counter, as
/// in [`scan_tile`](super::scan_tile)).
#[inline(always)]
#[track_caller]
pub unsafe fn scan_by_key_tile<K: DeviceCopy + PartialEq, T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(
    keys: &[K],
    input: &[T],
    out: &mut DisjointSlice<'_, T, Blocked<N>>,
    state: &[AtomicU64],
    init: Option<T>,
    op: Op,
) {
    let tile_len = thread::block_size() as usize * N;
    let n = input.len().min(keys.len()).min(out.len());
    let tiles = n.div_ceil(tile_len);
    assert!(
        state.len() >= scan_state_len::<T>(n, tile_len),
        "scan by key: the state holds fewer words than scan_state_len"
    );
    let (counter, slots) = state.split_at(1);
    let status = Status { slots: &slots[..tiles * slot_words::<T>()] };
    let id = draw_tile(&counter[0]);
    if id >= tiles {
        return;
    }
    // SAFETY: the counter hands each number out once (it only grows: `fetch_add`), and only
    // tiles it hands out write `out` in this launch (the caller's contract); every block of
    // the launch has one size.
    let tile = unsafe { Tile::new_unchecked(id as u64) };
    let base = id * tile_len;
    let valid = (n - base).min(tile_len);
    // Past the end of a last partial tile, copies of the first element (never stored; they
    // only enter the last tile's values, which no tile reads).
    let full = valid == tile_len;
    let (items, _) = load_blocked::<T, N>(input, id as u64, if full { placeholder() } else { input[0] });
    let (ks, _) = load_blocked::<K, N>(keys, id as u64, if full { placeholder() } else { keys[0] });
    let first = base + thread::thread_rank_in_block() as usize * N;
    // Whether each item starts a segment: the first element of all, or a key unlike the one
    // before (the thread's first item against the element before it, in global memory).
    let heads: [bool; N] = core::array::from_fn(|j| {
        if j > 0 {
            ks[j - 1] != ks[j]
        } else if first == 0 || first >= n {
            true
        } else {
            keys[first - 1] != ks[0]
        }
    });
    let mut mine = Piece { bits: HAS | if heads[0] { START } else { 0 }, pad: 0, v: items[0] };
    crate::unroll::<N>(|j| {
        if j > 0 {
            if heads[j] {
                mine.v = items[j];
                mine.bits |= START;
            } else {
                mine.v = op.combine(mine.v, items[j]);
            }
        }
    });
    let h0 = heads[0] as u32;
    let scanned =
        block::scan_items_with_prefix(&[mine], piece_op(op), |warp, aggregate: Piece<T>| {
            // Whether the tile's first element (thread 0's first item) starts a segment.
            let tile_starts = warp.shfl(h0, 0) != 0;
            look_back_by_key(warp, &status, id, aggregate.v, aggregate.bits & START != 0, !tile_starts, op)
                .map(|v| Piece { bits: HAS, pad: 0, v })
        });
    // What precedes the thread's first item in its segment (if it is not a head).
    let mut run: Option<T> = match scanned.prefix {
        Some(p) if p.bits & HAS != 0 => Some(p.v),
        _ => None,
    };
    let outs: [T; N] = core::array::from_fn(|j| {
        if heads[j] {
            run = None;
        }
        let before = run;
        let incl = cat(op, before, items[j]);
        run = Some(incl);
        match init {
            Some(x) => match before {
                Some(b) => op.combine(x, b),
                None => x,
            },
            None => incl,
        }
    });
    store_blocked_valid(out, &tile, &outs, valid);
}

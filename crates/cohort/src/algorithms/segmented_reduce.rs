//! Device segmented reduce (CUB's `DeviceSegmentedReduce`): `out[s] = init op input[offsets[s]]
//! op … op input[offsets[s + 1] - 1]` for every segment `s`, at the same speed whatever the
//! segments' lengths.
//!
//! **Design.** CUB gives each segment a block, which leaves most of the GPU idle when there are
//! few long segments (and a block is too much for a short one). Here the work is cut by the
//! *elements*, not by the segments, in two launches:
//!
//! 1. [`segmented_reduce_chunk`], one block per **chunk** of `block_size() * N` consecutive
//!    elements (whatever segments they belong to): the block loads its chunk (blocked, 16-byte
//!    vectors), finds with two binary searches of `offsets` which segments start in it, and
//!    reduces every *piece* (the chunk's run of one segment) at once with one block scan of
//!    (flag, value) pairs, the segmented scan operator (a chunk inside one segment, the common
//!    case for long segments, is a plain block reduction). A piece that is a whole segment is
//!    written to `out[s]` here; the chunk's first piece, when its segment started in an earlier
//!    chunk, to `head[chunk]`; its last piece, when its segment goes on past the chunk, to
//!    `tail[chunk]`.
//! 2. [`segmented_reduce_fixup`], a warp per 32 segments: each lane writes `init` for its
//!    segment if it is empty; each segment that spans chunks `c0 < c1` is combined by the
//!    whole warp: `init op tail[c0] op head[c0 + 1] op … op head[c1]` (interior chunks' heads
//!    are the whole chunk's reduction).
//!
//! Every element is read once, every segment's result written once; the partials are two
//! values per chunk (1/2048 of the input for 4-byte elements). The operator need only be
//! associative: pieces are combined in the elements' order.
//!
//! **Offsets.** `offsets` holds `m + 1` ascending positions (segment `s` is `offsets[s] ..
//! offsets[s + 1]`), each clamped to `input.len()`; a segment whose end is before its start is
//! empty. Offsets that do not ascend give unspecified results (a segment may be left
//! unwritten), never an access out of bounds and never two writers of one element: who
//! writes `out[s]` depends on `offsets[s]` and `offsets[s + 1]` alone (the chunk that holds
//! `offsets[s]` when the segment ends in that chunk; else the fix-up).

use crate::DeviceCopy;
use crate::block::{self, cat, load_blocked};
use crate::cg::{ReduceOp, ThreadGroup, WarpGroup};
use crate::slice::DisjointSlice;
use crate::thread::{self, Scattered};

/// Threads per block of the segmented reduce's chunk kernel.
pub const SEG_BLOCK: u32 = 256;
/// Bytes per thread of a chunk (four 16-byte vectors): `N = SEG_BYTES / size_of::<T>()`.
pub const SEG_BYTES: usize = 64;

crate::shared! {
    /// Per warp of the chunk kernel: which of its threads' first items start a piece.
    static SEG_FIRST_STARTS: [u32; 32];
}

/// Bits of a [`Piece`].
pub(super) const HAS: u32 = 1;
pub(super) const START: u32 = 2;

/// An element of the segmented scan: a value (if `HAS`) and whether a segment starts in the
/// range it covers (`START`; then `v` covers only the range from the last start). Also the
/// scan by key's (see [`scan_by_key_tile`](super::scan_by_key_tile)).
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Piece<T> {
    pub(super) bits: u32,
    pub(super) pad: u32,
    pub(super) v: T,
}

/// The segmented scan operator over [`Piece`]s: `a` then `b`, where a start in `b` drops `a`'s
/// value (associative whenever `op` is).
#[inline(always)]
pub(super) fn piece_op<T: DeviceCopy, Op: ReduceOp<T>>(op: Op) -> impl Fn(Piece<T>, Piece<T>) -> Piece<T> + Copy {
    move |a: Piece<T>, b: Piece<T>| {
        if b.bits & HAS == 0 {
            a
        } else if a.bits & HAS == 0 {
            b
        } else {
            Piece { bits: a.bits | b.bits, pad: 0, v: if b.bits & START != 0 { b.v } else { op.combine(a.v, b.v) } }
        }
    }
}

// SAFETY: `#[repr(C)]`, two `u32`s then a `DeviceCopy` `T`: valid for every bit pattern, no
// references; `__NO_PADDING` fails to compile for a `T` that would leave padding (size not a
// multiple of its alignment up to 8, or an alignment above 8).
unsafe impl<T: DeviceCopy> DeviceCopy for Piece<T> {
    const __NO_PADDING: () = {
        assert!(
            size_of::<Self>() == 8 + size_of::<T>(),
            "segmented reduce: the element type leaves padding after two u32s (its size must be a multiple of 4 and of its alignment)"
        );
        T::__NO_PADDING
    };
}

/// Advances `cnt` past the offsets of `offsets[cnt..c_hi]` at most `i` (ascending offsets: those
/// starting a segment at or before item `i`); whether it moved, i.e. whether a segment starts at
/// item `i` when `cnt` was already past item `i - 1`'s.
///
/// # Safety
/// `c_hi <= offsets.len()`.
#[inline(always)]
unsafe fn passes_offsets(offsets: &[u64], cnt: &mut usize, c_hi: usize, i: usize) -> bool {
    let mut start = false;
    // SAFETY: `*cnt < c_hi <= offsets.len()` (the caller's contract).
    while *cnt < c_hi && unsafe { *offsets.get_unchecked(*cnt) } as usize <= i {
        *cnt += 1;
        start = true;
    }
    start
}

/// `lo` plus how many of `offsets[lo..hi]` are at most `pos` (for ascending offsets: the
/// number of offsets at most `pos`, when those before `lo` are and those from `hi` are not).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn upper_bound(offsets: &[u64], lo: usize, hi: usize, pos: usize) -> usize {
    let (mut lo, mut hi) = (lo, hi.min(offsets.len()));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // SAFETY: `mid < hi <= offsets.len()`.
        if unsafe { *offsets.get_unchecked(mid) } as usize <= pos {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// How many of `offsets` are at most `a`, and at most `b` (for ascending offsets; in `0 ..=
/// offsets.len()` whatever they hold), to every lane of `warp` (all 32 lanes call it): a
/// 32-ary search, each round's 32 probes of both searches loaded at once and counted with a
/// ballot, so `log32(len)` rounds of loads (4 for a million offsets) instead of `log2(len)`.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn warp_count_at_most2<W: WarpGroup>(warp: &W, offsets: &[u64], a: usize, b: usize) -> (usize, usize) {
    let lane = warp.thread_rank() as usize;
    let len = offsets.len();
    // Invariant: each count is in `lo ..= hi` (`hi <= len`).
    let (mut lo_a, mut hi_a, mut lo_b, mut hi_b) = (0usize, len, 0usize, len);
    loop {
        let (wa, wb) = (hi_a - lo_a, hi_b - lo_b);
        if wa <= 32 && wb <= 32 {
            break;
        }
        // Probe `p = lo + (lane + 1) * step - 1` (if below `hi`): the count is at least
        // `p + 1` when `offsets[p] <= x`. With `k` such probes (a prefix, for ascending
        // offsets) it is in `lo + k * step ..= lo + (k + 1) * step - 1`; `k` never exceeds the
        // probes below `hi`, so the new range stays inside the old one whatever the offsets.
        let (sa, sb) = (wa.div_ceil(32).max(1), wb.div_ceil(32).max(1));
        let (pa, pb) = (lo_a + (lane + 1) * sa - 1, lo_b + (lane + 1) * sb - 1);
        // SAFETY: each probe is read only below its `hi <= len`.
        let ya = pa < hi_a && unsafe { *offsets.get_unchecked(pa) } as usize <= a;
        // SAFETY: as above.
        let yb = pb < hi_b && unsafe { *offsets.get_unchecked(pb) } as usize <= b;
        let (ka, kb) = (warp.ballot(ya).count_ones() as usize, warp.ballot(yb).count_ones() as usize);
        if wa > 32 {
            (lo_a, hi_a) = (lo_a + ka * sa, hi_a.min(lo_a + (ka + 1) * sa - 1));
        }
        if wb > 32 {
            (lo_b, hi_b) = (lo_b + kb * sb, hi_b.min(lo_b + (kb + 1) * sb - 1));
        }
    }
    // At most 32 candidates each: probe `lo + lane` (below `hi`).
    // SAFETY: read only below `hi <= len`.
    let ya = lo_a + lane < hi_a && unsafe { *offsets.get_unchecked(lo_a + lane) } as usize <= a;
    // SAFETY: as above.
    let yb = lo_b + lane < hi_b && unsafe { *offsets.get_unchecked(lo_b + lane) } as usize <= b;
    (lo_a + warp.ballot(ya).count_ones() as usize, lo_b + warp.ballot(yb).count_ones() as usize)
}

/// Segment `s`'s clamped range `(b, e)`, `b <= e <= n`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn span(offsets: &[u64], s: usize, n: usize) -> (usize, usize) {
    let b = (offsets[s] as usize).min(n);
    let e = (offsets[s + 1] as usize).min(n).max(b);
    (b, e)
}

/// Writes `v` at `at` if in bounds.
///
/// # Safety
/// No other thread of the launch writes or reads element `at` of `dst`.
#[inline(always)]
unsafe fn put<T>(dst: &mut DisjointSlice<'_, T, Scattered>, at: usize, v: T) {
    if at < dst.len() {
        // SAFETY: in bounds; exclusive (the caller's contract).
        unsafe { dst.as_mut_ptr().add(at).write(v) };
    }
}

/// Where a chunk's pieces go.
struct Outs<'s, 'a, 'b, 'c, T> {
    out: &'s mut DisjointSlice<'a, T, Scattered>,
    head: &'s mut DisjointSlice<'b, T, Scattered>,
    tail: &'s mut DisjointSlice<'c, T, Scattered>,
}

/// Routes the reduction `v` of one piece of chunk `c` (`p0 .. p1`), ending at position `at`,
/// where `cnt` offsets are at most `at` (its segment is `cnt - 1`; none for `cnt == 0`).
/// `first`: the piece holds `p0`; `last`: it holds `p1 - 1`.
///
/// # Safety
/// Each piece is routed once, by the thread holding its last item, and the pieces partition
/// the chunk (so one holds `p0`, one `p1 - 1`): then `head[c]` / `tail[c]` are written by one
/// thread each, and `out[s]` only by the piece ending at segment `s`'s last position when `s`
/// is non-empty and lies in chunk `c` — one item of one thread, and the fix-up leaves such
/// segments alone.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn route<T: DeviceCopy, Op: ReduceOp<T>>(
    outs: &mut Outs<'_, '_, '_, '_, T>,
    offsets: &[u64],
    (c, p0, p1, n, chunk): (usize, usize, usize, usize, usize),
    init: T,
    op: Op,
    v: T,
    cnt: usize,
    at: usize,
    (first, last): (bool, bool),
) {
    let owner = cnt.wrapping_sub(1);
    let started_before = cnt == 0 || (offsets[owner] as usize) < p0;
    if first && started_before {
        // SAFETY: this thread holds the chunk's first piece (the caller's contract).
        unsafe { put(outs.head, c, v) };
        return;
    }
    // Before the first segment, or after the last one (the count includes `offsets[m]`).
    if cnt == 0 || owner + 1 >= offsets.len() {
        return;
    }
    let (b, e) = span(offsets, owner, n);
    if last && e > p1 {
        // SAFETY: this thread holds the chunk's last piece.
        unsafe { put(outs.tail, c, v) };
    } else if b < e && b >= p0 && e <= p0 + chunk && at + 1 == e {
        // The segment lies in this chunk (`b / chunk == c == (e - 1) / chunk`), and this piece
        // ends at its last element.
        // SAFETY: position `e - 1` is one item of one thread, routed at most once, and `e`
        // depends on `owner` alone: no other piece writes `out[owner]`; the fix-up writes
        // only empty segments and those spanning chunks.
        unsafe { put(outs.out, owner, op.combine(init, v)) };
    }
}

/// One chunk of a segmented reduction (see the [module docs](self)): block `c` of a grid of
/// one block per chunk of `block_size() * N` elements reduces chunk `c`'s pieces of
/// `input`, writes `out[s] = init op (segment s)` for the segments that start and end in the
/// chunk, and the chunk's first / last piece into `head[c]` / `tail[c]` when their segments
/// reach beyond it. Every thread of the block calls it (block size a multiple of 32).
///
/// # Safety
/// Nothing else in the launch writes `out`, `head` or `tail`. Then, in any grid (block `c` is
/// chunk `c`, and block ranks are distinct), each element of `head` / `tail` has one writer
/// (the thread of block `c` holding the chunk's first / last piece) and each element of `out`
/// one writer (the piece ending at its segment's last position, when the segment lies in one
/// chunk). A grid of fewer blocks than chunks leaves chunks out: wrong values, not races.
/// Every write is bounds-checked.
#[inline(always)]
#[track_caller]
pub unsafe fn segmented_reduce_chunk<T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(
    input: &[T],
    offsets: &[u64],
    init: T,
    op: Op,
    out: &mut DisjointSlice<'_, T, Scattered>,
    head: &mut DisjointSlice<'_, T, Scattered>,
    tail: &mut DisjointSlice<'_, T, Scattered>,
) {
    let bs = thread::block_size() as usize;
    let chunk = bs * N;
    let n = input.len();
    let c = thread::block_rank() as usize;
    let p0 = c.saturating_mul(chunk);
    if p0 >= n {
        return;
    }
    let p1 = (p0 + chunk).min(n);
    let t = thread::thread_rank_in_block() as usize;
    let (items, valid) = load_blocked::<T, N>(input, c as u64, input[0]);
    // Offsets at most p0 / at most p1 - 1: the segments starting in (p0, p1) are counts
    // `c_lo + 1 ..= c_hi`.
    let (_, warp) = block::warp_of_block("segmented_reduce_chunk");
    let (c_lo, c_hi) = warp_count_at_most2(&warp, offsets, p0, p1 - 1);
    let mut outs = Outs { out, head, tail };
    let geo = (c, p0, p1, n, chunk);
    if c_lo == c_hi {
        // No segment starts inside the chunk: one piece.
        let r = block::reduce_items(&items, valid, op);
        if t == 0
            && let Some(v) = r
        {
            // SAFETY: thread 0 of block `c` (chunk `c`) holds the chunk's only piece.
            unsafe { route(&mut outs, offsets, geo, init, op, v, c_lo, p1 - 1, (true, true)) };
        }
        return;
    }
    let q = p0 + t * N;
    // How many offsets are at most the position before this thread's first item (at most
    // `p0` for thread 0: the chunk's start is never a piece's start).
    let cnt0 = if valid == 0 { c_hi } else { upper_bound(offsets, c_lo, c_hi, if t == 0 { p0 } else { q - 1 }) };
    // The thread's items in order: a segment starts at item `j` when the count of offsets at
    // most its position grows there. First pass: the thread's (flag, value) for the scan.
    let mut cnt = cnt0;
    let mut agg = Piece { bits: 0, pad: 0, v: items[0] };
    let mut first_starts = false;
    crate::unroll::<N>(|j| {
        if j < valid {
            let i = q + j;
            // SAFETY: `c_hi <= offsets.len()`: a count of `offsets` elements (`warp_count_at_most2`).
            let start = unsafe { passes_offsets(offsets, &mut cnt, c_hi, i) };
            if j == 0 {
                first_starts = start;
            }
            agg.v = if start || agg.bits & HAS == 0 { items[j] } else { op.combine(agg.v, items[j]) };
            agg.bits |= HAS | if start { START } else { 0 };
        }
    });
    // Whether each thread's first item starts a piece, as that thread saw it: the thread before
    // ends its last piece there (one view of every flag, so every piece ends exactly once, even
    // for offsets that do not ascend). Stored before the scan, read after (its barriers order
    // them).
    let flags = warp.ballot(first_starts);
    let starts = SEG_FIRST_STARTS.get();
    if warp.thread_rank() == 0 {
        starts.store(thread::warp_id() as usize % 32, flags);
    }
    let seg_op = piece_op(op);
    let prefix = block::scan_items(&[agg], seg_op).prefix;
    let mut acc: Option<T> = match prefix {
        Some(p) if p.bits & HAS != 0 => Some(p.v),
        _ => None,
    };
    let mut any_start = matches!(prefix, Some(p) if p.bits & START != 0);
    let mut cnt = cnt0;
    crate::unroll::<N>(|j| {
        if j < valid {
            let i = q + j;
            // SAFETY: `c_hi <= offsets.len()`: a count of `offsets` elements (`warp_count_at_most2`).
            let start = unsafe { passes_offsets(offsets, &mut cnt, c_hi, i) };
            if start {
                any_start = true;
                acc = Some(items[j]);
            } else {
                acc = Some(cat(op, acc, items[j]));
            }
            let last = i + 1 == p1;
            let end = if last {
                true
            } else if j + 1 == N {
                // The next item is thread `t + 1`'s first: its flag, as it saw it.
                let u = t + 1;
                starts.load(u / 32 % 32) >> (u % 32) & 1 != 0
            } else {
                // The walk's next step, as above.
                // SAFETY: `cnt < c_hi <= offsets.len()`.
                cnt < c_hi && unsafe { *offsets.get_unchecked(cnt) } as usize <= i + 1
            };
            if end && let Some(v) = acc {
                // SAFETY: every flag has one view (above), so the pieces partition the chunk
                // and each ends at one item: the one holding `p0` (no start in `(p0, i]`) and
                // the one holding `p1 - 1` are each routed by one thread; block `c` is chunk
                // `c` (distinct block ranks).
                unsafe { route(&mut outs, offsets, geo, init, op, v, cnt, i, (!any_start, last)) };
            }
        }
    });
}

/// The fix-up of a segmented reduction (see the [module docs](self)): warp `w` of the grid
/// takes segments `32 k .. 32 k + 32` for `k = w, w + W, …`; each lane writes `init` for its
/// segment if empty, and each segment spanning chunks `c0 < c1` (of `chunk` elements; `n`
/// the input's length) is combined by the warp: `out[s] = init op tail[c0] op head[c0 + 1]
/// op … op head[c1]`. Every thread of the block calls it (block size a multiple of 32).
///
/// # Safety
/// `head` and `tail` are [`segmented_reduce_chunk`]'s for the same input length, `chunk` and
/// offsets (else wrong values, never an access out of bounds), and nothing else in the launch
/// writes `out`: each segment is then one lane's (the grid's warps take disjoint groups of
/// 32), and the chunk kernel wrote only the non-empty segments within one chunk, which this
/// leaves alone.
#[inline(always)]
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub unsafe fn segmented_reduce_fixup<T: DeviceCopy, Op: ReduceOp<T>>(
    n: usize,
    chunk: usize,
    offsets: &[u64],
    head: &[T],
    tail: &[T],
    init: T,
    op: Op,
    out: &mut DisjointSlice<'_, T, Scattered>,
) {
    let (_, warp) = block::warp_of_block("segmented_reduce_fixup");
    let m = offsets.len().saturating_sub(1);
    let chunk = chunk.max(1);
    // The chunk of a position: a shift for the kernels' chunks (powers of two), not a 64-bit
    // division per segment.
    let shift = chunk.trailing_zeros();
    let pow2 = chunk.is_power_of_two();
    let chunk_of = move |p: usize| if pow2 { p >> shift } else { p / chunk };
    let lane = warp.thread_rank() as usize;
    let warps = thread::warps_per_block() as usize;
    let total = thread::num_blocks() as usize * warps;
    let mut g = thread::block_rank() as usize * warps + thread::warp_id() as usize;
    while g < m.div_ceil(32) {
        let s = g * 32 + lane;
        let (b, e) = if s < m { span(offsets, s, n) } else { (0, 0) };
        if s < m && b == e {
            // SAFETY: segment `s` is this lane's alone (the warps' groups are disjoint), and
            // the chunk kernel writes no empty segment.
            unsafe { put(out, s, init) };
        }
        let spanning = s < m && b < e && chunk_of(b) != chunk_of(e - 1);
        let mut mask = warp.ballot(spanning);
        while mask != 0 {
            let src = mask.trailing_zeros();
            mask &= mask - 1;
            let (sb, se) = (warp.shfl(b as u64, src) as usize, warp.shfl(e as u64, src) as usize);
            let (c0, c1) = (chunk_of(sb), chunk_of(se - 1));
            // Heads `c0 + 1 ..= c1`, a contiguous run per lane, in lane order.
            let k = c1 - c0;
            let per = k.div_ceil(32);
            let lo = (c0 + 1 + lane * per).min(c1 + 1);
            let hi = (lo + per).min(c1 + 1);
            let mut acc: Option<T> = None;
            for &h in &head[lo..hi] {
                acc = Some(cat(op, acc, h));
            }
            let (r, has) = block::warp_reduce_ordered(&warp, acc.unwrap_or(tail[c0]), acc.is_some(), op);
            if lane == src as usize {
                let v = op.combine(init, tail[c0]);
                let v = if has { op.combine(v, r) } else { v };
                // SAFETY: segment `s` is this lane's alone, and spanning chunks, so the chunk
                // kernel did not write it.
                unsafe { put(out, s, v) };
            }
        }
        g += total;
    }
}

//! Device merge sort with a comparator (CUB's `DeviceMergeSort::SortKeys` / `SortPairs` /
//! `StableSortKeys`): stable, for any key type a strict weak order `less(a, b)` ranks — the
//! types radix sort cannot handle (structs, tuples of fields, a custom order).
//!
//! **Scheme** (CUB's): one launch sorts every tile of `MERGE_BLOCK * N` keys in shared memory
//! ([`merge_sort_tiles`]: each thread sorts its `N` items in registers, then the block merges
//! runs of `N`, `2N`, … items with merge path), then `log2(tiles)` passes merge pairs of sorted
//! runs of `W`, `2W`, … elements: a partition launch ([`merge_partition`]) finds, for every
//! tile boundary of the output, where it cuts the two runs (a binary search along the merge
//! path's diagonal), and a merge launch ([`merge_tiles`]) gives each block one output tile: it
//! loads its slices of both runs into shared memory and merges them, each thread `N` outputs
//! from its own diagonal. **Stable**: on a tie the element of the earlier run (and the earlier
//! position) goes first everywhere (`!less(b, a)` takes `a`).
//!
//! **A comparator that is not a strict weak order** (random answers, `<=`, one that panics on
//! NaN…) gives unspecified output values — possibly some keys twice and others lost — but
//! never an access out of bounds nor two writers of one element: every position a thread
//! writes is fixed by its block and rank (output tile `b`, items `t * N ..`), and every index
//! into shared memory or the input is clamped to its range, whatever the searches return.
//!
//! Sizes: positions are `usize` throughout (past 2^32 elements); the key and value of an item
//! together are at most [`MERGE_MAX_BYTES`] bytes (a tile of both in the 48 KiB of shared
//! memory a block gets without opting in).

use crate::DeviceCopy;
use crate::block::load_blocked;
use crate::shared::SharedSlice;
use crate::slice::DisjointSlice;
use crate::thread::{self, Scattered};

/// Threads per block of the merge sort kernels.
pub const MERGE_BLOCK: u32 = 256;

/// The most bytes of a key and its value together (a tile of `MERGE_BLOCK` items of both fits
/// in 48 KiB of shared memory).
pub const MERGE_MAX_BYTES: usize = 192;

/// Items per thread of the merge sort kernels for keys `K` and values `V`: 8, proportionally
/// fewer for keys wider than 8 bytes (`68 / size_of::<K>()`, CUB's rule, capped at 8), fewer still
/// where a tile of keys and values would not fit in 48 KiB of shared memory; and for keys wider
/// than 4 bytes odd from 3 up: a thread's items are consecutive in shared memory, and an odd count
/// of 8-byte items puts the lanes' `j`-th items in different banks. Measured on an H200 at 2^28:
/// `u64` pairs 62.6 ms with 8 items a thread, 50.9 ms with 7; `u32` keys 33.0 ms with 8, 35.0 ms
/// with CUB's 17 (odd counts near 8 not measured yet).
#[must_use]
pub const fn merge_items<K, V>() -> usize {
    let per = size_of::<K>() + size_of::<V>();
    assert!(per <= MERGE_MAX_BYTES, "merge sort: a key and its value are at most MERGE_MAX_BYTES (192) bytes");
    let n = 48 * 1024 / (MERGE_BLOCK as usize * if per == 0 { 1 } else { per });
    let nominal = 68 / if size_of::<K>() < 4 { 4 } else { size_of::<K>() };
    let nominal = if nominal > 8 { 8 } else { nominal };
    let n = if n > nominal { nominal } else { n };
    let n = if n == 0 { 1 } else { n };
    if size_of::<K>() > 4 && n >= 4 && n % 2 == 0 { n - 1 } else { n }
}

/// The dynamic shared memory (bytes) of the merge sort kernels: a tile of keys, then a tile of
/// values ([`merge_smem`]).
#[must_use]
pub const fn merge_smem_bytes<K, V>() -> usize {
    (merge_values_offset::<K, V>() + MERGE_BLOCK as usize * merge_items::<K, V>()) * size_of::<V>()
}

/// The element offset (in `V`s) of the values' tile in the kernels' dynamic shared memory:
/// just past the keys' tile, rounded up to a whole `V`.
#[must_use]
pub const fn merge_values_offset<K, V>() -> usize {
    let keys_bytes = MERGE_BLOCK as usize * merge_items::<K, V>() * size_of::<K>();
    keys_bytes.div_ceil(if size_of::<V>() == 0 { 1 } else { size_of::<V>() })
}

/// The merge sort kernels' tiles of keys and values in dynamic shared memory (the launch gives
/// [`merge_smem_bytes`]).
#[inline(always)]
#[track_caller]
#[must_use]
pub fn merge_smem<K: DeviceCopy, V: DeviceCopy>() -> (SharedSlice<K>, SharedSlice<V>) {
    let tile = MERGE_BLOCK as usize * merge_items::<K, V>();
    (crate::shared::dynamic::<K>().sub(0, tile), crate::shared::dynamic::<V>().sub(merge_values_offset::<K, V>(), tile))
}

/// A position in a merge: `usize` in global memory (past 2^32 elements), `u32` within a tile
/// in shared memory (half the integer instructions of 64-bit positions on a GPU).
trait Pos:
    Copy + Ord + core::ops::Add<Output = Self> + core::ops::Sub<Output = Self> + core::ops::Div<Output = Self> + From<u8>
{
}
impl Pos for u32 {}
impl Pos for usize {}

/// How many of the first `d` outputs of the stable merge of `a` (length `la`) and `b` (length
/// `lb`) come from `a`: the merge path's cut of diagonal `d` (`d <= la + lb`), by binary
/// search. Always in `d - lb ..= d` and `0 ..= la` (clamped), whatever `less` answers.
#[inline(always)]
fn merge_path<I: Pos, K, L: Fn(&K, &K) -> bool>(
    a: impl Fn(I) -> K,
    la: I,
    b: impl Fn(I) -> K,
    lb: I,
    d: I,
    less: &L,
) -> I {
    let (zero, one, two) = (I::from(0), I::from(1), I::from(2));
    let d = d.min(la + lb);
    let (mut lo, mut hi) = (if d > lb { d - lb } else { zero }, d.min(la));
    while lo < hi {
        let mid = lo + (hi - lo) / two;
        // `mid < hi <= d` and `mid >= lo >= d - lb`: `d - 1 - mid` is in `0 .. lb`.
        if less(&b(d - one - mid), &a(mid)) {
            hi = mid;
        } else {
            lo = mid + one;
        }
    }
    lo
}

/// `x` rounded down to a multiple of `m` (`m >= 1`): a mask when `m` is a power of two (the
/// merge passes' widths, for power-of-two tiles), 32-bit division when both fit, else 64-bit
/// (a software routine on the GPU, a hundred instructions).
#[inline(always)]
fn round_down(x: usize, m: usize) -> usize {
    if m.is_power_of_two() {
        x & !(m - 1)
    } else if let (Ok(x32), Ok(m32)) = (u32::try_from(x), u32::try_from(m)) {
        (x32 / m32 * m32) as usize
    } else {
        x / m * m
    }
}

/// Writes `v` to `dst[at]` if in bounds.
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

/// Merges the runs `smem[a0 .. a0 + la]` and `smem[a0 + la .. a0 + la + lb]` (keys, and values
/// at the same positions when `pairs`) from diagonal `d`, `N` outputs at most, into registers
/// (`la + lb >= 1`). CUB's serial merge: the two runs' next keys stay in registers, so each
/// output costs one shared load (the key that replaces the one taken) and one comparison. The
/// runs are checked once to lie in the tiles; every load below is clamped into them, so it
/// needs no check of its own, and positions are 32-bit.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn merge_from_shared<K: DeviceCopy, V: DeviceCopy, L: Fn(&K, &K) -> bool, const N: usize>(
    sk: &SharedSlice<K>,
    sv: &SharedSlice<V>,
    pairs: bool,
    a0: usize,
    la: usize,
    lb: usize,
    d: usize,
    less: &L,
    keys: &mut [K; N],
    values: &mut [V; N],
) {
    let end = a0 + la + lb;
    assert!(
        end > a0 && end <= sk.len() && (!pairs || end <= sv.len()),
        "merge sort: the runs to merge are not inside the shared tiles"
    );
    // Shared tiles are below 2^32 elements (`sk.len()` is a `u32` count): these don't truncate.
    let (a0, la, lb, d) = (a0 as u32, la as u32, lb as u32, d.min(la + lb) as u32);
    let b0 = a0 + la;
    let last = b0 + lb - 1;
    // SAFETY: `i.min(last) <= last < end <= sk.len()` (asserted above).
    let at = |i: u32| unsafe { sk.load_unchecked(i.min(last) as usize) };
    let i = merge_path(|x| at(a0 + x), la, |x| at(b0 + x), lb, d, less);
    let (mut ai, mut bi) = (i, d - i);
    // A head past its run's end is loaded from another position (clamped) and never taken.
    let (mut ka, mut kb) = (at(a0 + ai), at(b0 + bi));
    crate::unroll::<N>(|j| {
        let (a_left, b_left) = (ai < la, bi < lb);
        if a_left || b_left {
            // Stable: on a tie the first run's key goes first.
            let from_a = a_left && (!b_left || !less(&kb, &ka));
            let pos = if from_a { a0 + ai } else { b0 + bi };
            keys[j] = if from_a { ka } else { kb };
            if pairs {
                // SAFETY: `pos.min(last) < end <= sv.len()` (asserted above, `pairs`).
                values[j] = unsafe { sv.load_unchecked(pos.min(last) as usize) };
            }
            if from_a {
                ai += 1;
                ka = at(a0 + ai);
            } else {
                bi += 1;
                kb = at(b0 + bi);
            }
        }
    });
}

/// Stores this thread's first `mine` items (and values, when `pairs`) at its positions `t * N ..`
/// of the shared tiles (blocked).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn stage_blocked<K: DeviceCopy, V: DeviceCopy, const N: usize>(
    sk: &SharedSlice<K>,
    sv: &SharedSlice<V>,
    pairs: bool,
    k: &[K; N],
    v: &[V; N],
    mine: usize,
) {
    let t = thread::thread_rank_in_block() as usize;
    crate::unroll::<N>(|j| {
        if j < mine {
            sk.store(t * N + j, k[j]);
            if pairs {
                sv.store(t * N + j, v[j]);
            }
        }
    });
}

/// Writes a tile of `count` items from registers (thread `t` holds items `t * N ..`, `mine` of
/// them) to `dst[p0 .. p0 + count]` through shared memory, so that a warp's stores are
/// consecutive (CUB's `BlockStore` with a transpose): the blocked items go to shared memory,
/// then thread `t` writes items `t`, `t + MERGE_BLOCK`, … (`count <= MERGE_BLOCK * N`). Every thread of the block calls it
/// (it synchronizes the block); nothing may read `sk` / `sv` concurrently.
///
/// # Safety
/// No other thread outside the block writes or reads `dst[p0 .. p0 + count]`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn store_tile<K: DeviceCopy, V: DeviceCopy, const N: usize>(
    sk: &SharedSlice<K>,
    sv: &SharedSlice<V>,
    pairs: bool,
    k: &[K; N],
    v: &[V; N],
    mine: usize,
    p0: usize,
    count: usize,
    kdst: &mut DisjointSlice<'_, K, Scattered>,
    vdst: &mut DisjointSlice<'_, V, Scattered>,
) {
    let bs = MERGE_BLOCK as usize;
    let t = thread::thread_rank_in_block() as usize;
    stage_blocked(sk, sv, pairs, k, v, mine);
    crate::sync::sync_threads();
    // `count <= MERGE_BLOCK * N`: `N` striped items a thread cover the tile.
    crate::unroll::<N>(|j| {
        let i = t + j * bs;
        if i < count {
            // SAFETY: position `p0 + i` is this block's alone (the caller's contract), and this
            // thread's alone within the block (`i = t + j * MERGE_BLOCK`).
            unsafe { put(kdst, p0 + i, sk.load(i)) };
            if pairs {
                // SAFETY: as the key's.
                unsafe { put(vdst, p0 + i, sv.load(i)) };
            }
        }
    });
}

/// One tile per block of a merge sort (see the merge sort's module docs, `algorithms/merge_sort.rs`): block `b` sorts elements
/// `b * T .. (b + 1) * T` of `keys` (`T = MERGE_BLOCK * N`; the last tile shorter), stable by
/// `less`, and writes them (with their `values`, when not empty) to the same positions of
/// `keys_out` / `values_out`. `smem_keys` / `smem_values`: shared memory of `T` keys / values.
/// Blocks of [`MERGE_BLOCK`] threads.
///
/// # Safety
/// Nothing else in the launch writes the outputs. Then every element has one writer: block `b`
/// (ranks are distinct in any grid) writes positions `b * T .. (b + 1) * T` only, its thread `t`
/// those `≡ t (mod MERGE_BLOCK)` of them. Every write is bounds-checked.
#[inline(always)]
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub unsafe fn merge_sort_tiles<K: DeviceCopy, V: DeviceCopy, L: Fn(&K, &K) -> bool + Copy, const N: usize>(
    keys: &[K],
    values: &[V],
    keys_out: &mut DisjointSlice<'_, K, Scattered>,
    values_out: &mut DisjointSlice<'_, V, Scattered>,
    less: L,
    smem_keys: &SharedSlice<K>,
    smem_values: &SharedSlice<V>,
) {
    assert!(thread::block_size() == MERGE_BLOCK, "merge sort: the kernels run blocks of MERGE_BLOCK (256) threads");
    let bs = MERGE_BLOCK as usize;
    let tile = bs * N;
    let n = keys.len();
    let pairs = !values.is_empty() && values.len() >= n;
    let b = thread::block_rank() as usize;
    let base = b.saturating_mul(tile);
    if base >= n {
        return;
    }
    let valid = (n - base).min(tile);
    let t = thread::thread_rank_in_block() as usize;
    let mine = valid.saturating_sub(t * N).min(N);
    let (mut k, _) = load_blocked::<K, N>(keys, b as u64, keys[0]);
    let (mut v, _) = if pairs {
        load_blocked::<V, N>(values, b as u64, values[0])
    } else {
        (core::array::from_fn(|_| super::scan::placeholder()), 0)
    };
    // The thread's items: odd-even transposition sort, swapping only strictly smaller keys
    // forward (stable); items past the input never move.
    crate::unroll::<N>(|round| {
        crate::unroll::<N>(|j| {
            if j % 2 == round % 2 && j + 1 < mine && less(&k[j + 1], &k[j]) {
                k.swap(j, j + 1);
                v.swap(j, j + 1);
            }
        });
    });
    // The block: runs of `w` items merged pairwise, `w = N, 2N, …` (each thread's outputs are
    // its own positions `t * N ..`).
    let mut w = N;
    while w < valid {
        stage_blocked(smem_keys, smem_values, pairs, &k, &v, mine);
        crate::sync::sync_threads();
        if mine > 0 {
            let gs = round_down(t * N, 2 * w);
            let la = w.min(valid - gs);
            let lb = (2 * w).min(valid - gs) - la;
            merge_from_shared(smem_keys, smem_values, pairs, gs, la, lb, t * N - gs, &less, &mut k, &mut v);
        }
        crate::sync::sync_threads();
        w *= 2;
    }
    // SAFETY: positions `b * T .. b * T + valid` are this block's alone (the caller's contract).
    unsafe { store_tile(smem_keys, smem_values, pairs, &k, &v, mine, base, valid, keys_out, values_out) };
}

/// The merge pass's partition (see the merge sort's module docs, `algorithms/merge_sort.rs`): for every tile boundary `i * tile`
/// (`i` in `0 ..= tiles`, grid-strided over the launch's threads), in the merge group of `2 *
/// width` elements that holds it, where the merge path of its two runs (`width` elements each,
/// sorted by `less`) crosses the boundary's diagonal: `splits[i]` = the position in `keys` of
/// the first element of the first run not yet merged there. Safe: `splits` is written
/// through [`DisjointSlice::set`](crate::slice::DisjointSlice) by grid-stride index.
#[inline(always)]
#[track_caller]
pub fn merge_partition<K: DeviceCopy, L: Fn(&K, &K) -> bool + Copy>(
    keys: &[K],
    width: usize,
    tile: usize,
    splits: &mut DisjointSlice<'_, u64>,
    less: L,
) {
    let n = keys.len();
    let group = width.saturating_mul(2).max(1);
    for i in thread::grid_stride(splits.len()) {
        let p = (*i).saturating_mul(tile).min(n);
        let gs = round_down(p, group);
        let a_end = gs.saturating_add(width).min(n);
        let b_end = gs.saturating_add(group).min(n);
        let cut = merge_path(|x| keys[gs + x], a_end - gs, |x| keys[a_end + x], b_end - a_end, p - gs, &less);
        splits.set(&i, (gs + cut) as u64);
    }
}

/// One output tile per block of a merge pass (see the merge sort's module docs, `algorithms/merge_sort.rs`): block `b` writes
/// elements `b * T .. (b + 1) * T` (`T = MERGE_BLOCK * N`, a divisor of `width`) of the merge of
/// each pair of sorted runs of `width` elements of `keys` (and `values`, when not empty) into
/// `keys_out` / `values_out`, stable, from [`merge_partition`]'s `splits` for the same keys,
/// `width` and `T`. Blocks of [`MERGE_BLOCK`] threads.
///
/// # Safety
/// Nothing else in the launch writes the outputs: then every element has one writer (block
/// `b` writes positions `b * T .. (b + 1) * T` only, its thread `t` those `≡ t (mod
/// MERGE_BLOCK)` of them). Wrong `splits` give
/// wrong values, never an access out of bounds (every index is clamped), and every write is
/// bounds-checked.
#[inline(always)]
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub unsafe fn merge_tiles<K: DeviceCopy, V: DeviceCopy, L: Fn(&K, &K) -> bool + Copy, const N: usize>(
    keys: &[K],
    values: &[V],
    splits: &[u64],
    width: usize,
    keys_out: &mut DisjointSlice<'_, K, Scattered>,
    values_out: &mut DisjointSlice<'_, V, Scattered>,
    less: L,
    smem_keys: &SharedSlice<K>,
    smem_values: &SharedSlice<V>,
) {
    assert!(thread::block_size() == MERGE_BLOCK, "merge sort: the kernels run blocks of MERGE_BLOCK (256) threads");
    let bs = MERGE_BLOCK as usize;
    let tile = bs * N;
    let n = keys.len();
    let pairs = !values.is_empty() && values.len() >= n;
    let b = thread::block_rank() as usize;
    let p0 = b.saturating_mul(tile);
    if p0 >= n || b + 1 >= splits.len() {
        return;
    }
    let p1 = (p0 + tile).min(n);
    let group = width.saturating_mul(2).max(1);
    let gs = round_down(p0, group);
    let a_end = gs.saturating_add(width).min(n);
    let b_end = gs.saturating_add(group).min(n);
    // This tile's slices of both runs (clamped: a comparator that is not an order may leave
    // the splits inconsistent, never out of range).
    let a_lo = (splits[b] as usize).clamp(gs, a_end);
    let a_hi = if p1 == b_end { a_end } else { (splits[b + 1] as usize).clamp(a_lo, a_end) };
    let la = (a_hi - a_lo).min(p1 - p0);
    let b_lo = (a_end + (p0 - gs).saturating_sub(a_lo - gs)).min(b_end);
    let lb = (p1 - p0).saturating_sub(la).min(b_end - b_lo);
    let count = la + lb;
    let t = thread::thread_rank_in_block() as usize;
    // Striped (`t`, `t + MERGE_BLOCK`, …: a warp's loads consecutive), all `N` loads issued
    // before the first store to shared memory, so they are in flight together.
    let mut k: [K; N] = core::array::from_fn(|_| super::scan::placeholder());
    let mut v: [V; N] = core::array::from_fn(|_| super::scan::placeholder());
    crate::unroll::<N>(|j| {
        let i = t + j * bs;
        if i < count {
            let at = if i < la { a_lo + i } else { b_lo + (i - la) };
            k[j] = keys[at];
            if pairs {
                v[j] = values[at];
            }
        }
    });
    crate::unroll::<N>(|j| {
        let i = t + j * bs;
        if i < count {
            smem_keys.store(i, k[j]);
            if pairs {
                smem_values.store(i, v[j]);
            }
        }
    });
    crate::sync::sync_threads();
    let d = t * N;
    if d < count {
        merge_from_shared(smem_keys, smem_values, pairs, 0, la, lb, d, &less, &mut k, &mut v);
    }
    let mine = count.saturating_sub(d).min(N);
    // Every thread has read what it merges before any overwrites the tile.
    crate::sync::sync_threads();
    // SAFETY: positions `b * T .. b * T + count` are this block's alone (the caller's contract).
    unsafe { store_tile(smem_keys, smem_values, pairs, &k, &v, mine, p0, count, keys_out, values_out) };
}

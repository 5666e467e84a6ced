//! Device radix sort (CUB's `DeviceRadixSort`), the classic LSD scheme: per pass of
//! [`RADIX_BITS`] bits, an **upsweep** ([`radix_upsweep`]) counts each block's digits, an
//! exclusive scan of the counts (digit-major: `hist[d * G + b]`) gives every (digit, block)
//! its first output position, and a **downsweep** ([`radix_downsweep`]) sorts each tile by
//! the digit in shared memory ([`block::radix_sort_pairs`]) and writes it at those positions,
//! stable. See the module docs of [`algorithms`](super) for the whole.

use core::sync::atomic::Ordering::Relaxed;

use crate::DeviceCopy;
use crate::atomic::AtomicU64;
use crate::block::{self, RadixBits, RadixKey};
use crate::shared::SharedSlice;
use crate::slice::DisjointSlice;
use crate::thread::{self, Scattered};

/// Threads per block of the sort kernels (one per digit: the block's digit counters).
pub const SORT_BLOCK: u32 = 256;
/// Items per thread of the sort kernels.
pub const SORT_ITEMS: usize = 8;
/// Bits per device pass.
pub const RADIX_BITS: u32 = 8;
/// Digits per device pass.
pub const RADIX_DIGITS: usize = 1 << RADIX_BITS;

crate::shared! {
    /// The block's (upsweep) or the tile's (downsweep) count of each digit.
    static SORT_COUNT: [u32; RADIX_DIGITS];
    /// The tile's first sorted position of each digit.
    static SORT_START: [u32; RADIX_DIGITS];
    /// The next output position of each digit for this block.
    static SORT_BASE: [u64; RADIX_DIGITS];
}

/// The histogram's length (in `u64`s) for a grid of `grid` blocks: one count per digit and
/// block.
#[must_use]
pub const fn radix_hist_len(grid: usize) -> usize {
    RADIX_DIGITS * grid
}

/// The dynamic shared memory (bytes) of [`radix_downsweep`] for keys `K` and values `V`.
#[must_use]
pub const fn radix_smem_bytes<K, V>(tile_len: usize) -> usize {
    tile_len * (size_of::<K>() + size_of::<V>())
}

/// Block `b` of `G`'s tiles among `tiles`: the contiguous range `b * tiles / G .. (b + 1) *
/// tiles / G` (contiguous, so that block order is input order: the sort's stability across
/// blocks rests on it).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn block_tile_range(tiles: usize) -> core::ops::Range<usize> {
    let (b, g) = (thread::block_rank() as u128, thread::num_blocks() as u128);
    let t = tiles as u128;
    ((b * t / g) as usize)..(((b + 1) * t / g) as usize)
}

/// Asserts the sort kernels' block shape.
#[inline(always)]
#[track_caller]
fn check_block() {
    assert!(thread::block_size() == SORT_BLOCK, "radix sort: the kernels run blocks of SORT_BLOCK (256) threads");
}

/// The key that sorts after every other in `bits`' direction (a partial tile's filler).
#[inline(always)]
fn filler<K: RadixKey>(bits: RadixBits) -> K {
    if bits.descending { K::FIRST } else { K::LAST }
}

/// One block's upsweep of a pass over bits `bits.begin .. bits.end` (at most [`RADIX_BITS`]):
/// `hist[d * G + b]` = how many keys of block `b`'s tiles ([`block_tile_range`], tiles of
/// `SORT_BLOCK * N`) have digit `d` (complemented when descending). Every thread of the block
/// calls it; blocks of [`SORT_BLOCK`] threads; `hist` at least [`radix_hist_len`] words. Safe:
/// the counts are atomics, each (digit, block) stored by one thread.
///
/// # Panics
/// Another block size, a short `hist`, a range wider than [`RADIX_BITS`].
#[inline(always)]
#[track_caller]
pub fn radix_upsweep<K: RadixKey, const N: usize>(keys: &[K], hist: &[AtomicU64], bits: RadixBits) {
    check_block();
    let (shift, width) = (bits.begin, bits.end.saturating_sub(bits.begin));
    assert!(width <= RADIX_BITS && shift < 64, "radix sort: a pass sorts at most RADIX_BITS bits");
    let g = thread::num_blocks() as usize;
    assert!(hist.len() >= radix_hist_len(g), "radix sort: the histogram holds fewer than radix_hist_len words");
    let tile_len = SORT_BLOCK as usize * N;
    let n = keys.len();
    let t = thread::thread_rank_in_block() as usize;
    let counts = SORT_COUNT.get();
    counts.store(t, 0);
    crate::sync::sync_threads();
    for tile in block_tile_range(n.div_ceil(tile_len)) {
        let (items, valid) = block::load_blocked::<K, N>(keys, tile as u64, filler(bits));
        crate::unroll::<N>(|j| {
            if j < valid {
                counts.atomic(bits.digit(items[j], shift, width) as usize).fetch_add(1, Relaxed);
            }
        });
    }
    crate::sync::sync_threads();
    hist[t * g + thread::block_rank() as usize].store(counts.load(t) as u64, Relaxed);
}

/// One block's downsweep of a pass: its tiles, in order, sorted by the digit of `bits` in
/// shared memory (stable), each key (and value, when `values` is not empty) written to
/// `offsets[d * G + b]` plus the number of keys with digit `d` before it in the block's tiles.
/// `smem_keys` / `smem_values`: shared memory of `SORT_BLOCK * N` keys / values each.
///
/// The writes are bounds-checked (a broken contract gives wrong values, never a write outside
/// the outputs).
///
/// # Safety
/// `offsets` is the exclusive scan (digit-major) of the histogram [`radix_upsweep`] wrote for
/// these same `keys`, `bits` and grid (nothing wrote `keys` since), and nothing else in the
/// launch writes the outputs. Then the positions are a permutation of `0 .. keys.len()`: the
/// keys with digit `d` in block `b` go to `offsets[d * G + b] ..` that plus their count, which
/// is where the next (digit, block)'s range starts; within the block, tile by tile, the tile's
/// keys with digit `d` take the next positions in their sorted order.
#[inline(always)]
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub unsafe fn radix_downsweep<K: RadixKey, V: DeviceCopy, const N: usize>(
    keys: &[K],
    values: &[V],
    offsets: &[u64],
    keys_out: &mut DisjointSlice<'_, K, Scattered>,
    values_out: &mut DisjointSlice<'_, V, Scattered>,
    bits: RadixBits,
    smem_keys: &SharedSlice<K>,
    smem_values: &SharedSlice<V>,
) {
    check_block();
    let (shift, width) = (bits.begin, bits.end.saturating_sub(bits.begin));
    assert!(width <= RADIX_BITS && shift < 64, "radix sort: a pass sorts at most RADIX_BITS bits");
    let g = thread::num_blocks() as usize;
    let b = thread::block_rank() as usize;
    assert!(offsets.len() >= radix_hist_len(g), "radix sort: the offsets hold fewer than radix_hist_len words");
    let pairs = !values.is_empty();
    let bs = SORT_BLOCK as usize;
    let tile_len = bs * N;
    let n = keys.len();
    let t = thread::thread_rank_in_block() as usize;
    let (counts, starts, bases) = (SORT_COUNT.get(), SORT_START.get(), SORT_BASE.get());
    bases.store(t, offsets[t * g + b]);
    let (kdst, klen) = (keys_out.as_mut_ptr(), keys_out.len());
    let (vdst, vlen) = (values_out.as_mut_ptr(), values_out.len());
    for tile in block_tile_range(n.div_ceil(tile_len)) {
        let valid = (n - tile * tile_len).min(tile_len);
        let (k, _) = block::load_blocked::<K, N>(keys, tile as u64, filler(bits));
        // The keys-only sort never reads `values`: a placeholder stands in.
        let (v, _) = if pairs {
            block::load_blocked::<V, N>(values, tile as u64, values[0])
        } else {
            (core::array::from_fn(|_| super::scan::placeholder()), 0)
        };
        // The fillers sort after every real key (their digit is the largest, and they come
        // last in the tile: stable), so the sorted tile's first `valid` items are the real ones.
        let (k, v) = if pairs {
            block::radix_sort_pairs(smem_keys, smem_values, k, v, bits)
        } else {
            (block::radix_sort_keys(smem_keys, k, bits), v)
        };
        // Striped for the writes: lanes of a warp write consecutive positions of a digit's run.
        let k = block::blocked_to_striped(smem_keys, k);
        let v = if pairs { block::blocked_to_striped(smem_values, v) } else { v };
        counts.store(t, 0);
        crate::sync::sync_threads();
        crate::unroll::<N>(|j| {
            if t + j * bs < valid {
                counts.atomic(bits.digit(k[j], shift, width) as usize).fetch_add(1, Relaxed);
            }
        });
        crate::sync::sync_threads();
        let c = counts.load(t);
        let s = block::scan_items(&[c], |x: u32, y: u32| x.wrapping_add(y));
        starts.store(t, s.prefix.unwrap_or(0));
        crate::sync::sync_threads();
        crate::unroll::<N>(|j| {
            let i = t + j * bs;
            if i < valid {
                let d = bits.digit(k[j], shift, width) as usize;
                let at = bases.load(d).wrapping_add(i.wrapping_sub(starts.load(d) as usize) as u64) as usize;
                if at < klen {
                    // SAFETY: in bounds (checked). Disjoint (the caller's contract): the
                    // tile's keys with digit `d` are sorted positions `starts[d] ..
                    // starts[d] + counts[d]`, each held by one thread, and go to `bases[d] ..
                    // bases[d] + counts[d]`, the block's next positions for digit `d`.
                    unsafe { kdst.add(at).write(k[j]) };
                }
                if pairs && at < vlen {
                    // SAFETY: as the key's position.
                    unsafe { vdst.add(at).write(v[j]) };
                }
            }
        });
        crate::sync::sync_threads();
        bases.store(t, bases.load(t).wrapping_add(c as u64));
        // The next tile's first writes of `counts` / `starts` wait for the barriers inside
        // the block sort; `bases` is read again only after two more barriers.
    }
}

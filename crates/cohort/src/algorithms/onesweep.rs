//! Onesweep radix sort (Adinets and Merrill 2022, CUB's `AgentRadixSortOnesweep`): one read of
//! the keys for the digit counts of **every** pass ([`onesweep_histogram`]), then **one
//! launch per 8-bit pass** ([`onesweep_pass`]) that ranks its tile's keys by the digit, learns
//! where each digit's keys go from the tiles before it by a decoupled look-back **per digit**,
//! and scatters the tile through shared memory.
//!
//! A pass, tile by tile (tiles of [`ONESWEEP_BLOCK`] × `N` keys, ids drawn from an atomic
//! counter in the order blocks start):
//!
//! 1. **Load** warp-striped: warp `w` holds the tile's keys `w * 32N ..` that plus `32N`, lane
//!    `l` its keys `j * 32 + l` (every load of a warp coalesced; within a warp, item `j` of
//!    lane `l` comes before item `j` of lane `l + 1` and before every item `j + 1`).
//! 2. **Rank** (warp multi-split): for each `j` in order, the lanes with the same digit find
//!    each other (`match.any`); the highest of them adds their number to the warp's counter of
//!    that digit in shared memory (an atomic: the next `j`'s leader may be another lane) and
//!    hands the old value to the others (a shuffle), and each lane's rank among the warp's keys
//!    of that digit is that plus the lanes below it in the group. Stable: ranks follow the
//!    warp's key order.
//! 3. **Counts**: thread `d` sums the warps' counters of digit `d` (the tile's count of `d`)
//!    and publishes that count for the look-back at once; a block scan of the counts (packed
//!    with the pass's digit totals, so one scan gives both) gives the tile's first rank of each
//!    digit and the pass's first output position of each digit; thread `d` then turns the
//!    warps' counters of `d` into each warp's first rank of `d` in the tile (the tile's first
//!    plus the digit's keys in the warps before), so a key's tile rank is one shared load plus
//!    its rank in the warp.
//! 4. **Look-back per digit**: thread `d` reads digit `d`'s slots of the tiles before its own,
//!    one by one backwards, adding counts until a tile that published its **inclusive** count
//!    (everything up to and including it), then publishes its own inclusive count. A slot is
//!    one 64-bit word, the flag in the top two bits (`0` nothing yet, `1` the tile's count,
//!    `2` inclusive) and the count in the rest, each state one relaxed atomic store (a read
//!    sees a flag with the count stored with it). Forward progress as the single-pass scan's
//!    ([`algorithms`](super) module docs): a tile waits only for tiles with smaller ids,
//!    which blocks that already started took.
//! 5. **Scatter**: the keys go to their tile ranks in shared memory (sorted by digit, stable),
//!    then each thread takes the sorted keys `t, t + 256, …` and writes key `s` of the tile to
//!    `first[d] + s - tile_first[d]`: the keys of one digit are consecutive in the tile and in
//!    the output, so a warp's writes are runs of consecutive addresses. Values follow the same
//!    way through the same shared memory (after the keys are written).
//!
//! A partial last tile is filled with keys that sort last (their digit is the largest, they
//! come last in input order): the sorted tile's first `valid` keys are the real ones, and the
//! fillers' counts reach only the last tile's slots, which no tile reads.

use core::sync::atomic::Ordering::Relaxed;

use super::scan::draw_tile;
use crate::DeviceCopy;
use crate::atomic::AtomicU64;
use crate::block::{self, RadixBits, RadixKey};
use crate::cg::{self, WarpGroup};
use crate::shared::SharedSlice;
use crate::slice::DisjointSlice;
use crate::thread::{self, Scattered};

/// Threads per block of the Onesweep kernels (one per digit in the look-back).
pub const ONESWEEP_BLOCK: u32 = 256;
/// Keys per thread of the Onesweep kernels.
pub const ONESWEEP_ITEMS: usize = 16;
/// Digits of a pass.
const DIGITS: usize = super::RADIX_DIGITS;
/// Warps of a block.
const WARPS: usize = ONESWEEP_BLOCK as usize / 32;
/// Passes at most (64-bit keys).
const MAX_PASSES: usize = 8;

/// Slot flags (the top two bits of a slot).
const AGGREGATE: u64 = 1;
const INCLUSIVE: u64 = 2;
/// The count bits of a slot.
const COUNT_MASK: u64 = (1 << 62) - 1;
/// Polls of a slot before the look-back gives up (a misuse: the state was not cleared).
const MAX_POLLS: u32 = 1 << 26;

crate::shared! {
    /// Per warp, per digit: the warp's count of the digit (ranking), then the warp's first
    /// position of the digit in the sorted tile. The histogram kernel's per-pass counts share it.
    static OS_COUNTS: [u32; WARPS * DIGITS];
    /// Output position of digit `d`'s first key in the tile, minus its first tile position.
    static OS_BASE: [u64; DIGITS];
    /// The digit of each sorted key of the tile (pairs: the values' positions, without keeping
    /// them in registers).
    static OS_DIGITS: [u8; MAX_TILE];
}

/// The longest tile (the kernels' own).
const MAX_TILE: usize = ONESWEEP_BLOCK as usize * ONESWEEP_ITEMS;

/// The length (in `u64`s) of a pass's look-back state for `n` keys: the tile counter, then one
/// slot per (tile, digit).
#[must_use]
pub const fn onesweep_state_len(n: usize, tile_len: usize) -> usize {
    1 + n.div_ceil(tile_len) * DIGITS
}

/// The length (in `u64`s) of the digit counts of every pass of `bits` for keys `K`: one count
/// per pass and digit (pass `p`'s counts are words `p * 256 ..`).
#[must_use]
pub const fn onesweep_hist_len<K: RadixKey>(bits: RadixBits) -> usize {
    let (begin, end) = bits.clamped::<K>();
    (end - begin).div_ceil(super::RADIX_BITS) as usize * DIGITS
}

/// The dynamic shared memory (bytes) of [`onesweep_pass`]: one tile of keys, its values in the
/// same bytes afterwards.
#[must_use]
pub const fn onesweep_smem_bytes<K, V>(tile_len: usize) -> usize {
    let s = if size_of::<K>() > size_of::<V>() { size_of::<K>() } else { size_of::<V>() };
    tile_len * s
}

/// Asserts the kernels' block shape.
#[inline(always)]
#[track_caller]
fn check_block() {
    assert!(
        thread::block_size() == ONESWEEP_BLOCK,
        "onesweep radix sort: the kernels run blocks of ONESWEEP_BLOCK (256) threads"
    );
}

/// The key that sorts after every other in `bits`' direction (a partial tile's filler).
#[inline(always)]
fn filler<K: RadixKey>(bits: RadixBits) -> K {
    if bits.descending { K::FIRST } else { K::LAST }
}

/// Pass `p`'s shift and width for sorting by `begin .. end` (`p` below the passes' number).
#[inline(always)]
fn pass_bits(begin: u32, end: u32, p: u32) -> (u32, u32) {
    let shift = begin + p * super::RADIX_BITS;
    let w = end - shift;
    (shift, if w < super::RADIX_BITS { w } else { super::RADIX_BITS })
}

/// One block's share of the digit counts of every pass of `bits` (8 bits a pass from
/// `bits.begin`; up to the clamped end): `hist[p * 256 + d] +=` how many keys of the block's
/// tiles ([`block_tile_range`](super::block_tile_range) of tiles of `ONESWEEP_BLOCK * N`) have
/// digit `d` in pass `p` (complemented when descending). `hist` must be zero before the launch
/// for the totals to be the keys' counts. Safe: the counts are atomics.
///
/// # Panics
/// Another block size; `hist` shorter than [`onesweep_hist_len`].
#[inline(always)]
#[track_caller]
pub fn onesweep_histogram<K: RadixKey, const N: usize>(keys: &[K], hist: &[AtomicU64], bits: RadixBits) {
    check_block();
    let (begin, end) = bits.clamped::<K>();
    let passes = (end - begin).div_ceil(super::RADIX_BITS) as usize;
    assert!(
        hist.len() >= passes * DIGITS,
        "onesweep radix sort: the histogram holds fewer than onesweep_hist_len words"
    );
    let bs = ONESWEEP_BLOCK as usize;
    let t = thread::thread_rank_in_block() as usize;
    let counts = OS_COUNTS.get();
    crate::unroll::<MAX_PASSES>(|p| counts.store(p * bs + t, 0));
    crate::sync::sync_threads();
    let n = keys.len();
    let tile_len = bs * N;
    for tile in super::block_tile_range(n.div_ceil(tile_len)) {
        let (items, valid) = block::load_striped::<K, N>(keys, tile as u64, filler(bits));
        crate::unroll::<N>(|j| {
            if j < valid {
                crate::unroll::<MAX_PASSES>(|p| {
                    if p < passes {
                        let (shift, width) = pass_bits(begin, end, p as u32);
                        let d = bits.digit(items[j], shift, width) as usize;
                        counts.atomic(p * DIGITS + d).fetch_add(1, Relaxed);
                    }
                });
            }
        });
    }
    crate::sync::sync_threads();
    crate::unroll::<MAX_PASSES>(|p| {
        if p < passes {
            let c = counts.load(p * DIGITS + t);
            if c != 0 {
                hist[p * DIGITS + t].fetch_add(c as u64, Relaxed);
            }
        }
    });
}

#[cold]
#[inline(never)]
#[track_caller]
fn look_back_stuck(id: usize) -> ! {
    panic!(
        "onesweep radix sort: tile {id} waited too long for an earlier tile's count: the look-back state was not \
         cleared before the launch (its tile counter must start at zero)"
    )
}

/// The values of a pairs pass: the input, the output, the shared memory they move through.
struct Values<'a, 'b, 'c, V: DeviceCopy> {
    input: &'a [V],
    out: &'b mut DisjointSlice<'c, V, Scattered>,
    smem: &'a SharedSlice<V>,
}

/// One tile of an Onesweep pass over bits `bits.begin .. bits.end` (at most 8 bits; the
/// shift below 64): the keys (and values, when `values` is not empty) of the tile drawn from
/// `state`'s counter go to their sorted positions in `keys_out` / `values_out`, stable (the
/// design: `onesweep.rs`; a summary in [`algorithms`](super)). `hist`: the pass's 256 digit
/// totals (the keys' digit counts, e.g. this pass's words of [`onesweep_histogram`]). `smem_keys` / `smem_values`: shared memory of
/// `ONESWEEP_BLOCK * N` keys / values each (they may be the same bytes). A kernel that sorts
/// keys alone is smaller and faster with [`onesweep_pass_keys`] (this one holds the values'
/// path too).
///
/// Launch contract (the host API keeps it): blocks of [`ONESWEEP_BLOCK`] threads, at least one
/// per tile; `state` at least [`onesweep_state_len`] words and **all zero** before the launch.
/// Broken, the results are wrong or the kernel panics (the look-back's wait is bounded); every
/// write is bounds-checked.
///
/// # Safety
/// `hist` holds the digit counts of these `keys` for this pass's bits, `state` is all zero
/// before the launch and used by this launch alone, and nothing else in the launch writes the
/// outputs. Then the positions are a permutation of `0 .. keys.len()`: digit `d`'s keys go to
/// `first[d] ..` that plus their count, where `first` is the exclusive scan of `hist`; within
/// it, tile by tile in input order (the look-back sums the counts of the tiles before), and in
/// the tile in input order (the rank).
#[inline(always)]
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub unsafe fn onesweep_pass<K: RadixKey, V: DeviceCopy, const N: usize>(
    keys: &[K],
    values: &[V],
    hist: &[u64],
    state: &[AtomicU64],
    keys_out: &mut DisjointSlice<'_, K, Scattered>,
    values_out: &mut DisjointSlice<'_, V, Scattered>,
    bits: RadixBits,
    smem_keys: &SharedSlice<K>,
    smem_values: &SharedSlice<V>,
) {
    if values.is_empty() {
        // SAFETY: the caller's contract.
        unsafe { onesweep_tile::<K, V, N>(keys, None, hist, state, keys_out, bits, smem_keys) }
    } else {
        let v = Values { input: values, out: values_out, smem: smem_values };
        // SAFETY: the caller's contract.
        unsafe { onesweep_tile::<K, V, N>(keys, Some(v), hist, state, keys_out, bits, smem_keys) }
    }
}

/// [`onesweep_pass`] of keys alone: the same contract, without the values' path (its kernel
/// holds fewer registers).
///
/// # Safety
/// As [`onesweep_pass`].
#[inline(always)]
#[track_caller]
pub unsafe fn onesweep_pass_keys<K: RadixKey, const N: usize>(
    keys: &[K],
    hist: &[u64],
    state: &[AtomicU64],
    keys_out: &mut DisjointSlice<'_, K, Scattered>,
    bits: RadixBits,
    smem_keys: &SharedSlice<K>,
) {
    // SAFETY: the caller's contract.
    unsafe { onesweep_tile::<K, K, N>(keys, None, hist, state, keys_out, bits, smem_keys) }
}

/// The pass of [`onesweep_pass`] (`values`: `None` for keys alone; inlined into each caller, so
/// a kernel of keys alone carries none of the values' code or registers).
///
/// Registers: the values' path is absent from a kernel of keys alone; each key's digit and
/// its rank in the warp are packed in one word (though ptxas may still keep their parts: the
/// `u32` keys kernel measured 96 registers without a launch bound), and the warp's first rank
/// of each digit in the tile is folded into the per-warp counts before the scatter (one
/// shared load an item).
///
/// # Safety
/// As [`onesweep_pass`].
#[inline(always)]
#[track_caller]
unsafe fn onesweep_tile<K: RadixKey, V: DeviceCopy, const N: usize>(
    keys: &[K],
    values: Option<Values<'_, '_, '_, V>>,
    hist: &[u64],
    state: &[AtomicU64],
    keys_out: &mut DisjointSlice<'_, K, Scattered>,
    bits: RadixBits,
    smem_keys: &SharedSlice<K>,
) {
    check_block();
    let (shift, width) = (bits.begin, bits.end.saturating_sub(bits.begin));
    assert!(width <= super::RADIX_BITS && shift < 64, "onesweep radix sort: a pass sorts at most RADIX_BITS bits");
    let bs = ONESWEEP_BLOCK as usize;
    let tile_len = bs * N;
    assert!(tile_len <= MAX_TILE, "onesweep radix sort: a tile holds at most ONESWEEP_BLOCK * ONESWEEP_ITEMS keys");
    let n = keys.len();
    let tiles = n.div_ceil(tile_len);
    assert!(hist.len() >= DIGITS, "onesweep radix sort: the pass's histogram holds fewer than 256 words");
    if let Some(v) = &values {
        assert!(v.input.len() >= n, "onesweep radix sort: fewer values than keys");
        assert!(
            v.smem.len() >= tile_len,
            "onesweep radix sort: the shared memory holds fewer than ONESWEEP_BLOCK * N values"
        );
    }
    assert!(
        state.len() >= onesweep_state_len(n, tile_len),
        "onesweep radix sort: the state holds fewer words than onesweep_state_len"
    );
    assert!(
        smem_keys.len() >= tile_len,
        "onesweep radix sort: the shared memory holds fewer than ONESWEEP_BLOCK * N keys"
    );
    let (counter, slots) = state.split_at(1);
    let slots = &slots[..tiles * DIGITS];
    let id = draw_tile(&counter[0]);
    if id >= tiles {
        return;
    }
    let t = thread::thread_rank_in_block() as usize;
    let (w, lane) = (t / 32, t % 32);
    let counts = OS_COUNTS.get();
    let bases = OS_BASE.get();
    crate::unroll::<WARPS>(|i| counts.store(i * DIGITS + t, 0));

    // 1. Load, warp-striped (see the module docs).
    let tile_base = id * tile_len;
    let valid = (n - tile_base).min(tile_len);
    let first = tile_base + w * 32 * N + lane;
    let fill = filler::<K>(bits);
    let k: [K; N] = if valid == tile_len {
        // SAFETY: `first + 32 j < tile_base + tile_len <= n` (a full tile).
        core::array::from_fn(|j| unsafe { *keys.get_unchecked(first + 32 * j) })
    } else {
        core::array::from_fn(|j| match keys.get(first + 32 * j) {
            Some(x) => *x,
            None => fill,
        })
    };
    let digit = |key: K| bits.digit(key, shift, width);
    crate::sync::sync_threads();

    // 2. Rank in the warp.
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let below_mask = (1u32 << lane) - 1;
    // Per key, its digit (above 16 bits) and its rank among the warp's keys of that digit
    // (below: at most `32 N`): one register a key across the barriers, where the digit held
    // apart (or recomputed, which the compiler merges back) would be another.
    let mut ranked = [0u32; N];
    crate::unroll::<N>(|j| {
        let d = digit(k[j]);
        let peers = warp.match_any(d);
        let leader = 31 - peers.leading_zeros();
        let mut old = 0;
        if lane as u32 == leader {
            old = counts.atomic(w * DIGITS + d as usize).fetch_add(peers.count_ones(), Relaxed);
        }
        let old = warp.shfl(old, leader);
        ranked[j] = d << 16 | (old + (peers & below_mask).count_ones()) & 0xffff;
    });
    crate::sync::sync_threads();

    // 3. The tile's count of digit `t`, published for the look-back at once.
    let mut count = 0u32;
    crate::unroll::<WARPS>(|i| count += counts.load(i * DIGITS + t));
    let slot = &slots[id * DIGITS + t];
    slot.store((if id == 0 { INCLUSIVE } else { AGGREGATE }) << 62 | count as u64, Relaxed);
    // One scan for both prefixes: the pass's total of digit `t` (below 2^46: the host keeps
    // `n` there) above 16 bits, the tile's count (at most 65535 in all) below.
    let packed = (hist[t] << 16) | count as u64;
    let s = block::scan_items(&[packed], |a: u64, b: u64| a.wrapping_add(b));
    let before = s.prefix.unwrap_or(0);
    let first_in_tile = (before & 0xffff) as u32;
    let first_in_pass = before >> 16;
    // Warp `i`'s first tile position of digit `t`: the tile's first, plus the digit's keys in
    // the warps before `i`.
    let mut run = first_in_tile;
    crate::unroll::<WARPS>(|i| {
        let c = counts.load(i * DIGITS + t);
        counts.store(i * DIGITS + t, run);
        run += c;
    });

    // 4. Look-back for digit `t`.
    let mut prefix = 0u64;
    if id > 0 {
        let mut k = id;
        loop {
            k -= 1;
            let mut polls = 0u32;
            let mut backoff = 32u32;
            let x = loop {
                let x = slots[k * DIGITS + t].load(Relaxed);
                if x >> 62 != 0 {
                    break x;
                }
                polls += 1;
                if polls >= MAX_POLLS {
                    look_back_stuck(id);
                }
                crate::raw::nanosleep(backoff);
                backoff = if backoff < 512 { backoff * 2 } else { backoff };
            };
            prefix = prefix.wrapping_add(x & COUNT_MASK);
            if x >> 62 == INCLUSIVE || k == 0 {
                break;
            }
        }
        slot.store(INCLUSIVE << 62 | (prefix.wrapping_add(count as u64) & COUNT_MASK), Relaxed);
    }
    bases.store(t, first_in_pass.wrapping_add(prefix).wrapping_sub(first_in_tile as u64));
    crate::sync::sync_threads();

    // 5. Scatter through shared memory: keys to their tile ranks (a permutation of the tile's
    // positions when the counts are right; checked, so a wrong one stays in the scratch).
    let at: [u32; N] =
        core::array::from_fn(|j| counts.load(w * DIGITS + (ranked[j] >> 16) as usize) + (ranked[j] & 0xffff));
    crate::unroll::<N>(|j| {
        if (at[j] as usize) < tile_len {
            // SAFETY: `at[j] < tile_len <= smem_keys.len()` (asserted above).
            unsafe { smem_keys.store_unchecked(at[j] as usize, k[j]) };
        }
    });
    crate::sync::sync_threads();
    let (kdst, klen) = (keys_out.as_mut_ptr(), keys_out.len());
    let sorted_digits = OS_DIGITS.get();
    crate::unroll::<N>(|j| {
        let s = t + j * bs;
        // SAFETY: `s < tile_len <= smem_keys.len()`.
        let key = unsafe { smem_keys.load_unchecked(s) };
        let d = digit(key) as usize;
        let pos = bases.load(d).wrapping_add(s as u64) as usize;
        if values.is_some() {
            sorted_digits.store(s, d as u8);
        }
        if s < valid && pos < klen {
            // SAFETY: in bounds (checked). Disjoint (the caller's contract): sorted key `s` of
            // the tile, with digit `d`, goes to digit `d`'s first output position for this tile
            // plus its place among the tile's keys of digit `d` (`s - tile_first[d]`); each
            // `s` is one thread's.
            unsafe { kdst.add(pos).write(key) };
        }
    });
    if let Some(Values { input: values, out: values_out, smem: smem_values }) = values {
        let v: [V; N] = if valid == tile_len {
            // SAFETY: as the keys' loads (`values.len() >= keys.len()`, asserted above).
            core::array::from_fn(|j| unsafe { *values.get_unchecked(first + 32 * j) })
        } else {
            core::array::from_fn(|j| match values.get(first + 32 * j) {
                Some(x) => *x,
                None => values[0],
            })
        };
        // The keys' reads of the scratch are done before the values (maybe the same bytes)
        // replace them.
        crate::sync::sync_threads();
        crate::unroll::<N>(|j| {
            if (at[j] as usize) < tile_len {
                // SAFETY: `at[j] < tile_len <= smem_values.len()` (asserted above).
                unsafe { smem_values.store_unchecked(at[j] as usize, v[j]) };
            }
        });
        crate::sync::sync_threads();
        let (vdst, vlen) = (values_out.as_mut_ptr(), values_out.len());
        crate::unroll::<N>(|j| {
            let s = t + j * bs;
            // The sorted key's digit (stored above, before the barriers), so the key's position.
            let pos = bases.load(sorted_digits.load(s) as usize).wrapping_add(s as u64) as usize;
            if s < valid && pos < vlen {
                // SAFETY: in bounds (checked); disjoint as the key's position. Shared: `s <
                // tile_len`.
                unsafe { vdst.add(pos).write(smem_values.load_unchecked(s)) };
            }
        });
    }
}

//! Kernels of `tests/gpu/algorithms.rs`: the block layer (`cohort::block`) in a kernel of its
//! own, and the algorithms instantiated for a user's type and operator
//! (`cohort_algorithms::algorithm_kernels!`), with no `unsafe`.

use cohort::block::{self, Blocked, Striped};
use cohort::prelude::*;

/// Items per thread of the block-layer kernels.
pub const ITEMS: usize = 4;

/// Per tile (of `block_size() * ITEMS` elements, tiles grid-strided over the blocks): loaded
/// striped, exchanged to blocked through dynamic shared memory (`block_size() * ITEMS` u32),
/// scanned inclusively (wrapping sum) within the tile and stored blocked into `scan`; the
/// tile's sum of valid elements (`reduce_items`) into `sums[tile]` by each tile's owner
/// threads (stored blocked in slot 0 of the tile's first thread, as a tile of one item).
#[kernel]
pub fn block_tile_scan(
    input: &[u32],
    mut scan: DisjointSlice<u32, Blocked<ITEMS>>,
    mut sums: DisjointSlice<u32, Striped<1>>,
) {
    let tile_len = thread::block_size() as usize * ITEMS;
    let tiles = input.len().div_ceil(tile_len) as u64;
    let smem = cohort::shared::dynamic::<u32>();
    for tile in block::tiles(tiles) {
        let (striped, valid) = block::load_striped::<u32, ITEMS>(input, tile.id(), 0);
        let items = block::striped_to_blocked(&smem, striped);
        let total = block::reduce_items(&striped, valid, |a: u32, b: u32| a.wrapping_add(b));
        let s = block::scan_items(&items, |a: u32, b: u32| a.wrapping_add(b));
        let incl = s.inclusive(&items, |a: u32, b: u32| a.wrapping_add(b));
        block::store_blocked(&mut scan, &tile, &incl);
        // `sums` as a striped output of one item per thread: thread 0 of the tile's block
        // writes element `tile * block_size()`; the host reads every `block_size()`-th one.
        if thread::thread_rank_in_block() == 0 {
            block::store_striped(&mut sums, &tile, &[total.unwrap_or(u32::MAX)]);
        }
    }
}

/// Copies `input` to `out` through the blocked → striped exchange: loaded blocked, exchanged,
/// stored striped (every element lands where it came from).
#[kernel]
pub fn block_tile_copy(input: &[u64], mut out: DisjointSlice<u64, Striped<ITEMS>>) {
    let tile_len = thread::block_size() as usize * ITEMS;
    let tiles = input.len().div_ceil(tile_len) as u64;
    let smem = cohort::shared::dynamic::<u64>();
    for tile in block::tiles(tiles) {
        let (items, _) = block::load_blocked::<u64, ITEMS>(input, tile.id(), 0);
        let striped = block::blocked_to_striped(&smem, items);
        block::store_striped(&mut out, &tile, &striped);
    }
}

/// Copies `input` to `out` through the coalesced blocked load and store
/// ([`block::load_blocked_coalesced`], [`block::store_blocked_coalesced_valid`]), tiles
/// grid-strided over the blocks. With `split != 0` the odd threads use them and the even ones
/// the per-thread [`block::load_blocked`] / [`block::store_blocked_valid`] in another branch,
/// so each warp calls the coalesced pair diverged (its per-thread path must be taken).
fn coalesced_copy<T: DeviceCopy, const N: usize>(
    input: &[T],
    out: &mut DisjointSlice<T, Blocked<N>>,
    split: u32,
    fill: T,
) {
    let tile_len = thread::block_size() as usize * N;
    let tiles = input.len().div_ceil(tile_len) as u64;
    for tile in block::tiles(tiles) {
        let in_tile = input.len().saturating_sub(tile.id() as usize * tile_len);
        if split != 0 && thread::thread_rank_in_block() % 2 == 0 {
            let (items, _) = block::load_blocked::<T, N>(input, tile.id(), fill);
            block::store_blocked_valid(out, &tile, &items, in_tile);
        } else {
            let (items, _) = block::load_blocked_coalesced::<T, N>(input, tile.id(), fill);
            block::store_blocked_coalesced_valid(out, &tile, &items, in_tile);
        }
    }
}

/// [`coalesced_copy`] of `u32`s, 16 a thread.
#[kernel]
pub fn block_coalesced_copy_u32(input: &[u32], mut out: DisjointSlice<u32, Blocked<16>>, split: u32) {
    coalesced_copy(input, &mut out, split, u32::MAX);
}

/// [`coalesced_copy`] of `u64`s, 8 a thread.
#[kernel]
pub fn block_coalesced_copy_u64(input: &[u64], mut out: DisjointSlice<u64, Blocked<8>>, split: u32) {
    coalesced_copy(input, &mut out, split, u64::MAX);
}

/// [`coalesced_copy`] of 12-byte [`Sum3`]s, 4 a thread.
#[kernel]
pub fn block_coalesced_copy_sum3(input: &[Sum3], mut out: DisjointSlice<Sum3, Blocked<4>>, split: u32) {
    coalesced_copy(input, &mut out, split, Sum3 { a: 1, b: 2, c: 3 });
}

/// A user's element type: the affine map `x ↦ a·x + b` on `u32` (wrapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct Affine {
    /// The factor.
    pub a: u32,
    /// The offset.
    pub b: u32,
}

/// `f` then `g`: associative, not commutative (the scan must keep the order).
#[must_use]
pub fn compose(f: Affine, g: Affine) -> Affine {
    Affine { a: g.a.wrapping_mul(f.a), b: g.a.wrapping_mul(f.b).wrapping_add(g.b) }
}

cohort_algorithms::algorithm_kernels! {
    /// Scans and reductions of affine maps, composed in order.
    pub mod affine {
        type T = super::Affine;
        op = super::compose;
        scan = affine_scan_tile;
        reduce = affine_reduce_tiles;
    }
}

/// A 32-byte user type (the widest a scan takes): a 2×2 matrix of `u64`s, row-major,
/// multiplied with wrapping arithmetic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct Mat2 {
    /// Row 0, column 0.
    pub a: u64,
    /// Row 0, column 1.
    pub b: u64,
    /// Row 1, column 0.
    pub c: u64,
    /// Row 1, column 1.
    pub d: u64,
}

/// The product `x · y`: associative, not commutative.
#[must_use]
pub fn mat_mul(x: Mat2, y: Mat2) -> Mat2 {
    let m = |p: u64, q: u64, r: u64, s: u64| p.wrapping_mul(q).wrapping_add(r.wrapping_mul(s));
    Mat2 { a: m(x.a, y.a, x.b, y.c), b: m(x.a, y.b, x.b, y.d), c: m(x.c, y.a, x.d, y.c), d: m(x.c, y.b, x.d, y.d) }
}

cohort_algorithms::algorithm_kernels! {
    /// Scans of 2×2 `u64` matrices, multiplied in order (32-byte status slots' values).
    pub mod mat2 {
        type T = super::Mat2;
        op = super::mat_mul;
        scan = mat2_scan_tile;
        reduce = mat2_reduce_tiles;
    }
}

/// A 12-byte user type (three `u32`s: an element straddles 16-byte vectors), summed field by
/// field with wrapping arithmetic: associative and commutative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct Sum3 {
    /// Field 0.
    pub a: u32,
    /// Field 1.
    pub b: u32,
    /// Field 2.
    pub c: u32,
}

/// Field-wise wrapping sum.
#[must_use]
pub fn sum3(x: Sum3, y: Sum3) -> Sum3 {
    Sum3 { a: x.a.wrapping_add(y.a), b: x.b.wrapping_add(y.b), c: x.c.wrapping_add(y.c) }
}

cohort_algorithms::algorithm_kernels! {
    /// Reductions of 12-byte triples (elements that straddle 16-byte vectors).
    pub mod sum3 {
        type T = super::Sum3;
        op = super::sum3;
        scan = sum3_scan_tile;
        reduce = sum3_reduce_tiles;
    }
}

cohort_algorithms::scan_by_key_kernels! {
    /// Affine maps composed in order within runs of equal 12-byte keys (a user's key type and
    /// a non-commutative op).
    pub mod affine_by_key3 {
        type K = super::Sum3;
        type T = super::Affine;
        op = super::compose;
        kernel = affine_scan_by_key3_tile;
    }
}

/// A 24-byte user type (the widest value a scan by key takes): the upper triangular 2×2
/// matrix `[a b; 0 c]` of `u64`s, multiplied with wrapping arithmetic (associative, not
/// commutative).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, DeviceCopy)]
#[repr(C)]
pub struct Tri {
    /// Top left.
    pub a: u64,
    /// Top right.
    pub b: u64,
    /// Bottom right.
    pub c: u64,
}

/// `x · y` (wrapping).
#[must_use]
pub fn tri_mul(x: Tri, y: Tri) -> Tri {
    Tri {
        a: x.a.wrapping_mul(y.a),
        b: x.a.wrapping_mul(y.b).wrapping_add(x.b.wrapping_mul(y.c)),
        c: x.c.wrapping_mul(y.c),
    }
}

cohort_algorithms::scan_by_key_kernels! {
    /// Products of 24-byte triangular matrices within runs of equal `u32` keys.
    pub mod tri_by_key {
        type K = u32;
        type T = super::Tri;
        op = super::tri_mul;
        kernel = tri_scan_by_key_tile;
    }
}

cohort_algorithms::scan_by_key_kernels! {
    /// Wrapping `u32` sums within runs of `f32` keys equal by `==` (a NaN key is a segment of its
    /// own; `-0.0 == 0.0`).
    pub mod sum_by_f32_key {
        type K = f32;
        type T = u32;
        op = |a: u32, b: u32| a.wrapping_add(b);
        kernel = sum_scan_by_f32_key_tile;
    }
}

/// A user's sort key: a point, ordered by `y` descending, then by `x` ascending, both by
/// `total_cmp` (NaNs sort; `-0.0 < 0.0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceCopy)]
#[repr(C)]
pub struct Pt {
    /// Second key, ascending.
    pub x: f32,
    /// First key, descending.
    pub y: f32,
}

/// [`Pt`]'s order.
#[must_use]
pub fn pt_less(a: &Pt, b: &Pt) -> bool {
    match b.y.total_cmp(&a.y) {
        core::cmp::Ordering::Less => true,
        core::cmp::Ordering::Greater => false,
        core::cmp::Ordering::Equal => a.x.total_cmp(&b.x).is_lt(),
    }
}

cohort_algorithms::merge_sort_kernels! {
    /// Points by `y` descending, then `x`, with `u32` values.
    pub mod pt_sort {
        type K = super::Pt;
        type V = u32;
        less = super::pt_less;
        tiles = pt_sort_tiles;
        partition = pt_sort_partition;
        merge = pt_sort_merge;
    }
}

/// [`Sum3`]s by their field `a` alone (many ties: stability shows).
#[must_use]
pub fn sum3_a_less(x: &Sum3, y: &Sum3) -> bool {
    x.a < y.a
}

cohort_algorithms::merge_sort_kernels! {
    /// 12-byte keys with 24-byte values (five items a thread).
    pub mod wide_sort {
        type K = super::Sum3;
        type V = super::Tri;
        less = super::sum3_a_less;
        tiles = wide_sort_tiles;
        partition = wide_sort_partition;
        merge = wide_sort_merge;
    }
}

cohort_algorithms::merge_sort_kernels! {
    /// A comparator that is not an order (`a < b` and `b < a` alike for keys of odd distance):
    /// unspecified results, never a write out of bounds.
    pub mod hostile_sort {
        type K = u32;
        type V = u32;
        less = |a: &u32, b: &u32| (a ^ b).count_ones() % 2 == 1;
        tiles = hostile_sort_tiles;
        partition = hostile_sort_partition;
        merge = hostile_sort_merge;
    }
}

cohort_algorithms::merge_sort_kernels! {
    /// The comparator that says "less" to everything.
    pub mod always_less_sort {
        type K = u32;
        type V = u32;
        less = |_: &u32, _: &u32| true;
        tiles = always_less_tiles;
        partition = always_less_partition;
        merge = always_less_merge;
    }
}

macro_rules! block_radix_sort_kernel {
    ($($name:ident: $k:ty;)*) => {$(
        /// Per tile (grid-strided): the keys and their values (`pairs != 0`; else the keys
        /// alone, `values_out` untouched) sorted in the tile by bits `begin .. end`
        /// (`descending != 0`: largest first) with `block::radix_sort_pairs` /
        /// `radix_sort_keys`, stored blocked. A partial tile is filled with keys that sort last.
        #[kernel]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            keys: &[$k],
            values: &[u32],
            mut keys_out: DisjointSlice<$k, Blocked<ITEMS>>,
            mut values_out: DisjointSlice<u32, Blocked<ITEMS>>,
            begin: u32,
            end: u32,
            descending: u32,
            pairs: u32,
        ) {
            use cohort::block::{RadixBits, RadixKey};
            let tile_len = thread::block_size() as usize * ITEMS;
            let tiles = keys.len().div_ceil(tile_len) as u64;
            let bits = RadixBits { begin, end, descending: descending != 0 };
            let fill = if bits.descending { <$k>::FIRST } else { <$k>::LAST };
            let smem_k = cohort::shared::dynamic::<$k>().sub(0, tile_len);
            let smem_v = cohort::shared::dynamic::<u32>().sub(tile_len * size_of::<$k>() / 4, tile_len);
            for tile in block::tiles(tiles) {
                let (k, _) = block::load_blocked::<$k, ITEMS>(keys, tile.id(), fill);
                let in_tile = (keys.len() - tile.base(ITEMS) as usize).min(tile_len);
                if pairs != 0 {
                    let (v, _) = block::load_blocked::<u32, ITEMS>(values, tile.id(), u32::MAX);
                    let (k, v) = block::radix_sort_pairs(&smem_k, &smem_v, k, v, bits);
                    block::store_blocked_valid(&mut keys_out, &tile, &k, in_tile);
                    block::store_blocked_valid(&mut values_out, &tile, &v, in_tile);
                } else {
                    let k = block::radix_sort_keys(&smem_k, k, bits);
                    block::store_blocked_valid(&mut keys_out, &tile, &k, in_tile);
                }
            }
        }
    )*};
}

block_radix_sort_kernel! {
    block_radix_sort_u32: u32;
    block_radix_sort_f32: f32;
    block_radix_sort_i64: i64;
}

/// Per block: a [`block::BlockHistogram`] of `bins` bins over the first `counters` `u32`s of
/// dynamic shared memory, counting `data[i] % modulus` for the block's grid-stride share of
/// `data` (bins at or past `bins` are not counted; half the threads by `add`, half by
/// `add_items`), merged into `hist`; then the block's leader stores the block's count of bin
/// `block % bins` (`counts`) into `probe[block]`.
#[kernel]
pub fn block_histogram_mod(
    data: &[u32],
    modulus: u32,
    bins: u32,
    counters: u32,
    hist: &[cohort::atomic::AtomicU32],
    mut probe: DisjointSlice<u32, cohort::slice::PerBlock>,
) {
    let smem = cohort::shared::dynamic::<u32>().sub(0, counters as usize);
    let h = block::BlockHistogram::new(&smem, bins as usize);
    for i in thread::grid_stride(data.len()) {
        let b = data[*i] % modulus;
        if thread::thread_rank_in_block() % 2 == 0 {
            h.add(b);
        } else {
            h.add_items(&[b, 0], 1);
        }
    }
    h.merge_into(hist);
    let block = cg::this_thread_block();
    if let Some(b) = block.leader_index() {
        let bin = thread::block_rank() as usize % bins as usize;
        probe.set(b, h.counts(bin));
    }
}

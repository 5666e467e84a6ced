//! `cg::reduce`, `cg::inclusive_scan`, `cg::exclusive_scan` for every op over every element
//! type, on every tile size, the block, divergent coalesced groups, labeled and binary
//! partitions.
//!
//! Each thread writes [`SLOTS`] results: `out[slot * n + i]` for thread `i` of `n`, and per
//! partition group its lane mask, meta rank and meta size into `meta[group * 3 * n + …]` so
//! the host can rebuild exactly the groups the hardware formed.

use cohort::cg::{self, Collective, ReduceOp, WarpGroup};
use cohort::prelude::*;

/// Tile sizes, in slot order.
pub const TILE_SIZES: [u32; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
/// Slot groups: the ten tiles, the block, a coalesced group, a labeled and a binary partition.
pub const GROUPS: usize = 14;
/// Results per thread: reduce, inclusive scan, exclusive scan for each group.
pub const SLOTS: usize = 3 * GROUPS;
/// Block size the kernel must be launched with (the largest tile).
pub const BLOCK: u32 = 512;

/// A 24-byte element with every operator, to reduce and scan a struct.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, DeviceCopy)]
pub struct S24 {
    /// Compared first.
    pub a: u64,
    /// Then this.
    pub b: u64,
    /// Then this.
    pub c: u64,
}

impl core::ops::Add for S24 {
    type Output = S24;
    fn add(self, o: S24) -> S24 {
        S24 { a: self.a.wrapping_add(o.a), b: self.b.wrapping_add(o.b), c: self.c.wrapping_add(o.c) }
    }
}
impl core::ops::BitAnd for S24 {
    type Output = S24;
    fn bitand(self, o: S24) -> S24 {
        S24 { a: self.a & o.a, b: self.b & o.b, c: self.c & o.c }
    }
}
impl core::ops::BitOr for S24 {
    type Output = S24;
    fn bitor(self, o: S24) -> S24 {
        S24 { a: self.a | o.a, b: self.b | o.b, c: self.c | o.c }
    }
}
impl core::ops::BitXor for S24 {
    type Output = S24;
    fn bitxor(self, o: S24) -> S24 {
        S24 { a: self.a ^ o.a, b: self.b ^ o.b, c: self.c ^ o.c }
    }
}

#[inline(always)]
fn put3<G: Collective, T: DeviceCopy + Default, O: ReduceOp<T>>(
    g: &G,
    v: T,
    op: O,
    out: *mut T,
    slot: &mut usize,
    n: usize,
    i: usize,
) {
    let r = cg::reduce(g, v, op);
    let inc = cg::inclusive_scan(g, v, op);
    let exc = cg::exclusive_scan(g, v, op);
    // SAFETY: `out` has SLOTS * n elements (kernel contract); `i < n`; each thread writes its
    // own column.
    unsafe {
        *out.add(*slot * n + i) = r;
        *out.add((*slot + 1) * n + i) = inc;
        *out.add((*slot + 2) * n + i) = exc;
    }
    *slot += 3;
}

#[inline(always)]
fn put_meta<G: WarpGroup>(g: &G, meta: *mut u32, which: usize, n: usize, i: usize) {
    // SAFETY: `meta` has 3 * 3 * n elements (kernel contract); each thread its own column.
    unsafe {
        *meta.add((3 * which) * n + i) = g.lane_mask();
        *meta.add((3 * which + 1) * n + i) = g.meta_group_rank();
        *meta.add((3 * which + 2) * n + i) = g.meta_group_size();
    }
}

macro_rules! tiles {
    ($block:ident, $v:ident, $op:ident, $out:ident, $slot:ident, $n:ident, $i:ident; $($size:literal)*) => {$(
        let t = cg::tiled_partition::<$size>(&$block);
        put3(&t, $v, $op, $out, &mut $slot, $n, $i);
    )*};
}

/// Every collective on every group, for element `T` and operator `O`.
///
/// # Safety
/// Launch with blocks of [`BLOCK`] threads and exactly `data.len()` threads in all; `out`
/// must hold `SLOTS * data.len()` values and `meta` `9 * data.len()`.
// The two branches are identical on purpose: each forms its own coalesced group.
#[allow(clippy::if_same_then_else)]
#[kernel(instances(
    (u32, cg::plus), (u32, cg::less), (u32, cg::greater), (u32, cg::bit_and), (u32, cg::bit_or), (u32, cg::bit_xor),
    (i32, cg::plus), (i32, cg::less), (i32, cg::greater), (i32, cg::bit_and), (i32, cg::bit_or), (i32, cg::bit_xor),
    (u64, cg::plus), (u64, cg::less), (u64, cg::greater), (u64, cg::bit_and), (u64, cg::bit_or), (u64, cg::bit_xor),
    (i64, cg::plus), (i64, cg::less), (i64, cg::greater), (i64, cg::bit_and), (i64, cg::bit_or), (i64, cg::bit_xor),
    (f32, cg::plus), (f32, cg::less), (f32, cg::greater),
    (f64, cg::plus), (f64, cg::less), (f64, cg::greater),
    (S24, cg::plus), (S24, cg::less), (S24, cg::greater), (S24, cg::bit_and), (S24, cg::bit_or), (S24, cg::bit_xor)
))]
pub unsafe fn collectives<T: DeviceCopy + Default, O: ReduceOp<T> + Default>(
    data: &[T],
    pred: &[u32],
    label: &[u32],
    out: *mut T,
    meta: *mut u32,
) {
    let n = data.len();
    let i = thread::global_id() as usize;
    let v = data[i];
    let op = O::default();
    let block = cg::this_thread_block();
    let mut slot = 0;
    tiles!(block, v, op, out, slot, n, i; 1 2 4 8 16 32 64 128 256 512);
    put3(&block, v, op, out, &mut slot, n, i);
    // A divergent branch: the lanes that took it together.
    if pred[i] & 1 == 1 {
        let g = cg::coalesced_threads();
        put3(&g, v, op, out, &mut slot, n, i);
        put_meta(&g, meta, 0, n, i);
    } else {
        let g = cg::coalesced_threads();
        put3(&g, v, op, out, &mut slot, n, i);
        put_meta(&g, meta, 0, n, i);
    }
    let warp = cg::tiled_partition::<32>(&block);
    let g = cg::labeled_partition(&warp, label[i]);
    put3(&g, v, op, out, &mut slot, n, i);
    put_meta(&g, meta, 1, n, i);
    let g = cg::binary_partition(&warp, pred[i] & 2 != 0);
    put3(&g, v, op, out, &mut slot, n, i);
    put_meta(&g, meta, 2, n, i);
}

/// A closure as the operator (`wrapping_mul`, associative and commutative mod 2^32) on a
/// tile of 32, a tile of 8, the block and a labeled partition: `out[4 * i + k]`.
#[kernel]
pub fn closure_reduce(data: &[u32], label: &[u32], mut out: DisjointSlice<[u32; 4]>) {
    let i = thread::index_1d();
    let v = data[*i];
    let mul = |a: u32, b: u32| a.wrapping_mul(b);
    let block = cg::this_thread_block();
    let t32 = cg::tiled_partition::<32>(&block);
    let t8 = cg::tiled_partition::<8>(&block);
    let r = [
        cg::reduce(&t32, v, mul),
        cg::reduce(&t8, v, mul),
        cg::reduce(&block, v, mul),
        cg::reduce(&cg::labeled_partition(&t32, label[*i]), v, mul),
    ];
    out.set(&i, r);
}

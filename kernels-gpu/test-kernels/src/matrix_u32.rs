//! `DisjointMatrix` with `u32` offsets (`tests/gpu/classic_shapes.rs`): the layouts write the
//! same elements as with `usize` offsets, through `set` and through `split!`'s full tiles, and
//! a matrix too large for `u32` offsets is refused before any write.

use cohort::matrix::Layout;
use cohort::prelude::*;

use crate::shapes::code;

/// Every element of this thread's tile through `ThreadTile::set` (checked per element).
#[inline(always)]
fn write_set<L: Layout>(shape: &BlockShape<8, 4>, out: &mut DisjointMatrix<u32, L, u32>) {
    let mut mine = out.tile(shape);
    for k in 0..L::KR {
        for l in 0..L::KC {
            mine.set(k, l, code(k, l));
        }
    }
}

/// Every element of this thread's tile through `split!`: a full tile's unchecked offsets.
#[inline(always)]
fn write_split<L: Layout>(shape: &BlockShape<8, 4>, out: &mut DisjointMatrix<u32, L, u32>) {
    cohort::split!(out.tile(shape), |mut mine| {
        for k in 0..L::KR {
            for l in 0..L::KC {
                mine.set(k, l, code(k, l));
            }
        }
    });
}

/// `Cyclic<2, 3>` with `u32` offsets, through `set`.
#[kernel]
pub fn u32_layout_cyclic(shape: BlockShape<8, 4>, mut out: DisjointMatrix<u32, Cyclic<2, 3>, u32>) {
    write_set(&shape, &mut out);
}

/// `Blocked<3, 2>` with `u32` offsets, through `split!`.
#[kernel]
pub fn u32_layout_blocked(shape: BlockShape<8, 4>, mut out: DisjointMatrix<u32, Blocked<3, 2>, u32>) {
    write_split(&shape, &mut out);
}

/// `Transposed<Cyclic<2, 1>>` with `u32` offsets, through `split!`.
#[kernel]
pub fn u32_layout_transposed(shape: BlockShape<8, 4>, mut out: DisjointMatrix<u32, Transposed<Cyclic<2, 1>>, u32>) {
    write_split(&shape, &mut out);
}

/// `TransposedTiles<Blocked<2, 2>>` with `u32` offsets, through `set`.
#[kernel]
pub fn u32_layout_transposed_tiles(
    shape: BlockShape<8, 4>,
    mut out: DisjointMatrix<u32, TransposedTiles<Blocked<2, 2>>, u32>,
) {
    write_set(&shape, &mut out);
}

/// What each thread of a `u32`-offset matrix sees: `rows · 2^40 + cols · 2^8 + n`, `n` the
/// number of its six `Cyclic<2, 3>` elements that `set` wrote (the others lie outside).
#[kernel]
pub fn u32_matrix_seen(
    shape: BlockShape<8, 4>,
    mut out: DisjointMatrix<u8, Cyclic<2, 3>, u32>,
    mut seen: DisjointSlice<u64>,
) {
    let (rows, cols) = (out.rows() as u64, out.cols() as u64);
    let mut mine = out.tile(&shape);
    let mut wrote = 0u64;
    for k in 0..2 {
        for l in 0..3 {
            wrote += mine.set(k, l, 1) as u64;
        }
    }
    let i = thread::index_1d();
    seen.set(&i, (rows << 40) | (cols << 8) | wrote);
}

//! Launch shapes, matrix layouts, branch-free reads and floating point (`tests/gpu/shapes.rs`).

use cohort::fp::{self, fast};
use cohort::matrix::Layout;
use cohort::prelude::*;

/// What a writer writes: its block, thread and element, packed (checked on the host against
/// the layout's definition; also `matrix_u32`'s).
#[inline(always)]
pub(crate) fn code(k: usize, l: usize) -> u32 {
    let b = thread::block_idx();
    let t = thread::thread_idx();
    (b.y << 24) | (b.x << 16) | (t.y << 12) | (t.x << 6) | ((k as u32) << 3) | l as u32
}

#[inline(always)]
fn write_all<L: Layout>(shape: &BlockShape<8, 4>, out: &mut DisjointMatrix<u32, L>) {
    let mut mine = out.tile(shape);
    for k in 0..L::KR {
        for l in 0..L::KC {
            mine.set(k, l, code(k, l));
        }
    }
}

/// Every thread writes its elements of a `Cyclic<2, 3>` layout.
#[kernel]
pub fn layout_cyclic(shape: BlockShape<8, 4>, mut out: DisjointMatrix<u32, Cyclic<2, 3>>) {
    write_all(&shape, &mut out);
}

/// As [`layout_cyclic`] for `Blocked<3, 2>`.
#[kernel]
pub fn layout_blocked(shape: BlockShape<8, 4>, mut out: DisjointMatrix<u32, Blocked<3, 2>>) {
    write_all(&shape, &mut out);
}

/// As [`layout_cyclic`] for `Transposed<Cyclic<2, 1>>`.
#[kernel]
pub fn layout_transposed(shape: BlockShape<8, 4>, mut out: DisjointMatrix<u32, Transposed<Cyclic<2, 1>>>) {
    write_all(&shape, &mut out);
}

/// As [`layout_cyclic`] for `TransposedTiles<Blocked<2, 2>>`.
#[kernel]
pub fn layout_transposed_tiles(shape: BlockShape<8, 4>, mut out: DisjointMatrix<u32, TransposedTiles<Blocked<2, 2>>>) {
    write_all(&shape, &mut out);
}

/// `out[rank] = (x, y, rank)` packed, for a launch of exactly 32 × 4.
#[kernel]
pub fn shaped_ranks(shape: BlockShape<32, 4>, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    out.set(&i, (shape.x() << 16) | (shape.y() << 8) | shape.rank());
}

/// `out[i]` for the `(r, c)` pairs in `at` (some outside): `m.load_or(r, c, -1)`, `m.get`, the
/// element `(r, c)` of a full 4 × 4 window at `(1, 2)` (`-2` past the window), and of a window at
/// `(7, 5)` that runs off the matrix (`load_or`, `-1` outside the matrix, `-2` past the window).
#[kernel]
pub fn matrix_reads(data: &[f32], rows: usize, cols: usize, at: &[[u32; 2]], mut out: DisjointSlice<[f32; 4]>) {
    let i = thread::index_1d();
    let Some(&[r, c]) = at.get(*i) else { return };
    let (r, c) = (r as usize, c as usize);
    let Some(m) = Matrix::new(data, rows, cols) else {
        out.set(&i, [-3.0; 4]);
        return;
    };
    let got = m.get(r, c).copied().unwrap_or(-1.0);
    let (inner, edge) = (m.window::<4, 4>(1, 2), m.window::<4, 4>(7, 5));
    let (w, e) = if r < 4 && c < 4 {
        (inner.get(r, c).copied().unwrap_or(-4.0), edge.load_or(r, c, -1.0))
    } else {
        (-2.0, -2.0)
    };
    let full = if inner.is_full() && !edge.is_full() { 0.0 } else { -5.0 };
    out.set(&i, [m.load_or(r, c, -1.0), got, w + full, e]);
}

/// Six contracted forms for `f32` and `f64`, and integer arithmetic through the same rewrite
/// (which must stay exact).
#[kernel(contract)]
pub fn contracted(
    a: &[f32],
    b: &[f32],
    c: &[f32],
    mut out: DisjointSlice<[f32; 6]>,
    mut wide: DisjointSlice<[f64; 2]>,
    mut ints: DisjointSlice<u32>,
) {
    let i = thread::index_1d();
    if *i >= a.len() || *i >= b.len() || *i >= c.len() {
        return;
    }
    let (x, y, z) = (a[*i], b[*i], c[*i]);
    let mut acc = z;
    acc += x * y;
    let mut dec = z;
    dec -= x * y;
    out.set(&i, [x * y + z, z + x * y, x * y - z, z - x * y, acc, dec]);
    let (xd, yd, zd) = (x as f64, y as f64, z as f64);
    wide.set(&i, [xd * yd + zd, zd - xd * yd]);
    // Integer literals keep their inferred type (`u32` here, from `n`).
    let n = *i as u32;
    ints.set(&i, 3 * n + 7);
}

/// The same six forms without `contract`: Rust's two roundings.
#[kernel]
pub fn uncontracted(a: &[f32], b: &[f32], c: &[f32], mut out: DisjointSlice<[f32; 7]>) {
    let i = thread::index_1d();
    if *i >= a.len() || *i >= b.len() || *i >= c.len() {
        return;
    }
    let (x, y, z) = (a[*i], b[*i], c[*i]);
    let mut acc = z;
    acc += x * y;
    let mut dec = z;
    dec -= x * y;
    out.set(&i, [x * y + z, z + x * y, x * y - z, z - x * y, acc, dec, fp::fma(x, y, z)]);
}

/// CUDA's fast intrinsics on `x` (and `y` for the two-argument ones).
#[kernel]
pub fn fast_math(x: &[f32], y: &[f32], mut out: DisjointSlice<[f32; 10]>) {
    let i = thread::index_1d();
    let (Some(&x), Some(&y)) = (x.get(*i), y.get(*i)) else { return };
    out.set(
        &i,
        [
            fast::sin(x),
            fast::cos(x),
            fast::exp(x),
            fast::exp2(x),
            fast::ln(y),
            fast::log2(y),
            fast::powf(y, x),
            fast::div(x, y),
            fast::rsqrt(y),
            fast::sqrt(y),
        ],
    );
}

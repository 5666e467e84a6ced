//! The classic CUDA kernels — transposes, SGEMMs, a Jacobi stencil — written with Cohort's safe
//! API (no `unsafe`), each the same algorithm, tile sizes and launch shape as its CUDA C++ twin
//! in `host/benches/cuda_twins.cu` (`cohort bench kernels` times them side by side).
//!
//! What makes them as fast as the C++: the block shape is a [`BlockShape`] parameter (the
//! launcher refuses any other), so LLVM knows `threadIdx` bounds and removes the checks of
//! shared-tile indices; global reads use [`Matrix::load_or`] (a select, no branch), a
//! once-checked [`Window`](cohort::matrix::Window), or (the SGEMMs' k-loops) a row strip of A
//! and a column strip of B checked once per block ([`cohort::split!`]'s two-view form);
//! outputs are [`DisjointMatrix`] layouts with `u32` offsets (C++'s `int` index arithmetic: one
//! multiply-add per address), [`Within`] where the grid must stay inside the matrix as the C++
//! assumes (checked at launch; then no thread checks its write); and `#[kernel(contract)]` fuses
//! `acc += a * b` as nvcc does.

use cohort::matrix::Layout;
use cohort::prelude::*;

/// Tile edge of the transposes.
pub const TILE: usize = 32;
/// Rows of threads per block in the transposes (each thread moves `TILE / ROWS` elements).
pub const ROWS: usize = 8;

/// `out = inputᵀ` (`input` is `rows × cols`): each thread reads four elements of a column of a
/// 32×32 tile with coalesced reads and writes them transposed (strided writes).
#[kernel]
pub fn transpose_naive(
    shape: BlockShape<32, 8>,
    input: &[f32],
    rows: u32,
    cols: u32,
    mut out: DisjointMatrix<f32, Transposed<Cyclic<4, 1>>, u32>,
) {
    let Some(a) = Matrix::new(input, rows, cols) else { return };
    let (x, y) = (shape.x() as usize, shape.y() as usize);
    let (bx, by) = (thread::block_idx_x(), thread::block_idx_y());
    // The block reads the 32×32 input tile at (by, bx), checked once.
    let mut v = [0.0f32; TILE / ROWS];
    cohort::split!(a.window::<TILE, TILE>(by * TILE as u32, bx * TILE as u32), |w| {
        for (j, v) in v.iter_mut().enumerate() {
            *v = w.load_or(y + ROWS * j, x, 0.0);
        }
    });
    // This thread writes out(row(0), col(j)) = input(col(j), row(0)): one row of `out`, four
    // columns 8 apart (so it read four rows of `input` at one column: coalesced reads).
    cohort::split!(out.tile(&shape), |mut mine| {
        for (j, v) in v.iter().enumerate() {
            mine.set(0, j, *v);
        }
    });
}

cohort::shared! {
    /// The transpose's tile, padded to 33 columns against bank conflicts.
    static TRANSPOSE_TILE: [[f32; TILE + 1]; TILE];
}

/// `out = inputᵀ` through a 32×33 shared tile: coalesced reads and coalesced writes.
#[kernel]
pub fn transpose_tiled(
    shape: BlockShape<32, 8>,
    a: Matrix<f32, u32>,
    mut out: DisjointMatrix<f32, TransposedTiles<Cyclic<4, 1>>, u32>,
) {
    let (x, y) = (shape.x() as usize, shape.y() as usize);
    let (bx, by) = (thread::block_idx_x(), thread::block_idx_y());
    let tile = TRANSPOSE_TILE.get();
    cohort::split!(a.window::<TILE, TILE>(by * TILE as u32, bx * TILE as u32), |w| {
        for j in 0..TILE / ROWS {
            let r = y + ROWS * j;
            tile.store_at(r, x, w.load_or(r, x, 0.0));
        }
    });
    sync_threads();
    cohort::split!(out.tile(&shape), |mut mine| {
        for j in 0..TILE / ROWS {
            mine.set(j, 0, tile.load_at(x, y + ROWS * j));
        }
    });
}

cohort::shared! {
    static GEMM32_A: [[f32; 32]; 32];
    static GEMM32_B: [[f32; 32]; 32];
}

/// `C = A · B` (`A` is `m × k`, `B` is `k × n`), one element of C per thread, 32×32 tiles of A
/// and B through shared memory (the CUDA Programming Guide's shared-memory matrix multiply).
/// The tiles come from A's row strip and B's column strip, checked once per block (SASS: 83.5
/// instructions a k-step, against C++'s 86; a `load_or` per element took 94, a window pair
/// checked each step 92).
#[kernel(contract)]
pub fn sgemm_tiled32(
    shape: BlockShape<32, 32>,
    a: &[f32],
    b: &[f32],
    m: u32,
    n: u32,
    k: u32,
    mut c: DisjointMatrix<f32, Cyclic, u32>,
) {
    let (Some(a), Some(b)) = (Matrix::new(a, m, k), Matrix::new(b, k, n)) else { return };
    let (x, y) = (shape.x() as usize, shape.y() as usize);
    let (m0, n0) = (thread::block_idx_y() * 32, thread::block_idx_x() * 32);
    let (sa, sb) = (GEMM32_A.get(), GEMM32_B.get());
    let mut acc = 0.0f32;
    // A's row strip and B's column strip, checked once per block: inside the matrices (and
    // `k` a multiple of 32), the k-loop reads with no check; else every window is checked.
    cohort::split!(a.row_strip::<32, 32>(m0), b.col_strip::<32, 32>(n0), |ra, cb| {
        for (wa, wb) in ra.zip(cb) {
            sa.store_at(y, x, wa.load_or(y, x, 0.0));
            sb.store_at(y, x, wb.load_or(y, x, 0.0));
            sync_threads();
            for q in 0..8 {
                let av: [f32; 4] = sa.load_row(y, 4 * q);
                unroll::<4>(|i| acc += av[i] * sb.load_at(4 * q + i, x));
            }
            sync_threads();
        }
    });
    c.tile(&shape).set(0, 0, acc);
}

/// Block tile of the register-blocked SGEMM (rows of C = columns of C).
pub const BM: usize = 128;
/// Depth of one step of the register-blocked SGEMM.
pub const BK: usize = 8;
/// Micro-tile of C per thread (8 × 8).
pub const TM: usize = 8;

cohort::shared! {
    /// A's tile, transposed: `A_T[k][m]`.
    static GEMM128_A: [[f32; BM]; BK];
    static GEMM128_B: [[f32; BM]; BK];
}

/// `C = A · B` with 128×128 block tiles, depth 8, and an 8×8 micro-tile of C per thread in
/// registers (256 threads as 16×16): each step loads 4 elements of A and 4 of B per thread into
/// shared memory, then does 8 × 64 fused multiply-adds from registers.
#[kernel(contract)]
pub fn sgemm_128x128(
    shape: BlockShape<16, 16>,
    a: &[f32],
    b: &[f32],
    m: u32,
    n: u32,
    k: u32,
    mut c: DisjointMatrix<f32, Blocked<TM, TM>, u32>,
) {
    let (Some(a), Some(b)) = (Matrix::new(a, m, k), Matrix::new(b, k, n)) else { return };
    let (x, y) = (shape.x() as usize, shape.y() as usize);
    let rank = shape.rank() as usize;
    let (m0, n0) = (thread::block_idx_y() * BM as u32, thread::block_idx_x() * BM as u32);
    let (sa, sb) = (GEMM128_A.get(), GEMM128_B.get());
    // Which elements this thread loads: A rows rank/8 + 32i, column rank%8; B row rank/128 +
    // 2i, column rank%128.
    let (ar, ac) = (rank / BK, rank % BK);
    let (br, bc) = (rank / BM, rank % BM);
    let mut acc = [[0.0f32; TM]; TM];
    // A's row strip and B's column strip, checked once per block: inside the matrices (and
    // `k` a multiple of 8), the eight loads of a step issue back to back, unchecked, before
    // the shared stores, as in C++; otherwise every window is checked.
    cohort::split!(a.row_strip::<BM, BK>(m0), b.col_strip::<BK, BM>(n0), |ra, cb| {
        for (wa, wb) in ra.zip(cb) {
            let va: [f32; 4] = core::array::from_fn(|i| wa.load_or(ar + 32 * i, ac, 0.0));
            let vb: [f32; 4] = core::array::from_fn(|i| wb.load_or(br + 2 * i, bc, 0.0));
            for i in 0..4 {
                sa.store_at(ac, ar + 32 * i, va[i]);
                sb.store_at(br + 2 * i, bc, vb[i]);
            }
            sync_threads();
            unroll::<BK>(|q| {
                let a0: [f32; 4] = sa.load_row(q, y * TM);
                let a1: [f32; 4] = sa.load_row(q, y * TM + 4);
                let b0: [f32; 4] = sb.load_row(q, x * TM);
                let b1: [f32; 4] = sb.load_row(q, x * TM + 4);
                let av = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
                let bv = [b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]];
                unroll::<TM>(|i| unroll::<TM>(|j| acc[i][j] += av[i] * bv[j]));
            });
            sync_threads();
        }
    });
    cohort::split!(c.tile(&shape), |mut mine| {
        unroll::<TM>(|i| {
            unroll::<TM>(|j| {
                mine.set(i, j, acc[i][j]);
            })
        })
    });
}

/// Block of the Jacobi stencil: 32 × 8 threads, one point each.
pub const JX: usize = 32;
/// Rows of the Jacobi block.
pub const JY: usize = 8;

cohort::shared! {
    /// The block's points and a one-point halo.
    static JACOBI_TILE: [[f32; JX + 2]; JY + 2];
}

/// One Jacobi step of the 2-D Laplace equation on an `n × n` grid with fixed boundary values:
/// interior points become the mean of their four neighbours (read through a shared tile with a
/// one-point halo), boundary points are copied.
///
/// Each thread reads its point and edge threads one halo point through [`Matrix::point`]: the
/// halo addresses are the centre's plus a constant (`[p - 4]`, `[p + 4]`, `[p ± 4n]`), and a
/// read outside the grid is a branch around the load, as in the C++ twin
/// (`gx > 0 ? u[i - 1] : 0`).
///
/// The output is [`Within`]: like the C++ twin, which writes `out[gy * n + gx]` unchecked, it
/// must be launched with a grid that does not overhang the matrix (`cols / 32 × rows / 8`
/// blocks, or fewer) — checked at launch, so the threads' writes need no bound.
/// [`jacobi_step_select`] takes any grid.
#[kernel]
pub fn jacobi_step(shape: BlockShape<32, 8>, g: Matrix<f32, u32>, mut out: DisjointMatrix<f32, Within<Cyclic>, u32>) {
    jacobi(&shape, g, &mut out, |gy, gx| {
        let p = g.point(gy, gx);
        move |dr, dc| p.load_or(dr, dc, 0.0)
    });
}

/// [`jacobi_step`] with every read through [`Matrix::load_or`] at the neighbour's own
/// coordinates (a clamped address and a select, no branch; each address computed afresh), for
/// any grid (threads past the matrix write nothing): `cohort bench kernels` times both forms.
#[kernel]
pub fn jacobi_step_select(shape: BlockShape<32, 8>, g: Matrix<f32, u32>, mut out: DisjointMatrix<f32, Cyclic, u32>) {
    jacobi(&shape, g, &mut out, |gy, gx| {
        move |dr: isize, dc: isize| g.load_or(gy.wrapping_add_signed(dr as i32), gx.wrapping_add_signed(dc as i32), 0.0)
    });
}

/// The Jacobi step of the thread at grid point `(gy, gx)`, which reads point `(gy + dr, gx +
/// dc)` (0 outside the grid) with `reader(gy, gx)(dr, dc)`.
#[inline(always)]
fn jacobi<R: Fn(isize, isize) -> f32, L: Layout>(
    shape: &BlockShape<32, 8>,
    g: Matrix<f32, u32>,
    out: &mut DisjointMatrix<f32, L, u32>,
    reader: impl Fn(u32, u32) -> R,
) {
    let (rows, cols) = (g.rows(), g.cols());
    let (x, y) = (shape.x() as usize, shape.y() as usize);
    let (by, bx) = (thread::block_idx_y() * JY as u32, thread::block_idx_x() * JX as u32);
    let (gy, gx) = (by + y as u32, bx + x as u32);
    let tile = JACOBI_TILE.get();
    let read = reader(gy, gx);
    // Reads outside the grid yield 0; such values are never used, since boundary points are
    // copied.
    let centre = read(0, 0);
    tile.store_at(y + 1, x + 1, centre);
    // The halo: edge threads load one more point each.
    if x == 0 {
        tile.store_at(y + 1, 0, read(0, -1));
    }
    if x == JX - 1 {
        tile.store_at(y + 1, JX + 1, read(0, 1));
    }
    if y == 0 {
        tile.store_at(0, x + 1, read(-1, 0));
    }
    if y == JY - 1 {
        tile.store_at(JY + 1, x + 1, read(1, 0));
    }
    sync_threads();
    let boundary = gx == 0 || gy == 0 || gx + 1 >= cols || gy + 1 >= rows;
    let v = if boundary {
        centre
    } else {
        0.25 * (tile.load_at(y, x + 1)
            + tile.load_at(y + 2, x + 1)
            + tile.load_at(y + 1, x)
            + tile.load_at(y + 1, x + 2))
    };
    out.tile(shape).set(0, 0, v);
}

//! The classic kernels written **the obvious way**: as a newcomer writes them from the README,
//! without the forms that [`classic`](crate::classic) uses to reach C++ speed.
//!
//! "Obvious" here means, for every kernel of this module:
//! - no `unsafe`;
//! - inputs are plain `&[f32]` slices indexed as `input[(row * cols + col) as usize]`, behind the
//!   same `if row < rows && col < cols` guard a CUDA C++ kernel for ragged sizes has (so the
//!   slice's own bounds check is the *only* check the C++ lacks);
//! - shared tiles are `shared!` 2-D arrays read and written element by element in loops
//!   ([`load_at`](cohort::shared::SharedArray::load_at) /
//!   [`store_at`](cohort::shared::SharedArray::store_at)), no `load_row`;
//! - outputs are a [`DisjointMatrix`] with its default `usize` offsets, each element written with
//!   `out.tile(&shape).set(k, l, v)` (which needs the kernel's [`BlockShape`]: the README's form,
//!   so the block shape is a parameter here too);
//! - no `Matrix` parameter, `window`, strips, `split!`, `Point` or `Within`;
//! - `#[kernel(contract)]` on the SGEMMs, the README's "floating point as nvcc" (without it, a
//!   multiply-add is two instructions and the comparison would measure `-fmad`, not safety).
//!
//! Their CUDA C++ twins are in `host/benches/obvious_twins.cu`: the same algorithm, tiles, launch
//! shape *and guards*, written as a competent CUDA programmer writes them (`int` indices). The
//! stencil is the good one — a 32×32 tile with a one-point halo, 32×8 threads, four rows per
//! thread — not the one-point-per-thread stencil of [`classic::jacobi_step`](crate::classic::jacobi_step).
//!
//! `docs/obvious-code.md` compares their SASS with the twins' (instructions of the hot loop,
//! branches, loads and stores, registers) and says which checks remain and why.

use cohort::prelude::*;

cohort::shared! {
    /// The tiled transpose's tile, padded to 33 columns against bank conflicts.
    static OBV_TRANSPOSE: [[f32; 33]; 32];
}

/// `out = inputᵀ` (`input` is `rows × cols`, `out` is `cols × rows`): 32×8 threads, each reads
/// four elements of one column of a 32×32 tile (coalesced) and writes them as one row of `out`
/// (strided). Launch: `(cols / 32, rows / 32)` blocks, rounded up.
#[kernel]
pub fn obvious_transpose_naive(
    shape: BlockShape<32, 8>,
    input: &[f32],
    rows: u32,
    cols: u32,
    mut out: DisjointMatrix<f32, Transposed<Cyclic<4, 1>>>,
) {
    let (x, y) = (shape.x(), shape.y());
    let col = thread::block_idx_x() * 32 + x;
    let mut mine = out.tile(&shape);
    for j in 0..4 {
        let row = thread::block_idx_y() * 32 + y + 8 * j;
        if row < rows && col < cols {
            mine.set(0, j as usize, input[(row * cols + col) as usize]);
        }
    }
}

/// `out = inputᵀ` through a 32×33 shared tile: coalesced reads and coalesced writes. Launch as
/// [`obvious_transpose_naive`].
#[kernel]
pub fn obvious_transpose_tiled(
    shape: BlockShape<32, 8>,
    input: &[f32],
    rows: u32,
    cols: u32,
    mut out: DisjointMatrix<f32, TransposedTiles<Cyclic<4, 1>>>,
) {
    let (x, y) = (shape.x(), shape.y());
    let tile = OBV_TRANSPOSE.get();
    let col = thread::block_idx_x() * 32 + x;
    for j in 0..4 {
        let row = thread::block_idx_y() * 32 + y + 8 * j;
        if row < rows && col < cols {
            tile.store_at((y + 8 * j) as usize, x as usize, input[(row * cols + col) as usize]);
        }
    }
    sync_threads();
    let mut mine = out.tile(&shape);
    for j in 0..4 {
        mine.set(j as usize, 0, tile.load_at(x as usize, (y + 8 * j) as usize));
    }
}

cohort::shared! {
    static OBV_GEMM32_A: [[f32; 32]; 32];
    static OBV_GEMM32_B: [[f32; 32]; 32];
}

/// `C = A · B` (`A` is `m × k`, `B` is `k × n`), one element of C per thread, 32×32 tiles of A
/// and B through shared memory. Launch: 32×32 threads, `(n / 32, m / 32)` blocks, rounded up.
#[kernel(contract)]
pub fn obvious_sgemm_tiled32(
    shape: BlockShape<32, 32>,
    a: &[f32],
    b: &[f32],
    m: u32,
    n: u32,
    k: u32,
    mut c: DisjointMatrix<f32>,
) {
    let (x, y) = (shape.x(), shape.y());
    let row = thread::block_idx_y() * 32 + y;
    let col = thread::block_idx_x() * 32 + x;
    let (sa, sb) = (OBV_GEMM32_A.get(), OBV_GEMM32_B.get());
    let (xs, ys) = (x as usize, y as usize);
    let mut acc = 0.0f32;
    for t in (0..k).step_by(32) {
        let va = if row < m && t + x < k { a[(row * k + t + x) as usize] } else { 0.0 };
        let bt = t + y;
        let vb = if bt < k && col < n { b[(bt * n + col) as usize] } else { 0.0 };
        sa.store_at(ys, xs, va);
        sb.store_at(ys, xs, vb);
        sync_threads();
        for q in 0..32 {
            acc += sa.load_at(ys, q) * sb.load_at(q, xs);
        }
        sync_threads();
    }
    c.tile(&shape).set(0, 0, acc);
}

cohort::shared! {
    /// A's tile, transposed: `A_T[k][m]`.
    static OBV_GEMM128_A: [[f32; 128]; 8];
    static OBV_GEMM128_B: [[f32; 128]; 8];
}

/// `C = A · B` with 128×128 block tiles, depth 8, and an 8×8 micro-tile of C per thread in
/// registers (256 threads as 16×16): each step loads 4 elements of A and 4 of B per thread into
/// shared memory, then does 8 × 64 fused multiply-adds from registers. Launch: 16×16 threads,
/// `(n / 128, m / 128)` blocks, rounded up.
#[kernel(contract)]
pub fn obvious_sgemm_128x128(
    shape: BlockShape<16, 16>,
    a: &[f32],
    b: &[f32],
    m: u32,
    n: u32,
    k: u32,
    mut c: DisjointMatrix<f32, Blocked<8, 8>>,
) {
    let (x, y) = (shape.x() as usize, shape.y() as usize);
    let rank = y * 16 + x;
    let (m0, n0) = (thread::block_idx_y() * 128, thread::block_idx_x() * 128);
    let (sa, sb) = (OBV_GEMM128_A.get(), OBV_GEMM128_B.get());
    // This thread loads A rows ar + 32i, column ac; B row br + 2i, column bc.
    let (ar, ac, br, bc) = (rank / 8, rank % 8, rank / 128, rank % 128);
    let mut acc = [[0.0f32; 8]; 8];
    for t in (0..k).step_by(8) {
        for i in 0..4 {
            let (r, col) = (m0 + (ar + 32 * i) as u32, t + ac as u32);
            sa.store_at(ac, ar + 32 * i, if r < m && col < k { a[(r * k + col) as usize] } else { 0.0 });
            let (r, col) = (t + (br + 2 * i) as u32, n0 + bc as u32);
            sb.store_at(br + 2 * i, bc, if r < k && col < n { b[(r * n + col) as usize] } else { 0.0 });
        }
        sync_threads();
        for q in 0..8 {
            let mut av = [0.0f32; 8];
            let mut bv = [0.0f32; 8];
            for i in 0..8 {
                av[i] = sa.load_at(q, y * 8 + i);
                bv[i] = sb.load_at(q, x * 8 + i);
            }
            for i in 0..8 {
                for j in 0..8 {
                    acc[i][j] += av[i] * bv[j];
                }
            }
        }
        sync_threads();
    }
    let mut mine = c.tile(&shape);
    for (i, row) in acc.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            mine.set(i, j, *v);
        }
    }
}

cohort::shared! {
    /// The stencil's 32×32 points and a one-point halo.
    static OBV_JACOBI: [[f32; 34]; 34];
}

/// One Jacobi step of the 2-D Laplace equation on a `rows × cols` grid with fixed boundary
/// values: interior points become the mean of their four neighbours (read through a 32×32
/// shared tile with a one-point halo), boundary points are copied. 32×8 threads, four rows
/// each; launch `(cols / 32, rows / 32)` blocks, rounded up.
#[kernel]
pub fn obvious_jacobi(
    shape: BlockShape<32, 8>,
    u: &[f32],
    rows: u32,
    cols: u32,
    mut out: DisjointMatrix<f32, Cyclic<4, 1>>,
) {
    let (x, y) = (shape.x(), shape.y());
    let tile = OBV_JACOBI.get();
    let gx = thread::block_idx_x() * 32 + x;
    let by = thread::block_idx_y() * 32;
    let (xs, ys) = (x as usize, y as usize);
    for j in 0..4 {
        let gy = by + y + 8 * j;
        let ty = ys + 8 * j as usize + 1;
        let inside = gy < rows && gx < cols;
        tile.store_at(ty, xs + 1, if inside { u[(gy * cols + gx) as usize] } else { 0.0 });
        if x == 0 {
            tile.store_at(
                ty,
                0,
                if gy < rows && gx > 0 && gx <= cols { u[(gy * cols + gx - 1) as usize] } else { 0.0 },
            );
        }
        if x == 31 {
            tile.store_at(ty, 33, if gy < rows && gx + 1 < cols { u[(gy * cols + gx + 1) as usize] } else { 0.0 });
        }
    }
    if y == 0 {
        tile.store_at(
            0,
            xs + 1,
            if by > 0 && by <= rows && gx < cols { u[((by - 1) * cols + gx) as usize] } else { 0.0 },
        );
    }
    if y == 7 {
        tile.store_at(33, xs + 1, if by + 32 < rows && gx < cols { u[((by + 32) * cols + gx) as usize] } else { 0.0 });
    }
    sync_threads();
    let mut mine = out.tile(&shape);
    for j in 0..4 {
        let gy = by + y + 8 * j;
        let ty = ys + 8 * j as usize + 1;
        let boundary = gx == 0 || gy == 0 || gx + 1 >= cols || gy + 1 >= rows;
        let v = if boundary {
            tile.load_at(ty, xs + 1)
        } else {
            0.25 * (tile.load_at(ty - 1, xs + 1)
                + tile.load_at(ty + 1, xs + 1)
                + tile.load_at(ty, xs)
                + tile.load_at(ty, xs + 2))
        };
        mine.set(j as usize, 0, v);
    }
}

/// The same Jacobi step without shared memory, the shape that runs a stencil near DRAM speed:
/// each thread walks eight rows down one column, keeping the point above and its own in
/// registers, and reads its left and right neighbours and the point below from `u` (the L1
/// cache serves the reuse between neighbouring threads). 32×8 threads; launch
/// `(cols / 32, rows / 64)` blocks, rounded up.
#[kernel]
pub fn obvious_jacobi_rows(
    shape: BlockShape<32, 8>,
    u: &[f32],
    rows: u32,
    cols: u32,
    mut out: DisjointMatrix<f32, Blocked<8, 1>>,
) {
    let gx = thread::block_idx_x() * 32 + shape.x();
    let y0 = (thread::block_idx_y() * 8 + shape.y()) * 8;
    if gx >= cols || y0 >= rows {
        return;
    }
    let mut up = if y0 > 0 { u[((y0 - 1) * cols + gx) as usize] } else { 0.0 };
    let mut here = u[(y0 * cols + gx) as usize];
    let mut mine = out.tile(&shape);
    for j in 0..8 {
        let gy = y0 + j;
        if gy >= rows {
            break;
        }
        let down = if gy + 1 < rows { u[((gy + 1) * cols + gx) as usize] } else { 0.0 };
        let boundary = gx == 0 || gy == 0 || gx + 1 >= cols || gy + 1 >= rows;
        let v = if boundary {
            here
        } else {
            0.25 * (up + down + u[(gy * cols + gx - 1) as usize] + u[(gy * cols + gx + 1) as usize])
        };
        mine.set(j as usize, 0, v);
        up = here;
        here = down;
    }
}

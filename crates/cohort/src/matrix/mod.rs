//! Row-major matrices: a read view with branch-free checked reads and once-checked windows,
//! and [`DisjointMatrix`], a kernel output whose threads write the tiles a [`Layout`] gives them.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `(r < rows && c < cols) ? a[r * cols + c] : 0` | [`Matrix::load_or`]`(r, c, 0)` (a clamped address and a select: no branch) |
//! | `unsigned` index arithmetic | `Matrix<T, u32>` ([`MatrixIndex`]; `new` checks that every offset fits) |
//! | `const float* a, int rows, int cols` kernel parameters | an `a: Matrix<T, I>` kernel parameter (the host passes `buffer.as_matrix(rows, cols)?`; shape checked on the host, none in the kernel) |
//! | a stencil's neighbours `gx > 0 ? u[i - 1] : 0`, `u[i + n]` | [`Matrix::point`]`(r, c)`, then [`Point::load_or`]`(dr, dc, 0)`: addresses relative to the centre's, as C++'s |
//! | a block's tile `a[(r0 + i) * cols + c0 + j]` | [`Matrix::window`]`::<R, C>(r0, c0)` (checked once), then [`Window::load_or`]`(i, j, 0)`: unchecked inside, checked at the edge |
//! | a GEMM's k-loop over A's row strip / B's column strip, `for (t = 0; t < k; t += C)` | [`Matrix::row_strip`]`::<R, C>(r0)` / [`Matrix::col_strip`]`::<R, C>(c0)`: iterators of windows, checked once per block ([`Strip::split`]), not once per step |
//! | `out[row * cols + col] = v` (the thread's own element of a 2-D grid) | `DisjointMatrix<T, Cyclic>`: `out.tile(&shape).set(0, 0, v)` |
//! | `unsigned` output offsets | `DisjointMatrix<T, L, u32>` (a matrix of more than `u32::MAX` elements is refused at launch: an `Err`) |
//! | `out[col * rows + row] = v` (transposed position) | `DisjointMatrix<T, Transposed<Cyclic>>` |
//! | a block's tile of C, `TM × TN` per thread | `DisjointMatrix<T, Blocked<TM, TN>>` |
//! | a block's tile written at the transposed tile position | `DisjointMatrix<T, TransposedTiles<…>>` |
//! | a tensor-core GEMM's accumulators (`mma.sync` m16n8 fragments, `MI × NI` per warp) stored to C | `DisjointMatrix<f32, MmaWarps<MI, NI, WN>>`: `out.tile(&shape).set(2·mi + i / 2, 2·ni + i % 2, acc[mi][ni].get(i))` |
//! | a warp-specialized Hopper GEMM's accumulators (`wgmma` m64nN, producers first) stored to C | `DisjointMatrix<f32, Warpgroups<N / 8, 1>>`: run `j` of row `k` is `[acc.get(4j + 2k), acc.get(4j + 2k + 1)]` |
//!
//! **Why writes are safe.** A [`DisjointMatrix`] kernel parameter carries its `rows` and `cols`
//! from the host (the launch passes them, so every thread sees the same), its [`Layout`] is
//! part of its type (so every thread uses the same), and the block shape comes from the kernel's
//! [`BlockShape`](crate::shape::BlockShape) (checked at launch). A layout maps (block, thread, `k`, `l`) one-to-one onto
//!
//! The module's files, by concept: [`MatrixIndex`] (index.rs), the read views (read.rs:
//! [`Matrix`], [`Point`], [`Window`], [`Strip`] and their check-free forms), the
//! [`Layout`]s (layout.rs) and the output (write.rs: [`DisjointMatrix`], [`ThreadTile`],
//! [`FullTile`]); [`Split`] and [`split!`](crate::split!) serve both sides.

mod index;
mod layout;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use index::MatrixIndex;
pub use layout::{Blocked, Cyclic, Layout, MmaWarps, Transposed, TransposedTiles, Warpgroups, Within};
pub use read::{FullStrip, FullWindow, Matrix, Point, Strip, Window};
pub use write::{DisjointMatrix, FullTile, RunTile, ThreadTile};

/// [`Window::split`] and [`ThreadTile::split`] return.
#[derive(Debug)]
pub enum Split<F, E> {
    /// Wholly inside the matrix.
    Full(F),
    /// At its edge: every access checked.
    Edge(E),
}

/// Runs one body on the check-free form of a view when it lies wholly inside its matrix, and on
/// the checked form at the edge: the check is made once (per block or thread), and the common
/// path is compiled without any. The body is expanded twice, once for each form (both have the
/// same methods: `load_or`/`get` for windows, `set`/`get_mut` for thread tiles).
///
/// ```
/// # use cohort::prelude::*;
/// # fn f(a: Matrix<'_, f32>, tile: SharedArray<[f32; 33], 32>, x: usize, y: usize, by: usize, bx: usize) {
/// cohort::split!(a.window::<32, 32>(by * 32, bx * 32), |w| {
///     for j in 0..4 {
///         tile.store_at(y + 8 * j, x, w.load_or(y + 8 * j, x, 0.0));
///     }
/// });
/// # }
/// ```
///
/// Two views (windows or [`Strip`]s, which are `Copy`) are split together: the body gets both
/// check-free forms when both lie inside their matrices, else both checked forms — a GEMM's
/// k-loop over A's row strip and B's column strip, checked once per block:
///
/// ```
/// # use cohort::prelude::*;
/// # fn f(a: Matrix<'_, f32, u32>, b: Matrix<'_, f32, u32>, m0: u32, n0: u32, x: usize, y: usize) {
/// let mut acc = 0.0;
/// cohort::split!(a.row_strip::<32, 32>(m0), b.col_strip::<32, 32>(n0), |ra, cb| {
///     for (wa, wb) in ra.zip(cb) {
///         // one step of the k-loop: wa is A's 32 × 32 tile at (m0, t), wb B's at (t, n0)
///         acc += wa.load_or(y, x, 0.0) * wb.load_or(y, x, 0.0);
///     }
/// });
/// # }
/// ```
#[macro_export]
macro_rules! split {
    ($view:expr, |$p:pat_param| $body:expr) => {
        match ($view).split() {
            $crate::matrix::Split::Full($p) => $body,
            $crate::matrix::Split::Edge($p) => $body,
        }
    };
    ($first:expr, $second:expr, |$p:pat_param, $q:pat_param| $body:expr) => {{
        let (first, second) = ($first, $second);
        match (first.split(), second.split()) {
            ($crate::matrix::Split::Full($p), $crate::matrix::Split::Full($q)) => $body,
            _ => {
                let ($p, $q) = (first, second);
                $body
            }
        }
    }};
}

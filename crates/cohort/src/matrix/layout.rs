//! How a [`DisjointMatrix`](super::DisjointMatrix) is divided among threads: the sealed
//! [`Layout`]s, each one-to-one (the proof sketch is beside their impls).

use core::marker::PhantomData;

/// How a [`DisjointMatrix`](super::DisjointMatrix) is divided among threads: which elements each
/// thread of each block writes. Sealed: the disjointness of writes rests on each layout being
/// one-to-one.
pub trait Layout: sealed::Sealed + 'static {
    /// Elements a thread writes along rows (`k` in [`ThreadTile::set`](super::ThreadTile::set)).
    const KR: usize;
    /// Elements a thread writes along columns (`l`).
    const KC: usize;
    /// Where thread `(tx, ty)` of a block of `x × y` threads whose tile is at tile position
    /// `(tr, tc)` writes: `[r0, dr, c0, dc]`, its element `(k, l)` being
    /// `(r0 + dr * k, c0 + dc * l)`.
    ///
    /// Non-decreasing in each of `tx`, `ty`, `tr`, `tc` (the launch check of [`Within`] takes
    /// the thread and block at the far corner for the last row and column written).
    #[doc(hidden)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4];
    /// Whether the layout is [`Within`] (possibly under [`Transposed`] or [`TransposedTiles`]):
    /// its launches are checked to stay inside the matrix.
    #[doc(hidden)]
    const WITHIN: bool = false;
}

/// Each thread writes `KR × KC` elements spread over its block's tile of `(Y·KR) × (X·KC)`:
/// thread `(x, y)` writes rows `y, y + Y, …` and columns `x, x + X, …` of it (consecutive
/// threads write consecutive columns: coalesced). `Cyclic` (`1 × 1`) is one element per thread:
/// row `blockIdx.y * Y + y`, column `blockIdx.x * X + x`.
#[derive(Debug)]
pub enum Cyclic<const KR: usize = 1, const KC: usize = 1> {}

/// Each thread writes a contiguous `KR × KC` micro-tile of its block's `(Y·KR) × (X·KC)`
/// tile: rows `y·KR ..`, columns `x·KC ..` (a register-blocked GEMM's tile of C).
#[derive(Debug)]
pub enum Blocked<const KR: usize, const KC: usize> {}

/// Layout `L` with rows and columns exchanged: where `L` writes `(r, c)`, this writes `(c, r)`
/// (a naive transpose's output).
#[derive(Debug)]
pub struct Transposed<L>(PhantomData<L>);

/// Layout `L`, for launches whose every thread writes inside the matrix: a 1-D or 2-D grid
/// (`gridDim.z == 1`) that does not overhang it, as CUDA C++ kernels without a bounds check
/// assume (`out[gy * n + gx] = …` for a grid of exactly `n / 32 × n / 8` blocks).
///
/// The host launcher checks it before launching — the last row and column the grid's far corner
/// writes lie inside the matrix — and refuses any other launch with an `Err` naming the kernel, the
/// parameter, the matrix and the grid. In exchange
/// [`DisjointMatrix::tile`](super::DisjointMatrix::tile) computes no bound and
/// [`ThreadTile::set`](super::ThreadTile::set) checks nothing: a thread's offset is one
/// multiply-add, and its tile is always [full](super::ThreadTile::is_full).
///
/// ```
/// use cohort::prelude::*;
///
/// // One element per thread; launched with exactly `cols / 32 × rows / 8` blocks of 32 × 8.
/// #[kernel]
/// pub fn scale(shape: BlockShape<32, 8>, a: Matrix<f32, u32>, mut out: DisjointMatrix<f32, Within<Cyclic>, u32>) {
///     let mut t = out.tile(&shape);
///     let (r, c) = (t.row(0) as u32, t.col(0) as u32);
///     t.set(0, 0, 2.0 * a.load_or(r, c, 0.0));
/// }
/// ```
#[derive(Debug)]
pub struct Within<L>(PhantomData<L>);

/// Layout `L` with the *block* coordinates exchanged: block `(bx, by)` writes the tile at tile
/// row `bx`, tile column `by` (a tiled transpose's output; threads keep `L`'s arrangement).
#[derive(Debug)]
pub struct TransposedTiles<L>(PhantomData<L>);

mod sealed {
    pub trait Sealed {}
    impl<const KR: usize, const KC: usize> Sealed for super::Cyclic<KR, KC> {}
    impl<const KR: usize, const KC: usize> Sealed for super::Blocked<KR, KC> {}
    impl<L: super::Layout> Sealed for super::Transposed<L> {}
    impl<L: super::Layout> Sealed for super::TransposedTiles<L> {}
    impl<L: super::Layout> Sealed for super::Within<L> {}
}

// Proof sketch of disjointness, layout by layout (block tile position `(tr, tc)` is one-to-one
// in the block index, see `DisjointMatrix::tile`):
// - `Cyclic`: row = tr·(Y·KR) + ty + Y·k with ty < Y, k < KR is one-to-one onto
//   tr·(Y·KR) + [0, Y·KR); columns likewise; so (tr, tc, tx, ty, k, l) ↦ (row, col) is one-to-one.
// - `Blocked`: row = tr·(Y·KR) + ty·KR + k, the same argument.
// - `Transposed<L>`: swapping the two coordinates of a one-to-one map keeps it one-to-one.
// - `TransposedTiles<L>`: `L` applied to the swapped tile position, itself one-to-one.
// - `Within<L>`: `L`'s map, with the tile position `(blockIdx.y, blockIdx.x)` (`gridDim.z == 1`,
//   checked at launch, so the general position is that), one-to-one as `L`'s.
impl<const KR: usize, const KC: usize> Layout for Cyclic<KR, KC> {
    const KR: usize = KR;
    const KC: usize = KC;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        [tr * (y * KR) + ty, y, tc * (x * KC) + tx, x]
    }
}

impl<const KR: usize, const KC: usize> Layout for Blocked<KR, KC> {
    const KR: usize = KR;
    const KC: usize = KC;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        [tr * (y * KR) + ty * KR, 1, tc * (x * KC) + tx * KC, 1]
    }
}

impl<L: Layout> Layout for Transposed<L> {
    const KR: usize = L::KC;
    const KC: usize = L::KR;
    const WITHIN: bool = L::WITHIN;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        let [r0, dr, c0, dc] = L::place(tx, ty, x, y, tr, tc);
        [c0, dc, r0, dr]
    }
}

impl<L: Layout> Layout for TransposedTiles<L> {
    const KR: usize = L::KR;
    const KC: usize = L::KC;
    const WITHIN: bool = L::WITHIN;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        L::place(tx, ty, x, y, tc, tr)
    }
}

impl<L: Layout> Layout for Within<L> {
    const KR: usize = L::KR;
    const KC: usize = L::KC;
    const WITHIN: bool = true;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        L::place(tx, ty, x, y, tr, tc)
    }
}

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
    /// A thread's columns come in runs of `RUN` adjacent ones (1 but for [`MmaWarps`], whose
    /// lanes hold pairs): its column `l` is `c0 + dc * (l / RUN) + l % RUN`.
    #[doc(hidden)]
    const RUN: usize = 1;
    /// The warps of a block are arranged `WARPS_N` to a row of tiles ([`MmaWarps`]), or 0: the
    /// layout places threads, not warps. When not 0, [`DisjointMatrix::tile`](super::DisjointMatrix::tile)
    /// only compiles for blocks of a multiple of `32 * WARPS_N` threads.
    #[doc(hidden)]
    const WARPS_N: usize = 0;
    /// Where thread `(tx, ty)` of a block of `x × y` threads whose tile is at tile position
    /// `(tr, tc)` writes: `[r0, dr, c0, dc]`, its element `(k, l)` being
    /// `(r0 + dr * k, c0 + dc * (l / RUN) + l % RUN)`.
    ///
    /// The launch check of [`Within`] takes the thread and block at the far corner for the last
    /// row and column written: the far-corner thread's last element (`(KR - 1, KC - 1)`) of the
    /// far-corner block has the largest row and the largest column any thread of the launch
    /// writes. (For every layout but [`MmaWarps`], `place` is non-decreasing in each of `tx`,
    /// `ty`, `tr`, `tc`, which implies it; `MmaWarps`' proof is beside its impl.)
    #[doc(hidden)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4];
    /// Whether the layout is [`Within`] (possibly under [`Transposed`] or [`TransposedTiles`]):
    /// its launches are checked to stay inside the matrix.
    #[doc(hidden)]
    const WITHIN: bool = false;
    /// Whether some threads write nothing, their places lying past every matrix
    /// ([`Warpgroups`]' producers): such a layout cannot be [`Within`] (whose writes are not
    /// checked).
    #[doc(hidden)]
    const IDLE_THREADS: bool = false;
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
/// (a naive transpose's output). (Not for [`MmaWarps`], whose columns come in pairs: a compile
/// error.)
#[derive(Debug)]
pub struct Transposed<L>(PhantomData<L>);

/// The accumulators of warpgroup MMAs (`wgmma` m64nN, N = 8·`NI`, [`crate::wgmma`]) of a
/// warp-specialized kernel whose first `P` warpgroups (the producers) write nothing: consumer
/// warpgroup `g` (warpgroup `P + g` of the block) writes rows `64 g .. 64 g + 64` of the block's
/// tile of `64 · consumers` × `8 · NI`, each thread its accumulator elements as
/// [`wgmma::Accumulator`](crate::wgmma::Accumulator) places them: element `i` is `(k, l)` =
/// (`(i / 2) % 2`, `2 (i / 4) + i % 2`), so run `j` of row `k` (two adjacent columns) is
/// elements `4 j + 2 k` and `4 j + 2 k + 1`. The block is whole warpgroups (a compile error
/// otherwise). Not under [`Within`]: the producers' places lie past every matrix, and every
/// write is checked against the matrix (a full tile once).
#[derive(Debug)]
pub enum Warpgroups<const NI: usize, const P: usize> {}

/// The accumulators of a warp-tiled tensor-core kernel (`mma.sync` m16n8, [`crate::mma`]): each
/// warp writes `MI × NI` m16n8 accumulator tiles, a `(16·MI) × (8·NI)` block of C, each lane
/// its elements of them as [`FragC`](crate::mma::FragC) places them.
///
/// A block of `x × y` threads is `x·y / 32` warps (thread `(tx, ty)` is lane `(ty·x + tx) % 32`
/// of warp `(ty·x + tx) / 32`, as `thread_rank() / 32`), arranged in rows of `WN`: warp `w`
/// writes the warp tile at row `w / WN`, column `w % WN` of its block's tile, which is
/// `(x·y / 32 / WN) · 16·MI` rows by `WN · 8·NI` columns. The block size must be a multiple of
/// `32·WN` (else [`DisjointMatrix::tile`](super::DisjointMatrix::tile) does not compile).
///
/// A thread's element `(k, l)`, `k < 2·MI`, `l < 2·NI`, is element `i = 2·(k % 2) + l % 2` of
/// its accumulator for tile `(k / 2, l / 2)`: row `16·(k / 2) + 8·(k % 2) + lane / 4`, column
/// `8·(l / 2) + 2·(lane % 4) + l % 2` of the warp tile (the m16n8 accumulator's rows `g`, `g + 8`
/// and columns `2t`, `2t + 1`).
///
/// ```
/// use cohort::prelude::*;
/// use cohort::matrix::MmaWarps;
/// use cohort::mma::FragC;
///
/// // 8 warps, 2 × 4, each 64 × 32 of a 128 × 128 block tile.
/// #[kernel]
/// pub fn store(shape: BlockShape<256>, mut c: DisjointMatrix<f32, MmaWarps<4, 4, 4>, u32>) {
///     let acc = [[FragC::<f32>::splat(1.0); 4]; 4];
///     let mut t = c.tile(&shape);
///     for (mi, row) in acc.iter().enumerate() {
///         for (ni, f) in row.iter().enumerate() {
///             for i in 0..4 {
///                 t.set(2 * mi + i / 2, 2 * ni + i % 2, f.get(i));
///             }
///         }
///     }
/// }
/// ```
///
/// A kernel whose block is not whole rows of warps (`BlockShape<48>` with `MmaWarps<_, _, 1>`:
/// a warp and a half) does not build, and nor does one that transposes the layout
/// (`Transposed<MmaWarps<…>>`: its runs of columns would be runs of rows): both are constant
/// assertions of [`DisjointMatrix::tile`](super::DisjointMatrix::tile) and of `Transposed`,
/// errors when the kernel is compiled (`cargo build`; `cargo check` does not evaluate them).
#[derive(Debug)]
pub enum MmaWarps<const MI: usize, const NI: usize, const WN: usize> {}

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
    impl<const MI: usize, const NI: usize, const WN: usize> Sealed for super::MmaWarps<MI, NI, WN> {}
    impl<const NI: usize, const P: usize> Sealed for super::Warpgroups<NI, P> {}
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
// - `MmaWarps<MI, NI, WN>` (blocks of n = x·y threads, n a multiple of 32·WN, checked at compile
//   time by `tile`): thread (tx, ty) is t = ty·x + tx < n, one-to-one; lane = t % 32 gives
//   (g, q) = (lane / 4, lane % 4), warp w = t / 32 gives (wm, wn) = (w / WN, w % WN) with
//   wm < WM = n / 32 / WN; (t ↦ wm, wn, g, q) is one-to-one. Row = tr·TH + wm·16MI + g + 8k with
//   k < 2MI, g < 8: (wm, k, g) ↦ wm·16MI + 8k + g is one-to-one onto [0, TH = WM·16MI)
//   (8k + g is one-to-one onto [0, 16MI)). Column = tc·TW + wn·8NI + 2q + 8(l / 2) + l % 2 with
//   l < 2NI, q < 4: (wn, l, q) ↦ wn·8NI + 8(l / 2) + 2q + l % 2 is one-to-one onto
//   [0, TW = WN·8NI). So distinct (tr, tc, t, k, l) write distinct (row, col).
//   Far corner (the `Within` check): every row is at most tr·TH + TH - 1 and every column at
//   most tc·TW + TW - 1; thread n - 1 is lane 31 (g = 7, q = 3) of warp n/32 - 1 = (WM - 1,
//   WN - 1), whose element (2MI - 1, 2NI - 1) is exactly (TH - 1, TW - 1) of its tile: the
//   far-corner thread's last element is the largest row and column, as `Layout::place` asks.
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
    const IDLE_THREADS: bool = L::IDLE_THREADS;
    const KR: usize = L::KC;
    const KC: usize = {
        assert!(L::RUN == 1, "Transposed: the layout's columns come in runs (MmaWarps), which rows cannot");
        L::KR
    };
    const WITHIN: bool = L::WITHIN;
    const WARPS_N: usize = L::WARPS_N;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        let [r0, dr, c0, dc] = L::place(tx, ty, x, y, tr, tc);
        [c0, dc, r0, dr]
    }
}

impl<L: Layout> Layout for TransposedTiles<L> {
    const IDLE_THREADS: bool = L::IDLE_THREADS;
    const KR: usize = L::KR;
    const KC: usize = L::KC;
    const WITHIN: bool = L::WITHIN;
    const RUN: usize = L::RUN;
    const WARPS_N: usize = L::WARPS_N;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        L::place(tx, ty, x, y, tc, tr)
    }
}

impl<L: Layout> Layout for Within<L> {
    const IDLE_THREADS: bool = L::IDLE_THREADS;
    const KR: usize = {
        assert!(!L::IDLE_THREADS, "Within: the layout places idle threads past the matrix (Warpgroups' producers)");
        L::KR
    };
    const KC: usize = L::KC;
    const WITHIN: bool = true;
    const RUN: usize = L::RUN;
    const WARPS_N: usize = L::WARPS_N;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        L::place(tx, ty, x, y, tr, tc)
    }
}

/// Rows no matrix has (a device buffer holds fewer than 2^61 bytes): where [`Warpgroups`]' idle
/// threads are placed.
const IDLE_ROW: usize = usize::MAX / 4;

// `Warpgroups<NI, P>` (blocks of n = x·y threads, n a multiple of 128, checked at compile time
// by `tile` through `WARPS_N = 4`): thread t = ty·x + tx < n, one-to-one; warpgroup g = t / 128,
// warp w = (t / 32) % 4, lane l = t % 32. Threads of g < P are placed at rows from IDLE_ROW,
// past every matrix: a layout that is not `Within` checks every write against the matrix, so
// they write nothing. For g >= P, (g - P, w, l) is one-to-one; row = tr·TH + 64 (g - P) + 16 w +
// l / 4 + 8 k (k < 2, TH = 64 (n / 128 - P)) is one-to-one in (g - P, w, l / 4, k) onto the
// tile's TH rows; column = tc·TW + 2 (l % 4) + 8 (m / 2) + m % 2 (m < 2 NI, TW = 8 NI) is
// one-to-one in (l % 4, m) onto its TW columns. So distinct (tr, tc, t, k, m) of writing threads
// are distinct (row, col).
impl<const NI: usize, const P: usize> Layout for Warpgroups<NI, P> {
    const KR: usize = 2;
    const KC: usize = 2 * NI;
    const RUN: usize = 2;
    const IDLE_THREADS: bool = true;
    const WARPS_N: usize = {
        assert!(NI >= 1, "Warpgroups: at least 8 columns");
        4
    };
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        let t = ty * x + tx;
        let (g, w, lane) = (t / 128, (t / 32) % 4, t % 32);
        if g < P || x * y / 128 <= P {
            return [IDLE_ROW, 8, 0, 8];
        }
        let th = 64 * (x * y / 128 - P);
        let r0 = tr * th + 64 * (g - P) + 16 * w + lane / 4;
        let c0 = tc * 8 * NI + 2 * (lane % 4);
        [r0, 8, c0, 8]
    }
}

impl<const MI: usize, const NI: usize, const WN: usize> Layout for MmaWarps<MI, NI, WN> {
    const KR: usize = 2 * MI;
    const KC: usize = 2 * NI;
    const RUN: usize = 2;
    const WARPS_N: usize = {
        assert!(WN >= 1 && MI >= 1 && NI >= 1, "MmaWarps: at least one warp to a row and one tile each way");
        WN
    };
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        let t = ty * x + tx;
        let (lane, w) = (t % 32, t / 32);
        let wm_count = x * y / 32 / WN;
        let (th, tw) = (wm_count * 16 * MI, WN * 8 * NI);
        let r0 = tr * th + (w / WN) * 16 * MI + lane / 4;
        let c0 = tc * tw + (w % WN) * 8 * NI + 2 * (lane % 4);
        [r0, 8, c0, 8]
    }
}

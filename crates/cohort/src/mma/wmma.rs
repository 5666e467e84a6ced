//! A WMMA-style layer (CUDA's `nvcuda::wmma`) over [`mma_sync`](super::mma_sync): 16×16×16
//! fragments, loads from shared tiles and from global slices, stores to shared tiles.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;` | `let mut a = Fragment::<MatrixA, 16, 16, 16, bf16, RowMajor>::new();` |
//! | `wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;` | `Fragment::<Accumulator, 16, 16, 16, f32, RowMajor>` |
//! | `wmma::fill_fragment(c, 0.0f)` | [`fill_fragment`]`(&mut c, 0.0)` |
//! | `wmma::load_matrix_sync(a, smem_tile + r * ld + c, ld)` | [`load_matrix_sync`]`(&warp, &mut a, &tile, r, c)` (a [`SharedArray`] tile: `ld` is its row length) |
//! | `wmma::load_matrix_sync(a, global + r * ld + c, ld)` | [`load_matrix_sync_global`]`(&warp, &mut a, data, ld, r, c)` (bounds-checked) |
//! | `wmma::mma_sync(d, a, b, c)` | [`mma_sync`]`(&warp, &mut d, &a, &b, &c)` |
//! | `wmma::store_matrix_sync(smem + r * ld + c, d, ld, wmma::mem_row_major)` | [`store_matrix_sync`]`(&warp, &d, &tile, r, c)` |
//!
//! The shape, element type and layout are the fragment's type: only 16×16×16 with BF16/F16
//! inputs (A row-major; B row- or column-major) and `f32` or F16 accumulators exist, and
//! [`mma_sync`] takes an A, a B and an accumulator of one shape with matching types, so a
//! wrong combination does not compile. Loads and `mma_sync` are warp collectives (the
//! [convergence rule](super#convergence)); stores are per-lane.
//!
//! Not here yet: the other WMMA shapes (32×8×16, 8×32×16), TF32/INT8, a column-major A, and
//! stores to a `DisjointMatrix` (store to a shared tile, then write the block's output from
//! it).

use super::{
    AccElement, Accumulator, ColMajor, FragA, FragB, FragC, Half, MatrixA, MatrixB, MmaInput, RowMajor, load_a, load_b,
    load_b_nk,
};
use crate::cg::{ThreadBlockTile, TileParent};
use crate::shared::SharedArray;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::MatrixA {}
    impl Sealed for super::MatrixB {}
    impl Sealed for super::Accumulator {}
}

/// The WMMA fragments that exist: `Self` (the use) of shape M×N×K, elements `T`, layout `L`.
pub trait WmmaOperand<const M: usize, const N: usize, const K: usize, T, L>: sealed::Sealed {
    /// The `mma.sync` fragments it is made of.
    type Inner: Copy + core::fmt::Debug;
    /// The fragments all holding `v`.
    fn splat(v: T) -> Self::Inner;
}

impl<T: Half> WmmaOperand<16, 16, 16, T, RowMajor> for MatrixA {
    type Inner = FragA<T>;
    fn splat(v: T) -> Self::Inner {
        FragA::splat(v)
    }
}

impl<T: Half, L: BLayout> WmmaOperand<16, 16, 16, T, L> for MatrixB {
    /// Columns 0–7 and 8–15.
    type Inner = [FragB<T>; 2];
    fn splat(v: T) -> Self::Inner {
        [FragB::splat(v); 2]
    }
}

impl<T: AccElement> WmmaOperand<16, 16, 16, T, RowMajor> for Accumulator {
    /// Columns 0–7 and 8–15.
    type Inner = [FragC<T>; 2];
    fn splat(v: T) -> Self::Inner {
        [FragC::splat(v); 2]
    }
}

/// The layouts a WMMA B fragment can be loaded from: [`RowMajor`] (stored K×N) and
/// [`ColMajor`] (stored N×K).
pub trait BLayout: Copy {
    #[doc(hidden)]
    const COL_MAJOR: bool;
}
impl BLayout for RowMajor {
    const COL_MAJOR: bool = false;
}
impl BLayout for ColMajor {
    const COL_MAJOR: bool = true;
}

/// `wmma::fragment<Use, M, N, K, T, Layout>`: one lane's share of a WMMA operand.
pub struct Fragment<Use: WmmaOperand<M, N, K, T, L>, const M: usize, const N: usize, const K: usize, T, L> {
    inner: Use::Inner,
}

impl<Use: WmmaOperand<M, N, K, T, L>, const M: usize, const N: usize, const K: usize, T, L> Clone
    for Fragment<Use, M, N, K, T, L>
{
    fn clone(&self) -> Self {
        *self
    }
}
impl<Use: WmmaOperand<M, N, K, T, L>, const M: usize, const N: usize, const K: usize, T, L> Copy
    for Fragment<Use, M, N, K, T, L>
{
}

impl<Use: WmmaOperand<M, N, K, T, L>, const M: usize, const N: usize, const K: usize, T, L> core::fmt::Debug
    for Fragment<Use, M, N, K, T, L>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("wmma::Fragment").field("inner", &self.inner).finish()
    }
}

impl<Use: WmmaOperand<M, N, K, T, L>, const M: usize, const N: usize, const K: usize, T: Default, L>
    Fragment<Use, M, N, K, T, L>
{
    /// A fragment of zeros (`T::default()`).
    #[inline(always)]
    #[must_use]
    pub fn new() -> Self {
        Self { inner: Use::splat(T::default()) }
    }
}

impl<Use: WmmaOperand<M, N, K, T, L>, const M: usize, const N: usize, const K: usize, T: Default, L> Default
    for Fragment<Use, M, N, K, T, L>
{
    fn default() -> Self {
        Self::new()
    }
}

/// `wmma::fill_fragment(frag, v)`: every element `v` (per-lane, not a collective).
#[inline(always)]
pub fn fill_fragment<Use: WmmaOperand<M, N, K, T, L>, const M: usize, const N: usize, const K: usize, T, L>(
    frag: &mut Fragment<Use, M, N, K, T, L>,
    v: T,
) {
    frag.inner = Use::splat(v);
}

/// Operands WMMA can load from a shared tile or a global slice.
pub trait Load<T>: Sized {
    #[doc(hidden)]
    fn load_shared<const R: usize, const C: usize, P: TileParent>(
        warp: &ThreadBlockTile<32, P>,
        tile: &SharedArray<[T; C], R>,
        row0: usize,
        col0: usize,
    ) -> Self;
    #[doc(hidden)]
    fn load_global(data: &[T], ld: usize, row0: usize, col0: usize) -> Self;
}

/// Element (`r`, `c`) of a row-major matrix with leading dimension `ld` in `data`, bounds-checked.
#[inline(always)]
#[track_caller]
fn at<T: Copy>(data: &[T], ld: usize, r: usize, c: usize) -> T {
    assert!(c < ld, "column beyond the leading dimension");
    data[r * ld + c]
}

impl<T: Half> Load<T> for Fragment<MatrixA, 16, 16, 16, T, RowMajor> {
    #[inline(always)]
    #[track_caller]
    fn load_shared<const R: usize, const C: usize, P: TileParent>(
        warp: &ThreadBlockTile<32, P>,
        tile: &SharedArray<[T; C], R>,
        row0: usize,
        col0: usize,
    ) -> Self {
        Self { inner: load_a(warp, tile, row0, col0) }
    }
    #[inline(always)]
    #[track_caller]
    fn load_global(data: &[T], ld: usize, row0: usize, col0: usize) -> Self {
        Self { inner: FragA::from_fn(|r, c| at(data, ld, row0 + r, col0 + c)) }
    }
}

impl<T: Half, L: BLayout> Load<T> for Fragment<MatrixB, 16, 16, 16, T, L> {
    #[inline(always)]
    #[track_caller]
    fn load_shared<const R: usize, const C: usize, P: TileParent>(
        warp: &ThreadBlockTile<32, P>,
        tile: &SharedArray<[T; C], R>,
        row0: usize,
        col0: usize,
    ) -> Self {
        // Row-major: the tile is K×N, (row0, col0) = (k0, n0). Column-major: the tile holds
        // Bᵀ (N×K), element (k, n) of B at tile (n, k), and (row0, col0) = (n0, k0).
        let inner = if L::COL_MAJOR {
            [load_b_nk(warp, tile, row0, col0), load_b_nk(warp, tile, row0 + 8, col0)]
        } else {
            [load_b(warp, tile, row0, col0), load_b(warp, tile, row0, col0 + 8)]
        };
        Self { inner }
    }
    #[inline(always)]
    #[track_caller]
    fn load_global(data: &[T], ld: usize, row0: usize, col0: usize) -> Self {
        let e = |k: usize, n: usize| {
            if L::COL_MAJOR { at(data, ld, row0 + n, col0 + k) } else { at(data, ld, row0 + k, col0 + n) }
        };
        Self { inner: [FragB::from_fn(&e), FragB::from_fn(|k, n| e(k, n + 8))] }
    }
}

impl<T: AccElement> Load<T> for Fragment<Accumulator, 16, 16, 16, T, RowMajor> {
    #[inline(always)]
    #[track_caller]
    fn load_shared<const R: usize, const C: usize, P: TileParent>(
        _warp: &ThreadBlockTile<32, P>,
        tile: &SharedArray<[T; C], R>,
        row0: usize,
        col0: usize,
    ) -> Self {
        Self {
            inner: [
                FragC::from_fn(|r, c| tile.load_at(row0 + r, col0 + c)),
                FragC::from_fn(|r, c| tile.load_at(row0 + r, col0 + 8 + c)),
            ],
        }
    }
    #[inline(always)]
    #[track_caller]
    fn load_global(data: &[T], ld: usize, row0: usize, col0: usize) -> Self {
        Self {
            inner: [
                FragC::from_fn(|r, c| at(data, ld, row0 + r, col0 + c)),
                FragC::from_fn(|r, c| at(data, ld, row0 + r, col0 + 8 + c)),
            ],
        }
    }
}

/// `wmma::load_matrix_sync(frag, tile + row0 * C + col0, C)`: the 16×16 block at (`row0`,
/// `col0`) of a shared tile (B column-major: the tile holds Bᵀ, and (`row0`, `col0`) is
/// (n0, k0)). A and B use `ldmatrix`: 16-byte aligned rows (`C` and `col0` multiples of 8),
/// checked, as are the bounds (a panic names the call). A warp collective.
#[inline(always)]
#[track_caller]
pub fn load_matrix_sync<F: Load<T>, T, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    frag: &mut F,
    tile: &SharedArray<[T; C], R>,
    row0: usize,
    col0: usize,
) {
    *frag = F::load_shared(warp, tile, row0, col0);
}

/// `wmma::load_matrix_sync(frag, data + row0 * ld + col0, ld)` from global memory (any slice):
/// each lane reads its elements, bounds-checked against `data` and `ld` (a panic names the
/// call). Called by the whole warp, like every WMMA load.
#[inline(always)]
#[track_caller]
pub fn load_matrix_sync_global<F: Load<T>, T, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    frag: &mut F,
    data: &[T],
    ld: usize,
    row0: usize,
    col0: usize,
) {
    let _ = warp;
    *frag = F::load_global(data, ld, row0, col0);
}

/// `wmma::mma_sync(d, a, b, c)`: `d = a · b + c` (two `mma.sync` m16n8k16). A warp collective.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn mma_sync<T: MmaInput<C>, C: AccElement, LB: BLayout, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    d: &mut Fragment<Accumulator, 16, 16, 16, C, RowMajor>,
    a: &Fragment<MatrixA, 16, 16, 16, T, RowMajor>,
    b: &Fragment<MatrixB, 16, 16, 16, T, LB>,
    c: &Fragment<Accumulator, 16, 16, 16, C, RowMajor>,
) {
    let lo = super::mma_sync(warp, &a.inner, &b.inner[0], &c.inner[0]);
    let hi = super::mma_sync(warp, &a.inner, &b.inner[1], &c.inner[1]);
    d.inner = [lo, hi];
}

/// `wmma::store_matrix_sync(tile + row0 * C + col0, d, C, wmma::mem_row_major)`: the
/// accumulator into the 16×16 block at (`row0`, `col0`) of a shared tile (bounds-checked;
/// per-lane stores).
#[inline(always)]
#[track_caller]
pub fn store_matrix_sync<T: AccElement, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    d: &Fragment<Accumulator, 16, 16, 16, T, RowMajor>,
    tile: &SharedArray<[T; C], R>,
    row0: usize,
    col0: usize,
) {
    let _ = warp;
    super::store_c(&d.inner[0], tile, row0, col0);
    super::store_c(&d.inner[1], tile, row0, col0 + 8);
}

/// The element at (`row`, `col`) of the 16×16 operand that is element `i` of lane `lane`'s
/// accumulator share (`i < 8`: the two m16n8 halves' four each).
#[must_use]
pub fn accumulator_coords(lane: u32, i: usize) -> (usize, usize) {
    let (r, c) = FragC::<f32>::element_coords(lane, i % 4);
    (r, c + 8 * (i / 4))
}

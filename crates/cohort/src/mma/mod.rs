//! Tensor cores from safe Rust: warp-level `mma.sync` (sm_80+) on typed fragments, `ldmatrix`
//! from shared tiles, the 16-bit float element types, and a WMMA-style layer ([`wmma`]).
//!
//! | CUDA C++ / PTX | Cohort |
//! |---|---|
//! | `__nv_bfloat16`, `__half` | [`bf16`], [`f16`](struct@f16) (the `half` crate's types: the same on the host) |
//! | `__float2bfloat16_rn(x)`, `__bfloat162float(h)`, `__float2half_rn`, `__half2float` | [`Half::from_f32`], [`Half::to_f32`] (`cvt.rn.bf16.f32`, …) |
//! | `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {d}, {a}, {b}, {c}` | [`mma_sync`]`(&warp, &a, &b, &c)` with `a: FragA<bf16>`, `b: FragB<bf16>`, `c: FragC<f32>` |
//! | `… .f32.f16.f16.f32`, `… .f16.f16.f16.f16` | the same with `f16` inputs, `f32` or `f16` accumulators |
//! | the registers `a0..a3` a lane holds | [`Fragment::get`] / [`Fragment::set`] by element, [`Fragment::element_coords`] says where each sits in the matrix |
//! | `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` | [`mma_sync`] with [`MmaA`]`<`[`M16N8K8`]`, `[`tf32`]`>`, [`MmaB`], [`MmaC`]`<M16N8K8, f32>` |
//! | `mma.sync.aligned.m16n8k32.row.col[.satfinite].s32.{s8,u8}.{s8,u8}.s32` | [`mma_sync`] (wrapping), [`mma_sync_satfinite`] with `MmaA<`[`M16N8K32`]`, i8 \| u8>`, `MmaC<M16N8K32, i32>` |
//! | `mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32` (sm_89) | [`mma_sync`] with `MmaA<M16N8K32, `[`e4m3`]` \| `[`e5m2`]`>`, `MmaC<M16N8K32, f32>` |
//! | `__nv_fp8_e4m3`, `__nv_fp8_e5m2`, `wmma::precision::tf32` | [`e4m3`], [`e5m2`], [`tf32`] (`from_f32` / `to_f32`: `cvt.rn.satfinite.e4m3x2.f32` …, `cvt.rna.tf32.f32`) |
//! | `ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16` | [`ldmatrix_x1`] … [`ldmatrix_x4_trans`] from a [`SharedArray`] tile, each lane naming its row by (row, column) |
//! | `stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16` (sm_90) | [`stmatrix_x1`] … [`stmatrix_x4_trans`] to a tile, each lane naming its row; [`store_c_stmatrix`] (an accumulator as BF16/F16) |
//! | an A / B fragment loaded with `ldmatrix` | [`load_a`], [`load_b`] (B stored K×N), [`load_b_nk`] (B stored N×K) |
//! | two B fragments (n8 + n8) from one `ldmatrix.x4` | [`load_b_pair`] (K×N), [`load_b_nk_pair`] (N×K) |
//! | a warp's lane pointer into its slice of a stage (`smem + lane_off`), loads at constant offsets | [`WarpTiles`] (checked once), [`WarpTiles::a`], [`WarpTiles::b_pair`], [`WarpTiles::b_pair_trans`] |
//! | a GEMM's accumulators to global C, `float2` per lane | a [`DisjointMatrix`](crate::matrix::DisjointMatrix) of layout [`MmaWarps`](crate::matrix::MmaWarps) |
//! | a multistage `cp.async` pipeline of shared tiles | [`cg::memcpy_async_tile`](crate::cg::memcpy_async_tile), [`cg::commit_async_copies`](crate::cg::commit_async_copies), [`cg::wait_prior`](crate::cg::wait_prior); `kernels-gpu/src/gemm.rs` is the whole GEMM |
//! | `nvcuda::wmma` | [`wmma`] |
//!
//! ## Fragments
//!
//! A [`Fragment<Op, Shape, T, Layout>`] is one lane's share of a matrix operand: `Op` is
//! [`MatrixA`], [`MatrixB`] or [`Accumulator`], `Shape` the instruction's ([`M16N8K16`],
//! [`M16N8K8`], [`M16N8K32`]), `T` the element type and `Layout` [`RowMajor`] or [`ColMajor`].
//! Only the combinations the hardware has exist ([`Operand`] is implemented for them alone),
//! and [`mma_sync`] takes exactly an A, a B and an accumulator of one shape with a type
//! combination PTX has ([`MmaShape`]): a wrong shape, element type or layout is a compile
//! error.
//!
//! Which lane holds which element (PTX ISA, "Matrix fragments for `mma.m16n8k16` with
//! floating point type"), with `g = lane / 4` and `t = lane % 4`:
//!
//! | operand | elements per lane | element `i` of lane `lane` is at (row, column) |
//! |---|---|---|
//! | A, 16×16, row-major | 8 (4 words) | (`g + 8·((i / 2) % 2)`, `2t + i % 2 + 8·(i / 4)`) |
//! | B, 16×8 (K×N), column-major | 4 (2 words) | (`2t + i % 2 + 8·(i / 2)`, `g`) |
//! | C / D, 16×8, row-major | 4 (4 `f32` or 2 words of `f16`) | (`g + 8·(i / 2)`, `2t + i % 2`) |
//!
//! The other shapes (PTX ISA, "Matrix fragments for `mma.m16n8k8`" with `.tf32` and "… for
//! `mma.m16n8k32`"):
//!
//! | operand | elements per lane | element `i` of lane `lane` is at (row, column) |
//! |---|---|---|
//! | A, 16×8 [`tf32`], row-major | 4 (4 words) | (`g + 8·(i % 2)`, `t + 4·(i / 2)`) |
//! | B, 8×8 (K×N) [`tf32`], column-major | 2 (2 words) | (`t + 4·i`, `g`) |
//! | A, 16×32 8-bit, row-major | 16 (4 words) | (`g + 8·((i / 4) % 2)`, `4t + i % 4 + 16·(i / 8)`) |
//! | B, 32×8 (K×N) 8-bit, column-major | 8 (2 words) | (`4t + i % 4 + 16·(i / 4)`, `g`) |
//! | C / D, 16×8, `f32` or `i32` | 4 | as m16n8k16's |
//!
//! [`Fragment::element_coords`] computes it. Element `2w` of a 16-bit fragment is the low half
//! of register `w`, element `2w + 1` the high half; element `4w + j` of an 8-bit one is byte `j`
//! of register `w`.
//!
//! ## Convergence
//!
//! `mma.sync` and `ldmatrix` are `.aligned` warp instructions: all 32 lanes must execute the
//! same instruction, converged (otherwise the hardware's behaviour is undefined). They take
//! the warp as a [`ThreadBlockTile<32>`](crate::cg::ThreadBlockTile) and follow the
//! [convergence rule](crate::cg#convergence) of every Cohort collective: in checked mode a
//! call reached by part of the warp ends the launch with an `Err` naming it and its site, and
//! the CPU device always reports it (`divergence: mma_sync …`). The instructions are LLVM's
//! `convergent` NVVM intrinsics, so the compiler never splits one call into two.
//!
//! ## Numerics and the CPU device
//!
//! On the CPU device the warp's fragments are gathered and the product computed as the tensor
//! cores define it: inputs exactly as given (every BF16/F16 is exact in `f32`), each product
//! exact, accumulation in `f32`. The CPU device adds `c` and then the 16 products in order of
//! `k`, rounding each partial sum to `f32`; the hardware's adder order and intermediate
//! precision are unspecified, so results that are not exact in `f32` can differ from a GPU's
//! in the last bits (tests use data whose sums are exact, and a relative tolerance otherwise).
//! F16 accumulators are computed in `f32` and rounded once to F16. TF32: products of TF32
//! values are exact in `f32` and are summed the same way (an `f32` given as TF32 is read
//! truncated to its top 19 bits, as the tensor cores read it). 8-bit integers: the exact sum,
//! wrapped to 32 bits, or clamped with [`mma_sync_satfinite`] — bit-exact on every device. FP8:
//! decoded exactly and summed as above (Hopper's FP8 accumulation keeps fewer bits than `f32`:
//! sums that are not exact in about 14 bits can differ from a GPU's).
//!
//! Requires sm_80 (Cohort builds sm_80 and sm_90 PTX); FP8 `mma_sync` needs sm_89 (a panic
//! naming the call on a GPU that runs the sm_80 module), `stmatrix` sm_90 (a trap below).

use core::marker::PhantomData;

pub use half::{bf16, f16};
pub use shapes::{Byte8, IntMma};
pub use types::{e4m3, e5m2, tf32};

use crate::DeviceCopy;
use crate::cg::{ThreadBlockTile, TileParent};
use crate::raw;
use crate::shared::SharedArray;

mod shapes;
mod types;
pub mod wmma;

#[cfg(test)]
mod tests;

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
    impl Sealed for f32 {}
    impl Sealed for super::MatrixA {}
    impl Sealed for super::MatrixB {}
    impl Sealed for super::Accumulator {}

    /// The `mma.sync` instructions that exist (shape, A's, B's and the accumulator's types):
    /// a trait no other crate can name, so none can add one.
    pub trait Shape<TA, TB, C> {}
    impl<T: super::MmaInput<C>, C: super::AccElement> Shape<T, T, C> for super::M16N8K16 {}
    impl Shape<super::tf32, super::tf32, f32> for super::M16N8K8 {}
    impl Shape<i8, i8, i32> for super::M16N8K32 {}
    impl Shape<i8, u8, i32> for super::M16N8K32 {}
    impl Shape<u8, i8, i32> for super::M16N8K32 {}
    impl Shape<u8, u8, i32> for super::M16N8K32 {}
    impl Shape<super::e4m3, super::e4m3, f32> for super::M16N8K32 {}
    impl Shape<super::e4m3, super::e5m2, f32> for super::M16N8K32 {}
    impl Shape<super::e5m2, super::e4m3, f32> for super::M16N8K32 {}
    impl Shape<super::e5m2, super::e5m2, f32> for super::M16N8K32 {}
}

/// The 16-bit floats of the tensor cores: [`bf16`] and [`f16`](struct@f16).
pub trait Half: DeviceCopy + sealed::Sealed + PartialEq + core::fmt::Debug {
    /// `x` rounded to nearest, ties to even (`cvt.rn.bf16.f32` / `cvt.rn.f16.f32`; the CPU
    /// device rounds the same way).
    fn from_f32(x: f32) -> Self;
    /// The value as `f32` (exact).
    fn to_f32(self) -> f32;
    /// The bits.
    fn to_bits(self) -> u16;
    /// The value with these bits.
    fn from_bits(b: u16) -> Self;
}

impl Half for bf16 {
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        bf16::from_bits(raw::cvt_rn_bf16_f32(x))
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.to_bits()) << 16)
    }
    #[inline(always)]
    fn to_bits(self) -> u16 {
        bf16::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(b: u16) -> Self {
        bf16::from_bits(b)
    }
}

impl Half for f16 {
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        f16::from_bits(raw::cvt_rn_f16_f32(x))
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        raw::cvt_f32_f16(self.to_bits())
    }
    #[inline(always)]
    fn to_bits(self) -> u16 {
        f16::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(b: u16) -> Self {
        f16::from_bits(b)
    }
}

/// The A operand (M×K).
#[derive(Clone, Copy, Debug)]
pub struct MatrixA;
/// The B operand (K×N).
#[derive(Clone, Copy, Debug)]
pub struct MatrixB;
/// The accumulator, C and D (M×N).
#[derive(Clone, Copy, Debug)]
pub struct Accumulator;
/// Row-major: consecutive elements of a row are adjacent.
#[derive(Clone, Copy, Debug)]
pub struct RowMajor;
/// Column-major: consecutive elements of a column are adjacent.
#[derive(Clone, Copy, Debug)]
pub struct ColMajor;
/// The `mma.sync` shape m16n8k16: A 16×16, B 16×8, C/D 16×8 (BF16, F16 inputs).
#[derive(Clone, Copy, Debug)]
pub struct M16N8K16;
/// The `mma.sync` shape m16n8k8: A 16×8, B 8×8, C/D 16×8 ([`tf32`] inputs).
#[derive(Clone, Copy, Debug)]
pub struct M16N8K8;
/// The `mma.sync` shape m16n8k32: A 16×32, B 32×8, C/D 16×8 (`i8`/`u8` inputs with `i32`
/// accumulators; [`e4m3`]/[`e5m2`] inputs with `f32` accumulators, sm_89+).
#[derive(Clone, Copy, Debug)]
pub struct M16N8K32;

/// The fragments that exist: `Op` of shape `S` with elements `T` in layout `L` (implemented
/// only for the combinations `mma.sync` has; sealed).
pub trait Operand<S, T, L>: sealed::Sealed {
    /// The lane's registers.
    type Regs: Copy + core::fmt::Debug;
    /// Rows of the whole operand.
    const ROWS: usize;
    /// Columns of the whole operand.
    const COLS: usize;
    /// Elements per lane.
    const LEN: usize;
    /// The registers all holding `v`.
    fn splat(v: T) -> Self::Regs;
    /// Element `i` (`i < LEN`).
    fn get(r: &Self::Regs, i: usize) -> T;
    /// Sets element `i` (`i < LEN`).
    fn set(r: &mut Self::Regs, i: usize, v: T);
    /// Where element `i` of lane `lane`'s fragment sits: (row, column) in the operand.
    fn coords(lane: u32, i: usize) -> (usize, usize);
}

#[inline(always)]
fn half_get<T: Half, const N: usize>(w: &[u32; N], i: usize) -> T {
    T::from_bits((w[i / 2] >> (16 * (i % 2))) as u16)
}

#[inline(always)]
fn half_set<T: Half, const N: usize>(w: &mut [u32; N], i: usize, v: T) {
    let s = 16 * (i % 2);
    w[i / 2] = (w[i / 2] & !(0xffff << s)) | u32::from(v.to_bits()) << s;
}

#[inline(always)]
fn half_splat<T: Half, const N: usize>(v: T) -> [u32; N] {
    let b = u32::from(v.to_bits());
    [b | b << 16; N]
}

macro_rules! half_operand {
    ($op:ty, $l:ty, $n:literal, $rows:literal, $cols:literal, |$lane:ident, $i:ident| $coords:expr) => {
        impl<T: Half> Operand<M16N8K16, T, $l> for $op {
            type Regs = [u32; $n];
            const ROWS: usize = $rows;
            const COLS: usize = $cols;
            const LEN: usize = 2 * $n;
            #[inline(always)]
            fn splat(v: T) -> Self::Regs {
                half_splat(v)
            }
            #[inline(always)]
            fn get(r: &Self::Regs, i: usize) -> T {
                half_get(r, i)
            }
            #[inline(always)]
            fn set(r: &mut Self::Regs, i: usize, v: T) {
                half_set(r, i, v)
            }
            #[inline(always)]
            fn coords($lane: u32, $i: usize) -> (usize, usize) {
                let ($lane, $i) = ($lane as usize % 32, $i);
                $coords
            }
        }
    };
}

half_operand!(MatrixA, RowMajor, 4, 16, 16, |l, i| (l / 4 + 8 * ((i / 2) % 2), 2 * (l % 4) + i % 2 + 8 * (i / 4)));
half_operand!(MatrixB, ColMajor, 2, 16, 8, |l, i| (2 * (l % 4) + i % 2 + 8 * (i / 2), l / 4));

/// The accumulator element types of `mma.sync` m16n8k16: `f32` (four per lane) and [`f16`](struct@f16)
/// (four per lane, in two words).
pub trait AccElement: DeviceCopy + sealed::Sealed {
    /// The lane's registers of an m16n8 accumulator.
    type Regs: Copy + core::fmt::Debug;
    #[doc(hidden)]
    fn splat(v: Self) -> Self::Regs;
    #[doc(hidden)]
    fn get(r: &Self::Regs, i: usize) -> Self;
    #[doc(hidden)]
    fn set(r: &mut Self::Regs, i: usize, v: Self);
}

impl AccElement for f32 {
    type Regs = [f32; 4];
    #[inline(always)]
    fn splat(v: f32) -> Self::Regs {
        [v; 4]
    }
    #[inline(always)]
    fn get(r: &Self::Regs, i: usize) -> f32 {
        r[i]
    }
    #[inline(always)]
    fn set(r: &mut Self::Regs, i: usize, v: f32) {
        r[i] = v;
    }
}

impl AccElement for f16 {
    type Regs = [u32; 2];
    #[inline(always)]
    fn splat(v: f16) -> Self::Regs {
        half_splat(v)
    }
    #[inline(always)]
    fn get(r: &Self::Regs, i: usize) -> f16 {
        half_get(r, i)
    }
    #[inline(always)]
    fn set(r: &mut Self::Regs, i: usize, v: f16) {
        half_set(r, i, v)
    }
}

impl<C: AccElement> Operand<M16N8K16, C, RowMajor> for Accumulator {
    type Regs = C::Regs;
    const ROWS: usize = 16;
    const COLS: usize = 8;
    const LEN: usize = 4;
    #[inline(always)]
    fn splat(v: C) -> Self::Regs {
        C::splat(v)
    }
    #[inline(always)]
    fn get(r: &Self::Regs, i: usize) -> C {
        C::get(r, i)
    }
    #[inline(always)]
    fn set(r: &mut Self::Regs, i: usize, v: C) {
        C::set(r, i, v)
    }
    #[inline(always)]
    fn coords(l: u32, i: usize) -> (usize, usize) {
        let l = l as usize % 32;
        (l / 4 + 8 * (i / 2), 2 * (l % 4) + i % 2)
    }
}

/// One lane's share of a matrix operand of a warp-level MMA (see the [module docs](self)).
///
/// Its elements are plain values of this lane: read and write them with [`get`](Self::get) and
/// [`set`](Self::set), fill them from any data (their places in the matrix:
/// [`element_coords`](Self::element_coords)), or load them with [`load_a`] / [`load_b`].
pub struct Fragment<Op: Operand<S, T, L>, S, T, L> {
    regs: Op::Regs,
    _p: PhantomData<(S, T, L)>,
}

impl<Op: Operand<S, T, L>, S, T, L> Clone for Fragment<Op, S, T, L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Op: Operand<S, T, L>, S, T, L> Copy for Fragment<Op, S, T, L> {}

impl<Op: Operand<S, T, L>, S, T, L> core::fmt::Debug for Fragment<Op, S, T, L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Fragment").field("regs", &self.regs).finish()
    }
}

/// The A fragment of m16n8k16 (16×16, row-major).
pub type FragA<T> = Fragment<MatrixA, M16N8K16, T, RowMajor>;
/// The B fragment of m16n8k16 (16×8, column-major).
pub type FragB<T> = Fragment<MatrixB, M16N8K16, T, ColMajor>;
/// The accumulator fragment of m16n8k16 (16×8, row-major).
pub type FragC<T> = Fragment<Accumulator, M16N8K16, T, RowMajor>;
/// The A fragment of shape `S` (row-major): `MmaA<M16N8K32, i8>`, `MmaA<M16N8K8, tf32>`.
pub type MmaA<S, T> = Fragment<MatrixA, S, T, RowMajor>;
/// The B fragment of shape `S` (column-major).
pub type MmaB<S, T> = Fragment<MatrixB, S, T, ColMajor>;
/// The accumulator fragment of shape `S` (row-major): `MmaC<M16N8K32, i32>`.
pub type MmaC<S, C> = Fragment<Accumulator, S, C, RowMajor>;

impl<Op: Operand<S, T, L>, S, T, L> Fragment<Op, S, T, L> {
    /// Elements per lane.
    pub const LEN: usize = Op::LEN;
    /// Rows of the whole operand.
    pub const ROWS: usize = Op::ROWS;
    /// Columns of the whole operand.
    pub const COLS: usize = Op::COLS;

    /// A fragment with every element `v`.
    #[inline(always)]
    #[must_use]
    pub fn splat(v: T) -> Self {
        Self { regs: Op::splat(v), _p: PhantomData }
    }

    /// Element `i` of this lane's share.
    ///
    /// # Panics
    /// If `i >= LEN`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        assert!(i < Op::LEN, "fragment element index out of bounds");
        Op::get(&self.regs, i)
    }

    /// Sets element `i` of this lane's share.
    ///
    /// # Panics
    /// If `i >= LEN`.
    #[inline(always)]
    #[track_caller]
    pub fn set(&mut self, i: usize, v: T) {
        assert!(i < Op::LEN, "fragment element index out of bounds");
        Op::set(&mut self.regs, i, v)
    }

    /// Where element `i` of lane `lane`'s share sits in the operand: (row, column). The table
    /// is in the [module docs](self). `lane` is taken modulo 32.
    ///
    /// # Panics
    /// If `i >= LEN`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn element_coords(lane: u32, i: usize) -> (usize, usize) {
        assert!(i < Op::LEN, "fragment element index out of bounds");
        Op::coords(lane, i)
    }

    /// Builds this lane's share from `f(row, col)`, the operand's element at (row, column).
    #[inline(always)]
    #[must_use]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn from_fn(mut f: impl FnMut(usize, usize) -> T) -> Self
    where
        T: Copy,
    {
        let lane = raw::laneid();
        let (r, c) = Op::coords(lane, 0);
        let mut out = Self::splat(f(r, c));
        for i in 1..Op::LEN {
            let (r, c) = Op::coords(lane, i);
            Op::set(&mut out.regs, i, f(r, c));
        }
        out
    }

    /// Calls `f(row, col, value)` for each of this lane's elements.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn for_each(&self, mut f: impl FnMut(usize, usize, T)) {
        let lane = raw::laneid();
        for i in 0..Op::LEN {
            let (r, c) = Op::coords(lane, i);
            f(r, c, Op::get(&self.regs, i));
        }
    }

    /// The registers (as PTX names them).
    #[inline(always)]
    #[must_use]
    pub fn regs(&self) -> Op::Regs {
        self.regs
    }

    /// The fragment with these registers (any bits are valid elements).
    #[inline(always)]
    #[must_use]
    pub fn from_regs(regs: Op::Regs) -> Self {
        Self { regs, _p: PhantomData }
    }
}

/// The input element types of `mma.sync` m16n8k16 with accumulators of `C`: BF16 → F32,
/// F16 → F32, F16 → F16.
pub trait MmaInput<C: AccElement>: Half {
    /// `d = a · b + c` on the registers.
    ///
    /// # Safety
    /// As [`raw::mma_m16n8k16_f32_bf16`] (the whole warp, converged, at this call).
    #[doc(hidden)]
    unsafe fn mma(a: [u32; 4], b: [u32; 2], c: C::Regs) -> C::Regs;
}

impl MmaInput<f32> for bf16 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        // SAFETY: forwarded to the caller.
        unsafe { raw::mma_m16n8k16_f32_bf16(a, b, c) }
    }
}

impl MmaInput<f32> for f16 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        // SAFETY: forwarded to the caller.
        unsafe { raw::mma_m16n8k16_f32_f16(a, b, c) }
    }
}

impl MmaInput<f16> for f16 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mma(a: [u32; 4], b: [u32; 2], c: [u32; 2]) -> [u32; 2] {
        // SAFETY: forwarded to the caller.
        unsafe { raw::mma_m16n8k16_f16_f16(a, b, c) }
    }
}

/// The `mma.sync` instructions: shape `Self` with A's elements `TA`, B's `TB` and accumulators
/// `C` (implemented for exactly those PTX has; sealed): m16n8k16 BF16 → F32, F16 → F32, F16 →
/// F16; m16n8k8 TF32 → F32; m16n8k32 S8/U8 × S8/U8 → S32 and E4M3/E5M2 × E4M3/E5M2 → F32
/// (sm_89+).
pub trait MmaShape<TA, TB, C>: sealed::Shape<TA, TB, C> + Sized
where
    MatrixA: Operand<Self, TA, RowMajor>,
    MatrixB: Operand<Self, TB, ColMajor>,
    Accumulator: Operand<Self, C, RowMajor>,
{
    /// `d = a · b + c` on the registers.
    ///
    /// # Safety
    /// As [`raw::mma_m16n8k16_f32_bf16`] (the whole warp, converged, at this call).
    #[doc(hidden)]
    unsafe fn mma(
        a: <MatrixA as Operand<Self, TA, RowMajor>>::Regs,
        b: <MatrixB as Operand<Self, TB, ColMajor>>::Regs,
        c: <Accumulator as Operand<Self, C, RowMajor>>::Regs,
    ) -> <Accumulator as Operand<Self, C, RowMajor>>::Regs;
}

impl<T: MmaInput<C>, C: AccElement> MmaShape<T, T, C> for M16N8K16 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mma(a: [u32; 4], b: [u32; 2], c: C::Regs) -> C::Regs {
        // SAFETY: forwarded to the caller.
        unsafe { T::mma(a, b, c) }
    }
}

/// `mma.sync.aligned.{shape}.row.col` (sm_80+; FP8 sm_89+): `a · b + c` for the warp's
/// fragments — an A, a B and an accumulator of one shape, of a type combination PTX has
/// ([`MmaShape`]) — returning D's fragment. Integer products wrap on overflow (two's
/// complement; [`mma_sync_satfinite`] clamps instead).
///
/// A warp collective: every lane of `warp` calls it at the same call (the
/// [module docs](self#convergence)).
///
/// # Panics
/// FP8 inputs on a GPU below sm_89 (the sm_80 module): an `Err` of the launch naming the call.
#[inline(always)]
#[must_use]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn mma_sync<S, TA, TB, C, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    a: &Fragment<MatrixA, S, TA, RowMajor>,
    b: &Fragment<MatrixB, S, TB, ColMajor>,
    c: &Fragment<Accumulator, S, C, RowMajor>,
) -> Fragment<Accumulator, S, C, RowMajor>
where
    MatrixA: Operand<S, TA, RowMajor>,
    MatrixB: Operand<S, TB, ColMajor>,
    Accumulator: Operand<S, C, RowMajor>,
    S: MmaShape<TA, TB, C>,
{
    let _ = warp;
    crate::check::warp("mma_sync", u32::MAX);
    // SAFETY: `warp` is a whole warp (a tile of 32: every lane of it exists, the block's size
    // being a multiple of 32), and every lane of it is at this call (the convergence rule,
    // checked in checked mode and on the CPU device).
    Fragment::from_regs(unsafe { S::mma(a.regs, b.regs, c.regs) })
}

/// `mma.sync.aligned.m16n8k32.row.col.satfinite.s32.{s8,u8}.{s8,u8}.s32` (sm_80+): as
/// [`mma_sync`] with the result clamped to `i32::MIN ..= i32::MAX` instead of wrapping. A warp
/// collective.
#[inline(always)]
#[must_use]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn mma_sync_satfinite<TA, TB, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    a: &Fragment<MatrixA, M16N8K32, TA, RowMajor>,
    b: &Fragment<MatrixB, M16N8K32, TB, ColMajor>,
    c: &Fragment<Accumulator, M16N8K32, i32, RowMajor>,
) -> Fragment<Accumulator, M16N8K32, i32, RowMajor>
where
    MatrixA: Operand<M16N8K32, TA, RowMajor, Regs = [u32; 4]>,
    MatrixB: Operand<M16N8K32, TB, ColMajor, Regs = [u32; 2]>,
    M16N8K32: IntMma<TA, TB>,
{
    let _ = warp;
    crate::check::warp("mma_sync_satfinite", u32::MAX);
    // SAFETY: as in `mma_sync`.
    Fragment::from_regs(unsafe { M16N8K32::mma_satfinite(a.regs, b.regs, c.regs) })
}

/// The offset in `tile` of element (`row`, `col`), for a lane's row of an `ldmatrix`.
///
/// # Panics
/// If the 8 elements from (`row`, `col`) are not inside the tile, or their address is not a
/// multiple of 16 bytes.
#[inline(always)]
#[track_caller]
fn row_offset<T: Half, const R: usize, const C: usize>(tile: &SharedArray<[T; C], R>, row: usize, col: usize) -> u32 {
    let _ = tile;
    // A shared array's bytes are addressed in 32 bits (a larger one is no shared memory).
    const { assert!(R * C * 2 <= u32::MAX as usize, "ldmatrix: a tile of more than 4 GiB") };
    assert!(row < R && col <= C && 8 <= C - col, "ldmatrix row out of the tile");
    let (r, c) = (row as u32, col as u32);
    // SAFETY: r < R and c < C, so r · 2C + 2c < 2 R C <= u32::MAX (the constant assertion):
    // nothing wraps. (Without wrapping LLVM may widen the sum term by term, and fold the
    // constant part of a fragment's row and column into `ldmatrix`'s immediate offset.)
    let offset = unsafe { r.unchecked_mul(2 * C as u32).unchecked_add(c.unchecked_mul(2)) };
    // The array's own address is a multiple of 16 (`SharedArray`'s invariant), so the offset
    // alone decides: for a row length `C` a multiple of 8 and columns LLVM knows are multiples
    // of 8, the check folds away.
    assert!(offset.is_multiple_of(16), "ldmatrix row address not 16-byte aligned");
    offset
}

macro_rules! safe_ldmatrix {
    ($($(#[$m:meta])* $name:ident => $raw:ident, $n:literal;)*) => {$(
        $(#[$m])*
        ///
        /// Each lane names the row it supplies by its (`row`, `col`) in `tile`: the 8 elements
        /// from there (16 bytes) must lie in the tile and start at a 16-byte aligned address
        /// (a panic otherwise, naming the call), so every row read is memory of `tile`. Lane
        /// `8·m + r` supplies row `r` of matrix `m`; the other lanes' rows are checked and not
        /// read. A warp collective (the [module docs](self#convergence)).
        #[inline(always)]
        #[must_use]
        #[track_caller]
        pub fn $name<T: Half, const R: usize, const C: usize, P: TileParent>(
            warp: &ThreadBlockTile<32, P>,
            tile: &SharedArray<[T; C], R>,
            row: usize,
            col: usize,
        ) -> [u32; $n] {
            let _ = warp;
            let offset = row_offset(tile, row, col);
            crate::check::warp(stringify!($name), u32::MAX);
            // SAFETY: the whole warp is at this call (as in `mma_sync`); this lane's row is 16
            // bytes of `tile`, 16-byte aligned (checked above), and so is every other lane's.
            unsafe { raw::$raw(tile.addr() + offset) }
        }
    )*};
}

safe_ldmatrix! {
    /// `ldmatrix.sync.aligned.m8n8.x1.shared.b16`: one 8×8 matrix of 16-bit elements
    /// (the raw form: [`raw::ldmatrix_x1`]).
    ldmatrix_x1 => ldmatrix_x1, 1;
    /// `ldmatrix … .x2`: two 8×8 matrices.
    ldmatrix_x2 => ldmatrix_x2, 2;
    /// `ldmatrix … .x4`: four 8×8 matrices.
    ldmatrix_x4 => ldmatrix_x4, 4;
    /// `ldmatrix … .x1.trans`: one 8×8 matrix, transposed.
    ldmatrix_x1_trans => ldmatrix_x1_trans, 1;
    /// `ldmatrix … .x2.trans`: two 8×8 matrices, transposed.
    ldmatrix_x2_trans => ldmatrix_x2_trans, 2;
    /// `ldmatrix … .x4.trans`: four 8×8 matrices, transposed.
    ldmatrix_x4_trans => ldmatrix_x4_trans, 4;
}

macro_rules! safe_stmatrix {
    ($($(#[$m:meta])* $name:ident => $raw:ident, $n:literal;)*) => {$(
        $(#[$m])*
        ///
        /// Each lane names the row it supplies by its (`row`, `col`) in `tile`: the 8 elements
        /// from there (16 bytes) must lie in the tile and start at a 16-byte aligned address
        /// (a panic otherwise, naming the call), so every row written is memory of `tile`. Lane
        /// `8·m + r` supplies row `r` of matrix `m`; lane `l`'s word `m` of `regs` holds
        /// elements `2·(l % 4)`, `2·(l % 4) + 1` of row `l / 4` of matrix `m` (`.trans`: of
        /// column `l / 4`), the first in the low half. sm_90+ (a trap below: the sm_80
        /// module). A warp collective (the [module docs](self#convergence)).
        #[inline(always)]
        #[track_caller]
        pub fn $name<T: Half, const R: usize, const C: usize, P: TileParent>(
            warp: &ThreadBlockTile<32, P>,
            tile: &SharedArray<[T; C], R>,
            row: usize,
            col: usize,
            regs: [u32; $n],
        ) {
            let _ = warp;
            let offset = row_offset(tile, row, col);
            crate::check::warp(stringify!($name), u32::MAX);
            // SAFETY: the whole warp is at this call (as in `mma_sync`); this lane's row is 16
            // bytes of `tile`, 16-byte aligned (checked above), and so is every other lane's.
            // (A write racing with other threads' accesses of the tile is a race in CUDA's
            // sense, not undefined behaviour: see `crate::shared`.)
            unsafe { raw::$raw(tile.addr() + offset, regs) }
        }
    )*};
}

safe_stmatrix! {
    /// `stmatrix.sync.aligned.m8n8.x1.shared.b16` (sm_90): one 8×8 matrix of 16-bit elements
    /// (the raw form: [`raw::stmatrix_x1`]).
    stmatrix_x1 => stmatrix_x1, 1;
    /// `stmatrix … .x2`: two 8×8 matrices.
    stmatrix_x2 => stmatrix_x2, 2;
    /// `stmatrix … .x4`: four 8×8 matrices.
    stmatrix_x4 => stmatrix_x4, 4;
    /// `stmatrix … .x1.trans`: one 8×8 matrix, transposed.
    stmatrix_x1_trans => stmatrix_x1_trans, 1;
    /// `stmatrix … .x2.trans`: two 8×8 matrices, transposed.
    stmatrix_x2_trans => stmatrix_x2_trans, 2;
    /// `stmatrix … .x4.trans`: four 8×8 matrices, transposed.
    stmatrix_x4_trans => stmatrix_x4_trans, 4;
}

/// Stores an m16n8 accumulator as 16-bit elements `T` to the 16×8 block at (`row0`, `col0`) of
/// a row-major `tile` with one `stmatrix.x2` (sm_90+; a trap below): each `f32` (or F16)
/// element rounded to `T` ([`Half::from_f32`]), rows `g` and `g + 8` of the fragment being
/// matrices 0 and 1 of the instruction — CUTLASS's epilogue store. `C` and `col0` multiples of
/// 8 (the rows' 16-byte alignment; a panic otherwise, as for the block outside the tile). A
/// warp collective.
#[inline(always)]
#[track_caller]
pub fn store_c_stmatrix<T: Half, A: AccElement + Into<f32>, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    frag: &FragC<A>,
    tile: &SharedArray<[T; C], R>,
    row0: usize,
    col0: usize,
) {
    let pack = |i: usize| {
        let (lo, hi) = (T::from_f32(frag.get(i).into()), T::from_f32(frag.get(i + 1).into()));
        u32::from(lo.to_bits()) | u32::from(hi.to_bits()) << 16
    };
    let l = raw::laneid() as usize;
    // Lanes 0–7 name rows 0–7 (matrix 0: the fragment's rows g), lanes 8–15 rows 8–15 (matrix
    // 1: rows g + 8); the other lanes' rows are checked, not used.
    stmatrix_x2(warp, tile, row0 + l % 16, col0, [pack(0), pack(2)]);
}

/// The A fragment of the 16×16 block at (`row0`, `col0`) of a row-major `tile` (one
/// `ldmatrix.x4`). `C` must be a multiple of 8 and `col0` a multiple of 8 (the rows'
/// alignment; a panic otherwise). A warp collective.
#[inline(always)]
#[must_use]
#[track_caller]
pub fn load_a<T: Half, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    tile: &SharedArray<[T; C], R>,
    row0: usize,
    col0: usize,
) -> FragA<T> {
    let l = raw::laneid() as usize;
    Fragment::from_regs(ldmatrix_x4(warp, tile, row0 + l % 16, col0 + 8 * (l / 16)))
}

/// The B fragment of the 16×8 (K×N) block at (`k0`, `n0`) of a row-major K×N `tile` (one
/// `ldmatrix.x2.trans`). A warp collective.
#[inline(always)]
#[must_use]
#[track_caller]
pub fn load_b<T: Half, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    tile: &SharedArray<[T; C], R>,
    k0: usize,
    n0: usize,
) -> FragB<T> {
    let l = raw::laneid() as usize;
    Fragment::from_regs(ldmatrix_x2_trans(warp, tile, k0 + l % 16, n0))
}

/// The B fragment of the K×N block whose transpose is the 8×16 (N×K) block at (`n0`, `k0`) of
/// a row-major N×K `tile` (B stored "column-major": one `ldmatrix.x2`). A warp collective.
#[inline(always)]
#[must_use]
#[track_caller]
pub fn load_b_nk<T: Half, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    tile: &SharedArray<[T; C], R>,
    n0: usize,
    k0: usize,
) -> FragB<T> {
    let l = raw::laneid() as usize;
    Fragment::from_regs(ldmatrix_x2(warp, tile, n0 + l % 8, k0 + 8 * ((l / 8) % 2)))
}

/// The B fragments of two adjacent 16×8 (K×N) blocks, at (`k0`, `n0`) and (`k0`, `n0 + 8`),
/// of a row-major K×N `tile`: one `ldmatrix.x4.trans` where [`load_b`] twice takes two
/// `x2.trans`. A warp collective.
#[inline(always)]
#[must_use]
#[track_caller]
pub fn load_b_pair<T: Half, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    tile: &SharedArray<[T; C], R>,
    k0: usize,
    n0: usize,
) -> [FragB<T>; 2] {
    let l = raw::laneid() as usize;
    // Matrices 0, 1: rows k0..k0 + 16 at n0; 2, 3: the same rows at n0 + 8.
    let r = ldmatrix_x4_trans(warp, tile, k0 + l % 16, n0 + 8 * (l / 16));
    [Fragment::from_regs([r[0], r[1]]), Fragment::from_regs([r[2], r[3]])]
}

/// The B fragments of two adjacent K×N blocks (columns `n0..n0 + 8` and `n0 + 8..n0 + 16`)
/// from a row-major N×K `tile` (B stored "column-major", the GEMM's "TN" layout), the 16×16
/// (N×K) block at (`n0`, `k0`): one `ldmatrix.x4` where [`load_b_nk`] twice takes two `x2`. A
/// warp collective.
#[inline(always)]
#[must_use]
#[track_caller]
pub fn load_b_nk_pair<T: Half, const R: usize, const C: usize, P: TileParent>(
    warp: &ThreadBlockTile<32, P>,
    tile: &SharedArray<[T; C], R>,
    n0: usize,
    k0: usize,
) -> [FragB<T>; 2] {
    let l = raw::laneid() as usize;
    // Lane 8m + r supplies row r of matrix m: matrices 0, 1 are rows n0..n0 + 8 at k0 and
    // k0 + 8 (the first fragment's two registers), 2, 3 the rows n0 + 8..n0 + 16.
    let r = ldmatrix_x4(warp, tile, n0 + l % 8 + 8 * (l / 16), k0 + 8 * ((l / 8) % 2));
    [Fragment::from_regs([r[0], r[1]]), Fragment::from_regs([r[2], r[3]])]
}

/// Which fragments a [`WarpTiles`] loads: its lanes' row pattern and `ldmatrix` form (sealed).
pub trait TilesKind: tiles_sealed::Sealed {
    /// The (row, column) lane `lane` supplies for the 16×16 block at (0, 0).
    #[doc(hidden)]
    fn lane_row_col(lane: usize) -> (usize, usize);
}

mod tiles_sealed {
    pub trait Sealed {}
    impl Sealed for super::TilesA {}
    impl Sealed for super::TilesBNk {}
    impl Sealed for super::TilesBKn {}
}

/// [`WarpTiles`] of A (row-major M×K): [`WarpTiles::a`].
#[derive(Clone, Copy, Debug)]
pub enum TilesA {}
/// [`WarpTiles`] of B stored N×K (row-major Bᵀ, the GEMM's "TN"): [`WarpTiles::b_pair`].
#[derive(Clone, Copy, Debug)]
pub enum TilesBNk {}
/// [`WarpTiles`] of B stored K×N (row-major): [`WarpTiles::b_pair_trans`].
#[derive(Clone, Copy, Debug)]
pub enum TilesBKn {}

impl TilesKind for TilesA {
    #[inline(always)]
    fn lane_row_col(l: usize) -> (usize, usize) {
        // As `load_a`: lanes 0–15 rows 0–15 at column 0, lanes 16–31 at column 8.
        (l % 16, 8 * (l / 16))
    }
}
impl TilesKind for TilesBNk {
    #[inline(always)]
    fn lane_row_col(l: usize) -> (usize, usize) {
        // As `load_b_nk_pair`.
        (l % 8 + 8 * (l / 16), 8 * ((l / 8) % 2))
    }
}
impl TilesKind for TilesBKn {
    #[inline(always)]
    fn lane_row_col(l: usize) -> (usize, usize) {
        // As `load_b_pair`.
        (l % 16, 8 * (l / 16))
    }
}

/// A warp's `ROWS × COLS` block of a shared tile, checked once, from which its lanes load
/// fragments by 16×16 block — a GEMM warp's slice of a pipeline stage, loaded at every step of K.
///
/// Each lane keeps the 32-bit shared address of the row it supplies to `ldmatrix` for block
/// (0, 0); block (`i`, `j`)'s is that plus a constant when `i` and `j` are (an unrolled loop),
/// which ptxas folds into the instruction (`LDSM [R + 0x500]`): no check and no address
/// arithmetic per load, as CUDA C++ written with a lane's `smem_u32` address. Made by [`WarpTiles::new`]; loads:
/// [`a`](Self::a) ([`TilesA`]), [`b_pair`](Self::b_pair) ([`TilesBNk`]),
/// [`b_pair_trans`](Self::b_pair_trans) ([`TilesBKn`]).
///
/// ```
/// # use cohort::prelude::*;
/// # use cohort::mma::{self, bf16, FragC, TilesA, TilesBNk, WarpTiles};
/// # fn f(warp: cg::ThreadBlockTile<32>, tiles: SharedArray<[bf16; 40], 256>, acc: &mut [[FragC<f32>; 4]; 4]) {
/// // This warp's 64 rows of A (rows 0..128 of the tile) and 32 of Bᵀ (rows 128..256), K = 32.
/// let ta = WarpTiles::<bf16, 64, 32, TilesA>::new(&tiles, 0, 0);
/// let tb = WarpTiles::<bf16, 32, 32, TilesBNk>::new(&tiles, 128, 0);
/// for kk in 0..2 {
///     let a: [_; 4] = core::array::from_fn(|i| ta.a(&warp, i, kk));
///     let b: [_; 2] = core::array::from_fn(|j| tb.b_pair(&warp, j, kk));
///     for i in 0..4 {
///         for j in 0..4 {
///             acc[i][j] = mma::mma_sync(&warp, &a[i], &b[j / 2][j % 2], &acc[i][j]);
///         }
///     }
/// }
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct WarpTiles<T, const ROWS: usize, const COLS: usize, K> {
    /// This lane's row of block (0, 0): its shared address.
    row: u32,
    /// Bytes from one row of the tile to the next (`2 C`: a constant once inlined).
    pitch: u32,
    _p: PhantomData<(T, K)>,
}

impl<T: Half, const ROWS: usize, const COLS: usize, K: TilesKind> WarpTiles<T, ROWS, COLS, K> {
    /// Rows `row0 .. row0 + ROWS`, columns `col0 .. col0 + COLS` of `tile` (per lane: not a
    /// collective).
    ///
    /// # Panics
    /// If the block is not inside the tile, or `col0` is not a multiple of 8 (rows of `ldmatrix`
    /// start 16-byte aligned). Compile errors: `ROWS` or `COLS` not a multiple of 16, `C` not a
    /// multiple of 8, a tile of more than 4 GiB.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn new<const R: usize, const C: usize>(tile: &SharedArray<[T; C], R>, row0: usize, col0: usize) -> Self {
        const {
            assert!(ROWS.is_multiple_of(16) && COLS.is_multiple_of(16), "WarpTiles: whole 16×16 blocks");
            assert!(C.is_multiple_of(8), "WarpTiles: rows of the tile must be multiples of 16 bytes");
            assert!(R * C * 2 <= u32::MAX as usize, "WarpTiles: a tile of more than 4 GiB");
        };
        assert!(
            row0 <= R && ROWS <= R - row0 && col0 <= C && COLS <= C - col0 && col0.is_multiple_of(8),
            "WarpTiles: the block is not inside the tile, or not 16-byte aligned"
        );
        let (r, c) = K::lane_row_col(raw::laneid() as usize);
        // Inside the block: r < 16 <= ROWS, c + 8 <= 16 <= COLS; the offset is below the
        // tile's size, below 2^32 (the constant assertion), and the tile's address plus its
        // size is a shared address (a `u32`: `SharedArray`'s invariant), so nothing wraps.
        let offset = ((row0 + r) * C + col0 + c) * 2;
        Self { row: tile.addr() + offset as u32, pitch: (2 * C) as u32, _p: PhantomData }
    }

    /// This lane's row for block (`i`, `j`), whose 16 bytes lie in the block `new` checked.
    ///
    /// # Panics
    /// If `i >= ROWS / 16` or `j >= COLS / 16`.
    #[inline(always)]
    #[track_caller]
    fn row_of(&self, i: usize, j: usize) -> u32 {
        assert!(i < ROWS / 16 && j < COLS / 16, "WarpTiles: block index out of range");
        // In the block (checked above and by `new`): below the tile's end, a `u32`; the
        // wrapping forms only spare LLVM the overflow reasoning of the release profile.
        self.row.wrapping_add((16 * i as u32).wrapping_mul(self.pitch)).wrapping_add(32 * j as u32)
    }
}

impl<T: Half, const ROWS: usize, const COLS: usize> WarpTiles<T, ROWS, COLS, TilesA> {
    /// The A fragment of block (`i`, `k`): rows `16 i ..`, columns `16 k ..` of the block, as
    /// [`load_a`] (`ldmatrix.x4`). A warp collective (the [module docs](self#convergence)).
    ///
    /// # Panics
    /// If the block index is out of range (for constants, as in an unrolled loop, the check
    /// folds away).
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn a<P: TileParent>(&self, warp: &ThreadBlockTile<32, P>, i: usize, k: usize) -> FragA<T> {
        let _ = warp;
        let row = self.row_of(i, k);
        crate::check::warp("WarpTiles::a", u32::MAX);
        // SAFETY: the whole warp is at this call (as in `mma_sync`); each lane's row is 16
        // bytes inside the block its `new` checked, 16-byte aligned (`row_of`).
        Fragment::from_regs(unsafe { raw::ldmatrix_x4(row) })
    }
}

impl<T: Half, const ROWS: usize, const COLS: usize> WarpTiles<T, ROWS, COLS, TilesBNk> {
    /// The B fragments of the K×N blocks whose transpose is block (`j`, `k`) of the N×K block:
    /// columns `16 j .. 16 j + 8` and `16 j + 8 .. 16 j + 16` of B, rows `16 k ..`, as
    /// [`load_b_nk_pair`] (`ldmatrix.x4`). A warp collective.
    ///
    /// # Panics
    /// If the block index is out of range.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn b_pair<P: TileParent>(&self, warp: &ThreadBlockTile<32, P>, j: usize, k: usize) -> [FragB<T>; 2] {
        let _ = warp;
        let row = self.row_of(j, k);
        crate::check::warp("WarpTiles::b_pair", u32::MAX);
        // SAFETY: as in `a`.
        let r = unsafe { raw::ldmatrix_x4(row) };
        [Fragment::from_regs([r[0], r[1]]), Fragment::from_regs([r[2], r[3]])]
    }
}

impl<T: Half, const ROWS: usize, const COLS: usize> WarpTiles<T, ROWS, COLS, TilesBKn> {
    /// The B fragments of block (`k`, `j`) of the K×N block: rows `16 k ..`, columns
    /// `16 j .. 16 j + 8` and `16 j + 8 .. 16 j + 16`, as [`load_b_pair`] (`ldmatrix.x4.trans`).
    /// A warp collective.
    ///
    /// # Panics
    /// If the block index is out of range.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn b_pair_trans<P: TileParent>(&self, warp: &ThreadBlockTile<32, P>, k: usize, j: usize) -> [FragB<T>; 2] {
        let _ = warp;
        let row = self.row_of(k, j);
        crate::check::warp("WarpTiles::b_pair_trans", u32::MAX);
        // SAFETY: as in `a`.
        let r = unsafe { raw::ldmatrix_x4_trans(row) };
        [Fragment::from_regs([r[0], r[1]]), Fragment::from_regs([r[2], r[3]])]
    }
}

/// Stores this lane's elements of an accumulator to the 16×8 block at (`row0`, `col0`) of a
/// row-major `tile` (per-lane stores, not a collective).
///
/// # Panics
/// If the block is not inside the tile.
#[inline(always)]
#[track_caller]
pub fn store_c<T: AccElement, const R: usize, const C: usize>(
    frag: &FragC<T>,
    tile: &SharedArray<[T; C], R>,
    row0: usize,
    col0: usize,
) {
    assert!(row0 <= R && 16 <= R - row0 && col0 <= C && 8 <= C - col0, "accumulator block out of the tile");
    frag.for_each(|r, c, v| tile.store_at(row0 + r, col0 + c, v));
}

//! Floating point as nvcc compiles it: fused multiply-add, contraction on request, and CUDA's
//! fast approximate intrinsics.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `fmaf(a, b, c)`, `fma(a, b, c)` | [`fma`]`(a, b, c)` (any nightly, no feature gate) |
//! | `a * b + c` compiled with nvcc's default `-fmad=true` | `a * b + c` in a `#[kernel(contract)]` or `#[cohort::contract]` function |
//! | `__sinf`, `__cosf`, `__expf`, `__logf`, `__powf`, `__fdividef`, `rsqrtf` | [`fast::sin`], [`fast::cos`], [`fast::exp`], [`fast::ln`], [`fast::powf`], [`fast::div`], [`fast::rsqrt`] |
//!
//! **Contraction.** Rust rounds `a * b` and then `a * b + c`: two roundings, two instructions
//! (`mul.rn`, `add.rn`), and ptxas may not fuse them. nvcc fuses them by default (one rounding,
//! one `FFMA`: faster, and usually more accurate). To ask for nvcc's behaviour, mark the kernel
//! `#[kernel(contract)]` (or a device function `#[cohort::contract]`): the macro rewrites every
//! `x * y + z`, `z + x * y`, `x * y - z`, `z - x * y`, `acc += x * y` and `acc -= x * y` in the
//! body into a fused multiply-add when the operands are `f32` or `f64`, and leaves every other
//! type's arithmetic as written. Evaluation order is kept; only the rounding changes, as under
//! nvcc. Without the attribute, Rust's rounding is kept exactly.
//!
//! ```
//! #[cohort::kernel(contract)]
//! pub fn axpy(a: f32, x: &[f32], y: &[f32], mut out: cohort::slice::DisjointSlice<f32>) {
//!     let i = cohort::thread::index_1d();
//!     if *i < x.len() && *i < y.len() {
//!         out.set(&i, a * x[*i] + y[*i]); // one `fma.rn.f32`
//!     }
//! }
//! ```

use crate::raw;

/// `a * b + c` with one rounding (`fma.rn`), CUDA's `fmaf` / `fma`.
#[inline(always)]
#[must_use]
pub fn fma<T: Fma>(a: T, b: T, c: T) -> T {
    T::fma(a, b, c)
}

/// Types with a fused multiply-add: `f32`, `f64`.
pub trait Fma: Copy {
    /// `a * b + c`, rounded once.
    #[must_use]
    fn fma(a: Self, b: Self, c: Self) -> Self;
}

impl Fma for f32 {
    #[inline(always)]
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        raw::fma_rn_f32(a, b, c)
    }
}

impl Fma for f64 {
    #[inline(always)]
    fn fma(a: f64, b: f64, c: f64) -> f64 {
        raw::fma_rn_f64(a, b, c)
    }
}

// --- What `contract` rewrites to ------------------------------------------------------------
//
// `x * y + z` becomes
//     { let (x, y, z) = (..); match (&__MulAdd(x, y, z)).__fused() { Some(v) => v, None => x * y + z } }
// (and `x * y - z`, `z - x * y`, `acc += x * y` likewise with `__MulSub`, `__SubMul`). Method
// lookup tries the receiver type `&__MulAdd<..>` first, where only `__Fused` (implemented for
// all-`f32` and all-`f64` operands) has a method taking `&self`: `Some(fma)`. For every other type
// it autorefs once more and finds `__Unfused`, which answers `None`, and the expression is computed
// as written (which also keeps type inference of integer literals as it was).

#[doc(hidden)]
pub struct __MulAdd<A, B, C>(pub A, pub B, pub C);
#[doc(hidden)]
pub struct __MulSub<A, B, C>(pub A, pub B, pub C);
/// `z - x * y`, fields in the order evaluated: `z`, `x`, `y`.
#[doc(hidden)]
pub struct __SubMul<C, A, B>(pub C, pub A, pub B);

#[doc(hidden)]
pub trait __Fused {
    type Output;
    fn __fused(&self) -> Option<Self::Output>;
}

#[doc(hidden)]
pub trait __Unfused {
    #[inline(always)]
    fn __fused<R>(&self) -> Option<R> {
        None
    }
}

macro_rules! fused {
    ($($t:ty),*) => {$(
        impl __Fused for __MulAdd<$t, $t, $t> {
            type Output = $t;
            #[inline(always)]
            fn __fused(&self) -> Option<$t> {
                Some(<$t as Fma>::fma(self.0, self.1, self.2))
            }
        }
        impl __Fused for __MulSub<$t, $t, $t> {
            type Output = $t;
            #[inline(always)]
            fn __fused(&self) -> Option<$t> {
                Some(<$t as Fma>::fma(self.0, self.1, -self.2))
            }
        }
        impl __Fused for __SubMul<$t, $t, $t> {
            type Output = $t;
            #[inline(always)]
            fn __fused(&self) -> Option<$t> {
                Some(<$t as Fma>::fma(-self.1, self.2, self.0))
            }
        }
    )*};
}
fused!(f32, f64);

impl<A, B, C> __Unfused for &__MulAdd<A, B, C> {}
impl<A, B, C> __Unfused for &__MulSub<A, B, C> {}
impl<A, B, C> __Unfused for &__SubMul<A, B, C> {}

/// CUDA's fast approximate intrinsics (the functions `-use_fast_math` substitutes), each one
/// PTX `.approx` instruction or two. Error bounds are CUDA's (Programming Guide, "Intrinsic
/// Functions"), checked on the GPU by Cohort's tests; subnormal inputs and outputs are kept
/// (no `.ftz`), as nvcc does without `-ftz=true`.
pub mod fast {
    use crate::raw;

    /// `__sinf(x)`: for `x` in [-π, π], absolute error at most 2^-21.41; larger outside.
    #[inline(always)]
    #[must_use]
    pub fn sin(x: f32) -> f32 {
        raw::sin_approx_f32(x)
    }

    /// `__cosf(x)`: for `x` in [-π, π], absolute error at most 2^-21.19; larger outside.
    #[inline(always)]
    #[must_use]
    pub fn cos(x: f32) -> f32 {
        raw::cos_approx_f32(x)
    }

    /// `__expf(x)`: e^x as `2^(x · log2 e)`; at most `2 + floor(|1.173 · x|)` ulp.
    #[inline(always)]
    #[must_use]
    pub fn exp(x: f32) -> f32 {
        raw::ex2_approx_f32(x * core::f32::consts::LOG2_E)
    }

    /// `exp2f` approximated (`ex2.approx.f32`): at most 2 ulp... of the result, full range.
    #[inline(always)]
    #[must_use]
    pub fn exp2(x: f32) -> f32 {
        raw::ex2_approx_f32(x)
    }

    /// `__logf(x)`: ln x as `log2(x) · ln 2`; for `x` in [0.5, 2], absolute error at most
    /// 2^-21.41, otherwise at most 3 ulp.
    #[inline(always)]
    #[must_use]
    pub fn ln(x: f32) -> f32 {
        raw::lg2_approx_f32(x) * core::f32::consts::LN_2
    }

    /// `__log2f(x)`: for `x` in [0.5, 2], absolute error at most 2^-22, otherwise 2 ulp.
    #[inline(always)]
    #[must_use]
    pub fn log2(x: f32) -> f32 {
        raw::lg2_approx_f32(x)
    }

    /// `__powf(x, y)`: `2^(y · log2 x)`, with the errors of [`exp2`] and [`log2`] compounded.
    #[inline(always)]
    #[must_use]
    pub fn powf(x: f32, y: f32) -> f32 {
        raw::ex2_approx_f32(y * raw::lg2_approx_f32(x))
    }

    /// `__fdividef(a, b)`: for 2^-126 ≤ |b| ≤ 2^126, at most 2 ulp; for |b| in (2^126, 2^128)
    /// it returns 0 where `a / b` would not (CUDA's documented behaviour).
    #[inline(always)]
    #[must_use]
    pub fn div(a: f32, b: f32) -> f32 {
        raw::div_approx_f32(a, b)
    }

    /// `rsqrtf(x)`: 1/√x (`rsqrt.approx.f32`), at most 2 ulp.
    #[inline(always)]
    #[must_use]
    pub fn rsqrt(x: f32) -> f32 {
        raw::rsqrt_approx_f32(x)
    }

    /// `__fsqrt_rn`'s fast sibling: √x (`sqrt.approx.f32`), relative error at most 2^-23.
    #[inline(always)]
    #[must_use]
    pub fn sqrt(x: f32) -> f32 {
        raw::sqrt_approx_f32(x)
    }
}

//! Floating point as nvcc compiles it: fused multiply-add, contraction on request, and CUDA's
//! fast approximate intrinsics.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `fmaf(a, b, c)`, `fma(a, b, c)` | [`fma`]`(a, b, c)` (any nightly, no feature gate) |
//! | `sqrtf(x)`, `sqrt(x)` (correctly rounded, nvcc's default) | [`sqrt`]`(x)` |
//! | `a * b + c` compiled with nvcc's default `-fmad=true` | `a * b + c` in a `#[kernel(contract)]` or `#[cohort::contract]` function |
//! | `sinf`, `cosf`, `sincosf` (nvcc's default, accurate versions) | [`sin`], [`cos`], [`sincos`]: at most 1.56 ulp, measured over every f32 (CUDA documents 2) |
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

/// √x correctly rounded (`sqrt.rn`): CUDA's `sqrtf` / `sqrt` as nvcc compiles them by default
/// (`-prec-sqrt=true`). [`fast::sqrt`] is the approximate one.
#[inline(always)]
#[must_use]
pub fn sqrt<T: Sqrt>(x: T) -> T {
    T::sqrt(x)
}

/// Types with a correctly rounded square root: `f32`, `f64`.
pub trait Sqrt: Copy {
    /// √x, rounded to nearest.
    fn sqrt(x: Self) -> Self;
}

impl Sqrt for f32 {
    #[inline(always)]
    fn sqrt(x: f32) -> f32 {
        raw::sqrt_rn_f32(x)
    }
}

impl Sqrt for f64 {
    #[inline(always)]
    fn sqrt(x: f64) -> f64 {
        raw::sqrt_rn_f64(x)
    }
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
/// Functions"; PTX ISA), checked on the GPU by Cohort's tests; subnormal inputs and outputs are
/// kept (no `.ftz`), as nvcc does without `-ftz=true`.
///
/// # On the CPU device
///
/// The CPU device computes these as a GPU does, not as the exact functions, so that a kernel
/// debugged there sees the GPU's numbers. ptxas turns each `.approx` instruction into a few
/// SASS instructions around one `MUFU` (the multi-function unit): `sin.approx` is
/// `FMUL.RZ x, 1/2π` (rounded toward zero) and then `MUFU.SIN` of that many turns; `lg2`,
/// `rsqrt`, `sqrt` and `div` scale subnormal operands by 2^24 and the result back, because
/// `MUFU` flushes subnormals; `ex2` below -126 halves its argument and squares the result. The
/// CPU device repeats every one of those steps bit for bit (see `ptxas -arch=sm_90` and
/// `nvdisasm`: the same for `sm_80`) and computes only the `MUFU` itself as the exact function
/// of its operand, rounded to `f32` (and flushed). Hence `fast::sin(1e30)` is 0 and
/// `fast::cos(1e30)` is 1 on both (1e30 · 1/2π is a whole number of turns in `f32`), where
/// sin(1e30) ≈ -0.79; and `fast::sin(100000.0)` is sin 2π·15915.493164… ≈ 0.0429 on both,
/// where sin(100000) ≈ 0.0357.
///
/// What remains is the `MUFU` tables' own error. From the PTX ISA's bounds on the GPU's error
/// and the CPU device's rounding, the two differ by at most:
///
/// | function | CPU device vs GPU |
/// |---|---|
/// | [`sin`](fast::sin), [`cos`](fast::cos) | 2^-19.5 absolute, for every finite input (the ISA's 2^-20.5 on [-2π, 2π] plus the reduction's own error there, which both sides share; `MUFU` takes the fraction of the turns, so the bound holds at every argument) |
/// | [`exp2`](fast::exp2), [`exp`](fast::exp) | 3 ulp; 4 ulp for subnormal results (the ISA's 2 ulp from the correctly rounded result, full range; `exp` rounds `x · log2 e` identically on both) |
/// | [`log2`](fast::log2) | 2^-21.8 absolute for x in (0.5, 2), 2^-21.6 relative elsewhere |
/// | [`ln`](fast::ln) | 2^-21.9 absolute for x in (0.5, 2), 2^-21.1 relative elsewhere |
/// | [`powf`](fast::powf)`(x, y)` | relative (2^δ − 1) + 3 · 2^-23, δ = \|y\| · E + ulp(y · log2 x), E the [`log2`](fast::log2) bound at x (absolute in (0.5, 2), relative · \|log2 x\| elsewhere) |
/// | [`div`](fast::div) | 4 ulp |
/// | [`rsqrt`](fast::rsqrt) | 2^-22.3 relative |
/// | [`sqrt`](fast::sqrt) | 2^-22.4 relative |
///
/// Zeros, infinities and NaN come out alike (as the ISA's tables give them). The GPU test
/// `shapes_fast_math_cpu_device_matches_gpu` compares the two on a million inputs spanning all
/// of `f32` (subnormals, huge arguments, ±∞, NaN) against these bounds and prints the largest
/// difference it saw for each function.
pub mod fast {
    use crate::raw;

    /// `__sinf(x)`: for `x` in [-π, π], absolute error at most 2^-21.41; larger outside, where
    /// the reduction `x · 1/2π` (rounded toward zero in `f32`) loses the angle: 0 from about
    /// |x| > 5·10^7 on (see the module docs for the CPU device).
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

// --- sinf, cosf, sincosf ---------------------------------------------------------------------
//
// The algorithm nvcc's `sinf`/`cosf`/`sincosf` use (CUDA Math API: 2 ulp over the full range),
// written out here, with our own constants:
//
// 1. Reduction to r = x - j·π/2, |r| ≤ 0.79, and the quadrant j mod 4.
//    - Fast path, |x| ≤ 105615: j = rint(x · 2/π) by adding 1.5·2^23 in an fma (j mod 2^22 then
//      sits in the low bits of the sum, no conversion instruction), and a three-constant
//      Cody-Waite subtraction with fma. π/2 ≈ P1 + P2 + P3, P1 with 24 bits: j·P1 is subtracted
//      exactly (the result is a multiple of 2^-23 below 2); the second step is exact whenever
//      r is small (|t| < 2^-23), so cancellation near multiples of π/2 costs nothing.
//      Two fmas round at most: r is within about 1 ulp.
//    - Slow path, |x| > 105615, taken only by such lanes and the only code touching memory:
//      Payne-Hanek. x = m·2^s with a 24-bit integer m; the bits of 2/π weighing less than
//      2^(2-s) give x·2/π mod 4, so a 96-bit window of them starting there (four table words,
//      funnel-shifted) times m (three 32×32→64 multiplies) gives the two quadrant bits and a
//      64-bit fraction, rounded to the nearest quadrant and scaled by π/2 in f64 (as CUDA does).
// 2. Minimax polynomials on |r| ≤ 0.79 (our own Remez fits, relative error 2^-27.9 for sin and
//    2^-32.9 for cos), evaluated with fma: sin r = r + r·s·P(s), cos r = 1 - s/2 + s²·Q(s),
//    s = r². The quadrant picks the polynomial and the sign.

/// `fma.rn.f32` on the GPU; on the host the same correctly rounded result, computed in f64 so
/// that the host tests check, bit for bit, what the device computes.
#[inline(always)]
fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        raw::fma_rn_f32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        fmaf_host(a, b, c)
    }
}

/// Correctly rounded `a * b + c` without hardware fma or `std`: the product is exact in f64,
/// the sum is rounded to odd (rounded to nearest, then its last bit forced to 1 when inexact),
/// and rounding an f64 rounded to odd to f32 (24 ≤ 53 - 2 bits) rounds as the exact sum would.
#[cfg(not(target_arch = "nvptx64"))]
#[inline]
fn fmaf_host(a: f32, b: f32, c: f32) -> f32 {
    let ab = f64::from(a) * f64::from(b);
    let c = f64::from(c);
    let sum = ab + c;
    if !sum.is_finite() {
        return sum as f32;
    }
    // TwoSum: the exact error of `sum` (f32 operands keep it far from f64 underflow).
    let c_part = sum - ab;
    let err = (ab - (sum - c_part)) + (c - c_part);
    let bits = sum.to_bits();
    let odd = if err != 0.0 && bits & 1 == 0 {
        // Step one f64 ulp towards the exact value (sum is not zero here).
        if (err > 0.0) == (sum > 0.0) { bits + 1 } else { bits - 1 }
    } else {
        bits
    };
    f64::from_bits(odd) as f32
}

/// Above this, [`reduce`] takes the Payne-Hanek path (CUDA's threshold).
const FAST_REDUCTION_MAX: f32 = 105_615.0;
/// 1.5·2^23: adding it rounds to an integer and leaves that integer in the low mantissa bits.
const ROUND_SHIFTER: f32 = 12_582_912.0;
/// 2/π rounded to f32.
const FRAC_2_PI: f32 = 0.636_619_75;
/// π/2 = P1 + P2 + P3 - 9.5e-23, P1 and P2 rounded down so that all three are positive: for
/// x = -0 (j = +0) every `fma(j, -P, r)` then adds -0 and r stays -0.
const PIO2_P1: f32 = f32::from_bits(0x3fc9_0fda); // 0x1.921fb4p+0 = 1.5707963
const PIO2_P2: f32 = 7.549_789_4e-8; // 0x1.4442d0p-24
const PIO2_P3: f32 = 5.390_303e-15; // 0x1.84698ap-48
/// π/2 · 2^-64: turns the 64-bit fixed-point fraction of a quadrant into radians.
const PIO2_2POW_M64: f64 = 8.515_303_950_216_386e-20; // 0x1.921fb54442d18p-64

/// sin r = r + r·s·(S1 + s·S2 + s²·S3), s = r², |r| ≤ 0.79: relative error 2^-27.9.
const SIN_S1: f32 = -1.666_665_4e-1; // -0x1.555544p-3
const SIN_S2: f32 = 8.332_133e-3; // 0x1.110700p-7
const SIN_S3: f32 = -1.951_145_8e-4; // -0x1.992f58p-13
/// cos r = 1 - s/2 + s²·(C1 + s·C2 + s²·C3), s = r², |r| ≤ 0.79: relative error 2^-32.9.
const COS_C1: f32 = 4.166_664_6e-2; // 0x1.55554ap-5
const COS_C2: f32 = -1.388_727_8e-3; // -0x1.6c0bf2p-10
const COS_C3: f32 = 2.442_878_6e-5; // 0x1.99d8d6p-16

/// Bits of 2/π, most significant first, after one word of zeros (the integer part): bit `k`
/// (bit 31 of word 0 is `k = 0`) weighs 2^(31-k). 224 bits of 2/π cover every finite f32.
static TWO_OVER_PI_BITS: [u32; 8] =
    [0x0000_0000, 0xA2F9_836E, 0x4E44_1529, 0xFC27_57D1, 0xF534_DDC0, 0xDB62_9599, 0x3C43_9041, 0xFE51_63AB];

/// `x = j·π/2 + r` with |r| ≤ 0.79; returns `(r, j mod 4 in the low bits)`. NaN and ±∞ give a
/// NaN `r`.
#[inline(always)]
fn reduce(x: f32) -> (f32, u32) {
    let shifted = fmaf(x, FRAC_2_PI, ROUND_SHIFTER);
    let j = shifted - ROUND_SHIFTER;
    let r = fmaf(j, -PIO2_P1, x);
    let r = fmaf(j, -PIO2_P2, r);
    let r = fmaf(j, -PIO2_P3, r);
    if x.abs() > FAST_REDUCTION_MAX { reduce_huge(x) } else { (r, shifted.to_bits()) }
}

/// Payne-Hanek reduction for |x| > 105615 (and ±∞, which give NaN).
#[inline]
fn reduce_huge(x: f32) -> (f32, u32) {
    let bits = x.to_bits();
    let biased_exp = (bits >> 23) & 0xff; // 143..=255 here
    let m = u64::from((bits & 0x007f_ffff) | 0x0080_0000);
    // x = m·2^(biased_exp - 150). Bits of 2/π with k ≤ biased_exp - 121 add multiples of 4 to
    // x·2/π: the window starts at k = biased_exp - 120 (23..=135), its last word index ≤ 7.
    let start = biased_exp - 120;
    // `min` (a no-op) lets the compiler drop the bounds checks and use constant offsets.
    let word = ((start >> 5) as usize).min(4);
    let shift = start & 31;
    let table = |i: usize| TWO_OVER_PI_BITS[word + i];
    // A 32-bit funnel shift (`shf.l`); 64-bit shifts would also hide from LLVM that the
    // products below are 32×32→64 (`mul.wide.u32`).
    let window = |i: usize| table(i) << shift | (table(i + 1) >> 1) >> (31 - shift);
    let (w2, w1, w0) = (window(0), window(1), window(2));
    // m · (w2:w1:w0) mod 2^96 = x·2/π mod 4 in units of 2^-94.
    let p0 = m * u64::from(w0);
    let p1 = m * u64::from(w1) + (p0 >> 32);
    let p2 = (m as u32).wrapping_mul(w2).wrapping_add((p1 >> 32) as u32);
    let top = u64::from(p2) << 32 | (p1 & 0xffff_ffff);
    let mut quadrant = (top >> 62) as u32;
    let fraction = (top << 2 | ((p0 as u32) >> 30) as u64) as i64;
    // A fraction ≥ 1/2 reads as negative: round to the next quadrant.
    quadrant += (fraction < 0) as u32;
    let r = (fraction as f64 * PIO2_2POW_M64) as f32;
    let (r, quadrant) = if x < 0.0 { (-r, quadrant.wrapping_neg()) } else { (r, quadrant) };
    if biased_exp == 0xff { (f32::NAN, 0) } else { (r, quadrant) }
}

/// sin r, s = r²; keeps the sign of a zero `r`.
#[inline(always)]
fn sin_poly(r: f32, s: f32) -> f32 {
    let z = fmaf(fmaf(SIN_S3, s, SIN_S2), s, SIN_S1);
    // + 0.0: z·s is -0 when s = +0, and `z·r + r` must then keep the sign of r = ±0.
    let z = fmaf(z, s, 0.0);
    fmaf(z, r, r)
}

/// cos r, s = r².
#[inline(always)]
fn cos_poly(s: f32) -> f32 {
    let z = fmaf(fmaf(COS_C3, s, COS_C2), s, COS_C1);
    fmaf(fmaf(z, s, -0.5), s, 1.0)
}

/// Negates `v` where bit 1 of `quadrant` is set.
#[inline(always)]
fn negate_if(v: f32, quadrant: u32) -> f32 {
    f32::from_bits(v.to_bits() ^ ((quadrant & 2) << 30))
}

/// sin r (`odd` false) or cos r (`odd` true), bit for bit as [`sin_poly`] and [`cos_poly`]:
/// one fma chain with its coefficients selected, as nvcc's `sinf`/`cosf` do.
#[inline(always)]
fn sin_or_cos_poly(r: f32, odd: bool) -> f32 {
    let s = r * r;
    let pick = |cos: f32, sin: f32| if odd { cos } else { sin };
    let z = fmaf(pick(COS_C3, SIN_S3), s, pick(COS_C2, SIN_S2));
    let z = fmaf(z, s, pick(COS_C1, SIN_S1));
    let z = fmaf(z, s, pick(-0.5, 0.0));
    fmaf(z, pick(s, r), pick(1.0, r))
}

/// `sincosf(x)`: `(sin x, cos x)` as nvcc computes them (no fast math). Measured against a
/// correctly rounded reference on every finite f32: at most 1.551 ulp for sin (at 9.938e32)
/// and 1.547 ulp for cos (at 1.790e18); CUDA documents 2 ulp. sin(±0) = ±0, cos(±0) = 1; ±∞
/// and NaN give NaN; subnormal x gives sin x = x exactly.
///
/// Cost: arguments up to 105615 in magnitude take a branch-free path of five fma-pipe
/// instructions for the reduction and ten for both polynomials, with no memory access; larger
/// ones (only the lanes that have them) take a Payne-Hanek reduction reading four words of a
/// 32-byte table of 2/π, as CUDA does, though without CUDA's local-memory scratch array.
#[doc(alias = "sincosf")]
#[inline]
#[must_use]
pub fn sincos(x: f32) -> (f32, f32) {
    let (r, quadrant) = reduce(x);
    let s = r * r;
    let (sin_r, cos_r) = (sin_poly(r, s), cos_poly(s));
    let (sin, cos) = if quadrant & 1 == 0 { (sin_r, cos_r) } else { (cos_r, sin_r) };
    (negate_if(sin, quadrant), negate_if(cos, quadrant.wrapping_add(1)))
}

/// `sinf(x)`: accuracy, special values and speed as [`sincos`].
#[doc(alias = "sinf")]
#[inline]
#[must_use]
pub fn sin(x: f32) -> f32 {
    let (r, quadrant) = reduce(x);
    negate_if(sin_or_cos_poly(r, quadrant & 1 != 0), quadrant)
}

/// `cosf(x)`: accuracy, special values and speed as [`sincos`].
#[doc(alias = "cosf")]
#[inline]
#[must_use]
pub fn cos(x: f32) -> f32 {
    let (r, quadrant) = reduce(x);
    let quadrant = quadrant.wrapping_add(1);
    negate_if(sin_or_cos_poly(r, quadrant & 1 != 0), quadrant)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::{cos, fmaf, sin, sincos};
    use std::vec::Vec;

    /// Error of `got` against the exact `want`, in ulps of f32 at `want`.
    fn ulp_error(got: f32, want: f64) -> f64 {
        let exponent = ((want.abs().to_bits() >> 52) as i32 - 1023).max(-126);
        let ulp = 2f64.powi(exponent - 23);
        let error = (f64::from(got) - want).abs() / ulp;
        if error.is_nan() { f64::INFINITY } else { error }
    }

    /// Max ulp errors (sin, cos) of `sincos` over `xs`; also checks `sin` and `cos` agree with it
    /// bit for bit.
    fn max_errors(xs: impl Iterator<Item = f32>) -> (f64, f32, f64, f32) {
        let (mut max_sin, mut at_sin, mut max_cos, mut at_cos) = (0.0, 0.0, 0.0, 0.0);
        for x in xs {
            let (s, c) = sincos(x);
            assert_eq!(sin(x).to_bits(), s.to_bits(), "sin({x:e}) differs from sincos");
            assert_eq!(cos(x).to_bits(), c.to_bits(), "cos({x:e}) differs from sincos");
            let es = ulp_error(s, f64::from(x).sin());
            let ec = ulp_error(c, f64::from(x).cos());
            if es > max_sin {
                (max_sin, at_sin) = (es, x);
            }
            if ec > max_cos {
                (max_cos, at_cos) = (ec, x);
            }
        }
        (max_sin, at_sin, max_cos, at_cos)
    }

    fn assert_within_2_ulp(what: &str, xs: impl Iterator<Item = f32>) {
        let (max_sin, at_sin, max_cos, at_cos) = max_errors(xs);
        std::println!("{what}: sin max {max_sin:.3} ulp at {at_sin:e}, cos max {max_cos:.3} ulp at {at_cos:e}");
        assert!(max_sin <= 2.0, "{what}: sin off by {max_sin} ulp at {at_sin:e}");
        assert!(max_cos <= 2.0, "{what}: cos off by {max_cos} ulp at {at_cos:e}");
    }

    /// xorshift64*: deterministic arguments without a dependency.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Uniform in [-limit, limit].
    fn uniform(next: &mut impl FnMut() -> u64, limit: f64) -> f32 {
        let unit = (next() >> 11) as f64 / (1u64 << 53) as f64;
        ((2.0 * unit - 1.0) * limit) as f32
    }

    #[test]
    fn fmaf_host_rounds_once() {
        // (1 + 2^-23)(1 - 2^-23) = 1 - 2^-46: separate roundings give 1 - 1 = 0.
        let e = f32::EPSILON;
        assert_eq!(fmaf(1.0 + e, 1.0 - e, -1.0), -(e * e));
        // (1 + 2^-12)² = 1 + 2^-11 + 2^-24 is halfway between two f32s; ±2^-70 decides, although
        // the f64 sum drops it.
        let a = 1.0 + 2f32.powi(-12);
        assert_eq!(fmaf(a, a, 2f32.powi(-70)), 1.0 + 2f32.powi(-11) + e);
        assert_eq!(fmaf(a, a, -(2f32.powi(-70))), 1.0 + 2f32.powi(-11));
        assert_eq!(fmaf(-0.0, 1.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fmaf(0.0, 1.0, -0.0).to_bits(), 0.0f32.to_bits());
        assert!(fmaf(f32::INFINITY, 0.0, 1.0).is_nan());
        // Subnormal results round to the subnormal grid, ties to even.
        let min = f32::from_bits(1);
        assert_eq!(fmaf(min, 1.5, 0.0), 2.0 * min);
        assert_eq!(fmaf(min, 0.5, min), 2.0 * min);
        assert_eq!(fmaf(min, -0.25, min), min);
        assert_eq!(fmaf(min, -0.5, min).to_bits(), 0);
    }

    /// 10^7 arguments over ±2^28: log-uniform magnitudes, uniform ones (mostly huge), and the fast
    /// path with its boundary.
    #[test]
    fn within_2_ulp_dense() {
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        let (lo, hi) = (2f32.powi(-30).to_bits(), 2f32.powi(28).to_bits());
        let log_uniform: Vec<f32> = (0..4_000_000)
            .map(|_| {
                let v = next();
                let x = f32::from_bits(lo + (v % u64::from(hi - lo)) as u32);
                if v >> 63 == 0 { x } else { -x }
            })
            .collect();
        assert_within_2_ulp("log-uniform 2^-30..2^28", log_uniform.into_iter());
        let huge: Vec<f32> = (0..3_000_000).map(|_| uniform(&mut next, 2f64.powi(28))).collect();
        assert_within_2_ulp("uniform ±2^28", huge.into_iter());
        let fast: Vec<f32> = (0..3_000_000).map(|_| uniform(&mut next, 110_000.0)).collect();
        assert_within_2_ulp("uniform ±110000", fast.into_iter());
    }

    /// The 64 floats either side of k·π/4, where the reduction cancels or the quadrant changes:
    /// every k up to 2^15, and spread k up to 2^40.
    #[test]
    fn within_2_ulp_near_multiples_of_pi_over_4() {
        let mut next = rng(42);
        let ks = (0..1u64 << 15).chain((0..20_000).map(|_| next() >> 24));
        let xs = ks.flat_map(|k| {
            let center = (k as f64 * core::f64::consts::FRAC_PI_4) as f32;
            (-64..=64i32).flat_map(move |d| {
                let x = f32::from_bits(center.to_bits().wrapping_add_signed(d));
                [x, -x]
            })
        });
        assert_within_2_ulp("k·π/4 ± 64 ulp", xs.filter(|x| x.is_finite()));
    }

    /// Every exponent's extremes up to f32::MAX, and the threshold of the slow reduction.
    #[test]
    fn within_2_ulp_every_binade() {
        let xs = (0..255u32).flat_map(|e| {
            (0..4096u32).flat_map(move |m| {
                let lo = f32::from_bits(e << 23 | m);
                let hi = f32::from_bits(e << 23 | (0x7f_ffff - m));
                [lo, hi, -lo, -hi]
            })
        });
        let threshold = super::FAST_REDUCTION_MAX.to_bits();
        let near = (threshold - 10_000..threshold + 10_000).map(f32::from_bits);
        assert_within_2_ulp("binade ends, slow-path threshold", xs.chain(near));
    }

    #[test]
    fn special_values() {
        for x in [0.0f32, -0.0] {
            let (s, c) = sincos(x);
            assert_eq!(s.to_bits(), x.to_bits(), "sin({x}) keeps the sign of zero");
            assert_eq!(c, 1.0);
            assert_eq!(sin(x).to_bits(), x.to_bits());
            assert_eq!(cos(x), 1.0);
        }
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN] {
            let (s, c) = sincos(x);
            assert!(s.is_nan() && c.is_nan() && sin(x).is_nan() && cos(x).is_nan(), "{x}");
        }
        // Subnormals and the smallest normals: sin x = x, cos x = 1, exactly.
        let tiny = (1..1 << 16).chain((0x0070_0000..0x0081_0000).step_by(17));
        for x in tiny.map(f32::from_bits) {
            for x in [x, -x] {
                assert_eq!(sin(x).to_bits(), x.to_bits(), "sin({x:e})");
                assert_eq!(cos(x), 1.0, "cos({x:e})");
            }
        }
        assert_within_2_ulp("extremes", [f32::MAX, -f32::MAX, f32::MIN_POSITIVE].into_iter());
    }

    #[test]
    fn pythagorean_identity() {
        let mut next = rng(7);
        let sampled = (0..1_000_000).map(|_| (next() % (1 << 27)) as f32);
        let spread = (0..1 << 20).map(|i| (i as f32) * 128.0); // 0..2^27
        for x in sampled.chain(spread) {
            let (s, c) = sincos(x);
            let one = f64::from(s).mul_add(f64::from(s), f64::from(c) * f64::from(c));
            assert!((one - 1.0).abs() <= 1e-6, "sin²+cos² = {one} at {x}");
        }
    }

    /// Every f32: `COHORT_EXHAUSTIVE=1 cargo test -p cohort --lib --release -- --ignored exhaustive`.
    /// Runs only when asked (`COHORT_EXHAUSTIVE=1`): bundles that run ignored tests (`.gpu/run`)
    /// would otherwise spend 17 minutes here.
    #[test]
    #[ignore = "all 2^32 arguments: about 17 minutes on one core, release build; set COHORT_EXHAUSTIVE=1"]
    fn within_2_ulp_exhaustive() {
        if std::env::var_os("COHORT_EXHAUSTIVE").is_none() {
            std::println!("skipped: set COHORT_EXHAUSTIVE=1 to check all 2^32 arguments");
            return;
        }
        let xs = (0..=u32::MAX).map(f32::from_bits).filter(|x| x.is_finite());
        assert_within_2_ulp("every finite f32", xs);
    }
}

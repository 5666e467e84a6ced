//! The tensor cores' element types beyond BF16/F16: [`tf32`], and the FP8 formats [`e4m3`] and
//! [`e5m2`] — the same types on the host and on the device ([`DeviceCopy`]: kernel arguments,
//! buffer and shared-memory elements), with CUDA's conversions.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `wmma::__float_to_tf32(x)` (`cvt.rna.tf32.f32`) | [`tf32::from_f32`] |
//! | `__nv_fp8_e4m3(x)`, `__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)` (`cvt.rn.satfinite.e4m3x2.f32`) | [`e4m3::from_f32`] |
//! | `float(__nv_fp8_e4m3)` (`cvt.rn.f16x2.e4m3x2`, then `cvt.f32.f16`) | [`e4m3::to_f32`] |
//! | `__nv_fp8_e5m2` | [`e5m2`] (the same) |
//!
//! The FP8 types are Cohort's own (`#[repr(transparent)]` over `u8`): the `float8` crate (0.7)
//! was considered and not used, its constants disagree with its own conversions (its
//! `F8E4M3::INFINITY` is 448, E4M3's largest finite value; `F8E5M2::INFINITY` is 57344). The
//! conversions here are CUDA's satfinite ones, bit for bit the same on the host, the CPU device
//! and the GPU (the hardware's `cvt` on sm_89+, the same rounding in software below):
//! to nearest, ties to even; a magnitude beyond the largest finite value — infinity too — gives
//! the largest finite value of its sign; a NaN gives a NaN (`0x7f`).

use core::fmt;

use crate::DeviceCopy;
use crate::raw;
use crate::raw::mma_types::{Fp8, soft};

/// TensorFloat-32: an `f32` with 10 mantissa bits (1 sign, 8 exponent, 10 mantissa; the low 13
/// bits of its `f32` form zero), the input type of `mma.sync` m16n8k8 `.tf32`.
///
/// Equality is the values' (`f32`'s: NaN is not equal to itself, `-0 == 0`).
#[allow(non_camel_case_types)]
#[repr(transparent)]
#[derive(Clone, Copy, Default)]
pub struct tf32(u32);

impl tf32 {
    /// Zero.
    pub const ZERO: Self = Self(0);
    /// One.
    pub const ONE: Self = Self(0x3f80_0000);

    /// `x` rounded to TF32: to nearest, ties away from zero (`cvt.rna.tf32.f32`, CUDA's
    /// `wmma::__float_to_tf32`); the largest `f32`s round to infinity; a NaN gives a NaN.
    #[inline(always)]
    #[must_use]
    pub fn from_f32(x: f32) -> Self {
        // A NaN as one quiet NaN whatever the hardware makes of its payload.
        if x.is_nan() { Self(0x7fff_e000) } else { Self(raw::cvt_rna_tf32_f32(x)) }
    }

    /// The value (exact).
    #[inline(always)]
    #[must_use]
    pub const fn to_f32(self) -> f32 {
        f32::from_bits(self.0)
    }

    /// The `f32` bits.
    #[inline(always)]
    #[must_use]
    pub const fn to_bits(self) -> u32 {
        self.0
    }

    /// The TF32 with the `f32` bits `b`, its low 13 bits cleared (truncation: what the tensor
    /// cores read of an `f32` given as `.tf32`).
    #[inline(always)]
    #[must_use]
    pub const fn from_bits(b: u32) -> Self {
        Self(b & !0x1fff)
    }
}

impl PartialEq for tf32 {
    fn eq(&self, o: &Self) -> bool {
        self.to_f32() == o.to_f32()
    }
}

impl fmt::Debug for tf32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_f32(), f)
    }
}

// SAFETY: `#[repr(transparent)]` over a `u32`: every bit pattern a value (a `from_bits` with
// low bits set is read as its truncation by the tensor cores, and as itself by `to_f32`), no
// padding, the same layout on every target.
unsafe impl DeviceCopy for tf32 {}

macro_rules! fp8 {
    ($(#[$m:meta])* $t:ident, $f:ident, $to:ident, $from:ident, max: $max:literal, $($extra:tt)*) => {
        $(#[$m])*
        ///
        /// Equality is the values' (NaN is not equal to itself, `-0 == 0`); compare
        /// [`to_bits`](Self::to_bits) for the encodings.
        #[allow(non_camel_case_types)]
        #[repr(transparent)]
        #[derive(Clone, Copy, Default)]
        pub struct $t(u8);

        impl $t {
            /// Zero.
            pub const ZERO: Self = Self(0);
            /// The largest finite value.
            pub const MAX: Self = Self($max);
            /// The most negative finite value.
            pub const MIN: Self = Self($max | 0x80);
            /// A NaN (`0x7f`, what a conversion of a NaN gives).
            pub const NAN: Self = Self(0x7f);
            $($extra)*

            /// `x` rounded to this format: to nearest, ties to even; a magnitude beyond
            /// [`MAX`](Self::MAX) (infinity too) gives `MAX` of its sign; a NaN gives
            /// [`NAN`](Self::NAN). On sm_89+ one `cvt.rn.satfinite`; below, on the CPU device
            /// and on the host the same rounding in software.
            #[inline(always)]
            #[must_use]
            pub fn from_f32(x: f32) -> Self {
                #[cfg(all(target_arch = "nvptx64", target_feature = "sm_89"))]
                {
                    Self(raw::$to(0.0, x) as u8)
                }
                #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_89")))]
                {
                    Self(soft::to_fp8(x, Fp8::$f))
                }
            }

            /// The value, exactly (every value of the format is an `f32`; on sm_89+
            /// `cvt.rn.f16x2` and `cvt.f32.f16`).
            #[inline(always)]
            #[must_use]
            pub fn to_f32(self) -> f32 {
                #[cfg(all(target_arch = "nvptx64", target_feature = "sm_89"))]
                {
                    raw::cvt_f32_f16(raw::$from(u16::from(self.0)) as u16)
                }
                #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_89")))]
                {
                    soft::from_fp8(self.0, Fp8::$f)
                }
            }

            /// The encoding.
            #[inline(always)]
            #[must_use]
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// The value with encoding `b` (every byte is one).
            #[inline(always)]
            #[must_use]
            pub const fn from_bits(b: u8) -> Self {
                Self(b)
            }

            /// Whether this is a NaN.
            #[inline(always)]
            #[must_use]
            pub fn is_nan(self) -> bool {
                soft::from_fp8(self.0, Fp8::$f).is_nan()
            }
        }

        impl PartialEq for $t {
            fn eq(&self, o: &Self) -> bool {
                self.to_f32() == o.to_f32()
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&soft::from_fp8(self.0, Fp8::$f), f)
            }
        }

        // SAFETY: `#[repr(transparent)]` over a `u8`: every bit pattern a value, no padding,
        // the same layout on every target.
        unsafe impl DeviceCopy for $t {}
    };
}

fp8! {
    /// FP8 E4M3 (CUDA's `__nv_fp8_e4m3`, OCP's E4M3): 1 sign, 4 exponent (bias 7), 3 mantissa
    /// bits; no infinities; NaN `S.1111.111`; largest finite ±448, smallest subnormal 2⁻⁹.
    e4m3, E4M3, cvt_rn_satfinite_e4m3x2_f32, cvt_rn_f16x2_e4m3x2, max: 0x7e,
    /// One.
    pub const ONE: Self = Self(0x38);
}

fp8! {
    /// FP8 E5M2 (CUDA's `__nv_fp8_e5m2`, OCP's E5M2: the upper byte of an F16): 1 sign, 5
    /// exponent (bias 15), 2 mantissa bits; infinities `S.11111.00`; NaNs `S.11111.xx`;
    /// largest finite ±57344, smallest subnormal 2⁻¹⁶.
    e5m2, E5M2, cvt_rn_satfinite_e5m2x2_f32, cvt_rn_f16x2_e5m2x2, max: 0x7b,
    /// One.
    pub const ONE: Self = Self(0x3c);
    /// Infinity (conversions never give it: they saturate).
    pub const INFINITY: Self = Self(0x7c);
    /// Minus infinity.
    pub const NEG_INFINITY: Self = Self(0xfc);
}

//! Tensor cores beyond BF16/F16 (PTX ISA §"Warp-level Matrix Multiply-Accumulate
//! Instructions"): `mma.sync` m16n8k8 with TF32 inputs, m16n8k32 with 8-bit integer inputs
//! (`.s8` / `.u8`, `.s32` accumulators, optionally `.satfinite`) and with FP8 inputs (`.e4m3` /
//! `.e5m2`, `f32` accumulators, sm_89+), and the conversions to and from TF32 and FP8.
//!
//! The `mma.sync` are LLVM's NVVM intrinsics (`llvm.nvvm.mma.*`, `convergent`), as in
//! [`super::mma`]. The FP8 ones exist from sm_89 and PTX ISA 8.4: the sm_90 module is built with
//! `+ptx84`, and below sm_89 (the sm_80 module) the functions here trap (the safe layer,
//! [`crate::mma`], refuses them first with a panic that names the call).
//!
//! Fragments are the registers PTX names: `.b32` words, TF32 one value per word (an `f32`'s
//! bits), 8-bit types four per word (element `4w + j` in byte `j` of word `w`). Which lane
//! holds which element is documented, and computed, by [`crate::mma`].
//!
//! On the CPU device the warp's operands are gathered (`cohort_cpu::warp_gather`: a warp
//! collective, a divergent warp an `Err`) and the instruction computed in every lane:
//! - TF32: the inputs' low 13 bits ignored (truncated, as the tensor cores read a `.tf32`
//!   operand), products exact in `f32` (11-bit significands), `c` plus the 8 products added in
//!   order of `k`, each sum rounded to nearest-even `f32` (the hardware's order and
//!   intermediate precision are unspecified: sums not exact in `f32` can differ in the last bits);
//! - 8-bit integers: the exact sum of `c` and the 32 products, then wrapped to 32 bits
//!   (two's complement), or clamped to `i32` with `.satfinite` — bit-exact on any order;
//! - FP8: inputs decoded exactly, products exact in `f32`, summed as TF32's (Hopper's FP8
//!   accumulation keeps fewer bits than `f32`: sums that are not exact in about 14 bits can
//!   differ from a GPU's).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::host::on_device;

/// Four `f32`: the result of the intrinsics with F32 accumulators.
#[cfg(target_arch = "nvptx64")]
#[repr(C)]
#[derive(Clone, Copy)]
struct F4(f32, f32, f32, f32);

/// Four `i32`: the result of the intrinsics with S32 accumulators.
#[cfg(target_arch = "nvptx64")]
#[repr(C)]
#[derive(Clone, Copy)]
struct I4(u32, u32, u32, u32);

#[cfg(target_arch = "nvptx64")]
#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.mma.m16n8k8.row.col.tf32"]
    fn nvvm_mma_tf32(a0: u32, a1: u32, a2: u32, a3: u32, b0: u32, b1: u32, c0: f32, c1: f32, c2: f32, c3: f32) -> F4;
}

/// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` (sm_80+): `d = a · b + c` for a 16×8
/// TF32 `a` (row-major, one value per word), an 8×8 TF32 `b` (column-major) and 16×8 `f32` `c`,
/// `d`.
///
/// # Safety
/// Every lane of the warp executes this same instruction, converged (all 32 lanes present).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m16n8k8_f32_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    on_device!("mma_m16n8k8_f32_tf32" => {
        // SAFETY: the caller's convergence contract.
        let d = unsafe { nvvm_mma_tf32(a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]) };
        [d.0, d.1, d.2, d.3]
    } host => {
        super::mark_instruction();
        host::mma_tf32(a, b, c)
    })
}

macro_rules! mma_int8 {
    ($($(#[$m:meta])* $name:ident => $intr:literal, $sa:literal, $sb:literal, $sat:literal;)*) => {$(
        $(#[$m])*
        ///
        /// `d = a · b + c` for a 16×32 `a` (row-major, four 8-bit values per word), a 32×8 `b`
        /// (column-major) and 16×8 `i32` `c`, `d` (sm_80+).
        ///
        /// # Safety
        /// Every lane of the warp executes this same instruction, converged (all 32 lanes present).
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(a: [u32; 4], b: [u32; 2], c: [i32; 4]) -> [i32; 4] {
            on_device!(stringify!($name) => {
                #[allow(improper_ctypes)]
                unsafe extern "C" {
                    #[link_name = $intr]
                    fn intr(a0: u32, a1: u32, a2: u32, a3: u32, b0: u32, b1: u32, c0: u32, c1: u32, c2: u32, c3: u32) -> I4;
                }
                let c = c.map(|x| x as u32);
                // SAFETY: the caller's convergence contract.
                let d = unsafe { intr(a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]) };
                [d.0 as i32, d.1 as i32, d.2 as i32, d.3 as i32]
            } host => {
                super::mark_instruction();
                host::mma_int8(a, b, c, $sa, $sb, $sat)
            })
        }
    )*};
}

mma_int8! {
    /// `mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32`: wrapping on overflow.
    mma_m16n8k32_s32_s8_s8 => "llvm.nvvm.mma.m16n8k32.row.col.s8", true, true, false;
    /// `mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32`.
    mma_m16n8k32_s32_s8_u8 => "llvm.nvvm.mma.m16n8k32.row.col.s8.u8", true, false, false;
    /// `mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32`.
    mma_m16n8k32_s32_u8_s8 => "llvm.nvvm.mma.m16n8k32.row.col.u8.s8", false, true, false;
    /// `mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32`.
    mma_m16n8k32_s32_u8_u8 => "llvm.nvvm.mma.m16n8k32.row.col.u8", false, false, false;
    /// `mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32`: the result clamped to `i32`.
    mma_m16n8k32_s32_s8_s8_satfinite => "llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8", true, true, true;
    /// `mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32`.
    mma_m16n8k32_s32_s8_u8_satfinite => "llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8.u8", true, false, true;
    /// `mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.s8.s32`.
    mma_m16n8k32_s32_u8_s8_satfinite => "llvm.nvvm.mma.m16n8k32.row.col.satfinite.u8.s8", false, true, true;
    /// `mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.u8.s32`.
    mma_m16n8k32_s32_u8_u8_satfinite => "llvm.nvvm.mma.m16n8k32.row.col.satfinite.u8", false, false, true;
}

/// An FP8 format: E4M3 (`__nv_fp8_e4m3`) or E5M2 (`__nv_fp8_e5m2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    /// 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; NaN `S.1111.111`; largest
    /// finite ±448.
    E4M3,
    /// 1 sign, 5 exponent (bias 15), 2 mantissa bits (the upper byte of an F16); infinities;
    /// largest finite ±57344.
    E5M2,
}

macro_rules! mma_fp8 {
    ($($(#[$m:meta])* $name:ident => $intr:literal, $fa:ident, $fb:ident;)*) => {$(
        $(#[$m])*
        ///
        /// `d = a · b + c` for a 16×32 `a` (row-major, four FP8 values per word), a 32×8 `b`
        /// (column-major) and 16×8 `f32` `c`, `d`. sm_89+ (PTX ISA 8.4); traps below.
        ///
        /// # Safety
        /// Every lane of the warp executes this same instruction, converged (all 32 lanes present).
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
            on_device!(stringify!($name) => {
                #[cfg(target_feature = "sm_89")]
                {
                    #[allow(improper_ctypes)]
                    unsafe extern "C" {
                        #[link_name = $intr]
                        fn intr(a0: u32, a1: u32, a2: u32, a3: u32, b0: u32, b1: u32, c0: f32, c1: f32, c2: f32, c3: f32) -> F4;
                    }
                    // SAFETY: the caller's convergence contract; sm_89 (the cfg).
                    let d = unsafe { intr(a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]) };
                    [d.0, d.1, d.2, d.3]
                }
                #[cfg(not(target_feature = "sm_89"))]
                {
                    let _ = (a, b, c);
                    super::trap()
                }
            } host => {
                super::mark_instruction();
                host::mma_fp8(a, b, c, Fp8::$fa, Fp8::$fb)
            })
        }
    )*};
}

mma_fp8! {
    /// `mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32`.
    mma_m16n8k32_f32_e4m3_e4m3 => "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32", E4M3, E4M3;
    /// `mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32`.
    mma_m16n8k32_f32_e4m3_e5m2 => "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e5m2.f32", E4M3, E5M2;
    /// `mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32`.
    mma_m16n8k32_f32_e5m2_e4m3 => "llvm.nvvm.mma.m16n8k32.row.col.f32.e5m2.e4m3.f32", E5M2, E4M3;
    /// `mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32`.
    mma_m16n8k32_f32_e5m2_e5m2 => "llvm.nvvm.mma.m16n8k32.row.col.f32.e5m2.e5m2.f32", E5M2, E5M2;
}

/// `cvt.rna.tf32.f32` (sm_80+): `x` rounded to TF32 — 10 mantissa bits, to nearest, ties away
/// from zero — as an `f32`'s bits. The low 13 bits are cleared here (the instruction leaves
/// them unspecified in PTX's words); a NaN gives a NaN.
#[inline(always)]
#[must_use]
pub fn cvt_rna_tf32_f32(x: f32) -> u32 {
    on_device!("cvt_rna_tf32_f32" => {
        let r: u32;
        // SAFETY: arithmetic on registers only.
        unsafe { asm!("cvt.rna.tf32.f32 {0}, {1};", out(reg32) r, in(reg32) x, options(pure, nomem, nostack)) };
        r & !0x1fff
    } host => {
        soft::tf32_rna(x)
    })
}

macro_rules! cvt_to_fp8x2 {
    ($($(#[$m:meta])* $name:ident => $ptx:literal, $f:ident;)*) => {$(
        $(#[$m])*
        ///
        /// `hi` and `lo` rounded to nearest (ties to even), a magnitude beyond the largest
        /// finite value (infinities too) giving the largest finite value of its sign, a NaN a
        /// NaN: `hi` in the upper byte of the result, `lo` in the lower. sm_89+; traps below.
        #[inline(always)]
        #[must_use]
        pub fn $name(hi: f32, lo: f32) -> u16 {
            on_device!(stringify!($name) => {
                #[cfg(target_feature = "sm_89")]
                {
                    let r: u16;
                    // SAFETY: arithmetic on registers only; sm_89 (the cfg).
                    unsafe { asm!($ptx, out(reg16) r, in(reg32) hi, in(reg32) lo, options(pure, nomem, nostack)) };
                    r
                }
                #[cfg(not(target_feature = "sm_89"))]
                {
                    let _ = (hi, lo);
                    super::trap()
                }
            } host => {
                u16::from(soft::to_fp8(hi, Fp8::$f)) << 8 | u16::from(soft::to_fp8(lo, Fp8::$f))
            })
        }
    )*};
}

cvt_to_fp8x2! {
    /// `cvt.rn.satfinite.e4m3x2.f32` (sm_89): two `f32` as two E4M3.
    cvt_rn_satfinite_e4m3x2_f32 => "cvt.rn.satfinite.e4m3x2.f32 {0}, {1}, {2};", E4M3;
    /// `cvt.rn.satfinite.e5m2x2.f32` (sm_89): two `f32` as two E5M2.
    cvt_rn_satfinite_e5m2x2_f32 => "cvt.rn.satfinite.e5m2x2.f32 {0}, {1}, {2};", E5M2;
}

macro_rules! cvt_from_fp8x2 {
    ($($(#[$m:meta])* $name:ident => $ptx:literal, $f:ident;)*) => {$(
        $(#[$m])*
        ///
        /// The two FP8 values of `x` (upper byte, lower byte) as two F16 (upper half, lower
        /// half), exactly (every FP8 value is an F16). sm_89+; traps below.
        #[inline(always)]
        #[must_use]
        pub fn $name(x: u16) -> u32 {
            on_device!(stringify!($name) => {
                #[cfg(target_feature = "sm_89")]
                {
                    let r: u32;
                    // SAFETY: arithmetic on registers only; sm_89 (the cfg).
                    unsafe { asm!($ptx, out(reg32) r, in(reg16) x, options(pure, nomem, nostack)) };
                    r
                }
                #[cfg(not(target_feature = "sm_89"))]
                {
                    let _ = x;
                    super::trap()
                }
            } host => {
                let h = |b: u8| u32::from(half::f16::from_f32(soft::from_fp8(b, Fp8::$f)).to_bits());
                h((x >> 8) as u8) << 16 | h(x as u8)
            })
        }
    )*};
}

cvt_from_fp8x2! {
    /// `cvt.rn.f16x2.e4m3x2` (sm_89): two E4M3 as two F16.
    cvt_rn_f16x2_e4m3x2 => "cvt.rn.f16x2.e4m3x2 {0}, {1};", E4M3;
    /// `cvt.rn.f16x2.e5m2x2` (sm_89): two E5M2 as two F16.
    cvt_rn_f16x2_e5m2x2 => "cvt.rn.f16x2.e5m2x2 {0}, {1};", E5M2;
}

/// The conversions in software, bit for bit as the instructions above (the CPU device's, and
/// the device's below sm_89).
pub mod soft {
    use super::Fp8;

    /// `cvt.rna.tf32.f32`'s value, low 13 bits cleared: ties away from zero; a NaN gives the
    /// quiet NaN `0x7fffe000`.
    #[inline(always)]
    #[must_use]
    pub fn tf32_rna(x: f32) -> u32 {
        if x.is_nan() {
            return 0x7fff_e000;
        }
        // Half of the 13 dropped bits' weight added to the magnitude, then truncated: rounds
        // to nearest, ties away from zero (the sign bit is untouched: the magnitude cannot
        // carry into it; the largest finite values round up to infinity, as `.rna` does).
        (x.to_bits() + 0x1000) & !0x1fff
    }

    /// The encoding's (exponent bits, mantissa bits, bias, largest finite magnitude's code,
    /// the NaN code).
    #[inline(always)]
    const fn params(f: Fp8) -> (u32, u32, i32, u32, u8) {
        match f {
            Fp8::E4M3 => (4, 3, 7, 0x7e, 0x7f),
            Fp8::E5M2 => (5, 2, 15, 0x7b, 0x7f),
        }
    }

    /// `x` as FP8 `f`: to nearest, ties to even; a magnitude beyond the largest finite one
    /// (infinity too) gives the largest finite of its sign (`.satfinite`); a NaN gives `0x7f`.
    #[inline(always)]
    #[must_use]
    pub fn to_fp8(x: f32, f: Fp8) -> u8 {
        let (_, m, bias, max, nan) = params(f);
        if x.is_nan() {
            return nan;
        }
        let bits = x.to_bits();
        let sign = ((bits >> 24) & 0x80) as u8;
        let field = ((bits >> 23) & 0xff) as i32;
        // |x| = sig · 2^(e - 23): a normal's implicit bit, or a subnormal's exponent -126.
        let (sig, e) =
            if field == 0 { (bits & 0x7f_ffff, -126) } else { ((bits & 0x7f_ffff) | 0x80_0000, field - 127) };
        // The FP8 quantum at |x|: 2^(max(e, 1 - bias) - m) (the subnormals share the smallest
        // normal binade's). q = |x| / quantum, rounded to nearest even.
        let shift = (23 + e.max(1 - bias) - m as i32 - e) as u32;
        let q = if shift >= 32 {
            0
        } else {
            let (q, rem, half) = (sig >> shift, sig & ((1 << shift) - 1), 1u32 << (shift - 1));
            q + u32::from(rem > half || (rem == half && q & 1 == 1))
        };
        // The code of q quanta at exponent max(e, 1 - bias): continuous across the binades
        // (q = 2^(m + 1) carries into the next exponent, a subnormal's q = 2^m is the smallest
        // normal). Beyond the largest finite code: saturate.
        let exp = e.max(1 - bias);
        let code = if exp + bias - 1 > 30 { u32::MAX } else { (((exp + bias - 1) as u32) << m) + q };
        sign | code.min(max) as u8
    }

    /// The value of FP8 `b` of format `f`, exactly.
    #[inline(always)]
    #[must_use]
    pub fn from_fp8(b: u8, f: Fp8) -> f32 {
        let (eb, m, bias, _, _) = params(f);
        let sign = u32::from(b & 0x80) << 24;
        let (exp, man) = (u32::from(b & 0x7f) >> m, u32::from(b) & ((1 << m) - 1));
        let all_ones = (1 << eb) - 1;
        let mag = match f {
            Fp8::E4M3 if exp == all_ones && man == (1 << m) - 1 => return f32::NAN,
            Fp8::E5M2 if exp == all_ones => {
                if man == 0 {
                    f32::INFINITY
                } else {
                    return f32::NAN;
                }
            }
            _ if exp == 0 => {
                // man · 2^(1 - bias - m): a product by a power of two, exact.
                man as f32 * f32::from_bits(((127 + 1 - bias - m as i32) as u32) << 23)
            }
            _ => f32::from_bits(((exp as i32 - bias + 127) as u32) << 23 | man << (23 - m)),
        };
        f32::from_bits(mag.to_bits() | sign)
    }
}

/// The CPU device's tensor core for these shapes.
#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{Fp8, soft};

    /// Byte `i` (0..16) of a word array.
    fn byte<const N: usize>(w: &[u32; N], i: usize) -> u8 {
        (w[i / 4] >> (8 * (i % 4))) as u8
    }

    /// The row and column of accumulator element `i` (0..4) in lane `l` (as m16n8k16's).
    fn c_coords(l: usize, i: usize) -> (usize, usize) {
        (l / 4 + 8 * (i / 2), (l % 4) * 2 + (i & 1))
    }

    /// The lane and element of accumulator element (`row`, `col`).
    fn c_at(row: usize, col: usize) -> (usize, usize) {
        (4 * (row % 8) + col / 2, col % 2 + 2 * (row / 8))
    }

    #[track_caller]
    pub(super) fn mma_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        let l = cohort_cpu::lane_id() as usize;
        let all = cohort_cpu::warp_gather("mma_sync", u32::MAX, (a, b, c));
        // A (16×8, row-major): element i of lane 4g + t at (g + 8 (i % 2), t + 4 (i / 2)).
        // B (8×8, K×N): element i of lane 4g + t at (t + 4 i, g).
        let tf = |w: u32| f32::from_bits(w & !0x1fff);
        core::array::from_fn(|i| {
            let (row, col) = c_coords(l, i);
            let (lc, ic) = c_at(row, col);
            let mut acc = all[lc].2[ic];
            for k in 0..8 {
                let x = tf(all[4 * (row % 8) + k % 4].0[row / 8 + 2 * (k / 4)]);
                let y = tf(all[4 * col + k % 4].1[k / 4]);
                acc += x * y;
            }
            acc
        })
    }

    /// The A element (`row`, `k`) and B element (`k`, `col`) of an m16n8k32 with 8-bit inputs:
    /// (lane, byte index) each. A element i of lane 4g + t at (g + 8 ((i / 4) % 2), 4t + i % 4
    /// + 16 (i / 8)); B element i at (4t + i % 4 + 16 (i / 4), g).
    fn k32_at(row: usize, k: usize, col: usize) -> ((usize, usize), (usize, usize)) {
        let a = (4 * (row % 8) + (k % 16) / 4, k % 4 + 4 * (row / 8) + 8 * (k / 16));
        let b = (4 * col + (k % 16) / 4, k % 4 + 4 * (k / 16));
        (a, b)
    }

    #[track_caller]
    pub(super) fn mma_int8(a: [u32; 4], b: [u32; 2], c: [i32; 4], sa: bool, sb: bool, sat: bool) -> [i32; 4] {
        let l = cohort_cpu::lane_id() as usize;
        let all = cohort_cpu::warp_gather("mma_sync", u32::MAX, (a, b, c));
        let v = |x: u8, signed: bool| if signed { i64::from(x as i8) } else { i64::from(x) };
        core::array::from_fn(|i| {
            let (row, col) = c_coords(l, i);
            let (lc, ic) = c_at(row, col);
            let mut acc = i64::from(all[lc].2[ic]);
            for k in 0..32 {
                let ((la, ia), (lb, ib)) = k32_at(row, k, col);
                acc += v(byte(&all[la].0, ia), sa) * v(byte(&all[lb].1, ib), sb);
            }
            if sat { acc.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 } else { acc as i32 }
        })
    }

    #[track_caller]
    pub(super) fn mma_fp8(a: [u32; 4], b: [u32; 2], c: [f32; 4], fa: Fp8, fb: Fp8) -> [f32; 4] {
        let l = cohort_cpu::lane_id() as usize;
        let all = cohort_cpu::warp_gather("mma_sync", u32::MAX, (a, b, c));
        core::array::from_fn(|i| {
            let (row, col) = c_coords(l, i);
            let (lc, ic) = c_at(row, col);
            let mut acc = all[lc].2[ic];
            for k in 0..32 {
                let ((la, ia), (lb, ib)) = k32_at(row, k, col);
                acc += soft::from_fp8(byte(&all[la].0, ia), fa) * soft::from_fp8(byte(&all[lb].1, ib), fb);
            }
            acc
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Fp8;
    use super::soft::{from_fp8, tf32_rna, to_fp8};

    /// Every FP8 code decodes to a value that encodes back to it (NaNs to the NaN code), and
    /// the encodings are ordered as their values.
    #[test]
    fn fp8_round_trips_every_code() {
        for f in [Fp8::E4M3, Fp8::E5M2] {
            let mut last = f32::NEG_INFINITY;
            for b in 0u8..=0x7f {
                let x = from_fp8(b, f);
                if x.is_nan() {
                    assert_eq!(to_fp8(x, f), 0x7f, "{f:?} {b:#x}");
                    continue;
                }
                if x.is_infinite() {
                    // E5M2's infinity: .satfinite gives the largest finite value.
                    assert_eq!((f, b, to_fp8(x, f)), (Fp8::E5M2, 0x7c, 0x7b));
                    continue;
                }
                assert_eq!(to_fp8(x, f), b, "{f:?} {b:#x} = {x}");
                assert_eq!(to_fp8(-x, f), b | 0x80, "{f:?} -{b:#x}");
                assert_eq!(from_fp8(b | 0x80, f).to_bits(), (-x).to_bits());
                assert!(x > last || b == 0, "{f:?} {b:#x}: {x} after {last}");
                last = x;
            }
        }
        assert_eq!(from_fp8(0x7e, Fp8::E4M3), 448.0);
        assert_eq!(from_fp8(0x01, Fp8::E4M3), 2f32.powi(-9));
        assert_eq!(from_fp8(0x7b, Fp8::E5M2), 57344.0);
        assert_eq!(from_fp8(0x01, Fp8::E5M2), 2f32.powi(-16));
    }

    /// Rounding to nearest even between neighbours, saturation, and underflow to zero.
    #[test]
    fn fp8_rounds_to_nearest_even_and_saturates() {
        for f in [Fp8::E4M3, Fp8::E5M2] {
            for b in 0u8..0x7b {
                let (x, y) = (from_fp8(b, f), from_fp8(b + 1, f));
                let mid = (f64::from(x) + f64::from(y)) / 2.0;
                let mid32 = mid as f32;
                assert_eq!(f64::from(mid32), mid, "the midpoint is an f32");
                let even = if b % 2 == 0 { b } else { b + 1 };
                assert_eq!(to_fp8(mid32, f), even, "{f:?} tie between {b:#x} and {:#x}", b + 1);
                assert_eq!(to_fp8(f32::from_bits(mid32.to_bits() - 1), f), b, "{f:?} below the tie");
                assert_eq!(to_fp8(f32::from_bits(mid32.to_bits() + 1), f), b + 1, "{f:?} above the tie");
            }
        }
        assert_eq!(to_fp8(1e9, Fp8::E4M3), 0x7e);
        assert_eq!(to_fp8(f32::NEG_INFINITY, Fp8::E4M3), 0xfe);
        assert_eq!(to_fp8(464.0, Fp8::E4M3), 0x7e, "beyond 448 + half an ulp still saturates");
        assert_eq!(to_fp8(f32::INFINITY, Fp8::E5M2), 0x7b);
        assert_eq!(to_fp8(1e-30, Fp8::E4M3), 0);
        assert_eq!(to_fp8(-1e-30, Fp8::E5M2), 0x80);
        assert_eq!(to_fp8(f32::from_bits(1), Fp8::E4M3), 0);
    }

    #[test]
    fn tf32_rounds_to_nearest_ties_away() {
        assert_eq!(tf32_rna(1.0), 1f32.to_bits());
        let ulp = 2f32.powi(-10);
        assert_eq!(tf32_rna(1.0 + ulp / 2.0), (1.0 + ulp).to_bits(), "a tie rounds away from zero");
        assert_eq!(tf32_rna(-(1.0 + ulp / 2.0)), (-(1.0 + ulp)).to_bits());
        assert_eq!(tf32_rna(1.0 + ulp / 2.0 - 2f32.powi(-23)), 1f32.to_bits());
        assert_eq!(tf32_rna(f32::MAX), f32::INFINITY.to_bits());
        assert_eq!(tf32_rna(f32::INFINITY), f32::INFINITY.to_bits());
        assert!(f32::from_bits(tf32_rna(f32::NAN)).is_nan());
        assert!(f32::from_bits(tf32_rna(f32::from_bits(0x7f80_0001))).is_nan());
    }
}

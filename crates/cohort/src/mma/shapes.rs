//! The fragments and `mma.sync` instructions of the shapes beyond m16n8k16 (see the
//! [module docs](super)): m16n8k8 with [`tf32`] inputs, m16n8k32 with 8-bit integer (`i8`,
//! `u8`) or FP8 ([`e4m3`], [`e5m2`]) inputs.

use super::{Accumulator, ColMajor, M16N8K8, M16N8K32, MatrixA, MatrixB, MmaShape, Operand, RowMajor};
use super::{e4m3, e5m2, tf32};
use crate::raw;

mod sealed {
    pub trait Byte {}
    impl Byte for i8 {}
    impl Byte for u8 {}
    impl Byte for super::e4m3 {}
    impl Byte for super::e5m2 {}
}

/// The 8-bit input types of `mma.sync` m16n8k32: `i8`, `u8`, [`e4m3`], [`e5m2`] (four per
/// 32-bit register, element `4w + j` in byte `j` of register `w`; sealed).
pub trait Byte8: Copy + core::fmt::Debug + sealed::Byte {
    #[doc(hidden)]
    fn to_byte(self) -> u8;
    #[doc(hidden)]
    fn from_byte(b: u8) -> Self;
}

impl Byte8 for i8 {
    #[inline(always)]
    fn to_byte(self) -> u8 {
        self as u8
    }
    #[inline(always)]
    fn from_byte(b: u8) -> Self {
        b as i8
    }
}

impl Byte8 for u8 {
    #[inline(always)]
    fn to_byte(self) -> u8 {
        self
    }
    #[inline(always)]
    fn from_byte(b: u8) -> Self {
        b
    }
}

impl Byte8 for e4m3 {
    #[inline(always)]
    fn to_byte(self) -> u8 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_byte(b: u8) -> Self {
        e4m3::from_bits(b)
    }
}

impl Byte8 for e5m2 {
    #[inline(always)]
    fn to_byte(self) -> u8 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_byte(b: u8) -> Self {
        e5m2::from_bits(b)
    }
}

#[inline(always)]
fn byte_get<T: Byte8, const N: usize>(w: &[u32; N], i: usize) -> T {
    T::from_byte((w[i / 4] >> (8 * (i % 4))) as u8)
}

#[inline(always)]
fn byte_set<T: Byte8, const N: usize>(w: &mut [u32; N], i: usize, v: T) {
    let s = 8 * (i % 4);
    w[i / 4] = (w[i / 4] & !(0xff << s)) | u32::from(v.to_byte()) << s;
}

/// An accumulator of four `f32` or `i32` per lane at m16n8's places (row `g + 8·(i / 2)`,
/// column `2t + i % 2`).
macro_rules! accumulator {
    ($shape:ty, $t:ty) => {
        impl Operand<$shape, $t, RowMajor> for Accumulator {
            type Regs = [$t; 4];
            const ROWS: usize = 16;
            const COLS: usize = 8;
            const LEN: usize = 4;
            #[inline(always)]
            fn splat(v: $t) -> Self::Regs {
                [v; 4]
            }
            #[inline(always)]
            fn get(r: &Self::Regs, i: usize) -> $t {
                r[i]
            }
            #[inline(always)]
            fn set(r: &mut Self::Regs, i: usize, v: $t) {
                r[i] = v;
            }
            #[inline(always)]
            fn coords(l: u32, i: usize) -> (usize, usize) {
                let l = l as usize % 32;
                (l / 4 + 8 * (i / 2), 2 * (l % 4) + i % 2)
            }
        }
    };
}

accumulator!(M16N8K8, f32);
accumulator!(M16N8K32, f32);
accumulator!(M16N8K32, i32);

// m16n8k8 TF32 (PTX ISA, "Matrix fragments for mma.m16n8k8" with `.tf32`): one value per
// register. A (16×8): element i of lane 4g + t at (g + 8 (i % 2), t + 4 (i / 2)); B (8×8, K×N):
// element i at (t + 4 i, g).
macro_rules! tf32_operand {
    ($op:ty, $l:ty, $n:literal, $rows:literal, |$lane:ident, $i:ident| $coords:expr) => {
        impl Operand<M16N8K8, tf32, $l> for $op {
            type Regs = [u32; $n];
            const ROWS: usize = $rows;
            const COLS: usize = 8;
            const LEN: usize = $n;
            #[inline(always)]
            fn splat(v: tf32) -> Self::Regs {
                [v.to_bits(); $n]
            }
            #[inline(always)]
            fn get(r: &Self::Regs, i: usize) -> tf32 {
                tf32::from_bits(r[i])
            }
            #[inline(always)]
            fn set(r: &mut Self::Regs, i: usize, v: tf32) {
                r[i] = v.to_bits();
            }
            #[inline(always)]
            fn coords($lane: u32, $i: usize) -> (usize, usize) {
                let ($lane, $i) = ($lane as usize % 32, $i);
                $coords
            }
        }
    };
}

tf32_operand!(MatrixA, RowMajor, 4, 16, |l, i| (l / 4 + 8 * (i % 2), l % 4 + 4 * (i / 2)));
tf32_operand!(MatrixB, ColMajor, 2, 8, |l, i| (l % 4 + 4 * i, l / 4));

// m16n8k32 with 8-bit inputs (PTX ISA, "Matrix fragments for mma.m16n8k32"): four values per
// register. A (16×32): element i of lane 4g + t at (g + 8 ((i / 4) % 2), 4t + i % 4 + 16 (i / 8));
// B (32×8, K×N): element i at (4t + i % 4 + 16 (i / 4), g).
impl<T: Byte8> Operand<M16N8K32, T, RowMajor> for MatrixA {
    type Regs = [u32; 4];
    const ROWS: usize = 16;
    const COLS: usize = 32;
    const LEN: usize = 16;
    #[inline(always)]
    fn splat(v: T) -> Self::Regs {
        [u32::from(v.to_byte()) * 0x0101_0101; 4]
    }
    #[inline(always)]
    fn get(r: &Self::Regs, i: usize) -> T {
        byte_get(r, i)
    }
    #[inline(always)]
    fn set(r: &mut Self::Regs, i: usize, v: T) {
        byte_set(r, i, v)
    }
    #[inline(always)]
    fn coords(l: u32, i: usize) -> (usize, usize) {
        let l = l as usize % 32;
        (l / 4 + 8 * ((i / 4) % 2), 4 * (l % 4) + i % 4 + 16 * (i / 8))
    }
}

impl<T: Byte8> Operand<M16N8K32, T, ColMajor> for MatrixB {
    type Regs = [u32; 2];
    const ROWS: usize = 32;
    const COLS: usize = 8;
    const LEN: usize = 8;
    #[inline(always)]
    fn splat(v: T) -> Self::Regs {
        [u32::from(v.to_byte()) * 0x0101_0101; 2]
    }
    #[inline(always)]
    fn get(r: &Self::Regs, i: usize) -> T {
        byte_get(r, i)
    }
    #[inline(always)]
    fn set(r: &mut Self::Regs, i: usize, v: T) {
        byte_set(r, i, v)
    }
    #[inline(always)]
    fn coords(l: u32, i: usize) -> (usize, usize) {
        let l = l as usize % 32;
        (4 * (l % 4) + i % 4 + 16 * (i / 4), l / 4)
    }
}

impl MmaShape<tf32, tf32, f32> for M16N8K8 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        // SAFETY: forwarded to the caller.
        unsafe { raw::mma_m16n8k8_f32_tf32(a, b, c) }
    }
}

/// The 8-bit integer input pairs of `mma.sync` m16n8k32 with `i32` accumulators, which also
/// have the `.satfinite` form ([`mma_sync_satfinite`](super::mma_sync_satfinite)).
pub trait IntMma<TA, TB>: MmaShape<TA, TB, i32>
where
    MatrixA: Operand<Self, TA, RowMajor>,
    MatrixB: Operand<Self, TB, ColMajor>,
    Accumulator: Operand<Self, i32, RowMajor>,
{
    /// `d = a · b + c` clamped to `i32` (`.satfinite`).
    ///
    /// # Safety
    /// As [`MmaShape::mma`].
    #[doc(hidden)]
    unsafe fn mma_satfinite(a: [u32; 4], b: [u32; 2], c: [i32; 4]) -> [i32; 4];
}

macro_rules! int_mma {
    ($($ta:ty, $tb:ty => $wrap:ident, $sat:ident;)*) => {$(
        impl MmaShape<$ta, $tb, i32> for M16N8K32 {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn mma(a: [u32; 4], b: [u32; 2], c: [i32; 4]) -> [i32; 4] {
                // SAFETY: forwarded to the caller.
                unsafe { raw::$wrap(a, b, c) }
            }
        }
        impl IntMma<$ta, $tb> for M16N8K32 {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn mma_satfinite(a: [u32; 4], b: [u32; 2], c: [i32; 4]) -> [i32; 4] {
                // SAFETY: forwarded to the caller.
                unsafe { raw::$sat(a, b, c) }
            }
        }
    )*};
}

int_mma! {
    i8, i8 => mma_m16n8k32_s32_s8_s8, mma_m16n8k32_s32_s8_s8_satfinite;
    i8, u8 => mma_m16n8k32_s32_s8_u8, mma_m16n8k32_s32_s8_u8_satfinite;
    u8, i8 => mma_m16n8k32_s32_u8_s8, mma_m16n8k32_s32_u8_s8_satfinite;
    u8, u8 => mma_m16n8k32_s32_u8_u8, mma_m16n8k32_s32_u8_u8_satfinite;
}

macro_rules! fp8_mma {
    ($($ta:ty, $tb:ty => $raw:ident;)*) => {$(
        impl MmaShape<$ta, $tb, f32> for M16N8K32 {
            /// sm_89+: below (the sm_80 module), a panic that names the call.
            #[inline(always)]
            #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
            unsafe fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
                #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_89")))]
                {
                    let _ = (a, b, c);
                    panic!("mma_sync: FP8 inputs need sm_89 or newer (this GPU ran the sm_80 module)")
                }
                #[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_89"))]
                // SAFETY: forwarded to the caller; sm_89 on the device (the cfg).
                unsafe {
                    raw::$raw(a, b, c)
                }
            }
        }
    )*};
}

fp8_mma! {
    e4m3, e4m3 => mma_m16n8k32_f32_e4m3_e4m3;
    e4m3, e5m2 => mma_m16n8k32_f32_e4m3_e5m2;
    e5m2, e4m3 => mma_m16n8k32_f32_e5m2_e4m3;
    e5m2, e5m2 => mma_m16n8k32_f32_e5m2_e5m2;
}

//! Floating point: correctly rounded `sqrt` and `fma` (LLVM's intrinsics, so they fold and
//! schedule), and the `.approx` instructions of CUDA's fast-math functions (PTX ISA
//! §"Floating-Point Instructions").

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::host::on_device;

#[cfg(target_arch = "nvptx64")]
#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.fma.f32"]
    fn llvm_fma_f32(a: f32, b: f32, c: f32) -> f32;
    #[link_name = "llvm.fma.f64"]
    fn llvm_fma_f64(a: f64, b: f64, c: f64) -> f64;
    #[link_name = "llvm.sqrt.f32"]
    fn llvm_sqrt_f32(x: f32) -> f32;
    #[link_name = "llvm.sqrt.f64"]
    fn llvm_sqrt_f64(x: f64) -> f64;
}

/// `sqrt.rn.f32`: √x correctly rounded (what nvcc's `sqrtf` compiles to without fast math).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sqrt_rn_f32(x: f32) -> f32 {
    on_device!("raw::sqrt_rn_f32" => {
        // SAFETY: arithmetic only.
        unsafe { llvm_sqrt_f32(x) }
    } host => {
        x.sqrt()
    })
}

/// `sqrt.rn.f64`: √x correctly rounded (`sqrt`).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sqrt_rn_f64(x: f64) -> f64 {
    on_device!("raw::sqrt_rn_f64" => {
        // SAFETY: arithmetic only.
        unsafe { llvm_sqrt_f64(x) }
    } host => {
        x.sqrt()
    })
}

/// `fma.rn.f32`: `a * b + c` rounded once (LLVM's `llvm.fma`, so it folds and schedules).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fma_rn_f32(a: f32, b: f32, c: f32) -> f32 {
    on_device!("raw::fma_rn_f32" => {
        // SAFETY: arithmetic only.
        unsafe { llvm_fma_f32(a, b, c) }
    } host => {
        a.mul_add(b, c)
    })
}

/// `fma.rn.f64`: `a * b + c` rounded once.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fma_rn_f64(a: f64, b: f64, c: f64) -> f64 {
    on_device!("raw::fma_rn_f64" => {
        // SAFETY: arithmetic only.
        unsafe { llvm_fma_f64(a, b, c) }
    } host => {
        a.mul_add(b, c)
    })
}

macro_rules! approx_unary {
    ($($(#[$m:meta])* $name:ident => $ptx:literal, $host:ident;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        #[must_use]
        pub fn $name(x: f32) -> f32 {
            on_device!(stringify!($name) => {
                let r: f32;
                // SAFETY: arithmetic only.
                unsafe { asm!(concat!($ptx, " {0}, {1};"), out(reg32) r, in(reg32) x, options(pure, nomem, nostack)) };
                r
            } host => {
                approx_host::$host(x)
            })
        }
    )*};
}

// On the CPU device each `.approx` instruction is computed as the GPU computes it: ptxas's
// SASS around the `MUFU` bit for bit, the `MUFU` as the exact function rounded (see
// `approx_host` and `fp::fast` for the bounds of the difference).
#[cfg(not(target_arch = "nvptx64"))]
use super::approx_host;

approx_unary! {
    /// `sin.approx.f32` (what `__sinf` compiles to). On the CPU device, the GPU's sequence
    /// (`FMUL.RZ` by 1/2π, `MUFU.SIN`) emulated; see [`crate::fp::fast`].
    sin_approx_f32 => "sin.approx.f32", sin;
    /// `cos.approx.f32` (`__cosf`); on the CPU device as [`sin_approx_f32`].
    cos_approx_f32 => "cos.approx.f32", cos;
    /// `ex2.approx.f32`: 2^x; on the CPU device as [`sin_approx_f32`].
    ex2_approx_f32 => "ex2.approx.f32", ex2;
    /// `lg2.approx.f32`: log2 x; on the CPU device as [`sin_approx_f32`].
    lg2_approx_f32 => "lg2.approx.f32", lg2;
    /// `rsqrt.approx.f32`: 1/√x; on the CPU device as [`sin_approx_f32`].
    rsqrt_approx_f32 => "rsqrt.approx.f32", rsqrt;
    /// `sqrt.approx.f32`; on the CPU device as [`sin_approx_f32`].
    sqrt_approx_f32 => "sqrt.approx.f32", sqrt;
}

/// `div.approx.f32`: `a / b` (what `__fdividef` compiles to), computed as `a · (1/b)`; on the
/// CPU device as [`sin_approx_f32`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn div_approx_f32(a: f32, b: f32) -> f32 {
    on_device!("raw::div_approx_f32" => {
        let r: f32;
        // SAFETY: arithmetic only.
        unsafe { asm!("div.approx.f32 {0}, {1}, {2};", out(reg32) r, in(reg32) a, in(reg32) b, options(pure, nomem, nostack)) };
        r
    } host => {
        approx_host::div(a, b)
    })
}

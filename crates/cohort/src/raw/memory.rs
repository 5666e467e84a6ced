//! State spaces: plain (weak) loads and stores of shared, constant and generic memory, the
//! conversions between a space's addresses and generic ones (`cvta`, `isspacep`), and the PTX
//! variables behind `shared!`, `constant!`, `global!` and dynamic shared memory (PTX ISA
//! §"State Spaces", §"Data Movement and Conversion Instructions").
//!
//! A shared-memory address here is a shared-window address (`u32`, what `mov.u32 %r, var;`
//! gives for a `.shared` variable); a constant or global one is the variable's address in its
//! space (`u64`); the rest take generic addresses. The typed, bounds-checked accesses are
//! [`crate::shared`](mod@crate::shared) and [`crate::global`](mod@crate::global)'s.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::host::on_device;

/// `isspacep.global`: whether the generic address `ptr` lies in global (device) memory, as
/// opposed to shared, local, constant or parameter memory (`__isGlobal`). On the CPU device:
/// whether it lies in one of the device's allocations or `global!` variables, its global
/// memory (`cohort_cpu::is_global`).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn isspacep_global(ptr: *const u8) -> bool {
    on_device!("isspacep_global" => {
        let r: u32;
        // SAFETY: `isspacep` only classifies the address; it reads no memory.
        unsafe {
            asm!(
                "{{ .reg .pred p; isspacep.global p, {a}; selp.u32 {r}, 1, 0, p; }}",
                a = in(reg64) ptr as u64,
                r = out(reg32) r,
                options(pure, nomem, nostack),
            )
        };
        r != 0
    } host => {
        cohort_cpu::is_global(ptr as usize, 1)
    })
}

// ---------------------------------------------------------------------------------------------
// Shared memory

/// The generic address at which the block's shared window begins (`cvta.shared.u64` of 0): a
/// shared address `a` is the generic address `shared_window_base() + a`. On the CPU device, the
/// running block's window (`cohort_cpu::shared_window`).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shared_window_base() -> u64 {
    on_device!("shared::shared_window_base" => {
        let r: u64;
        // SAFETY: address arithmetic only.
        unsafe { asm!("mov.u64 {0}, 0; cvta.shared.u64 {0}, {0};", out(reg64) r, options(pure, nomem, nostack)) };
        r
    } host => { cohort_cpu::shared_window() as u64 })
}

/// The shared-window address of the launch's dynamic shared memory (`extern __shared__`: the
/// `.extern .shared .align 16 .b8 cohort_dynamic_smem[]` that [`crate::shared`](mod@crate::shared)
/// declares); its size is [`dynamic_smem_size`](super::dynamic_smem_size).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn dynamic_smem_addr() -> u32 {
    on_device!("dynamic_smem_addr" => {
        let a: u32;
        // SAFETY: takes the shared-window address of the extern dynamic array.
        unsafe { asm!("mov.u32 {0}, cohort_dynamic_smem;", out(reg32) a, options(pure, nomem, nostack)) };
        a
    } host => { cohort_cpu::dynamic_shared().0 })
}

macro_rules! ld_st_shared {
    ($($ld:ident, $st:ident: $t:ty, $ptx:literal, $class:ident;)*) => {$(
        #[doc = concat!("`ld.shared.", $ptx, "`: the value at shared address `addr`.")]
        ///
        /// # Safety
        /// `addr` is a valid shared-memory address of this block, aligned to the width.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $ld(addr: u32) -> $t {
            on_device!(stringify!($ld) => {
                let v: $t;
                // SAFETY: guaranteed by the caller.
                unsafe { asm!(concat!("ld.shared.", $ptx, " {0}, [{1}];"), out($class) v, in(reg32) addr, options(pure, readonly, nostack)) };
                v
            })
        }

        #[doc = concat!("`st.shared.", $ptx, "`: stores `v` at shared address `addr`.")]
        ///
        /// # Safety
        /// `addr` is a valid shared-memory address of this block, aligned to the width.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $st(addr: u32, v: $t) {
            on_device!(stringify!($st) => {
                // SAFETY: guaranteed by the caller.
                unsafe { asm!(concat!("st.shared.", $ptx, " [{0}], {1};"), in(reg32) addr, in($class) v, options(nostack)) };
            })
        }
    )*};
}

ld_st_shared! {
    ld_shared_b16, st_shared_b16: u16, "b16", reg16;
    ld_shared_b32, st_shared_b32: u32, "b32", reg32;
    ld_shared_b64, st_shared_b64: u64, "b64", reg64;
}

/// `ld.shared.v4.b32`: the 16 bytes at shared address `addr`, as four words.
///
/// # Safety
/// `addr` is a valid, 16-byte aligned shared-memory address of this block.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_shared_v4_b32(addr: u32) -> [u32; 4] {
    on_device!("ld_shared_v4_b32" => {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: guaranteed by the caller.
        unsafe {
            asm!(
                "ld.shared.v4.b32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg32) addr,
                options(pure, readonly, nostack)
            )
        };
        [a, b, c, d]
    })
}

/// `st.shared.v4.b32`: stores four words at shared address `addr`.
///
/// # Safety
/// `addr` is a valid, 16-byte aligned shared-memory address of this block.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn st_shared_v4_b32(addr: u32, [a, b, c, d]: [u32; 4]) {
    on_device!("st_shared_v4_b32" => {
        // SAFETY: guaranteed by the caller.
        unsafe {
            asm!(
                "st.shared.v4.b32 [{0}], {{{1}, {2}, {3}, {4}}};",
                in(reg32) addr, in(reg32) a, in(reg32) b, in(reg32) c, in(reg32) d,
                options(nostack)
            )
        };
    })
}

/// `ld.shared.u8`: the byte at shared address `addr`, zero-extended in the 16-bit register PTX
/// loads a byte into.
///
/// # Safety
/// `addr` is a valid shared-memory address of this block.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_shared_u8(addr: u32) -> u16 {
    on_device!("ld_shared_u8" => {
        let v: u16;
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("ld.shared.u8 {0}, [{1}];", out(reg16) v, in(reg32) addr, options(pure, readonly, nostack)) };
        v
    })
}

/// `st.shared.u8`: stores the low byte of `v` at shared address `addr`.
///
/// # Safety
/// `addr` is a valid shared-memory address of this block.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn st_shared_u8(addr: u32, v: u16) {
    on_device!("st_shared_u8" => {
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("st.shared.u8 [{0}], {1};", in(reg32) addr, in(reg16) v, options(nostack)) };
    })
}

// ---------------------------------------------------------------------------------------------
// Generic loads (the synchronous fallback of `cp.async`)

/// `ld.u8`: the byte at generic address `addr`, zero-extended in a 16-bit register.
///
/// # Safety
/// `addr` is a valid generic address this thread may read, and no write races with the load.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_u8(addr: u64) -> u16 {
    on_device!("ld_u8" => {
        let v: u16;
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("ld.u8 {0}, [{1}];", out(reg16) v, in(reg64) addr, options(readonly, nostack)) };
        v
    })
}

/// `ld.u32`: the `u32` at generic address `addr`.
///
/// # Safety
/// `addr` is a valid, 4-byte aligned generic address this thread may read, and no write races
/// with the load.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_u32(addr: u64) -> u32 {
    on_device!("ld_u32" => {
        let v: u32;
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("ld.u32 {0}, [{1}];", out(reg32) v, in(reg64) addr, options(readonly, nostack)) };
        v
    })
}

// ---------------------------------------------------------------------------------------------
// Constant and global memory (module variables)

/// `cvta.shared.u64`: the generic address of shared-space address `addr` (the same value as
/// [`shared_window_base`]` + addr`, made by one instruction that tells ptxas the address is
/// shared). A generic access of it still costs ptxas 64-bit address arithmetic per access
/// (measured for `ldmatrix`: three instructions each); the `.shared` forms of a 32-bit
/// address, as [`ldmatrix_x4`](super::ldmatrix_x4), take an immediate offset instead.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cvta_shared_u64(addr: u32) -> u64 {
    on_device!("cvta_shared_u64" => {
        let g: u64;
        // SAFETY: address arithmetic only.
        unsafe { asm!("cvta.shared.u64 {g}, {a};", g = out(reg64) g, a = in(reg64) u64::from(addr), options(pure, nomem, nostack)) };
        g
    } host => { shared_window_base().wrapping_add(u64::from(addr)) })
}

/// `cvta.const.u64`: the generic address of constant-space address `addr`.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cvta_const_u64(addr: u64) -> u64 {
    on_device!("cvta_const_u64" => {
        let g: u64;
        // SAFETY: address arithmetic only.
        unsafe { asm!("cvta.const.u64 {g}, {a};", g = out(reg64) g, a = in(reg64) addr, options(pure, nomem, nostack)) };
        g
    })
}

/// `cvta.global.u64`: the generic address of global-space address `addr`.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cvta_global_u64(addr: u64) -> u64 {
    on_device!("cvta_global_u64" => {
        let g: u64;
        // SAFETY: address arithmetic only.
        unsafe { asm!("cvta.global.u64 {g}, {a};", g = out(reg64) g, a = in(reg64) addr, options(pure, nomem, nostack)) };
        g
    })
}

macro_rules! ld_const {
    ($($(#[$m:meta])* $name:ident: $t:ty, $ptx:literal, $class:ident;)*) => {$(
        #[doc = concat!("`", $ptx, "`: the value at constant-space address `addr`.")]
        $(#[$m])*
        ///
        /// # Safety
        /// `addr` is a constant-space address of an initialized value, aligned to the width.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(addr: u64) -> $t {
            on_device!(stringify!($name) => {
                let x: $t;
                // SAFETY: guaranteed by the caller.
                unsafe { asm!(concat!($ptx, " {0}, [{1}];"), out($class) x, in(reg64) addr, options(pure, readonly, nostack)) };
                x
            })
        }
    )*};
}

ld_const! {
    ld_const_b64: u64, "ld.const.b64", reg64;
    ld_const_b32: u32, "ld.const.b32", reg32;
    ld_const_b16: u16, "ld.const.b16", reg16;
    /// The byte zero-extended in a 16-bit register.
    ld_const_u8: u16, "ld.const.u8", reg16;
}

/// `ld.const.v4.b32`: the 16 bytes at constant-space address `addr`, as four words.
///
/// # Safety
/// `addr` is a 16-byte aligned constant-space address of 16 initialized bytes.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_const_v4_b32(addr: u64) -> [u32; 4] {
    on_device!("ld_const_v4_b32" => {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: guaranteed by the caller.
        unsafe {
            asm!("ld.const.v4.b32 {{{0}, {1}, {2}, {3}}}, [{4}];", out(reg32) a, out(reg32) b, out(reg32) c,
                 out(reg32) d, in(reg64) addr, options(pure, readonly, nostack))
        };
        [a, b, c, d]
    })
}

/// The PTX variables of `shared!`, `constant!` and `global!` (code those macros generate; not
/// a public API): declares one (`shared_decl`, `const_decl`, `global_decl`, at item level) or
/// takes the address of one (`shared_addr`: a `u32` shared-window address, `shared_addr_fresh`
/// the same taken afresh at each use; `var_addr`: a `u64`
/// constant- or global-space address); `dynamic_decl` declares the launch's dynamic shared
/// memory, once (in [`crate::shared`](mod@crate::shared)), whose address [`dynamic_smem_addr`]
/// takes. On nvptx64 only.
#[doc(hidden)]
#[macro_export]
#[allow_internal_unstable(asm_experimental_arch)]
macro_rules! __raw_ptx_var {
    (shared_decl $name:ident, $id:expr, $align:expr, $size:expr) => {
        ::core::arch::global_asm!(
            concat!(".shared .align {align} .b8 cohort_shared_", stringify!($name), "_{id}[{size}];"),
            id = const $id,
            align = const $align,
            size = const $size,
        );
    };
    (shared_addr $name:ident, $id:expr) => {{
        let a: u32;
        // SAFETY: takes the shared-window address of the variable `shared_decl` declared.
        unsafe {
            ::core::arch::asm!(
                concat!("mov.u32 {a}, cohort_shared_", stringify!($name), "_{id};"),
                id = const $id,
                a = out(reg32) a,
                options(pure, nomem, nostack)
            )
        };
        a
    }};
    (shared_addr_fresh $name:ident, $id:expr) => {{
        let a: u32;
        // SAFETY: takes the shared-window address of the variable `shared_decl` declared; not
        // `pure`, so LLVM takes it afresh at every use instead of holding it in a register for
        // the whole kernel (checked mode's bookkeeping at a kernel's entry, exit and barriers).
        unsafe {
            ::core::arch::asm!(
                concat!("mov.u32 {a}, cohort_shared_", stringify!($name), "_{id};"),
                id = const $id,
                a = out(reg32) a,
                options(nomem, nostack)
            )
        };
        a
    }};
    (const_decl $name:ident, $align:expr, $size:expr) => {
        ::core::arch::global_asm!(
            concat!(".visible .const .align {align} .b8 ", stringify!($name), "[{size}];"),
            align = const $align,
            size = const $size,
        );
    };
    (global_decl $name:ident, $align:expr, $size:expr) => {
        ::core::arch::global_asm!(
            concat!(".visible .global .align {align} .b8 ", stringify!($name), "[{size}];"),
            align = const $align,
            size = const $size,
        );
    };
    (dynamic_decl) => {
        ::core::arch::global_asm!(".extern .shared .align 16 .b8 cohort_dynamic_smem[];");
    };
    (var_addr $name:ident) => {{
        let a: u64;
        // SAFETY: takes the constant- or global-space address of the variable declared.
        unsafe {
            ::core::arch::asm!(
                concat!("mov.u64 {a}, ", stringify!($name), ";"),
                a = out(reg64) a,
                options(pure, nomem, nostack)
            )
        };
        a
    }};
}

//! Atomics and strong loads and stores: `atom`, `red`, `ld.relaxed/acquire` and
//! `st.relaxed/release`, each with a `.sem`, a `.scope` and a state space (PTX ISA §"Memory
//! Consistency Model", §"atom", §"red", §"ld", §"st").
//!
//! The families (`atom_add_u32`, `ld_scoped_b32`, …) take the ordering, the [`Scope`] and the
//! [`SpaceKind`] as values and emit the one instruction with exactly those qualifiers:
//! `Relaxed` → `.relaxed`, `Acquire` → `.acquire`, `Release` → `.release`, `AcqRel` and
//! `SeqCst` → `.acq_rel` (a load takes `.relaxed` or `.acquire`, a store or a `red` `.relaxed`
//! or `.release`: any other ordering gives the stronger of the two). `SeqCst`'s leading
//! `fence.sc` is the caller's ([`fence_sc`](super::fence_sc)). Each choice is a `match` that
//! folds to one arm when the arguments are constants after inlining, as they are in
//! [`crate::atomic`]. The address is the generic one for [`SpaceKind::Global`] (converted with
//! `cvta.to.global`) and [`SpaceKind::Generic`], the shared-window address (the generic address
//! minus the window's base, [`shared_window_base`](super::shared_window_base)) for
//! [`SpaceKind::Shared`].
//!
//! The grid barrier's and the multi-grid barrier's fixed forms (`ld.acquire.gpu.u32`,
//! `atom.add.release.gpu.u32`, `ld.acquire.sys.u32`, …) are functions of their own.
//!
//! # Safety (every function here)
//! `addr` is the address, in the state space named (or implied), of a value of the
//! instruction's width that this thread may read and write, aligned to that width, and every
//! access to it that may race with this one is atomic (an `atom`, `red`, or strong `ld`/`st`).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
use core::sync::atomic::Ordering;

use crate::host::on_device;

/// How far a fence or an atomic operation's ordering reaches (PTX's `.scope`; CUDA's
/// `cuda::thread_scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The threads of one block (`.cta`; CUDA's `thread_scope_block`).
    Block,
    /// Every thread on this GPU (`.gpu`; `thread_scope_device`).
    Device,
    /// Every thread on every GPU and the host (`.sys`; `thread_scope_system`).
    System,
}

/// The state space of an atomic ([`crate::atomic::Atomic`]), as a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpaceKind {
    /// `.global`: device memory (`cudaMalloc`, kernel parameters).
    Global,
    /// `.shared`: the block's shared memory.
    Shared,
    /// Generic addressing: the hardware finds out at run time (a little slower).
    Generic,
}

/// Expands `$m!(sem, scope, cvta, space; args…)` for the run-time (`order`, `scope`, space)
/// triple; every choice is a constant after inlining, so one arm survives.
#[cfg(target_arch = "nvptx64")]
macro_rules! dispatch {
    // read-modify-write: all four PTX orderings
    ($order:expr, $scope:expr, $space:expr, $m:ident; $($args:tt)*) => {
        match $order {
            Ordering::Relaxed => dispatch!(@scope "relaxed", $scope, $space, $m; $($args)*),
            Ordering::Acquire => dispatch!(@scope "acquire", $scope, $space, $m; $($args)*),
            Ordering::Release => dispatch!(@scope "release", $scope, $space, $m; $($args)*),
            _ => dispatch!(@scope "acq_rel", $scope, $space, $m; $($args)*),
        }
    };
    // loads: relaxed or acquire only (so no invalid PTX exists even in dead arms)
    (load $order:expr, $scope:expr, $space:expr, $m:ident; $($args:tt)*) => {
        match $order {
            Ordering::Relaxed => dispatch!(@scope "relaxed", $scope, $space, $m; $($args)*),
            _ => dispatch!(@scope "acquire", $scope, $space, $m; $($args)*),
        }
    };
    // stores and reductions: relaxed or release only
    (store $order:expr, $scope:expr, $space:expr, $m:ident; $($args:tt)*) => {
        match $order {
            Ordering::Relaxed => dispatch!(@scope "relaxed", $scope, $space, $m; $($args)*),
            _ => dispatch!(@scope "release", $scope, $space, $m; $($args)*),
        }
    };
    (@scope $sem:literal, $scope:expr, $space:expr, $m:ident; $($args:tt)*) => {
        match $scope {
            Scope::Block => dispatch!(@space $sem, "cta", $space, $m; $($args)*),
            Scope::Device => dispatch!(@space $sem, "gpu", $space, $m; $($args)*),
            Scope::System => dispatch!(@space $sem, "sys", $space, $m; $($args)*),
        }
    };
    (@space $sem:literal, $sc:literal, $space:expr, $m:ident; $($args:tt)*) => {
        match $space {
            SpaceKind::Global => $m!($sem, $sc, "cvta.to.global.u64 %cohort_a, {p};", ".global"; $($args)*),
            SpaceKind::Shared => $m!($sem, $sc, "mov.b64 %cohort_a, {p};", ".shared"; $($args)*),
            SpaceKind::Generic => $m!($sem, $sc, "mov.b64 %cohort_a, {p};", ""; $($args)*),
        }
    };
}

/// `atom.<sem>.<scope><space>.<op>.<ty> r, [p], v;`
#[cfg(target_arch = "nvptx64")]
macro_rules! atom2 {
    ($sem:literal, $sc:literal, $cvta:literal, $sp:literal; $op:literal, $ty:literal, $class:ident, $p:expr, $v:expr, $t:ty) => {{
        let r: $t;
        // SAFETY: the caller's contract (see the module docs).
        unsafe {
            asm!(
                concat!("{{ .reg .b64 %cohort_a; ", $cvta, " atom.", $sem, ".", $sc, $sp, ".", $op, ".", $ty, " {r}, [%cohort_a], {v}; }}"),
                p = in(reg64) $p, v = in($class) $v, r = out($class) r, options(nostack)
            )
        };
        r
    }};
}

/// `red.<sem>.<scope><space>.<op>.<ty> [p], v;` (`sem` is relaxed or release).
#[cfg(target_arch = "nvptx64")]
macro_rules! red {
    ($sem:literal, $sc:literal, $cvta:literal, $sp:literal; $op:literal, $ty:literal, $class:ident, $p:expr, $v:expr) => {{
        // SAFETY: as for `atom2!`.
        unsafe {
            asm!(
                concat!("{{ .reg .b64 %cohort_a; ", $cvta, " red.", $sem, ".", $sc, $sp, ".", $op, ".", $ty, " [%cohort_a], {v}; }}"),
                p = in(reg64) $p, v = in($class) $v, options(nostack)
            )
        };
    }};
}

/// `atom.<sem>.<scope><space>.cas.<ty> r, [p], c, n;`
#[cfg(target_arch = "nvptx64")]
macro_rules! cas {
    ($sem:literal, $sc:literal, $cvta:literal, $sp:literal; $ty:literal, $class:ident, $p:expr, $c:expr, $n:expr, $t:ty) => {{
        let r: $t;
        // SAFETY: as for `atom2!`.
        unsafe {
            asm!(
                concat!("{{ .reg .b64 %cohort_a; ", $cvta, " atom.", $sem, ".", $sc, $sp, ".cas.", $ty, " {r}, [%cohort_a], {c}, {n}; }}"),
                p = in(reg64) $p, c = in($class) $c, n = in($class) $n, r = out($class) r, options(nostack)
            )
        };
        r
    }};
}

/// `ld.<sem>.<scope><space>.<ty> r, [p];` (`sem` is relaxed or acquire).
#[cfg(target_arch = "nvptx64")]
macro_rules! ld {
    ($sem:literal, $sc:literal, $cvta:literal, $sp:literal; $ty:literal, $class:ident, $p:expr, $t:ty) => {{
        let r: $t;
        // SAFETY: as for `atom2!`.
        unsafe {
            asm!(
                concat!("{{ .reg .b64 %cohort_a; ", $cvta, " ld.", $sem, ".", $sc, $sp, ".", $ty, " {r}, [%cohort_a]; }}"),
                p = in(reg64) $p, r = out($class) r, options(nostack)
            )
        };
        r
    }};
}

/// `st.<sem>.<scope><space>.<ty> [p], v;` (`sem` is relaxed or release).
#[cfg(target_arch = "nvptx64")]
macro_rules! st {
    ($sem:literal, $sc:literal, $cvta:literal, $sp:literal; $ty:literal, $class:ident, $p:expr, $v:expr) => {{
        // SAFETY: as for `atom2!`.
        unsafe {
            asm!(
                concat!("{{ .reg .b64 %cohort_a; ", $cvta, " st.", $sem, ".", $sc, $sp, ".", $ty, " [%cohort_a], {v}; }}"),
                p = in(reg64) $p, v = in($class) $v, options(nostack)
            )
        };
    }};
}

macro_rules! atom_fns {
    ($($name:ident: $op:literal, $ty:literal, $t:ty, $class:ident;)*) => {$(
        #[doc = concat!("`atom.<sem>.<scope><space>.", $op, ".", $ty, " r, [addr], v`: returns the previous value.")]
        ///
        /// # Safety
        /// See the [module docs](self).
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(addr: u64, v: $t, order: Ordering, scope: Scope, space: SpaceKind) -> $t {
            on_device!(stringify!($name) => {
                dispatch!(order, scope, space, atom2; $op, $ty, $class, addr, v, $t)
            })
        }
    )*};
}

atom_fns! {
    atom_add_u32: "add", "u32", u32, reg32;
    atom_add_u64: "add", "u64", u64, reg64;
    atom_add_f32: "add", "f32", f32, reg32;
    atom_add_f64: "add", "f64", f64, reg64;
    atom_min_u32: "min", "u32", u32, reg32;
    atom_min_s32: "min", "s32", i32, reg32;
    atom_min_u64: "min", "u64", u64, reg64;
    atom_min_s64: "min", "s64", i64, reg64;
    atom_max_u32: "max", "u32", u32, reg32;
    atom_max_s32: "max", "s32", i32, reg32;
    atom_max_u64: "max", "u64", u64, reg64;
    atom_max_s64: "max", "s64", i64, reg64;
    atom_and_b32: "and", "b32", u32, reg32;
    atom_and_b64: "and", "b64", u64, reg64;
    atom_or_b32: "or", "b32", u32, reg32;
    atom_or_b64: "or", "b64", u64, reg64;
    atom_xor_b32: "xor", "b32", u32, reg32;
    atom_xor_b64: "xor", "b64", u64, reg64;
    atom_exch_b32: "exch", "b32", u32, reg32;
    atom_exch_b64: "exch", "b64", u64, reg64;
    atom_inc_u32: "inc", "u32", u32, reg32;
    atom_dec_u32: "dec", "u32", u32, reg32;
}

macro_rules! red_fns {
    ($($name:ident: $op:literal, $ty:literal, $t:ty, $class:ident;)*) => {$(
        #[doc = concat!("`red.<sem>.<scope><space>.", $op, ".", $ty, " [addr], v` (`.relaxed`, or `.release` for any other ordering).")]
        ///
        /// # Safety
        /// See the [module docs](self).
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(addr: u64, v: $t, order: Ordering, scope: Scope, space: SpaceKind) {
            on_device!(stringify!($name) => {
                dispatch!(store order, scope, space, red; $op, $ty, $class, addr, v)
            })
        }
    )*};
}

red_fns! {
    red_add_u32: "add", "u32", u32, reg32;
    red_add_u64: "add", "u64", u64, reg64;
    red_add_f32: "add", "f32", f32, reg32;
    red_add_f64: "add", "f64", f64, reg64;
}

macro_rules! width_fns {
    ($($cas:ident, $ld:ident, $st:ident: $ty:literal, $t:ty, $class:ident;)*) => {$(
        #[doc = concat!("`atom.<sem>.<scope><space>.cas.", $ty, " r, [addr], current, new`: returns the previous value (`new` was stored when it equals `current`).")]
        ///
        /// # Safety
        /// See the [module docs](self).
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $cas(addr: u64, current: $t, new: $t, order: Ordering, scope: Scope, space: SpaceKind) -> $t {
            on_device!(stringify!($cas) => {
                dispatch!(order, scope, space, cas; $ty, $class, addr, current, new, $t)
            })
        }

        #[doc = concat!("`ld.<sem>.<scope><space>.", $ty, " r, [addr]` (`.relaxed`, or `.acquire` for any other ordering).")]
        ///
        /// # Safety
        /// See the [module docs](self).
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $ld(addr: u64, order: Ordering, scope: Scope, space: SpaceKind) -> $t {
            on_device!(stringify!($ld) => {
                dispatch!(load order, scope, space, ld; $ty, $class, addr, $t)
            })
        }

        #[doc = concat!("`st.<sem>.<scope><space>.", $ty, " [addr], v` (`.relaxed`, or `.release` for any other ordering).")]
        ///
        /// # Safety
        /// See the [module docs](self).
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $st(addr: u64, v: $t, order: Ordering, scope: Scope, space: SpaceKind) {
            on_device!(stringify!($st) => {
                dispatch!(store order, scope, space, st; $ty, $class, addr, v)
            })
        }
    )*};
}

width_fns! {
    atom_cas_b32, ld_scoped_b32, st_scoped_b32: "b32", u32, reg32;
    atom_cas_b64, ld_scoped_b64, st_scoped_b64: "b64", u64, reg64;
}

// ---------------------------------------------------------------------------------------------
// Fixed forms: the grid barrier (`cg::GridGroup::sync`, at GPU scope on the driver's or a
// `GridVec`'s word) and the multi-grid barrier (system scope, in host-mapped or peer memory).

/// `ld.relaxed.gpu.u32`: the `u32` at generic address `addr`, relaxed at GPU scope.
///
/// # Safety
/// See the [module docs](self).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_relaxed_gpu_u32(addr: u64) -> u32 {
    on_device!("ld_relaxed_gpu_u32" => {
        let v: u32;
        // SAFETY: the caller's contract.
        unsafe { asm!("ld.relaxed.gpu.u32 {0}, [{1}];", out(reg32) v, in(reg64) addr, options(nostack)) };
        v
    })
}

/// `ld.acquire.gpu.u32`: the `u32` at generic address `addr`, acquire at GPU scope.
///
/// # Safety
/// See the [module docs](self).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_acquire_gpu_u32(addr: u64) -> u32 {
    on_device!("ld_acquire_gpu_u32" => {
        let v: u32;
        // SAFETY: the caller's contract.
        unsafe { asm!("ld.acquire.gpu.u32 {0}, [{1}];", out(reg32) v, in(reg64) addr, options(nostack)) };
        v
    })
}

/// `atom.add.release.gpu.u32`: adds `v` to the `u32` at generic address `addr`, release at GPU
/// scope; returns the previous value.
///
/// # Safety
/// See the [module docs](self).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atom_add_release_gpu_u32(addr: u64, v: u32) -> u32 {
    on_device!("atom_add_release_gpu_u32" => {
        let old: u32;
        // SAFETY: the caller's contract.
        unsafe { asm!("atom.add.release.gpu.u32 {0}, [{1}], {2};", out(reg32) old, in(reg64) addr, in(reg32) v, options(nostack)) };
        old
    })
}

/// `ld.acquire.sys.u32`: loads the `u32` at generic address `addr` with acquire semantics at
/// system scope (every GPU and the CPU), as NVIDIA's multi-device samples read arrival flags in
/// host-mapped memory.
///
/// # Safety
/// `addr` must be a valid, 4-byte aligned address of memory this thread may read (global,
/// peer or host-mapped), and every concurrent write to it must be atomic (a `st.release` /
/// `st.relaxed` / atomic of the same size), or the load races.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_acquire_sys_u32(addr: *const u32) -> u32 {
    on_device!("ld_acquire_sys_u32" => {
        let v: u32;
        // SAFETY: the caller's contract.
        unsafe { asm!("ld.acquire.sys.u32 {0}, [{1}];", out(reg32) v, in(reg64) addr, options(nostack)) };
        v
    } host => {
        // SAFETY: the caller's contract: valid, aligned, accessed only atomically.
        unsafe { core::sync::atomic::AtomicU32::from_ptr(addr.cast_mut()) }.load(core::sync::atomic::Ordering::Acquire)
    })
}

/// `st.release.sys.u32`: stores `value` to the `u32` at generic address `addr` with release
/// semantics at system scope (the arrival flags of a multi-grid barrier).
///
/// # Safety
/// `addr` must be a valid, 4-byte aligned address of memory this thread may write (global,
/// peer or host-mapped), and every concurrent access to it must be atomic.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn st_release_sys_u32(addr: *mut u32, value: u32) {
    on_device!("st_release_sys_u32" => {
        // SAFETY: the caller's contract.
        unsafe { asm!("st.release.sys.u32 [{0}], {1};", in(reg64) addr, in(reg32) value, options(nostack)) }
    } host => {
        // SAFETY: the caller's contract: valid, aligned, accessed only atomically.
        unsafe { core::sync::atomic::AtomicU32::from_ptr(addr) }.store(value, core::sync::atomic::Ordering::Release)
    })
}

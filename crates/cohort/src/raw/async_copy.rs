//! Asynchronous copies from global to shared memory (`cp.async`, sm_80; PTX ISA
//! §"Data Movement and Conversion Instructions: cp.async"), in the groups a thread commits and
//! waits for. The safe form is [`crate::cg::memcpy_async`].

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::host::on_device;

macro_rules! cp_async {
    ($($(#[$m:meta])* $name:ident => $ptx:literal;)*) => {$(
        $(#[$m])*
        ///
        /// # Safety
        /// sm_80+. `dst` is a valid shared-memory address of this block and `src` a generic
        /// address of global memory (anything else faults), both aligned to the size copied;
        /// nothing reads or writes the destination until a wait covers this copy's group, and
        /// nothing writes the source meanwhile.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(dst: u32, src: u64) {
            on_device!(stringify!($name) => {
                // SAFETY: guaranteed by the caller.
                unsafe { asm!($ptx, in(reg32) dst, in(reg64) src, options(nostack)) }
            })
        }
    )*};
}

cp_async! {
    /// `cp.async.cg.shared.global [dst], [src], 16`: 16 bytes, cached in L2 only (the global
    /// address converted with `cvta.to.global`).
    cp_async_cg_shared_global_16 => "{{ .reg .b64 %cohort_g; cvta.to.global.u64 %cohort_g, {1}; cp.async.cg.shared.global [{0}], [%cohort_g], 16; }}";
    /// `cp.async.ca.shared.global [dst], [src], 8`: 8 bytes, cached in L1 and L2.
    cp_async_ca_shared_global_8 => "{{ .reg .b64 %cohort_g; cvta.to.global.u64 %cohort_g, {1}; cp.async.ca.shared.global [{0}], [%cohort_g], 8; }}";
    /// `cp.async.ca.shared.global [dst], [src], 4`: 4 bytes, cached in L1 and L2.
    cp_async_ca_shared_global_4 => "{{ .reg .b64 %cohort_g; cvta.to.global.u64 %cohort_g, {1}; cp.async.ca.shared.global [{0}], [%cohort_g], 4; }}";
}

/// `cp.async.commit_group`: closes this thread's group of copies started since the last one
/// (an empty group too).
///
/// # Safety
/// sm_80+.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_commit_group() {
    on_device!("cp_async_commit_group" => {
        // SAFETY: committing has no precondition beyond the architecture (the caller's).
        unsafe { asm!("cp.async.commit_group;", options(nostack)) }
    })
}

/// `cp.async.wait_all`: waits until every copy of this thread has completed.
///
/// # Safety
/// sm_80+.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_wait_all() {
    on_device!("cp_async_wait_all" => {
        // SAFETY: waiting has no precondition beyond the architecture (the caller's).
        unsafe { asm!("cp.async.wait_all;", options(nostack)) }
    })
}

/// `cp.async.wait_group N`: waits until at most `N` of this thread's most recent committed
/// groups are still in flight (the operand is an immediate: one instruction per `N`).
///
/// # Safety
/// sm_80+.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_wait_group<const N: u32>() {
    on_device!("cp_async_wait_group" => {
        // SAFETY: waiting has no precondition beyond the architecture (the caller's).
        unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack)) }
    })
}

//! Block barriers (`barrier.sync`, `barrier.red`, named barriers), the warp barrier
//! (`bar.warp.sync`) and the shared-memory phase barrier (`mbarrier`) (PTX ISA §"Parallel
//! Synchronization and Communication Instructions").
//!
//! The barriers are LLVM's NVVM intrinsics, which LLVM knows are `convergent` (see
//! [`crate::raw`]); `mbarrier` is per-thread and inline assembly.

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
use core::arch::asm;

use crate::host::on_device;

#[cfg(target_arch = "nvptx64")]
#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.barrier.sync"]
    fn nvvm_barrier_sync(id: u32);
    // The non-aligned `barrier.red` forms (LLVM's `.all` variants: every thread of the CTA
    // takes part, reaching it from any instruction): `bar.red` (`.aligned`) is undefined when
    // the warps of the block reach the barrier at different sites.
    #[link_name = "llvm.nvvm.barrier.cta.red.popc.all"]
    fn nvvm_barrier_red_popc(id: u32, p: bool) -> u32;
    #[link_name = "llvm.nvvm.barrier.cta.red.and.all"]
    fn nvvm_barrier_red_and(id: u32, p: bool) -> bool;
    #[link_name = "llvm.nvvm.barrier.cta.red.or.all"]
    fn nvvm_barrier_red_or(id: u32, p: bool) -> bool;
    #[link_name = "llvm.nvvm.barrier.sync.cnt"]
    fn nvvm_barrier_sync_cnt(id: u32, count: u32);
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn nvvm_bar_warp_sync(mask: u32);
}

/// `barrier.sync 0`: waits until every thread of the block arrives (`__syncthreads()`).
///
/// This is the non-`.aligned` form: correct even when a warp reaches it diverged (as after a
/// spin loop in which lanes leave at different times), which rustc-generated control flow
/// does not rule out. CUDA C++'s `__syncthreads()` emits the aligned `bar.sync 0`.
///
/// # Safety
/// Every non-exited thread of the block must reach this same barrier, or the block deadlocks
/// (or, on sm_70+, behaves as documented for divergent barriers: undefined).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_sync() {
    on_device!("barrier_sync" => {
        // SAFETY: the caller upholds the barrier contract.
        unsafe { nvvm_barrier_sync(0) }
    } host => {
        super::mark_instruction();
        cohort_cpu::sync_threads()
    })
}

/// `barrier.sync id` (non-`.aligned`, no count): a named barrier for every thread of the block,
/// which, like barrier 0, is released when the only threads missing have exited.
///
/// # Safety
/// Every non-exited thread of the block must reach barrier `id` (0..16), and no thread may use
/// `id` with a thread count meanwhile.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_sync_all(id: u32) {
    on_device!("barrier_sync_all" => {
        // SAFETY: the caller upholds the barrier contract.
        unsafe { nvvm_barrier_sync(id) }
    } host => {
        super::mark_instruction();
        cohort_cpu::barrier_named(id, super::ntid_x() * super::ntid_y() * super::ntid_z())
    })
}

/// `barrier.sync id, count`: a named barrier for `count` threads (a multiple of 32).
///
/// # Safety
/// Exactly `count` threads (whole warps) must arrive at barrier `id` (0..16).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_sync_named(id: u32, count: u32) {
    on_device!("barrier_sync_named" => {
        // SAFETY: the caller upholds the barrier contract.
        unsafe { nvvm_barrier_sync_cnt(id, count) }
    } host => {
        super::mark_instruction();
        cohort_cpu::barrier_named(id, count)
    })
}

/// `barrier.red.popc.u32` (non-aligned): block barrier that returns how many threads passed `pred`
/// (`__syncthreads_count`).
///
/// # Safety
/// As for [`barrier_sync`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_sync_count(pred: bool) -> u32 {
    on_device!("barrier_sync_count" => {
        // SAFETY: the caller upholds the barrier contract.
        unsafe { nvvm_barrier_red_popc(0, pred) }
    } host => {
        super::mark_instruction();
        cohort_cpu::sync_threads_count(pred)
    })
}

/// `barrier.red.and.pred` (non-aligned): block barrier returning whether `pred` held in every thread
/// (`__syncthreads_and`).
///
/// # Safety
/// As for [`barrier_sync`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_sync_and(pred: bool) -> bool {
    on_device!("barrier_sync_and" => {
        // SAFETY: the caller upholds the barrier contract.
        unsafe { nvvm_barrier_red_and(0, pred) }
    } host => {
        super::mark_instruction();
        cohort_cpu::sync_threads_and(pred)
    })
}

/// `barrier.red.or.pred` (non-aligned): block barrier returning whether `pred` held in any thread
/// (`__syncthreads_or`).
///
/// # Safety
/// As for [`barrier_sync`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_sync_or(pred: bool) -> bool {
    on_device!("barrier_sync_or" => {
        // SAFETY: the caller upholds the barrier contract.
        unsafe { nvvm_barrier_red_or(0, pred) }
    } host => {
        super::mark_instruction();
        cohort_cpu::sync_threads_or(pred)
    })
}

/// `bar.warp.sync mask` (`__syncwarp(mask)`): the lanes in `mask` wait for each other and
/// order their memory accesses.
///
/// # Safety
/// Every lane in `mask` must execute a `bar.warp.sync` with the same mask, and the calling
/// lane must be in `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn bar_warp_sync(mask: u32) {
    on_device!("bar_warp_sync" => {
        // SAFETY: the caller upholds the warp-barrier contract.
        unsafe { nvvm_bar_warp_sync(mask) }
    } host => {
        super::mark_instruction();
        cohort_cpu::sync_warp(mask)
    })
}

// ---------------------------------------------------------------------------------------------
// The block's phase barrier (`mbarrier`, sm_80)

/// `mbarrier.init.shared.b64 [addr], count` (sm_80): makes the 8 bytes at shared address
/// `addr` an mbarrier that completes a phase when `count` arrivals have been made.
///
/// # Safety
/// sm_80+; `addr` is an 8-byte aligned shared-memory address that no thread uses as an
/// mbarrier meanwhile, and every thread that will use it is ordered after this (a block
/// barrier) before it does.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
#[inline(always)]
#[cfg_attr(not(cohort_checked), allow(dead_code))] // only checked mode's phase barrier uses it
pub(crate) unsafe fn mbarrier_init(addr: u32, count: u32) {
    // SAFETY: the caller's contract.
    unsafe { asm!("mbarrier.init.shared.b64 [{0}], {1};", in(reg32) addr, in(reg32) count, options(nostack)) }
}

/// `mbarrier.arrive.shared.b64` (sm_80; release at block scope): this thread's arrival on the
/// mbarrier at `addr`; returns the state to wait with ([`mbarrier_wait_done`]).
///
/// # Safety
/// sm_80+; `addr` holds an initialized mbarrier whose current phase still expects an arrival.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
#[inline(always)]
#[must_use]
#[cfg_attr(not(cohort_checked), allow(dead_code))] // only checked mode's phase barrier uses it
pub(crate) unsafe fn mbarrier_arrive(addr: u32) -> u64 {
    let state: u64;
    // SAFETY: the caller's contract.
    unsafe { asm!("mbarrier.arrive.shared.b64 {0}, [{1}];", out(reg64) state, in(reg32) addr, options(nostack)) };
    state
}

/// Whether the mbarrier phase that `state` (from [`mbarrier_arrive`]) belongs to has completed
/// (acquire at block scope): `mbarrier.try_wait` on sm_90 (the thread may sleep in hardware
/// until then, or a time limit of the hardware's), `mbarrier.test_wait` before.
///
/// # Safety
/// sm_80+; `addr` holds the initialized mbarrier that `state` came from.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
#[inline(always)]
#[must_use]
#[cfg_attr(not(cohort_checked), allow(dead_code))] // only checked mode's phase barrier uses it
pub(crate) unsafe fn mbarrier_wait_done(addr: u32, state: u64) -> bool {
    let done: u32;
    macro_rules! wait {
        ($ins:literal) => {
            // SAFETY: the caller's contract.
            unsafe {
                asm!(
                    concat!("{{ .reg .pred p; ", $ins, " p, [{a}], {s}; selp.u32 {d}, 1, 0, p; }}"),
                    a = in(reg32) addr,
                    s = in(reg64) state,
                    d = out(reg32) done,
                    options(nostack),
                )
            }
        };
    }
    #[cfg(target_feature = "sm_90")]
    wait!("mbarrier.try_wait.shared.b64");
    #[cfg(not(target_feature = "sm_90"))]
    wait!("mbarrier.test_wait.shared.b64");
    done != 0
}

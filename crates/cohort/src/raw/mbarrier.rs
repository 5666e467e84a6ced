//! Asynchronous barriers in shared memory (`mbarrier`, PTX ISA §"Parallel Synchronization and
//! Communication Instructions: mbarrier") and the asynchronous copies that complete on them:
//! `cp.async.mbarrier.arrive` (sm_80) and the bulk copy `cp.async.bulk` (sm_90). The safe form
//! is [`crate::cg::AsyncBarrier`].
//!
//! On the CPU device each function calls the engine's mbarrier model (`cohort_cpu::mbarrier_*`),
//! which keeps phases, arrival and transaction counts and names misuse; copies are made when
//! they are issued and complete their bytes at once.
//!
//! The phase a wait is for is given as its *number* (phases counted from the barrier's
//! `init`): the GPU uses its parity (`.parity` forms), the CPU device the whole number (so it
//! can tell a wait for a phase long gone).

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
use core::arch::asm;

use crate::host::on_device;

/// `mbarrier.init.shared::cta.b64 [addr], count`: makes the 8 bytes at shared address `addr` an
/// mbarrier at phase 0 that completes a phase when `count` arrivals have been made (and its
/// transaction count is zero).
///
/// # Safety
/// sm_80+; `addr` is an 8-byte aligned shared-memory address of this block that nothing else
/// uses meanwhile and no thread uses as a live mbarrier; `count` is in 1 ..= 2^20 - 1; every
/// thread that uses it is ordered after this (a block barrier) before it does.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mbarrier_init_shared(addr: u32, count: u32) {
    on_device!("mbarrier_init_shared" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: the caller's contract.
        unsafe { asm!("mbarrier.init.shared.b64 [{0}], {1};", in(reg32) addr, in(reg32) count, options(nostack)) }
        #[cfg(not(target_feature = "sm_80"))]
        { let _ = (addr, count); crate::raw::trap() }
    } host => {
        cohort_cpu::mbarrier_init(addr, count)
    })
}

/// `mbarrier.inval.shared::cta.b64 [addr]`: the mbarrier at `addr` is no longer one; its 8
/// bytes may be used again (for another `init`).
///
/// # Safety
/// sm_80+; `addr` holds an mbarrier that no thread uses any more and on which no copy is
/// pending.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mbarrier_inval_shared(addr: u32) {
    on_device!("mbarrier_inval_shared" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: the caller's contract.
        unsafe { asm!("mbarrier.inval.shared.b64 [{0}];", in(reg32) addr, options(nostack)) }
        #[cfg(not(target_feature = "sm_80"))]
        { let _ = addr; crate::raw::trap() }
    } host => {
        cohort_cpu::mbarrier_inval(addr)
    })
}

/// `mbarrier.arrive.shared::cta.b64` (release at block scope): this thread's arrival on the
/// current phase. Returns the phase arrived on, as the CPU device counts it (on a GPU: 0; the
/// caller counts phases itself).
///
/// # Safety
/// sm_80+; `addr` holds a live mbarrier whose current phase still expects an arrival.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mbarrier_arrive_shared(addr: u32) -> u64 {
    on_device!("mbarrier_arrive_shared" => {
        #[cfg(target_feature = "sm_80")]
        {
            // SAFETY: the caller's contract.
            unsafe { asm!("{{ .reg .b64 %cohort_s; mbarrier.arrive.shared.b64 %cohort_s, [{0}]; }}", in(reg32) addr, options(nostack)) };
            0
        }
        #[cfg(not(target_feature = "sm_80"))]
        { let _ = addr; crate::raw::trap() }
    } host => {
        cohort_cpu::mbarrier_arrive(addr, 0, false)
    })
}

/// [`mbarrier_arrive_shared`] predicated on `pred` (`@p mbarrier.arrive…`): a thread of a
/// converged group arrives without a branch around it (CUTLASS's `ClusterBarrier::arrive(…,
/// pred)`; `wgmma` code must not branch on per-thread values between its MMAs, or ptxas
/// serializes them).
///
/// # Safety
/// As [`mbarrier_arrive_shared`] when `pred`; nothing otherwise.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mbarrier_arrive_shared_if(addr: u32, pred: bool) {
    on_device!("mbarrier_arrive_shared_if" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: the caller's contract.
        unsafe {
            asm!(
                "{{ .reg .pred %cohort_q; .reg .b64 %cohort_s; setp.ne.b32 %cohort_q, {1}, 0; @%cohort_q mbarrier.arrive.shared.b64 %cohort_s, [{0}]; }}",
                in(reg32) addr, in(reg32) u32::from(pred), options(nostack)
            )
        }
        #[cfg(not(target_feature = "sm_80"))]
        { let _ = (addr, pred); crate::raw::trap() }
    } host => {
        if pred {
            let _ = cohort_cpu::mbarrier_arrive(addr, 0, false);
        }
    })
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], tx` (sm_90): raises the current
/// phase's transaction count by `tx` bytes and arrives, in one step. Returns the phase arrived
/// on (CPU device; 0 on a GPU).
///
/// # Safety
/// sm_90+; as [`mbarrier_arrive_shared`]; the pending transaction count stays within
/// 2^20 - 1.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mbarrier_arrive_expect_tx_shared(addr: u32, tx: u32) -> u64 {
    on_device!("mbarrier_arrive_expect_tx_shared" => {
        #[cfg(target_feature = "sm_90")]
        {
            // SAFETY: the caller's contract.
            unsafe {
                asm!(
                    "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{0}], {1};",
                    in(reg32) addr,
                    in(reg32) tx,
                    options(nostack)
                )
            };
            0
        }
        #[cfg(not(target_feature = "sm_90"))]
        { let _ = (addr, tx); crate::raw::trap() }
    } host => {
        cohort_cpu::mbarrier_arrive(addr, tx, false)
    })
}

/// `mbarrier.arrive_drop.shared::cta.b64`: arrives on the current phase and lowers the count
/// the barrier expects, from the next phase on, by one (the thread leaves the barrier).
///
/// # Safety
/// As [`mbarrier_arrive_shared`]; the thread does not arrive on this barrier again.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mbarrier_arrive_drop_shared(addr: u32) {
    on_device!("mbarrier_arrive_drop_shared" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: the caller's contract.
        unsafe { asm!("{{ .reg .b64 %cohort_s; mbarrier.arrive_drop.shared.b64 %cohort_s, [{0}]; }}", in(reg32) addr, options(nostack)) }
        #[cfg(not(target_feature = "sm_80"))]
        { let _ = addr; crate::raw::trap() }
    } host => {
        let _ = cohort_cpu::mbarrier_arrive(addr, 0, true);
    })
}

/// Whether phase `phase` of the mbarrier at `addr` has completed (acquire at block scope):
/// `mbarrier.try_wait.parity` on sm_90 (the thread may sleep in hardware for a while first),
/// `mbarrier.test_wait.parity` on sm_80, with `phase`'s parity.
///
/// # Safety
/// sm_80+; `addr` holds a live mbarrier whose current phase is `phase` or `phase + 1` (a
/// parity names one of the two).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mbarrier_wait_parity_shared(addr: u32, phase: u64) -> bool {
    on_device!("mbarrier_wait_parity_shared" => {
        #[cfg(target_feature = "sm_80")]
        {
            let parity = (phase & 1) as u32;
            let done: u32;
            #[cfg(target_feature = "sm_90")]
            // SAFETY: the caller's contract.
            unsafe {
                asm!(
                    "{{ .reg .pred %cohort_p; mbarrier.try_wait.parity.shared::cta.b64 %cohort_p, [{a}], {p}; selp.u32 {d}, 1, 0, %cohort_p; }}",
                    a = in(reg32) addr, p = in(reg32) parity, d = out(reg32) done, options(nostack)
                )
            }
            #[cfg(not(target_feature = "sm_90"))]
            // SAFETY: the caller's contract.
            unsafe {
                asm!(
                    "{{ .reg .pred %cohort_p; mbarrier.test_wait.parity.shared.b64 %cohort_p, [{a}], {p}; selp.u32 {d}, 1, 0, %cohort_p; }}",
                    a = in(reg32) addr, p = in(reg32) parity, d = out(reg32) done, options(nostack)
                )
            }
            done != 0
        }
        #[cfg(not(target_feature = "sm_80"))]
        { let _ = (addr, phase); crate::raw::trap() }
    } host => {
        cohort_cpu::mbarrier_test_wait(addr, phase)
    })
}

/// `cp.async.mbarrier.arrive.noinc.shared.b64 [addr]` (sm_80): this thread's arrival on the
/// current phase of the mbarrier at `addr`, made once every `cp.async` this thread started
/// before has completed (so the phase also waits for those copies, and a thread that sees it
/// complete sees their bytes). `.noinc`: the pending count is not raised first, so this *is*
/// the thread's arrival on the phase, and the thread must not arrive on it again (the form
/// without `.noinc` raises the count and needs a second, ordinary arrival; compute-sanitizer's
/// synccheck reports that as a "missing wait": a thread's second arrival on a phase it has not
/// waited for). On the CPU device copies complete when issued: it is an ordinary arrival.
/// Returns the phase arrived on (CPU device; 0 on a GPU).
///
/// # Safety
/// sm_80+; `addr` holds a live mbarrier whose current phase still expects this thread's
/// arrival.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_mbarrier_arrive_noinc_shared(addr: u32) -> u64 {
    on_device!("cp_async_mbarrier_arrive_noinc_shared" => {
        #[cfg(target_feature = "sm_80")]
        {
            // SAFETY: the caller's contract.
            unsafe { asm!("cp.async.mbarrier.arrive.noinc.shared.b64 [{0}];", in(reg32) addr, options(nostack)) };
            0
        }
        #[cfg(not(target_feature = "sm_80"))]
        { let _ = addr; crate::raw::trap() }
    } host => {
        cohort_cpu::mbarrier_arrive(addr, 0, false)
    })
}

/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], bytes,
/// [bar]` (sm_90): the bulk-copy engine copies `bytes` bytes of global memory at `src` to
/// shared memory at `dst` and completes that many transaction bytes on the mbarrier at `bar`.
///
/// # Safety
/// sm_90+; `dst` is a shared address of this block and `src` a generic address of global
/// memory, both 16-byte aligned, with `bytes` (a multiple of 16) valid bytes each; nothing
/// reads or writes the destination, nor writes the source, until the barrier's phase that
/// expects these bytes completes; `bar` holds a live mbarrier whose current phase expects them
/// (`mbarrier.arrive.expect_tx`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_bulk_shared_global(dst: u32, src: u64, bytes: u32, bar: u32) {
    on_device!("cp_async_bulk_shared_global" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: the caller's contract.
        unsafe {
            asm!(
                "{{ .reg .b64 %cohort_g; cvta.to.global.u64 %cohort_g, {s}; \
                 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [%cohort_g], {n}, [{b}]; }}",
                d = in(reg32) dst, s = in(reg64) src, n = in(reg32) bytes, b = in(reg32) bar, options(nostack)
            )
        }
        #[cfg(not(target_feature = "sm_90"))]
        { let _ = (dst, src, bytes, bar); crate::raw::trap() }
    } host => {
        cohort_cpu::shared_access(dst, bytes, true);
        // SAFETY: the caller's contract: `bytes` valid bytes at `src` (host memory on the CPU
        // device) and at `dst` in this block's window; one is shared memory, the other not.
        unsafe {
            core::ptr::copy_nonoverlapping(src as usize as *const u8, crate::host::shared_ptr(dst), bytes as usize)
        };
        cohort_cpu::mbarrier_complete_tx(bar, bytes)
    })
}

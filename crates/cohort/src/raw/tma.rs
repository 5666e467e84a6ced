//! The Tensor Memory Accelerator (sm_90, PTX ISA §"cp.async.bulk.tensor"): tiled copies of a box
//! of a tensor described by a tensor map, between global and shared memory, and the fences and
//! groups around them. The safe form is [`crate::tma`].
//!
//! A tensor map operand is the generic address of a 128-byte map in global memory (what the
//! runtime's `TensorMap` allocates). On the CPU device those bytes are a
//! [`cohort_cpu::TensorMapDesc`], and each copy is made by the CPU model when it is issued (a
//! load then completes its bytes on the barrier at once).

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
use core::arch::asm;

use crate::host::on_device;

/// `fence.proxy.tensormap::generic.acquire.gpu [map], 128`: orders the generic-proxy writes of
/// the tensor map at `map` (made before the launch) before this thread's tensor copies through
/// it. PTX ISA 8.3 (within the builder's `+ptx84` for sm_90).
///
/// # Safety
/// sm_90; `map` is the generic address of 128 bytes of global memory, 128-byte aligned.
#[inline(always)]
pub unsafe fn fence_proxy_tensormap_acquire(map: u64) {
    on_device!("fence_proxy_tensormap_acquire" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: the caller's contract.
        unsafe { asm!("fence.proxy.tensormap::generic.acquire.gpu [{0}], 128;", in(reg64) map, options(nostack)) }
        #[cfg(not(target_feature = "sm_90"))]
        { let _ = map; crate::raw::trap() }
    } host => {
        let _ = map;
    })
}

/// `fence.proxy.async.shared::cta`: orders this thread's generic-proxy accesses of shared memory
/// before later async-proxy accesses (a tensor store's reads of a tile this thread wrote).
#[inline(always)]
pub fn fence_proxy_async_shared() {
    on_device!("fence_proxy_async_shared" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: a fence has no memory effect of its own.
        unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) }
        #[cfg(not(target_feature = "sm_90"))]
        crate::raw::trap()
    } host => {})
}

/// `cp.async.bulk.tensor.{R}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: copies
/// the box of the tensor map at `map` that starts at `coords` (elements, innermost first; the
/// box may reach outside the tensor: those elements are filled, zero or NaN per the map) into
/// the dense tile at shared address `dst`, completing `bytes` (the box's bytes) on the mbarrier
/// at `bar` when it lands.
///
/// # Safety
/// sm_90; `map` is a valid tensor map (on the CPU device, a `TensorMapDesc`) of rank `R` whose
/// tensor is readable global memory for the copy's duration, fenced by this thread
/// ([`fence_proxy_tensormap_acquire`]); `dst` is 128-byte aligned shared memory of this block
/// with room for the box, which nothing else accesses until the phase completes; `bytes` is
/// the box's size; `bar` is a live mbarrier whose current phase expects these bytes
/// (`expect_tx`) and cannot complete before they land.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_bulk_tensor_load<const R: usize>(dst: u32, map: u64, coords: [i32; R], bar: u32, bytes: u32) {
    on_device!("cp_async_bulk_tensor_load" => {
        #[cfg(target_feature = "sm_90")]
        {
            let _ = bytes;
            let c = |i: usize| if i < R { coords[i] } else { 0 };
            // SAFETY: the caller's contract, for each rank.
            unsafe {
                match R {
                    1 => asm!("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}}}], [{b}];",
                        d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c(0), b = in(reg32) bar, options(nostack)),
                    2 => asm!("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}}}], [{b}];",
                        d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), b = in(reg32) bar, options(nostack)),
                    3 => asm!("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}, {c2}}}], [{b}];",
                        d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), c2 = in(reg32) c(2), b = in(reg32) bar, options(nostack)),
                    4 => asm!("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}, {c2}, {c3}}}], [{b}];",
                        d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), c2 = in(reg32) c(2), c3 = in(reg32) c(3), b = in(reg32) bar, options(nostack)),
                    _ => asm!("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c0}, {c1}, {c2}, {c3}, {c4}}}], [{b}];",
                        d = in(reg32) dst, m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), c2 = in(reg32) c(2), c3 = in(reg32) c(3), c4 = in(reg32) c(4), b = in(reg32) bar, options(nostack)),
                }
            }
        }
        #[cfg(not(target_feature = "sm_90"))]
        { let _ = (dst, map, coords, bar, bytes); crate::raw::trap() }
    } host => {
        cohort_cpu::shared_access(dst, bytes, true);
        // SAFETY: the caller's contract: on the CPU device `map` is a `TensorMapDesc` of readable
        // host memory, and `dst` has room for the box in this block's window.
        unsafe {
            let desc = &*(map as usize as *const cohort_cpu::TensorMapDesc);
            cohort_cpu::tensor_load(desc, &coords, crate::host::shared_ptr(dst));
        }
        cohort_cpu::mbarrier_complete_tx(bar, bytes)
    })
}

/// `cp.async.bulk.tensor.{R}d.global.shared::cta.tile.bulk_group`: writes the dense tile at
/// shared address `src` into the box of the tensor map at `map` that starts at `coords`
/// (elements outside the tensor are not written), in this thread's current bulk group.
///
/// # Safety
/// sm_90; `map` as for [`cp_async_bulk_tensor_load`], its tensor global memory that nothing else
/// reads or writes (in the box) until the bulk group completes; `src` 128-byte aligned shared
/// memory holding `bytes` (the box's bytes), written by generic-proxy stores that a
/// [`fence_proxy_async_shared`] (by each writer) and a barrier ordered before this call, and not
/// written again before [`cp_async_bulk_wait_group_read`] returns.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_bulk_tensor_store<const R: usize>(map: u64, coords: [i32; R], src: u32, bytes: u32) {
    on_device!("cp_async_bulk_tensor_store" => {
        #[cfg(target_feature = "sm_90")]
        {
            let _ = bytes;
            let c = |i: usize| if i < R { coords[i] } else { 0 };
            // SAFETY: the caller's contract, for each rank.
            unsafe {
                match R {
                    1 => asm!("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [{m}, {{{c0}}}], [{s}];",
                        m = in(reg64) map, c0 = in(reg32) c(0), s = in(reg32) src, options(nostack)),
                    2 => asm!("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{c0}, {c1}}}], [{s}];",
                        m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), s = in(reg32) src, options(nostack)),
                    3 => asm!("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [{m}, {{{c0}, {c1}, {c2}}}], [{s}];",
                        m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), c2 = in(reg32) c(2), s = in(reg32) src, options(nostack)),
                    4 => asm!("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [{m}, {{{c0}, {c1}, {c2}, {c3}}}], [{s}];",
                        m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), c2 = in(reg32) c(2), c3 = in(reg32) c(3), s = in(reg32) src, options(nostack)),
                    _ => asm!("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [{m}, {{{c0}, {c1}, {c2}, {c3}, {c4}}}], [{s}];",
                        m = in(reg64) map, c0 = in(reg32) c(0), c1 = in(reg32) c(1), c2 = in(reg32) c(2), c3 = in(reg32) c(3), c4 = in(reg32) c(4), s = in(reg32) src, options(nostack)),
                }
            }
        }
        #[cfg(not(target_feature = "sm_90"))]
        { let _ = (map, coords, src, bytes); crate::raw::trap() }
    } host => {
        cohort_cpu::shared_access(src, bytes, false);
        // SAFETY: the caller's contract: on the CPU device `map` is a `TensorMapDesc` of
        // writable host memory nothing else accesses in the box, `src` holds the box.
        unsafe {
            let desc = &*(map as usize as *const cohort_cpu::TensorMapDesc);
            cohort_cpu::tensor_store(desc, &coords, crate::host::shared_ptr(src));
        }
    })
}

/// `cp.async.bulk.commit_group`: closes this thread's current bulk group (its tensor stores).
#[inline(always)]
pub fn cp_async_bulk_commit_group() {
    on_device!("cp_async_bulk_commit_group" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: committing a group has no memory effect of its own.
        unsafe { asm!("cp.async.bulk.commit_group;", options(nostack)) }
        #[cfg(not(target_feature = "sm_90"))]
        crate::raw::trap()
    } host => {})
}

/// `cp.async.bulk.wait_group.read 0`: waits until every bulk group this thread committed has
/// finished reading its source (the shared tile may be written again); the writes to global
/// memory may still be in flight (they complete before the grid does).
#[inline(always)]
pub fn cp_async_bulk_wait_group_read() {
    on_device!("cp_async_bulk_wait_group_read" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: waiting has no memory effect of its own (it orders, as a clobber).
        unsafe { asm!("cp.async.bulk.wait_group.read 0;", options(nostack)) }
        #[cfg(not(target_feature = "sm_90"))]
        crate::raw::trap()
    } host => {})
}

/// `cp.async.bulk.wait_group 0`: waits until every bulk group this thread committed has
/// completed, its writes to global memory included.
#[inline(always)]
pub fn cp_async_bulk_wait_group() {
    on_device!("cp_async_bulk_wait_group" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: as above.
        unsafe { asm!("cp.async.bulk.wait_group 0;", options(nostack)) }
        #[cfg(not(target_feature = "sm_90"))]
        crate::raw::trap()
    } host => {})
}

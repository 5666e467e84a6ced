//! Thread-block clusters (sm_90): the cluster special registers, the cluster barrier
//! (`barrier.cluster.arrive` / `wait`), `mapa` and loads, stores and strong loads of another
//! block's shared memory through the generic addresses `mapa` gives (PTX ISA §"Thread Block
//! Clusters", §"Distributed Shared Memory", `barrier.cluster`, `mapa`).
//!
//! Below sm_90 (and in a launch without clusters) every block is a cluster of one: the
//! registers say so, `mapa` of rank 0 is the address itself, and the cluster barrier is the
//! block's barrier (`barrier.sync 0`). `%cluster_ctarank` and `%cluster_nctarank` are in
//! [`super::sreg`].
//!
//! The barrier is LLVM's NVVM intrinsic (convergent, see [`crate::raw`]); `mapa` and the
//! accesses are per-thread inline assembly. On the CPU device each calls `cohort_cpu`'s
//! cluster model (`cohort_cpu::cluster_arrive`, …).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::host::on_device;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.barrier.cluster.arrive"]
    fn nvvm_cluster_arrive();
    #[link_name = "llvm.nvvm.barrier.cluster.wait"]
    fn nvvm_cluster_wait();
    #[link_name = "llvm.nvvm.barrier.cluster.arrive.aligned"]
    fn nvvm_cluster_arrive_aligned();
    #[link_name = "llvm.nvvm.barrier.cluster.wait.aligned"]
    fn nvvm_cluster_wait_aligned();
}

macro_rules! cluster_sreg {
    ($($(#[$m:meta])* $name:ident => $reg:literal, $below:expr, $host:expr;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name() -> u32 {
            on_device!(stringify!($name) => {
                #[cfg(target_feature = "sm_90")]
                {
                    let r: u32;
                    // SAFETY: reading a special register has no preconditions.
                    unsafe { asm!(concat!("mov.u32 {0}, ", $reg, ";"), out(reg32) r, options(nomem, nostack, pure)) };
                    r
                }
                #[cfg(not(target_feature = "sm_90"))]
                {
                    $below
                }
            } host => { $host })
        }
    )*};
}

cluster_sreg! {
    /// `%cluster_ctaid.x`: this block's x index in its cluster (0 below sm_90).
    cluster_ctaid_x => "%cluster_ctaid.x", 0, cohort_cpu::cluster_block_idx().x;
    /// `%cluster_ctaid.y`.
    cluster_ctaid_y => "%cluster_ctaid.y", 0, cohort_cpu::cluster_block_idx().y;
    /// `%cluster_ctaid.z`.
    cluster_ctaid_z => "%cluster_ctaid.z", 0, cohort_cpu::cluster_block_idx().z;
    /// `%cluster_nctaid.x`: the cluster's extent in blocks in x (1 below sm_90).
    cluster_nctaid_x => "%cluster_nctaid.x", 1, cohort_cpu::cluster_dim().x;
    /// `%cluster_nctaid.y`.
    cluster_nctaid_y => "%cluster_nctaid.y", 1, cohort_cpu::cluster_dim().y;
    /// `%cluster_nctaid.z`.
    cluster_nctaid_z => "%cluster_nctaid.z", 1, cohort_cpu::cluster_dim().z;
    /// `%clusterid.x`: this block's cluster's x index in the grid (`%ctaid.x` below sm_90).
    clusterid_x => "%clusterid.x", super::ctaid_x(), cohort_cpu::cluster_idx().x;
    /// `%clusterid.y`.
    clusterid_y => "%clusterid.y", super::ctaid_y(), cohort_cpu::cluster_idx().y;
    /// `%clusterid.z`.
    clusterid_z => "%clusterid.z", super::ctaid_z(), cohort_cpu::cluster_idx().z;
    /// `%nclusterid.x`: the grid's extent in clusters in x (`%nctaid.x` below sm_90).
    nclusterid_x => "%nclusterid.x", super::nctaid_x(), cohort_cpu::cluster_grid_dim().x;
    /// `%nclusterid.y`.
    nclusterid_y => "%nclusterid.y", super::nctaid_y(), cohort_cpu::cluster_grid_dim().y;
    /// `%nclusterid.z`.
    nclusterid_z => "%nclusterid.z", super::nctaid_z(), cohort_cpu::cluster_grid_dim().z;
}

/// `barrier.cluster.arrive` (non-`.aligned`, release): this thread arrives at its cluster's
/// barrier. Below sm_90: nothing (the wait is the block's barrier).
///
/// # Safety
/// The thread has no arrival it has not waited for ([`barrier_cluster_wait`]); every
/// non-exited thread of the cluster must arrive at the barrier for its phase to complete.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_cluster_arrive() {
    on_device!("barrier_cluster_arrive" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: the caller's contract.
        unsafe { nvvm_cluster_arrive() }
    } host => {
        super::mark_instruction();
        cohort_cpu::cluster_arrive()
    })
}

/// `barrier.cluster.wait` (non-`.aligned`, acquire): waits until every non-exited thread of the
/// cluster has arrived in the phase this thread arrived in. Below sm_90: `barrier.sync 0`.
///
/// # Safety
/// The thread arrived ([`barrier_cluster_arrive`]) and has not waited since; below sm_90, as
/// [`super::barrier_sync`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_cluster_wait() {
    on_device!("barrier_cluster_wait" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: the caller's contract.
        unsafe { nvvm_cluster_wait() }
        #[cfg(not(target_feature = "sm_90"))]
        // SAFETY: the caller's contract.
        unsafe { super::barrier_sync() }
    } host => {
        super::mark_instruction();
        cohort_cpu::cluster_wait()
    })
}

/// `barrier.cluster.arrive.aligned` then `barrier.cluster.wait.aligned`: the cluster barrier for
/// warps that are converged (every thread of the warp executes it together). Below sm_90:
/// `barrier.sync 0`.
///
/// # Safety
/// As [`barrier_cluster_arrive`] and [`barrier_cluster_wait`], and every thread of each warp
/// executes this same instruction together (the warp is converged).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn barrier_cluster_sync_aligned() {
    on_device!("barrier_cluster_sync_aligned" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: the caller's contract.
        unsafe {
            nvvm_cluster_arrive_aligned();
            nvvm_cluster_wait_aligned();
        }
        #[cfg(not(target_feature = "sm_90"))]
        // SAFETY: the caller's contract.
        unsafe { super::barrier_sync() }
    } host => {
        super::mark_instruction();
        cohort_cpu::cluster_arrive();
        cohort_cpu::cluster_wait()
    })
}

/// `mapa.u64`: the generic address of the byte at generic address `addr` — this block's shared
/// memory — in the shared memory of the block of rank `rank` in the cluster. Below sm_90 (a
/// cluster of one), `addr` itself. On the CPU device, the peer block's window
/// (`cohort_cpu::cluster_map_shared`: a rank outside the cluster, or a block not started or
/// exited, end the launch with a misuse).
///
/// # Safety
/// `addr` is a generic address of this block's shared memory (`size` bytes there, for the CPU
/// device's check); `rank` is below the cluster's block count.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mapa_u64(addr: u64, rank: u32, size: u32) -> u64 {
    on_device!("mapa_u64" => {
        let _ = size;
        #[cfg(target_feature = "sm_90")]
        {
            let r: u64;
            // SAFETY: address arithmetic only (the caller keeps `rank` in the cluster).
            unsafe { asm!("mapa.u64 {0}, {1}, {2};", out(reg64) r, in(reg64) addr, in(reg32) rank, options(pure, nomem, nostack)) };
            r
        }
        #[cfg(not(target_feature = "sm_90"))]
        {
            let _ = rank;
            addr
        }
    } host => {
        let off = addr.wrapping_sub(cohort_cpu::shared_window() as u64);
        cohort_cpu::cluster_map_shared(off as u32, size, rank) as u64
    })
}

macro_rules! ld_st_dsmem {
    ($($ld:ident, $ldv:ident, $st:ident: $t:ty, $ptx:literal, $class:ident, $atomic:ty;)*) => {$(
        #[doc = concat!("`ld.", $ptx, "` of a generic address (distributed shared memory, after [`mapa_u64`]).")]
        ///
        /// # Safety
        /// `addr` is a valid generic address of shared memory of a block of this cluster that
        /// has started and will not exit before the load, aligned to the width.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $ld(addr: u64) -> $t {
            on_device!(stringify!($ld) => {
                let v: $t;
                // SAFETY: guaranteed by the caller.
                unsafe { asm!(concat!("ld.", $ptx, " {0}, [{1}];"), out($class) v, in(reg64) addr, options(readonly, nostack)) };
                v
            } host => {
                // SAFETY: a live window of the launch (the caller; `mapa_u64` checked it), read
                // atomically: another block's OS thread may write it meanwhile.
                unsafe { <$atomic>::from_ptr(addr as usize as *mut _).load(core::sync::atomic::Ordering::Relaxed) }
            })
        }

        #[doc = concat!("`ld.acquire.cluster.", $ptx, "` of a generic address: a strong load that orders what follows after it.")]
        ///
        /// # Safety
        /// As the plain load.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $ldv(addr: u64) -> $t {
            on_device!(stringify!($ldv) => {
                let v: $t;
                #[cfg(target_feature = "sm_90")]
                // SAFETY: guaranteed by the caller.
                unsafe { asm!(concat!("ld.acquire.cluster.", $ptx, " {0}, [{1}];"), out($class) v, in(reg64) addr, options(nostack)) };
                #[cfg(not(target_feature = "sm_90"))]
                // SAFETY: guaranteed by the caller.
                unsafe { asm!(concat!("ld.acquire.gpu.", $ptx, " {0}, [{1}];"), out($class) v, in(reg64) addr, options(nostack)) };
                v
            } host => {
                // SAFETY: as the plain load.
                unsafe { <$atomic>::from_ptr(addr as usize as *mut _).load(core::sync::atomic::Ordering::Acquire) }
            })
        }

        #[doc = concat!("`st.", $ptx, "` to a generic address (distributed shared memory, after [`mapa_u64`]).")]
        ///
        /// # Safety
        /// As the load; no other thread accesses the bytes without synchronization.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $st(addr: u64, v: $t) {
            on_device!(stringify!($st) => {
                // SAFETY: guaranteed by the caller.
                unsafe { asm!(concat!("st.", $ptx, " [{0}], {1};"), in(reg64) addr, in($class) v, options(nostack)) };
            } host => {
                // SAFETY: as the load.
                unsafe { <$atomic>::from_ptr(addr as usize as *mut _).store(v, core::sync::atomic::Ordering::Relaxed) }
            })
        }
    )*};
}

ld_st_dsmem! {
    ld_dsmem_b32, ld_acquire_dsmem_b32, st_dsmem_b32: u32, "b32", reg32, core::sync::atomic::AtomicU32;
    ld_dsmem_b64, ld_acquire_dsmem_b64, st_dsmem_b64: u64, "b64", reg64, core::sync::atomic::AtomicU64;
}

/// `ld.relaxed.cluster.b32` of a generic address (sm_90; `.gpu` scope below, where the cluster
/// is the block): a strong load of a word other blocks of the cluster update atomically, for a
/// poll whose acquire is a [`fence_acq_rel_cluster`] after it.
///
/// # Safety
/// As [`ld_dsmem_b32`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_relaxed_dsmem_b32(addr: u64) -> u32 {
    on_device!("ld_relaxed_dsmem_b32" => {
        let v: u32;
        #[cfg(target_feature = "sm_90")]
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("ld.relaxed.cluster.b32 {0}, [{1}];", out(reg32) v, in(reg64) addr, options(nostack)) };
        #[cfg(not(target_feature = "sm_90"))]
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("ld.relaxed.gpu.b32 {0}, [{1}];", out(reg32) v, in(reg64) addr, options(nostack)) };
        v
    } host => {
        // SAFETY: as the plain load.
        unsafe { core::sync::atomic::AtomicU32::from_ptr(addr as usize as *mut _).load(core::sync::atomic::Ordering::Relaxed) }
    })
}

/// `fence.acq_rel.cluster` (sm_90; `.gpu` below): with a strong load before it, an acquire of
/// what the cluster's release operations the load observed published.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence_acq_rel_cluster() {
    on_device!("fence_acq_rel_cluster" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: a fence only orders this thread's memory accesses.
        unsafe { asm!("fence.acq_rel.cluster;", options(nostack)) };
        #[cfg(not(target_feature = "sm_90"))]
        // SAFETY: as above.
        unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
    } host => { core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst) })
}

/// `atom.release.cluster.shared::cta.add.u32` (sm_90; `.gpu` scope below, where the cluster is
/// the block): adds `v` to the `u32` at shared address `addr` of this block, releasing this
/// thread's earlier accesses to every thread of the cluster that acquires the value; returns
/// the old value.
///
/// # Safety
/// `addr` is a valid, 4-byte aligned shared-memory address of this block.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atom_add_release_cluster_shared_u32(addr: u32, v: u32) -> u32 {
    on_device!("atom_add_release_cluster_shared_u32" => {
        let old: u32;
        #[cfg(target_feature = "sm_90")]
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("atom.release.cluster.shared::cta.add.u32 {0}, [{1}], {2};", out(reg32) old, in(reg32) addr, in(reg32) v, options(nostack)) };
        #[cfg(not(target_feature = "sm_90"))]
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("atom.release.gpu.shared.add.u32 {0}, [{1}], {2};", out(reg32) old, in(reg32) addr, in(reg32) v, options(nostack)) };
        old
    } host => {
        let p = cohort_cpu::shared_window().wrapping_add(addr as usize).cast::<u32>();
        // SAFETY: a valid, aligned `u32` of this block's window (the caller); touched
        // atomically, as other blocks' OS threads may read it.
        unsafe { core::sync::atomic::AtomicU32::from_ptr(p).fetch_add(v, core::sync::atomic::Ordering::Release) }
    })
}

/// The running thread leaves its cluster for good: on the CPU device it stops holding up the
/// cluster barrier (an exiting thread releases `barrier.cluster` on a GPU); on a GPU nothing
/// (the thread's exit does it).
///
/// # Safety
/// The thread makes no cluster operation afterwards (it returns from the kernel's entry).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cluster_thread_exit() {
    on_device!("cluster_thread_exit" => {} host => { cohort_cpu::cluster_thread_exit() })
}

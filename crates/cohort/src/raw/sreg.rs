//! Special registers: indices and dimensions, lanes and lane masks, SM ids, clocks and timers,
//! the driver's environment registers, the block's shared-memory sizes (PTX ISA §"Special
//! Registers").
//!
//! Each is read with LLVM's NVVM intrinsic where there is one (the index registers, which LLVM
//! then knows the ranges of), else with a `mov` from the register.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx;

use crate::host::on_device;

macro_rules! sreg_intrinsic {
    ($($(#[$m:meta])* $name:ident => $intr:ident, $host:expr;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name() -> u32 {
            on_device!(stringify!($name) => {
                // SAFETY: reading a special register has no preconditions.
                unsafe { nvptx::$intr() as u32 }
            } host => { $host })
        }
    )*};
}

sreg_intrinsic! {
    /// `%tid.x`: this thread's x index in its block (`threadIdx.x`).
    tid_x => _thread_idx_x, cohort_cpu::thread_idx().x;
    /// `%tid.y` (`threadIdx.y`).
    tid_y => _thread_idx_y, cohort_cpu::thread_idx().y;
    /// `%tid.z` (`threadIdx.z`).
    tid_z => _thread_idx_z, cohort_cpu::thread_idx().z;
    /// `%ntid.x`: threads per block in x (`blockDim.x`).
    ntid_x => _block_dim_x, cohort_cpu::block_dim().x;
    /// `%ntid.y` (`blockDim.y`).
    ntid_y => _block_dim_y, cohort_cpu::block_dim().y;
    /// `%ntid.z` (`blockDim.z`).
    ntid_z => _block_dim_z, cohort_cpu::block_dim().z;
    /// `%ctaid.x`: this block's x index in the grid (`blockIdx.x`).
    ctaid_x => _block_idx_x, cohort_cpu::block_idx().x;
    /// `%ctaid.y` (`blockIdx.y`).
    ctaid_y => _block_idx_y, cohort_cpu::block_idx().y;
    /// `%ctaid.z` (`blockIdx.z`).
    ctaid_z => _block_idx_z, cohort_cpu::block_idx().z;
    /// `%nctaid.x`: blocks in the grid in x (`gridDim.x`).
    nctaid_x => _grid_dim_x, cohort_cpu::grid_dim().x;
    /// `%nctaid.y` (`gridDim.y`).
    nctaid_y => _grid_dim_y, cohort_cpu::grid_dim().y;
    /// `%nctaid.z` (`gridDim.z`).
    nctaid_z => _grid_dim_z, cohort_cpu::grid_dim().z;
}

macro_rules! sreg_asm {
    ($($(#[$m:meta])* $name:ident: $ty:ty => $reg:literal, $class:ident, $host:expr;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name() -> $ty {
            on_device!(stringify!($name) => {
                let r: $ty;
                // SAFETY: reading a special register has no preconditions.
                unsafe { asm!(concat!("mov.", stringify!($ty), " {0}, ", $reg, ";"), out($class) r, options(nomem, nostack, pure)) };
                r
            } host => { $host })
        }
    )*};
}

/// This thread's rank in its block, `%tid.x + %ntid.x · (%tid.y + %ntid.y · %tid.z)`, read
/// afresh at every call: one `asm` block with side effects, which LLVM neither merges with
/// another read nor moves out of a loop — for checked mode's bookkeeping at a kernel's entry and
/// exit and in its barriers, which must not keep a register live across the kernel (the rank
/// made of the intrinsics above is computed once and held).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn thread_rank_fresh() -> u32 {
    on_device!("thread_rank_fresh" => {
        let r: u32;
        // SAFETY: reads special registers and computes with registers of its own scope.
        unsafe {
            asm!(
                "{{ .reg .u32 %cohort_t<5>; mov.u32 %cohort_t0, %tid.x; mov.u32 %cohort_t1, %tid.y; \
                 mov.u32 %cohort_t2, %tid.z; mov.u32 %cohort_t3, %ntid.x; mov.u32 %cohort_t4, %ntid.y; \
                 mad.lo.u32 %cohort_t1, %cohort_t4, %cohort_t2, %cohort_t1; \
                 mad.lo.u32 {0}, %cohort_t3, %cohort_t1, %cohort_t0; }}",
                out(reg32) r,
                options(nomem, nostack)
            )
        };
        r
    } host => {
        let (t, n) = (cohort_cpu::thread_idx(), cohort_cpu::block_dim());
        t.x + n.x * (t.y + n.y * t.z)
    })
}

/// `%laneid`: this thread's lane in its warp, 0..32 — a fact handed to LLVM (`assume`), so
/// that shared-memory indices made from the lane (an `ldmatrix` row, a fragment's element) have
/// bounds it can prove and their checks fold away.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn laneid() -> u32 {
    let l = laneid_reg();
    // SAFETY: `%laneid` is a lane of a 32-lane warp (PTX ISA: "a value in the range 0 to
    // WARP_SZ-1"); the CPU device's lane ids are too.
    unsafe { core::hint::assert_unchecked(l < 32) };
    l
}

sreg_asm! {
    /// `%laneid`, as read (see [`laneid`]).
    laneid_reg: u32 => "%laneid", reg32, cohort_cpu::lane_id();
    /// `%warpid`: the hardware warp slot on the SM. It can change during execution; for the
    /// warp's index in its block use [`crate::thread::warp_id`].
    warpid: u32 => "%warpid", reg32, cohort_cpu::warp_id();
    /// `%lanemask_eq`: the bit of this lane.
    lanemask_eq: u32 => "%lanemask_eq", reg32, cohort_cpu::lanemask_eq();
    /// `%lanemask_lt`: bits of the lanes below this one.
    lanemask_lt: u32 => "%lanemask_lt", reg32, cohort_cpu::lanemask_lt();
    /// `%lanemask_le`: bits of the lanes at or below this one.
    lanemask_le: u32 => "%lanemask_le", reg32, cohort_cpu::lanemask_le();
    /// `%lanemask_gt`: bits of the lanes above this one.
    lanemask_gt: u32 => "%lanemask_gt", reg32, cohort_cpu::lanemask_gt();
    /// `%lanemask_ge`: bits of the lanes at or above this one.
    lanemask_ge: u32 => "%lanemask_ge", reg32, cohort_cpu::lanemask_ge();
    /// `%smid`: the SM this thread runs on (may change under preemption).
    smid: u32 => "%smid", reg32, 0;
    /// `%nsmid`: an upper bound on `%smid` + 1 (not the SM count: ids may be sparse).
    nsmid: u32 => "%nsmid", reg32, 1;
    /// `%envreg1`: set by the driver; the high 32 bits of the grid-sync workspace address.
    envreg1: u32 => "%envreg1", reg32, 0;
    /// `%envreg2`: set by the driver; the low 32 bits of the grid-sync workspace address.
    envreg2: u32 => "%envreg2", reg32, u32::from(cohort_cpu::is_cooperative());
    /// `%dynamic_smem_size`: bytes of dynamic shared memory this launch gave each block.
    dynamic_smem_size: u32 => "%dynamic_smem_size", reg32, cohort_cpu::dynamic_shared().1;
    /// `%total_smem_size`: static plus dynamic shared memory of this block, in bytes.
    total_smem_size: u32 => "%total_smem_size", reg32, crate::host::device_only("total_smem_size");
}

/// `%cluster_ctarank`: this block's rank in its thread-block cluster (sm_90+). A launch without
/// clusters and PTX below sm_90 make every block a cluster of one: 0. On the CPU device, the
/// rank in the launch's clusters (`cohort_cpu::cluster_rank`).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cluster_ctarank() -> u32 {
    on_device!("cluster_ctarank" => { cluster_reg::ctarank() } host => { cohort_cpu::cluster_rank() })
}

/// `%cluster_nctarank`: the number of blocks in this block's cluster (sm_90+); 1 where every
/// block is a cluster of one (see [`cluster_ctarank`]).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cluster_nctarank() -> u32 {
    on_device!("cluster_nctarank" => { cluster_reg::nctarank() } host => { cohort_cpu::cluster_dim().volume() as u32 })
}

/// The cluster registers where the PTX has them (sm_90+).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod cluster_reg {
    use core::arch::asm;

    #[inline(always)]
    pub(super) fn ctarank() -> u32 {
        let r: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe { asm!("mov.u32 {0}, %cluster_ctarank;", out(reg32) r, options(nomem, nostack, pure)) };
        r
    }

    #[inline(always)]
    pub(super) fn nctarank() -> u32 {
        let r: u32;
        // SAFETY: as above.
        unsafe { asm!("mov.u32 {0}, %cluster_nctarank;", out(reg32) r, options(nomem, nostack, pure)) };
        r
    }
}

/// Below sm_90 there are no clusters: every block is a cluster of one.
#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod cluster_reg {
    #[inline(always)]
    pub(super) fn ctarank() -> u32 {
        0
    }

    #[inline(always)]
    pub(super) fn nctarank() -> u32 {
        1
    }
}

/// `%clock`: a 32-bit per-SM cycle counter (`clock()`).
#[inline(always)]
#[must_use]
pub fn clock() -> u32 {
    on_device!("clock" => {
        let r: u32;
        // SAFETY: reading a special register has no preconditions; volatile so it is not hoisted.
        unsafe { asm!("mov.u32 {0}, %clock;", out(reg32) r, options(nomem, nostack)) };
        r
    } host => { crate::host::clock_ns() as u32 })
}

/// `%clock64`: a 64-bit per-SM cycle counter (`clock64()`).
#[inline(always)]
#[must_use]
pub fn clock64() -> u64 {
    on_device!("clock64" => {
        let r: u64;
        // SAFETY: reading a special register has no preconditions; volatile so it is not hoisted.
        unsafe { asm!("mov.u64 {0}, %clock64;", out(reg64) r, options(nomem, nostack)) };
        r
    } host => { crate::host::clock_ns() })
}

/// `%globaltimer`: nanoseconds, global to the GPU (coarse: updates about every µs).
#[inline(always)]
#[must_use]
pub fn globaltimer() -> u64 {
    on_device!("globaltimer" => {
        let r: u64;
        // SAFETY: reading a special register has no preconditions; volatile so it is not hoisted.
        unsafe { asm!("mov.u64 {0}, %globaltimer;", out(reg64) r, options(nomem, nostack)) };
        r
    } host => { crate::host::globaltimer_ns() })
}

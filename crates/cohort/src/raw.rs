//! Tier 1: one function per PTX instruction or special register, nothing more.
//!
//! These are the building blocks of every safe type in this crate. They keep CUDA's semantics
//! exactly: a `*_sync` function must be called by every lane named in `mask`, with the same
//! `mask`.
//!
//! **Convergence.** Every warp- or block-synchronous operation (barriers, `bar.warp.sync`,
//! shuffles, votes, matches, `redux.sync`, `activemask`) is emitted through LLVM's NVVM
//! intrinsic, which LLVM knows is `convergent`: it is never moved into, out of, or merged
//! across divergent control flow. rustc's inline assembly is not marked convergent, and
//! LLVM does merge identical `activemask` asm from both sides of a branch (measured: the
//! branch disappears), so inline assembly is used only for per-thread instructions (special
//! registers, fences, atomics, loads and stores, `cp.async`).
//!
//! On the host most functions here panic (see [`crate::host`]); those with a CPU-device meaning
//! compute it (the `.approx` arithmetic exactly as a GPU's SASS does, up to the `MUFU` tables).
//!
//! | PTX | here | CUDA C++ |
//! |---|---|---|
//! | `%tid`, `%ntid`, `%ctaid`, `%nctaid` | [`tid_x`] … [`nctaid_z`] | `threadIdx`, `blockDim`, `blockIdx`, `gridDim` |
//! | `%laneid`, `%warpid`, `%lanemask_*` | [`laneid`], [`warpid`], [`lanemask_lt`] … | `__lane_id()` (CCCL) |
//! | `barrier.sync 0` | [`barrier_sync`] | `__syncthreads()` |
//! | `barrier.red.popc` / `.and` / `.or` (non-aligned) | [`barrier_sync_count`], [`barrier_sync_and`], [`barrier_sync_or`] | `__syncthreads_count/and/or` |
//! | `bar.warp.sync` | [`bar_warp_sync`] | `__syncwarp(mask)` |
//! | `shfl.sync.{idx,up,down,bfly}.b32` | [`shfl_sync_idx_b32`] … | `__shfl_sync` … |
//! | `vote.sync.{all,any,uni,ballot}` | [`vote_sync_all`] … | `__all_sync`, `__any_sync`, `__ballot_sync` |
//! | `match.any.sync` | [`match_any_sync_b32`] …, [`match_all_sync_b32`] … | `__match_any_sync`, `__match_all_sync` |
//! | `activemask.b32` | [`activemask`] | `__activemask()` |
//! | `redux.sync` (sm_80) | [`redux_sync_add_u32`] … | `__reduce_add_sync` … |
//! | `fence.sc` / `fence.acq_rel` | [`fence_sc_cta`] … | `__threadfence()` … |
//! | `nanosleep.u32` | [`nanosleep`] | `__nanosleep` |
//! | `griddepcontrol.wait`, `griddepcontrol.launch_dependents` (sm_90) | [`griddepcontrol_wait`], [`griddepcontrol_launch_dependents`] | `cudaGridDependencySynchronize()`, `cudaTriggerProgrammaticLaunchCompletion()` |
//! | `trap` | [`trap`] | `__trap()` |
//! | `%clock`, `%clock64`, `%globaltimer`, `%smid` | [`clock`], [`clock64`], [`globaltimer`], [`smid`] | `clock()`, `clock64()`, `%globaltimer` |
//! | `%envreg1`, `%envreg2` | [`envreg1`], [`envreg2`] | (cooperative groups' grid workspace) |
//! | `%dynamic_smem_size` | [`dynamic_smem_size`] | — |
//! | `mov.u32 %r, 0; // cohort-site?` (numbered by `cohort-build`) | `site_marker` (checked mode; crate-private) | — |
//! | `mbarrier.init/arrive/test_wait/try_wait.shared.b64` (sm_80) | `mbarrier_*` (the block's phase barrier; crate-private) | `cuda::barrier` |
//! | `fns.b32` | [`fns`] | `__fns` |
//! | `isspacep.global` | [`isspacep_global`] | `__isGlobal` |
//! | `call __cudaCDP2GetParameterBufferV2` (libcudadevrt) | [`cdp2_get_parameter_buffer`] | `cudaGetParameterBuffer` (what `<<<>>>` in device code becomes) |
//! | `call __cudaCDP2LaunchDeviceV2` (libcudadevrt) | [`cdp2_launch_device`] | `cudaLaunchDevice` |

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx;

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
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn nvvm_shfl_idx(mask: u32, v: u32, b: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn nvvm_shfl_up(mask: u32, v: u32, b: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn nvvm_shfl_down(mask: u32, v: u32, b: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn nvvm_shfl_bfly(mask: u32, v: u32, b: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.vote.all.sync"]
    fn nvvm_vote_all(mask: u32, p: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.any.sync"]
    fn nvvm_vote_any(mask: u32, p: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.uni.sync"]
    fn nvvm_vote_uni(mask: u32, p: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn nvvm_vote_ballot(mask: u32, p: bool) -> u32;
    #[link_name = "llvm.nvvm.match.any.sync.i32"]
    fn nvvm_match_any_i32(mask: u32, v: u32) -> u32;
    #[link_name = "llvm.nvvm.match.any.sync.i64"]
    fn nvvm_match_any_i64(mask: u32, v: u64) -> u32;
    #[link_name = "llvm.nvvm.activemask"]
    fn nvvm_activemask() -> u32;
    #[link_name = "llvm.nvvm.redux.sync.add"]
    fn nvvm_redux_add(v: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.umin"]
    fn nvvm_redux_umin(v: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.umax"]
    fn nvvm_redux_umax(v: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.min"]
    fn nvvm_redux_min(v: i32, mask: u32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.max"]
    fn nvvm_redux_max(v: i32, mask: u32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.and"]
    fn nvvm_redux_and(v: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.or"]
    fn nvvm_redux_or(v: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.xor"]
    fn nvvm_redux_xor(v: u32, mask: u32) -> u32;
}

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

sreg_asm! {
    /// `%laneid`: this thread's lane in its warp, 0..32.
    laneid: u32 => "%laneid", reg32, cohort_cpu::lane_id();
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

// ---------------------------------------------------------------------------------------------
// Barriers

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
        crate::host::mark_instruction();
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
        crate::host::mark_instruction();
        cohort_cpu::barrier_named(id, crate::thread::block_size())
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
        crate::host::mark_instruction();
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
        crate::host::mark_instruction();
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
        crate::host::mark_instruction();
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
        crate::host::mark_instruction();
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
        crate::host::mark_instruction();
        cohort_cpu::sync_warp(mask)
    })
}

// ---------------------------------------------------------------------------------------------
// Warp shuffles, votes, matches, reductions

macro_rules! shfl_b32 {
    ($($(#[$m:meta])* $name:ident => $intr:ident, $host:ident;)*) => {$(
        $(#[$m])*
        ///
        /// `c` is PTX's packed clamp/segment operand; [`shfl_c`] builds it from a width.
        ///
        /// # Safety
        /// Every lane in `mask` must execute this instruction with the same `mask`, and the
        /// calling lane must be in `mask`.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(mask: u32, value: u32, b: u32, c: u32) -> u32 {
            on_device!(stringify!($name) => {
                // SAFETY: the caller upholds the convergence contract of `shfl.sync`.
                unsafe { $intr(mask, value, b, c) }
            } host => {
                crate::host::mark_instruction();
                cohort_cpu::shfl(cohort_cpu::ShflMode::$host, mask, value, b, c)
            })
        }
    )*};
}

shfl_b32! {
    /// `shfl.sync.idx.b32`: read `value` from lane `b` of this lane's segment (`__shfl_sync`).
    shfl_sync_idx_b32 => nvvm_shfl_idx, Idx;
    /// `shfl.sync.up.b32`: read from the lane `b` below (`__shfl_up_sync`).
    shfl_sync_up_b32 => nvvm_shfl_up, Up;
    /// `shfl.sync.down.b32`: read from the lane `b` above (`__shfl_down_sync`).
    shfl_sync_down_b32 => nvvm_shfl_down, Down;
    /// `shfl.sync.bfly.b32`: read from lane `laneid ^ b` (`__shfl_xor_sync`).
    shfl_sync_bfly_b32 => nvvm_shfl_bfly, Bfly;
}

/// The `c` operand of `shfl.sync` for a segment of `width` lanes (a power of two ≤ 32):
/// `((32 - width) << 8) | clamp`, with `clamp` 0 for `up` and 31 for the other modes, as
/// CUDA's `__shfl*_sync` compute it.
#[inline(always)]
#[must_use]
pub const fn shfl_c(width: u32, up: bool) -> u32 {
    ((32 - width) << 8) | if up { 0 } else { 0x1f }
}

macro_rules! vote_pred {
    ($($(#[$m:meta])* $name:ident => $intr:ident, $host:path;)*) => {$(
        $(#[$m])*
        ///
        /// # Safety
        /// Every lane in `mask` must execute this instruction with the same `mask`, and the
        /// calling lane must be in `mask`.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(mask: u32, pred: bool) -> bool {
            on_device!(stringify!($name) => {
                // SAFETY: the caller upholds the convergence contract of `vote.sync`.
                unsafe { $intr(mask, pred) }
            } host => {
                crate::host::mark_instruction();
                $host(mask, pred)
            })
        }
    )*};
}

vote_pred! {
    /// `vote.sync.all.pred` (`__all_sync`).
    vote_sync_all => nvvm_vote_all, cohort_cpu::vote_all;
    /// `vote.sync.any.pred` (`__any_sync`).
    vote_sync_any => nvvm_vote_any, cohort_cpu::vote_any;
    /// `vote.sync.uni.pred` (`__uni_sync`): whether `pred` is the same in every lane of `mask`.
    vote_sync_uni => nvvm_vote_uni, cohort_cpu::vote_uni;
}

/// `vote.sync.ballot.b32` (`__ballot_sync`): bit *i* set when lane *i* is in `mask` and its
/// `pred` holds.
///
/// # Safety
/// Every lane in `mask` must execute this instruction with the same `mask`, and the calling
/// lane must be in `mask`.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn vote_sync_ballot(mask: u32, pred: bool) -> u32 {
    on_device!("vote_sync_ballot" => {
        // SAFETY: the caller upholds the convergence contract of `vote.sync`.
        unsafe { nvvm_vote_ballot(mask, pred) }
    } host => {
        crate::host::mark_instruction();
        cohort_cpu::ballot(mask, pred)
    })
}

/// `match.any.sync.b32` (`__match_any_sync`): the lanes of `mask` whose `value` equals ours.
///
/// # Safety
/// Every lane in `mask` must execute this instruction with the same `mask`; sm_70+.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn match_any_sync_b32(mask: u32, value: u32) -> u32 {
    on_device!("match_any_sync_b32" => {
        // SAFETY: the caller upholds the convergence contract of `match.sync`.
        unsafe { nvvm_match_any_i32(mask, value) }
    } host => {
        crate::host::mark_instruction();
        cohort_cpu::match_any_u32(mask, value)
    })
}

/// `match.any.sync.b64` (`__match_any_sync` on 64-bit values).
///
/// # Safety
/// As for [`match_any_sync_b32`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn match_any_sync_b64(mask: u32, value: u64) -> u32 {
    on_device!("match_any_sync_b64" => {
        // SAFETY: the caller upholds the convergence contract of `match.sync`.
        unsafe { nvvm_match_any_i64(mask, value) }
    } host => {
        crate::host::mark_instruction();
        cohort_cpu::match_any_u64(mask, value)
    })
}

/// `__match_all_sync`: `(mask, true)` when every lane of `mask` has the same `value`, else
/// `(0, false)`. (Computed with `match.any.sync`: all lanes match exactly when this lane's
/// matching set is the whole mask.)
///
/// # Safety
/// As for [`match_any_sync_b32`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn match_all_sync_b32(mask: u32, value: u32) -> (u32, bool) {
    // SAFETY: forwarded to the caller.
    let m = unsafe { match_any_sync_b32(mask, value) };
    if m == mask { (mask, true) } else { (0, false) }
}

/// `__match_all_sync` on 64-bit values.
///
/// # Safety
/// As for [`match_any_sync_b32`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn match_all_sync_b64(mask: u32, value: u64) -> (u32, bool) {
    // SAFETY: forwarded to the caller.
    let m = unsafe { match_any_sync_b64(mask, value) };
    if m == mask { (mask, true) } else { (0, false) }
}

/// `activemask.b32` (`__activemask()`): the lanes executing this instruction together.
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn activemask() -> u32 {
    on_device!("activemask" => {
        // SAFETY: `activemask` has no preconditions.
        unsafe { nvvm_activemask() }
    } host => {
        crate::host::mark_instruction();
        cohort_cpu::activemask()
    })
}

macro_rules! redux {
    ($($(#[$m:meta])* $name:ident: $ty:ty => $intr:ident, $hf:ident $op:ident;)*) => {$(
        $(#[$m])*
        ///
        /// # Safety
        /// sm_80+. Every lane in `mask` must execute this instruction with the same `mask`,
        /// and the calling lane must be in `mask`.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(mask: u32, value: $ty) -> $ty {
            on_device!(stringify!($name) => {
                // SAFETY: the caller upholds the convergence contract of `redux.sync`.
                unsafe { $intr(value, mask) }
            } host => {
                crate::host::mark_instruction();
                cohort_cpu::$hf(cohort_cpu::ReduxOp::$op, mask, value)
            })
        }
    )*};
}

redux! {
    /// `redux.sync.add.u32` (`__reduce_add_sync`), also correct for `i32` bit patterns.
    redux_sync_add_u32: u32 => nvvm_redux_add, redux_u32 Add;
    /// `redux.sync.min.u32` (`__reduce_min_sync`).
    redux_sync_min_u32: u32 => nvvm_redux_umin, redux_u32 Min;
    /// `redux.sync.max.u32` (`__reduce_max_sync`).
    redux_sync_max_u32: u32 => nvvm_redux_umax, redux_u32 Max;
    /// `redux.sync.min.s32` (`__reduce_min_sync` on `int`).
    redux_sync_min_s32: i32 => nvvm_redux_min, redux_i32 Min;
    /// `redux.sync.max.s32` (`__reduce_max_sync` on `int`).
    redux_sync_max_s32: i32 => nvvm_redux_max, redux_i32 Max;
    /// `redux.sync.and.b32` (`__reduce_and_sync`).
    redux_sync_and_b32: u32 => nvvm_redux_and, redux_u32 And;
    /// `redux.sync.or.b32` (`__reduce_or_sync`).
    redux_sync_or_b32: u32 => nvvm_redux_or, redux_u32 Or;
    /// `redux.sync.xor.b32` (`__reduce_xor_sync`).
    redux_sync_xor_b32: u32 => nvvm_redux_xor, redux_u32 Xor;
}

/// `fns.b32`: the position of the `offset`-th (0-based) set bit of `mask`, counting up from
/// bit `base`; 0xffffffff when there is none (`__fns(mask, base, offset + 1)`).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    on_device!("fns" => {
        let r: u32;
        // SAFETY: `fns` is pure arithmetic.
        unsafe { asm!("fns.b32 {0}, {1}, {2}, {3};", out(reg32) r, in(reg32) mask, in(reg32) base, in(reg32) offset, options(pure, nomem, nostack)) };
        r
    } host => {
        crate::host::fns(mask, base, offset)
    })
}

// ---------------------------------------------------------------------------------------------
// Call-site markers (checked mode) and the block's phase barrier (`mbarrier`)

/// What an unnumbered call-site marker says in PTX: `site_marker` emits
/// `mov.u32 %r, 0; // cohort-site?`, and `cohort-build` numbers each one
/// (`mov.u32 %r, 17; // cohort-site=17`). The runtime refuses to load PTX that still holds one.
pub const SITE_MARKER_UNNUMBERED: &str = "// cohort-site?";

/// What a numbered call-site marker says in PTX, before its number.
pub const SITE_MARKER_NUMBERED: &str = "// cohort-site=";

/// A number that identifies **this call instruction** of the module, after all inlining: a
/// `mov.u32` of a placeholder that `cohort-build` replaces, in the PTX, by a number of its own
/// per marker (1, 2, …). Checked mode compares these between the members of a collective, so
/// two calls that share a source location (`Location::caller()` is the same for every call
/// inside one `macro_rules!` expansion, or reached through one `#[track_caller]` helper) still
/// differ.
///
/// The asm is not `pure`: LLVM never merges two of them into one (it does not sink inline asm,
/// and does not CSE asm with side effects), but it may *hoist* identical leading instructions
/// out of both arms of an `if`. So a marker must follow, in its basic block, an instruction
/// LLVM cannot hoist: the checks place it right after a convergent barrier (`bar.warp.sync`,
/// `barrier.sync`), which SimplifyCFG never hoists, and past which it does not hoist an
/// instruction with side effects.
#[cfg(all(target_arch = "nvptx64", cohort_checked))]
#[inline(always)]
#[must_use]
pub(crate) fn site_marker() -> u32 {
    let r: u32;
    // SAFETY: a move of an immediate into a register; the comment is for cohort-build.
    unsafe { asm!("mov.u32 {0}, 0; // cohort-site?", out(reg32) r, options(nomem, nostack, preserves_flags)) };
    r
}

/// `mbarrier.init.shared.b64 [addr], count` (sm_80): makes the 8 bytes at shared address
/// `addr` an mbarrier that completes a phase when `count` arrivals have been made.
///
/// # Safety
/// sm_80+; `addr` is an 8-byte aligned shared-memory address that no thread uses as an
/// mbarrier meanwhile, and every thread that will use it is ordered after this (a block
/// barrier) before it does.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
#[inline(always)]
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

// ---------------------------------------------------------------------------------------------
// Fences and miscellany

macro_rules! fence {
    ($($(#[$m:meta])* $name:ident => $ins:literal;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        pub fn $name() {
            on_device!(stringify!($name) => {
                // SAFETY: a fence only orders this thread's memory accesses.
                unsafe { asm!($ins, options(nostack)) }
            } host => { core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst) })
        }
    )*};
}

fence! {
    /// `fence.sc.cta`: sequentially consistent fence among the block's threads
    /// (`__threadfence_block()`).
    fence_sc_cta => "fence.sc.cta;";
    /// `fence.sc.gpu`: sequentially consistent fence at device scope (`__threadfence()`).
    fence_sc_gpu => "fence.sc.gpu;";
    /// `fence.sc.sys`: sequentially consistent fence at system scope (`__threadfence_system()`).
    fence_sc_sys => "fence.sc.sys;";
    /// `fence.acq_rel.cta`: acquire-release fence at block scope.
    fence_acq_rel_cta => "fence.acq_rel.cta;";
    /// `fence.acq_rel.gpu`: acquire-release fence at device scope.
    fence_acq_rel_gpu => "fence.acq_rel.gpu;";
    /// `fence.acq_rel.sys`: acquire-release fence at system scope.
    fence_acq_rel_sys => "fence.acq_rel.sys;";
}

/// `nanosleep.u32`: suspends the thread for about `ns` nanoseconds (0..=1_000_000); sm_70+.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn nanosleep(ns: u32) {
    on_device!("nanosleep" => {
        // SAFETY: sleeping has no memory effects.
        unsafe { asm!("nanosleep.u32 {0};", in(reg32) ns, options(nomem, nostack)) }
    } host => {
        cohort_cpu::yield_now()
    })
}

/// `trap`: aborts the kernel. The host sees `CUDA_ERROR_LAUNCH_FAILED` (or
/// `ILLEGAL_INSTRUCTION`), and the CUDA context is unusable afterwards.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn trap() -> ! {
    on_device!("trap" => {
        // SAFETY: `trap` ends the kernel; nothing after it runs.
        unsafe { nvptx::trap() }
    } host => {
        panic!("trap: the kernel executed `trap`")
    })
}

/// `exit`: ends this thread. Threads that exit no longer take part in block barriers.
///
/// # Safety
/// No other thread may wait for this one at a warp-level `*_sync` whose mask names it.
#[inline(always)]
pub unsafe fn exit() -> ! {
    on_device!("exit" => {
        // SAFETY: the caller guarantees nobody waits for this thread.
        unsafe { asm!("exit;", options(noreturn, nostack)) }
    })
}

// --- Programmatic dependent launch (sm_90) ----------------------------------------------
//
// Below sm_90 (the sm_80 PTX) both are nothing: the runtime never launches a kernel of a module
// built without them programmatically (it launches it in plain stream order), so there is no
// prerequisite grid to wait for, and no dependent to release early.

/// `griddepcontrol.wait` (sm_90+): waits until every prerequisite grid of a programmatic
/// dependent launch has completed and its memory operations are visible to this grid
/// (`cudaGridDependencySynchronize()`); returns at once in a grid launched without one. Below
/// sm_90 it is nothing (see above).
///
/// Not `nomem`: the compiler must not move a memory access of this thread across it.
#[inline(always)]
#[doc(alias = "cudaGridDependencySynchronize")]
pub fn griddepcontrol_wait() {
    on_device!("griddepcontrol_wait" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: waiting for the prerequisite grids has no precondition.
        unsafe {
            asm!("griddepcontrol.wait;", options(nostack))
        };
    } host => {})
}

/// `griddepcontrol.launch_dependents` (sm_90+): lets the grid launched programmatically after
/// this one on its stream be scheduled once every block of this grid has executed it (or
/// exited), instead of at this grid's end (`cudaTriggerProgrammaticLaunchCompletion()`). It
/// orders no memory: the dependent still sees this grid's writes only after its own
/// [`griddepcontrol_wait`]. Below sm_90 it is nothing (see above).
#[inline(always)]
#[doc(alias = "cudaTriggerProgrammaticLaunchCompletion")]
pub fn griddepcontrol_launch_dependents() {
    on_device!("griddepcontrol_launch_dependents" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: releasing the dependent grid's launch has no precondition and touches no
        // memory of this thread.
        unsafe {
            asm!("griddepcontrol.launch_dependents;", options(nostack))
        };
    } host => {})
}

// --- Floating point ----------------------------------------------------------------------

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
mod approx_host;

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

// ---------------------------------------------------------------------------------------------
// Address spaces

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

// ---------------------------------------------------------------------------------------------
// Device runtime (CDP2): the two calls `child<<<grid, block, smem, stream>>>(args)` becomes in
// device code, as nvcc 13.0 emits them for sm_90. Their bodies are in libcudadevrt, which the
// host links into modules that call them (see `cohort_runtime`'s module loading).

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    // `.extern .func (.param .b64 r) __cudaCDP2GetParameterBufferV2(.param .b64 func,
    //  .param .align 4 .b8 grid[12], .param .align 4 .b8 block[12], .param .b32 smem)`
    fn __cudaCDP2GetParameterBufferV2(
        func: u64,
        grid: crate::thread::Dim3,
        block: crate::thread::Dim3,
        shared_mem_bytes: u32,
    ) -> *mut u8;
    // `.extern .func (.param .b32 r) __cudaCDP2LaunchDeviceV2(.param .b64 buf, .param .b64 stream)`
    fn __cudaCDP2LaunchDeviceV2(buffer: *mut u8, stream: u64) -> u32;
}

/// `__cudaCDP2GetParameterBufferV2`: reserves a launch of the kernel entry at address `func`
/// with this grid, block and dynamic shared memory, and returns the buffer its parameters are
/// to be written into (each at its natural alignment, in the order of the entry's `.param`
/// list), or null when the device runtime refuses (no launch slot left, an impossible
/// configuration).
///
/// # Safety
/// `func` must be the address of a kernel entry of this module (`mov.u64 %rd, entry;`). A
/// non-null buffer must be filled with exactly the entry's parameters and then passed to
/// [`cdp2_launch_device`].
#[inline(always)]
#[doc(alias = "cudaGetParameterBuffer")]
pub unsafe fn cdp2_get_parameter_buffer(
    func: u64,
    grid: crate::thread::Dim3,
    block: crate::thread::Dim3,
    shared_mem_bytes: u32,
) -> *mut u8 {
    on_device!("raw::cdp2_get_parameter_buffer" => {
        // SAFETY: forwarded to the caller.
        unsafe { __cudaCDP2GetParameterBufferV2(func, grid, block, shared_mem_bytes) }
    })
}

/// `__cudaCDP2LaunchDeviceV2`: launches the grid whose parameter buffer is `buffer` into
/// `stream` (`0`: the block's implicit stream; `0x3`: tail launch; `0x4`: fire-and-forget).
/// Returns the `cudaError_t` (0: launched).
///
/// # Safety
/// `buffer` must come from [`cdp2_get_parameter_buffer`], be filled with the entry's
/// parameters, and be launched once; every pointer in it must stay valid, and every memory it
/// names must be free of races, for as long as the child grid may run.
#[inline(always)]
#[doc(alias = "cudaLaunchDevice")]
pub unsafe fn cdp2_launch_device(buffer: *mut u8, stream: u64) -> u32 {
    on_device!("raw::cdp2_launch_device" => {
        // SAFETY: forwarded to the caller.
        unsafe { __cudaCDP2LaunchDeviceV2(buffer, stream) }
    })
}

//! Warp collectives: shuffles, votes, matches, `activemask`, `redux.sync`, and `fns` (PTX ISA
//! §"Parallel Synchronization and Communication Instructions", §"Integer Arithmetic").
//!
//! Every collective is LLVM's NVVM intrinsic, which LLVM knows is `convergent` (see
//! [`crate::raw`]); `fns` is per-thread arithmetic and inline assembly.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::host::on_device;

#[cfg(target_arch = "nvptx64")]
#[allow(improper_ctypes)]
unsafe extern "C" {
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
                super::mark_instruction();
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
                super::mark_instruction();
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
        super::mark_instruction();
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
        super::mark_instruction();
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
        super::mark_instruction();
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

/// The anchor of a warp-synchronous instruction emitted as inline assembly: LLVM's
/// `llvm.nvvm.activemask`, whose result the asm names in a PTX comment (`// {anchor}`).
///
/// Some warp instructions have no NVVM intrinsic Rust can call in the form that matters:
/// LLVM's `ldmatrix` / `stmatrix` take an address-space-overloaded pointer, and Rust has only
/// generic pointers, whose `ldmatrix` costs ptxas 64-bit address arithmetic per load (see
/// [`super::mma`]). rustc's inline assembly is not `convergent` to LLVM, so such an asm is
/// emitted **right after this call, in the same basic block, consuming its result**:
///
/// - the asm has side effects (never `pure`): LLVM never deletes, merges, speculates, sinks or
///   hoists it — except hoisting or sinking *identical* code out of both arms of a branch,
///   which merges two executions into one and so never splits a converged one;
/// - what remains is duplication of the block that holds it into several paths (jump
///   threading, SimplifyCFG's threading of a branch over a value known in a predecessor,
///   loop unswitching, tail duplication); each of these refuses a block holding a convergent
///   call (LLVM's definition of `convergent`, in IR and in the NVPTX machine instructions,
///   where `activemask` is `isConvergent`), and this call is one, with side effects, so it is
///   never removed before code generation;
/// - the asm cannot leave the anchor's block: it reads the anchor's result (so it is not
///   hoisted above it), and neither it nor the anchor, both with side effects, is moved
///   past the other.
///
/// ptxas deletes an `activemask` whose result nothing reads (the comment is not a read): the
/// anchor costs no SASS instruction (checked on `cohort_kernels::gemm`'s SASS by `tests/ptx`).
/// The PTX test `golden_convergent` checks that every warp instruction emitted as inline
/// assembly follows its anchor.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[must_use]
pub(crate) fn asm_anchor() -> u32 {
    // SAFETY: `activemask` has no preconditions.
    unsafe { nvvm_activemask() }
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
        super::mark_instruction();
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
                super::mark_instruction();
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

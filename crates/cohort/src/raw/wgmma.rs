//! Hopper's warpgroup-level matrix multiply-accumulate (PTX ISA §"Asynchronous Warpgroup Level
//! Matrix Multiply-Accumulate Instructions", `sm_90a`), and `setmaxnreg`. The safe form is
//! [`crate::wgmma`].
//!
//! | PTX | here |
//! |---|---|
//! | `wgmma.fence.sync.aligned` | [`WgmmaAcc::fence`] (the accumulators as operands: see below) |
//! | `wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 d, a-desc, b-desc, scale-d, 1, 1, 0, 0` | [`WgmmaAcc::mma_bf16`] (N = 8, 16, 32, 64, 128, 256: `[f32; N / 2]`) |
//! | `… .f32.f16.f16 …` | [`WgmmaAcc::mma_f16`] |
//! | `wgmma.commit_group.sync.aligned` | [`wgmma_commit_group`] |
//! | `wgmma.wait_group.sync.aligned N` | [`WgmmaAcc::wait`] (the accumulators as operands), [`wgmma_wait_group`] |
//! | `setmaxnreg.{inc,dec}.sync.aligned.u32 N` | [`setmaxnreg_inc`], [`setmaxnreg_dec`] |
//!
//! **A warpgroup** is four consecutive warps of a block whose first is a multiple of 4 (threads
//! `128 g .. 128 g + 128` of the block's linear index). Every instruction here is `.sync.aligned`
//! over it: all 128 threads execute the same instruction, converged, or the behaviour is
//! undefined.
//!
//! **Operands.** A and B are K-major matrices in shared memory given by 64-bit *matrix
//! descriptors* ([`wgmma_descriptor`]): A is 64×16 (M×K), B is N×16 (N×K, i.e. Bᵀ stored
//! row-major: `imm-trans-b = 0`), D is 64×N `f32` in registers, N / 2 per thread:
//! element `i` of the thread of lane `l` in warp `w` (0..4) of the warpgroup is
//! (row `16 w + l / 4 + 8 ((i / 2) % 2)`, column `8 (i / 4) + 2 (l % 4) + i % 2)`
//! ([`acc_coords`]), the `mma.sync` m16n8 accumulator layout repeated along N.
//!
//! **Ordering (HOPPER-FACTS).** The MMA reads and writes the accumulator registers
//! asynchronously, from `mma_async` until a `wait_group` covers it. LLVM does not know that: it
//! sees ordinary registers. So the fence and the wait take the accumulators as `inout`
//! operands (CUTLASS's `warpgroup_fence_operand`): LLVM cannot move an accumulator's
//! initialisation past the fence, nor a read of it above the wait, and keeps them in registers
//! (otherwise ptxas serialises the MMAs, warning `C7517 warpgroup.wait is injected`).
//!
//! **Targets.** `wgmma` and `setmaxnreg` assemble only for `.target sm_90a`
//! (`cfg(target_feature = "sm_90a")`, which `cohort-build` sets for the `sm_90a` module it
//! builds beside `sm_90` for crates that ask: `Builder::arch_specific`). In every other device
//! build each of them is a trap marked with [`NEEDS_SM_90A`], and the runtime refuses to launch
//! a kernel that reaches one (`cohort_runtime::Error::NeedsArchSpecific`): never run as
//! something else.
//!
//! **On the CPU device** the MMA is computed when issued, from the shared memory the
//! descriptors address (the swizzle modes applied to the address bits as the hardware does:
//! [`swizzle_address`]): each element of D is its `c` (or 0 with `scale-d` false) plus the 16
//! products in order of `k`, each sum rounded to `f32`. BF16/F16 products are exact in `f32`;
//! the tensor cores' adder order and intermediate precision are unspecified, so sums that are
//! not exact in `f32` can differ from a GPU's in the last bits. Fences, commits and waits have
//! nothing left to order there. The lanes of a warp must give the same descriptors (a
//! divergent or disagreeing warp ends the launch with an error naming the call).

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
use core::arch::asm;

use crate::host::on_device;

/// The token every device build without `sm_90a` puts where a `wgmma` or `setmaxnreg` would be
/// (a PTX register of that name, then `trap`): the runtime refuses to launch a kernel from whose
/// entry one is reachable in the loaded module.
pub const NEEDS_SM_90A: &str = "cohort_needs_sm_90a";

/// The marked trap of a build without `sm_90a` (see [`NEEDS_SM_90A`]).
#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90a")))]
#[inline(always)]
fn needs_sm_90a() -> ! {
    // SAFETY: declares a register in its own scope and traps; the runtime never launches a
    // kernel that reaches this (the register's name marks it in the PTX).
    unsafe {
        core::arch::asm!(
            "{{ .reg .b32 cohort_needs_sm_90a; mov.b32 cohort_needs_sm_90a, 0; trap; }}",
            options(noreturn, nostack)
        )
    }
}

/// The descriptor of a K-major matrix in shared memory (`wgmma`'s A or B operand): the start
/// address (`addr`, a multiple of 16, below 2^18), the leading-dimension byte offset `lbo`
/// (no swizzle: between adjacent 8×16-byte core matrices along K), the stride-dimension byte
/// offset `sbo` (between adjacent groups of 8 rows), both multiples of 16 below 2^18, and the
/// swizzle `mode` (0 none, 1 128-byte, 2 64-byte, 3 32-byte). Bits: 0–13 `addr >> 4`, 16–29
/// `lbo >> 4`, 32–45 `sbo >> 4`, 49–51 base offset (0), 62–63 the mode.
#[inline(always)]
#[must_use]
pub const fn wgmma_descriptor(addr: u32, lbo: u32, sbo: u32, mode: u32) -> u64 {
    ((addr as u64 >> 4) & 0x3fff)
        | (((lbo as u64 >> 4) & 0x3fff) << 16)
        | (((sbo as u64 >> 4) & 0x3fff) << 32)
        | ((mode as u64 & 3) << 62)
}

/// The shared address at which the hardware keeps the byte whose unswizzled address is `addr`,
/// for swizzle `mode` (as [`wgmma_descriptor`]'s; TMA's `CU_TENSOR_MAP_SWIZZLE_*` are the same
/// functions): the 16-byte chunk bits 4.. of the address XORed with bits 7.. (three bits for
/// 128-byte, two for 64-byte, one for 32-byte swizzle; CUTLASS's `Swizzle<3,4,3>`,
/// `<2,4,3>`, `<1,4,3>`).
#[inline(always)]
#[must_use]
pub const fn swizzle_address(addr: u32, mode: u32) -> u32 {
    let mask = match mode {
        1 => 7,
        2 => 3,
        3 => 1,
        _ => 0,
    };
    addr ^ (((addr >> 7) & mask) << 4)
}

/// Where element `i` of a thread's `m64nNk16` accumulator sits in D: (row, column), for the
/// thread of lane `lane` in warp `warp` (0..4) of its warpgroup (see the module docs).
#[inline(always)]
#[must_use]
pub const fn acc_coords(warp: u32, lane: u32, i: u32) -> (u32, u32) {
    (16 * (warp % 4) + (lane % 32) / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (lane % 4) + i % 2)
}

mod sealed {
    pub trait Sealed {}
}

/// A thread's `f32` accumulator registers of a `wgmma.mma_async.m64nNk16`: `[f32; N / 2]` for N
/// in 8, 16, 32, 64, 128, 256 (sealed). Its methods are the instructions that read or write
/// them, each with every register as an operand.
///
/// # Safety
/// Implemented only here, for the arrays whose length is `N / 2` of an `N` the instruction has.
pub unsafe trait WgmmaAcc: sealed::Sealed + Copy {
    /// The MMA's N.
    const N: u32;

    /// `wgmma.fence.sync.aligned`, with these registers as operands: orders this thread's
    /// register and shared-memory accesses before the warpgroup's next `mma_async`s (every
    /// MMA's accumulators must have been fenced after they were last written by anything but
    /// an MMA).
    ///
    /// # Safety
    /// sm_90a; every thread of the warpgroup executes this same instruction, converged.
    unsafe fn fence(&mut self);

    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 self, a, b, scale_d, 1, 1, 0, 0`:
    /// starts `self = A · Bᵀ + (scale_d ? self : 0)` for the K-major BF16 A (64×16) and B (N×16)
    /// that the descriptors `a` and `b` describe.
    ///
    /// # Safety
    /// sm_90a; every thread of the warpgroup executes this same instruction with the same `a`,
    /// `b` and `scale_d`, converged, after a [`fence`](Self::fence); the descriptors describe
    /// shared memory of this block that holds the operands (64 rows of A and N of B, 16
    /// elements each) and that nothing writes until a [`wait`](Self::wait) covers this MMA's
    /// group; the registers are not read or written by anything but MMAs until then.
    unsafe fn mma_bf16(&mut self, a: u64, b: u64, scale_d: bool);

    /// As [`mma_bf16`](Self::mma_bf16) with F16 A and B (`.f32.f16.f16`).
    ///
    /// # Safety
    /// As [`mma_bf16`](Self::mma_bf16).
    unsafe fn mma_f16(&mut self, a: u64, b: u64, scale_d: bool);

    /// `wgmma.wait_group.sync.aligned N`, with these registers as operands: waits until at most
    /// the `N` most recent groups this warpgroup committed are pending.
    ///
    /// # Safety
    /// sm_90a; every thread of the warpgroup executes this same instruction, converged.
    unsafe fn wait<const N: u32>(&mut self);
}

macro_rules! wgmma_acc {
    ($($n:literal, $r:literal, [$first:literal $(, $i:literal)*];)*) => {$(
        impl sealed::Sealed for [f32; $r] {}

        // SAFETY: `[f32; N / 2]` for an `N` of `m64nNk16` (the macro's rows).
        unsafe impl WgmmaAcc for [f32; $r] {
            const N: u32 = $n;

            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fence(&mut self) {
                on_device!("wgmma_fence" => {
                    #[cfg(target_feature = "sm_90a")]
                    // SAFETY: the caller's contract; the registers are only named (in a comment),
                    // so that LLVM orders their accesses around the fence.
                    unsafe {
                        asm!(
                            concat!("wgmma.fence.sync.aligned; // {", $first, "}" $(, " {", $i, "}")*),
                            inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                            options(nostack)
                        )
                    }
                    #[cfg(not(target_feature = "sm_90a"))]
                    needs_sm_90a()
                } host => {
                    super::mark_instruction();
                    let _ = cohort_cpu::warp_gather("wgmma.fence", u32::MAX, ());
                })
            }

            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn mma_bf16(&mut self, a: u64, b: u64, scale_d: bool) {
                on_device!("wgmma_mma_async_bf16" => {
                    #[cfg(target_feature = "sm_90a")]
                    // SAFETY: the caller's contract.
                    unsafe {
                        asm!(
                            // One line: a `}` alone on a line would read as the end of the
                            // function to text tools that cut entries out of the PTX.
                            concat!("{{ .reg .pred p; setp.ne.b32 p, {sd}, 0; wgmma.mma_async.sync.aligned.m64n", $n,
                                "k16.f32.bf16.bf16 {{{", $first, "}" $(, ", {", $i, "}")*,
                                "}}, {da}, {db}, p, 1, 1, 0, 0; }}"),
                            inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                            da = in(reg64) a, db = in(reg64) b, sd = in(reg32) u32::from(scale_d),
                            options(nostack)
                        )
                    }
                    #[cfg(not(target_feature = "sm_90a"))]
                    { let _ = (a, b, scale_d); needs_sm_90a() }
                } host => {
                    super::mark_instruction();
                    host::mma(self, a, b, scale_d, host::In::Bf16);
                })
            }

            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn mma_f16(&mut self, a: u64, b: u64, scale_d: bool) {
                on_device!("wgmma_mma_async_f16" => {
                    #[cfg(target_feature = "sm_90a")]
                    // SAFETY: the caller's contract.
                    unsafe {
                        asm!(
                            // One line: a `}` alone on a line would read as the end of the
                            // function to text tools that cut entries out of the PTX.
                            concat!("{{ .reg .pred p; setp.ne.b32 p, {sd}, 0; wgmma.mma_async.sync.aligned.m64n", $n,
                                "k16.f32.f16.f16 {{{", $first, "}" $(, ", {", $i, "}")*,
                                "}}, {da}, {db}, p, 1, 1, 0, 0; }}"),
                            inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                            da = in(reg64) a, db = in(reg64) b, sd = in(reg32) u32::from(scale_d),
                            options(nostack)
                        )
                    }
                    #[cfg(not(target_feature = "sm_90a"))]
                    { let _ = (a, b, scale_d); needs_sm_90a() }
                } host => {
                    super::mark_instruction();
                    host::mma(self, a, b, scale_d, host::In::F16);
                })
            }

            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn wait<const N: u32>(&mut self) {
                on_device!("wgmma_wait_group" => {
                    #[cfg(target_feature = "sm_90a")]
                    // SAFETY: the caller's contract; the registers are operands so that no read
                    // of them moves above the wait (see the module docs).
                    unsafe {
                        asm!(
                            concat!("wgmma.wait_group.sync.aligned {n}; // {", $first, "}" $(, " {", $i, "}")*),
                            inout(reg32) self[$first], $(inout(reg32) self[$i],)*
                            n = const N,
                            options(nostack)
                        )
                    }
                    #[cfg(not(target_feature = "sm_90a"))]
                    needs_sm_90a()
                } host => {
                    super::mark_instruction();
                    let _ = cohort_cpu::warp_gather("wgmma.wait_group", u32::MAX, N);
                })
            }
        }
    )*};
}

wgmma_acc! {
    8, 4, [0, 1, 2, 3];
    16, 8, [0, 1, 2, 3, 4, 5, 6, 7];
    32, 16, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
    64, 32, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31];
    128, 64, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63];
    256, 128, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127];
}

/// `wgmma.commit_group.sync.aligned`: closes the warpgroup's group of `mma_async`s issued since
/// the last commit (an empty group too).
///
/// # Safety
/// sm_90a; every thread of the warpgroup executes this same instruction, converged.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn wgmma_commit_group() {
    on_device!("wgmma_commit_group" => {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract.
        unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) }
        #[cfg(not(target_feature = "sm_90a"))]
        needs_sm_90a()
    } host => {
        super::mark_instruction();
        let _ = cohort_cpu::warp_gather("wgmma.commit_group", u32::MAX, ());
    })
}

/// `wgmma.wait_group.sync.aligned N` without accumulator operands: for a warpgroup whose
/// accumulators are not read until a later [`WgmmaAcc::wait`] (which orders them).
///
/// # Safety
/// sm_90a; every thread of the warpgroup executes this same instruction, converged.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn wgmma_wait_group<const N: u32>() {
    on_device!("wgmma_wait_group" => {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract.
        unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) }
        #[cfg(not(target_feature = "sm_90a"))]
        needs_sm_90a()
    } host => {
        super::mark_instruction();
        let _ = cohort_cpu::warp_gather("wgmma.wait_group", u32::MAX, N);
    })
}

/// `setmaxnreg.inc.sync.aligned.u32 N` (sm_90a): raises this warpgroup's registers per thread
/// to `N` (24..=256, a multiple of 8), waiting until the SM has them (other warpgroups of the
/// block release theirs with [`setmaxnreg_dec`]).
///
/// # Safety
/// sm_90a; every thread of the warpgroup executes this same instruction, converged; `N` is at
/// least the warpgroup's current count; the block's warpgroups release enough registers for it
/// (else it waits forever).
#[inline(always)]
pub unsafe fn setmaxnreg_inc<const N: u32>() {
    const { assert!(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24..=256 registers, a multiple of 8") };
    on_device!("setmaxnreg_inc" => {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract.
        unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack)) }
        #[cfg(not(target_feature = "sm_90a"))]
        needs_sm_90a()
    } host => {})
}

/// `setmaxnreg.dec.sync.aligned.u32 N` (sm_90a): lowers this warpgroup's registers per thread
/// to `N` (24..=256, a multiple of 8), releasing the rest to the SM's pool.
///
/// # Safety
/// sm_90a; every thread of the warpgroup executes this same instruction, converged; `N` is at
/// most the warpgroup's current count.
#[inline(always)]
pub unsafe fn setmaxnreg_dec<const N: u32>() {
    const { assert!(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24..=256 registers, a multiple of 8") };
    on_device!("setmaxnreg_dec" => {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract.
        unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack)) }
        #[cfg(not(target_feature = "sm_90a"))]
        needs_sm_90a()
    } host => {})
}

/// The CPU device's warpgroup tensor core.
#[cfg(not(target_arch = "nvptx64"))]
mod host {
    /// The input type of an MMA.
    #[derive(Clone, Copy)]
    pub(super) enum In {
        Bf16,
        F16,
    }

    fn to_f32(t: In, h: u16) -> f32 {
        match t {
            In::Bf16 => f32::from_bits(u32::from(h) << 16),
            In::F16 => half::f16::from_bits(h).to_f32(),
        }
    }

    /// The shared address of element (`row`, `k`) of the K-major matrix `desc` describes.
    #[track_caller]
    pub(super) fn element_address(desc: u64, row: u32, k: u32) -> u32 {
        let field = |shift: u32| (((desc >> shift) & 0x3fff) << 4) as u32;
        let (start, lbo, sbo, mode) = (field(0), field(16), field(32), (desc >> 62) as u32);
        assert!((desc >> 49) & 7 == 0, "wgmma: a descriptor with a base offset (not supported by the CPU device)");
        match mode {
            0 => start + (row / 8) * sbo + (k / 8) * lbo + (row % 8) * 16 + (k % 8) * 2,
            _ => {
                let span = match mode {
                    1 => 128,
                    2 => 64,
                    _ => 32,
                };
                super::swizzle_address(start + (row / 8) * sbo + (row % 8) * span + k * 2, mode)
            }
        }
    }

    #[track_caller]
    fn ld16(addr: u32) -> u16 {
        cohort_cpu::shared_access(addr, 2, false);
        // SAFETY: the MMA's caller guarantees that the descriptors describe shared memory of
        // this block (every element address is in its window); the block's threads run one at
        // a time, so the read races with nothing.
        unsafe { crate::host::shared_ptr(addr).cast::<u16>().read_unaligned() }
    }

    /// This thread's warp within its warpgroup.
    fn warp_in_group() -> u32 {
        let (t, d) = (cohort_cpu::thread_idx(), cohort_cpu::block_dim());
        let linear = t.x + d.x * (t.y + d.y * t.z);
        (linear / 32) % 4
    }

    #[track_caller]
    pub(super) fn mma<const R: usize>(acc: &mut [f32; R], a: u64, b: u64, scale_d: bool, t: In) {
        let all = cohort_cpu::warp_gather("wgmma.mma_async", u32::MAX, (a, b, scale_d));
        assert!(
            all.iter().all(|x| *x == (a, b, scale_d)),
            "wgmma.mma_async: the lanes of a warp gave different descriptors or scale-d"
        );
        let (w, l) = (warp_in_group(), cohort_cpu::lane_id());
        for (i, d) in acc.iter_mut().enumerate() {
            let (row, col) = super::acc_coords(w, l, i as u32);
            let mut sum = if scale_d { *d } else { 0.0 };
            for k in 0..16 {
                let x = to_f32(t, ld16(element_address(a, row, k)));
                let y = to_f32(t, ld16(element_address(b, col, k)));
                sum += x * y;
            }
            *d = sum;
        }
    }
}

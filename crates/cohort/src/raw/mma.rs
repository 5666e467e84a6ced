//! Tensor cores (PTX ISA §"Warp-level Matrix Multiply-Accumulate Instructions"): `mma.sync`
//! m16n8k16 with BF16 / F16 inputs, `ldmatrix`, and the `cvt`s between `f32` and the 16-bit
//! floats.
//!
//! `mma.sync` and `ldmatrix` are warp-wide and `.aligned`: every lane of the warp must execute
//! **the same instruction**, converged. `mma.sync` is emitted through LLVM's NVVM intrinsics
//! (`llvm.nvvm.mma.*`), which LLVM knows are `convergent` (see [`crate::raw`]): never moved
//! into, out of, or duplicated across divergent control flow. `ldmatrix` is inline assembly
//! of its `.shared` form with a 32-bit shared address, after a convergence anchor
//! (`raw::warp::asm_anchor`, device code only, whose docs give the argument): LLVM's `ldmatrix` intrinsic
//! takes an address-space-overloaded pointer, Rust can only pass a generic one, and ptxas then
//! spends three 64-bit instructions on each load's address where the `.shared` form of a
//! 32-bit register takes the offset as an immediate (`LDSM [R + 0x500]`, as CUDA C++'s
//! `asm volatile` `ldmatrix` does). The `cvt`s are per-thread arithmetic and inline assembly.
//!
//! Fragments are passed as the registers PTX names (`.b32` words holding two 16-bit values,
//! the lower-numbered element in the low half; `f32` accumulators). Which lane holds which
//! element is documented, and computed, by [`crate::mma`].
//!
//! On the CPU device, `mma.sync` and `ldmatrix` gather the warp's operands with
//! `cohort_cpu::warp_gather` (a warp collective: a divergent warp is an `Err` naming the call),
//! compute the whole instruction in every lane, and keep the lane's part. The products of two
//! BF16 or F16 values are exact in `f32`; the CPU device adds `c` and the sixteen products in
//! `f32`, in order of `k`, rounding each sum to nearest-even. The tensor cores' adder keeps
//! other intermediate precision and order (not specified by NVIDIA), so sums that are not exact
//! in `f32` can differ from a GPU's in the last bits.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::host::on_device;

/// Two F16 values, LLVM's `<2 x half>` (the operand type of the F16 `mma` intrinsics).
#[cfg(target_arch = "nvptx64")]
#[repr(simd)]
#[derive(Clone, Copy)]
struct H2([f16; 2]);

/// Four `f32`: the result of the `mma` intrinsics with F32 accumulators.
#[cfg(target_arch = "nvptx64")]
#[repr(C)]
#[derive(Clone, Copy)]
struct F4(f32, f32, f32, f32);

/// Two `<2 x half>`: the result of the F16-accumulating `mma` intrinsic.
#[cfg(target_arch = "nvptx64")]
#[repr(C)]
#[derive(Clone, Copy)]
struct H2x2(H2, H2);

#[cfg(target_arch = "nvptx64")]
#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.mma.m16n8k16.row.col.bf16"]
    fn nvvm_mma_bf16(a0: u32, a1: u32, a2: u32, a3: u32, b0: u32, b1: u32, c0: f32, c1: f32, c2: f32, c3: f32) -> F4;
    #[link_name = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"]
    fn nvvm_mma_f16_f32(a0: H2, a1: H2, a2: H2, a3: H2, b0: H2, b1: H2, c0: f32, c1: f32, c2: f32, c3: f32) -> F4;
    #[link_name = "llvm.nvvm.mma.m16n8k16.row.col.f16.f16"]
    fn nvvm_mma_f16_f16(a0: H2, a1: H2, a2: H2, a3: H2, b0: H2, b1: H2, c0: H2, c1: H2) -> H2x2;
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn h2(w: u32) -> H2 {
    // SAFETY: two `f16` are 32 bits, any bit pattern valid.
    unsafe { core::mem::transmute::<u32, H2>(w) }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn w32(h: H2) -> u32 {
    // SAFETY: as in `h2`.
    unsafe { core::mem::transmute::<H2, u32>(h) }
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` (sm_80+): `d = a · b + c` for a 16×16
/// BF16 `a` (row-major), a 16×8 BF16 `b` (column-major) and 16×8 `f32` `c`, `d`, each held by
/// the 32 lanes of the warp as [`crate::mma`] documents.
///
/// # Safety
/// Every lane of the warp executes this same instruction, converged (all 32 lanes present: the
/// block's size a multiple of 32 is not enough: none may have exited or be elsewhere).
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m16n8k16_f32_bf16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    on_device!("mma_m16n8k16_f32_bf16" => {
        // SAFETY: the caller's convergence contract.
        let d = unsafe { nvvm_mma_bf16(a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]) };
        [d.0, d.1, d.2, d.3]
    } host => {
        super::mark_instruction();
        host::mma_f32(host::In::Bf16, a, b, c)
    })
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32` (sm_80+): as
/// [`mma_m16n8k16_f32_bf16`] with F16 inputs.
///
/// # Safety
/// As [`mma_m16n8k16_f32_bf16`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m16n8k16_f32_f16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    on_device!("mma_m16n8k16_f32_f16" => {
        // SAFETY: the caller's convergence contract.
        let d = unsafe {
            nvvm_mma_f16_f32(h2(a[0]), h2(a[1]), h2(a[2]), h2(a[3]), h2(b[0]), h2(b[1]), c[0], c[1], c[2], c[3])
        };
        [d.0, d.1, d.2, d.3]
    } host => {
        super::mark_instruction();
        host::mma_f32(host::In::F16, a, b, c)
    })
}

/// `mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16` (sm_80+): F16 inputs and F16
/// accumulators (`c`, `d`: two words of two F16 each, the elements of the `f32` form in order).
///
/// # Safety
/// As [`mma_m16n8k16_f32_bf16`].
#[inline(always)]
#[must_use]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m16n8k16_f16_f16(a: [u32; 4], b: [u32; 2], c: [u32; 2]) -> [u32; 2] {
    on_device!("mma_m16n8k16_f16_f16" => {
        // SAFETY: the caller's convergence contract.
        let d = unsafe {
            nvvm_mma_f16_f16(h2(a[0]), h2(a[1]), h2(a[2]), h2(a[3]), h2(b[0]), h2(b[1]), h2(c[0]), h2(c[1]))
        };
        [w32(d.0), w32(d.1)]
    } host => {
        super::mark_instruction();
        host::mma_f16(a, b, c)
    })
}

macro_rules! ldmatrix {
    ($($(#[$m:meta])* $name:ident, $n:literal, $trans:literal, $ptx:literal, ($($r:ident),*);)*) => {$(
        $(#[$m])*
        ///
        /// Lane `8·m + r` supplies the shared-memory address `row_addr` of row `r` of matrix `m`
        /// (8 rows of 8 16-bit elements, 16 contiguous bytes each); the other lanes' addresses
        /// are not read. Lane `l` receives, in word `m`, elements `2·(l % 4)` and
        /// `2·(l % 4) + 1` of row `l / 4` of matrix `m` (with `.trans`: of column `l / 4`, i.e.
        /// rows `2·(l % 4)` and `2·(l % 4) + 1` at column `l / 4`), the first in the low half.
        ///
        /// The `.shared` form, of a 32-bit shared address (inline assembly after its convergence
        /// anchor, `raw::warp::asm_anchor`): `row + constant` becomes one instruction with
        /// an immediate offset (`LDSM [R + 0x500]`), as in CUDA C++.
        ///
        /// # Safety
        /// Every lane of the warp executes this same instruction, converged; every address
        /// that is read is a valid shared-memory address of this block, 16-byte aligned, with
        /// 16 readable bytes.
        #[inline(always)]
        #[must_use]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(row_addr: u32) -> [u32; $n] {
            on_device!(stringify!($name) => {
                let anchor = super::warp::asm_anchor();
                $(let $r: u32;)*
                // SAFETY: the caller's contract (convergence, addresses); the asm follows its
                // anchor (see `asm_anchor`: LLVM does not split this call into divergent
                // copies). Not `pure`: it must not be sunk into a branch or duplicated.
                unsafe {
                    asm!(
                        concat!("// {anchor}\n\t", $ptx),
                        $($r = lateout(reg32) $r,)*
                        a = in(reg32) row_addr,
                        anchor = in(reg32) anchor,
                        options(readonly, nostack, preserves_flags),
                    )
                };
                [$($r),*]
            } host => {
                super::mark_instruction();
                host::ldmatrix::<$n>(row_addr, $trans)
            })
        }
    )*};
}

ldmatrix! {
    /// `ldmatrix.sync.aligned.m8n8.x1.shared.b16` (sm_75+): one 8×8 matrix of 16-bit elements.
    ldmatrix_x1, 1, false, "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{{r0}}}, [{a}];", (r0);
    /// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: two 8×8 matrices.
    ldmatrix_x2, 2, false, "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{r0}, {r1}}}, [{a}];", (r0, r1);
    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8×8 matrices.
    ldmatrix_x4, 4, false, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];", (r0, r1, r2, r3);
    /// `ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16`: one 8×8 matrix, transposed.
    ldmatrix_x1_trans, 1, true, "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {{{r0}}}, [{a}];", (r0);
    /// `ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16`: two 8×8 matrices, transposed.
    ldmatrix_x2_trans, 2, true, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {{{r0}, {r1}}}, [{a}];", (r0, r1);
    /// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: four 8×8 matrices, transposed.
    ldmatrix_x4_trans, 4, true, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];", (r0, r1, r2, r3);
}

macro_rules! stmatrix {
    ($($(#[$m:meta])* $name:ident, $n:literal, $trans:literal, $ptx:literal, ($($r:ident),*);)*) => {$(
        $(#[$m])*
        ///
        /// The mirror of `ldmatrix`: lane `8·m + r` supplies the shared-memory address
        /// `row_addr` of row `r` of matrix `m` (8 rows of 8 16-bit elements, 16 contiguous bytes
        /// each); lane `l`'s word `m` of `regs` holds elements `2·(l % 4)` and `2·(l % 4) + 1` of
        /// row `l / 4` of matrix `m` (with `.trans`: of column `l / 4`, i.e. rows `2·(l % 4)` and
        /// `2·(l % 4) + 1` at column `l / 4`), the first in the low half — an m16n8 16-bit
        /// accumulator's layout. Inline assembly after its convergence anchor, as `ldmatrix`.
        /// sm_90+; traps below.
        ///
        /// # Safety
        /// Every lane of the warp executes this same instruction, converged; every address
        /// that is written is a valid shared-memory address of this block, 16-byte aligned,
        /// with 16 writable bytes.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(row_addr: u32, regs: [u32; $n]) {
            on_device!(stringify!($name) => {
                #[cfg(target_feature = "sm_90")]
                {
                    let anchor = super::warp::asm_anchor();
                    let [$($r),*] = regs;
                    // SAFETY: the caller's contract (convergence, addresses); sm_90 (the cfg);
                    // the asm follows its anchor (see `asm_anchor`). Not `pure`: it writes.
                    unsafe {
                        asm!(
                            concat!("// {anchor}\n\t", $ptx),
                            $($r = in(reg32) $r,)*
                            a = in(reg32) row_addr,
                            anchor = in(reg32) anchor,
                            options(nostack, preserves_flags),
                        )
                    };
                }
                #[cfg(not(target_feature = "sm_90"))]
                {
                    let _ = (row_addr, regs);
                    super::trap()
                }
            } host => {
                super::mark_instruction();
                host::stmatrix::<$n>(row_addr, regs, $trans)
            })
        }
    )*};
}

stmatrix! {
    /// `stmatrix.sync.aligned.m8n8.x1.shared.b16` (sm_90): one 8×8 matrix of 16-bit elements.
    stmatrix_x1, 1, false, "stmatrix.sync.aligned.m8n8.x1.shared.b16 [{a}], {{{r0}}};", (r0);
    /// `stmatrix.sync.aligned.m8n8.x2.shared.b16`: two 8×8 matrices.
    stmatrix_x2, 2, false, "stmatrix.sync.aligned.m8n8.x2.shared.b16 [{a}], {{{r0}, {r1}}};", (r0, r1);
    /// `stmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8×8 matrices.
    stmatrix_x4, 4, false, "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{a}], {{{r0}, {r1}, {r2}, {r3}}};", (r0, r1, r2, r3);
    /// `stmatrix.sync.aligned.m8n8.x1.trans.shared.b16`: one 8×8 matrix, transposed.
    stmatrix_x1_trans, 1, true, "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [{a}], {{{r0}}};", (r0);
    /// `stmatrix.sync.aligned.m8n8.x2.trans.shared.b16`: two 8×8 matrices, transposed.
    stmatrix_x2_trans, 2, true, "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [{a}], {{{r0}, {r1}}};", (r0, r1);
    /// `stmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: four 8×8 matrices, transposed.
    stmatrix_x4_trans, 4, true, "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [{a}], {{{r0}, {r1}, {r2}, {r3}}};", (r0, r1, r2, r3);
}

/// `cvt.rn.bf16.f32`: `x` rounded to the nearest BF16 (ties to even), as its bits (sm_80+).
#[inline(always)]
#[must_use]
pub fn cvt_rn_bf16_f32(x: f32) -> u16 {
    on_device!("cvt_rn_bf16_f32" => {
        let r: u16;
        // SAFETY: arithmetic on registers only.
        unsafe { asm!("cvt.rn.bf16.f32 {0}, {1};", out(reg16) r, in(reg32) x, options(pure, nomem, nostack)) };
        r
    } host => {
        half::bf16::from_f32(x).to_bits()
    })
}

/// `cvt.rn.f16.f32`: `x` rounded to the nearest F16 (ties to even), as its bits.
#[inline(always)]
#[must_use]
pub fn cvt_rn_f16_f32(x: f32) -> u16 {
    on_device!("cvt_rn_f16_f32" => {
        let r: u16;
        // SAFETY: arithmetic on registers only.
        unsafe { asm!("cvt.rn.f16.f32 {0}, {1};", out(reg16) r, in(reg32) x, options(pure, nomem, nostack)) };
        r
    } host => {
        half::f16::from_f32(x).to_bits()
    })
}

/// `cvt.f32.f16`: the F16 with bits `h` as `f32` (exact).
#[inline(always)]
#[must_use]
pub fn cvt_f32_f16(h: u16) -> f32 {
    on_device!("cvt_f32_f16" => {
        let r: f32;
        // SAFETY: arithmetic on registers only.
        unsafe { asm!("cvt.f32.f16 {0}, {1};", out(reg32) r, in(reg16) h, options(pure, nomem, nostack)) };
        r
    } host => {
        half::f16::from_bits(h).to_f32()
    })
}

/// The CPU device's tensor core.
#[cfg(not(target_arch = "nvptx64"))]
mod host {
    /// The input type of an `mma`.
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

    /// Element `i` (0..8) of a word array of 16-bit values.
    fn half_of<const N: usize>(w: &[u32; N], i: usize) -> u16 {
        (w[i / 2] >> (16 * (i % 2))) as u16
    }

    /// `d[row][col]` of the m16n8k16 product for the gathered fragments, in `f32`: `c` plus the
    /// sixteen exact products, in order of `k`.
    fn dot(t: In, frags: &[([u32; 4], [u32; 2], f32); 32], row: usize, col: usize) -> f32 {
        let mut acc = frags[(row % 8) * 4 + col / 2].2;
        for k in 0..16 {
            // A (row-major): lane 4·(row % 8) + (k % 8) / 2, element (k & 1) + 2·(row ≥ 8) + 4·(k ≥ 8).
            let (la, ia) = ((row % 8) * 4 + (k % 8) / 2, (k & 1) + 2 * (row / 8) + 4 * (k / 8));
            // B (column-major): lane 4·col + (k % 8) / 2, element (k & 1) + 2·(k ≥ 8).
            let (lb, ib) = (col * 4 + (k % 8) / 2, (k & 1) + 2 * (k / 8));
            let a = to_f32(t, half_of(&frags[la].0, ia));
            let b = to_f32(t, half_of(&frags[lb].1, ib));
            acc += a * b;
        }
        acc
    }

    /// The row and column of accumulator element `i` (0..4) in lane `l`.
    fn c_coords(l: usize, i: usize) -> (usize, usize) {
        (l / 4 + 8 * (i / 2), (l % 4) * 2 + (i & 1))
    }

    #[track_caller]
    pub(super) fn mma_f32(t: In, a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        let l = cohort_cpu::lane_id() as usize;
        // Each lane's own `c` element for `dot`: gather the four, pick by coordinates below.
        let all = cohort_cpu::warp_gather("mma_sync", u32::MAX, (a, b, c));
        let mut d = [0f32; 4];
        for (i, di) in d.iter_mut().enumerate() {
            let (row, col) = c_coords(l, i);
            // `dot` reads `c[row][col]` as element `i'` of lane `4·(row % 8) + col / 2`.
            let ci = (col & 1) + 2 * (row / 8);
            let frags: [([u32; 4], [u32; 2], f32); 32] = core::array::from_fn(|j| (all[j].0, all[j].1, all[j].2[ci]));
            *di = dot(t, &frags, row, col);
        }
        d
    }

    #[track_caller]
    pub(super) fn mma_f16(a: [u32; 4], b: [u32; 2], c: [u32; 2]) -> [u32; 2] {
        let l = cohort_cpu::lane_id() as usize;
        let all = cohort_cpu::warp_gather("mma_sync", u32::MAX, (a, b, c));
        let mut d = [0u16; 4];
        for (i, di) in d.iter_mut().enumerate() {
            let (row, col) = c_coords(l, i);
            let ci = (col & 1) + 2 * (row / 8);
            let frags: [([u32; 4], [u32; 2], f32); 32] =
                core::array::from_fn(|j| (all[j].0, all[j].1, to_f32(In::F16, half_of(&all[j].2, ci))));
            *di = half::f16::from_f32(dot(In::F16, &frags, row, col)).to_bits();
        }
        [u32::from(d[0]) | u32::from(d[1]) << 16, u32::from(d[2]) | u32::from(d[3]) << 16]
    }

    /// The 16-bit value at shared address `addr` of the running block.
    #[track_caller]
    fn ld16(addr: u32) -> u32 {
        cohort_cpu::shared_access(addr, 2, false);
        // SAFETY: `ldmatrix`'s caller guarantees that the rows it names are valid shared memory
        // of this block; the block's threads run one at a time, so the read races with nothing.
        u32::from(unsafe { crate::host::shared_ptr(addr).cast::<u16>().read_unaligned() })
    }

    /// Writes the 16-bit value `v` at shared address `addr` of the running block.
    #[track_caller]
    fn st16(addr: u32, v: u16) {
        cohort_cpu::shared_access(addr, 2, true);
        // SAFETY: `stmatrix`'s caller guarantees that the rows it names are valid shared
        // memory of this block; the block's threads run one at a time, so the write races with
        // nothing.
        unsafe { crate::host::shared_ptr(addr).cast::<u16>().write_unaligned(v) }
    }

    /// Each lane writes its own elements (two per matrix) to the rows the warp named: every
    /// element of the matrices once, as the instruction stores them.
    #[track_caller]
    pub(super) fn stmatrix<const N: usize>(row_addr: u32, regs: [u32; N], trans: bool) {
        let l = cohort_cpu::lane_id() as usize;
        let rows = cohort_cpu::warp_gather("stmatrix", u32::MAX, row_addr);
        for (m, w) in regs.iter().enumerate() {
            for j in 0..2 {
                let v = (w >> (16 * j)) as u16;
                if trans {
                    st16(rows[8 * m + 2 * (l % 4) + j] + 2 * (l / 4) as u32, v);
                } else {
                    st16(rows[8 * m + l / 4] + 2 * (2 * (l % 4) + j) as u32, v);
                }
            }
        }
    }

    #[track_caller]
    pub(super) fn ldmatrix<const N: usize>(row_addr: u32, trans: bool) -> [u32; N] {
        let l = cohort_cpu::lane_id() as usize;
        let rows = cohort_cpu::warp_gather("ldmatrix", u32::MAX, row_addr);
        core::array::from_fn(|m| {
            let e = |j: usize| {
                if trans {
                    ld16(rows[8 * m + 2 * (l % 4) + j] + 2 * (l / 4) as u32)
                } else {
                    ld16(rows[8 * m + l / 4] + 2 * (2 * (l % 4) + j) as u32)
                }
            };
            e(0) | e(1) << 16
        })
    }
}

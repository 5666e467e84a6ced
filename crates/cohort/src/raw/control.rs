//! Control: sleeping, ending the kernel or the thread, and checked mode's call-site markers.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx;

use crate::host::on_device;

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

// ---------------------------------------------------------------------------------------------
// Launch bounds

/// What a launch-bounds marker says in PTX, before its three numbers (see
/// [`launch_bounds_marker`]).
pub const LAUNCH_BOUNDS_MARKER: &str = "// cohort-launch-bounds ";

/// The first instruction of the entry of a `#[kernel(launch_bounds(T, B), max_registers(R))]`
/// kernel: a PTX comment `// cohort-launch-bounds T B R` (0: not given) that `cohort-build`
/// turns into the entry's `.maxntid T, 1, 1`, `.minnctapersm B` and `.maxnreg R` directives
/// (CUDA C++'s `__launch_bounds__(T, B)` and `__maxnreg__(R)`), which rustc cannot emit. The
/// runtime refuses a module that holds a marker its entry's directives do not match. On the CPU
/// device, nothing: the CPU device reads the directives from the module's PTX.
#[doc(hidden)]
#[inline(always)]
pub fn launch_bounds_marker<const T: u32, const B: u32, const R: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a comment; no instruction.
    unsafe {
        asm!("// cohort-launch-bounds {0} {1} {2}", const T, const B, const R, options(nomem, nostack, preserves_flags))
    };
}

// ---------------------------------------------------------------------------------------------
// Call-site markers (checked mode)

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

//! What the host arms of `raw` need beyond [`crate::host`]: the CPU device's name for a call
//! instruction (the address of the calling code, read with the host's own inline assembly).

/// Tells the CPU engine which call instruction the operation called next comes from, so that
/// it meets threads only at the same instruction, not merely at the same
/// `Location::caller()` (which every call inside one `macro_rules!` expansion, or reached
/// through one `#[track_caller]` helper, shares): the address of this code, which every
/// `#[inline(always)]` function between the kernel's call and here puts into the kernel's
/// own code, one copy per call.
///
/// Only in builds with debug assertions (the usual `cargo test` profile), where code is not
/// optimized: an optimizer may duplicate a call into the paths that lead to it (jump
/// threading, loop unswitching on a per-thread condition; nothing on the host marks these
/// calls *convergent*), and two copies of one call must not look like two calls. Without
/// debug assertions the engine tells calls apart by their source location alone.
#[inline(always)]
pub(crate) fn mark_instruction() {
    #[cfg(debug_assertions)]
    cohort_cpu::at_instruction(instruction_address());
}

/// The address of this instruction (0 on hosts other than x86-64 and AArch64).
#[cfg(debug_assertions)]
#[inline(always)]
fn instruction_address() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let a: u64;
        // SAFETY: computes an address into a register; reads and writes nothing.
        unsafe { core::arch::asm!("lea {0}, [rip]", out(reg) a, options(nomem, nostack, preserves_flags)) };
        a
    }
    #[cfg(target_arch = "aarch64")]
    {
        let a: u64;
        // SAFETY: as above.
        unsafe { core::arch::asm!("adr {0}, .", out(reg) a, options(nomem, nostack, preserves_flags)) };
        a
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        0
    }
}

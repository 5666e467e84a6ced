//! `printf`: the driver's `vprintf` system call (PTX ISA §"System Calls"), what CUDA C++'s
//! device `printf` compiles to. The typed form is [`printf!`](crate::printf).

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    fn vprintf(format: *const u8, args: *const u8) -> i32;
}

/// `vprintf(format, args)`: formats `args` by the C format string `format` into the launch's
/// printf buffer, which the host prints when it synchronizes; returns the number of arguments.
/// On the CPU device, the C library formats it ([`crate::host`]'s `printf`).
///
/// # Safety
/// `format` must be a NUL-terminated C format string whose conversions match the values in
/// `args`, each at its natural alignment (4 bytes for 32-bit integers, 8 for the rest), and a
/// `%s` argument a valid NUL-terminated string.
#[inline(always)]
pub unsafe fn vprintf_raw(format: *const u8, args: *const u8) -> i32 {
    crate::host::on_device!("printf" => {
        // SAFETY: the caller guarantees the format and the buffer agree.
        unsafe { vprintf(format, args) }
    } host => {
        // SAFETY: the caller guarantees the format and the buffer agree.
        unsafe { crate::host::printf(format, args) }
    })
}

//! What device functions do when they are compiled for the host.
//!
//! The device library builds for the host target too, so that rust-analyzer, clippy, rustdoc,
//! doctests and the host half of `#[kernel]` see real types. A device function called on the
//! host is a bug today; a later CPU-execution mode will give these bodies meaning, which is why
//! every host body goes through this one function.

/// Panics, naming the device function that was called on the host.
#[cold]
#[inline(never)]
#[track_caller]
pub fn device_only(name: &str) -> ! {
    panic!(
        "`cohort::{name}` is a device function: it runs only in a kernel on an NVIDIA GPU \
         (target nvptx64-nvidia-cuda); CPU execution is not implemented yet"
    )
}

/// Expands to the device body on nvptx64 and to [`device_only`] on every other target.
macro_rules! on_device {
    ($name:expr => $body:block) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            $body
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            $crate::host::device_only($name)
        }
    }};
}
pub(crate) use on_device;

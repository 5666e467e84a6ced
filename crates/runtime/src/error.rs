//! Errors: values that name the kernel, the configuration and the limit.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::DriverError;

use crate::launch::LaunchConfig;

/// Everything that can go wrong on the host side of Cohort.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (`libcuda.so`) could not be loaded: no NVIDIA driver here.
    NoDriver,
    /// The driver loaded but reports no usable device, or not the one asked for.
    NoDevice {
        /// The ordinal asked for.
        requested: usize,
        /// How many devices the driver sees.
        count: usize,
        /// The driver's reason, if it gave one.
        detail: Option<String>,
    },
    /// A driver call failed.
    Driver {
        /// What Cohort was doing.
        what: String,
        /// The driver's error.
        code: DriverError,
    },
    /// None of the embedded PTX modules suits the device.
    NoCompatiblePtx {
        /// The kernels crate.
        crate_name: &'static str,
        /// The device.
        device: String,
        /// Its compute capability × 10.
        compute_capability: u32,
        /// The architectures that were embedded.
        available: Vec<u32>,
    },
    /// The driver rejected a PTX module (its JIT log is included).
    ModuleLoad {
        /// The kernels crate.
        crate_name: &'static str,
        /// The module's architecture.
        arch: u32,
        /// The driver's error.
        code: DriverError,
        /// The JIT compiler's log.
        log: String,
    },
    /// The module has no kernel of this name.
    KernelNotFound {
        /// The name looked up.
        name: String,
        /// The kernels crate.
        crate_name: &'static str,
    },
    /// The launch configuration is impossible for this kernel on this device.
    InvalidLaunch {
        /// The kernel.
        kernel: Arc<str>,
        /// The configuration asked for.
        config: LaunchConfig,
        /// Which limit it breaks, with the numbers.
        reason: String,
    },
    /// A cooperative grid larger than the GPU can hold at once (it would hang).
    CooperativeTooLarge {
        /// The kernel.
        kernel: Arc<str>,
        /// The configuration asked for.
        config: LaunchConfig,
        /// Blocks of this shape one SM can hold.
        blocks_per_sm: u32,
        /// SMs on the device.
        sms: u32,
    },
    /// The kernel uses grid sync (`#[kernel(cooperative)]`) and may only be launched
    /// cooperatively, or the device cannot launch cooperatively at all.
    Cooperative {
        /// The kernel.
        kernel: Arc<str>,
        /// Why.
        reason: String,
    },
    /// `cuLaunchKernel` refused the launch.
    Launch {
        /// The kernel.
        kernel: Arc<str>,
        /// The configuration.
        config: LaunchConfig,
        /// The driver's error.
        code: DriverError,
    },
    /// A kernel failed while running (trap, panic, illegal address). The CUDA context is
    /// unusable afterwards; make a new [`Gpu`](crate::Gpu).
    KernelFailed {
        /// The last kernel launched on the stream, if known.
        kernel: Option<Arc<str>>,
        /// Its configuration.
        config: Option<LaunchConfig>,
        /// The driver's error.
        code: DriverError,
        /// Where a panicking thread stopped, if a kernel panicked.
        panic: Option<String>,
    },
    /// A host-side argument error (lengths that do not match, …).
    Argument(String),
}

/// `Result<T, cohort_runtime::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn code_name(code: &DriverError) -> String {
    match code.error_name() {
        Ok(n) => n.to_string_lossy().into_owned(),
        Err(_) => format!("{:?}", code.0),
    }
}

fn code_text(code: &DriverError) -> String {
    let s = code.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{} ({s})", code_name(code))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver => f.write_str(
                "no CUDA driver: libcuda.so could not be loaded (is this a machine with an NVIDIA GPU and driver?)",
            ),
            Error::NoDevice { requested, count, detail } => {
                write!(f, "no CUDA device {requested}: the driver sees {count} device(s)")?;
                if let Some(d) = detail {
                    write!(f, " ({d})")?;
                }
                Ok(())
            }
            Error::Driver { what, code } => write!(f, "{what}: {}", code_text(code)),
            Error::NoCompatiblePtx { crate_name, device, compute_capability, available } => write!(
                f,
                "no PTX of `{crate_name}` runs on {device} (compute capability {}.{}): it embeds {}; \
                 rebuild with COHORT_ARCHS including sm_{compute_capability} or lower",
                compute_capability / 10,
                compute_capability % 10,
                available.iter().map(|a| format!("sm_{a}")).collect::<Vec<_>>().join(", ")
            ),
            Error::ModuleLoad { crate_name, arch, code, log } => {
                write!(f, "loading the sm_{arch} PTX of `{crate_name}` failed: {}", code_text(code))?;
                if !log.is_empty() {
                    write!(f, "\n{log}")?;
                }
                Ok(())
            }
            Error::KernelNotFound { name, crate_name } => {
                write!(f, "kernel `{name}` is not in the PTX of `{crate_name}` (stale build?)")
            }
            Error::InvalidLaunch { kernel, config, reason } => {
                write!(f, "cannot launch kernel `{kernel}` with {config}: {reason}")
            }
            Error::CooperativeTooLarge { kernel, config, blocks_per_sm, sms } => write!(
                f,
                "cannot launch kernel `{kernel}` cooperatively with {config}: {} blocks cannot be resident at once; \
                 this GPU holds at most {} ({blocks_per_sm} per SM x {sms} SMs) for blocks of {} threads and {} bytes \
                 of dynamic shared memory",
                config.grid.volume(),
                blocks_per_sm * sms,
                config.block.volume(),
                config.shared_mem_bytes
            ),
            Error::Cooperative { kernel, reason } => write!(f, "kernel `{kernel}`: {reason}"),
            Error::Launch { kernel, config, code } => {
                write!(f, "launching kernel `{kernel}` with {config} failed: {}", code_text(code))
            }
            Error::KernelFailed { kernel, config, code, panic } => {
                match (kernel, config) {
                    (Some(k), Some(c)) => write!(f, "kernel `{k}` ({c}) failed: {}", code_text(code))?,
                    _ => write!(f, "a kernel failed: {}", code_text(code))?,
                }
                if let Some(p) = panic {
                    write!(f, "; {p}")?;
                }
                f.write_str("; the CUDA context is unusable now: create a new Gpu")
            }
            Error::Argument(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// Errors the driver keeps for the rest of the context's life: the kernel itself failed.
pub(crate) fn is_sticky(code: &DriverError) -> bool {
    use cudarc::driver::sys::CUresult::*;
    matches!(
        code.0,
        CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ECC_UNCORRECTABLE
    )
}

//! Errors: values that name the kernel, the configuration and the limit.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::DriverError;

use crate::backend::Fault;
use crate::launch::{Dim3, LaunchConfig};

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
    /// Not enough device memory for an allocation: a GPU's `CUDA_ERROR_OUT_OF_MEMORY`, or more
    /// than the CPU device's machine has free. Not a sticky failure: the device still works, and
    /// one handler serves both devices.
    OutOfMemory {
        /// What Cohort was doing (the allocation and its size).
        what: String,
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
    /// The kernel uses instructions of an architecture-specific target (Hopper's `wgmma`,
    /// `sm_90a`) that the loaded module was not built for: there the device library compiled
    /// them to a trap, so the kernel is refused instead of launched.
    NeedsArchSpecific {
        /// The kernels crate.
        crate_name: &'static str,
        /// The kernel.
        kernel: String,
        /// The loaded module's architecture (`sm_90`).
        loaded: String,
        /// The device's compute capability × 10.
        compute_capability: u32,
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
    /// The module launches kernels from the device (its PTX calls the device runtime), but no
    /// `libcudadevrt.a` was embedded with it to link it against.
    NoDeviceRuntime {
        /// The kernels crate.
        crate_name: &'static str,
        /// The module's architecture.
        arch: u32,
    },
    /// The module was built in checked mode outside `cohort-build`: its call-site markers
    /// (`// cohort-site?`) are not numbered, so checked mode could not tell its calls apart.
    UnnumberedSiteMarkers {
        /// The kernels crate.
        crate_name: &'static str,
        /// The module's architecture.
        arch: u32,
    },
    /// The module holds kernels with launch bounds (`#[kernel(launch_bounds(..))]`) whose
    /// entries were not given their directives (`cohort_build::apply_launch_bounds`).
    UnappliedLaunchBounds {
        /// The kernels crate.
        crate_name: &'static str,
        /// The module's architecture.
        arch: u32,
    },
    /// The module has no kernel of this name.
    KernelNotFound {
        /// The name looked up.
        name: String,
        /// The kernels crate.
        crate_name: &'static str,
    },
    /// The module's entry was not built from the same `#[kernel]` declaration as the launcher
    /// (see `cohort_runtime`'s ABI check): launching it would pass arguments the entry does not
    /// expect, so `load` refuses it.
    AbiMismatch {
        /// The kernel.
        kernel: String,
        /// The kernels crate.
        crate_name: &'static str,
        /// The first difference, in words.
        detail: String,
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
    /// The kernel declares its block shape (a `BlockShape<X, Y, Z>` parameter) and the launch
    /// asked for another: the kernel's code relies on the declared one.
    BlockShape {
        /// The kernel.
        kernel: Arc<str>,
        /// The shape its `BlockShape` parameter declares.
        required: Dim3,
        /// The configuration asked for.
        config: LaunchConfig,
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
    /// A kernel failed while running (a panic, a trap, an illegal address), or a later call
    /// was refused because one had.
    ///
    /// # After a kernel fails, restart the process
    ///
    /// Such a failure is *sticky*: CUDA refuses every further call in the whole process, not
    /// only in the context where the kernel ran. Measured with driver 580 on an H200: after a
    /// kernel traps, launches, copies and synchronizations on every existing context fail, and
    /// even creating a new context fails, a primary one ([`Gpu::new`](crate::Gpu::new)) or a
    /// context of its own ([`Gpu::isolated`](crate::Gpu::isolated)). There is no recovery in
    /// the process: report the error and restart it (tests run such scenarios in a child
    /// process).
    ///
    /// Cohort keeps the first such failure of each device for the rest of the process, and
    /// every later error it causes is this variant again, naming the kernel that failed, how
    /// it was launched and where it panicked, with `during` saying which call was refused.
    KernelFailed {
        /// The kernel that failed, if known. The driver does not say which kernel failed:
        /// this is the earliest launch not yet known to have finished when the failure was
        /// seen (launches that a successful `synchronize` or copy to the host waited for had
        /// finished). Exact when `unfinished` is 1.
        kernel: Option<Arc<str>>,
        /// Its configuration.
        config: Option<LaunchConfig>,
        /// Launches not yet known to have finished when the failure was seen, `kernel`'s
        /// included (0 when none was known). Above 1, the kernel that failed may be one
        /// launched after `kernel` instead.
        unfinished: usize,
        /// The driver's error for the call that returned this one.
        code: DriverError,
        /// Where a panicking thread stopped, if a kernel panicked.
        panic: Option<String>,
        /// `None` when this error is the failure's own report, returned by a wait for the
        /// kernel (a `synchronize`, an event); otherwise the call that was refused because of
        /// the failure ("launching kernel `b` with grid 4 x block 256", "copying device
        /// memory to the host").
        during: Option<String>,
    },
    /// A host-side argument error (lengths that do not match, …).
    Argument(String),
    /// A host function ([`Stream::host_fn`](crate::Stream::host_fn)) panicked; the message is
    /// the panic's.
    HostFnPanicked(String),
    /// An NCCL collective enqueued on the stream waited for was aborted before it finished
    /// (its ranks disagreed, one never made it, NCCL failed): its receive buffer holds
    /// whatever it had written. The message says which collective and why. The stream's waits
    /// that cover it (host accesses of the memory it wrote, `query`) say so again until a
    /// [`Stream::synchronize`](crate::Stream::synchronize) of the stream has reported it.
    CollectiveAborted(String),
    /// An operation given handles of two devices that do not mix there: a kernel on device
    /// `device` given a buffer of device `other` without peer access from its context, a module
    /// of one context launched on a stream of another, host memory of another context, an
    /// event recorded on (or timed against) another device's, a module variable set on another
    /// device's stream, a graph replayed on another device's stream, and any handle of the CPU
    /// device given to work of a GPU or the reverse. Refused before anything is enqueued.
    CrossDevice {
        /// The kernel, or the operation ("copy", "Stream::wait").
        what: String,
        /// The device (ordinal; `usize::MAX` for the CPU device) the work runs on.
        device: usize,
        /// The device (ordinal; `usize::MAX` for the CPU device) of the memory, stream, event
        /// or module that does not belong to it.
        other: usize,
        /// Why it is refused, and what to do.
        reason: String,
    },
    /// A kernel failed on the CPU device ([`Gpu::cpu`](crate::Gpu::cpu)): a panic (file, line,
    /// block, thread), threads waiting at different barriers (both sites), a warp collective
    /// missing lanes (the call site, the mask, the lanes that arrived), a spin that never ends.
    /// Unlike a GPU's failure, it is not sticky: the device goes on working.
    CpuKernel {
        /// The kernel.
        kernel: Arc<str>,
        /// Its configuration.
        config: LaunchConfig,
        /// What the CPU engine found.
        error: Box<cohort_cpu::CpuError>,
    },
    /// Something the CPU device does not do (graphs, device-side launches, module variables,
    /// peer access, NCCL, multi-grid launches).
    NotOnCpu {
        /// What was asked, and why it is refused.
        what: String,
    },
    /// The CPU device refused an operation (an address that is no live allocation of it, an
    /// event without timing timed, an unknown pool): what was being done, and why.
    CpuDevice {
        /// What Cohort was doing.
        what: String,
        /// Why the CPU device refused it.
        detail: String,
    },
    /// Peer access between two devices is not possible (`cuDeviceCanAccessPeer` says no).
    PeerAccessUnsupported {
        /// The device that would read the other's memory.
        device: usize,
        /// The device whose memory it would read.
        peer: usize,
    },
}

impl Error {
    /// The error of a failed driver call while doing `what`: [`Error::OutOfMemory`] for
    /// `CUDA_ERROR_OUT_OF_MEMORY`, else [`Error::Driver`].
    #[cold]
    pub(crate) fn driver(what: String, code: DriverError) -> Error {
        if code.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            Error::OutOfMemory { what }
        } else {
            Error::Driver { what, code }
        }
    }

    /// [`Error::CrossDevice`]: `what`, which runs on `device`, was given a handle of `other`.
    pub(crate) fn cross_device(
        what: impl Into<String>,
        device: &crate::device::GpuInner,
        other: &crate::device::GpuInner,
        reason: impl Into<String>,
    ) -> Self {
        Error::CrossDevice {
            what: what.into(),
            device: device.info.ordinal,
            other: other.info.ordinal,
            reason: reason.into(),
        }
    }
}

impl Fault {
    /// The error of this fault while doing `what`, with no device's sticky-failure record
    /// (`GpuInner::fail` consults it first): a driver's code as [`Error::Driver`]; out of
    /// memory as [`Error::OutOfMemory`], as a GPU's is, so that one handler serves both; what
    /// the device does not do as [`Error::NotOnCpu`]; the CPU device's refusals as
    /// [`Error::CpuDevice`].
    #[cold]
    pub(crate) fn into_error(self, what: String) -> Error {
        match self {
            Fault::Driver(code) => Error::driver(what, code),
            Fault::OutOfMemory => Error::OutOfMemory { what },
            Fault::Unsupported(why) => Error::NotOnCpu { what: format!("{what}: {why}") },
            Fault::Cpu(why) => Error::CpuDevice { what, detail: why.into() },
            Fault::Kernel(error) => Error::CpuDevice { what, detail: error.to_string() },
        }
    }
}

/// `Result<T, cohort_runtime::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `CUDA_ERROR_…`: the enum's name, as `cuGetErrorName` gives it (without asking the driver).
fn code_name(code: &DriverError) -> String {
    format!("{:?}", code.0)
}

/// `CUDA_ERROR_… (the driver's description)`; just the name when the driver library is absent
/// (errors can be printed on any machine).
fn code_text(code: &DriverError) -> String {
    let driver = crate::device::driver_present();
    match driver.then(|| code.error_string().ok()).flatten() {
        Some(s) => format!("{} ({})", code_name(code), s.to_string_lossy()),
        None => code_name(code),
    }
}

/// What every report of a sticky failure ends with (see [`Error::KernelFailed`]).
const RESTART: &str = "CUDA accepts no more work in this process after a kernel fails: restart the process";

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
            Error::OutOfMemory { what } => write!(f, "{what}: out of device memory (CUDA_ERROR_OUT_OF_MEMORY)"),
            Error::NoCompatiblePtx { crate_name, device, compute_capability, available } => write!(
                f,
                "no PTX of `{crate_name}` runs on {device} (compute capability {}.{}): it embeds {}; \
                 rebuild with COHORT_ARCHS including sm_{compute_capability} or lower",
                compute_capability / 10,
                compute_capability % 10,
                available.iter().map(|a| format!("sm_{a}")).collect::<Vec<_>>().join(", ")
            ),
            Error::NeedsArchSpecific { crate_name, kernel, loaded, compute_capability } => write!(
                f,
                "kernel `{kernel}` of `{crate_name}` uses Hopper's warpgroup MMA (wgmma), which exists only in sm_90a \
                 PTX for a device of compute capability 9.0; the loaded module is {loaded} on a device of compute \
                 capability {}.{}, where it was compiled to a trap{}",
                compute_capability / 10,
                compute_capability % 10,
                if *compute_capability == 90 {
                    ": build the crate's sm_90a module (`Builder::arch_specific(&[90])` in its build.rs, or \
                     COHORT_ARCHS=sm_90,sm_90a)"
                } else {
                    " (sm_90a PTX runs on no other GPU)"
                }
            ),
            Error::NoDeviceRuntime { crate_name, arch } => write!(
                f,
                "the sm_{arch} PTX of `{crate_name}` launches kernels from the device (dynamic parallelism) and must be \
                 linked with the CUDA device runtime, libcudadevrt.a, but none was embedded: build it with \
                 cohort-build (which embeds the one it finds: COHORT_CUDADEVRT, $CUDA_PATH/lib64, or beside a pip-installed \
                 ptxas; `python3 -m pip install --target DIR nvidia-cuda-runtime==13.0.96` gets it without a CUDA \
                 toolkit), or give it with PtxModule::with_device_runtime"
            ),
            Error::UnnumberedSiteMarkers { crate_name, arch } => write!(
                f,
                "the sm_{arch} PTX of `{crate_name}` was built in checked mode (`--cfg cohort_checked`) but its call-site \
                 markers (`// cohort-site?`) are not numbered, so checked mode could not tell its collectives' calls \
                 apart: build it with cohort-build (which numbers them), or number them with \
                 `cohort_build::number_site_markers` before loading"
            ),
            Error::UnappliedLaunchBounds { crate_name, arch } => write!(
                f,
                "the sm_{arch} PTX of `{crate_name}` has kernels with `launch_bounds`/`max_registers` whose entries \
                 lack the `.maxntid`/`.minnctapersm`/`.maxnreg` directives (their markers, \
                 `// cohort-launch-bounds …`, were not applied): build it with cohort-build, or apply them with \
                 `cohort_build::apply_launch_bounds` before loading"
            ),
            Error::ModuleLoad { crate_name, arch, code, log } => {
                write!(f, "loading the sm_{arch} PTX of `{crate_name}` failed: {}", code_text(code))?;
                if !log.is_empty() {
                    write!(f, "\n{log}")?;
                }
                Ok(())
            }
            Error::AbiMismatch { kernel, crate_name, detail } => write!(
                f,
                "kernel `{kernel}` of `{crate_name}` does not match its launcher: {detail}; rebuild the kernels crate and \
                 the host from one declaration of the kernel"
            ),
            Error::KernelNotFound { name, crate_name } => {
                write!(f, "kernel `{name}` is not in the PTX of `{crate_name}` (stale build?)")
            }
            Error::InvalidLaunch { kernel, config, reason } => {
                write!(f, "cannot launch kernel `{kernel}` with {config}: {reason}")
            }
            Error::BlockShape { kernel, required, config } => write!(
                f,
                "cannot launch kernel `{kernel}` with {config}: it is declared for blocks of {}×{}×{} threads (its \
                 `BlockShape` parameter), the launch asks for {}×{}×{}",
                required.x, required.y, required.z, config.block.x, config.block.y, config.block.z
            ),
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
            Error::KernelFailed { kernel, config, unfinished, code, panic, during } => {
                let failed = match (kernel, config) {
                    (Some(k), Some(c)) => format!("kernel `{k}` ({c}) failed"),
                    (Some(k), None) => format!("kernel `{k}` failed"),
                    _ => "a kernel failed".to_string(),
                };
                match during {
                    None => write!(f, "{failed}: {}", code_text(code))?,
                    Some(d) => write!(f, "{d} failed: the CUDA context was lost when {failed}")?,
                }
                if let Some(p) = panic {
                    write!(f, "; {p}")?;
                }
                if *unfinished > 1 {
                    write!(
                        f,
                        " (the driver does not say which kernel failed: `{}` is the first of {unfinished} launches \
                         not yet waited for)",
                        kernel.as_deref().unwrap_or("?")
                    )?;
                }
                if during.is_some() {
                    write!(f, "; the driver now returns {}", code_text(code))?;
                }
                write!(f, "; {RESTART}")
            }
            Error::Argument(m) => f.write_str(m),
            Error::HostFnPanicked(m) => write!(f, "a host function enqueued with Stream::host_fn panicked: {m}"),
            Error::CollectiveAborted(m) => write!(f, "a collective on this stream did not complete: {m}"),
            Error::CrossDevice { what, device, other, reason } if device == other => {
                let on = crate::device::device_label(*device);
                write!(f, "{what} on {on} was given memory, a stream or an event of another context of it: {reason}")
            }
            Error::CrossDevice { what, device, other, reason } => {
                let (on, of) = (crate::device::device_label(*device), crate::device::device_label(*other));
                write!(f, "{what} on {on} was given memory, a stream or an event of {of}: {reason}")
            }
            Error::CpuKernel { kernel, config, error } => {
                write!(f, "kernel `{kernel}` ({config}) failed on the CPU device: {error}")
            }
            Error::NotOnCpu { what } => write!(f, "not available on the CPU device: {what}"),
            Error::CpuDevice { what, detail } => write!(f, "{what}: the CPU device refused it: {detail}"),
            Error::PeerAccessUnsupported { device, peer } => write!(
                f,
                "device {device} cannot access device {peer}'s memory (cuDeviceCanAccessPeer: no peer path between \
                 them); copy the data instead (Stream::copy between GPUs works without peer access)"
            ),
        }
    }
}

impl Error {
    /// The launcher's refusal of a matrix too large for its parameter's offset type.
    #[doc(hidden)]
    #[must_use]
    pub fn matrix_too_large(kernel: &str, param: &str, ty: &str, rows: usize, cols: usize) -> Self {
        Error::Argument(format!(
            "kernel `{kernel}`: parameter `{param}` is a {rows} x {cols} matrix, too large for the offsets of its \
             type `{ty}` (its sides and element count must fit them); declare it with usize offsets"
        ))
    }

    /// A launch that would write outside a `DisjointMatrix` parameter declared `Within`: its grid
    /// overhangs the matrix, or is 3-D.
    #[must_use]
    pub fn matrix_overhang(
        kernel: &str,
        param: &str,
        ty: &str,
        rows: usize,
        cols: usize,
        config: &LaunchConfig,
    ) -> Self {
        let (g, b) = (config.grid, config.block);
        Error::Argument(format!(
            "kernel `{kernel}`: parameter `{param}: {ty}` is a {rows} x {cols} matrix, and its `Within` layout needs \
             a launch that stays inside it (a 1-D or 2-D grid whose last block writes inside the matrix), but the \
             launch is a grid of {}×{}×{} blocks of {}×{}×{} threads",
            g.x, g.y, g.z, b.x, b.y, b.z
        ))
    }
}

impl std::error::Error for Error {
    /// The driver's error, where the driver reported one (and a driver is here to describe it:
    /// cudarc formats its errors through the driver library, so on a machine without one, the
    /// CPU device's errors have no source); the CPU engine's finding for a CPU device failure.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Driver { code, .. }
            | Error::ModuleLoad { code, .. }
            | Error::Launch { code, .. }
            | Error::KernelFailed { code, .. }
                if crate::device::driver_present() =>
            {
                Some(code)
            }
            Error::CpuKernel { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use cudarc::driver::sys::CUresult;

    use super::*;

    fn failed(during: Option<&str>) -> Error {
        Error::KernelFailed {
            kernel: Some(Arc::from("checked_read")),
            config: Some(LaunchConfig::new(1, 64)),
            unfinished: 1,
            code: DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED),
            panic: Some("panicked at src/checks.rs:10:5 in block (0,0,0) thread (9,0,0)".into()),
            during: during.map(str::to_string),
        }
    }

    #[test]
    fn a_kernel_failure_names_the_kernel_where_it_panicked_and_the_way_out() {
        let msg = failed(None).to_string();
        assert!(msg.starts_with("kernel `checked_read` (grid 1 x block 64) failed: CUDA_ERROR_LAUNCH_FAILED"), "{msg}");
        assert!(msg.contains("; panicked at src/checks.rs:10:5 in block (0,0,0) thread (9,0,0); "), "{msg}");
        assert!(msg.ends_with(RESTART), "{msg}");
    }

    #[test]
    fn a_later_refusal_names_the_call_and_the_kernel_that_failed_before() {
        let msg = failed(Some("launching kernel `vector_add` with grid 4 x block 256")).to_string();
        assert!(
            msg.starts_with(
                "launching kernel `vector_add` with grid 4 x block 256 failed: the CUDA context was lost when \
                 kernel `checked_read` (grid 1 x block 64) failed; panicked at src/checks.rs:10:5"
            ),
            "{msg}"
        );
        assert!(msg.contains("the driver now returns CUDA_ERROR_LAUNCH_FAILED"), "{msg}");
        assert!(msg.ends_with(RESTART), "{msg}");
        let unknown = Error::KernelFailed {
            kernel: None,
            config: None,
            unfinished: 0,
            code: DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
            panic: None,
            during: Some("copying device memory to the host".into()),
        };
        let msg = unknown.to_string();
        assert!(
            msg.starts_with(
                "copying device memory to the host failed: the CUDA context was lost when a kernel failed;"
            ),
            "{msg}"
        );
    }

    #[test]
    fn an_uncertain_suspect_is_said_so() {
        let Error::KernelFailed { kernel, config, code, panic, during, .. } = failed(None) else { unreachable!() };
        let e = Error::KernelFailed { kernel, config, unfinished: 3, code, panic, during };
        let msg = e.to_string();
        assert!(
            msg.contains(
                "thread (9,0,0) (the driver does not say which kernel failed: `checked_read` is the first of 3 \
                 launches not yet waited for); CUDA accepts"
            ),
            "{msg}"
        );
        assert!(!failed(None).to_string().contains("does not say"));
    }

    #[test]
    fn source_is_the_driver_error() {
        // cudarc formats a driver error through the driver library: without one (the CPU
        // device's machines), errors carry no driver source.
        let driver = crate::device::driver_present();
        let code = DriverError(CUresult::CUDA_ERROR_INVALID_VALUE);
        let e = Error::Driver { what: "allocating".into(), code };
        assert_eq!(e.source().and_then(|s| s.downcast_ref::<DriverError>()), driver.then_some(&code));
        assert_eq!(
            failed(None).source().and_then(|s| s.downcast_ref::<DriverError>()),
            driver.then_some(&DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED))
        );
        let launch = Error::Launch { kernel: Arc::from("k"), config: LaunchConfig::new(1, 1), code };
        assert_eq!(launch.source().is_some(), driver);
        let load = Error::ModuleLoad { crate_name: "k", arch: 80, code, log: String::new() };
        assert_eq!(load.source().is_some(), driver);
        // A CPU device failure's source is the engine's finding.
        let cpu = Error::CpuKernel {
            kernel: Arc::from("k"),
            config: LaunchConfig::new(1, 1),
            error: Box::new(cohort_cpu::CpuError::InvalidLaunch { reason: "r".into() }),
        };
        assert!(cpu.source().and_then(|s| s.downcast_ref::<cohort_cpu::CpuError>()).is_some());
        assert!(Error::Argument("x".into()).source().is_none());
        assert!(Error::NoDriver.source().is_none());
    }

    #[test]
    fn out_of_memory_is_its_own_error() {
        let e = Error::driver("allocating 8 B".into(), DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(matches!(&e, Error::OutOfMemory { what } if what == "allocating 8 B"), "{e:?}");
        assert!(e.source().is_none());
        assert_eq!(Fault::OutOfMemory.into_error("allocating 8 B".into()).to_string(), e.to_string());
        let other = Error::driver("x".into(), DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(matches!(other, Error::Driver { .. }));
    }

    #[test]
    fn sticky_codes() {
        assert!(is_sticky(&DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED)));
        assert!(is_sticky(&DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)));
        assert!(!is_sticky(&DriverError(CUresult::CUDA_ERROR_INVALID_VALUE)));
        assert!(!is_sticky(&DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)));
    }
}

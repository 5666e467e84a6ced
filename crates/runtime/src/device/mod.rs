//! Devices and contexts.
//!
//! | file | concept |
//! | --- | --- |
//! | `mod.rs` | [`Gpu`]: opening a device (or the CPU device), its context's shared state, what it makes (streams, modules) |
//! | `info.rs` | [`DeviceInfo`]: what Cohort reads of a device once |
//! | `failure.rs` | errors that name the device and the kernel a failure is blamed on: unfinished launches, lost (sticky-failed) devices |

use std::fmt;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DriverError};

use crate::backend::{Backend, Kind, Limit};
use crate::error::{Error, Result};
use crate::module::{LoadOptions, Module};
use crate::ptx::PtxSet;
use crate::stream::{Stream, StreamOptions};

mod failure;
mod info;
#[cfg(test)]
mod tests;

pub(crate) use failure::{Doing, Finished, device_label};
use failure::{Unfinished, device_error};
pub use info::DeviceInfo;
use info::read_info;

/// Shared state of one context: the device, the panic records of loaded modules, and the
/// launches not yet known to have finished.
pub(crate) struct GpuInner {
    /// The context's device-launch serialization (see `budget`): before `ctx`, so that it
    /// is dropped while the context lives.
    pub(crate) launch_serial: Arc<crate::budget::LaunchSerial>,
    /// The CUDA context, for interop and for telling contexts apart; `None` for the CPU device.
    pub(crate) ctx: Option<Arc<CudaContext>>,
    /// What runs the device's work: every device operation goes through it.
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) info: DeviceInfo,
    pub(crate) panic_records: Mutex<Vec<crate::module::PanicSlot>>,
    pub(crate) launches: Mutex<Unfinished>,
}

impl GpuInner {
    /// The CPU device's state ([`Gpu::cpu`]).
    pub(crate) fn new_cpu(info: DeviceInfo) -> Self {
        let backend = crate::backend::cpu::Cpu::new(info.max_threads_per_block, info.shared_per_block_optin, info.sms);
        Self {
            launch_serial: Arc::default(),
            ctx: None,
            backend: Box::new(backend),
            info,
            panic_records: Mutex::new(Vec::new()),
            launches: Mutex::new(Unfinished::default()),
        }
    }

    /// Which kind of device this is (memory and handles of one kind never meet the other's).
    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        self.backend.kind()
    }

    /// Which device and context this is, for the checks of handles that operations combine
    /// ([`crate::peer::relation`]).
    #[inline]
    pub(crate) fn id(&self) -> crate::peer::DeviceId {
        match &self.ctx {
            None => crate::peer::DeviceId::Cpu,
            Some(c) => crate::peer::DeviceId::Gpu { ordinal: self.info.ordinal, ctx: c.cu_ctx() as usize },
        }
    }

    /// The raw CUDA context (null for the CPU device: no CUDA context equals it).
    #[inline]
    pub(crate) fn cu_ctx(&self) -> sys::CUcontext {
        self.ctx.as_ref().map_or(std::ptr::null_mut(), |c| c.cu_ctx())
    }

    /// The CUDA context, or [`Error::NotOnCpu`] naming `what` on the CPU device.
    pub(crate) fn cuda(&self, what: &str) -> Result<&Arc<CudaContext>> {
        self.ctx.as_ref().ok_or_else(|| crate::cpu::not_on_cpu(what))
    }

    /// Makes the context current on this thread (nothing to do for the CPU device).
    #[inline]
    pub(crate) fn bind(&self) -> Result<()> {
        if crate::stream::in_host_fn() {
            return Err(crate::stream::host_fn_error("a CUDA call"));
        }
        self.backend.bind().map_err(|f| self.fail(f, Doing::Call("making the CUDA context current".into())))
    }
}

/// One GPU and a CUDA context on it: the handle everything else comes from.
///
/// Several GPUs: [`Gpu::all`] gives one per device. A `Gpu` is `Send + Sync` and every call
/// makes its context current itself, so `Gpu`s of several devices can be used alternately from
/// one thread or each from its own. Work stays on its context: modules are loaded per `Gpu`,
/// kernels run on streams of their module's context, and another GPU's buffers reach a kernel
/// only through [`Gpu::enable_peer_access`] (copies between GPUs need none).
///
/// ```no_run
/// # fn main() -> Result<(), cohort_runtime::Error> {
/// let gpu = cohort_runtime::Gpu::new(0)?;
/// println!("{}", gpu.info());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Gpu {
    pub(crate) inner: Arc<GpuInner>,
    stream: Arc<Stream>,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu").field("device", &self.inner.info.name).field("ordinal", &self.inner.info.ordinal).finish()
    }
}

/// Whether the CUDA driver library can be loaded: the call cudarc would make first, made by
/// Cohort so that a machine without a driver gets [`Error::NoDriver`] rather than cudarc's panic.
///
/// Cohort asks cudarc for `fallback-dynamic-loading`: the driver is loaded at run time unless
/// another crate of the program asks cudarc for `dynamic-linking` (candle does), and then it is
/// linked; cudarc's own probe exists only in the first case, so this one is Cohort's. It looks
/// for the names every cudarc candidate list starts from (`libcuda.so.1`, the driver's soname,
/// and `libcuda.so`; `nvcuda.dll`), a subset of cudarc's: what it finds, cudarc finds.
pub(crate) fn driver_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PRESENT.get_or_init(|| {
        let names: &[&str] = if cfg!(windows) { &["nvcuda.dll"] } else { &["libcuda.so.1", "libcuda.so"] };
        // SAFETY: loading the driver library runs its initializers, which are those of the
        // library cudarc loads (or the program linked) anyway; the handle is closed at once.
        names.iter().any(|&n| unsafe { libloading::Library::new(n) }.is_ok())
    })
}

fn init() -> Result<()> {
    if !driver_present() {
        return Err(Error::NoDriver);
    }
    crate::backend::cuda::init().map_err(|code| Error::NoDevice {
        requested: 0,
        count: 0,
        detail: Some(describe(&code)),
    })
}

fn describe(code: &DriverError) -> String {
    code.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", code.0))
}

/// The environment variable that picks the default device ([`Gpu::default_ordinal`]): an
/// ordinal, `cpu` for the CPU device ([`Gpu::from_env`] then opens [`Gpu::cpu`]), or `gpu` for
/// device 0 with no fall-back to the CPU device ([`Gpu::any`]).
pub const DEVICE_VAR: &str = "COHORT_DEVICE";

/// Whether `COHORT_DEVICE=gpu`: a GPU only ([`Gpu::any`] does not fall back to the CPU device).
pub(crate) fn env_wants_gpu() -> bool {
    std::env::var(DEVICE_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("gpu"))
}

/// `COHORT_DEVICE`'s value (`None`: unset) as a device ordinal: unset, blank or `gpu` is device 0.
fn parse_device_ordinal(value: Option<&str>) -> Result<usize> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("gpu")) else {
        return Ok(0);
    };
    v.parse::<usize>().map_err(|_| {
        Error::Argument(format!(
            "{DEVICE_VAR}={v} is not a device ordinal: set it to one device's number, such as 0 or 1 \
             (`cohort info` lists them), `cpu` for the CPU device, `gpu` for device 0 only, or unset it \
             for device 0"
        ))
    })
}

impl Gpu {
    /// Number of CUDA devices, or why there are none.
    ///
    /// # Errors
    /// [`Error::NoDriver`] without a driver; [`Error::NoDevice`] when the driver reports an
    /// error initializing.
    pub fn count() -> Result<usize> {
        init()?;
        let n = crate::backend::cuda::device_count().map_err(|code| Error::NoDevice {
            requested: 0,
            count: 0,
            detail: Some(describe(&code)),
        })?;
        Ok(n.max(0) as usize)
    }

    /// Whether a CUDA device is usable here (for tests that skip without one).
    #[must_use]
    pub fn available() -> bool {
        Self::count().is_ok_and(|n| n > 0)
    }

    /// The device `ordinal`, with its primary context (shared with other libraries in this
    /// process, as the CUDA runtime API does).
    ///
    /// # Errors
    /// No driver, no such device, or a driver failure; [`Error::KernelFailed`] naming the
    /// kernel if one failed earlier in this process (which must then be restarted).
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(Error::NoDevice { requested: ordinal, count, detail: None });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|code| device_error(ordinal, code, format!("creating a context on device {ordinal}")))?;
        Self::from_context(ctx, ordinal, crate::budget::LaunchSerial::for_primary(ordinal))
    }

    /// The device named by `COHORT_DEVICE` (an ordinal), else device 0, with its primary
    /// context: [`Gpu::new`]`(`[`Gpu::default_ordinal`]`()?)`. Use this (or
    /// [`Gpu::isolated_from_env`]) wherever a program picks "the" GPU, so that one variable
    /// selects it everywhere.
    ///
    /// # Errors
    /// As [`Gpu::default_ordinal`] and [`Gpu::new`] (an ordinal the driver does not have is
    /// [`Error::NoDevice`], naming how many it sees).
    pub fn from_env() -> Result<Self> {
        if crate::cpu::env_wants_cpu() {
            return Self::cpu();
        }
        Self::new(Self::default_ordinal()?)
    }

    /// The ordinal of the default device: `COHORT_DEVICE` when it is set and not blank, else
    /// 0. Whether such a device exists is checked when it is opened.
    ///
    /// # Errors
    /// [`Error::Argument`] when `COHORT_DEVICE` is not an ordinal (`COHORT_DEVICE=gpu1`,
    /// `=-1`, `=0,1`, or not UTF-8), saying what it must be.
    pub fn default_ordinal() -> Result<usize> {
        match std::env::var_os(DEVICE_VAR) {
            None => parse_device_ordinal(None),
            Some(v) => parse_device_ordinal(Some(&v.to_string_lossy())),
        }
    }

    /// The device `ordinal` with a context of its own (not the primary one), for work kept
    /// apart from other users of the device in this process: its modules, memory and streams
    /// are freed with the context when this `Gpu` and everything made from it are dropped.
    ///
    /// It does not contain a kernel failure: after a kernel fails, CUDA refuses all further
    /// work in the process, in every context, and creating a new one fails too; restart the
    /// process (see [`Error::KernelFailed`]).
    ///
    /// # Errors
    /// As [`Gpu::new`].
    pub fn isolated(ordinal: usize) -> Result<Self> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(Error::NoDevice { requested: ordinal, count, detail: None });
        }
        let ctx = CudaContext::new_non_primary(ordinal, 0)
            .map_err(|code| device_error(ordinal, code, format!("creating a context on device {ordinal}")))?;
        Self::from_context(ctx, ordinal, Arc::default())
    }

    /// [`Gpu::isolated`] on the default device: the one `COHORT_DEVICE` names, else device 0
    /// (the device [`Gpu::from_env`] opens).
    ///
    /// # Errors
    /// As [`Gpu::default_ordinal`] and [`Gpu::isolated`].
    pub fn isolated_from_env() -> Result<Self> {
        if crate::cpu::env_wants_cpu() {
            return Self::cpu();
        }
        Self::isolated(Self::default_ordinal()?)
    }

    pub(crate) fn from_context(
        ctx: Arc<CudaContext>,
        ordinal: usize,
        launch_serial: Arc<crate::budget::LaunchSerial>,
    ) -> Result<Self> {
        let info = read_info(&ctx, ordinal)?;
        let inner = Arc::new(GpuInner {
            launch_serial,
            backend: Box::new(crate::backend::cuda::Cuda::new(ctx.clone())),
            ctx: Some(ctx),
            info,
            panic_records: Mutex::new(Vec::new()),
            launches: Mutex::new(Unfinished::default()),
        });
        Self::with_inner(inner)
    }

    /// A handle to `inner` with a new own stream.
    pub(crate) fn with_inner(inner: Arc<GpuInner>) -> Result<Self> {
        let stream = Arc::new(Stream::create(&inner, StreamOptions::new())?);
        Ok(Self { inner, stream })
    }

    /// The device's properties.
    #[must_use]
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The `Gpu`'s own stream (a blocking stream, made with the `Gpu`).
    #[must_use]
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// A new blocking stream on this device (`cudaStreamCreate`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn new_stream(&self) -> Result<Stream> {
        Stream::create(&self.inner, StreamOptions::new())
    }

    /// A new stream with `options`: non-blocking (`cudaStreamNonBlocking`), a priority
    /// (`cudaStreamCreateWithPriority`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn new_stream_with(&self, options: StreamOptions) -> Result<Stream> {
        Stream::create(&self.inner, options)
    }

    /// The legacy default stream (`cudaStreamLegacy`, stream `0` of the runtime API without
    /// `--default-stream per-thread`): it waits for, and is waited for by, every blocking
    /// stream.
    #[must_use]
    pub fn legacy_stream(&self) -> Stream {
        Stream::legacy(&self.inner)
    }

    /// The per-thread default stream (`cudaStreamPerThread`): each thread that enqueues work
    /// on it gets a stream of its own (work from two threads is not ordered).
    #[must_use]
    pub fn per_thread_stream(&self) -> Stream {
        Stream::per_thread(&self.inner)
    }

    /// Stream priorities this device supports: `(least, greatest)`; the greatest priority is
    /// the lowest number (e.g. `(0, -5)`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        self.inner.bind()?;
        self.inner.backend.stream_priority_range().map_err(self.inner.failed("reading stream priorities"))
    }

    /// Free and total device memory in bytes (`cuMemGetInfo`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.inner.bind()?;
        self.inner.backend.memory_info().map_err(self.inner.failed("reading free memory"))
    }

    /// Loads the module of `ptx` that suits this device: the highest architecture not above
    /// its compute capability.
    ///
    /// # Errors
    /// [`Error::NoCompatiblePtx`] when every module is for a newer GPU; [`Error::ModuleLoad`]
    /// with the JIT log when the driver rejects the PTX.
    pub fn load(&self, ptx: &'static PtxSet) -> Result<Module> {
        Module::load(&self.inner, ptx, LoadOptions::new())
    }

    /// As [`Gpu::load`], with JIT options (a module-wide `__launch_bounds__` or
    /// `-maxrregcount`).
    ///
    /// # Errors
    /// As [`Gpu::load`].
    pub fn load_with(&self, ptx: &'static PtxSet, options: LoadOptions) -> Result<Module> {
        Module::load(&self.inner, ptx, options)
    }

    /// Loads PTX text made at run time (NVRTC output, a `.ptx` file), as one module named
    /// `name` for this device's architecture. The text is kept for the life of the process.
    /// NULs at its end are optional (one is added).
    ///
    /// # Errors
    /// [`Error::Argument`] if the text contains a NUL before its end (the driver would stop
    /// reading there); otherwise as [`Gpu::load`].
    pub fn load_ptx_text(&self, name: &'static str, ptx: &str) -> Result<Module> {
        let ptx = ptx.trim_end_matches('\0');
        if let Some(at) = crate::ptx::interior_nul(ptx) {
            return Err(Error::Argument(format!(
                "PTX text `{name}` contains a NUL at byte {at} of {}: the driver would stop reading there",
                ptx.len()
            )));
        }
        let text: &'static str = Box::leak(format!("{ptx}\0").into_boxed_str());
        let module = crate::ptx::PtxModule::new(self.inner.info.cc(), text);
        let modules: &'static [crate::ptx::PtxModule] = Box::leak(Box::new([module]));
        let set: &'static PtxSet = Box::leak(Box::new(PtxSet { crate_name: name, modules }));
        self.load(set)
    }

    /// Sets how many device-side launches (dynamic parallelism, `cohort::launch`) may be
    /// pending at once (`cudaLimitDevRuntimePendingLaunchCount`, 2048 by default): a device
    /// launch beyond it is refused with `LaunchError::NoParameterBuffer`. Set it before
    /// launching kernels that launch kernels.
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver refuses the value.
    #[doc(alias = "cudaLimitDevRuntimePendingLaunchCount")]
    pub fn set_pending_launch_limit(&self, launches: usize) -> Result<()> {
        self.set_limit(Limit::PendingLaunches, launches, "the pending-launch limit")
    }

    /// The pending device-side launch limit (see [`Gpu::set_pending_launch_limit`]).
    ///
    /// # Errors
    /// [`Error::Driver`].
    pub fn pending_launch_limit(&self) -> Result<usize> {
        self.inner.bind()?;
        self.inner.backend.limit(Limit::PendingLaunches).map_err(self.inner.failed("reading the pending-launch limit"))
    }

    /// Sets the size of the buffer kernels' `printf!` output goes through
    /// (`cudaLimitPrintfFifoSize`, 1 MiB by default): output past it between two host
    /// synchronizations is lost, as in CUDA C++. CUDA takes it only **before** the first launch of
    /// a kernel that prints in this context.
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver refuses it (`CUDA_ERROR_INVALID_VALUE` once a printing
    /// kernel has run).
    #[doc(alias = "cudaLimitPrintfFifoSize")]
    pub fn set_printf_fifo_size(&self, bytes: usize) -> Result<()> {
        self.set_limit(Limit::PrintfFifo, bytes, "the printf FIFO size")
    }

    /// The printf buffer's size (see [`Gpu::set_printf_fifo_size`]).
    ///
    /// # Errors
    /// [`Error::Driver`].
    pub fn printf_fifo_size(&self) -> Result<usize> {
        self.inner.bind()?;
        self.inner.backend.limit(Limit::PrintfFifo).map_err(self.inner.failed("reading the printf FIFO size"))
    }

    /// Sets each thread's stack size (`cudaLimitStackSize`, 1 KiB by default): kernels that
    /// recurse, or keep large arrays that ptxas puts in local memory, need more. The driver
    /// reserves it for every resident thread of the device.
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver refuses it (too large for the device's memory).
    #[doc(alias = "cudaLimitStackSize")]
    pub fn set_stack_size(&self, bytes: usize) -> Result<()> {
        self.set_limit(Limit::Stack, bytes, "the per-thread stack size")
    }

    /// Each thread's stack size (see [`Gpu::set_stack_size`]).
    ///
    /// # Errors
    /// [`Error::Driver`].
    pub fn stack_size(&self) -> Result<usize> {
        self.inner.bind()?;
        self.inner.backend.limit(Limit::Stack).map_err(self.inner.failed("reading the stack size"))
    }

    fn set_limit(&self, limit: Limit, value: usize, what: &str) -> Result<()> {
        self.inner.bind()?;
        self.inner
            .backend
            .set_limit(limit, value)
            .map_err(|f| self.inner.fail(f, Doing::Call(format!("setting {what} to {value}"))))
    }

    /// Waits for all work on the device.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if a kernel failed, naming it (as far as the driver lets Cohort
    /// know: see [`Error::KernelFailed`]'s `kernel`) and where it panicked.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.bind()?;
        self.inner.backend.synchronize().map_err(|f| self.inner.fail(f, Doing::Wait("synchronizing the device")))?;
        self.inner.note_finished(Finished::All);
        Ok(())
    }

    /// The underlying cudarc context, for interop (`None` on the CPU device).
    #[must_use]
    pub fn cuda_context(&self) -> Option<&Arc<CudaContext>> {
        self.inner.ctx.as_ref()
    }
}

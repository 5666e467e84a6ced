//! Devices and contexts.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{self, CUdevice_attribute as A};
use cudarc::driver::{CudaContext, DriverError};

use crate::backend::{Backend, Fault, Kind, Limit};
use crate::error::{Error, Result, is_sticky};
use crate::launch::LaunchConfig;
use crate::module::{LoadOptions, Module};
use crate::ptx::PtxSet;
use crate::stream::{Stream, StreamOptions};

/// What Cohort needs to know about a device (read once, when the [`Gpu`] is made).
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Ordinal, as the driver numbers devices.
    pub ordinal: usize,
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Device memory, bytes.
    pub total_memory: usize,
    /// Threads per block, at most.
    pub max_threads_per_block: u32,
    /// Block extent limits.
    pub max_block_dim: [u32; 3],
    /// Grid extent limits.
    pub max_grid_dim: [u32; 3],
    /// Shared memory a block gets without opting in, bytes.
    pub shared_per_block: u32,
    /// Shared memory a block can opt into, bytes.
    pub shared_per_block_optin: u32,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Threads per SM, at most.
    pub max_threads_per_sm: u32,
    /// Whether `cuLaunchCooperativeKernel` works here.
    pub cooperative_launch: bool,
    /// L2 cache, bytes.
    pub l2_bytes: u32,
    /// SM clock, kHz.
    pub clock_khz: u32,
    /// Memory clock, kHz.
    pub memory_clock_khz: u32,
    /// Memory bus width, bits.
    pub memory_bus_bits: u32,
    /// Driver version (`13000` for CUDA 13.0).
    pub driver_version: i32,
}

impl DeviceInfo {
    /// Compute capability × 10 (`90` for 9.0).
    #[must_use]
    pub fn cc(&self) -> u32 {
        self.compute_capability.0 * 10 + self.compute_capability.1
    }

    /// Theoretical memory bandwidth, GB/s (DDR: two transfers per clock).
    #[must_use]
    pub fn peak_bandwidth_gbs(&self) -> f64 {
        2.0 * self.memory_clock_khz as f64 * 1e3 * (self.memory_bus_bits as f64 / 8.0) / 1e9
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] {}: compute capability {}.{}, {} SMs, {:.1} GiB, cooperative launch {}",
            self.ordinal,
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sms,
            self.total_memory as f64 / (1u64 << 30) as f64,
            if self.cooperative_launch { "yes" } else { "no" }
        )
    }
}

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

    /// The error for a failed backend call on this device, which was `doing`: a driver's
    /// failure as [`GpuInner::error`] (naming a sticky failure), any other as
    /// [`Fault::into_error`].
    #[cold]
    pub(crate) fn fail(&self, fault: Fault, doing: Doing) -> Error {
        match fault {
            Fault::Driver(code) => self.error(code, doing),
            fault => fault.into_error(doing.into_description()),
        }
    }

    /// A closure for `map_err` that turns a backend fault into the error of `what` (nothing
    /// is allocated unless it fails: a formatted `what` goes through [`GpuInner::fail`] in a
    /// closure instead).
    #[inline]
    pub(crate) fn failed(&self, what: &'static str) -> impl FnOnce(Fault) -> Error + '_ {
        move |f| self.fail(f, Doing::Call(what.into()))
    }

    /// The first panic recorded by any module of this context, as text.
    pub(crate) fn take_panic(&self) -> Option<String> {
        let slots = self.panic_records.lock().unwrap_or_else(|p| p.into_inner());
        slots.iter().find_map(|s| s.read())
    }

    /// Notes a successful launch on stream `stream` (a [`Stream`] key), `blocking` if the
    /// stream synchronizes with the legacy default stream.
    #[inline]
    pub(crate) fn note_launch(&self, stream: u64, blocking: bool, kernel: &Arc<str>, config: LaunchConfig) {
        self.launches.lock().unwrap_or_else(|p| p.into_inner()).note(stream, blocking, kernel, config);
    }

    /// Notes that launches have finished: on one stream, on every blocking stream (after an
    /// operation of the legacy default stream), or everywhere.
    pub(crate) fn note_finished(&self, which: Finished) {
        self.launches.lock().unwrap_or_else(|p| p.into_inner()).finished(which);
    }

    /// The error for a failed driver call on this context: [`Error::Driver`], or
    /// [`Error::KernelFailed`] when a kernel has killed the context (see [`GpuInner::lost`]).
    pub(crate) fn error(&self, code: DriverError, doing: Doing) -> Error {
        self.lost(code, doing).unwrap_or_else(|doing| Error::Driver { what: doing.into_description(), code })
    }

    /// `Ok(Error::KernelFailed)` when `code` is a sticky failure (the first one of this device
    /// is recorded now: the suspected kernel, its configuration, where it panicked), or when
    /// such a failure was recorded before on this device: every later error names it.
    /// Otherwise `Err(doing)`, for the caller's own error.
    pub(crate) fn lost(&self, code: DriverError, doing: Doing) -> Result<Error, Doing> {
        // (Nothing is sticky on the CPU device: its backend reports no driver codes, and a
        // kernel's failure is its launch's error. The out-of-memory code it is given is not
        // sticky, and no failure is recorded for its ordinal.)
        let (lost, first) = match lost_on(self.info.ordinal) {
            Some(lost) => (lost, false),
            None if is_sticky(&code) => {
                let suspect = self.launches.lock().unwrap_or_else(|p| p.into_inner()).suspect();
                record_lost(Lost {
                    ordinal: self.info.ordinal,
                    kernel: suspect.as_ref().map(|s| s.0.clone()),
                    config: suspect.as_ref().map(|s| s.1),
                    unfinished: suspect.map_or(0, |s| s.2),
                    panic: self.take_panic(),
                })
            }
            None => return Err(doing),
        };
        let during = match doing {
            Doing::Wait(_) if first => None,
            doing => Some(doing.into_description()),
        };
        Ok(lost.error(code, during))
    }
}

/// What a failed driver call was doing, for its error.
pub(crate) enum Doing {
    /// Waiting for launched work ("synchronizing a stream"): a sticky failure first seen here
    /// is reported as the kernel's own.
    Wait(&'static str),
    /// Any other call, described ("copying device memory to the host").
    Call(String),
}

impl Doing {
    pub(crate) fn into_description(self) -> String {
        match self {
            Doing::Wait(what) => what.to_string(),
            Doing::Call(what) => what,
        }
    }
}

/// The launches of a context not yet known to have finished, per stream: the first one (with
/// its launch order) and how many followed it there.
///
/// The driver does not say which kernel failed. A failed kernel stops all work after it, and
/// launches that were waited for successfully (a stream's `synchronize`, the device's, a copy
/// to the host) finished, so the kernel that failed is among the unfinished ones: the
/// suspect is the earliest, the first that may not have finished.
/// Which launches a successful wait shows finished.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Finished {
    /// Those of one stream (its key).
    Stream(u64),
    /// Those of every stream that synchronizes with the legacy default stream.
    Blocking,
    /// All of them.
    All,
}

#[derive(Default)]
pub(crate) struct Unfinished {
    seq: u64,
    /// (stream, launch order of its first unfinished launch, that kernel, its configuration,
    /// unfinished launches on the stream, whether the stream is blocking), at most one entry
    /// per stream.
    streams: Vec<(u64, u64, Arc<str>, LaunchConfig, usize, bool)>,
}

impl Unfinished {
    /// Streams remembered at most (the oldest entry is forgotten: streams dropped unwaited).
    const MAX: usize = 64;

    fn note(&mut self, stream: u64, blocking: bool, kernel: &Arc<str>, config: LaunchConfig) {
        self.seq += 1;
        if let Some(s) = self.streams.iter_mut().find(|s| s.0 == stream) {
            s.4 += 1;
            return;
        }
        if self.streams.len() >= Self::MAX
            && let Some(oldest) = self.streams.iter().enumerate().min_by_key(|(_, s)| s.1).map(|(i, _)| i)
        {
            self.streams.swap_remove(oldest);
        }
        self.streams.push((stream, self.seq, kernel.clone(), config, 1, blocking));
    }

    fn finished(&mut self, which: Finished) {
        match which {
            Finished::Stream(id) => self.streams.retain(|s| s.0 != id),
            Finished::Blocking => self.streams.retain(|s| !s.5),
            Finished::All => self.streams.clear(),
        }
    }

    /// The earliest unfinished launch, and how many launches are unfinished in all.
    fn suspect(&self) -> Option<(Arc<str>, LaunchConfig, usize)> {
        let first = self.streams.iter().min_by_key(|s| s.1)?;
        Some((first.2.clone(), first.3, self.streams.iter().map(|s| s.4).sum()))
    }
}

/// The first sticky failure seen on a device. CUDA accepts no more work in the process after
/// one (see [`Error::KernelFailed`]), so it is kept for the rest of the process, for every
/// later error to name.
pub(crate) struct Lost {
    ordinal: usize,
    kernel: Option<Arc<str>>,
    config: Option<LaunchConfig>,
    unfinished: usize,
    panic: Option<String>,
}

impl Lost {
    fn error(&self, code: DriverError, during: Option<String>) -> Error {
        Error::KernelFailed {
            kernel: self.kernel.clone(),
            config: self.config,
            unfinished: self.unfinished,
            code,
            panic: self.panic.clone(),
            during,
        }
    }
}

/// Whether any device has lost its context (so that the usual path takes no lock).
static ANY_LOST: AtomicBool = AtomicBool::new(false);
/// The first sticky failure of each device that had one.
static LOST: Mutex<Vec<Arc<Lost>>> = Mutex::new(Vec::new());

fn lost_on(ordinal: usize) -> Option<Arc<Lost>> {
    if !ANY_LOST.load(Ordering::Acquire) {
        return None;
    }
    LOST.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|l| l.ordinal == ordinal).cloned()
}

/// Records `lost` unless its device already has a record; returns the record kept and whether
/// it is `lost`.
fn record_lost(lost: Lost) -> (Arc<Lost>, bool) {
    let mut all = LOST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(l) = all.iter().find(|l| l.ordinal == lost.ordinal) {
        return (l.clone(), false);
    }
    let lost = Arc::new(lost);
    all.push(lost.clone());
    ANY_LOST.store(true, Ordering::Release);
    (lost, true)
}

/// The names of the devices opened in this process, by ordinal, for errors that name a device.
static NAMES: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

/// How errors name device `ordinal`: `GPU 0 (NVIDIA H200)` (the name once a `Gpu` of it has
/// been opened, else `GPU 0`), or `the CPU device`.
pub(crate) fn device_label(ordinal: usize) -> String {
    if ordinal == crate::cpu::CPU_ORDINAL {
        return "the CPU device".into();
    }
    let names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    match names.iter().find(|(o, _)| *o == ordinal) {
        Some((_, name)) => format!("GPU {ordinal} ({name})"),
        None => format!("GPU {ordinal}"),
    }
}

fn remember_name(ordinal: usize, name: &str) {
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if !names.iter().any(|(o, _)| *o == ordinal) {
        names.push((ordinal, name.to_string()));
    }
}

/// The error for a failed driver call on device `ordinal` outside any [`GpuInner`] (making a
/// context): [`Error::KernelFailed`] naming the earlier failure if the device had one.
fn device_error(ordinal: usize, code: DriverError, what: String) -> Error {
    match lost_on(ordinal) {
        Some(lost) => lost.error(code, Some(what)),
        None => Error::Driver { what, code },
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
        self.inner.bind()?;
        self.inner
            .backend
            .set_limit(Limit::PendingLaunches, launches)
            .map_err(|f| self.inner.fail(f, Doing::Call(format!("setting the pending-launch limit to {launches}"))))
    }

    /// The pending device-side launch limit (see [`Gpu::set_pending_launch_limit`]).
    ///
    /// # Errors
    /// [`Error::Driver`].
    pub fn pending_launch_limit(&self) -> Result<usize> {
        self.inner.bind()?;
        self.inner.backend.limit(Limit::PendingLaunches).map_err(self.inner.failed("reading the pending-launch limit"))
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

fn read_info(ctx: &CudaContext, ordinal: usize) -> Result<DeviceInfo> {
    let attr = |a: A| -> Result<u32> {
        ctx.attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(|code| device_error(ordinal, code, format!("reading device attribute {a:?}")))
    };
    let name = ctx.name().map_err(|code| device_error(ordinal, code, "reading the device name".into()))?;
    remember_name(ordinal, &name);
    let total_memory = ctx.total_mem().map_err(|code| device_error(ordinal, code, "reading the memory size".into()))?;
    let driver_version = crate::backend::cuda::driver_version()
        .map_err(|code| device_error(ordinal, code, "reading the driver version".into()))?;
    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability: (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        sms: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        total_memory,
        max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        shared_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        shared_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        cooperative_launch: attr(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
        l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        memory_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
        memory_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
        driver_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult;

    fn suspect(u: &Unfinished) -> Option<(String, usize)> {
        u.suspect().map(|(k, _, n)| (k.to_string(), n))
    }

    #[test]
    fn device_ordinal_from_cohort_device() {
        assert_eq!(parse_device_ordinal(None).unwrap(), 0, "unset: device 0");
        assert_eq!(parse_device_ordinal(Some("")).unwrap(), 0, "blank: device 0");
        assert_eq!(parse_device_ordinal(Some("  ")).unwrap(), 0);
        assert_eq!(parse_device_ordinal(Some("3")).unwrap(), 3);
        assert_eq!(parse_device_ordinal(Some(" 1\n")).unwrap(), 1, "surrounding blanks are ignored");
        assert_eq!(parse_device_ordinal(Some("gpu")).unwrap(), 0, "gpu: device 0, no CPU fall-back");
        assert_eq!(parse_device_ordinal(Some("GPU")).unwrap(), 0);
        for bad in ["gpu1", "-1", "0,1", "1.0", "0x1", "99999999999999999999999"] {
            let e = parse_device_ordinal(Some(bad)).unwrap_err();
            let Error::Argument(m) = &e else { panic!("{bad}: {e:?}") };
            assert!(m.starts_with(&format!("COHORT_DEVICE={bad} is not a device ordinal")), "{m}");
            assert!(m.contains("unset it for device 0"), "the message says how to fix it: {m}");
        }
    }

    /// Run in a child process with `COHORT_DEVICE` set (the environment is not changed in
    /// this process, where other tests run on other threads).
    #[test]
    fn default_device_follows_cohort_device() {
        const CHILD: &str = "COHORT_DEVICE_TEST_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let want = std::env::var(CHILD).unwrap();
            match want.as_str() {
                "bad" => {
                    // Every constructor that picks the default device fails alike, before
                    // touching the driver.
                    for r in [
                        Gpu::default_ordinal().map(|_| ()),
                        Gpu::from_env().map(|_| ()),
                        Gpu::isolated_from_env().map(|_| ()),
                    ] {
                        assert!(
                            matches!(&r, Err(Error::Argument(m)) if m.starts_with("COHORT_DEVICE=second is not a device ordinal")),
                            "{r:?}"
                        );
                    }
                }
                n => assert_eq!(Gpu::default_ordinal().unwrap(), n.parse::<usize>().unwrap()),
            }
            return;
        }
        let exe = std::env::current_exe().unwrap();
        for (value, want) in [(Some("second"), "bad"), (Some("2"), "2"), (Some(""), "0"), (None, "0")] {
            let mut cmd = std::process::Command::new(&exe);
            cmd.args(["--exact", "device::tests::default_device_follows_cohort_device", "--test-threads", "1"])
                .env(CHILD, want)
                .env_remove(DEVICE_VAR);
            if let Some(v) = value {
                cmd.env(DEVICE_VAR, v);
            }
            let out = cmd.output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && text.contains("1 passed"), "COHORT_DEVICE={value:?}: {text}");
        }
    }

    #[test]
    fn the_suspect_is_the_earliest_unfinished_launch() {
        let (a, t, k): (Arc<str>, Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"), Arc::from("k"));
        let cfg = LaunchConfig::new(1, 32);
        let mut u = Unfinished::default();
        assert!(u.suspect().is_none());
        // `a` on stream 2 finishes (its stream was waited for).
        u.note(2, true, &a, cfg);
        u.finished(Finished::Stream(2));
        // `t` traps on stream 1; `k` is launched after it on stream 2, and `t` again on 1.
        u.note(1, true, &t, LaunchConfig::new(1, 64));
        u.note(2, false, &k, cfg);
        u.note(1, true, &t, cfg);
        // `t` is the first that may not have finished; 3 launches are candidates.
        assert_eq!(u.suspect(), Some((t.clone(), LaunchConfig::new(1, 64), 3)));
        // Stream 1 was waited for successfully: the failure is `k`'s, for certain.
        u.finished(Finished::Stream(1));
        assert_eq!(suspect(&u), Some(("k".into(), 1)));
        // A copy on the legacy default stream does not wait for non-blocking stream 2.
        u.finished(Finished::Blocking);
        assert_eq!(suspect(&u), Some(("k".into(), 1)));
        u.finished(Finished::All);
        assert!(u.suspect().is_none());
    }

    #[test]
    fn unfinished_launches_are_bounded() {
        let k: Arc<str> = Arc::from("k");
        let mut u = Unfinished::default();
        for stream in 0..(Unfinished::MAX as u64 + 10) {
            u.note(stream, true, &k, LaunchConfig::new(1, 1));
            u.note(stream, true, &k, LaunchConfig::new(1, 1));
        }
        assert_eq!(u.streams.len(), Unfinished::MAX);
        // The oldest streams were forgotten, the newest kept.
        assert!(u.streams.iter().all(|s| s.0 >= 10));
        assert_eq!(suspect(&u), Some(("k".into(), 2 * Unfinished::MAX)));
    }

    #[test]
    fn a_lost_device_names_its_first_failure_in_later_errors() {
        // An ordinal no real device has, so that the process-wide record touches nothing else.
        let ordinal = 1_000_001;
        let code = DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED);
        match device_error(ordinal, DriverError(CUresult::CUDA_ERROR_INVALID_VALUE), "creating a context".into()) {
            Error::Driver { what, .. } => assert_eq!(what, "creating a context"),
            e => panic!("before any failure: {e:?}"),
        }
        let first = Lost {
            ordinal,
            kernel: Some(Arc::from("checked_read")),
            config: Some(LaunchConfig::new(1, 64)),
            unfinished: 1,
            panic: Some("panicked at src/checks.rs:10:5 in block (0,0,0) thread (9,0,0)".into()),
        };
        let (kept, is_first) = record_lost(first);
        assert!(is_first);
        let other = Lost { ordinal, kernel: Some(Arc::from("other")), config: None, unfinished: 1, panic: None };
        let (again, is_first) = record_lost(other);
        assert!(!is_first && Arc::ptr_eq(&kept, &again), "the first failure of a device is kept");
        assert!(lost_on(ordinal + 1).is_none());
        let e = device_error(ordinal, code, format!("creating a context on device {ordinal}"));
        let Error::KernelFailed { kernel, config, panic, during, .. } = &e else { panic!("{e:?}") };
        assert_eq!(kernel.as_deref(), Some("checked_read"));
        assert_eq!(*config, Some(LaunchConfig::new(1, 64)));
        assert!(panic.as_deref().unwrap().contains("checks.rs:10:5"));
        assert_eq!(during.as_deref(), Some("creating a context on device 1000001"));
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "creating a context on device 1000001 failed: the CUDA context was lost when kernel `checked_read` \
                 (grid 1 x block 64) failed; panicked at src/checks.rs:10:5 in block (0,0,0) thread (9,0,0)"
            ),
            "{msg}"
        );
        assert!(msg.contains("restart the process"), "{msg}");
    }
}

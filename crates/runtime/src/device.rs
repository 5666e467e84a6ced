//! Devices and contexts.

use std::fmt;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{self, CUdevice_attribute as A};
use cudarc::driver::{CudaContext, DriverError};

use crate::error::{Error, Result};
use crate::module::{LoadOptions, Module};
use crate::ptx::PtxSet;
use crate::stream::Stream;

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

/// Shared state of one context: the device, and the panic records of loaded modules.
pub(crate) struct GpuInner {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) info: DeviceInfo,
    pub(crate) panic_records: Mutex<Vec<crate::module::PanicSlot>>,
}

impl GpuInner {
    /// Makes the context current on this thread.
    #[inline]
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|code| Error::Driver { what: "making the CUDA context current".into(), code })
    }

    /// The first panic recorded by any module of this context, as text.
    pub(crate) fn take_panic(&self) -> Option<String> {
        let slots = self.panic_records.lock().unwrap_or_else(|p| p.into_inner());
        slots.iter().find_map(|s| s.read())
    }
}

/// One GPU and a CUDA context on it: the handle everything else comes from.
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

fn driver_present() -> bool {
    // SAFETY: only tries to open the driver library; no CUDA call is made.
    unsafe { sys::is_culib_present() }
}

fn init() -> Result<()> {
    if !driver_present() {
        return Err(Error::NoDriver);
    }
    cudarc::driver::result::init().map_err(|code| Error::NoDevice {
        requested: 0,
        count: 0,
        detail: Some(describe(&code)),
    })
}

fn describe(code: &DriverError) -> String {
    code.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", code.0))
}

impl Gpu {
    /// Number of CUDA devices, or why there are none.
    ///
    /// # Errors
    /// [`Error::NoDriver`] without a driver; [`Error::NoDevice`] when the driver reports an
    /// error initializing.
    pub fn count() -> Result<usize> {
        init()?;
        let n = cudarc::driver::result::device::get_count().map_err(|code| Error::NoDevice {
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
    /// No driver, no such device, or a driver failure.
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(Error::NoDevice { requested: ordinal, count, detail: None });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|code| Error::Driver { what: format!("creating a context on device {ordinal}"), code })?;
        Self::from_context(ctx, ordinal)
    }

    /// The device named by `COHORT_DEVICE` (an ordinal), else device 0.
    ///
    /// # Errors
    /// As [`Gpu::new`], or a `COHORT_DEVICE` that is not a number.
    pub fn from_env() -> Result<Self> {
        let ordinal = match std::env::var("COHORT_DEVICE") {
            Ok(v) => {
                v.trim().parse().map_err(|_| Error::Argument(format!("COHORT_DEVICE={v} is not a device ordinal")))?
            }
            Err(_) => 0,
        };
        Self::new(ordinal)
    }

    /// The device `ordinal` with a context of its own (not the primary one). A kernel that
    /// traps poisons only its context: dropping this `Gpu` and everything made from it frees
    /// it, and other contexts of the process stay usable.
    ///
    /// # Errors
    /// As [`Gpu::new`].
    pub fn isolated(ordinal: usize) -> Result<Self> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(Error::NoDevice { requested: ordinal, count, detail: None });
        }
        let ctx = CudaContext::new_non_primary(ordinal, 0)
            .map_err(|code| Error::Driver { what: format!("creating a context on device {ordinal}"), code })?;
        Self::from_context(ctx, ordinal)
    }

    fn from_context(ctx: Arc<CudaContext>, ordinal: usize) -> Result<Self> {
        let info = read_info(&ctx, ordinal)?;
        let inner = Arc::new(GpuInner { ctx, info, panic_records: Mutex::new(Vec::new()) });
        let stream = Arc::new(Stream::create(&inner)?);
        Ok(Self { inner, stream })
    }

    /// The device's properties.
    #[must_use]
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The `Gpu`'s own stream (a blocking stream: it orders itself with synchronous copies).
    #[must_use]
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// A new stream on this device.
    ///
    /// # Errors
    /// A driver failure.
    pub fn new_stream(&self) -> Result<Stream> {
        Stream::create(&self.inner)
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
    ///
    /// # Errors
    /// As [`Gpu::load`].
    pub fn load_ptx_text(&self, name: &'static str, ptx: &str) -> Result<Module> {
        let text: &'static str = Box::leak(format!("{}\0", ptx.trim_end_matches('\0')).into_boxed_str());
        let modules: &'static [crate::ptx::PtxModule] = Box::leak(Box::new([crate::ptx::PtxModule {
            arch: self.inner.info.cc(),
            ptx: text,
            ptxas: None,
            resources: &[],
        }]));
        let set: &'static PtxSet = Box::leak(Box::new(PtxSet { crate_name: name, modules }));
        self.load(set)
    }

    /// Waits for all work on the device.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if a kernel failed.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.bind()?;
        // SAFETY: the context is current on this thread.
        let r = unsafe { sys::cuCtxSynchronize() }.result();
        r.map_err(|code| crate::stream::kernel_error(&self.inner, code, None))
    }

    /// The underlying cudarc context, for interop.
    #[must_use]
    pub fn cuda_context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }
}

fn read_info(ctx: &CudaContext, ordinal: usize) -> Result<DeviceInfo> {
    let attr = |a: A| -> Result<u32> {
        ctx.attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(|code| Error::Driver { what: format!("reading device attribute {a:?}"), code })
    };
    let name = ctx.name().map_err(|code| Error::Driver { what: "reading the device name".into(), code })?;
    let total_memory =
        ctx.total_mem().map_err(|code| Error::Driver { what: "reading the memory size".into(), code })?;
    let mut driver_version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .map_err(|code| Error::Driver { what: "reading the driver version".into(), code })?;
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

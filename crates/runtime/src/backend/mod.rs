//! The device backend: the one seam between the runtime and what runs its work.
//!
//! # Design
//!
//! Above the seam, written once for every device: the public types (`Gpu`, `Stream`, buffers,
//! `Module`, `Function`), launch validation (configurations, co-residency, block shapes), the
//! ABI check of typed launchers, the stream-order tracker (`track`), the capture gate, the
//! launch budget's protocol, sticky-failure bookkeeping and the errors that name what was being
//! done. Below it, one [`Backend`] per kind of device:
//!
//! - [`cuda::Cuda`]: a CUDA context, through cudarc's `result` layer where it has the call and
//!   its `sys` layer where not;
//! - [`cpu::Cpu`]: the CPU device, on `cohort-cpu` (host memory, streams that run their work
//!   when it is enqueued, kernels run through their `#[kernel]` host entries).
//!
//! A backend speaks in small opaque handles ([`StreamH`], [`EventH`], [`ModuleH`], …: a
//! number the backend gave out, which only it interprets) and device addresses ([`DevPtr`]), so
//! the CPU side names no CUDA type; it knows nothing of the types above (it never imports
//! `Gpu`, `Function` or `Stream`: what it needs comes as arguments). A failure is a [`Fault`],
//! which the caller turns into an [`Error`](crate::Error) naming the operation
//! (`GpuInner::fail`); what a device does not have (graphs, linking, peer access on the CPU
//! device) is [`Fault::Unsupported`], never a CUDA error code.
//!
//! Where the devices really differ, the code above asks a capability, never the kind of
//! device: [`Backend::has_graphs`], [`Backend::links_device_runtime`],
//! [`Backend::host_variables`], [`Backend::coresident_limit`],
//! [`Backend::programmatic_overlap`], and a kernel's [`FuncInfo::host`] (how a device that runs
//! kernels through their host entries runs it). [`Backend::kind`] only keeps the two kinds'
//! handles and memory apart (`track`, `peer`) and answers `Gpu::is_cpu`.
//!
//! Every call goes to the backend of the device it is made for: there is no per-thread
//! "current device" that a call could find set to the other kind (the old seam switched on a
//! thread-local set by `bind`, so a call made without binding first went to whichever device
//! the thread had bound last).
//!
//! `GpuInner` holds its backend as `Box<dyn Backend>`: one indirect call per operation, next
//! to a driver call of microseconds (the old seam paid a thread-local read and a branch per
//! call). An enum of the two would turn that call into a branch: a nanosecond or two against a
//! launch's microseconds, so the trait object is kept, and a third backend (a simulator, a
//! recording backend for tests) needs no caller changed. The typed launch path makes one
//! backend call per launch and allocates nothing.

use std::ffi::{CStr, c_void};

use cudarc::driver::DriverError;

use crate::launch::LaunchConfig;

pub(crate) mod cpu;
pub(crate) mod cuda;

/// A device address: a CUDA device pointer, or a host address on the CPU device.
pub(crate) type DevPtr = u64;

macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
        #[repr(transparent)]
        pub(crate) struct $name(pub(crate) usize);
    )*};
}

handles! {
    /// A stream of a backend (a `CUstream`'s value on CUDA).
    StreamH;
    /// An event.
    EventH;
    /// A loaded module.
    ModuleH;
    /// A kernel of a loaded module.
    FuncH;
    /// A memory pool.
    PoolH;
    /// A captured graph (CUDA only).
    GraphH;
    /// An instantiated graph (CUDA only).
    GraphExecH;
    /// A context, for peer copies (a `CUcontext`'s value on CUDA).
    CtxH;
}

impl StreamH {
    /// The legacy default stream (`CU_STREAM_LEGACY`).
    pub(crate) const LEGACY: Self = Self(0x1);
    /// The per-thread default stream (`CU_STREAM_PER_THREAD`).
    pub(crate) const PER_THREAD: Self = Self(0x2);
    /// The null stream (the legacy default stream, as the driver reads a null handle).
    pub(crate) const NULL: Self = Self(0);
}

impl EventH {
    /// No event (not made yet).
    pub(crate) const NONE: Self = Self(0);
}

/// Which kind of device a backend drives. Handles and memory of one kind never meet the
/// other's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Cuda,
    Cpu,
}

/// Why a backend call failed.
#[derive(Debug)]
pub(crate) enum Fault {
    /// A CUDA driver call failed with this code.
    Driver(DriverError),
    /// Not enough memory (the CPU device's; a GPU's is `Driver(CUDA_ERROR_OUT_OF_MEMORY)`; both become
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory)).
    OutOfMemory,
    /// The device does not do this (what and why, for the error).
    Unsupported(String),
    /// The CPU device refused the call (an unknown handle, an event without timing).
    Cpu(&'static str),
    /// A kernel failed on the CPU device (its launch's own failure, not sticky).
    Kernel(Box<cohort_cpu::CpuError>),
}

impl From<DriverError> for Fault {
    fn from(code: DriverError) -> Self {
        Fault::Driver(code)
    }
}

/// A backend call's result.
pub(crate) type Done<T = ()> = Result<T, Fault>;

/// Why a module did not load: the fault, the step that failed (empty: loading) and the JIT log.
pub(crate) struct LoadFailure {
    pub(crate) fault: Fault,
    pub(crate) step: String,
    pub(crate) log: String,
}

/// How a module is compiled and loaded.
pub(crate) struct ModuleSource {
    /// The embedded module (its PTX text, NUL-terminated).
    pub(crate) module: &'static crate::ptx::PtxModule,
    /// `libcudadevrt.a` to link with, for a module that calls the device runtime (only CUDA
    /// links; `None` loads the PTX as it is).
    pub(crate) device_runtime: Option<&'static [u8]>,
    pub(crate) threads_per_block: Option<u32>,
    pub(crate) max_registers: Option<u32>,
}

/// A kernel's attributes, as the device reports them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FuncInfo {
    pub(crate) max_threads_per_block: u32,
    pub(crate) registers: u32,
    pub(crate) static_shared_bytes: u32,
    pub(crate) local_bytes: u32,
    pub(crate) const_bytes: u32,
    pub(crate) ptx_version: u32,
    pub(crate) binary_version: u32,
    /// The most dynamic shared memory a launch may ask for now.
    pub(crate) max_dynamic_shared: u32,
    /// For a device that runs kernels through their host entries (the CPU device): how.
    pub(crate) host: Option<HostInfo>,
}

/// How the CPU device runs a kernel, from its PTX.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HostInfo {
    /// It reaches no barrier, warp collective or `nanosleep`: the engine's fast path (unless
    /// launched cooperatively).
    pub(crate) fast_path: bool,
    /// It launches kernels from the device: each host launch gets a launch budget.
    pub(crate) device_launches: bool,
}

/// What the CPU device needs of a kernel to run it: its host entry and how to run it. A GPU
/// ignores it.
#[derive(Clone, Copy)]
pub(crate) struct HostKernel<'a> {
    /// The `#[kernel]` host entry (`None`: loaded without its launcher).
    pub(crate) entry: Option<cpu::CpuEntry>,
    /// The kernel's name, for the errors of a missing entry.
    pub(crate) name: &'a str,
    /// Whether it takes the engine's fast path (`HostInfo::fast_path`, not cooperative).
    pub(crate) fast_path: bool,
    /// Whether the kernel launches kernels from the device (each host launch gets a budget).
    pub(crate) device_launches: bool,
    /// Its module's `constant!` / `global!` variables.
    pub(crate) vars: Option<&'a std::sync::Arc<cohort_cpu::VarTable>>,
}

/// How a kernel is launched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LaunchMode {
    /// `cuLaunchKernel`.
    Plain,
    /// `cuLaunchCooperativeKernel`: every block resident at once (grid sync).
    Cooperative,
    /// `cuLaunchKernelEx` with programmatic stream serialization (PDL): the kernel may start
    /// before the work before it on the stream has finished, and waits for it itself.
    Programmatic,
    /// `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` (the configuration's
    /// `cluster`) and, if `cooperative`, `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`: a
    /// `#[kernel(cluster)]` kernel's launch (the CPU device: a cluster launch of the engine).
    Cluster {
        /// Also cooperative (every block resident at once; grid sync).
        cooperative: bool,
    },
}

/// A fill value of a stream-ordered memset: 8, 16 or 32 bits.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fill {
    U8(u8),
    U16(u16),
    U32(u32),
}

/// A context limit the runtime sets or reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Limit {
    /// `cudaLimitDevRuntimePendingLaunchCount`.
    PendingLaunches,
    /// `cudaLimitPrintfFifoSize`.
    PrintfFifo,
    /// `cudaLimitStackSize` (per thread).
    Stack,
}

/// A tiled tensor map's fields as `cuTensorMapEncodeTiled` takes them, already checked by
/// `tensor_map` (innermost dimension first; the first `rank` entries of each array are used).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TiledMap {
    /// The tensor's first element.
    pub(crate) base: DevPtr,
    pub(crate) rank: u32,
    /// The element's size, bytes.
    pub(crate) elem_bytes: u64,
    /// `cohort::tma::TensorElement::DATA_TYPE`.
    pub(crate) data_type: u32,
    pub(crate) dims: [u64; 5],
    /// Byte strides of dimensions 1.. (`strides[d - 1]` is dimension `d`'s).
    pub(crate) strides: [u64; 5],
    pub(crate) box_dims: [u32; 5],
    pub(crate) element_strides: [u32; 5],
    /// L2 promotion: 0, 64, 128 or 256 bytes.
    pub(crate) l2_promotion: u32,
    /// Out-of-bounds float elements read as NaN (else zero).
    pub(crate) oob_nan: bool,
    /// Swizzle span in bytes: 0 (none), 32, 64 or 128.
    pub(crate) swizzle: u32,
}

/// An attribute of a memory pool (all 64-bit values).
#[derive(Clone, Copy, Debug)]
pub(crate) enum PoolAttr {
    ReleaseThreshold,
    ReservedCurrent,
    UsedCurrent,
}

/// Flags of pinned host memory (`cuMemHostAlloc`), always mapped into the device's address
/// space.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostAlloc {
    /// Pinned and mapped in every context, not only the allocating one.
    pub(crate) portable: bool,
    /// Write-combined (fast for the device to read, slow for the host).
    pub(crate) write_combined: bool,
}

impl HostAlloc {
    /// Portable, not write-combined.
    pub(crate) const PORTABLE: Self = Self { portable: true, write_combined: false };
}

/// Where managed pages go: a prefetch's destination, an advice's location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The buffer's GPU.
    Device,
    /// Host memory.
    Host,
}

/// How a managed buffer is used, for the driver's page placement (`cudaMemAdvise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// Mostly read: processors that read it get read-only copies of its pages; a write
    /// invalidates the others (`cudaMemAdviseSetReadMostly`).
    SetReadMostly,
    /// Undoes [`Advice::SetReadMostly`].
    UnsetReadMostly,
    /// Keep its pages at this location where possible (`cudaMemAdviseSetPreferredLocation`).
    SetPreferredLocation(Location),
    /// Undoes [`Advice::SetPreferredLocation`].
    UnsetPreferredLocation,
    /// Keep its pages mapped for this processor, wherever they are, so that its accesses do not
    /// fault (`cudaMemAdviseSetAccessedBy`).
    SetAccessedBy(Location),
    /// Undoes [`Advice::SetAccessedBy`].
    UnsetAccessedBy(Location),
}

/// A host function enqueued on a stream (`cuLaunchHostFunc`'s callback).
pub(crate) type HostFn = unsafe extern "C" fn(*mut c_void);

/// The operations the runtime asks of a device. Each `unsafe fn` has the contract of the
/// driver call it names: handles are live handles of this backend, addresses are live memory
/// of it of the sizes given, and (for the calls that take no handle) the backend's context is
/// current on the calling thread (`bind`).
///
/// Addresses passed as `*const u8` / `*mut u8` are host memory of the caller.
#[allow(clippy::missing_safety_doc)] // the driver call's contract, as above
pub(crate) trait Backend: Send + Sync {
    /// Which kind of device this is.
    fn kind(&self) -> Kind;

    /// Makes the backend's context current on the calling thread.
    fn bind(&self) -> Done;

    // ---- the context ----

    /// Waits for all work of the device.
    fn synchronize(&self) -> Done;
    /// Free and total memory, bytes.
    fn memory_info(&self) -> Done<(usize, usize)>;
    /// The least and greatest stream priorities.
    fn stream_priority_range(&self) -> Done<(i32, i32)>;
    fn set_limit(&self, limit: Limit, value: usize) -> Done;
    fn limit(&self, limit: Limit) -> Done<usize>;
    /// The context, for another device's peer copies.
    fn ctx(&self) -> CtxH;

    // ---- memory ----

    /// Device memory (`cuMemAlloc`).
    fn alloc(&self, bytes: usize) -> Done<DevPtr>;
    unsafe fn free(&self, ptr: DevPtr) -> Done;
    /// Pinned host memory, portable and mapped (`cuMemHostAlloc`).
    fn alloc_host(&self, bytes: usize, flags: HostAlloc) -> Done<*mut u8>;
    unsafe fn free_host(&self, host: *mut u8) -> Done;
    /// The device address of mapped host memory.
    unsafe fn host_device_ptr(&self, host: *mut u8) -> Done<DevPtr>;
    /// Page-locks and maps host memory (portable).
    unsafe fn register_host(&self, host: *mut u8, bytes: usize) -> Done;
    unsafe fn unregister_host(&self, host: *mut u8) -> Done;
    /// Managed memory, attached globally.
    fn alloc_managed(&self, bytes: usize) -> Done<DevPtr>;
    unsafe fn prefetch(&self, ptr: DevPtr, bytes: usize, to: Location, stream: StreamH) -> Done;
    unsafe fn advise(&self, ptr: DevPtr, bytes: usize, advice: Advice) -> Done;

    // ---- pools and stream-ordered allocation ----

    fn default_pool(&self) -> Done<PoolH>;
    fn create_pool(&self) -> Done<PoolH>;
    unsafe fn destroy_pool(&self, pool: PoolH) -> Done;
    unsafe fn pool_attribute(&self, pool: PoolH, attr: PoolAttr) -> Done<u64>;
    unsafe fn set_pool_attribute(&self, pool: PoolH, attr: PoolAttr, value: u64) -> Done;
    unsafe fn trim_pool(&self, pool: PoolH, keep: usize) -> Done;
    /// Allocates in stream order from `pool` (the device's current pool if `None`).
    unsafe fn alloc_async(&self, bytes: usize, pool: Option<PoolH>, stream: StreamH) -> Done<DevPtr>;
    unsafe fn free_async(&self, ptr: DevPtr, stream: StreamH) -> Done;

    // ---- copies and fills ----

    unsafe fn copy_htod(&self, dst: DevPtr, src: *const u8, bytes: usize) -> Done;
    unsafe fn copy_dtoh(&self, dst: *mut u8, src: DevPtr, bytes: usize) -> Done;
    unsafe fn copy_dtod(&self, dst: DevPtr, src: DevPtr, bytes: usize) -> Done;
    unsafe fn copy_htod_async(&self, dst: DevPtr, src: *const u8, bytes: usize, stream: StreamH) -> Done;
    unsafe fn copy_async(&self, dst: DevPtr, src: DevPtr, bytes: usize, stream: StreamH) -> Done;
    /// A copy between the memory of two contexts (`cuMemcpyPeerAsync`).
    unsafe fn copy_peer_async(
        &self,
        dst: DevPtr,
        dst_ctx: CtxH,
        src: DevPtr,
        src_ctx: CtxH,
        bytes: usize,
        stream: StreamH,
    ) -> Done;
    /// `cuMemsetD8`: `n` bytes.
    unsafe fn memset(&self, dst: DevPtr, value: u8, n: usize) -> Done;
    /// `cuMemsetD{8,16,32}Async`: `n` elements of the fill's width.
    unsafe fn memset_async(&self, dst: DevPtr, value: Fill, n: usize, stream: StreamH) -> Done;

    // ---- streams ----

    fn create_stream(&self, non_blocking: bool, priority: i32) -> Done<StreamH>;
    unsafe fn destroy_stream(&self, stream: StreamH) -> Done;
    unsafe fn stream_synchronize(&self, stream: StreamH) -> Done;
    /// Whether all work of the stream has finished.
    unsafe fn stream_query(&self, stream: StreamH) -> Done<bool>;
    unsafe fn stream_priority(&self, stream: StreamH) -> Done<i32>;
    /// Whether the stream does not synchronize with the legacy default stream.
    unsafe fn stream_non_blocking(&self, stream: StreamH) -> Done<bool>;
    unsafe fn stream_wait_event(&self, stream: StreamH, event: EventH) -> Done;
    /// Enqueues `f(data)` (`cuLaunchHostFunc`); `f` is called once.
    unsafe fn launch_host_fn(&self, stream: StreamH, f: HostFn, data: *mut c_void) -> Done;
    /// Whether the stream is in a graph capture (or the query failed).
    unsafe fn is_capturing(&self, stream: StreamH) -> Done<bool>;

    // ---- events ----

    fn create_event(&self, timing: bool) -> Done<EventH>;
    unsafe fn destroy_event(&self, event: EventH) -> Done;
    unsafe fn record_event(&self, event: EventH, stream: StreamH) -> Done;
    unsafe fn event_synchronize(&self, event: EventH) -> Done;
    /// Whether the work before the event's record has finished.
    unsafe fn event_query(&self, event: EventH) -> Done<bool>;
    unsafe fn event_elapsed_ms(&self, start: EventH, end: EventH) -> Done<f32>;

    // ---- graphs (CUDA only: `Fault::Unsupported` elsewhere) ----

    /// Whether streams of this device can be captured into graphs.
    fn has_graphs(&self) -> bool {
        true
    }

    /// Begins a thread-local-mode capture.
    unsafe fn begin_capture(&self, stream: StreamH) -> Done;
    /// Ends the capture: the graph the driver made (`None`: none, as when the capture was
    /// invalidated), and the call's outcome (a graph may come with a failure).
    unsafe fn end_capture(&self, stream: StreamH) -> (Option<GraphH>, Done);
    unsafe fn graph_nodes(&self, graph: GraphH) -> Done<usize>;
    unsafe fn instantiate_graph(&self, graph: GraphH) -> Done<GraphExecH>;
    unsafe fn launch_graph(&self, exec: GraphExecH, stream: StreamH) -> Done;
    unsafe fn destroy_graph(&self, graph: GraphH) -> Done;
    unsafe fn destroy_graph_exec(&self, exec: GraphExecH) -> Done;

    // ---- modules and kernels ----

    /// Whether a module that calls the device runtime is linked with `libcudadevrt.a` here.
    fn links_device_runtime(&self) -> bool {
        true
    }
    /// Whether kernels run as their PTX here (so a kernel compiled to a marked trap in the
    /// loaded module, as `wgmma` is outside `sm_90a`, must not be launched); the CPU device
    /// runs every kernel's host build instead.
    fn runs_ptx(&self) -> bool {
        true
    }
    /// Loads (and, with a device runtime, links) a module.
    fn load_module(&self, source: &ModuleSource) -> Result<ModuleH, LoadFailure>;
    unsafe fn unload_module(&self, module: ModuleH) -> Done;
    /// The kernel `name` of the module, with its attributes (`None`: the module has none).
    unsafe fn function(&self, module: ModuleH, name: &CStr) -> Done<Option<(FuncH, FuncInfo)>>;
    /// A module variable's address and size (`None`: the module has no such variable).
    unsafe fn global(&self, module: ModuleH, name: &CStr) -> Option<(DevPtr, usize)>;
    /// Whether module variables live in host tables the kernels' host entries read
    /// (`cohort_cpu::VarTable`, made above the seam from the PTX) rather than in the module.
    fn host_variables(&self) -> bool {
        false
    }
    /// Raises the dynamic shared memory a launch of `f` may ask for.
    unsafe fn set_max_dynamic_shared(&self, f: FuncH, bytes: u32) -> Done;
    /// Blocks of `block_threads` threads and `dynamic_smem` bytes one SM holds at once.
    unsafe fn max_active_blocks(&self, f: FuncH, info: &FuncInfo, block_threads: u32, dynamic_smem: u32) -> Done<u32>;
    /// The occupancy calculator's (grid size, block size) for full occupancy.
    unsafe fn suggested_block_size(&self, f: FuncH, info: &FuncInfo, dynamic_smem: u32) -> Done<(u32, u32)>;
    /// The exact number of blocks of `block_threads` threads that can be resident at once,
    /// where the device knows it directly (`None`: occupancy per SM × SMs).
    fn coresident_limit(&self, _block_threads: u32) -> Option<u64> {
        None
    }
    /// How many clusters of `config.cluster` blocks of `config.block` threads and
    /// `config.shared_mem_bytes` bytes can be resident at once (`cuOccupancyMaxActiveClusters`);
    /// 0: not even one.
    unsafe fn max_active_clusters(&self, f: FuncH, info: &FuncInfo, config: &LaunchConfig) -> Done<u32>;
    /// Allows cluster sizes above the portable 8 blocks for `f`
    /// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`).
    unsafe fn allow_non_portable_cluster(&self, f: FuncH) -> Done;
    /// Whether a programmatic (PDL) launch can overlap the work before it.
    fn programmatic_overlap(&self) -> bool {
        true
    }

    // ---- tensor maps (TMA) ----

    /// Whether a device of compute capability `cc` × 10 runs tensor copies (TMA: sm_90+ on a
    /// GPU; the CPU device models them on any).
    fn has_tma(&self, cc: u32) -> bool {
        cc >= 90
    }
    /// The 128 bytes a kernel's tensor copies read for `map` (`cuTensorMapEncodeTiled` on a
    /// GPU; the CPU model's description on the CPU device).
    fn encode_tiled_map(&self, map: &TiledMap) -> Done<[u8; 128]>;

    // ---- launches ----

    /// Launches `f` with a configuration checked above the seam.
    ///
    /// # Safety
    /// `params` holds one pointer per PTX parameter of the entry, each to a value of exactly
    /// that parameter's type, valid for the launch (addresses of live memory of this device);
    /// `config` passed the checks of `mode`; a programmatic launch's entry waits for its
    /// prerequisite grids before it touches memory.
    unsafe fn launch(
        &self,
        f: FuncH,
        host: HostKernel<'_>,
        config: LaunchConfig,
        stream: StreamH,
        params: &mut [*mut c_void],
        mode: LaunchMode,
    ) -> Done;

    // ---- peers ----

    /// Enables access from this context to `peer`'s memory (already enabled is success).
    unsafe fn enable_peer_access(&self, peer: CtxH) -> Done;
}

#[cfg(test)]
mod tests {
    /// The handles that now hold backend handles instead of raw driver pointers (`Function`,
    /// `Event`, `Graph`, `MemPool`, …) are still `Send + Sync`, as the public API promised when
    /// they held pointers (under `unsafe impl`s some of which are gone), and so is the backend.
    #[test]
    fn public_handles_stay_send_and_sync() {
        fn both<T: Send + Sync>() {}
        both::<crate::Function>();
        both::<crate::Event>();
        both::<crate::Graph>();
        both::<crate::GraphExec>();
        both::<crate::MemPool>();
        both::<crate::Module>();
        both::<crate::PinnedBuffer<u32>>();
        both::<crate::ManagedBuffer<u32>>();
        both::<crate::MultiGrid>();
        both::<Box<dyn super::Backend>>();
    }
}

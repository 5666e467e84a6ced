//! # cohort-runtime: launch Rust kernels from the host
//!
//! The host half of Cohort, on [cudarc](https://docs.rs/cudarc)'s driver bindings (the driver
//! library is loaded at run time, so nothing CUDA is needed to build).
//!
//! ```no_run
//! # mod kernels { pub struct vector_add; impl vector_add {
//! #   pub fn load(_: &cohort_runtime::Module) -> Result<Self, cohort_runtime::Error> { unimplemented!() }
//! #   pub fn launch(&self, _: &cohort_runtime::Stream, _: impl Into<cohort_runtime::LaunchConfig>,
//! #     _: &cohort_runtime::DeviceBuffer<f32>, _: &cohort_runtime::DeviceBuffer<f32>,
//! #     _: &mut cohort_runtime::DeviceBuffer<f32>) -> Result<(), cohort_runtime::Error> { unimplemented!() } }
//! #   pub static PTX: cohort_runtime::PtxSet = cohort_runtime::PtxSet { crate_name: "k", modules: &[] }; }
//! use cohort_runtime::{Gpu, LaunchConfig};
//!
//! # fn main() -> Result<(), cohort_runtime::Error> {
//! let gpu = Gpu::new(0)?;
//! let module = gpu.load(&kernels::PTX)?;            // the PTX embedded by the kernels crate
//! let add = kernels::vector_add::load(&module)?;    // typed launcher made by #[kernel]
//! let (a, b) = (gpu.upload(&[1.0f32; 1000])?, gpu.upload(&[2.0f32; 1000])?);
//! let mut out = gpu.zeroed::<f32>(1000)?;
//! add.launch(gpu.stream(), LaunchConfig::for_elements(1000, 256), &a, &b, &mut out)?;
//! assert!(out.to_vec()?.iter().all(|&x| x == 3.0));
//! # Ok(()) }
//! ```
//!
//! | CUDA driver / runtime | Cohort |
//! |---|---|
//! | `cuInit`, `cuDeviceGet`, primary context | [`Gpu::new`], [`Gpu::from_env`], [`Gpu::isolated`] |
//! | `cudaGetDeviceProperties` | [`Gpu::info`] ([`DeviceInfo`]) |
//! | `cuModuleLoadData` (+ pick the PTX for the device) | [`Gpu::load`] on a [`PtxSet`] |
//! | `cuModuleGetFunction` | generated `kernel::load(&module)`, [`Module::function`] |
//! | `kernel<<<grid, block, smem, stream>>>(args)` | generated `kernel.launch(&stream, config, args…)` |
//! | `cudaLaunchCooperativeKernel` | generated `kernel.launch_cooperative(…)` |
//! | `cudaOccupancy*` | [`Function::max_active_blocks_per_sm`], [`Function::suggested_block_size`] |
//! | `cudaMalloc` + `cudaMemcpy` | [`DeviceBuffer`], [`Gpu::upload`], [`DeviceBuffer::to_vec`] |
//! | an output plus an `atomicAdd` slot counter | [`AppendBuffer`] (a kernel's `AppendSlice<T>`) |
//! | a vector written by its owners, `grid.sync()`, read by all | [`GridVecBuffer`] (a kernel's `GridVec<T>`) |
//! | `cudaStreamCreate`, `cudaStreamCreateWithPriority`, `cudaStreamNonBlocking` | [`Gpu::new_stream`], [`Gpu::new_stream_with`] ([`StreamOptions`]) |
//! | `cudaStreamLegacy`, `cudaStreamPerThread` | [`Gpu::legacy_stream`], [`Gpu::per_thread_stream`] |
//! | `cudaStreamSynchronize`, `cudaStreamQuery`, `cudaStreamWaitEvent` | [`Stream::synchronize`], [`Stream::query`], [`Stream::wait`] |
//! | `cudaEventCreate[WithFlags]`, `cudaEventRecord`, `cudaEventSynchronize`, `cudaEventQuery`, `cudaEventElapsedTime` | [`Event::new`], [`Event::untimed`], [`Event::record`], [`Event::synchronize`], [`Event::query`], [`Event::elapsed_ms_since`] |
//! | `cudaLaunchHostFunc` | [`Stream::host_fn`] (a Rust closure) |
//! | `cudaMallocHost`, `cudaHostAlloc` (`cudaHostAllocWriteCombined`, `…Mapped`) | [`PinnedBuffer`], [`Gpu::pinned`], [`PinnedOptions`] (always mapped) |
//! | `cudaHostRegister` … `cudaHostUnregister` | [`Gpu::with_registered`] (a scope) |
//! | `cudaMemcpyAsync` (H2D, D2H, D2D, sub-ranges) | [`Stream::copy`] |
//! | `cudaMemsetAsync`, `cuMemsetD16/D32Async` | [`Stream::fill_bytes`], [`Stream::fill`] |
//! | `cudaStreamBeginCapture` … `cudaStreamEndCapture`, `cudaGraphInstantiate`, `cudaGraphLaunch` | [`Stream::capture`], [`Graph::instantiate`], [`GraphExec::launch`] |
//! | `cudaMemGetInfo` | [`Gpu::memory_info`] |
//! | `cudaMallocAsync`, `cudaFreeAsync` | [`Stream::alloc_zeroed`], [`Stream::alloc_uninit`] (a [`DeviceBuffer`] freed in stream order when dropped) |
//! | `cudaMemPoolCreate`, `cudaDeviceGetDefaultMemPool`, `cudaMallocFromPoolAsync`, `cudaMemPoolAttrReleaseThreshold`, `cudaMemPoolTrimTo` | [`MemPool`] |
//! | `cudaMallocManaged`, `cudaMemPrefetchAsync`, `cudaMemAdvise` | [`ManagedBuffer`] ([`Gpu::managed`]), [`ManagedBuffer::prefetch`], [`ManagedBuffer::advise`] |
//! | `cudaLaunchKernelEx` with `cudaLaunchAttributeProgrammaticStreamSerialization` | generated `kernel.launch_programmatic(…)` of a `#[kernel(dependent)]` kernel |
//! | (ordering streams that share a buffer by hand) | automatic: see "Stream-ordered safety" below |
//! | `cudaGetLastError` after a trap | [`Error::KernelFailed`] from `synchronize`, copies and every later call (restart the process) |
//! | cudarc's (candle's) `CudaContext`, `CudaStream`, `CudaSlice` | [`Gpu::from_cudarc`], [`Gpu::cudarc_stream`], `slice.cohort()` / `.cohort_mut()` as kernel arguments, [`DeviceBuffer::with_cudarc`] ([`interop`]) |
//!
//! # Stream-ordered safety
//!
//! Every device allocation, pinned buffer and registered host range keeps a record of the
//! operations still pending on it, per stream and byte range. Each typed launch, asynchronous
//! copy or fill and graph replay first makes its stream wait (on the GPU, with an event) for
//! the pending operations of other streams that conflict with it — a write after a read or a
//! write, a read after a write, on overlapping bytes — and is then recorded itself. The host
//! waits likewise before it touches memory the GPU may be using: synchronous copies,
//! [`PinnedBuffer::as_slice`], freeing a buffer, the end of a [`Gpu::with_registered`] scope.
//! So safe code cannot race two streams on a buffer, read a pinned buffer before the copy into
//! it has finished, or free memory a pending operation uses; work on one stream costs no event
//! at all, and work on disjoint ranges of one buffer (chunks on different streams) overlaps.
//! Rust's borrows do the rest: a kernel output or a copy destination is a `&mut` borrow, so
//! nothing else names it during the call, and the host's view of a pinned buffer is a borrow
//! that no copy into it can coexist with. Raw pointers (`unsafe` kernels, [`Stream::cu_stream`])
//! are not tracked.
//!
//! A graph capture ([`Stream::capture`]) covers every stream joined into it through events
//! ([`Stream::wait`]): the graph keeps the memory of all their operations, and operations from
//! other threads into any of them are refused rather than silently captured. Handles of two
//! devices (a GPU's and the CPU device's, or two GPUs' where CUDA does not allow it) given to
//! one operation are an [`Error::CrossDevice`] naming both, before anything reaches a driver.
//!
//! Launch checks happen once, here: block size against the kernel's limit, grid and block
//! extents, shared memory against the device (raising the kernel's opt-in limit past 48 KiB
//! when needed), and for cooperative launches that the whole grid fits on the GPU at once.
//! Each failure is an [`Error`] naming the kernel, the configuration and the limit.
//!
//! # The CPU device
//!
//! [`Gpu::cpu`] is a device made of this machine's cores: the same `Gpu`, buffers, streams,
//! events, host functions, typed and cooperative launches, with kernels executed by
//! `cohort-cpu` (every CUDA thread a coroutine, warps and blocks as on a GPU). [`Gpu::any`]
//! opens a GPU when there is one and the CPU device otherwise (or with `COHORT_DEVICE=cpu`); the
//! test suite and `cohort tour` use it, so a machine without a GPU still runs every kernel.
//!
//! **What it guarantees.** The same kernel source runs unchanged (the `#[kernel]` body, built for
//! the host), with the same launch checks (block size, shared memory, co-residency of a
//! cooperative grid: at most 16 Ki threads here), the same stream-ordered safety and the same
//! ABI check at `load`. Thread, block and grid indices of 1-D/2-D/3-D launches; block barriers
//! (plain, counting, `and`/`or`, named) and warp collectives (shuffles of any `DeviceCopy` value,
//! votes, ballot, `match`, `redux`) computed over the lanes that really participate; tiles,
//! coalesced groups, partitions; grid sync; static and dynamic shared memory per block; atomics
//! of every type (float operations as compare-and-swap loops, NaN rules as on the GPU), fences,
//! the mutex; `printf!` to stdout in the GPU's format. A kernel panic, threads waiting at
//! different barriers, a collective reached by part of its group, a spin-wait that nothing
//! releases: each is [`Error::CpuKernel`] from the launch, naming the kernel and the call sites
//! (file, line, block, thread), never a hang. A kernel that reaches no barrier, collective or
//! `nanosleep` (read from its PTX) runs on the engine's fast path, without coroutines.
//!
//! **Where it differs from a GPU.**
//! - *Floating point*: the host's arithmetic. `a * b + c` is never contracted into a fused
//!   multiply-add unless the kernel asks (`fma`), and the fast intrinsics (`__sinf`-like) have the
//!   host `libm`'s precision, not the GPU's error bounds: compare floats with a tolerance, or
//!   write kernels whose results are exact (integers, `fma` everywhere).
//! - *Scheduling*: a block's threads interleave only at barriers, collectives and spin-waits
//!   that yield (`nanosleep`, `Mutex::lock_spin`), never between two plain instructions. The
//!   `activemask` of a divergent warp is the lanes at the same call once nothing else can move;
//!   a GPU may return any subset. `COHORT_CPU_SCHEDULE=random[:SEED]` shuffles the order of
//!   threads at every step to expose order assumptions.
//! - *Memory model*: host memory is stronger than a GPU's (x86-64 is TSO): a data race a GPU
//!   would expose may pass here. `COHORT_CPU_RACECHECK=1` checks shared-memory accesses between
//!   barriers and reports conflicting ones with both sites (`racecheck` without a GPU).
//! - *Streams* run their work at enqueue, on the calling thread: a launch returns when the grid
//!   has finished, and nothing overlaps. Events time the host's clock.
//! - *Device-side launches* run when the launching grid has completed, on the launching
//!   thread: fire-and-forget and block-stream children first, then the tail launches in launch
//!   order (a schedule a GPU may also pick: a parent can never wait for a child), with the same
//!   checks (configuration, block shape, global memory: a slice of the parent's stack or shared
//!   memory is `NotGlobalMemory`), the nesting limit (24) and the launch budget
//!   ([`Gpu::set_pending_launch_limit`]); a child that fails makes the host's launch an
//!   [`Error::CpuKernel`] naming the child and its launch site. A parent that spin-waits for a
//!   child's result (never guaranteed on a GPU either) spins until the spin limit.
//! - *Module variables* (`constant!`, `global!`) are host memory of each loaded module,
//!   initialized from their declaration at first use; `constant` is not a separate cache.
//! - *Not available* ([`Error::NotOnCpu`]): graphs, peer access, NCCL, multi-grid launches; raw
//!   [`Function::launch_raw`] (the CPU device needs the kernel's host entry, which the generated
//!   `load` provides).
//! - *Errors*: what the CPU device refuses (an event made without timing, timed) is
//!   [`Error::CpuDevice`], naming the operation; out of memory is [`Error::OutOfMemory`],
//!   as on a GPU. Nothing is sticky: a failed kernel fails its own
//!   launch only.
//!
//! **Debugging a kernel.** The kernel is ordinary host code: break in a debugger on its body
//! (`__cohort_kernel_<name>`) or on a line of the kernel; `COHORT_CPU_WORKERS=1` runs every
//! block on one OS thread. In a kernel, `printf!` prints on both devices; host-only code (a
//! `std::println!`, an assertion with a formatted message) can sit under
//! `#[cfg(not(target_arch = "nvptx64"))]` in a kernels crate that declares
//! `#[cfg(not(target_arch = "nvptx64"))] extern crate std;`.

mod abi;
mod append;
mod arg;
mod backend;
mod budget;
mod capture;
mod cpu;
mod device;
mod error;
pub mod interop;
mod launch;
mod managed;
mod memory;
mod module;
mod multi_grid;
#[cfg(feature = "nccl")]
pub mod nccl;
mod pdl;
mod peer;
mod pinned;
mod pipeline;
mod pool;
mod ptx;
mod stream;
mod symbol;
pub mod tensor_map;
pub use tensor_map::{TensorMap, TensorMapMut};
mod track;

pub use append::{AppendArg, AppendBuffer, GridVecArg, GridVecBuffer};
pub use arg::KernelArg;
#[doc(hidden)]
pub use arg::{ArgContext, UseArray, UseSink, parts as arg_parts};
#[cfg(unix)]
pub use capture::capture_stdout;
pub use cpu::CpuEntry;
pub use device::{DeviceInfo, Gpu};
pub use error::{Error, Result};
pub use launch::{Dim3, LaunchConfig};
pub use managed::{Advice, Location, ManagedBuffer};
pub use memory::{
    AtomicSliceArg, DeviceBuffer, DevicePtr, DevicePtrMut, DeviceView, DeviceViewMut, DisjointArg, MatrixArg,
    MatrixMut, MatrixRef, MatrixRefArg, MutexSliceArg, SliceArg,
};
pub use module::{Function, FunctionAttributes, LoadOptions, Module, check_kernel_abi};
pub use multi_grid::{MultiGrid, MultiGridLaunch, MultiGridVecArg, MultiGridVecBuffer};
pub use pinned::{PinnedBuffer, PinnedOptions, PinnedView, PinnedViewMut, Registered};
pub use pipeline::{Chunk, Pipeline, PipelineStats};
pub use pool::MemPool;
pub use ptx::{KernelResources, PtxModule, PtxSet};
pub use stream::{Event, Graph, GraphExec, Stream, StreamOptions};
pub use symbol::Symbol;
#[doc(hidden)]
pub use track::Use;
/// The operands of a multi-grid grid, as generated `add_to` methods collect them.
#[doc(hidden)]
pub type UseVec<'a> = Vec<Use<'a>>;
pub use track::{CopyDst, CopySrc};

/// Re-exported for interop with other cudarc users (see [`interop`]: Cohort kernels on cudarc's
/// memory and streams, Cohort buffers lent to cudarc, each side's stream ordering kept).
pub use cudarc;

/// Defines `pub static PTX: PtxSet` from the kernels crate's `cohort_build` output. Put it in
/// the kernels crate, for the host only:
///
/// ```ignore
/// #[cfg(not(target_arch = "nvptx64"))]
/// cohort_runtime::include_ptx!();
/// ```
#[macro_export]
macro_rules! include_ptx {
    () => {
        include!(concat!(env!("OUT_DIR"), "/cohort_ptx.rs"));
    };
}

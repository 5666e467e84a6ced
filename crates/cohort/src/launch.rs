//! Device-side launches: kernels that launch kernels (Programming Guide §"CUDA Dynamic
//! Parallelism", CDP2 — the only form on sm_90 and later).
//!
//! Every `#[kernel] fn child(...)` also gets a **device-side launcher**, callable from another
//! kernel of the same crate:
//!
//! ```ignore
//! child::launch_from_device(&LaunchConfig::new(blocks, threads), FireAndForget, args...)?;
//! ```
//!
//! Its arguments are checked by rustc with the same parameter kinds as the host launcher's, and
//! it returns a `Result`: a launch the device runtime refuses (an impossible configuration,
//! nesting deeper than the device runtime allows, no launch slot) is an [`Err`], never a silent skip. Generic kernels get one launcher per instance
//! (`child::<u32>::launch_from_device`). Cooperative kernels and kernels taking an
//! `AppendSlice`, a `GridVec` or a `DisjointMatrix` have no device launcher (the device runtime
//! has no cooperative launch; the others are not implemented yet).
//!
//! | CUDA C++ (device code) | Cohort |
//! |---|---|
//! | `child<<<grid, block, smem, s>>>(args)` | `child::launch_from_device(&LaunchConfig, stream, args)` |
//! | `cudaStreamTailLaunch` | [`TailLaunch`] |
//! | `cudaStreamFireAndForget` | [`FireAndForget`] |
//! | the block's implicit (NULL) stream, `<<<g, b>>>` | [`BlockStream`] |
//! | `cudaGetParameterBuffer`, `cudaLaunchDevice` | [`raw::cdp2_get_parameter_buffer`](crate::raw::cdp2_get_parameter_buffer), [`raw::cdp2_launch_device`](crate::raw::cdp2_launch_device) |
//! | `cudaDeviceSynchronize()` in device code | none: removed in CDP2; use a [`TailLaunch`] |
//! | `cudaLimitDevRuntimePendingLaunchCount` | the host's `Gpu::set_pending_launch_limit` |
//!
//! ## When a child runs, and what it sees
//!
//! - **[`FireAndForget`]** (`0x4`): the child may start at once and runs concurrently with the
//!   rest of the parent grid (and with other children).
//! - **[`BlockStream`]** (`0`): the children launched by the threads of one block run one after
//!   another, in launch order, concurrently with the parent grid.
//! - **[`TailLaunch`]** (`0x3`): the child runs **after the parent grid has completed** —
//!   every thread of every block has exited and all the parent's fire-and-forget and
//!   block-stream children (with their descendants) have completed. The tail launches of one
//!   grid run one after another, in launch order. This is how a parent "continues after" its
//!   children: there is no device-side synchronize in CDP2 (a parent never waits for a child),
//!   so the work that needs the children's results goes into a kernel launched as a tail.
//!
//! Memory: a child sees everything its launching thread wrote to global memory before the
//! launch (the launch is a release for that thread); writes of other parent threads are seen
//! only if they were ordered before the launch (e.g. `sync_threads()` in the block, then one
//! thread launches). A tail-launched child sees every write of the whole parent grid and of the
//! parent's other children. The parent itself can never read what a child writes — except
//! through atomics, as values that may or may not have arrived yet — since it cannot wait for
//! the child; the host sees every child's writes once the launch it made has completed (the
//! host's launch is complete only when all its descendants are).
//!
//! ## What a parent may hand a child
//!
//! A child runs while the parent grid (fire-and-forget, block stream) still runs, or after it
//! (tail launch), so what it receives must stay valid and free of races for that long. The
//! launcher enforces, per parameter kind:
//!
//! | child parameter | parent passes | streams | checked |
//! |---|---|---|---|
//! | `x: T` (`DeviceCopy`) | a value | all | by rustc |
//! | `s: &[A]`, `A` an atomic or a mutex of global memory | `&[A]` | all | rustc; global memory at run time |
//! | `s: &[T]` | `&[T]` | [`TailLaunch`] only | rustc; global memory at run time |
//! | `out: DisjointSlice<T>` | a `DisjointSlice<T, _>`, **moved** | [`TailLaunch`] only | by rustc |
//! | `shape: BlockShape<X, Y, Z>` | nothing | all | the block of the configuration, at run time |
//! | `p: *const T` / `*mut T` (`unsafe fn` kernels) | a raw pointer | all | the caller (`unsafe`) |
//!
//! Why: a `&[T]` of plain values may be an element that its owner in the parent writes again
//! after the launch (a reborrowed `DisjointSlice` element), and a `DisjointSlice` is held by
//! every parent thread, each writing its own indices: only when the whole parent grid has
//! completed (a tail launch) can no parent thread touch either any more. The calling thread
//! gives its `DisjointSlice` up (it is moved into the launch), and the child's threads own its
//! indices anew — by the child's own `ThreadIndex`es. Tail launches of one grid run one at a
//! time, so two children handed the same memory never run together. A slice argument must lie
//! in global memory — never the parent's shared or local memory, which a child cannot see —:
//! anything else is [`LaunchError::NotGlobalMemory`].
//!
//! Kernels that hand parts of their data to concurrent children (as CUDA's recursive
//! reductions do in place) are written as `unsafe fn` kernels with raw pointers, whose
//! launcher is `unsafe` and whose caller states why the parts are disjoint.
//!
//! ## The pending-launch limit, and the launch budget
//!
//! The device runtime holds at most `cudaLimitDevRuntimePendingLaunchCount` launches that have
//! not completed (2048 by default; the host raises it with `Gpu::set_pending_launch_limit`
//! before loading the module). CUDA documents a launch past it as an error, but measured on an
//! H200 (driver 580) it is not: 2^20 fire-and-forget launches from 4096 × 256 threads under a
//! limit of 65536 did not finish within 150 s — the launching threads wait for slots while
//! holding the SMs the pending children need.
//!
//! So Cohort budgets device launches: before each host launch of a kernel that can launch
//! kernels (the host finds them in the PTX's call graph), the runtime sets the module's launch
//! budget to the pending-launch limit, and every device-side launch takes one unit from it
//! first; when none is left the launch is refused with [`LaunchError::BudgetSpent`]. A tree of
//! grids descending from one host launch thus makes at most *limit* launches in all, so never
//! more than *limit* are pending, and a runaway recursion or launch storm ends in `Err`s
//! instead of a hang. Host launches of one module's device-launching kernels run one after
//! another (each waits, on the GPU, for the previous one to complete), since they share the
//! budget. The budget counts launches made, not launches pending: a tree that makes more
//! launches than the limit over its life gets `Err`s even if they would never all have been
//! pending at once — raise the limit for it (each slot costs some device memory). The `raw`
//! tier's [`cdp2_get_parameter_buffer`](crate::raw::cdp2_get_parameter_buffer) bypasses the
//! budget (it is `unsafe`).
//!
//! ## On the CPU device
//!
//! The same launcher runs on the runtime's CPU device: the child's host entry, configuration
//! and a parameter buffer of the device runtime's layout go into the engine's queue of the
//! launching grid (`cohort_cpu`'s device launches), and run when that grid has completed, on
//! the launching thread: the fire-and-forget and block-stream children in launch order, then
//! the tail launches one after another in launch order, each child's own children before the
//! next child. That is one of the schedules a GPU may pick (a parent never waits for a child);
//! code correct on a GPU is correct there. The checks are the GPU's: [`LaunchError::InvalidConfig`],
//! [`LaunchError::BlockShape`], [`LaunchError::NotGlobalMemory`] (a slice must lie inside one of
//! the device's allocations: the parent's stack and shared memory are refused), the nesting
//! limit ([`LaunchError::NoParameterBuffer`] from a grid 24 deep) and the launch budget
//! ([`LaunchError::BudgetSpent`]). A child that fails (a panic, a deadlock) makes the host's
//! launch an `Err` naming the child kernel and the `launch_from_device` call. Kernel bodies
//! run through `cohort_cpu::launch` directly (without the runtime) get
//! [`LaunchError::NotOnCpuDevice`].
//!
//! ## Programmatic dependent launch (host launches, sm_90)
//!
//! Separate from the device-side launches above: a chain of short kernels launched by the host
//! on one stream, where each may *begin* before the previous one has finished (CUDA's
//! "programmatic dependent launch", `cudaLaunchKernelEx` with
//! `cudaLaunchAttributeProgrammaticStreamSerialization`). A kernel declared
//! `#[kernel(dependent)]` starts with [`wait_for_prior_grid`] (`griddepcontrol.wait`) before
//! anything of its body runs, and its host launcher gains `launch_programmatic`: the launch may
//! overlap the previous kernel's tail (its own launch and block scheduling), but no thread of it
//! touches memory before the previous grid has completed and its writes are visible, so the
//! chain computes what plain stream order computes. Only kernels declared `dependent` have
//! `launch_programmatic` (a compile error otherwise), and the runtime refuses it (an `Err`)
//! for a function whose module entry lacks the wait. A predecessor may call
//! [`launch_dependents`] to let the dependent be scheduled before its own end. Both are
//! nothing below sm_90, where the runtime launches in plain stream order.
//!
//! ## Linking
//!
//! A module whose PTX calls the device runtime (`__cudaCDP2*`) is linked at load time by the
//! driver with `libcudadevrt.a`, which `cohort-build` finds at build time and embeds beside
//! the PTX (`COHORT_CUDADEVRT`, `$CUDA_PATH/lib64`, or the pip wheel
//! `nvidia-cuda-runtime==13.0.96`); other modules keep the plain load. Put device-launching
//! kernels in a crate of their own so that the others keep it.

use crate::copy::DeviceCopy;
use crate::slice::{DisjointSlice, IndexKind};
use crate::thread::Dim3;

/// A child grid's shape: grid, block and dynamic shared memory (`<<<grid, block, smem>>>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// `blocks` × `threads`, one-dimensional, no dynamic shared memory.
    #[must_use]
    pub const fn new(blocks: u32, threads: u32) -> Self {
        Self { grid: Dim3::new(blocks, 1, 1), block: Dim3::new(threads, 1, 1), shared_mem_bytes: 0 }
    }

    /// Any grid and block.
    #[must_use]
    pub const fn dims(grid: Dim3, block: Dim3) -> Self {
        Self { grid, block, shared_mem_bytes: 0 }
    }

    /// The same, with `bytes` of dynamic shared memory per block.
    #[must_use]
    pub const fn shared_mem(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    fn check(&self) -> Result<(), LaunchError> {
        let (g, b) = (self.grid, self.block);
        let threads = b.x as u64 * b.y as u64 * b.z as u64;
        if g.x == 0 || g.y == 0 || g.z == 0 || threads == 0 || threads > 1024 || g.y > 65535 || g.z > 65535 {
            return Err(LaunchError::InvalidConfig);
        }
        Ok(())
    }
}

/// Why a device-side launch did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchError {
    /// An empty grid or block, more than 1024 threads in a block, or a grid y/z over 65535.
    InvalidConfig,
    /// The kernel takes a fixed `BlockShape` and the configuration's block differs.
    BlockShape,
    /// Slice argument number `param` (counting from 0) does not lie in global memory (it is
    /// in the parent's shared or local memory, which the child cannot see).
    NotGlobalMemory {
        /// Position of the argument among the kernel's parameters.
        param: u32,
    },
    /// The device runtime gave no parameter buffer: the nesting is deeper than 24, the
    /// configuration is impossible for this kernel, or no launch slot could be had (see the
    /// module docs on the pending-launch limit).
    NoParameterBuffer,
    /// `cudaLaunchDevice` returned this `cudaError_t`.
    Refused(u32),
    /// The launch budget of the host launch this grid descends from is spent: it has made as
    /// many device-side launches as the pending-launch limit (see the [module docs](self)).
    BudgetSpent,
    /// The kernel runs on the CPU engine outside a launch that allows device-side launches (its
    /// body called through `cohort_cpu::launch` directly, not through the runtime's CPU device).
    NotOnCpuDevice,
}

impl LaunchError {
    /// A number for the error, for device `printf!` (which cannot format a `Display`): the
    /// `cudaError_t` of [`LaunchError::Refused`], else `1_000_000` plus the variant's position.
    #[must_use]
    pub const fn code(self) -> u32 {
        match self {
            Self::InvalidConfig => 1_000_001,
            Self::BlockShape => 1_000_002,
            Self::NotGlobalMemory { .. } => 1_000_003,
            Self::NoParameterBuffer => 1_000_004,
            Self::BudgetSpent => 1_000_005,
            Self::NotOnCpuDevice => 1_000_006,
            Self::Refused(c) => c,
        }
    }
}

impl core::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::InvalidConfig => f.write_str("impossible launch configuration"),
            Self::BlockShape => f.write_str("the block differs from the kernel's BlockShape"),
            Self::NotGlobalMemory { param } => write!(f, "argument {param} is not in global memory"),
            Self::NoParameterBuffer => f.write_str("the device runtime has no launch slot (pending-launch limit)"),
            Self::Refused(e) => write!(f, "cudaLaunchDevice returned error {e}"),
            Self::BudgetSpent => {
                f.write_str("the launch budget (the pending-launch limit) of this host launch is spent")
            }
            Self::NotOnCpuDevice => {
                f.write_str("device-side launches on the CPU engine need a launch of the runtime's CPU device")
            }
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::TailLaunch {}
    impl Sealed for super::FireAndForget {}
    impl Sealed for super::BlockStream {}
}

/// A stream a device-side launch goes into (see the [module docs](self) for when each runs).
pub trait DeviceStream: sealed::Sealed + Copy {
    /// The `cudaStream_t` the device runtime knows it by.
    const HANDLE: u64;
}

/// `cudaStreamTailLaunch`: the child runs after the whole parent grid (and its other children)
/// has completed; a grid's tail launches run one after another.
#[derive(Clone, Copy, Debug, Default)]
#[doc(alias = "cudaStreamTailLaunch")]
pub struct TailLaunch;
/// `cudaStreamFireAndForget`: the child runs concurrently with the parent grid.
#[derive(Clone, Copy, Debug, Default)]
#[doc(alias = "cudaStreamFireAndForget")]
pub struct FireAndForget;
/// The block's implicit (NULL) stream: one block's children run in launch order, concurrently
/// with the parent grid.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockStream;

impl DeviceStream for TailLaunch {
    const HANDLE: u64 = 0x3;
}
impl DeviceStream for FireAndForget {
    const HANDLE: u64 = 0x4;
}
impl DeviceStream for BlockStream {
    const HANDLE: u64 = 0;
}

/// Streams whose children run after the parent grid has completed: the only ones that may
/// receive memory some parent thread could still write.
#[diagnostic::on_unimplemented(
    message = "a `DisjointSlice` can be handed to a child only in a tail launch, not in `{Self}`",
    note = "every thread of the parent holds the `DisjointSlice` and may still write its own indices while a \
            fire-and-forget or block-stream child runs; a `TailLaunch` child runs after the whole parent grid"
)]
pub trait AfterParent: DeviceStream {}
impl AfterParent for TailLaunch {}

/// Streams in which a `&[E]` may be handed to a child: every stream for atomics and mutexes,
/// only [`TailLaunch`] for plain values.
#[diagnostic::on_unimplemented(
    message = "`&[{E}]` can be handed to a child only in a tail launch, not in `{Self}`",
    note = "the slice may be memory that a parent thread writes again after the launch (a `DisjointSlice` element), \
            while a concurrent child reads it; use `TailLaunch` (the child then runs after the parent grid), or pass \
            atomics"
)]
pub trait SharesSlice<E>: DeviceStream {}
impl<E> SharesSlice<E> for TailLaunch {}
impl<E: Concurrent> SharesSlice<E> for FireAndForget {}
impl<E: Concurrent> SharesSlice<E> for BlockStream {}

/// Element types that may be read and written by a parent and its children at once: every
/// access is atomic.
#[diagnostic::on_unimplemented(
    message = "a `&[{Self}]` can be handed to a child only in a tail launch",
    label = "a fire-and-forget or block-stream child would read this while the parent runs",
    note = "the slice may be memory that a parent thread writes again after the launch (a `DisjointSlice` element), \
            while a concurrent child reads it; launch with `TailLaunch` (the child runs after the parent grid), or pass \
            atomics"
)]
pub trait Concurrent {}
impl<T: DeviceCopy> Concurrent for crate::atomic::Atomic<T, crate::atomic::Global> {}
impl<T: DeviceCopy> Concurrent for crate::atomic::Atomic<T, crate::atomic::Generic> {}
impl Concurrent for crate::mutex::Mutex<crate::atomic::Global> {}
impl Concurrent for crate::mutex::Mutex<crate::atomic::Generic> {}

/// What a child's `DisjointSlice<T>` parameter accepts: a parent's `DisjointSlice<T, K>` of any
/// index kind, moved (the child's threads own its indices by their own `ThreadIndex`es).
pub trait ChildDisjoint<T> {
    #[doc(hidden)]
    fn into_raw_parts(self) -> (*mut T, usize);
}
impl<T, K: IndexKind> ChildDisjoint<T> for DisjointSlice<'_, T, K> {
    #[inline(always)]
    fn into_raw_parts(mut self) -> (*mut T, usize) {
        (self.as_mut_ptr(), self.len())
    }
}

/// Checks that slice argument `param` lies in global memory (empty and zero-sized ones pass).
#[doc(hidden)]
#[inline(always)]
pub fn check_global<T>(s: &[T], param: u32) -> Result<(), LaunchError> {
    if s.is_empty() || size_of::<T>() == 0 || crate::global::in_global(s.as_ptr().cast(), size_of_val(s)) {
        Ok(())
    } else {
        Err(LaunchError::NotGlobalMemory { param })
    }
}

/// Checks that `DisjointSlice` argument `param` lies in global memory.
#[doc(hidden)]
#[inline(always)]
pub fn check_global_ptr<T>(ptr: *mut T, len: usize, param: u32) -> Result<(), LaunchError> {
    if len == 0
        || size_of::<T>() == 0
        || crate::global::in_global(ptr.cast_const().cast(), len.saturating_mul(size_of::<T>()))
    {
        Ok(())
    } else {
        Err(LaunchError::NotGlobalMemory { param })
    }
}

/// Checks a fixed block shape against the configuration.
#[doc(hidden)]
#[inline(always)]
pub fn check_shape(config: &LaunchConfig, dims: [u32; 3]) -> Result<(), LaunchError> {
    let b = config.block;
    if [b.x, b.y, b.z] == dims { Ok(()) } else { Err(LaunchError::BlockShape) }
}

/// The symbol of the module's launch budget, which the host runtime sets before each host
/// launch of a kernel that launches kernels.
pub const LAUNCH_BUDGET_SYMBOL: &str = "cohort_launch_budget";

/// Device-side launches the current host launch may still make (see the [module docs](self)):
/// set to the pending-launch limit by the host before each host launch of a device-launching
/// kernel of this module (those launches run one at a time), taken one per launch. Zero until
/// the host sets it, so that a launch the host did not budget is refused, not unbounded.
#[cfg(target_arch = "nvptx64")]
#[unsafe(export_name = "cohort_launch_budget")]
// SAFETY: a device `static` is `.global` memory, the space of `AtomicU32`.
static LAUNCH_BUDGET: crate::atomic::AtomicU32 = unsafe { crate::atomic::AtomicU32::new(0) };

/// Takes one launch from the budget; `false` if it is spent (the count is left as it was).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn take_launch() -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        use crate::atomic::Ordering::Relaxed;
        // A signed view: concurrent takers may drive it below zero for a moment; each of them
        // gives its unit back, so it never goes lower than minus the number of threads.
        if (LAUNCH_BUDGET.fetch_sub(1, Relaxed) as i32) <= 0 {
            LAUNCH_BUDGET.fetch_add(1, Relaxed);
            return false;
        }
    }
    true
}

/// Gives back a launch taken by [`take_launch`] that did not happen.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn return_launch() {
    #[cfg(target_arch = "nvptx64")]
    LAUNCH_BUDGET.fetch_add(1, crate::atomic::Ordering::Relaxed);
}

/// A child's parameter buffer being filled (code generated by `#[kernel]`; not a public API).
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
pub struct ParamBuffer {
    ptr: *mut u8,
    offset: usize,
}

#[cfg(target_arch = "nvptx64")]
impl ParamBuffer {
    /// Reserves a launch of entry `entry` with `config`.
    ///
    /// # Safety
    /// `entry` must be the address of a kernel entry of this module, and the buffer must be
    /// filled with exactly that entry's parameters ([`ParamBuffer::push`], in order) before
    /// [`ParamBuffer::launch`].
    #[inline(always)]
    pub unsafe fn new(entry: u64, config: &LaunchConfig) -> Result<Self, LaunchError> {
        config.check()?;
        if !take_launch() {
            return Err(LaunchError::BudgetSpent);
        }
        let (g, b) = (config.grid, config.block);
        // SAFETY: forwarded to the caller.
        let ptr = unsafe {
            crate::raw::cdp2_get_parameter_buffer(entry, (g.x, g.y, g.z), (b.x, b.y, b.z), config.shared_mem_bytes)
        };
        if ptr.is_null() {
            return_launch();
            Err(LaunchError::NoParameterBuffer)
        } else {
            Ok(Self { ptr, offset: 0 })
        }
    }

    /// Writes the next parameter at its natural alignment.
    ///
    /// # Safety
    /// `T` must be the type of the entry's next `.param` (a value of the same size and
    /// alignment, or a pointer or length as `u64`/`usize`/raw pointer).
    #[inline(always)]
    pub unsafe fn push<T>(&mut self, value: T) {
        let align = align_of::<T>();
        self.offset = (self.offset + align - 1) & !(align - 1);
        // SAFETY: the device runtime's buffer holds the entry's parameters at their natural
        // alignment (the buffer itself is aligned for every parameter type); the caller
        // guarantees `T` is the next one, so the write is in bounds and aligned.
        unsafe { self.ptr.add(self.offset).cast::<T>().write(value) };
        self.offset += size_of::<T>();
    }

    /// Launches the filled buffer into `stream`.
    #[inline(always)]
    pub fn launch<S: DeviceStream>(self, _stream: S) -> Result<(), LaunchError> {
        // SAFETY: `new`'s caller filled the buffer with the entry's parameters; the buffer
        // came from `cdp2_get_parameter_buffer` and is launched once (`self` is consumed).
        match unsafe { crate::raw::cdp2_launch_device(self.ptr, S::HANDLE) } {
            0 => Ok(()),
            e => {
                return_launch();
                Err(LaunchError::Refused(e))
            }
        }
    }
}

/// A child kernel as the CPU device launches it: its host entry (`__cohort_cpu_<entry>`, made by
/// `#[kernel]`) and its entry name, for errors (code generated by `#[kernel]`; not a public API).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct HostEntry {
    entry: cohort_cpu::Entry,
    name: &'static str,
}

#[cfg(not(target_arch = "nvptx64"))]
impl HostEntry {
    /// The entry `entry` of the kernel whose PTX entry is `name`.
    #[must_use]
    pub const fn new(entry: cohort_cpu::Entry, name: &'static str) -> Self {
        Self { entry, name }
    }
}

/// A child's parameter buffer being filled, on the CPU device: the same layout as the device
/// runtime's, handed to the engine's queue of the running grid (see `cohort_cpu`'s device
/// launches: the children run when the grid has completed, fire-and-forget and block-stream
/// ones first, then the tail launches in order). Code generated by `#[kernel]`; not a public API.
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub struct ParamBuffer {
    launch: cohort_cpu::DeviceLaunch,
}

#[cfg(not(target_arch = "nvptx64"))]
impl ParamBuffer {
    /// Reserves a launch of `entry` with `config`: the same checks as on a GPU, the nesting
    /// limit and the launch budget of the host launch this grid descends from.
    ///
    /// # Safety
    /// `entry` must be the host entry of the kernel whose parameters are pushed next, and the
    /// buffer must be filled with exactly that entry's parameters ([`ParamBuffer::push`], in
    /// order) before [`ParamBuffer::launch`].
    #[track_caller]
    pub unsafe fn new(entry: HostEntry, config: &LaunchConfig) -> Result<Self, LaunchError> {
        config.check()?;
        let dim = |d: Dim3| cohort_cpu::Dim3::new(d.x, d.y, d.z);
        let r = cohort_cpu::DeviceLaunch::new(
            entry.entry,
            entry.name,
            dim(config.grid),
            dim(config.block),
            config.shared_mem_bytes,
        );
        match r {
            Ok(launch) => Ok(Self { launch }),
            Err(cohort_cpu::Refusal::NotInTree) => Err(LaunchError::NotOnCpuDevice),
            Err(cohort_cpu::Refusal::NoSlot) => Err(LaunchError::NoParameterBuffer),
            Err(cohort_cpu::Refusal::BudgetSpent) => Err(LaunchError::BudgetSpent),
        }
    }

    /// Writes the next parameter at its natural alignment.
    ///
    /// # Safety
    /// `T` must be the type of the entry's next `.param` (a value of the same size and
    /// alignment, or a pointer or length as `u64`/`usize`/raw pointer).
    pub unsafe fn push<T>(&mut self, value: T) {
        let at = self.launch.reserve(align_of::<T>(), size_of::<T>());
        // SAFETY: `reserve` returned room for `size_of::<T>()` bytes in the buffer, valid until
        // the next call on `self.launch`; the write is unaligned-safe.
        unsafe { at.cast::<T>().write_unaligned(value) };
    }

    /// Queues the filled buffer into `stream`.
    #[allow(clippy::unnecessary_wraps)] // the GPU's launch can fail here
    pub fn launch<S: DeviceStream>(self, _stream: S) -> Result<(), LaunchError> {
        self.launch.launch(S::HANDLE);
        Ok(())
    }
}

/// Waits until the grids this one depends on programmatically (the previous kernel on the
/// stream, when this one was launched with `launch_programmatic`) have completed and their
/// writes are visible (`cudaGridDependencySynchronize()`); returns at once otherwise. A
/// `#[kernel(dependent)]` kernel already calls it at its entry, before its body. Nothing below
/// sm_90 and on the CPU device (whose launches run in stream order).
#[inline(always)]
pub fn wait_for_prior_grid() {
    crate::raw::griddepcontrol_wait();
}

/// Lets the kernel launched programmatically after this one on its stream
/// (`launch_programmatic` of a `#[kernel(dependent)]` kernel) be scheduled once every block of
/// this grid has called it or exited, rather than when this grid completes
/// (`cudaTriggerProgrammaticLaunchCompletion()`). Safe anywhere, any number of times: it
/// orders no memory, and the dependent waits at its entry until this grid has completed.
/// Nothing below sm_90 and on the CPU device.
#[inline(always)]
pub fn launch_dependents() {
    crate::raw::griddepcontrol_launch_dependents();
}

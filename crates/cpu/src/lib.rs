//! Cohort's CPU device engine: runs a kernel's CUDA threads on the CPU, warp-faithfully.
//!
//! [`launch`] runs a closure once per CUDA thread of a grid. Inside it, the device operations
//! of this crate ([`thread_idx`], [`sync_threads`], [`shfl`], [`ballot`], [`grid_sync`],
//! [`shared_static`], …) behave as on a GPU, and a launch that would hang, race or diverge on
//! a GPU returns a [`CpuError`] naming the call sites instead. The device library's host build
//! calls this crate; kernels don't name it.
//!
//! | CUDA | here |
//! |---|---|
//! | `kernel<<<grid, block, shmem>>>()` / `cudaLaunchCooperativeKernel` | [`launch`] with a [`LaunchSpec`] (`cooperative`) |
//! | `threadIdx`, `blockIdx`, `blockDim`, `gridDim`, `%laneid`, `%lanemask_*` | [`thread_idx`], [`block_idx`], [`block_dim`], [`grid_dim`], [`lane_id`], [`lanemask_lt`] … |
//! | `__syncthreads[_count,_and,_or]`, `bar.sync id, n`, `__syncwarp` | [`sync_threads`], [`sync_threads_count`], [`sync_threads_and`], [`sync_threads_or`], [`barrier_named`], [`sync_warp`] |
//! | `__shfl[_up,_down,_xor]_sync`, `shfl.sync` | [`shfl_idx`], [`shfl_up`], [`shfl_down`], [`shfl_xor`], [`shfl`] (any `Copy + 'static` type) |
//! | `__all/__any/__uni/__ballot_sync`, `__match_any/all_sync`, `__reduce_*_sync` | [`vote_all`], [`vote_any`], [`vote_uni`], [`ballot`], [`match_any_u32`] …, [`redux_u32`], [`redux_i32`] |
//! | `__activemask()` | [`activemask`] |
//! | `grid.sync()` | [`grid_sync`] |
//! | `cudaLaunchKernelEx` + cluster dimension; `barrier.cluster.arrive/wait`, `mapa`, `%cluster_*` | [`LaunchSpec::cluster`]; [`cluster_arrive`], [`cluster_wait`], [`cluster_map_shared`], [`cluster_rank`], [`cluster_dim`] … |
//! | `__shared__` (static, `extern` dynamic) | [`shared_static`], [`dynamic_shared`], [`shared_window`] |
//! | compute-sanitizer `racecheck` | [`LaunchSpec::race_check`] + [`shared_access`] |
//!
//! # Model
//!
//! - **Threads are coroutines.** Each CUDA thread runs on its own small stack
//!   ([`LaunchSpec::stack_bytes`], 128 KiB by default, `mmap`ed so untouched pages cost
//!   nothing, pooled across blocks). A block's threads share one OS thread; blocks run in
//!   parallel on a worker per core. A thread runs until it reaches a barrier or collective (it
//!   suspends there) or returns.
//! - **Rounds and meeting points.** The scheduler runs every runnable thread of the block (in
//!   rank order, or a seeded random order with [`LaunchSpec::random_schedule`]) until each
//!   blocks or exits, then completes every meeting point whose participants are all there:
//!   a warp collective when every lane of its `mask` is at the same call (same site and
//!   operation, same mask, same value type; `sync_warp` may meet across sites, as
//!   `bar.warp.sync` does on sm_70+), `sync_threads*` when every thread of the block is at the
//!   same call, a named barrier when `count` threads arrived, a grid sync when every thread of
//!   every block is at the same grid sync (a block at another is [`CpuError::GridSyncMismatch`]).
//!   Results are computed over the lanes that really participate. "The same call" is the same
//!   call site and, where the caller says which ([`at_instruction`]), the same call
//!   instruction: the device library passes its code's address, so two calls inside one
//!   `macro_rules!` expansion or `#[track_caller]` helper (one site) are two calls.
//! - **Maximal convergence.** [`activemask`] completes last: when no other meeting point can
//!   complete, the lanes of a warp waiting at the same `activemask` call are its result. So
//!   lanes that took the same branch and reached the call "together" form the mask, whatever
//!   order the scheduler ran them in; lanes elsewhere (exited, past it, at a barrier) do not.
//!   A GPU may return a smaller mask (any subset the hardware happened to run together); code
//!   correct for every such subset is correct here.
//! - **Errors, never hangs.** When nothing can complete and threads still wait, the block is
//!   stuck, and the error says why: threads at different barriers ([`CpuError::BarrierMismatch`],
//!   both sites), a thread that exited while others wait ([`CpuError::ExitedAtBarrier`]), a warp
//!   collective missing lanes ([`CpuError::WarpDivergence`]: op, site, mask, the lanes that
//!   arrived, where a missing lane is, as the GPU's checked mode reports), a short named
//!   barrier, a block that exited while others wait at grid sync. A kernel panic ends the launch
//!   with [`CpuError::Panic`] (file, line, column, block, thread, message). After an error, the
//!   other threads of the launch are dropped: their stacks unwind, running destructors.
//! - **Cooperative launches** keep every block resident at once (at most
//!   [`max_coresident_blocks`]; a larger grid is refused, as on a GPU), spread over the workers;
//!   a block at a grid sync parks and its worker runs its other blocks.
//! - **Fast path.** [`Mode::Loop`] runs each block's threads as plain loop iterations, no
//!   coroutine and no switching, for kernels that reach no barrier or collective (one that
//!   does ends the launch with [`CpuError::Misuse`]).
//!
//! # Where it differs from a GPU
//!
//! - **Scheduling**: threads of a block interleave only at barriers, collectives and
//!   [`yield_now`], never between two plain instructions: a spin-wait on another thread of the
//!   same block must call [`yield_now`] each time round (the device library's `nanosleep` does),
//!   and one that nothing releases ends with [`CpuError::SpinTimeout`]. Blocks interleave
//!   freely (OS threads); a cooperative launch's blocks that share a worker take turns when one
//!   spins. A host blocking primitive (a `std::sync::Mutex` guard) held across a barrier blocks
//!   the worker's OS thread, which also runs the thread that would release it: don't.
//! - **Memory model**: host memory is stronger than a GPU's (x86-64 is TSO); code with a data
//!   race a GPU exposes may pass here. Shared memory is per block and starts as [`GARBAGE`].
//!   The race check sees shared memory only, and only accesses reported to
//!   [`shared_access`].
//! - **Floats**: the host's arithmetic: no implicit fused multiply-add unless the code asks for
//!   one, and `libm`'s precision rather than the GPU's intrinsics (`__sinf` and such).
//! - **Limits**: 1024 threads per block, [`SHARED_CAPACITY`] bytes of shared memory per block,
//!   [`MAX_COOPERATIVE_THREADS`] resident threads in a cooperative launch.
//!
//! - **Stack overflow**: a thread that overflows its stack hits the guard page and the process
//!   aborts, as a Rust thread's overflow does: raise [`LaunchSpec::stack_bytes`].
//!
//! # For the device library's host build
//!
//! Each `raw` function's host arm calls one function here (the device library's `host` module
//! and its `on_device!(name => { device } host => { host })` arms). The device library's
//! functions on the way from a kernel to these calls are `#[track_caller]` on the host
//! (`cfg_attr(not(target_arch = "nvptx64"), track_caller)`, so the PTX does not change), so that
//! errors name the kernel's line; a library function that shuffles the words of a value does so
//! in a loop, not a closure, for the same reason. Before each operation the host arm calls
//! [`at_instruction`] with its own address (in builds with debug assertions), which the
//! `#[inline(always)]` functions on the way put into the kernel's code, one copy per call. The engine checks convergence on every call,
//! so the host arms of `check::*` are empty. A `#[kernel]`'s body is the host function
//! `__cohort_kernel_<name>` (with the kernel's visibility, `#[doc(hidden)]`): run it with
//! [`launch`], building its slice parameters from host memory (`crates/cohort/tests/cpu/host_entries.rs`).
//!
//! | `cohort::raw` / device library | `cohort_cpu` |
//! |---|---|
//! | `tid_x`…, `ctaid_x`…, `ntid_x`…, `nctaid_x`…, `laneid`, `lanemask_*` | [`thread_idx`], [`block_idx`], [`block_dim`], [`grid_dim`], [`lane_id`], [`lanemask_lt`] … |
//! | `barrier_sync`, `barrier_sync_count/_and/_or`, `barrier_sync_named(id, n)` | [`sync_threads`], [`sync_threads_count`] …, [`barrier_named`] |
//! | `bar_warp_sync(mask)` | [`sync_warp`] |
//! | `shfl_sync_{idx,up,down,bfly}_b32(mask, v, b, c)` (or whole values in `cg::shfl`) | [`shfl`]`(ShflMode::…, mask, v, b, c)` |
//! | `vote_sync_{all,any,uni,ballot}`, `match_{any,all}_sync_b{32,64}`, `redux_sync_*` | [`vote_all`] …, [`ballot`], [`match_any_u32`] …, [`redux_u32`], [`redux_i32`] |
//! | `activemask` | [`activemask`] |
//! | `nanosleep`, spin-wait loops (`Mutex::lock_spin`, large tiles' barrier) | [`yield_now`] |
//! | `shared!` static's address, `shared::dynamic`, `shared_window_base` | [`shared_static`]`(&STATIC as *const _ as usize, size, align)`, [`dynamic_shared`], [`shared_window`] |
//! | `mbarrier_{init,inval,arrive,arrive_expect_tx,arrive_drop,wait_parity}_shared`, `cp_async_bulk_shared_global` (`cg::AsyncBarrier`) | [`mbarrier_init`], [`mbarrier_inval`], [`mbarrier_arrive`], [`mbarrier_expect_tx`], [`mbarrier_complete_tx`], [`mbarrier_test_wait`] (phases, arrival and transaction counts; misuse named; the race check orders a phase's arrivals before its waits) |
//! | `cg::GridGroup::sync` | [`grid_sync`] |
//! | `cg::ThreadBlock::barrier_arrive` / `barrier_wait`, `cg::GridGroup::barrier_arrive` / `barrier_wait` (split-phase barriers) | [`split_pending`], [`set_split_pending`], [`block_split_wait`], [`grid_split_arrive`], [`grid_split_wait`] |
//! | `PanicRecord`, `check::fail_check` | [`CpuError::Panic`], [`CpuError::WarpDivergence`], [`CpuError::BarrierMismatch`] … |
//! | `#[kernel]` host launcher on the CPU device | [`launch_typed`] with a [`LaunchSpec`] ([`LaunchSpec::fast_path`] when the kernel reaches no collective) |
//! | `launch::ParamBuffer` (device-side launches), `check_global` | [`DeviceLaunch`] into the running grid's queue (run by [`launch_typed`] when the grid completes; the runtime opens the tree with [`with_launch_budget`]), [`is_global`] |
//! | `constant!` / `global!` addresses | [`module_var`] in the launch's [`VarTable`] ([`with_module_vars`] on the host) |
//!
//! # Speed
//!
//! `cargo run --release -p cohort-cpu --example cpu_bench` on a 2-core VM (best of 5; ranges
//! are over runs while other builds shared the machine):
//!
//! | workload | CPU engine |
//! |---|---|
//! | SAXPY 2^26 `f32`, fast path, [`launch_typed`] | 62–65 ms (1.0–1.1 G elements/s): 0.24–0.25× rayon's vectorized loop (15–16 ms) |
//! | same through [`launch`] (`&dyn Fn`, one indirect call per thread) | 80–90 ms |
//! | block reduce, 2^20 threads, 256 per block, 8 barriers | 2.7–3.7 M threads/s |
//! | warp-shuffle scan, 2^20 threads, 5 `shfl_up` | 2.8–5.8 M threads/s |
//! | one `sync_threads` of 256 threads | 7–14 µs per block (27–55 ns per arriving thread) |
//! | one full-warp shuffle | 30–63 ns per lane |
//! | start and exit of a coroutine thread (stacks pooled across launches) | 28–66 ns |
//!
//! The fast path sets one word of the thread context per thread and the kernel reads its
//! index from it; what remains is scalar code, one CUDA thread per iteration, which a
//! vectorized loop beats by the SIMD width. Closing the gap needs the kernel body compiled as
//! the loop's body with the index as an argument (what `#[kernel]` could emit), not an engine
//! change.
//!
//! # Example
//!
//! ```
//! use cohort_cpu::{launch, LaunchSpec, shfl_down, lane_id};
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! let sum = AtomicU32::new(0);
//! launch(&LaunchSpec::new(4u32, 64u32), &|| {
//!     let mut v = 1u32;
//!     for d in [16, 8, 4, 2, 1] {
//!         v += shfl_down(u32::MAX, v, d, 32);
//!     }
//!     if lane_id() == 0 {
//!         sum.fetch_add(v, Ordering::Relaxed);
//!     }
//! })
//! .unwrap();
//! assert_eq!(sum.into_inner(), 256);
//! ```

mod cluster;
mod ctx;
mod device_launch;
mod engine;
mod error;
mod hook;
mod mbarrier;
mod ops;
mod print;
mod sched;
mod shared;
mod split;
mod tma;
mod vars;

use core::fmt;

pub use cluster::{
    cluster_arrive, cluster_block_idx, cluster_dim, cluster_grid_dim, cluster_idx, cluster_map_shared, cluster_rank,
    cluster_thread_exit, cluster_wait,
};
pub use ctx::{
    at_instruction, block_dim, block_idx, global_rank, grid_dim, in_kernel, is_cooperative, lane_id, lanemask_eq,
    lanemask_ge, lanemask_gt, lanemask_le, lanemask_lt, thread_idx, thread_rank, warp_id,
};
pub use device_launch::{
    DeviceLaunch, Entry, MAX_DEPTH, Refusal, is_global, register_global, unregister_global, with_launch_budget,
};
pub use engine::{MAX_COOPERATIVE_THREADS, launch, launch_typed, max_coresident_blocks};
pub use error::{CpuError, Elsewhere, ThreadAt};
pub use mbarrier::{
    MBARRIER_MAX_COUNT, MBARRIER_MAX_TX, mbarrier_arrive, mbarrier_complete_tx, mbarrier_expect_tx, mbarrier_init,
    mbarrier_inval, mbarrier_test_wait,
};
pub use ops::{
    activemask, ballot, barrier_named, grid_sync, match_all_u32, match_all_u64, match_any_u32, match_any_u64,
    redux_i32, redux_u32, shfl, shfl_c, shfl_down, shfl_idx, shfl_up, shfl_xor, sync_threads, sync_threads_and,
    sync_threads_count, sync_threads_or, sync_warp, vote_all, vote_any, vote_uni, warp_gather, yield_now,
};
pub use print::{FLUSH_BYTES, device_print, emit, stdout_gate};
pub use sched::{ReduxOp, ShflMode};
pub use shared::{
    GARBAGE, SHARED_CAPACITY, check_in_shared_window, dynamic_shared, shared_access, shared_static, shared_window,
};
pub use split::{
    SPLIT_BLOCK, SPLIT_GRID, block_split_wait, grid_split_arrive, grid_split_wait, set_split_pending, split_pending,
};
pub use tma::{TMA_DESC_MAGIC, TMA_MAX_RANK, TensorMapDesc, swizzled_offset, tensor_load, tensor_store};
pub use vars::{VarTable, module_var, with_module_vars};

/// A three-dimensional extent or index (CUDA's `dim3`), x fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

impl Dim3 {
    /// `(1, 1, 1)`.
    pub const ONE: Self = Self::new(1, 1, 1);

    /// `(x, y, z)`.
    #[must_use]
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }

    /// `x * y * z`.
    #[must_use]
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{},{})", self.x, self.y, self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self::new(x, y, z)
    }
}

/// How a launch runs its threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Each thread a coroutine: barriers and collectives work.
    #[default]
    Threads,
    /// Each block's threads one after another as loop iterations: no barrier or collective
    /// (one ends the launch with [`CpuError::Misuse`]), much less overhead per thread.
    /// Cooperative launches always run as [`Mode::Threads`].
    Loop,
}

/// A launch's shape and options.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchSpec {
    /// `gridDim`.
    pub grid: Dim3,
    /// `blockDim`.
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block.
    pub dynamic_shared_bytes: u32,
    /// A cooperative launch: every block resident at once, [`grid_sync`] allowed.
    pub cooperative: bool,
    /// A cluster launch (a cluster kernel's): the cluster's extent in blocks, which divides the
    /// grid. Clusters of several blocks run with every block resident at once; see
    /// [`cluster_arrive`] for the model.
    pub cluster: Option<Dim3>,
    /// How threads run.
    pub mode: Mode,
    /// `Some(seed)`: run the runnable threads of each round in a random order drawn from `seed`
    /// (and the block's rank) instead of rank order.
    pub random_schedule: Option<u64>,
    /// Check shared-memory accesses reported through [`shared_access`] for races.
    pub race_check: bool,
    /// Worker OS threads (default: one per core; never more than blocks).
    pub workers: Option<usize>,
    /// Stack bytes per CUDA thread.
    pub stack_bytes: usize,
    /// How long a block may move only through spinning threads ([`yield_now`]) before the
    /// launch ends with [`CpuError::SpinTimeout`] (default 10 s).
    pub spin_limit: std::time::Duration,
}

impl LaunchSpec {
    /// A normal launch of `grid` blocks of `block` threads, with the defaults: no dynamic
    /// shared memory, [`Mode::Threads`], rank-order scheduling, no race check, 128 KiB stacks.
    #[must_use]
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self {
            grid: grid.into(),
            block: block.into(),
            dynamic_shared_bytes: 0,
            cooperative: false,
            cluster: None,
            mode: Mode::Threads,
            random_schedule: None,
            race_check: false,
            workers: None,
            stack_bytes: 128 * 1024,
            spin_limit: std::time::Duration::from_secs(10),
        }
    }

    /// With `bytes` of dynamic shared memory per block.
    #[must_use]
    pub fn dynamic_shared(mut self, bytes: u32) -> Self {
        self.dynamic_shared_bytes = bytes;
        self
    }

    /// Cooperative.
    #[must_use]
    pub fn cooperative(mut self) -> Self {
        self.cooperative = true;
        self
    }

    /// A cluster launch in clusters of `dims` blocks.
    #[must_use]
    pub fn cluster(mut self, dims: impl Into<Dim3>) -> Self {
        self.cluster = Some(dims.into());
        self
    }

    /// The fast path ([`Mode::Loop`]): the caller says the kernel reaches no collective.
    #[must_use]
    pub fn fast_path(mut self) -> Self {
        self.mode = Mode::Loop;
        self
    }

    /// A seeded random schedule.
    #[must_use]
    pub fn random_schedule(mut self, seed: u64) -> Self {
        self.random_schedule = Some(seed);
        self
    }

    /// With the shared-memory race check.
    #[must_use]
    pub fn race_check(mut self) -> Self {
        self.race_check = true;
        self
    }

    /// On `n` worker threads.
    #[must_use]
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }

    /// With a spin limit of `limit` (see [`LaunchSpec::spin_limit`]).
    #[must_use]
    pub fn spin_limit(mut self, limit: std::time::Duration) -> Self {
        self.spin_limit = limit;
        self
    }

    /// With `bytes` of stack per CUDA thread.
    #[must_use]
    pub fn stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes;
        self
    }
}

//! # Cohort device library
//!
//! Everything a Rust kernel calls: CUDA's device headers (indices, barriers, warp intrinsics,
//! atomics, `printf`) and the whole of Cooperative Groups, for rustc's `nvptx64-nvidia-cuda`
//! target. Kernels are ordinary Rust functions marked [`#[kernel]`](kernel); the host side of
//! Cohort (`cohort-runtime`) launches them with typed arguments.
//!
//! ```
//! use cohort::prelude::*;
//!
//! /// out[i] = a[i] + b[i]
//! #[kernel]
//! pub fn vector_add(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
//!     let i = thread::index_1d();
//!     if let Some(o) = out.get_mut(&i) {
//!         *o = a[*i] + b[*i];
//!     }
//! }
//! ```
//!
//! ## Concepts: CUDA C++ → Cohort
//!
//! | CUDA C++ | Cohort | module |
//! |---|---|---|
//! | `__global__ void k(...)` | `#[kernel] fn k(...)` | [`kernel`] |
//! | `threadIdx`, `blockIdx`, `blockDim`, `gridDim`, `warpSize` | [`thread::thread_idx`], … [`thread::WARP_SIZE`] | [`thread`] |
//! | `__syncthreads()`, `__syncwarp()`, `__threadfence()` | [`sync::sync_threads`], [`sync::sync_warp`], [`sync::fence_device`] | [`sync`] |
//! | `atomicAdd`, `atomicCAS`, … `cuda::atomic_ref` | [`atomic::Atomic`] and aliases | [`atomic`] |
//! | a spin lock on `atomicCAS` / `atomicExch` | [`mutex::Mutex`] | [`mutex`] |
//! | `printf` | [`printf!`] | [`print`] |
//! | `T* out` written at `out[i]` | [`DisjointSlice<T>`](slice::DisjointSlice) | [`slice`](mod@slice) |
//! | `uint4`, `float4`, … | [`vec::u32x4`], [`vec::f32x4`], … | [`vec`] |
//! | `cooperative_groups::*` | [`cg`] | [`cg`] |
//! | `__constant__`, `__device__` variables; `cudaMemcpyToSymbol` | [`constant!`], [`global!`](macro@global) | [`global`](mod@global) |
//! | `__shared__`, `extern __shared__` | [`shared!`], [`shared::dynamic`] | [`shared`](mod@shared) |
//! | a block shape fixed at compile time (`__launch_bounds__`, `blockDim` constants) | [`shape::BlockShape`] (a parameter the launcher checks) | [`shape`] |
//! | `out[row * cols + col]`, tiles of a matrix output | [`matrix::DisjointMatrix`], [`matrix::Matrix`] | [`matrix`] |
//! | `fmaf`, nvcc's `-fmad=true`, `__sinf`, `__expf`, … | [`fp::fma`], `#[kernel(contract)]`, [`fp::fast`] | [`fp`] |
//! | `child<<<grid, block, smem, stream>>>(args)` in device code (dynamic parallelism) | `child::launch_from_device(&config, stream, args)` | [`launch`] |
//! | `__nv_bfloat16`, `__half`, `mma.sync`, `ldmatrix`, `nvcuda::wmma` | [`mma::bf16`], [`mma::f16`], [`mma::mma_sync`], [`mma::ldmatrix_x4`], [`mma::wmma`] | [`mma`] |
//! | `CUtensorMap`, `cp.async.bulk.tensor` (TMA) loads and stores | [`tma::TensorMap`], [`tma::TensorMapMut`], [`cg::AsyncBarrier::tensor_load`] | [`tma`] |
//! | inline PTX | [`raw`] | [`raw`] |
//!
//! ## Tiers
//!
//! The modules form tiers: a module imports (`crate::…`) only from its own tier and the tiers
//! below it, and no modules import each other in a cycle — nor do the files of a folder module
//! (`cg/`, `cg/reduce/`, `matrix/`, `raw/`). Inline PTX (`asm!`) and NVVM intrinsics live in
//! [`raw`] alone. `crates/cohort/tests/architecture/` reads this table and fails on inline PTX
//! outside `src/raw/`, on an upward import, on a module missing from the table, and on an import
//! cycle of modules or of files (documentation links may point anywhere); `cargo test -p cohort
//! --test architecture import_cycles -- --nocapture` prints the cycles.
//!
//! | tier | modules | what | unsafe? |
//! |---|---|---|---|
//! | 0 | `host` | what device functions do on the host: the CPU device's glue (`on_device!`) | — |
//! | 1 | [`raw`] | one function per PTX instruction or special register; [`Scope`](raw::Scope), [`SpaceKind`](raw::SpaceKind) | mostly `unsafe` (convergence contracts, addresses) |
//! | 2 | [`thread`], [`fp`], [`vec`], [`shape`], [`print`], `copy`, `unroll` | one thread's view: indices and the [`ThreadIndex`](thread::ThreadIndex)es it owns, arithmetic, values that cross between host and device, `printf` | safe |
//! | 3 | [`atomic`], [`shared`](mod@shared), [`global`](mod@global) | memory spaces: atomics with a [`Scope`](sync::Scope) and an [`Ordering`](atomic::Ordering), shared memory, module variables | safe |
//! | 4 | [`panic`](mod@panic), [`check`] | what a failing kernel reports: the panic record, checked mode's collective checks | safe |
//! | 5 | [`sync`], [`mutex`] | barriers, fences, locks | safe |
//! | 6 | [`slice`](mod@slice), [`matrix`] | outputs that cannot alias: disjoint and append slices, matrices | safe |
//! | 7 | [`cg`] | cooperative groups: tiles, blocks, grids, multi-grids, their collectives, async copies, grid vectors | safe |
//! | 7 | [`mma`] | tensor cores: `mma.sync` on typed fragments, `ldmatrix` from shared tiles, BF16/F16, the WMMA layer | safe |
//! | 7 | [`tma`] | the Tensor Memory Accelerator: tensor maps as parameters, tile loads completing on an asynchronous barrier, stores of the boxes a block owns | safe |
//! | 7 | [`block`] | CUB's `Block*` layer: tiles of several items per thread, loads, stores, exchanges, reduce and scan over items | safe |
//! | 8 | [`launch`], `abi` | the kernel interface: parameters as the host passes them, typed device-side launches | safe |
//! | 8 | [`wgmma`] | Hopper's warpgroup MMA (sm_90a): swizzled operand tiles, accumulators owned while MMAs run, the warp-specialized TMA pipeline | safe |
//! | 9 | [`algorithms`] | the device-wide algorithms' kernel bodies (CUB's `Device*` agents): reduce, single-pass scan with decoupled look-back | safe |
//!
//! ## On the CPU device
//!
//! On the host target this crate builds too (for rust-analyzer, clippy, rustdoc and the host
//! half of `#[kernel]`), and there its device functions call the CPU device engine
//! (`cohort-cpu`), so that a kernel body runs on the CPU with its GPU meaning: `#[kernel] fn
//! k(..)` also emits the body as a host function `__cohort_kernel_k(..)` (with the kernel's
//! visibility, `#[doc(hidden)]`), which `cohort_cpu::launch` runs once per CUDA thread:
//!
//! | on the CPU device | how |
//! |---|---|
//! | indices and dims ([`thread`], [`raw`]'s special registers), lane masks | the engine's per-thread context |
//! | block barriers, `_count/_and/_or`, named barriers, [`cg::LargeTile`] | the engine's barriers (a deadlock is an `Err` naming both sites) |
//! | shuffles, votes, ballot, match, redux, `activemask`, `__syncwarp`, every [`cg`] tile and coalesced group | the engine's warp collectives, over the lanes that really take part (divergence is an `Err` with the site and lanes) |
//! | [`cg::GridGroup`] sync, [`GridVec`](cg::GridVec) phases | the engine's grid sync (cooperative launches) |
//! | [`shared!`] statics, [`shared::dynamic`], `memcpy_async` | the block's shared window (a `shared!` static keyed by its address); `memcpy_async` copies at once |
//! | [`cg::AsyncBarrier`] (`mbarrier`), its `memcpy_async` and bulk copies | the engine's mbarrier model (phases, arrival and transaction counts, misuse named); copies land when issued |
//! | [`atomic`] (every type, space, scope, ordering) | host atomics, `SeqCst` (float adds as CAS loops) |
//! | fences, [`mutex::Mutex`] | `SeqCst` fences; spinning yields to the block's other threads |
//! | `nanosleep`, `clock`, `clock64`, `globaltimer` | a yield; host clocks |
//! | [`printf!`] | the C library's formatting, one write to stdout per call |
//! | a panic, `trap` | the launch's `Err`: file, line, block, thread |
//! | device-side launches | [`launch::LaunchError::NotOnCpuDevice`] |
//!
//! Not on the CPU device yet (they panic, which ends the launch with an `Err` naming them):
//! [`constant!`] and [`global!`](macro@global) variables, `raw::exit`,
//! `raw::total_smem_size`, and cross-grid [`cg::MultiGridGroup`] exchange (a one-grid
//! multi-grid group works). Outside a CPU launch, the device functions that need a CUDA
//! thread panic.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx, asm_experimental_arch, link_llvm_intrinsics))]
// The F16 tensor-core intrinsics take LLVM's `<2 x half>` (`raw::mma`).
#![cfg_attr(target_arch = "nvptx64", feature(repr_simd, f16, simd_ffi))]
#![feature(allow_internal_unstable)]
// `cg::tiled_partition` is a trait's method re-exported as a function (see `cg::TileParent`).
#![feature(import_trait_associated_functions)]
#![allow(internal_features)]
#![cfg_attr(
    not(target_arch = "nvptx64"),
    allow(unused_variables, unreachable_code, unused_imports, unused_macros, dead_code)
)]

// The host build runs kernels on the CPU device (`host`), which needs `std`.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

#[doc(hidden)]
pub mod abi;
pub mod algorithms;
pub mod atomic;
pub mod block;
pub mod cg;
pub mod check;
mod copy;
pub mod fp;
pub mod global;
#[doc(hidden)]
pub mod host;
pub mod launch;
pub mod matrix;
pub mod mma;
pub mod mutex;
pub mod panic;
pub mod print;
pub mod raw;
pub mod shape;
pub mod shared;
pub mod slice;
pub mod sync;
pub mod thread;
pub mod tma;
mod unroll;
pub mod vec;
pub mod wgmma;

/// The CPU engine, for the host entries `#[kernel]` generates (`__cohort_cpu_<entry>`).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub use cohort_cpu as __cpu;
pub use cohort_macros::{DeviceCopy, contract, kernel};
#[doc(hidden)]
pub use copy::__fields_have_no_padding;
pub use copy::{DeviceCopy, assert_no_padding};
pub use unroll::unroll;

/// What kernels usually need: `use cohort::prelude::*;`.
pub mod prelude {
    pub use crate::atomic::{Atomic, AtomicF32, AtomicF64, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};
    pub use crate::cg::{self, Collective, GridGroup, GridVec, MultiGridGroup, MultiGridVec, ThreadGroup, WarpGroup};
    pub use crate::fp::fma;
    pub use crate::matrix::{Blocked, Cyclic, DisjointMatrix, Matrix, Transposed, TransposedTiles, Within};
    pub use crate::mutex::Mutex;
    pub use crate::shape::BlockShape;
    pub use crate::shared::{SharedArray, SharedSlice};
    pub use crate::slice::{AppendSlice, DisjointSlice, PerBlock, PerThread, PerTile, ThreadIndex};
    pub use crate::sync::{Scope, sync_threads};
    pub use crate::thread::{self, Dim3};
    pub use crate::{DeviceCopy, kernel, printf, shared, unroll};
}

//! # cohort-kernels
//!
//! The kernels of the `cohort` application and of the GPU tests, written in Rust. Built twice:
//! for `nvptx64-nvidia-cuda` by `build.rs` (through `cohort-build`) into PTX, and for the host,
//! where every `#[kernel]` becomes a typed launcher and [`PTX`] embeds the modules.
//!
//! | module | what |
//! |---|---|
//! | [`tour`] | `cohort tour`: vector add, SAXPY (f32, f64), grid-stride atomic sum, printf, one kernel per parameter kind |
//! | [`checks`] | kernels the GPU tests use to probe the runtime (indices, traps, launch limits) |
//! | [`atomics`] | the atomics-and-mutex workloads: the race, histograms, the mutex counter, dot products |
//! | [`overlap`] | `cohort overlap`, `cohort pipeline`: the overlap article's kernel (chunks on streams) |
//! | [`memory`] | `cohort managed` (the Cooperative Groups blog's managed-memory sum), `cohort bench alloc`, `cohort bench pdl` |
//! | [`obvious`] | the classic kernels written the obvious way (plain slice and shared-array indexing), beside C++ twins |
//! | [`multi`] | `cohort multi-grid`, `cohort bench multi-grid`: the multi-grid Jacobi solver and barrier-latency kernel |
//! | [`gemm`] | `cohort bench gemm`: the Ampere-style tensor-core GEMM (`mma.sync`, `ldmatrix`, a 4-stage `cp.async` pipeline), BF16 and F16 |
//! | [`gemm_hopper`] | `cohort bench gemm`: the Hopper GEMM (TMA, `wgmma` m64n256k16, a warp-specialized 4-stage ring; `sm_90a`), BF16 and F16 |
//! | [`clusters`] | `cohort bench clusters`: the distributed-shared-memory histogram, a cluster reduction, a stencil with its halo from neighbour blocks |
//! | [`bench`](mod@bench) | `cohort bench`: the Rust halves of the side-by-side benchmarks |

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
cohort_runtime::include_ptx!();

pub mod atomics;
pub mod bench;
pub mod checks;
pub mod classic;
pub mod clusters;
pub mod gemm;
pub mod gemm_hopper;
pub mod memory;
pub mod multi;
pub mod obvious;
pub mod overlap;
pub mod tour;

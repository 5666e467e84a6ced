//! # cohort-test-kernels
//!
//! Kernels the GPU tests in `tests/gpu` run, one module per device-library facility. Test
//! kernels may take raw output pointers (`unsafe fn`) to write many results per thread.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
cohort_runtime::include_ptx!();

pub mod algorithms;
pub mod async_barrier;
pub mod atomic_ops;
pub mod cg_collectives;
pub mod cg_examples;
pub mod cg_groups;
pub mod check;
pub mod cluster;
pub mod globals;
pub mod hostile;
pub mod invoke;
pub mod kinds;
pub mod matrix_u32;
pub mod memory;
pub mod mma;
pub mod multi_grid;
pub mod safety;
pub mod shapes;
pub mod shared_mem;
pub mod split;
pub mod streams;
pub mod tma;
pub mod wgmma;

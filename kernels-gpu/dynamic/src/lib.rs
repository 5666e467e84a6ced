//! # cohort-dynamic-kernels
//!
//! Kernels that launch kernels (dynamic parallelism, CDP2; see `cohort::launch`): the nested
//! hello world, the recursive reductions of the CUDA dynamic-parallelism article, and launch
//! stress kernels. Their module calls the device runtime, so it is linked with `libcudadevrt`
//! at load; they live in a crate of their own so that the other kernels keep the plain load.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
cohort_runtime::include_ptx!();

pub mod bench;
pub mod hello;
pub mod reduce;
pub mod stress;

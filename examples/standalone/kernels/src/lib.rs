//! My kernels: compiled for the GPU by `build.rs`, and for the host, where every `#[kernel]`
//! becomes a typed launcher and `PTX` holds the compiled modules.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
cohort_runtime::include_ptx!(); // `pub static PTX`: every module, embedded

use cohort::prelude::*;

/// out[i] = a[i] + b[i]
#[kernel]
pub fn vector_add(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index_1d(); // this thread's own index
    if let Some(o) = out.get_mut(&i) {
        // only the element it owns
        *o = a[*i] + b[*i];
    }
}

// The numbered examples' kernels (`cargo run --example 02_transpose`, …).
pub mod atomics;
pub mod grid;
pub mod matrix;
pub mod reduce;
pub mod streams;
pub mod warp;

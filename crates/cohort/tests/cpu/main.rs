//! `#[kernel]`s of the device library executed on the CPU device (issue 12): the kernel bodies
//! (`__cohort_kernel_<name>`, what `#[kernel]` emits on the host) run through
//! `cohort_cpu::launch`, and every element is checked against a CPU reference. The last
//! section runs the kernels' host entries (`__cohort_cpu_<entry>`, what the runtime's CPU
//! device launches) with parameter arrays built as the generated launchers build them.
//!
//! The kernels are the tour's and the test kernels' (copied here: `cohort-kernels` depends on
//! this crate, so it can't be a dev-dependency), plus the failure cases: a panic, a divergent
//! collective and a deadlock, each an `Err` naming where. One module per scope or facility (`tour`,
//! `block`, `warp`, `grid`, `atomics`, `printf`, `errors`, `library`, `host_entries`); the
//! helpers below serve them all.

#![allow(clippy::needless_range_loop)]

mod atomics;
mod block;
mod errors;
mod grid;
mod host_entries;
mod library;
mod printf;
mod tour;
mod warp;

use std::sync::atomic::AtomicU32 as StdAtomicU32;
use std::sync::atomic::Ordering::Relaxed as StdRelaxed;

use cohort::prelude::*;
use cohort_cpu::{CpuError, LaunchSpec, launch, launch_typed};

/// A buffer the kernel's threads write through per-thread views (`DisjointSlice`, `GridVec`),
/// as the runtime passes a device buffer: borrowed exclusively for the launch (`'a`), so
/// nothing else touches it meanwhile.
struct Ptr<'a, T>(*mut T, usize, core::marker::PhantomData<&'a mut [T]>);
// SAFETY: the pointer is only turned into `DisjointSlice`/`GridVec` views, whose element
// ownership rules keep the threads' writes disjoint.
unsafe impl<T: Send> Sync for Ptr<'_, T> {}

impl<'a, T> Ptr<'a, T> {
    fn of(v: &'a mut [T]) -> Self {
        Self(v.as_mut_ptr(), v.len(), core::marker::PhantomData)
    }
    /// The pointer (a method, so that closures capture the whole `Ptr`, which is `Sync`).
    fn get(&self) -> *mut T {
        self.0
    }
    /// A thread's view of the whole buffer.
    fn disjoint<K: cohort::slice::IndexKind>(&self) -> DisjointSlice<'a, T, K> {
        // SAFETY: `self.0` points at `self.1` elements borrowed exclusively for `'a`; every
        // thread's view hands it only the elements of its own index (the kernel's
        // `DisjointSlice` contract, as for a device buffer).
        unsafe { DisjointSlice::from_raw_parts(self.0, self.1) }
    }
}

/// Global-memory atomics (on the CPU device, host memory is the device's global memory).
fn atomics<T: Copy, S: cohort::atomic::Space>(init: &[T]) -> Vec<cohort::atomic::Atomic<T, S>> {
    // SAFETY: on the CPU device every atomic operation is a host atomic on the value's own
    // memory (a `Vec`'s element here), whatever its space.
    init.iter().map(|&v| unsafe { cohort::atomic::Atomic::new(v) }).collect()
}

fn data(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000).collect()
}

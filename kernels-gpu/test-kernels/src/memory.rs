//! Kernels of the memory tests (`tests/gpu/pools.rs`, `managed.rs`, `pdl.rs`): programmatic
//! dependent launches (`#[kernel(dependent)]`), and patterns that show a buffer reused, read or
//! written out of order.

use cohort::prelude::*;

/// `out[i] = a[i] * 3 + k` (wrapping): one step of a chain, launched programmatically.
#[kernel(dependent)]
pub fn pdl_step(a: &[u32], mut out: DisjointSlice<u32>, k: u32) {
    let i = thread::index_1d();
    if let Some(&v) = a.get(*i) {
        out.set(&i, v.wrapping_mul(3).wrapping_add(k));
    }
}

/// [`pdl_step`] without `dependent`: it has no `launch_programmatic`, and the runtime refuses
/// to launch it programmatically.
#[kernel]
pub fn pdl_step_plain(a: &[u32], mut out: DisjointSlice<u32>, k: u32) {
    let i = thread::index_1d();
    if let Some(&v) = a.get(*i) {
        out.set(&i, v.wrapping_mul(3).wrapping_add(k));
    }
}

/// The worst predecessor of a programmatic launch: lets its dependent be scheduled at once
/// (`launch_dependents` first thing), then waits about `ns` nanoseconds, then writes
/// `base + i`. A dependent that read before this grid completed would see the old contents.
#[kernel(dependent)]
pub fn pdl_slow_produce(mut out: DisjointSlice<u32>, base: u32, ns: u64) {
    cohort::launch::launch_dependents();
    let start = cohort::raw::globaltimer();
    while cohort::raw::globaltimer().wrapping_sub(start) < ns {
        cohort::raw::nanosleep(1000);
    }
    let i = thread::index_1d();
    out.set(&i, base.wrapping_add(*i as u32));
}

/// `out[i] = seed ^ (i * 0x9e3779b9)`: a pattern that differs for every seed and index (what
/// a buffer holds is then proof of which writer wrote it).
#[kernel]
pub fn pattern(mut out: DisjointSlice<u32>, seed: u32) {
    let i = thread::index_1d();
    out.set(&i, seed ^ (*i as u32).wrapping_mul(0x9e37_79b9));
}

//! Example 08: a kernel that launches a kernel (dynamic parallelism).

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
cohort_runtime::include_ptx!();

use cohort::launch::{LaunchConfig, TailLaunch};
use cohort::prelude::*;

/// Finds the largest element of `data` (into `max[0]`), then launches [`scale_to_max`] on the
/// whole array from the device. The child is a *tail launch*: it starts only when every thread of
/// this grid has finished, so it sees the final maximum. `status[0]` becomes 1 if the launch was
/// accepted, 2 if the device runtime refused it.
#[kernel]
pub fn max_then_scale(data: &[u32], max: &[AtomicU32], out: DisjointSlice<u32>, status: &[AtomicU32]) {
    let i = thread::index_1d();
    if let Some(&v) = data.get(*i) {
        max[0].fetch_max(v, Ordering::Relaxed);
    }
    if *i == 0 {
        // The child's grid is chosen here, on the device; `out` moves into the launch.
        let cfg = LaunchConfig::new((data.len() as u32).div_ceil(256), 256);
        let launched = scale_to_max::launch_from_device(&cfg, TailLaunch, data, max, out);
        status[0].store(if launched.is_ok() { 1 } else { 2 }, Ordering::Relaxed);
    }
}

/// `out[i] = data[i] * 1000 / max[0]` (the child).
#[kernel]
pub fn scale_to_max(data: &[u32], max: &[AtomicU32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let m = max[0].load(Ordering::Relaxed).max(1);
    if let (Some(&v), Some(o)) = (data.get(*i), out.get_mut(&i)) {
        *o = (v as u64 * 1000 / m as u64) as u32;
    }
}

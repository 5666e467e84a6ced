//! The cost of a device-side launch: one thread launching serially, every thread launching
//! once, into the fire-and-forget stream or as tail launches (`cohort bench dynamic`, beside
//! the CUDA C++ twin `host/benches/dynamic_twin.cu`).

use cohort::launch::{FireAndForget, LaunchConfig, TailLaunch};
use cohort::prelude::*;

/// An empty child.
#[kernel]
pub fn noop() {}

/// Thread 0 of the grid launches `n` one-warp [`noop`] children, one after another, into the
/// fire-and-forget stream (`tail == 0`) or as tail launches; `refused[0]` counts refusals.
#[kernel]
pub fn launch_serial(refused: &[AtomicU32], n: u32, tail: u32) {
    if *thread::index_1d() == 0 {
        let cfg = LaunchConfig::new(1, 32);
        for _ in 0..n {
            let r = if tail == 0 {
                noop::launch_from_device(&cfg, FireAndForget)
            } else {
                noop::launch_from_device(&cfg, TailLaunch)
            };
            if r.is_err() {
                refused[0].fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Every thread launches one one-warp [`noop`] child, fire-and-forget (`tail == 0`) or as a
/// tail launch; `refused[0]` counts refusals.
#[kernel]
pub fn launch_each(refused: &[AtomicU32], tail: u32) {
    let cfg = LaunchConfig::new(1, 32);
    let r = if tail == 0 {
        noop::launch_from_device(&cfg, FireAndForget)
    } else {
        noop::launch_from_device(&cfg, TailLaunch)
    };
    if r.is_err() {
        refused[0].fetch_add(1, Ordering::Relaxed);
    }
}

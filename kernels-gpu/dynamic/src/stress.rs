//! Many device-side launches at once, deep recursion, and the typed (safe) parameter kinds.

use cohort::launch::{BlockStream, FireAndForget, LaunchConfig, TailLaunch};
use cohort::prelude::*;

/// Every thread adds 1 to `counts[0]`.
#[kernel]
pub fn bump(counts: &[AtomicU32]) {
    counts[0].fetch_add(1, Ordering::Relaxed);
}

/// Every thread launches `per_thread` one-block children of `child_threads` threads that each
/// add 1 to `counts[0]`, into the fire-and-forget stream (`mode` 0), the block's stream (1) or as
/// tail launches (2); accepted launches add 1 to `counts[1]`, refused ones to `counts[2]`.
#[kernel]
pub fn launch_many(counts: &[AtomicU32], per_thread: u32, child_threads: u32, mode: u32) {
    let cfg = LaunchConfig::new(1, child_threads);
    for _ in 0..per_thread {
        let r = match mode {
            0 => bump::launch_from_device(&cfg, FireAndForget, counts),
            1 => bump::launch_from_device(&cfg, BlockStream, counts),
            _ => bump::launch_from_device(&cfg, TailLaunch, counts),
        };
        let slot = if r.is_ok() { 1 } else { 2 };
        counts[slot].fetch_add(1, Ordering::Relaxed);
    }
}

/// Recursion to `levels` levels: every block prints a line and thread 0 of every block launches
/// the same grid one level deeper (fire-and-forget); `counts[0]` counts the blocks that ran,
/// `counts[2]` the refused launches.
#[kernel]
pub fn recurse(counts: &[AtomicU32], level: u32, levels: u32) {
    if thread::thread_idx_x() == 0 {
        counts[0].fetch_add(1, Ordering::Relaxed);
        printf!("level %u block %u\n", level, thread::block_idx_x());
        if level + 1 < levels {
            let cfg = LaunchConfig::new(thread::grid_dim_x(), thread::block_dim_x());
            if recurse::launch_from_device(&cfg, FireAndForget, counts, level + 1, levels).is_err() {
                counts[2].fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// `out[i] = data[i] * k` (a child of [`scale_then_tail`]).
#[kernel]
pub fn scale(data: &[u32], mut out: DisjointSlice<u32>, k: u32) {
    let i = thread::index_1d();
    if let Some(&v) = data.get(*i) {
        out.set(&i, v * k);
    }
}

/// Writes `out[i] = data[i] + 1`, then thread 0 of block 0 hands `out` over to a tail launch of
/// [`scale`] reading `data`, which overwrites it with `data[i] * k` after this grid completes
/// (a safe kernel: the `DisjointSlice` moves into the tail launch). `status[0]` gets 1 if the
/// launch was accepted, 2 if refused.
#[kernel]
pub fn scale_then_tail(data: &[u32], mut out: DisjointSlice<u32>, k: u32, status: &[AtomicU32]) {
    let i = thread::index_1d();
    if let Some(&v) = data.get(*i) {
        out.set(&i, v + 1);
    }
    if *i == 0 {
        let cfg = LaunchConfig::new(thread::grid_dim_x(), thread::block_dim_x());
        let r = scale::launch_from_device(&cfg, TailLaunch, data, out, k);
        status[0].store(if r.is_ok() { 1 } else { 2 }, Ordering::Relaxed);
    }
}

/// Each thread of the grid does `counts[0] += 1` non-atomically in a tail child of one
/// thread: if a grid's tail launches ran at the same time, increments would be lost.
#[kernel]
pub fn tails_in_order(counts: &[AtomicU32]) {
    if tail_increment::launch_from_device(&LaunchConfig::new(1, 1), TailLaunch, counts).is_err() {
        counts[2].fetch_add(1, Ordering::Relaxed);
    }
}

/// `counts[0] += 1` as a plain load and store (of atomics, relaxed: a lost update, never UB).
#[kernel]
pub fn tail_increment(counts: &[AtomicU32]) {
    let v = counts[0].load(Ordering::Relaxed);
    counts[0].store(v + 1, Ordering::Relaxed);
    counts[1].fetch_add(1, Ordering::Relaxed);
}

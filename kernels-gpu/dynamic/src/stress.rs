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

/// Thread 0 of block 0 launches tail children `record(log, 0)`, a fire-and-forget
/// `record(log, 100)`, then tails `record(log, 1..n)`: the fire-and-forget child completes
/// before any tail launch, and the tails run one after another in launch order, so `log`
/// reads `[n + 1, 100, 0, 1, …, n - 1]` (`log[0]` counts the records). `log[n + 2]` counts
/// refused launches.
#[kernel]
pub fn tail_order(log: &[AtomicU32], n: u32) {
    if thread::global_id() != 0 {
        return;
    }
    let one = LaunchConfig::new(1, 1);
    let mut refused = 0;
    for k in 0..n {
        if record::launch_from_device(&one, TailLaunch, log, k).is_err() {
            refused += 1;
        }
        if k == 0 && record::launch_from_device(&one, FireAndForget, log, 100).is_err() {
            refused += 1;
        }
    }
    log[n as usize + 2].fetch_add(refused, Ordering::Relaxed);
}

/// Appends `value` to `log` (its count in `log[0]`, the values from `log[1]`).
#[kernel]
pub fn record(log: &[AtomicU32], value: u32) {
    let at = log[0].fetch_add(1, Ordering::Relaxed) as usize + 1;
    if let Some(slot) = log.get(at) {
        slot.store(value, Ordering::Relaxed);
    }
}

/// A recursion that never stops by itself: the one thread of each grid records its depth
/// (`depths[0]`: the deepest, `depths[1]`: grids that ran) and launches itself one level
/// deeper (fire-and-forget: a child nested in its parent), until a launch is refused:
/// `depths[2]` gets the refusal's `LaunchError::code`.
#[kernel]
pub fn dive(depths: &[AtomicU32], depth: u32) {
    depths[0].fetch_max(depth, Ordering::Relaxed);
    depths[1].fetch_add(1, Ordering::Relaxed);
    if let Err(e) = dive::launch_from_device(&LaunchConfig::new(1, 1), FireAndForget, depths, depth + 1) {
        depths[2].store(e.code(), Ordering::Relaxed);
    }
}

/// A runaway launch tree: the one thread of each grid launches two copies of itself
/// (fire-and-forget) without end; `counts[0]` counts grids that ran, `counts[1]` accepted
/// launches, `counts[2]` launches refused as `BudgetSpent`, `counts[3]` refused otherwise (the
/// nesting limit).
#[kernel]
pub fn fan(counts: &[AtomicU32]) {
    counts[0].fetch_add(1, Ordering::Relaxed);
    for _ in 0..2 {
        let slot = match fan::launch_from_device(&LaunchConfig::new(1, 1), FireAndForget, counts) {
            Ok(()) => 1,
            Err(cohort::launch::LaunchError::BudgetSpent) => 2,
            Err(_) => 3,
        };
        counts[slot].fetch_add(1, Ordering::Relaxed);
    }
}

/// Thread 0 of each block launches [`panics_at`] (a grid of `threads` threads whose thread
/// `bad` panics) as a tail launch; every thread adds 1 to `counts[0]`. A CPU-device test: on a
/// GPU the child's panic traps and ends the context.
#[kernel]
pub fn launch_panicking(counts: &[AtomicU32], threads: u32, bad: u32) {
    counts[0].fetch_add(1, Ordering::Relaxed);
    if thread::thread_idx_x() == 0
        && panics_at::launch_from_device(&LaunchConfig::new(1, threads), TailLaunch, counts, bad).is_err()
    {
        counts[2].fetch_add(1, Ordering::Relaxed);
    }
}

/// Thread `bad` panics; the others add 1 to `counts[1]`.
#[kernel]
pub fn panics_at(counts: &[AtomicU32], bad: u32) {
    assert!(thread::thread_idx_x() != bad, "child thread {bad} gives up");
    counts[1].fetch_add(1, Ordering::Relaxed);
}

/// Thread 0 hands a slice of its own stack (local memory) to a tail child; `status[0]` gets
/// the launch's `LaunchError::code` (0 if it was accepted, which it must not be).
#[kernel]
pub fn pass_local(status: &[AtomicU32]) {
    if thread::global_id() == 0 {
        let local = [thread::block_idx_x(); 4];
        let r = sum_into::launch_from_device(&LaunchConfig::new(1, 1), TailLaunch, &local, status);
        status[0].store(r.err().map_or(0, |e| e.code()), Ordering::Relaxed);
    }
}

/// `status[1] = data.iter().sum()`.
#[kernel]
pub fn sum_into(data: &[u32], status: &[AtomicU32]) {
    status[1].store(data.iter().sum(), Ordering::Relaxed);
}

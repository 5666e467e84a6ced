//! Kernels of the split-phase barrier tests (`tests/gpu/split.rs`): the block's and the grid's
//! `barrier_arrive` → token → `wait`, used over several phases with independent work between
//! arrival and wait, and their misuse, each of which must end the launch with an `Err`.

// Identical branches are the point of several kernels: the same call at two call sites.
#![allow(clippy::if_same_then_else)]

use cohort::atomic::{AtomicU32, Ordering};
use cohort::prelude::*;
use cohort::shared;

shared! {
    /// Two rounds' values of every thread of the block (double-buffered by round).
    static CELLS: [u32; 2048];
}

/// The value thread `i` publishes in round `r` (the tests' reference computes the same).
#[inline(always)]
fn value(x: u32, r: u32) -> u32 {
    x.wrapping_mul(r + 1) ^ r.wrapping_mul(0x9e37_79b9)
}

/// `rounds` phases of the block's split barrier: each thread stores its round value into
/// `CELLS`, arrives (at one of two calls: threads whose rank is a multiple of 3 at the first),
/// folds the value into a private hash while the others arrive (`own`, the independent work),
/// waits (`token.wait()` in even rounds, `block.barrier_wait(token)` in odd ones), then adds
/// the value of thread `(t + 1 + r) % n` of its block, times `r + 1`. `out[i] = sum ^ own`.
#[kernel]
pub fn block_split_rounds(input: &[u32], rounds: u32, mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let t = thread::thread_rank_in_block() as usize;
    let n = thread::block_size() as usize;
    let i = thread::index_1d();
    let x = input[*i];
    let cells = CELLS.get();
    let (mut sum, mut own) = (0u32, 0u32);
    for r in 0..rounds {
        let buf = (r % 2) as usize * 1024;
        let v = value(x, r);
        cells.store(buf + t, v);
        let token = if t % 3 == 0 { block.barrier_arrive() } else { block.barrier_arrive() };
        own = own.wrapping_mul(31).wrapping_add(v);
        if r % 2 == 0 {
            token.wait();
        } else {
            block.barrier_wait(token);
        }
        let other = cells.load(buf + (t + 1 + r as usize) % n);
        sum = sum.wrapping_add(other.wrapping_mul(r + 1));
    }
    out.set(i, sum ^ own);
}

/// `rounds` phases of the grid's split barrier: each thread stores its round value into
/// `cells[(r % 2) · n + i]` (`n` threads in the grid), arrives, folds the value into `own` while
/// the other blocks arrive, waits (`token.wait()` / `grid.barrier_wait(token)` by round), then
/// adds the value of thread `(i + block_size · (r + 1) + 7) % n` — another block's — times
/// `r + 1`. `out[i] = sum ^ own`.
#[kernel(cooperative)]
pub fn grid_split_rounds(
    grid: GridGroup,
    input: &[u32],
    cells: &[AtomicU32],
    rounds: u32,
    mut out: DisjointSlice<u32>,
) {
    let i = thread::index_1d();
    let n = thread::grid_size() as usize;
    let b = thread::block_size() as usize;
    let x = input[*i];
    let (mut sum, mut own) = (0u32, 0u32);
    for r in 0..rounds {
        let buf = (r % 2) as usize * n;
        let v = value(x, r);
        cells[buf + *i].store(v, Ordering::Relaxed);
        let token = grid.barrier_arrive();
        own = own.wrapping_mul(31).wrapping_add(v);
        if r % 2 == 0 {
            token.wait();
        } else {
            grid.barrier_wait(token);
        }
        let j = (*i + b * (r as usize + 1) + 7) % n;
        sum = sum.wrapping_add(cells[buf + j].load(Ordering::Relaxed).wrapping_mul(r + 1));
    }
    out.set(i, sum ^ own);
}

/// Arrives and waits inside one helper of a user's (no `#[track_caller]`): called from two
/// branches, its inlined copies are two calls that share one source location.
#[inline(always)]
fn split_sync(block: &cg::ThreadBlock) {
    block.barrier_arrive().wait();
}

/// Misuse of the block's split barrier, each an `Err` (checked mode, the CPU device) naming it
/// (modes 1 and 4 on the CPU device only: a GPU runs them correctly, see `cohort::cg::split`):
/// 0, a second arrival after forgetting the first token; 1, `sync_threads()` between arrival
/// and wait; 2, the token dropped without its wait; 3, the token forgotten and the kernel left;
/// 4, a block `reduce` between arrival and wait; 5, warp 0 at `sync_threads()` without an
/// arrival while the others wait (a barrier that counts arrivals would pair them); 6, the token
/// moved into a closure that is dropped uncalled; 7, warps waiting at two inlined copies of
/// one helper (one source location, two calls). Mode 8 is the control: arrival and wait done
/// right, `out[i] = 1`.
#[kernel]
pub fn block_split_misuse(mode: u32, mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let i = thread::index_1d();
    match mode {
        0 => {
            core::mem::forget(block.barrier_arrive());
            block.barrier_arrive().wait();
        }
        1 => {
            let token = block.barrier_arrive();
            sync_threads();
            token.wait();
        }
        2 => drop(block.barrier_arrive()),
        3 => core::mem::forget(block.barrier_arrive()),
        4 => {
            let token = block.barrier_arrive();
            let s = cg::reduce(&block, *i as u32, cg::plus);
            token.wait();
            out.set(i, s);
            return;
        }
        5 => {
            if thread::warp_id() == 0 {
                sync_threads();
            } else {
                block.barrier_arrive().wait();
            }
        }
        6 => {
            let token = block.barrier_arrive();
            let later = move || token.wait();
            drop(later);
        }
        7 => {
            if thread::warp_id() == 0 {
                split_sync(&block);
            } else {
                split_sync(&block);
            }
        }
        _ => {
            let token = block.barrier_arrive();
            token.wait();
        }
    }
    out.set(i, 1);
}

/// Misuse of the grid's split barrier, each an `Err` (checked mode, the CPU device) naming it:
/// 0, a second arrival after forgetting the first token; 1, `grid.sync()` between arrival and
/// wait; 2, the token dropped without its wait; 3, the token forgotten and the kernel left; 4,
/// block 1 arrives at another call than the other blocks. Mode 5 is the control: `out[i] = 1`.
#[kernel(cooperative)]
pub fn grid_split_misuse(grid: GridGroup, mode: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    match mode {
        0 => {
            core::mem::forget(grid.barrier_arrive());
            grid.barrier_arrive().wait();
        }
        1 => {
            let token = grid.barrier_arrive();
            grid.sync();
            token.wait();
        }
        2 => drop(grid.barrier_arrive()),
        3 => core::mem::forget(grid.barrier_arrive()),
        4 => {
            let token = if grid.block_rank() == 1 { grid.barrier_arrive() } else { grid.barrier_arrive() };
            token.wait();
        }
        _ => grid.barrier_arrive().wait(),
    }
    out.set(i, 1);
}

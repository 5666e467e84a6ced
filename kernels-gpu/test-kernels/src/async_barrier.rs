//! Asynchronous barriers (`cg::AsyncBarrier`): phases, `arrive_and_drop`, copies completing on
//! a phase (`memcpy_async`, the bulk copy), and the misuse the run-time checks refuse.

use cohort::cg::{self, ThreadGroup};
use cohort::prelude::*;

cohort::async_barrier! {
    static BAR;
    static OTHER;
}

cohort::shared! {
    static CELLS: [u32; 1024];
    static STAGE: [u32; 1024];
}

/// `rounds` phases of exchange through shared memory: in round `r` thread `t` stores
/// `data[g] * (r + 1) + r` (g: its global index), arrives and waits, adds its right neighbour's
/// value (in the block, cyclically), then the block passes a second phase before the cells are
/// overwritten. `out[g]` = the sum. Two phases per round: parities alternate.
#[kernel]
pub fn barrier_exchange(data: &[u32], rounds: u32, mut out: DisjointSlice<u32>) {
    let tb = cg::this_thread_block();
    let cells = CELLS.get();
    let (t, n) = (tb.thread_rank() as usize, tb.num_threads() as usize);
    let g = thread::index_1d();
    let sum = BAR.scope(&tb, |bar| {
        let mut sum = 0u32;
        for r in 0..rounds {
            cells.store(t, data[*g].wrapping_mul(r + 1).wrapping_add(r));
            let token = bar.arrive();
            token.wait();
            sum = sum.wrapping_add(cells.load((t + 1) % n));
            bar.arrive_and_wait();
        }
        sum
    });
    out.set(&g, sum);
}

/// Threads of odd rank leave the barrier after the first phase (`arrive_and_drop`); the even
/// ones go on for `rounds` phases, each adding the even neighbour's value (`t + 2`, cyclic over
/// the even ranks). `out[g]`: the sum (odd threads: their first-phase neighbour value).
#[kernel]
pub fn barrier_drop(data: &[u32], rounds: u32, mut out: DisjointSlice<u32>) {
    let tb = cg::this_thread_block();
    let cells = CELLS.get();
    let (t, n) = (tb.thread_rank() as usize, tb.num_threads() as usize);
    let g = thread::index_1d();
    let v = data[*g];
    let sum = BAR.scope(&tb, |bar| {
        cells.store(t, v);
        bar.arrive_and_wait();
        let first = cells.load((t + 1) % n);
        if t % 2 == 1 {
            bar.arrive_and_drop();
            return first;
        }
        bar.arrive_and_wait(); // the odd threads' drop completes this phase with them
        let mut sum = first;
        for r in 0..rounds {
            cells.store(t, v.wrapping_add(r));
            bar.arrive_and_wait();
            sum = sum.wrapping_add(cells.load((t + 2) % n));
            bar.arrive_and_wait();
        }
        sum
    });
    out.set(&g, sum);
}

/// Streams block `b`'s part of `data` (`per_block` elements, the last chunk a tail) through
/// `chunk` elements of shared memory with `AsyncBarrier::memcpy_async` (`bulk`: 0) or
/// `bulk_copy` (1), reading each chunk after its phase: `out[k] = 3 * data[k] + 1`.
#[kernel]
pub fn barrier_stream(data: &[u32], per_block: u32, chunk: u32, bulk: u32, mut out: DisjointSlice<u32>) {
    let tb = cg::this_thread_block();
    let (t, n) = (tb.thread_rank() as usize, tb.num_threads() as usize);
    let (per_block, chunk) = (per_block as usize, chunk as usize);
    let base = thread::block_idx_x() as usize * per_block;
    let mut stage = STAGE.get().as_slice().sub(0, chunk);
    BAR.scope(&tb, |bar| {
        let mut index = 0;
        while index < per_block {
            let count = chunk.min(per_block - index);
            let src = &data[base + index..base + index + count];
            let copy = if bulk == 1 { bar.bulk_copy(&mut stage, src) } else { bar.memcpy_async(&mut stage, src) };
            copy.wait();
            let mut j = t;
            while j < count {
                // SAFETY: element base + index + j is this thread's alone (its stripe).
                unsafe { *out.get_unchecked_mut(base + index + j) = 3 * stage.load(j) + 1 };
                j += n;
            }
            bar.arrive_and_wait(); // the stage is refilled next
            index += count;
        }
    });
}

/// The misuse that types cannot see, each an `Err` naming its call: `which` 1, a forgotten
/// token then a second arrival on the same phase; 2, a nested scope of the same barrier; 3,
/// an arrival after `arrive_and_drop`; 4, a bulk copy of a size that is not a multiple of 16
/// bytes; 5, the threads of rank 32 and above return from the kernel before the scope (the
/// barrier would wait for their arrivals forever); 6, a bulk copy into another destination in
/// thread 37 than in the rest (its `Transfer` would borrow a tile the copy does not write, and
/// leave the one it writes free); 7, the same with `memcpy_async` (another source); 8, thread
/// 37 skips the second of two bulk copies and goes to its own `sync_threads()`, whose barrier 0
/// arrivals would pair with the copy's check (a stale published call could match its own); 0,
/// none (the same kernel runs clean). Another barrier's nested scope is fine.
#[kernel]
pub fn barrier_misuse(which: u32, data: &[u32], mut out: DisjointSlice<u32>) {
    let tb = cg::this_thread_block();
    if which == 5 && tb.thread_rank() >= 32 {
        return;
    }
    let mut stage = STAGE.get().as_slice().sub(0, 64);
    let r = BAR.scope(&tb, |bar| {
        let v = OTHER.scope(&tb, |other| {
            other.arrive_and_wait();
            1u32
        });
        match which {
            1 => {
                core::mem::forget(bar.arrive());
                bar.arrive_and_wait();
            }
            2 => BAR.scope(&tb, |inner| inner.arrive_and_wait()),
            3 => {
                bar.arrive_and_drop();
                bar.arrive_and_wait();
            }
            4 => bar.bulk_copy(&mut stage, &data[..3]).wait(),
            6 => {
                let mut mine = if tb.thread_rank() == 37 { STAGE.get().as_slice().sub(64, 64) } else { stage };
                bar.bulk_copy(&mut mine, &data[..8]).wait();
            }
            7 => {
                let src = if tb.thread_rank() == 37 { &data[8..16] } else { &data[..8] };
                bar.memcpy_async(&mut stage, src).wait();
            }
            8 => {
                for round in 0..2u32 {
                    if round == 0 || tb.thread_rank() != 37 {
                        bar.bulk_copy(&mut stage, &data[..8]).wait();
                    }
                    cohort::sync::sync_threads();
                }
                bar.arrive_and_wait();
            }
            _ => bar.arrive_and_wait(),
        }
        v
    });
    let g = thread::index_1d();
    out.set(&g, r + which);
}

//! The Cooperative Groups chapter's examples (Programming Guide, CUDA 11), in Rust, each with
//! an output the host checks.

use cohort::cg::{self, ThreadBlock, ThreadGroup, WarpGroup};
use cohort::prelude::*;
use cohort::shared::SharedArray;

cohort::shared! {
    static SUM_SCRATCH: [i32; 1024];
    static LEADER_VALUE: [u32; 1];
    static TOTAL: [i32; 1];
    static BUFFER: [i32; 2048];
    static BUFFER_USED: [i32; 1];
    static STAGE: [i32; 256];
}

/// The guide's `sum(const thread_block& g, int *x, int val)`: a tree sum through shared
/// memory, taking the block as a parameter.
#[inline(always)]
fn sum(g: &ThreadBlock, x: SharedArray<i32, 1024>, mut val: i32) -> i32 {
    let lane = g.thread_rank() as usize;
    let mut i = g.num_threads() / 2;
    while i > 0 {
        x.store(lane, val);
        g.sync();
        if (lane as u32) < i {
            val += x.load(lane + i as usize);
        }
        g.sync();
        i /= 2;
    }
    val
}

/// Block sums with `sum(&block, …)`: `out[b]` = sum of block `b`'s elements (block size a
/// power of two).
#[kernel]
pub fn example_block_sum(data: &[i32], mut out: DisjointSlice<i32>) {
    let block = cg::this_thread_block();
    let v = data[thread::global_id() as usize];
    let s = sum(&block, SUM_SCRATCH.get(), v);
    if block.thread_rank() == 0 {
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *out.get_unchecked_mut(thread::block_idx_x() as usize) = s };
    }
}

/// A leader loads one value into shared memory; after `block.sync()` everyone uses it:
/// `out[i] = input[block] + thread_rank`.
#[kernel]
pub fn example_leader_load(input: &[u32], mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let x = LEADER_VALUE.get();
    if block.thread_rank() == 0 {
        x.store(0, input[thread::block_idx_x() as usize]);
    }
    block.sync();
    out.set(thread::index_1d(), x.load(0) + block.thread_rank());
}

/// `tiled_partition(block, 4)`; rank 0 of every tile prints its block rank.
#[kernel]
pub fn example_tile4_hello() {
    let block = cg::this_thread_block();
    let tile4 = cg::tiled_partition_dyn(&block, 4);
    if tile4.thread_rank() == 0 {
        printf!("Hello from tile4 rank 0: %u\n", block.thread_rank());
    }
}

/// The warp-synchronous pattern: only the first warp (`meta_group_rank() == 0`) works, with
/// warp-level instructions: `out[lane]` = lane-wise prefix sum of `data`, the others write
/// nothing.
#[kernel]
pub fn example_first_warp(data: &[u32], mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let tile = cg::tiled_partition::<32>(&block);
    if tile.meta_group_rank() == 0 {
        let v = data[tile.thread_rank() as usize];
        let s = cg::inclusive_sum(&tile, v);
        tile.sync();
        out.set(thread::index_1d(), s);
    }
}

/// Warp-aggregated atomic increment with intrinsics (`__match_any_sync` on the address,
/// leader adds the popcount, `__shfl_sync` of the result).
#[inline(always)]
fn atomic_agg_inc_intrinsics(counter: &AtomicU32) -> u32 {
    let active = cohort::raw::activemask();
    // SAFETY: the active lanes execute this together with their own mask.
    let mask = unsafe { cohort::raw::match_any_sync_b64(active, counter.as_ptr() as u64) };
    let leader = mask.trailing_zeros();
    let lane = thread::lane_id();
    let mut res = 0;
    if lane == leader {
        res = counter.fetch_add(mask.count_ones(), Ordering::Relaxed);
    }
    // SAFETY: as above.
    let res = unsafe { cohort::raw::shfl_sync_idx_b32(mask, res, leader, 0x1f) };
    res + (mask & cohort::raw::lanemask_lt()).count_ones()
}

/// The same with a coalesced group: rank 0 adds the group's size, `shfl` of the result.
#[inline(always)]
fn atomic_agg_inc_cg(counter: &AtomicU32) -> u32 {
    let g = cg::coalesced_threads();
    let mut prev = 0;
    if g.thread_rank() == 0 {
        prev = counter.fetch_add(g.num_threads(), Ordering::Relaxed);
    }
    g.thread_rank() + g.shfl(prev, 0)
}

/// The discovery pattern: threads whose `data[i] % 3 == 0` take a slot from `counter[form]`
/// (0: intrinsics, 1: coalesced group) and write it to `out[i]`; the others write `u32::MAX`.
#[kernel]
pub fn example_aggregated_inc(data: &[u32], form: u32, counter: &[AtomicU32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let mut slot = u32::MAX;
    if data.get(*i).is_some_and(|v| v % 3 == 0) {
        slot = if form == 0 { atomic_agg_inc_intrinsics(&counter[0]) } else { atomic_agg_inc_cg(&counter[1]) };
    }
    out.set(&i, slot);
}

/// The odd/even `binary_partition` of a warp: per thread its sub-group's size, its rank in it,
/// the meta rank and size, and the sub-group's sum.
#[kernel]
pub fn example_odd_even(data: &[u32], mut out: DisjointSlice<[u32; 5]>) {
    let i = thread::index_1d();
    let tile32 = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = data[*i];
    let g = cg::binary_partition(&tile32, v & 1 == 1);
    out.set(
        &i,
        [g.num_threads(), g.thread_rank(), g.meta_group_rank(), g.meta_group_size(), cg::reduce(&g, v, cg::plus)],
    );
}

/// Streams 16K ints per block through 128 ints of shared memory with `memcpy_async` and
/// `wait`, one stage: `out[k] = 2 * data[k] + 1` for the block's part.
#[kernel]
pub fn example_memcpy_one_stage(data: &[i32], mut out: DisjointSlice<i32>) {
    const PER_BLOCK: usize = 16 * 1024;
    const IN_SHARED: usize = 128;
    let tb = cg::this_thread_block();
    let mut stage = STAGE.get().as_slice().sub(0, IN_SHARED);
    let base = thread::block_idx_x() as usize * PER_BLOCK;
    let mut index = 0;
    while index < PER_BLOCK {
        let count = IN_SHARED.min(PER_BLOCK - index);
        // `stage` is borrowed by the copy until the wait hands it back.
        cg::memcpy_async(&tb, &mut stage, &data[base + index..base + index + count]).wait(&tb);
        let smem = &stage;
        let mut j = tb.thread_rank() as usize;
        while j < count {
            // SAFETY: element base + index + j is written by exactly one thread (j is this
            // thread's stripe of this round).
            unsafe { *out.get_unchecked_mut(base + index + j) = 2 * smem.load(j) + 1 };
            j += tb.num_threads() as usize;
        }
        tb.sync(); // the buffer is overwritten next round
        index += count;
    }
}

/// The same in two stages: the next copy is in flight (`wait_prior::<1>`) while this one is
/// consumed. Each stage's handle is borrowed by its copy until the queue's wait gives it back.
#[kernel]
pub fn example_memcpy_two_stage(data: &[i32], mut out: DisjointSlice<i32>) {
    const PER_BLOCK: usize = 16 * 1024;
    const IN_SHARED: usize = 128;
    const CHUNKS: usize = PER_BLOCK / IN_SHARED; // even: the stages alternate a, b, a, b, …
    let tb = cg::this_thread_block();
    let base = thread::block_idx_x() as usize * PER_BLOCK;
    let chunk = |k: usize| &data[base + k * IN_SHARED..base + (k + 1) * IN_SHARED];
    let consume = |out: &mut DisjointSlice<i32>, smem: &cohort::shared::SharedSlice<i32>, k: usize| {
        let mut j = tb.thread_rank() as usize;
        while j < IN_SHARED {
            // SAFETY: element `base + k * IN_SHARED + j` is written by exactly one thread.
            unsafe { *out.get_unchecked_mut(base + k * IN_SHARED + j) = 2 * smem.load(j) + 1 };
            j += tb.num_threads() as usize;
        }
    };
    let (mut a, mut b) = (STAGE.get().as_slice().sub(0, IN_SHARED), STAGE.get().as_slice().sub(IN_SHARED, IN_SHARED));
    let mut q = cg::AsyncCopies::new();
    let mut copy_a = q.memcpy_async(&tb, &mut a, chunk(0));
    let mut k = 0;
    loop {
        let copy_b = q.memcpy_async(&tb, &mut b, chunk(k + 1));
        // `wait_prior<1>`: stage a is done, stage b stays in flight.
        q.wait(&tb, copy_a);
        consume(&mut out, &a, k);
        tb.sync(); // stage a is refilled next
        if k + 2 == CHUNKS {
            q.wait(&tb, copy_b);
            consume(&mut out, &b, k + 1);
            break;
        }
        copy_a = q.memcpy_async(&tb, &mut a, chunk(k + 2));
        q.wait(&tb, copy_b);
        consume(&mut out, &b, k + 1);
        tb.sync(); // stage b is refilled next
        k += 2;
    }
}

/// The `cg::reduce` block_reduce example: a stride loop, `reduce` over tiles of 32, one
/// atomic add per tile into a shared total; `out[b]` = block `b`'s sum over `data[b * per_block
/// .. (b + 1) * per_block]`.
#[kernel]
pub fn example_block_reduce(data: &[i32], per_block: u32, mut out: DisjointSlice<i32>) {
    let block = cg::this_thread_block();
    let tile = cg::tiled_partition::<32>(&block);
    let total = TOTAL.get();
    if block.thread_rank() == 0 {
        total.store(0, 0);
    }
    block.sync();
    let base = thread::block_idx_x() as usize * per_block as usize;
    let mut thread_sum = 0i32;
    let mut k = block.thread_rank() as usize;
    while k < per_block as usize {
        thread_sum += data[base + k];
        k += block.num_threads() as usize;
    }
    let s = cg::reduce(&tile, thread_sum, cg::plus);
    if tile.thread_rank() == 0 {
        total.atomic(0).fetch_add_scoped(s, Ordering::Relaxed, Scope::Block);
    }
    block.sync();
    if block.thread_rank() == 0 {
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *out.get_unchecked_mut(thread::block_idx_x() as usize) = total.load(0) };
    }
}

/// `inclusive_scan` over tiles of 8 of the thread ranks, printed and written:
/// `0 1 3 6 10 15 21 28` in every tile.
#[kernel]
pub fn example_tile8_scan(mut out: DisjointSlice<u32>) {
    let tile = cg::tiled_partition::<8>(&cg::this_thread_block());
    let val = cg::inclusive_sum(&tile, tile.thread_rank());
    if thread::block_idx_x() == 0 && tile.meta_group_rank() == 0 {
        printf!("%u: %u\n", tile.thread_rank(), val);
    }
    out.set(thread::index_1d(), val);
}

/// Buffer allocation with `exclusive_scan_update`: each thread needs `rank % 2 + 1` slots of a
/// shared buffer and fills them with `0, 1, …`; the buffer (`{0, 0, 1, 0, 0, 1, …}`) is
/// copied to `out`, and `out_used[b]` gets the slots used.
#[kernel]
pub fn example_buffer_allocation(mut out: DisjointSlice<i32>, mut out_used: DisjointSlice<i32>) {
    let block = cg::this_thread_block();
    let tile = cg::tiled_partition::<32>(&block);
    let buffer = BUFFER.get();
    let used = BUFFER_USED.get();
    if block.thread_rank() == 0 {
        used.store(0, 0);
    }
    block.sync();
    let buf_needed = (tile.thread_rank() % 2 + 1) as i32;
    let buf_offset = cg::exclusive_scan_update(&tile, used.atomic(0), buf_needed);
    for k in 0..buf_needed {
        buffer.store((buf_offset + k) as usize, k);
    }
    block.sync();
    let total = used.load(0) as usize;
    let b = thread::block_idx_x() as usize;
    let mut k = block.thread_rank() as usize;
    while k < total {
        // SAFETY: element b * 2048 + k is written by one thread of block b.
        unsafe { *out.get_unchecked_mut(b * 2048 + k) = buffer.load(k) };
        k += block.num_threads() as usize;
    }
    if block.thread_rank() == 0 {
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *out_used.get_unchecked_mut(b) = total as i32 };
    }
}

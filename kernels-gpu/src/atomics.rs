//! The atomics-and-mutex workloads (the Numba tutorial's): the race, character histograms,
//! the mutex counter and the dot product; plus Cohort's own histogram. Each has a CUDA C++
//! twin in `host/benches/cuda_twins.cu` with the same algorithm and parameters.

use cohort::mutex::MutexGuard;
use cohort::prelude::*;
use cohort::shared;
use cohort::slice::cast_aligned;

use crate::bench::U32x4;

/// Number of histogram bins: ASCII.
pub const BINS: usize = 128;

/// Every thread does a non-atomic read-modify-write of `x[0]` (a relaxed load, then a relaxed
/// store): increments get lost. Safe Rust still: the race is on values, not memory safety.
#[kernel]
pub fn race_increment(x: &[AtomicU32]) {
    let v = x[0].load(Ordering::Relaxed);
    x[0].store(v + 1, Ordering::Relaxed);
}

/// Every thread adds 1 to `x[0]` atomically.
#[kernel]
pub fn atomic_increment(x: &[AtomicU32]) {
    x[0].fetch_add(1, Ordering::Relaxed);
}

/// Every thread takes the mutex, adds one to `x[0]` with a plain read and write, and unlocks.
#[kernel]
pub fn mutex_add_one(mutex: &[Mutex], x: &[AtomicU32]) {
    let _guard = mutex[0].lock();
    let v = x[0].load(Ordering::Relaxed);
    x[0].store(v + 1, Ordering::Relaxed);
}

/// Histogram with global atomics (the tutorial's `histo_kernel`).
#[kernel]
pub fn histogram_global(text: &[u8], bins: &[AtomicU32]) {
    for i in thread::grid_stride(text.len()) {
        bins[(text[*i] & 127) as usize].add(1, Ordering::Relaxed);
    }
}

cohort::shared! {
    static BLOCK_BINS: [u32; BINS];
}

/// Histogram privatized in shared memory (the tutorial's `histo_shared_kernel`): one copy per
/// block, shared atomics, then one global atomic per bin per block.
#[kernel]
pub fn histogram_shared(text: &[u8], bins: &[AtomicU32]) {
    let block = cg::this_thread_block();
    let local = BLOCK_BINS.get();
    let t = block.thread_rank() as usize;
    let mut b = t;
    while b < BINS {
        local.store(b, 0);
        b += block.num_threads() as usize;
    }
    block.sync();
    for i in thread::grid_stride(text.len()) {
        local.atomic((text[*i] & 127) as usize).add_scoped(1, Ordering::Relaxed, Scope::Block);
    }
    block.sync();
    let mut b = t;
    while b < BINS {
        bins[b].add(local.load(b), Ordering::Relaxed);
        b += block.num_threads() as usize;
    }
}

/// Cohort's histogram: 16-byte loads and `copies` private copies of the bins per warp
/// (lane `l` counts into copy `l % copies`), each copy 129 words apart so that equal bins of
/// different copies fall in different banks; launch with `warps_per_block * copies * 129 * 4`
/// bytes of dynamic shared memory. Each 32-bit word is masked once (`& 0x7f7f7f7f`), so a
/// character costs a shift, a mask, an add and the shared atomic, which ptxas emits as
/// `ATOMS.POPC.INC` (equal addresses within a warp are combined in hardware). On an H200 one
/// copy per warp measured best (text 3278 GB/s, 1.09x CUB; `cohort bench atomics` sweeps
/// copies and blocks); more copies suit GPUs without that aggregation.
#[kernel]
pub fn histogram_lib(text: &[u8], copies: u32, bins: &[AtomicU32]) {
    let block = cg::this_thread_block();
    let smem = shared::dynamic::<u32>();
    let n = smem.len();
    let t = block.thread_rank() as usize;
    let stride = block.num_threads() as usize;
    let mut k = t;
    while k < n {
        smem.store(k, 0);
        k += stride;
    }
    block.sync();
    let copy = (thread::warp_id() * copies + thread::lane_id() % copies) as usize * (BINS + 1);
    let total_copies = (thread::warps_per_block() * copies) as usize;
    assert!(
        copies > 0 && n >= total_copies * (BINS + 1),
        "histogram_lib: too little dynamic shared memory for the copies"
    );
    let (head, body, tail) = cast_aligned::<u8, U32x4>(text);
    // The few unaligned bytes at either end go to the first block's threads.
    if thread::block_idx_x() == 0 {
        let mut e = t;
        while e < head.len() + tail.len() {
            let c = if e < head.len() { head[e] } else { tail[e - head.len()] };
            smem.atomic(copy + (c & 127) as usize).add_scoped(1, Ordering::Relaxed, Scope::Block);
            e += stride;
        }
    }
    // This thread's copy: bounds checked once here; every index below is < 128 by its mask.
    let mine = smem.sub(copy, BINS + 1);
    for i in thread::grid_stride(body.len()) {
        let words = body[*i].0;
        let mut j = 0;
        while j < 4 {
            // One mask per 4 characters; each byte is then < 128 (so in bounds) and needs
            // only a byte extract.
            let w = words[j] & 0x7f7f_7f7f;
            let mut k = 0;
            while k < 32 {
                mine.atomic(((w >> k) & 0xff) as usize).add_scoped(1, Ordering::Relaxed, Scope::Block);
                k += 8;
            }
            j += 1;
        }
    }
    block.sync();
    let mut b = t;
    while b < BINS {
        let mut sum = 0u32;
        let mut c = 0;
        while c < total_copies {
            sum += smem.load(c * (BINS + 1) + b);
            c += 1;
        }
        bins[b].add(sum, Ordering::Relaxed);
        b += stride;
    }
}

cohort::shared! {
    static DOT_CACHE: [f32; 1024];
}

/// Block-level tree sum of the per-thread products, through shared memory (the tutorial's
/// `cache` loop, with the correct `cache[i + s]`).
#[inline(always)]
fn block_dot(a: &[f32], b: &[f32]) -> f32 {
    let block = cg::this_thread_block();
    let cache = DOT_CACHE.get();
    let mut temp = 0.0f32;
    for i in thread::grid_stride(a.len().min(b.len())) {
        temp += a[*i] * b[*i];
    }
    let t = block.thread_rank() as usize;
    cache.store(t, temp);
    block.sync();
    let mut s = block.num_threads() as usize / 2;
    while s != 0 {
        if t < s {
            cache.store(t, cache.load(t) + cache.load(t + s));
        }
        block.sync();
        s /= 2;
    }
    cache.load(0)
}

/// Dot product, partial: each block writes its sum to `partial[block]`; the host adds them.
/// Blocks must be a power of two in size (≤ 1024).
#[kernel]
pub fn dot_partial(a: &[f32], b: &[f32], mut partial: DisjointSlice<f32>) {
    let sum = block_dot(a, b);
    if thread::thread_idx_x() == 0 {
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *partial.get_unchecked_mut(thread::block_idx_x() as usize) = sum };
    }
}

/// Dot product, full: each block's thread 0 adds its sum to `c[0]` inside the mutex.
#[kernel]
pub fn dot_mutex(mutex: &[Mutex], a: &[f32], b: &[f32], c: &[AtomicF32]) {
    // One contender per block and a critical section of a few instructions: spin (as the
    // tutorial and the C++ twin do) rather than back off.
    dot_under_lock(a, b, c, || mutex[0].lock_spin());
}

/// [`dot_mutex`] with [`Mutex::lock`] (exponential `nanosleep` backoff) instead of spinning:
/// measured beside it by `cohort bench atomics` to show what backoff costs one-per-block
/// contention.
#[kernel]
pub fn dot_mutex_backoff(mutex: &[Mutex], a: &[f32], b: &[f32], c: &[AtomicF32]) {
    dot_under_lock(a, b, c, || mutex[0].lock());
}

/// The block's dot product, added to `c[0]` by thread 0 while it holds the guard `lock` returns.
#[inline(always)]
fn dot_under_lock<'m>(a: &[f32], b: &[f32], c: &[AtomicF32], lock: impl FnOnce() -> MutexGuard<'m>) {
    let sum = block_dot(a, b);
    if thread::thread_idx_x() == 0 {
        let _guard = lock();
        let v = c[0].load(Ordering::Relaxed);
        c[0].store(v + sum, Ordering::Relaxed);
    }
}

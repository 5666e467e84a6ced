//! Memory and launch-latency workloads: the Cooperative Groups blog's managed-memory program
//! (`cohort managed`), and the kernels of `cohort bench alloc` and `cohort bench pdl` — each the
//! same as its CUDA C++ twin in `host/benches/memory_twin.cu`.

use cohort::prelude::*;
use cohort::vec::i32x4;

/// `thread_sum` of the blog: this thread's sum of `int4`s over a grid-stride loop.
#[inline(always)]
fn thread_sum(input: &[i32x4]) -> i32 {
    let mut sum = 0i32;
    for i in thread::grid_stride(input.len()) {
        let v = input[*i];
        sum = sum.wrapping_add(v.x.wrapping_add(v.y).wrapping_add(v.z).wrapping_add(v.w));
    }
    sum
}

/// `reduce_sum(thread_group g, int *temp, int val)` of the blog: a tree sum through shared
/// memory over any thread group; only rank 0 returns the whole sum.
#[inline(always)]
fn reduce_sum<G: ThreadGroup>(g: &G, temp: SharedSlice<i32>, mut val: i32) -> i32 {
    let lane = Into::<u64>::into(g.thread_rank()) as usize;
    let mut i = Into::<u64>::into(g.num_threads()) as usize / 2;
    while i > 0 {
        temp.store(lane, val);
        g.sync(); // wait for all threads to store
        if lane < i {
            val = val.wrapping_add(temp.load(lane + i));
        }
        g.sync(); // wait for all threads to load
        i /= 2;
    }
    val
}

/// The blog's `sum_kernel_block` ("Cooperative Groups: Flexible CUDA Thread Programming",
/// NVIDIA, 2017), whose `main` allocates with `cudaMallocManaged`: each thread sums `int4`s
/// (`thread_sum`), the block reduces them through dynamic shared memory of one `i32` per thread
/// (`reduce_sum` over `this_thread_block()`), and thread 0 adds the block's sum to `sum[0]`.
/// Blocks of a power-of-two size.
#[kernel]
pub fn sum_kernel_block(sum: &[AtomicI32], input: &[i32x4]) {
    let my_sum = thread_sum(input);
    let temp = cohort::shared::dynamic::<i32>();
    let g = cg::this_thread_block();
    let block_sum = reduce_sum(&g, temp, my_sum);
    if g.thread_rank() == 0 {
        sum[0].add(block_sum, Ordering::Relaxed);
    }
}

/// `out[i] = v`: the small kernel of `cohort bench alloc`'s allocate → launch → free loop.
#[kernel]
pub fn alloc_bench_fill(mut out: DisjointSlice<f32>, v: f32) {
    let i = thread::index_1d();
    out.set(&i, v);
}

/// `y[i] += a * x[i]` (SAXPY in place): one link of `cohort bench pdl`'s chain, launched
/// plainly.
#[kernel]
pub fn chain_saxpy(x: &[f32], mut y: DisjointSlice<f32>, a: f32) {
    let i = thread::index_1d();
    if let (Some(&xi), Some(yi)) = (x.get(*i), y.get_mut(&i)) {
        *yi += a * xi;
    }
}

/// [`chain_saxpy`] as a dependent kernel: it waits for the kernel before it at its entry
/// (`#[kernel(dependent)]`), then lets the kernel after it be scheduled at once
/// (`launch_dependents`), as CUDA's PDL chains do (`cudaGridDependencySynchronize()`, then
/// `cudaTriggerProgrammaticLaunchCompletion()`).
#[kernel(dependent)]
pub fn chain_saxpy_dependent(x: &[f32], mut y: DisjointSlice<f32>, a: f32) {
    cohort::launch::launch_dependents();
    let i = thread::index_1d();
    if let (Some(&xi), Some(yi)) = (x.get(*i), y.get_mut(&i)) {
        *yi += a * xi;
    }
}

/// Holds its stream for about `ns` nanoseconds (one thread), then sets `flag[0] = 1`: what
/// `cohort bench pdl` queues a chain behind, so that the chain's launches are all enqueued
/// before the GPU reaches them (the GPU, not the host, sets the pace).
#[kernel]
pub fn pdl_gate(mut flag: DisjointSlice<u32>, ns: u64) {
    let start = cohort::raw::globaltimer();
    while cohort::raw::globaltimer().wrapping_sub(start) < ns {
        cohort::raw::nanosleep(1000);
    }
    let i = thread::index_1d();
    flag.set(&i, 1);
}

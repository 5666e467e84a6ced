//! Example 05: atomics and the device mutex.

use cohort::prelude::*;

/// Counts each byte value of `data` into `bins` (256 of them) with global atomic adds.
#[kernel]
pub fn histogram(data: &[u8], bins: &[AtomicU32]) {
    for i in thread::grid_stride(data.len()) {
        bins[data[*i] as usize].add(1, Ordering::Relaxed);
    }
}

/// `total[0] += Σ a[i] * b[i]`: each block reduces its products, then its leader adds the
/// block's sum to `total[0]` while holding `mutex[0]` (a plain read and write inside the lock).
#[kernel]
pub fn dot(mutex: &[Mutex], a: &[f32], b: &[f32], total: &[AtomicF32]) {
    let block = cg::this_thread_block();
    let mut acc = 0.0f32;
    for i in thread::grid_stride(a.len().min(b.len())) {
        acc += a[*i] * b[*i];
    }
    let sum = cg::reduce(&block, acc, cg::plus);
    if block.thread_rank() == 0 {
        let _guard = mutex[0].lock(); // acquire; dropping the guard releases
        let t = total[0].load(Ordering::Relaxed);
        total[0].store(t + sum, Ordering::Relaxed);
    }
}

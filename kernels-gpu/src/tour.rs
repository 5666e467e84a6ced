//! The kernels `cohort tour` runs, each checked against a CPU reference. Together they use
//! every kind of kernel parameter.

use cohort::prelude::*;

/// `out[i] = a[i] + b[i]`.
#[kernel]
pub fn vector_add(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(&i) {
        *o = a[*i] + b[*i];
    }
}

/// What SAXPY needs of its element type.
pub trait Axpy: Copy + core::ops::Mul<Output = Self> + core::ops::Add<Output = Self> {}
impl Axpy for f32 {}
impl Axpy for f64 {}

/// `y[i] = a * x[i] + y[i]`, for `f32` and `f64` (one PTX entry each: `saxpy_f32`,
/// `saxpy_f64`).
#[kernel(instances(f32, f64))]
pub fn saxpy<T: Axpy>(a: T, x: &[T], mut y: DisjointSlice<T>) {
    let i = thread::index_1d();
    if let Some(yi) = y.get_mut(&i) {
        *yi = a * x[*i] + *yi;
    }
}

/// Sums `data` into `total[0]`: a grid-stride loop per thread, a warp reduction
/// (`cg::reduce` on a tile of 32), one atomic add per warp.
#[kernel]
pub fn sum_u32(data: &[u32], total: &[AtomicU64]) {
    let mut acc = 0u64;
    for i in thread::grid_stride(data.len()) {
        acc += data[*i] as u64;
    }
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let acc = cg::reduce(&warp, acc, cg::plus);
    if warp.thread_rank() == 0 {
        total[0].add(acc, Ordering::Relaxed);
    }
}

/// Prints one line from each of the first `lines` threads (device `printf`).
#[kernel]
pub fn hello(lines: u32, tag: f32) {
    let id = thread::global_id();
    if id < lines as u64 {
        printf!(
            "hello from thread %u of block %u: tag %.2f, id %llu\n",
            thread::thread_idx_x(),
            thread::block_idx_x(),
            tag,
            id
        );
    }
}

/// Parameters of [`affine`], passed by value as a `#[repr(C)]` struct.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
pub struct Affine {
    /// Multiplier.
    pub scale: f32,
    /// Offset, added after scaling.
    pub shift: f32,
    /// Results are clamped to at most this.
    pub limit: f64,
}

/// `y[i] = min(p.scale * x[i] + p.shift, p.limit)`.
#[kernel]
pub fn affine(p: Affine, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = thread::index_1d();
    if let Some(yi) = y.get_mut(&i) {
        let v = p.scale * x[*i] + p.shift;
        *yi = if (v as f64) > p.limit { p.limit as f32 } else { v };
    }
}

/// `data[i] *= factor` through a raw pointer.
///
/// # Safety
/// `data` must point at `n` writable `f32` in device memory, used by nothing else during the
/// launch.
#[kernel]
pub unsafe fn scale_in_place(data: *mut f32, n: u32, factor: f32) {
    let i = thread::global_id();
    if i < n as u64 {
        // SAFETY: in bounds by the check above and the kernel's contract; each thread touches
        // only its own element.
        unsafe { *data.add(i as usize) *= factor };
    }
}

/// Each block sums its share of `data` and publishes it; after a grid sync, block `b` reports
/// the sum published by block `b + 1` (mod the grid): every block reads what another wrote
/// before the sync.
#[kernel(cooperative)]
pub fn neighbour_sums(grid: GridGroup, data: &[u32], published: &[AtomicU64], mut out: DisjointSlice<u64>) {
    let block = cg::this_thread_block();
    let b = grid.block_rank() as usize;
    let nb = grid.num_blocks() as usize;
    // Block b sums elements b, b + nb, b + 2nb, … (strided by threads within the block).
    let mut acc = 0u64;
    let mut i = b + nb * block.thread_rank() as usize;
    while i < data.len() {
        acc += data[i] as u64;
        i += nb * block.num_threads() as usize;
    }
    let acc = cg::reduce(&block, acc, cg::plus);
    if block.thread_rank() == 0 {
        published[b].store(acc, Ordering::Relaxed);
    }
    grid.sync();
    if block.thread_rank() == 0 {
        let theirs = published[(b + 1) % nb].load(Ordering::Relaxed);
        // Thread 0 of block b owns element b: `ThreadIndex` for that is the block's rank.
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *out.get_unchecked_mut(b) = theirs };
    }
}

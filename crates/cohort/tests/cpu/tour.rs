//! The tour's kernels: vector add and SAXPY (fast path), a warp-reduced sum with one atomic per warp.

use super::*;

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

/// `y[i] = a * x[i] + y[i]`.
#[kernel(instances(f32, f64))]
pub fn saxpy<T: Axpy>(a: T, x: &[T], mut y: DisjointSlice<T>) {
    let i = thread::index_1d();
    if let Some(yi) = y.get_mut(&i) {
        *yi = a * x[*i] + *yi;
    }
}

/// Sums `data` into `total[0]`: grid-stride loop, warp reduce, one atomic add per warp.
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

#[test]
fn tour_vector_add_and_saxpy_fast_path() {
    let n = 10_000;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let mut out = vec![f32::NAN; n];
    let p = Ptr::of(&mut out);
    let blocks = n.div_ceil(256) as u32;
    launch_typed(&LaunchSpec::new(blocks, 256u32).fast_path(), &|| __cohort_kernel_vector_add(&a, &b, p.disjoint()))
        .unwrap();
    for i in 0..n {
        assert_eq!(out[i], a[i] + b[i], "vector_add element {i}");
    }

    let x: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
    let mut y: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let y0 = y.clone();
    let p = Ptr::of(&mut y);
    launch_typed(&LaunchSpec::new(blocks, 256u32).fast_path(), &|| __cohort_kernel_saxpy::<f64>(1.5, &x, p.disjoint()))
        .unwrap();
    for i in 0..n {
        assert_eq!(y[i], 1.5 * x[i] + y0[i], "saxpy element {i}");
    }
}

#[test]
fn tour_sum_u32_warp_reduce_and_atomic() {
    let d = data(100_003, 7);
    let total = atomics::<u64, cohort::atomic::Global>(&[0]);
    launch(&LaunchSpec::new(13u32, 128u32), &|| __cohort_kernel_sum_u32(&d, &total)).unwrap();
    let want: u64 = d.iter().map(|&v| u64::from(v)).sum();
    assert_eq!(total[0].load(Ordering::Relaxed), want);
}

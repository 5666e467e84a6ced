//! Grid scope: grid sync, `GridVec` (a Jacobi sweep), and a grid too large for a cooperative launch.

use super::*;

/// The tour's cooperative kernel: block sums published, read by the neighbour after grid sync.
#[kernel(cooperative)]
pub fn neighbour_sums(grid: GridGroup, data: &[u32], published: &[AtomicU64], mut out: DisjointSlice<u64>) {
    let block = cg::this_thread_block();
    let b = grid.block_rank() as usize;
    let nb = grid.num_blocks() as usize;
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
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *out.get_unchecked_mut(b) = theirs };
    }
}

/// 1-D Jacobi sweeps `x[i] = (x[i-1] + x[i+1] + b[i]) / 2` on a `GridVec` (publish, read the
/// neighbours, reclaim, write: no `unsafe`).
#[kernel(cooperative)]
pub fn jacobi_1d(grid: GridGroup, b: &[f32], mut x: GridVec<f32>, iters: u32) {
    let i = thread::index_1d();
    let n = x.len();
    for _ in 0..iters {
        let all = x.publish(&grid);
        let v = if *i < n {
            let l = if *i > 0 { all[*i - 1] } else { 0.0 };
            let r = if *i + 1 < n { all[*i + 1] } else { 0.0 };
            (l + r + b[*i]) * 0.5
        } else {
            0.0
        };
        x = all.reclaim(&grid);
        x.set(&i, v);
    }
}

#[test]
fn grid_sync_neighbour_sums_and_gridvec_jacobi() {
    let nb = 6usize;
    let d = data(5000, 9);
    let published = atomics::<u64, cohort::atomic::Global>(&[0; 6]);
    let mut out = vec![0u64; nb];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(nb as u32, 128u32).cooperative(), &|| {
        // SAFETY: the launch is cooperative.
        let grid = unsafe { GridGroup::new_unchecked() };
        __cohort_kernel_neighbour_sums(grid, &d, &published, p.disjoint())
    })
    .unwrap();
    for b in 0..nb {
        let theirs = (b + 1) % nb;
        let want: u64 = d.iter().enumerate().filter(|(i, _)| i % nb == theirs).map(|(_, &v)| u64::from(v)).sum();
        assert_eq!(out[b], want, "block {b}");
    }

    let n = 500usize;
    let bvec: Vec<f32> = (0..n).map(|i| (i % 17) as f32 - 8.0).collect();
    let mut x = vec![0f32; n];
    let mut barrier = 0u32;
    let (px, pb) = (Ptr::of(&mut x), Ptr::of(core::slice::from_mut(&mut barrier)));
    let iters = 20;
    launch(&LaunchSpec::new(4u32, 128u32).cooperative(), &|| {
        // SAFETY: the launch is cooperative.
        let grid = unsafe { GridGroup::new_unchecked() };
        // SAFETY: `x` (`n` elements) and `barrier` are borrowed exclusively for the launch
        // (`Ptr`); the vector's phases keep the threads' accesses apart.
        let x = unsafe { GridVec::from_raw_parts(px.get(), n, pb.get()) };
        __cohort_kernel_jacobi_1d(grid, &bvec, x, iters)
    })
    .unwrap();
    let mut want = vec![0f32; n];
    for _ in 0..iters {
        let old = want.clone();
        for i in 0..n {
            let l = if i > 0 { old[i - 1] } else { 0.0 };
            let r = if i + 1 < n { old[i + 1] } else { 0.0 };
            want[i] = (l + r + bvec[i]) * 0.5;
        }
    }
    for i in 0..n {
        assert_eq!(x[i].to_bits(), want[i].to_bits(), "x[{i}]");
    }
}

#[test]
fn grid_too_large_for_cooperative_launch_is_refused() {
    let blocks = cohort_cpu::max_coresident_blocks(1024) + 1;
    let r = launch(&LaunchSpec::new(blocks as u32, 1024u32).cooperative(), &|| {
        // SAFETY: never runs (the launch is refused).
        unsafe { GridGroup::new_unchecked() }.sync()
    });
    assert!(r.is_err(), "{r:?}");
}

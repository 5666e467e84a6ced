//! The CPU engine's benchmark (not a test): `cargo run --release -p cohort-cpu --example cpu_bench`.
//!
//! - SAXPY over 2^26 `f32` through the fast path (`Mode::Loop`) beside the same loop with rayon;
//! - a block reduce (shared memory + `sync_threads`) and a warp-shuffle scan, in threads/s;
//! - the cost of one block barrier and of one shuffle.
//!
//! Every result is checked against a CPU reference.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cohort_cpu::{
    LaunchSpec, global_rank, lane_id, launch, launch_typed, shared_static, shared_window, shfl_up, shfl_xor,
    sync_threads, thread_rank,
};
use rayon::prelude::*;

/// A pointer the threads of a launch write through, each at its own index.
#[derive(Clone, Copy)]
struct Ptr(*mut f32);
// SAFETY: the kernels below write disjoint elements (one per global rank) and read no element
// another thread writes; the pointee outlives the launch.
unsafe impl Sync for Ptr {}
// SAFETY: as above.
unsafe impl Send for Ptr {}

fn best<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("cohort-cpu benchmark on {cores} cores (best of 5)\n");

    // SAXPY.
    let n = 1usize << 26;
    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 777) as f32).collect();
    let mut y = y0.clone();
    let yp = Ptr(y.as_mut_ptr());
    let spec = LaunchSpec::new((n / 256) as u32, 256u32).fast_path();
    let xs = &x;
    // `launch_typed`: the thread loop is compiled for this kernel (what `#[kernel]` can call).
    let t_engine = best(5, || {
        launch_typed(&spec, &|| {
            let i = global_rank() as usize;
            if i < n {
                let p = yp;
                // SAFETY: thread `i` alone touches element `i` of `y` (length `n`).
                unsafe { *p.0.add(i) = a * xs[i] + *p.0.add(i) };
            }
        })
        .unwrap();
    });
    // Each run applied saxpy once more: check y = y0 + 5 a x.
    for i in (0..n).step_by(4099) {
        let mut want = y0[i];
        for _ in 0..5 {
            want += a * x[i];
        }
        assert_eq!(y[i], want, "saxpy element {i}");
    }
    let t_rayon = best(5, || {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(y, x)| *y += a * x);
    });
    // The same launch through `launch` (`&dyn Fn()`: one indirect call per thread).
    let yp = Ptr(y.as_mut_ptr());
    let t_dyn = best(5, || {
        launch(&spec, &|| {
            let i = global_rank() as usize;
            if i < n {
                let p = yp;
                // SAFETY: thread `i` alone touches element `i` of `y` (length `n`).
                unsafe { *p.0.add(i) = a * xs[i] + *p.0.add(i) };
            }
        })
        .unwrap();
    });
    let bytes = (n * 12) as f64;
    println!("| workload | CPU engine | rayon | engine / rayon |");
    println!("|---|---|---|---|");
    println!(
        "| SAXPY 2^26 f32, fast path (`launch_typed`) | {:.1} ms ({:.2} G elem/s, {:.1} GB/s) | {:.1} ms ({:.2} G elem/s) | {:.2}x |",
        t_engine * 1e3,
        n as f64 / t_engine / 1e9,
        bytes / t_engine / 1e9,
        t_rayon * 1e3,
        n as f64 / t_rayon / 1e9,
        t_rayon / t_engine
    );
    println!(
        "| SAXPY 2^26 f32, fast path (`launch`, dyn) | {:.1} ms ({:.2} G elem/s) | | {:.2}x |",
        t_dyn * 1e3,
        n as f64 / t_dyn / 1e9,
        t_rayon / t_dyn
    );

    // Block reduce: 256 threads, shared memory, 8 barriers per block.
    let m = 1usize << 20;
    let input: Vec<u32> = (0..m).map(|i| (i as u32).wrapping_mul(2_654_435_761) >> 20).collect();
    let sums: Vec<AtomicU64> = (0..m / 256).map(|_| AtomicU64::new(0)).collect();
    static PARTIALS: u8 = 0;
    let inp = &input;
    let sm = &sums;
    let t_reduce = best(5, || {
        launch(&LaunchSpec::new((m / 256) as u32, 256u32), &|| {
            let off = shared_static(&raw const PARTIALS as usize, 256 * 4, 16);
            let s = shared_window().wrapping_add(off as usize).cast::<u32>();
            let t = thread_rank() as usize;
            // SAFETY: slot `t` of the block's 256-word static belongs to thread `t` here.
            unsafe { s.add(t).write(inp[global_rank() as usize]) };
            let mut stride = 128;
            while stride > 0 {
                sync_threads();
                if t < stride {
                    // SAFETY: thread `t` updates its slot from slot `t + stride`, written before
                    // the barrier above and by no thread in this step.
                    unsafe { s.add(t).write(s.add(t).read().wrapping_add(s.add(t + stride).read())) };
                }
                stride /= 2;
            }
            if t == 0 {
                // SAFETY: slot 0, written by this thread last.
                sm[(global_rank() / 256) as usize].store(u64::from(unsafe { s.read() }), Ordering::Relaxed);
            }
        })
        .unwrap();
    });
    for (b, s) in sums.iter().enumerate() {
        let want = input[b * 256..(b + 1) * 256].iter().fold(0u32, |a, v| a.wrapping_add(*v));
        assert_eq!(s.load(Ordering::Relaxed), u64::from(want), "block reduce {b}");
    }

    // Warp-shuffle scan: inclusive sum by 5 shfl_up per thread.
    let scans: Vec<AtomicU64> = (0..m).map(|_| AtomicU64::new(0)).collect();
    let sc = &scans;
    let t_scan = best(5, || {
        launch(&LaunchSpec::new((m / 256) as u32, 256u32), &|| {
            let g = global_rank() as usize;
            let mut v = inp[g];
            for d in [1, 2, 4, 8, 16] {
                let u = shfl_up(u32::MAX, v, d, 32);
                if lane_id() >= d {
                    v = v.wrapping_add(u);
                }
            }
            sc[g].store(u64::from(v), Ordering::Relaxed);
        })
        .unwrap();
    });
    for g in 0..m {
        let base = g - g % 32;
        let want = input[base..=g].iter().fold(0u32, |a, v| a.wrapping_add(*v));
        assert_eq!(scans[g].load(Ordering::Relaxed), u64::from(want), "scan {g}");
    }
    println!(
        "| block reduce (2^20 threads, 256/block, 8 barriers) | {:.1} ms, {:.1} M threads/s | | |",
        t_reduce * 1e3,
        m as f64 / t_reduce / 1e6
    );
    println!(
        "| warp-shuffle scan (2^20 threads, 5 shfl_up) | {:.1} ms, {:.1} M threads/s | | |",
        t_scan * 1e3,
        m as f64 / t_scan / 1e6
    );

    // Cost per barrier and per shuffle: 64 blocks of 256 threads, K of each, minus an empty run.
    let k = 64u32;
    let blocks = 64u32;
    let spec = LaunchSpec::new(blocks, 256u32);
    let t_empty = best(5, || launch(&spec, &|| {}).unwrap());
    let t_bar = best(5, || {
        launch(&spec, &|| {
            for _ in 0..k {
                sync_threads();
            }
        })
        .unwrap()
    });
    let acc = AtomicU64::new(0);
    let t_shfl = best(5, || {
        launch(&spec, &|| {
            let mut v = thread_rank();
            for i in 0..k {
                v = v.wrapping_add(shfl_xor(u32::MAX, v, i % 32, 32));
            }
            acc.fetch_add(u64::from(v), Ordering::Relaxed);
        })
        .unwrap()
    });
    let threads = f64::from(blocks * 256);
    let per_bar = (t_bar - t_empty) / f64::from(blocks * k);
    let per_shfl = (t_shfl - t_empty) / (threads * f64::from(k));
    println!(
        "| block barrier (256 threads) | {:.2} us per barrier per block, {:.1} ns per thread arrival | | |",
        per_bar * 1e6,
        per_bar / 256.0 * 1e9
    );
    println!("| shuffle (full warp) | {:.1} ns per lane-shuffle | | |", per_shfl * 1e9);
    println!(
        "| launch of 64 x 256 threads, empty kernel | {:.2} ms ({:.0} ns per thread: coroutine start + exit) | | |",
        t_empty * 1e3,
        t_empty / threads * 1e9
    );
}

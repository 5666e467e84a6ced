//! `cohort bench cpu`: the CPU device's speed (issue 12's table), on this machine's cores.
//!
//! Every kernel is the real `#[kernel]` of `cohort-kernels`, launched through `Gpu::cpu()` as a
//! GPU program launches it, and every result is checked against a CPU reference:
//!
//! - SAXPY (`saxpy_f32`, the fast path: it reaches no collective) beside the same loop with
//!   rayon on the same cores: the throughput ratio is the figure (goal ≥ 0.5);
//! - a block reduce through shared memory and `sync_threads` (`dot_partial`, 8 barriers per
//!   256-thread block) and a warp-shuffle scan (`bench_scan_u32`, 5 `shfl.up` per thread), in
//!   threads/s;
//! - the cost of one block barrier and of one shuffle, measured on the engine directly
//!   (`cohort_cpu`): a launch with k barriers (shuffles) per thread minus one with none.
//!
//! Each figure is the median of `--reps` runs after one warm-up.

use std::time::Instant;

use cohort_kernels::{atomics::dot_partial, bench::bench_scan_u32, tour::saxpy};
use cohort_runtime::{Gpu, LaunchConfig};
use rayon::prelude::*;

use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench cpu` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// log2 of the SAXPY length
    #[arg(long, default_value = "26")]
    pub saxpy_log2: u32,
    /// log2 of the threads of the block-reduce and scan launches
    #[arg(long, default_value = "20")]
    pub threads_log2: u32,
    /// Timed runs per figure (the median is reported)
    #[arg(long, default_value = "5", value_parser = crate::util::parse_positive)]
    pub reps: usize,
}

/// Median seconds of `reps` runs of `f` after one warm-up.
fn median_s(reps: usize, mut f: impl FnMut() -> CliResult) -> CliResult<f64> {
    f()?;
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64());
    }
    Ok(util::median(&mut t))
}

fn failed(what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::Failed(format!("{what}: {e}"))
}

pub fn run(args: Args) -> CliResult {
    if args.saxpy_log2 > 30 || args.threads_log2 > 28 {
        return Err(CliError::Usage("--saxpy-log2 at most 30, --threads-log2 at most 28".into()));
    }
    let gpu = Gpu::cpu()?;
    let module = gpu.load(&cohort_kernels::PTX)?;
    let cores = rayon::current_num_threads();
    println!("{} — rayon on {cores} threads; median of {} runs after a warm-up", gpu.info().name, args.reps);
    let mut table = Table::new(&["workload", "CPU device", "reference", "figure"]).numeric([1, 2, 3]);

    // SAXPY: the fast path against rayon.
    let n = 1usize << args.saxpy_log2;
    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 777) as f32).collect();
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.upload(&y0)?;
    let k = saxpy::<f32>::load(&module)?;
    if !k.function().cpu_fast_path() {
        return Err(failed("saxpy_f32", "does not take the fast path"));
    }
    let cfg = LaunchConfig::for_elements(n, 256);
    let mut runs = 0usize;
    let t_dev = median_s(args.reps, || {
        runs += 1;
        Ok(k.launch(gpu.stream(), cfg, a, &dx, &mut dy)?)
    })?;
    let got = dy.to_vec()?;
    for (i, (&g, (&y, &x))) in got.iter().zip(y0.iter().zip(&x)).enumerate() {
        let mut want = y;
        for _ in 0..runs {
            want += a * x;
        }
        if g != want {
            return Err(failed("saxpy", format!("element {i}: {g}, expected {want} after {runs} runs")));
        }
    }
    let mut y = y0.clone();
    let t_rayon = median_s(args.reps, || {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(y, &x)| *y += a * x);
        Ok(())
    })?;
    let ratio = t_rayon / t_dev;
    table.row(vec![
        format!("SAXPY 2^{} f32 (fast path) vs rayon", args.saxpy_log2),
        format!("{:.1} ms", t_dev * 1e3),
        format!("{:.1} ms", t_rayon * 1e3),
        format!("{ratio:.2}× rayon's throughput"),
    ]);

    // Block reduce: dot_partial, 256 threads per block, one element per thread.
    let threads = 1usize << args.threads_log2;
    let block = 256usize;
    let blocks = threads / block;
    let va: Vec<f32> = (0..threads).map(|i| (i % 13) as f32).collect();
    let vb: Vec<f32> = (0..threads).map(|i| (i % 7) as f32 * 0.5).collect();
    let (da, db) = (gpu.upload(&va)?, gpu.upload(&vb)?);
    let mut partial = gpu.zeroed::<f32>(blocks)?;
    let dot = dot_partial::load(&module)?;
    let t_reduce =
        median_s(args.reps, || Ok(dot.launch(gpu.stream(), (blocks as u32, block as u32), &da, &db, &mut partial)?))?;
    let got = partial.to_vec()?;
    for (b, &g) in got.iter().enumerate() {
        // Small integers and halves: every partial sum is exact in f32, whatever the order.
        let want: f32 = (b * block..(b + 1) * block).map(|i| va[i] * vb[i]).sum();
        if g != want {
            return Err(failed("dot_partial", format!("block {b}: {g}, expected {want}")));
        }
    }
    table.row(vec![
        format!("block reduce (shared memory, 8 barriers), 2^{} threads", args.threads_log2),
        format!("{:.1} ms", t_reduce * 1e3),
        String::new(),
        format!("{:.2} M threads/s", threads as f64 / t_reduce / 1e6),
    ]);

    // Warp-shuffle scan: per tile of 32 inclusive sums.
    let data: Vec<u32> = (0..threads as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 20).collect();
    let dd = gpu.upload(&data)?;
    let mut out = gpu.zeroed::<u32>(threads)?;
    let scan = bench_scan_u32::load(&module)?;
    let t_scan = median_s(args.reps, || {
        Ok(scan.launch(gpu.stream(), LaunchConfig::for_elements(threads, 256), &dd, &mut out)?)
    })?;
    let got = out.to_vec()?;
    for (t, chunk) in data.chunks(32).enumerate() {
        let mut acc = 0u32;
        for (l, &v) in chunk.iter().enumerate() {
            acc = acc.wrapping_add(v);
            if got[t * 32 + l] != acc {
                return Err(failed(
                    "bench_scan_u32",
                    format!("element {}: {}, expected {acc}", t * 32 + l, got[t * 32 + l]),
                ));
            }
        }
    }
    table.row(vec![
        format!("warp-shuffle scan (5 shfl.up), 2^{} threads", args.threads_log2),
        format!("{:.1} ms", t_scan * 1e3),
        String::new(),
        format!("{:.2} M threads/s", threads as f64 / t_scan / 1e6),
    ]);

    // One barrier and one shuffle, on the engine.
    let (barrier_ns, shuffle_ns) = engine_costs(args.reps)?;
    table.row(vec![
        "one sync_threads, per arriving thread (256-thread blocks)".into(),
        format!("{barrier_ns:.1} ns"),
        String::new(),
        format!("{:.2} µs per block", barrier_ns * 256.0 / 1e3),
    ]);
    table.row(vec![
        "one full-warp shfl.xor, per lane".into(),
        format!("{shuffle_ns:.1} ns"),
        String::new(),
        format!("{:.2} µs per warp", shuffle_ns * 32.0 / 1e3),
    ]);
    table.print();
    println!("every result checked against a CPU reference");
    Ok(())
}

/// Nanoseconds per thread of one `sync_threads` and of one full-warp shuffle: launches of
/// 2^16 threads in blocks of 256 doing 64 of them, minus the same launch doing none.
fn engine_costs(reps: usize) -> CliResult<(f64, f64)> {
    use cohort_cpu::{LaunchSpec, launch_typed, shfl_xor, sync_threads, thread_rank};
    const K: u32 = 64;
    let spec = LaunchSpec::new(256u32, 256u32);
    let threads = 256.0 * 256.0;
    let time = |f: &(dyn Fn() + Sync)| -> CliResult<f64> {
        median_s(reps, || launch_typed(&spec, f).map_err(|e| failed("engine launch", e)))
    };
    let none = time(&|| {
        std::hint::black_box(thread_rank());
    })?;
    let barriers = time(&|| {
        for _ in 0..K {
            sync_threads();
        }
    })?;
    let shuffles = time(&|| {
        let mut v = thread_rank();
        for _ in 0..K {
            v = v.wrapping_add(shfl_xor(u32::MAX, v, 1, 32));
        }
        std::hint::black_box(v);
    })?;
    let per = |t: f64| ((t - none) / f64::from(K) / threads * 1e9).max(0.0);
    Ok((per(barriers), per(shuffles)))
}

//! 06: a cooperative kernel: the whole grid synchronizes in the middle of one launch
//! (`my_kernels::grid::subtract_mean`: sum everything, grid sync, subtract the mean).
//!
//! `cargo run --example 06_grid_sync`

use std::process::ExitCode;

use my_app::{Result, check, exit_code};
use my_kernels::grid::subtract_mean;

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    let n = 3_000_000;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();

    let gpu = my_app::device()?;
    let module = gpu.load(&my_kernels::PTX)?;
    let k = subtract_mean::load(&module)?;
    // A grid sync needs every block resident at once: as many blocks as fit on the GPU.
    let cfg = k.function().persistent_config(256, 0)?;
    let blocks = cfg.grid.volume() as usize;
    let dx = gpu.upload(&x)?;
    // The grid reduction's partial sums, and the barrier word its reductions synchronize on.
    let mut scratch = cohort_runtime::GridVecBuffer::<f64>::zeroed(&gpu, 2 * blocks)?;
    let mut out = gpu.zeroed::<f32>(n)?;
    // `#[kernel(cooperative)]` kernels have only `launch_cooperative`, which refuses a grid
    // that cannot be resident all at once (instead of hanging at the grid sync).
    k.launch_cooperative(gpu.stream(), cfg, &dx, &mut scratch, &mut out)?;
    let got = out.to_vec()?;

    let mean = (x.iter().map(|&v| v as f64).sum::<f64>() / n as f64) as f32;
    let want: Vec<f32> = x.iter().map(|&v| v - mean).collect();
    check("subtract_mean", &got, &want, |g, w| (g - w).abs() <= 1e-4)?;
    println!("subtract_mean: {n} elements on {blocks} co-resident blocks, mean {mean}, all equal to the CPU's");
    Ok(())
}

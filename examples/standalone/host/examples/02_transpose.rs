//! 02: 2-D indexing and shared memory: a matrix transpose through a 32×32 tile
//! (`my_kernels::matrix::transpose`).
//!
//! `cargo run --example 02_transpose`

use std::process::ExitCode;

use cohort_runtime::LaunchConfig;
use my_app::{Result, check, exit_code};
use my_kernels::matrix::transpose;

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    // Not whole tiles: the blocks at the right and bottom edges are partly outside.
    let (rows, cols) = (1000, 700);
    let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();

    let gpu = my_app::device()?;
    let module = gpu.load(&my_kernels::PTX)?;
    let k = transpose::load(&module)?;
    let din = gpu.upload(&input)?;
    let mut out = gpu.zeroed::<f32>(rows * cols)?;
    // A 2-D grid of 2-D blocks: block (bx, by) has 32×32 threads and handles the tile at
    // columns bx*32.. and rows by*32.. of the input.
    let cfg = LaunchConfig::new((cols.div_ceil(32) as u32, rows.div_ceil(32) as u32), (32, 32));
    // The output is a `cols × rows` matrix; the kernel's `DisjointMatrix` layout says which
    // thread writes which element of it.
    k.launch(gpu.stream(), cfg, &din, rows as u32, cols as u32, out.as_matrix_mut(cols, rows)?)?;
    let got = out.to_vec()?;

    // out(r, c) = input(c, r)
    let want: Vec<f32> = (0..cols * rows).map(|i| input[(i % rows) * cols + i / rows]).collect();
    check("transpose", &got, &want, |g, w| g == w)?;
    println!("transpose: {rows}×{cols} → {cols}×{rows}, all {} elements equal to the CPU's", rows * cols);
    Ok(())
}

//! 01: the first kernel: `out[i] = a[i] + b[i]` (`my_kernels::vector_add`).
//!
//! `cargo run --example 01_vector_add`. Every example runs on a GPU, or on the CPU device where
//! there is none (saying so on its first line; `COHORT_DEVICE=gpu` refuses that, `=cpu` asks
//! for it), checks the device's result against the same computation on the CPU, prints it, and
//! exits with 0 (checked), 1 (an error or a wrong result) or 2 (a GPU was asked for and there
//! is none).

use std::process::ExitCode;

use cohort_runtime::LaunchConfig;
use my_app::{Result, check, exit_code};

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    let n = 1_000_000;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();

    let gpu = my_app::device()?; // a GPU (COHORT_DEVICE=<ordinal> picks it), else the CPU device
    let module = gpu.load(&my_kernels::PTX)?; // the PTX built for this GPU's architecture
    let add = my_kernels::vector_add::load(&module)?; // the typed launcher #[kernel] made

    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?); // host → device
    let mut out = gpu.zeroed::<f32>(n)?;
    // One thread per element: ⌈n / 256⌉ blocks of 256 threads. The arguments are checked by
    // rustc against the kernel's parameters: (&[f32], &[f32], DisjointSlice<f32>).
    add.launch(gpu.stream(), LaunchConfig::for_elements(n, 256), &da, &db, &mut out)?;
    let got = out.to_vec()?; // device → host; waits for the kernel

    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    check("vector_add", &got, &want, |g, w| g == w)?;
    println!("vector_add: {n} sums, all equal to the CPU's (out[12345] = {})", got[12345]);
    Ok(())
}

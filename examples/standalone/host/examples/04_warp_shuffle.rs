//! 04: warp shuffles: a prefix sum within each warp of 32 threads, each step a `shfl_up`
//! (`my_kernels::warp::warp_scan`).
//!
//! `cargo run --example 04_warp_shuffle`

use std::process::ExitCode;

use cohort_runtime::LaunchConfig;
use my_app::{Result, check, exit_code};
use my_kernels::warp::warp_scan;

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    let n = 100_000;
    let data: Vec<u32> = (0..n as u32).map(|i| i % 7 + i % 13).collect();

    let gpu = my_app::device()?;
    let module = gpu.load(&my_kernels::PTX)?;
    let k = warp_scan::load(&module)?;
    let d = gpu.upload(&data)?;
    let mut out = gpu.zeroed::<u32>(n)?;
    // Blocks of 256 threads are 8 warps; warp w holds elements 32w .. 32w + 31.
    k.launch(gpu.stream(), LaunchConfig::for_elements(n, 256), &d, &mut out)?;
    let got = out.to_vec()?;

    let mut want = Vec::with_capacity(n);
    for warp in data.chunks(32) {
        let mut acc = 0;
        want.extend(warp.iter().map(|&v| {
            acc += v;
            acc
        }));
    }
    check("warp scan", &got, &want, |g, w| g == w)?;
    println!("warp_scan: {n} prefix sums in warps of 32, all equal to the CPU's; first warp ends at {}", got[31]);
    Ok(())
}

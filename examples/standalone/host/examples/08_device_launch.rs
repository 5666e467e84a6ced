//! 08: a kernel that launches a kernel: `max_then_scale` finds the maximum, then launches
//! `scale_to_max` from the GPU as a tail launch, which runs once the whole parent grid is done
//! (`my_launching_kernels`). The host launches once.
//!
//! Such a module is linked with the CUDA device runtime (`libcudadevrt.a`) when it is loaded:
//! build with `COHORT_CUDADEVRT=/path/to/libcudadevrt.a` (the README says where to get it);
//! without it, loading is an error that says so.
//!
//! `cargo run --example 08_device_launch`

use std::process::ExitCode;

use cohort_runtime::LaunchConfig;
use my_app::{Result, check, exit_code};
use my_launching_kernels::max_then_scale;

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    let n = 500_000;
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 12).collect();

    let gpu = my_app::device()?;
    let module = gpu.load(&my_launching_kernels::PTX)?; // linked with libcudadevrt here
    let k = max_then_scale::load(&module)?;
    let d = gpu.upload(&data)?;
    let mut max = gpu.zeroed::<u32>(1)?;
    let mut out = gpu.zeroed::<u32>(n)?;
    let mut status = gpu.zeroed::<u32>(1)?;
    k.launch(gpu.stream(), LaunchConfig::for_elements(n, 256), &d, &mut max, &mut out, &mut status)?;
    // The host's launch is complete only when its children are: `to_vec` waits for both.
    let got = out.to_vec()?;
    if status.to_vec()?[0] != 1 {
        return Err("the device runtime refused the child launch".into());
    }

    let m = *data.iter().max().expect("data") as u64;
    let want: Vec<u32> = data.iter().map(|&v| (v as u64 * 1000 / m) as u32).collect();
    check("device launch", &got, &want, |g, w| g == w)?;
    println!("max_then_scale: max {m}, child grid launched from the device, all {n} results equal to the CPU's");
    Ok(())
}

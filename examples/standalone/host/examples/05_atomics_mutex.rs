//! 05: atomics and the device mutex: a byte histogram with atomic adds
//! (`my_kernels::atomics::histogram`), and a dot product whose blocks add their sums to one
//! number under a mutex (`my_kernels::atomics::dot`).
//!
//! `cargo run --example 05_atomics_mutex`

use std::process::ExitCode;

use cohort_runtime::LaunchConfig;
use my_app::{Result, check, exit_code};
use my_kernels::atomics::{dot, histogram};

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    let gpu = my_app::device()?;
    let module = gpu.load(&my_kernels::PTX)?;
    // A fixed grid that loops over the data (grid-stride).
    let cfg = LaunchConfig::new(128, 256);

    // Histogram: `&[AtomicU32]` in the kernel, a `&mut DeviceBuffer<u32>` here.
    let bytes: Vec<u8> = (0..10_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let d = gpu.upload(&bytes)?;
    let mut bins = gpu.zeroed::<u32>(256)?;
    histogram::load(&module)?.launch(gpu.stream(), cfg, &d, &mut bins)?;
    let got = bins.to_vec()?;
    let mut want = vec![0u32; 256];
    for &b in &bytes {
        want[b as usize] += 1;
    }
    check("histogram", &got, &want, |g, w| g == w)?;
    println!("histogram: {} bytes into 256 bins, every bin equal to the CPU's (bin 0: {})", bytes.len(), got[0]);

    // Dot product: the mutex is a `&mut DeviceBuffer<u32>` of zeros (0 = unlocked).
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| (i % 100) as f32 / 100.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 37) as f32 / 37.0).collect();
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut mutex = gpu.zeroed::<u32>(1)?;
    let mut total = gpu.zeroed::<f32>(1)?;
    dot::load(&module)?.launch(gpu.stream(), cfg, &mut mutex, &da, &db, &mut total)?;
    let got = total.to_vec()?[0] as f64;
    let want: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
    // f32 sums in another order than the CPU's: equal to about 1e-6, relatively.
    if (got - want).abs() > 1e-4 * want.abs() {
        return Err(format!("dot: {got}, expected {want} (the CPU's, in f64)").into());
    }
    println!("dot: {got} (CPU, in f64: {want:.1}; relative difference {:.1e})", (got - want).abs() / want);
    Ok(())
}

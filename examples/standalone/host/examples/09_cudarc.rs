//! 09: your kernels on memory another library owns — cudarc's, the crate candle, burn's CUDA
//! backend and most Rust CUDA code are built on (a candle tensor's CUDA storage is a
//! `CudaSlice` on its device's `CudaStream`: the same calls apply to it). No copies: a Cohort
//! kernel runs on a cudarc `CudaSlice` on cudarc's stream, and a Cohort buffer is lent to cudarc
//! code; each side's stream-ordered record is kept across the boundary.
//!
//! GPU-only: cudarc needs a CUDA driver (the CPU device has no cudarc side). Without a GPU it
//! says so on its first line and exits 0.
//!
//! `cargo run --example 09_cudarc`

use std::process::ExitCode;

use cohort_runtime::cudarc::driver::CudaContext;
use cohort_runtime::interop::{AsCohort, AsCohortMut};
use cohort_runtime::{Gpu, LaunchConfig, StreamOptions};
use my_app::{Result, check, exit_code};
use my_kernels::vector_add;

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    let wants_cpu = std::env::var("COHORT_DEVICE").is_ok_and(|d| d.trim().eq_ignore_ascii_case("cpu"));
    if wants_cpu || !Gpu::available() {
        println!(
            "GPU-only example: cudarc needs a CUDA driver and a GPU (none here, or COHORT_DEVICE=cpu); nothing to run"
        );
        return if std::env::var("COHORT_DEVICE").is_ok_and(|d| d.trim().eq_ignore_ascii_case("gpu")) {
            Err(Box::new(cohort_runtime::Error::NoDriver))
        } else {
            Ok(())
        };
    }
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();

    // cudarc's side: a context, a stream, memory on it (candle: `device.cuda_stream()`, and a
    // tensor's `CudaStorage::as_cuda_slice::<f32>()`).
    let ctx = CudaContext::new(Gpu::default_ordinal()?)?;
    let cs = ctx.new_stream()?;
    let da = cs.clone_htod(&a)?;
    let db = cs.clone_htod(&b)?;
    let mut dout = cs.alloc_zeros::<f32>(n)?;

    // Cohort on the same context and stream.
    let gpu = Gpu::from_cudarc(&ctx)?;
    println!("GPU: {}", gpu.info().name);
    let stream = gpu.cudarc_stream(&cs)?;
    let module = gpu.load(&my_kernels::PTX)?;
    let add = vector_add::load(&module)?;
    add.launch(&stream, LaunchConfig::for_elements(n, 256), da.cohort(), db.cohort(), dout.cohort_mut())?;
    // cudarc reads the result in stream order (its copy waits for the kernel's write).
    let got = cs.clone_dtoh(&dout)?;
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    check("vector_add on cudarc's memory", &got, &want, |g, w| g == w)?;

    // The other way: a Cohort buffer written by a kernel on another Cohort stream, then lent to
    // cudarc, which copies it into its own memory (after the kernel: the lend waits for it).
    let other = gpu.new_stream_with(StreamOptions::new().non_blocking(true))?;
    let (x, y) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut sum = gpu.zeroed::<f32>(n)?;
    add.launch(&other, LaunchConfig::for_elements(n, 256), &x, &y, &mut sum)?;
    let mut copy = cs.alloc_zeros::<f32>(n)?;
    sum.with_cudarc(&stream, |view, s| s.memcpy_dtod(&view, &mut copy))??;
    check("a Cohort buffer copied by cudarc", &cs.clone_dtoh(&copy)?, &want, |g, w| g == w)?;
    println!(
        "cudarc: {n} sums by a Cohort kernel on cudarc's memory, and a Cohort buffer copied by cudarc, all equal to the CPU's"
    );
    Ok(())
}

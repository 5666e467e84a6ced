//! 07: streams, pinned memory and asynchronous copies: an array in pinned host memory goes to
//! the GPU, through a kernel and back in chunks, each chunk on its own stream, so that one
//! chunk's copies overlap another's kernel (`my_kernels::streams::scale_add_one`).
//!
//! `cargo run --example 07_streams`

use std::process::ExitCode;
use std::time::Instant;

use cohort_runtime::{LaunchConfig, Stream, StreamOptions};
use my_app::{Result, check, exit_code};
use my_kernels::streams::scale_add_one;

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    const STREAMS: usize = 4;
    let n = 1 << 24; // 64 MiB of f32
    let data: Vec<f32> = (0..n).map(|i| (i % 4096) as f32).collect();

    let gpu = my_app::device()?;
    let module = gpu.load(&my_kernels::PTX)?;
    let k = scale_add_one::load(&module)?;
    let streams: Vec<Stream> = (0..STREAMS)
        .map(|_| gpu.new_stream_with(StreamOptions::new().non_blocking(true)))
        .collect::<cohort_runtime::Result<_>>()?;
    let mut host = gpu.pinned_from(&data)?; // page-locked: copies from it are asynchronous
    let mut dev = gpu.zeroed::<f32>(n)?;

    let t = Instant::now();
    let chunk = n / STREAMS;
    for (i, s) in streams.iter().enumerate() {
        let r = i * chunk..(i + 1) * chunk;
        s.copy(host.slice(r.clone()), dev.slice_mut(r.clone()))?; // H2D, returns at once
        k.launch(s, LaunchConfig::for_elements(chunk, 256), dev.slice_mut(r.clone()), 2.0f32)?;
        s.copy(dev.slice(r.clone()), host.slice_mut(r))?; // D2H
    }
    // Reading the pinned buffer waits for the copies into it (stream-ordered safety: the host
    // cannot see it before they are done).
    let got = host.as_slice()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;

    let want: Vec<f32> = data.iter().map(|&v| v * 2.0 + 1.0).collect();
    check("streams", got, &want, |g, w| g == w)?;
    println!("streams: {n} elements in {STREAMS} chunks on {STREAMS} streams in {ms:.2} ms, all equal to the CPU's");
    Ok(())
}

//! `cohort pipeline`: the overlap article's kernel over a host array of several GiB through
//! [`cohort_runtime::Pipeline`] — chunks uploaded, processed and downloaded on several streams,
//! through double-buffered pinned staging ([`Pipeline::run`]) or, with `--pinned`, straight from
//! and into pinned arrays ([`Pipeline::run_pinned`]) — with a progress bar, every element
//! checked against the CPU, and the throughput set beside the transfer bound measured in the
//! same process.

use cohort_kernels::PTX;
use cohort_kernels::overlap::overlap_add_to;
use cohort_runtime::{Event, Gpu, LaunchConfig, Pipeline, PipelineStats};
use indicatif::{ProgressBar, ProgressStyle};

use crate::overlap::{BLOCK, TOLERANCE, initial, par_fill, par_max, within_tolerance};
use crate::util::{self, CliError, CliResult};

/// Pinned-memory copy bandwidth each way, GB/s: median of 5 copies of `bytes`.
fn transfer_gbs(gpu: &Gpu, bytes: usize) -> cohort_runtime::Result<(f64, f64)> {
    let n = bytes / 4;
    let mut host = gpu.pinned::<f32>(n)?;
    let mut dev = gpu.zeroed::<f32>(n)?;
    let s = gpu.new_stream()?;
    let (a, b) = (Event::new(gpu)?, Event::new(gpu)?);
    let mut each = |up: bool| -> cohort_runtime::Result<f64> {
        let mut t = Vec::new();
        for r in 0..6 {
            a.record(&s)?;
            if up {
                s.copy(&host, &mut dev)?
            } else {
                s.copy(&dev, &mut host)?
            }
            b.record(&s)?;
            b.synchronize()?;
            if r > 0 {
                t.push(bytes as f64 / f64::from(b.elapsed_ms_since(&a)?) / 1e6);
            }
        }
        Ok(util::median(&mut t))
    };
    let h2d = each(true)?;
    let d2h = each(false)?;
    Ok((h2d, d2h))
}

/// A progress bar over `bytes` bytes.
fn progress_bar(bytes: u64) -> CliResult<ProgressBar> {
    let bar = ProgressBar::new(bytes);
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40.cyan/blue}] {bytes}/{total_bytes} ({binary_bytes_per_sec}, eta {eta})",
        )
        .map_err(|e| CliError::Failed(e.to_string()))?
        .progress_chars("=> "),
    );
    Ok(bar)
}

/// `max |output - CPU|` over every element, on every core.
fn max_error(input: &[f32], output: &[f32]) -> f32 {
    par_max(input.len(), |i| {
        let x = i as u32 as f32;
        let (s, c) = x.sin_cos();
        output[i] - (input[i] + s.mul_add(s, c * c).sqrt())
    })
}

/// `cohort pipeline`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// GiB of f32 through the pipeline (and as much back)
    #[arg(long, default_value = "2", value_parser = util::parse_positive)]
    pub gib: usize,
    /// Streams (chunks in flight)
    #[arg(long, default_value = "4", value_parser = util::parse_positive)]
    pub streams: usize,
    /// MiB per chunk
    #[arg(long, default_value = "16", value_parser = util::parse_positive)]
    pub chunk_mib: usize,
    /// Host threads copying between the arrays and the pinned staging [default: the Pipeline's]
    #[arg(long, value_parser = util::parse_usize)]
    pub host_threads: Option<usize>,
    /// From and into pinned arrays (`run_pinned`: no staging, no host copies)
    #[arg(long)]
    pub pinned: bool,
}

pub fn run(args: Args) -> CliResult {
    let Args { gib, streams, chunk_mib, host_threads, pinned } = args;
    let n = (gib << 30) / 4;
    let chunk = (chunk_mib << 20) / 4;
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let kernel = overlap_add_to::load(&module)?;
    let mut pipe = Pipeline::<f32, f32>::new(&gpu, streams, chunk)?;
    if let Some(t) = host_threads {
        pipe = pipe.host_threads(t);
    }
    let how = if pinned {
        "from and into pinned arrays (run_pinned: no staging, no host copies)".to_string()
    } else {
        format!("pageable arrays through {} MiB of pinned staging (run)", pipe.pinned_bytes() >> 20)
    };
    println!(
        "{gib} GiB of f32 in, {gib} GiB out, {how}: {streams} streams, chunks of {chunk_mib} MiB; {} MiB on the \
         device; {pipe:?}",
        pipe.device_bytes() >> 20,
    );

    // The bound: pinned copies of 256 MiB (or the array) each way, alone.
    let probe = (256 << 20).min(n * 4);
    let (h2d_gbs, d2h_gbs) = transfer_gbs(&gpu, probe)?;
    let bytes = (n * 4) as f64;
    let bound_s = (bytes / (h2d_gbs * 1e9)).max(bytes / (d2h_gbs * 1e9));

    let launch = |s: &cohort_runtime::Stream,
                  i: cohort_runtime::DeviceView<'_, f32>,
                  o: cohort_runtime::DeviceViewMut<'_, f32>,
                  c: cohort_runtime::Chunk| {
        // `x` wraps at 2^32 elements (16 GiB), as the article's `int` would overflow sooner.
        kernel.launch(s, LaunchConfig::for_elements(c.len, BLOCK), i, o, c.start as u32)
    };
    // Warm-up (module, streams, staging and copy threads) on the first chunks, untimed.
    let warm = n.min(2 * streams * chunk);

    // The host arrays: the input, and the output written once now (so that the run does not
    // pay for first-touch page faults), with NaN to show any element the run leaves unwritten.
    let (stats, err): (PipelineStats, f32) = if pinned {
        let mut input = gpu.pinned::<f32>(n)?;
        par_fill(input.as_mut_slice()?, initial);
        let mut output = gpu.pinned::<f32>(n)?;
        par_fill(output.as_mut_slice()?, |_| f32::NAN);
        let warm_in = gpu.pinned_from(&input.as_slice()?[..warm])?;
        let mut warm_out = gpu.pinned::<f32>(warm)?;
        pipe.run_pinned(&warm_in, &mut warm_out, launch)?;
        let bar = progress_bar(bytes as u64)?;
        let show = |done: usize, _: usize| bar.set_position(done as u64 * 4);
        let stats = pipe.run_pinned_with_progress(&input, &mut output, launch, show)?;
        bar.finish_and_clear();
        (stats, max_error(input.as_slice()?, output.as_slice()?))
    } else {
        let mut input = vec![0.0f32; n];
        par_fill(&mut input, initial);
        let mut output = vec![0.0f32; n];
        par_fill(&mut output, |_| f32::NAN);
        pipe.run(&input[..warm], &mut output[..warm], launch)?;
        par_fill(&mut output[..warm], |_| f32::NAN);
        let bar = progress_bar(bytes as u64)?;
        let show = |done: usize, _: usize| bar.set_position(done as u64 * 4);
        let stats = pipe.run_with_progress(&input, &mut output, launch, show)?;
        bar.finish_and_clear();
        (stats, max_error(&input, &output))
    };

    let secs = stats.elapsed.as_secs_f64();
    let path = if pinned { "run_pinned" } else { "run (staged)" };
    println!("{path}: {} chunks in {secs:.3} s: {:.2} GB/s in (and out)", stats.chunks, stats.input_gbs());
    println!(
        "bound, measured here: H2D {h2d_gbs:.2} GB/s, D2H {d2h_gbs:.2} GB/s (pinned, {} MiB alone) → {:.3} s; the \
         pipeline ran at {:.0}% of it",
        probe >> 20,
        bound_s,
        100.0 * bound_s / secs
    );
    if pinned {
        println!(
            "host: no copies (the copy engines read and write the pinned arrays), {:.3} s waiting for the GPU",
            stats.gpu_wait.as_secs_f64()
        );
    } else {
        let copy_s = stats.host_copy.as_secs_f64();
        println!(
            "host: {copy_s:.3} s copying to and from staging ({:.1} GB/s on {} threads), {:.3} s waiting for the GPU",
            2.0 * bytes / copy_s.max(1e-9) / 1e9,
            pipe.host_thread_count(),
            stats.gpu_wait.as_secs_f64()
        );
    }
    println!("every element checked against the CPU: max |GPU - CPU| = {err:.2e}");
    if !within_tolerance(f64::from(err)) {
        return Err(CliError::Failed(format!("max error {err:e} against the CPU, above {TOLERANCE:e}")));
    }
    Ok(())
}

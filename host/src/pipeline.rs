//! `cohort pipeline`: the overlap article's kernel over a host array of several GiB through
//! [`cohort_runtime::Pipeline`] — chunks uploaded, processed and downloaded on several streams
//! through double-buffered pinned staging — with a progress bar, every element checked against
//! the CPU, and the throughput set beside the transfer bound measured in the same process.

use cohort_kernels::PTX;
use cohort_kernels::overlap::overlap_add_to;
use cohort_runtime::{Event, Gpu, LaunchConfig, Pipeline};
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

pub fn run(args: &[String]) -> CliResult {
    util::check_args(args, &["--gib", "--streams", "--chunk-mib", "--host-threads"])?;
    let gib = util::opt_num(args, "--gib", 2)? as usize;
    let streams = util::opt_num(args, "--streams", 4)? as usize;
    let chunk_mib = util::opt_num(args, "--chunk-mib", 16)? as usize;
    if gib == 0 || streams == 0 || chunk_mib == 0 {
        return Err(CliError::Usage("--gib, --streams and --chunk-mib must be at least 1".into()));
    }
    let n = (gib << 30) / 4;
    let chunk = (chunk_mib << 20) / 4;
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let kernel = overlap_add_to::load(&module)?;
    let mut pipe = Pipeline::<f32, f32>::new(&gpu, streams, chunk)?;
    if args.iter().any(|a| a == "--host-threads") {
        pipe = pipe.host_threads(util::opt_num(args, "--host-threads", 1)? as usize);
    }
    println!(
        "{gib} GiB of f32 in, {gib} GiB out: {streams} streams, chunks of {chunk_mib} MiB; {} MiB on the device, {} \
         MiB pinned staging; {pipe:?}",
        pipe.device_bytes() >> 20,
        pipe.pinned_bytes() >> 20
    );

    // The host arrays: the input, and the output written once now (so that the run does not
    // pay for first-touch page faults), with NaN to show any element the run leaves unwritten.
    let mut input = vec![0.0f32; n];
    par_fill(&mut input, initial);
    let mut output = vec![0.0f32; n];
    par_fill(&mut output, |_| f32::NAN);

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
    // Warm up (module, streams, threads) on the first chunks, untimed.
    let warm = n.min(2 * streams * chunk);
    pipe.run(&input[..warm], &mut output[..warm], launch)?;
    par_fill(&mut output[..warm], |_| f32::NAN);

    let bar = ProgressBar::new(bytes as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40.cyan/blue}] {bytes}/{total_bytes} ({binary_bytes_per_sec}, eta {eta})",
        )
        .map_err(|e| CliError::Failed(e.to_string()))?
        .progress_chars("=> "),
    );
    let stats = pipe.run_with_progress(&input, &mut output, launch, |done, _| bar.set_position(done as u64 * 4))?;
    bar.finish_and_clear();

    let err = par_max(n, |i| {
        let x = i as u32 as f32;
        let (s, c) = x.sin_cos();
        output[i] - (input[i] + s.mul_add(s, c * c).sqrt())
    });
    let secs = stats.elapsed.as_secs_f64();
    println!("{} chunks in {:.3} s: {:.2} GB/s in (and out)", stats.chunks, secs, stats.input_gbs());
    println!(
        "bound, measured here: H2D {h2d_gbs:.2} GB/s, D2H {d2h_gbs:.2} GB/s (pinned, {} MiB alone) → {:.3} s; the \
         pipeline ran at {:.0}% of it",
        probe >> 20,
        bound_s,
        100.0 * bound_s / secs
    );
    println!(
        "host: {:.3} s copying to and from staging ({:.1} GB/s), {:.3} s waiting for the GPU",
        stats.host_copy.as_secs_f64(),
        2.0 * bytes / stats.host_copy.as_secs_f64().max(1e-9) / 1e9,
        stats.gpu_wait.as_secs_f64()
    );
    println!("every element checked against the CPU: max |GPU - CPU| = {err:.2e}");
    if !within_tolerance(f64::from(err)) {
        return Err(CliError::Failed(format!("max error {err:e} against the CPU, above {TOLERANCE:e}")));
    }
    Ok(())
}

//! `cohort bench atomics`: the atomics workloads, Rust vs their CUDA C++ twins (same algorithm,
//! launch configuration and buffers), and Cohort's histogram across its variants; `--dump DIR`
//! writes the two histogram inputs for `host/benches/cub_bench.cu` (CUB's DeviceHistogram).

use cohort_kernels::PTX;
use cohort_kernels::atomics::{self as k, BINS};
use cohort_runtime::LaunchConfig;

use super::{TwinsArgs, cuda_twins, launch_twin};
use crate::atomics::launch_histogram_on;
use crate::timing::{Phase, median_ms, paired_ms};
use crate::util::{self, CliError, CliResult, Table};
use cohort_host::corpus;
use cohort_host::reference::{dot_close, dot_inputs};

/// `cohort bench atomics`' options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bytes of each generated histogram input (k, M, G suffixes)
    #[arg(long, default_value = "1G", value_parser = util::parse_positive)]
    pub size: usize,
    /// Timed runs per benchmark (the median is reported; 3 for global atomics)
    #[arg(long, default_value = "10", value_parser = util::parse_positive)]
    pub reps: usize,
    #[command(flatten)]
    pub twins: TwinsArgs,
    /// Write the two histogram inputs (text.bin, uniform.bin) into DIR for host/benches/cub_bench.cu
    #[arg(long, value_name = "DIR")]
    pub dump: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> CliResult {
    let Args { size, reps, twins, dump } = args;
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let (twins, how) = cuda_twins(&gpu, &twins)?;
    println!(
        "CUDA C++ twins: {how}; {reps} runs (3 for global atomics) of each, Rust and C++ interleaved in pairs \
         (medians; the ratio is the median of the pairs' ratios, with its quartiles)\n"
    );
    let s = gpu.stream();
    let inputs = [("text-like", corpus::text_like(size, 0xa11ce)), ("uniform", corpus::uniform(size, 0x0417))];
    if let Some(dir) = dump {
        for (name, data) in &inputs {
            let file = dir.join(if *name == "uniform" { "uniform.bin" } else { "text.bin" });
            std::fs::write(&file, data).map_err(|e| CliError::Failed(format!("{}: {e}", file.display())))?;
        }
        println!("wrote {0}/text.bin and {0}/uniform.bin for cub_bench\n", dir.display());
    }
    let mut t = Table::new(&["benchmark", "input", "Rust (Cohort)", "CUDA C++", "Rust / C++ (speed) [quartiles]"])
        .numeric(2..5);
    let mut lib = Table::new(&["Cohort's histogram", "input", "copies/warp", "blocks", "GB/s"]).numeric(2..5);
    let (mut bins, mut bins_cpp) = (gpu.zeroed::<u32>(BINS)?, gpu.zeroed::<u32>(BINS)?);
    let sms = gpu.info().sms;
    for (name, data) in &inputs {
        let want = corpus::histogram_1t(data);
        let check = |got: Vec<u32>, who: &str| -> CliResult {
            if got.iter().zip(&want).any(|(&g, &w)| g as u64 != w) {
                return Err(CliError::Failed(format!("{who} on {name}: bins differ from the CPU")));
            }
            Ok(())
        };
        let dt = gpu.upload(data)?;
        let (d_ptr, d_len, b_ptr) = (dt.as_device_ptr().addr(), dt.len() as u64, bins_cpp.as_device_ptr().addr());
        for (which, kname, cname, blocks) in [
            (0u32, "histogram, global atomics", "cpp_histogram_global", 8 * sms),
            (1, "histogram, shared privatized", "cpp_histogram_shared", 8 * sms),
        ] {
            let cfg = LaunchConfig::new(blocks, 256);
            let r = if which == 0 { 3 } else { reps };
            let f = twins.function(cname, false)?;
            let pair = paired_ms(
                &gpu,
                1,
                r,
                |p| match p {
                    Phase::Prep => bins.fill_zero(),
                    Phase::Run => launch_histogram_on(&module, s, which, cfg, 1, &dt, &mut bins),
                },
                |p| match p {
                    Phase::Prep => bins_cpp.fill_zero(),
                    // SAFETY: (const unsigned char*, size, unsigned*, size) as the twin declares;
                    // the buffers outlive the launch.
                    Phase::Run => unsafe { launch_twin(&f, s, cfg, [d_ptr, d_len, b_ptr, 128]) },
                },
            )?;
            check(bins.to_vec()?, kname)?;
            check(bins_cpp.to_vec()?, cname)?;
            t.row(vec![
                format!("{kname} ({blocks} x 256)"),
                name.to_string(),
                format!("{:.0} GB/s", size as f64 / pair.a / 1e6),
                format!("{:.0} GB/s", size as f64 / pair.b / 1e6),
                pair.ratio_text(),
            ]);
        }
        for copies in [1u32, 2, 4, 8] {
            for blocks in [2 * sms, 4 * sms, 8 * sms] {
                let cfg = LaunchConfig::new(blocks, 256);
                let ms = median_ms(&gpu, 1, reps, |p| match p {
                    Phase::Prep => bins.fill_zero(),
                    Phase::Run => launch_histogram_on(&module, s, 2, cfg, copies, &dt, &mut bins),
                })?;
                check(bins.to_vec()?, "Cohort's histogram")?;
                lib.row(vec![
                    "histogram_lib".into(),
                    name.to_string(),
                    copies.to_string(),
                    blocks.to_string(),
                    format!("{:.0}", size as f64 / ms / 1e6),
                ]);
            }
        }
    }

    // Dot products (10M, 640 x 256).
    let n = 10_000_000usize;
    let d = dot_inputs(n);
    let (da, db) = (gpu.upload(&d.a)?, gpu.upload(&d.b)?);
    let cfg = LaunchConfig::new(640, 256);
    let mut partial = gpu.zeroed::<f32>(640)?;
    let mut lock = gpu.zeroed::<u32>(1)?;
    let mut c = gpu.zeroed::<f32>(1)?;
    let kp = k::dot_partial::load(&module)?;
    let km = k::dot_mutex::load(&module)?;
    let kb = k::dot_mutex_backoff::load(&module)?;
    let (a_ptr, b_ptr, nn) = (da.as_device_ptr().addr(), db.as_device_ptr().addr(), n as u64);
    let (mut partial_cpp, lock_cpp, mut c_cpp) =
        (gpu.zeroed::<f32>(640)?, gpu.zeroed::<u32>(1)?, gpu.zeroed::<f32>(1)?);
    let (p_ptr, l_ptr, c_ptr) =
        (partial_cpp.as_device_ptr().addr(), lock_cpp.as_device_ptr().addr(), c_cpp.as_device_ptr().addr());
    let fp = twins.function("cpp_dot_partial", false)?;
    let fm = twins.function("cpp_dot_mutex", false)?;
    let close = |v: f64, who: &str| -> CliResult {
        if dot_close(v, &d, 640 * 256, 640).0 {
            Ok(())
        } else {
            Err(CliError::Failed(format!("{who}: {v} vs {}", d.exact)))
        }
    };
    let partial_sum =
        |b: &cohort_runtime::DeviceBuffer<f32>| -> CliResult<f64> { Ok(b.to_vec()?.iter().map(|&v| v as f64).sum()) };
    let pair_p = paired_ms(
        &gpu,
        3,
        reps,
        |p| match p {
            Phase::Prep => Ok(()),
            Phase::Run => kp.launch(s, cfg, &da, &db, &mut partial),
        },
        |p| match p {
            Phase::Prep => partial_cpp.fill_zero(),
            // SAFETY: (const float*, size, const float*, size, float*, size) as the twin
            // declares; the buffers outlive the launch.
            Phase::Run => unsafe { launch_twin(&fp, s, cfg, [a_ptr, nn, b_ptr, nn, p_ptr, 640]) },
        },
    )?;
    close(partial_sum(&partial)?, "Rust dot_partial")?;
    close(partial_sum(&partial_cpp)?, "C++ dot_partial")?;
    // The mutex kernels, plain and with backoff, each against the C++ mutex twin.
    let mut mutex_pairs = Vec::new();
    for backoff in [false, true] {
        let pair = paired_ms(
            &gpu,
            3,
            reps,
            |p| match p {
                Phase::Prep => c.fill_zero(),
                Phase::Run if backoff => kb.launch(s, cfg, &mut lock, &da, &db, &mut c),
                Phase::Run => km.launch(s, cfg, &mut lock, &da, &db, &mut c),
            },
            |p| match p {
                Phase::Prep => c_cpp.fill_zero(),
                // SAFETY: the twin's (int*, size, const float*, size, const float*, size,
                // float*, size); the buffers outlive the launch.
                Phase::Run => unsafe { launch_twin(&fm, s, cfg, [l_ptr, 1, a_ptr, nn, b_ptr, nn, c_ptr, 1]) },
            },
        )?;
        close(c.to_vec()?[0] as f64, if backoff { "Rust dot_mutex_backoff" } else { "Rust dot_mutex" })?;
        close(c_cpp.to_vec()?[0] as f64, "C++ dot_mutex")?;
        mutex_pairs.push(pair);
    }
    for (name, pair) in [
        ("dot product, partial (640 x 256)", pair_p),
        ("dot product, mutex (640 x 256)", mutex_pairs[0]),
        ("dot product, mutex with backoff (`lock`)", mutex_pairs[1]),
    ] {
        t.row(vec![
            name.into(),
            "10M f32".into(),
            format!("{:.3} ms", pair.a),
            format!("{:.3} ms", pair.b),
            pair.ratio_text(),
        ]);
    }
    lib.print();
    println!();
    t.print();
    println!("\nall results verified against the CPU");
    Ok(())
}

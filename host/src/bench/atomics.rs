//! `cohort bench atomics`: the atomics workloads, Rust vs their CUDA C++ twins (same algorithm,
//! launch configuration and buffers), and Cohort's histogram across its variants; `--dump DIR`
//! writes the two histogram inputs for `host/benches/cub_bench.cu` (CUB's DeviceHistogram).

use cohort_kernels::PTX;
use cohort_kernels::atomics::{self as k, BINS};
use cohort_runtime::LaunchConfig;

use super::{Phase, TwinsArgs, cuda_twins, launch_twin, median_ms};
use crate::atomics::launch_histogram_on;
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
    println!("CUDA C++ twins: {how}; medians of {reps} runs (3 for global atomics)\n");
    let s = gpu.stream();
    let inputs = [("text-like", corpus::text_like(size, 0xa11ce)), ("uniform", corpus::uniform(size, 0x0417))];
    if let Some(dir) = dump {
        for (name, data) in &inputs {
            let file = dir.join(if *name == "uniform" { "uniform.bin" } else { "text.bin" });
            std::fs::write(&file, data).map_err(|e| CliError::Failed(format!("{}: {e}", file.display())))?;
        }
        println!("wrote {0}/text.bin and {0}/uniform.bin for cub_bench\n", dir.display());
    }
    let mut t = Table::new(&["benchmark", "input", "Rust (Cohort)", "CUDA C++", "Rust / C++"]).numeric(2..5);
    let mut lib = Table::new(&["Cohort's histogram", "input", "copies/warp", "blocks", "GB/s"]).numeric(2..5);
    let mut bins = gpu.zeroed::<u32>(BINS)?;
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
        let (d_ptr, d_len, b_ptr) = (dt.as_device_ptr().addr(), dt.len() as u64, bins.as_device_ptr().addr());
        for (which, kname, cname, blocks) in [
            (0u32, "histogram, global atomics", "cpp_histogram_global", 8 * sms),
            (1, "histogram, shared privatized", "cpp_histogram_shared", 8 * sms),
        ] {
            let cfg = LaunchConfig::new(blocks, 256);
            let r = if which == 0 { 3 } else { reps };
            let rust = median_ms(&gpu, 1, r, |p| match p {
                Phase::Prep => bins.fill_zero(),
                Phase::Run => launch_histogram_on(&module, s, which, cfg, 1, &dt, &mut bins),
            })?;
            check(bins.to_vec()?, kname)?;
            let f = twins.function(cname, false)?;
            let cpp = median_ms(&gpu, 1, r, |p| match p {
                Phase::Prep => bins.fill_zero(),
                // SAFETY: (const unsigned char*, size, unsigned*, size) as the twin declares;
                // the buffers outlive the launch.
                Phase::Run => unsafe { launch_twin(&f, s, cfg, [d_ptr, d_len, b_ptr, 128]) },
            })?;
            check(bins.to_vec()?, cname)?;
            let (gr, gc) = (size as f64 / rust / 1e6, size as f64 / cpp / 1e6);
            t.row(vec![
                format!("{kname} ({blocks} x 256)"),
                name.to_string(),
                format!("{gr:.0} GB/s"),
                format!("{gc:.0} GB/s"),
                format!("{:.3}", gr / gc),
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
    let rust_p = median_ms(&gpu, 3, reps, |p| match p {
        Phase::Prep => Ok(()),
        Phase::Run => kp.launch(s, cfg, &da, &db, &mut partial),
    })?;
    let sum: f64 = partial.to_vec()?.iter().map(|&v| v as f64).sum();
    if !dot_close(sum, &d, 640 * 256, 640).0 {
        return Err(CliError::Failed(format!("Rust dot_partial: {sum} vs {}", d.exact)));
    }
    let rust_m = median_ms(&gpu, 3, reps, |p| match p {
        Phase::Prep => c.fill_zero(),
        Phase::Run => km.launch(s, cfg, &mut lock, &da, &db, &mut c),
    })?;
    let v = c.to_vec()?[0] as f64;
    if !dot_close(v, &d, 640 * 256, 640).0 {
        return Err(CliError::Failed(format!("Rust dot_mutex: {v} vs {}", d.exact)));
    }
    let rust_b = median_ms(&gpu, 3, reps, |p| match p {
        Phase::Prep => c.fill_zero(),
        Phase::Run => kb.launch(s, cfg, &mut lock, &da, &db, &mut c),
    })?;
    let v = c.to_vec()?[0] as f64;
    if !dot_close(v, &d, 640 * 256, 640).0 {
        return Err(CliError::Failed(format!("Rust dot_mutex_backoff: {v} vs {}", d.exact)));
    }
    let (a_ptr, b_ptr, nn) = (da.as_device_ptr().addr(), db.as_device_ptr().addr(), n as u64);
    let (p_ptr, l_ptr, c_ptr) = (partial.as_device_ptr().addr(), lock.as_device_ptr().addr(), c.as_device_ptr().addr());
    let fp = twins.function("cpp_dot_partial", false)?;
    let fm = twins.function("cpp_dot_mutex", false)?;
    let cpp_p = median_ms(&gpu, 3, reps, |p| match p {
        Phase::Prep => Ok(()),
        // SAFETY: (const float*, size, const float*, size, float*, size) as the twin declares;
        // the buffers outlive the launch.
        Phase::Run => unsafe { launch_twin(&fp, s, cfg, [a_ptr, nn, b_ptr, nn, p_ptr, 640]) },
    })?;
    let sum: f64 = partial.to_vec()?.iter().map(|&v| v as f64).sum();
    if !dot_close(sum, &d, 640 * 256, 640).0 {
        return Err(CliError::Failed(format!("C++ dot_partial: {sum} vs {}", d.exact)));
    }
    let cpp_m = median_ms(&gpu, 3, reps, |p| match p {
        Phase::Prep => c.fill_zero(),
        // SAFETY: the twin's (int*, size, const float*, size, const float*, size, float*, size);
        // the buffers outlive the launch.
        Phase::Run => unsafe { launch_twin(&fm, s, cfg, [l_ptr, 1, a_ptr, nn, b_ptr, nn, c_ptr, 1]) },
    })?;
    let v = c.to_vec()?[0] as f64;
    if !dot_close(v, &d, 640 * 256, 640).0 {
        return Err(CliError::Failed(format!("C++ dot_mutex: {v} vs {}", d.exact)));
    }
    t.row(vec![
        "dot product, partial (640 x 256)".into(),
        "10M f32".into(),
        format!("{rust_p:.3} ms"),
        format!("{cpp_p:.3} ms"),
        format!("{:.3}", cpp_p / rust_p),
    ]);
    t.row(vec![
        "dot product, mutex (640 x 256)".into(),
        "10M f32".into(),
        format!("{rust_m:.3} ms"),
        format!("{cpp_m:.3} ms"),
        format!("{:.3}", cpp_m / rust_m),
    ]);
    t.row(vec![
        "dot product, mutex with backoff (`lock`)".into(),
        "10M f32".into(),
        format!("{rust_b:.3} ms"),
        format!("{cpp_m:.3} ms"),
        format!("{:.3}", cpp_m / rust_b),
    ]);
    lib.print();
    println!();
    t.print();
    println!("\nall results verified against the CPU");
    Ok(())
}

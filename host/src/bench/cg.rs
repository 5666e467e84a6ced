//! `cohort bench cg`: cooperative-groups kernels, Rust vs CUDA C++ (same algorithm, same launch
//! configuration), event-timed in interleaved pairs (`paired_ms`): medians, and the median of
//! the pairs' ratios with its quartiles.

use cohort_kernels::PTX;
use cohort_kernels::bench::{self as k, U32x4};
use cohort_runtime::{DeviceBuffer, LaunchConfig};
use rand::{Rng, SeedableRng};

use super::{TwinsArgs, cuda_twins, launch_twin};
use crate::timing::{Paired, Phase, paired_ms};
use crate::util::{self, CliError, CliResult, Table};

struct Row {
    name: String,
    /// Rust (`a`) against C++ (`b`), milliseconds per run.
    t: Paired,
    /// Runs' milliseconds are multiplied by this for the report (grid sync: µs per sync).
    scale: f64,
    unit: &'static str,
    /// Bytes per run, to turn ms into GB/s (0: report time).
    bytes: f64,
}

/// `cohort bench cg`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// u32 elements reduced and scanned (a multiple of 1024, at least 1M)
    #[arg(long, default_value = "256M", value_parser = util::parse_usize)]
    pub n: usize,
    /// Timed runs per benchmark (the median is reported)
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub reps: usize,
    #[command(flatten)]
    pub twins: TwinsArgs,
}

pub fn run(args: Args) -> CliResult {
    let Args { n, reps, twins } = args;
    if n < 1 << 20 || n % 1024 != 0 {
        return Err(CliError::Usage("--n must be a multiple of 1024, at least 1M".into()));
    }
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let (twins, how) = cuda_twins(&gpu, &twins)?;
    println!(
        "CUDA C++ twins: {how}; {n} u32 ({:.2} GiB); {reps} runs each, Rust and C++ interleaved in pairs \
         (medians; the ratio is the median of the pairs' ratios, with its quartiles)\n",
        (n * 4) as f64 / (1u64 << 30) as f64
    );

    let mut r = rand::rngs::StdRng::seed_from_u64(7);
    let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let want = data.iter().fold(0u32, |a, &v| a.wrapping_add(v));
    let d = gpu.upload(&data)?;
    let quads: Vec<U32x4> = data.as_chunks::<4>().0.iter().map(|c| U32x4(*c)).collect();
    let d4 = gpu.upload(&quads)?;
    let (mut total, mut total_cpp) = (gpu.zeroed::<u32>(1)?, gpu.zeroed::<u32>(1)?);
    let s = gpu.stream();
    let mut rows = Vec::new();

    // Reductions: one persistent grid for both, as many blocks of 256 as both can hold.
    let rs = k::bench_reduce_u32::load(&module)?;
    let rv = k::bench_reduce_u32_vec4::load(&module)?;
    let cs = twins.function("cpp_reduce_u32", false)?;
    let cv = twins.function("cpp_reduce_u32_vec4", false)?;
    let per_sm = [rs.function(), rv.function(), &cs, &cv]
        .iter()
        .map(|f| f.max_active_blocks_per_sm(256, 0))
        .collect::<cohort_runtime::Result<Vec<_>>>()?
        .into_iter()
        .min()
        .unwrap_or(1)
        .max(1);
    let cfg = LaunchConfig::new(per_sm * gpu.info().sms, 256);
    println!("reductions: {cfg} ({per_sm} blocks per SM)");
    let check = |t: &DeviceBuffer<u32>, who: &str| -> CliResult {
        let got = t.to_vec()?[0];
        if got != want {
            return Err(CliError::Failed(format!("{who}: sum {got}, CPU says {want}")));
        }
        Ok(())
    };
    let t_ptr = total_cpp.as_device_ptr().addr();
    let cpp_launch = |f: &cohort_runtime::Function, data: u64, len: u64| -> cohort_runtime::Result<()> {
        // SAFETY: the twin's parameters are (const unsigned*, size, unsigned*, size); the
        // buffers outlive the launch.
        unsafe { launch_twin(f, s, cfg, [data, len, t_ptr, 1]) }
    };
    let (d_ptr, d_len) = (d.as_device_ptr().addr(), d.len() as u64);
    let (q_ptr, q_len) = (d4.as_device_ptr().addr(), d4.len() as u64);

    let t = paired_ms(
        &gpu,
        3,
        reps,
        |p| match p {
            Phase::Prep => total.fill_zero(),
            Phase::Run => rs.launch(s, cfg, &d, &mut total),
        },
        |p| match p {
            Phase::Prep => total_cpp.fill_zero(),
            Phase::Run => cpp_launch(&cs, d_ptr, d_len),
        },
    )?;
    check(&total, "Rust scalar reduce")?;
    check(&total_cpp, "C++ scalar reduce")?;
    rows.push(Row {
        name: "tile32 reduce u32, scalar loads".into(),
        t,
        scale: 1.0,
        unit: "GB/s",
        bytes: 4.0 * n as f64,
    });

    let t = paired_ms(
        &gpu,
        3,
        reps,
        |p| match p {
            Phase::Prep => total.fill_zero(),
            Phase::Run => rv.launch(s, cfg, &d4, &mut total),
        },
        |p| match p {
            Phase::Prep => total_cpp.fill_zero(),
            Phase::Run => cpp_launch(&cv, q_ptr, q_len),
        },
    )?;
    check(&total, "Rust vec4 reduce")?;
    check(&total_cpp, "C++ vec4 reduce")?;
    rows.push(Row {
        name: "tile32 reduce u32, 16-byte loads".into(),
        t,
        scale: 1.0,
        unit: "GB/s",
        bytes: 4.0 * n as f64,
    });

    // Scan: one thread per element.
    let sc = k::bench_scan_u32::load(&module)?;
    let cc = twins.function("cpp_scan_u32", false)?;
    let (mut out, out_cpp) = (gpu.zeroed::<u32>(n)?, gpu.zeroed::<u32>(n)?);
    let scfg = LaunchConfig::for_elements(n, 256);
    let check_scan = |out: &DeviceBuffer<u32>, who: &str| -> CliResult {
        let got = out.to_vec()?;
        for (w, chunk) in got.chunks(32).enumerate() {
            let mut acc = 0u32;
            for (j, &g) in chunk.iter().enumerate() {
                acc = acc.wrapping_add(data[w * 32 + j]);
                if g != acc {
                    return Err(CliError::Failed(format!("{who}: scan[{}] = {g}, CPU says {acc}", w * 32 + j)));
                }
            }
        }
        Ok(())
    };
    let o_ptr = out_cpp.as_device_ptr().addr();
    let t = paired_ms(
        &gpu,
        3,
        reps,
        |p| match p {
            Phase::Prep => Ok(()),
            Phase::Run => sc.launch(s, scfg, &d, &mut out),
        },
        |p| match p {
            Phase::Prep => Ok(()),
            // SAFETY: (const unsigned*, size, unsigned*, size) as the twin declares; the buffers
            // outlive the launch.
            Phase::Run => unsafe { launch_twin(&cc, s, scfg, [d_ptr, d_len, o_ptr, 1]) },
        },
    )?;
    check_scan(&out, "Rust scan")?;
    check_scan(&out_cpp, "C++ scan")?;
    rows.push(Row { name: "tile32 inclusive scan u32".into(), t, scale: 1.0, unit: "GB/s", bytes: 8.0 * n as f64 });

    // Grid sync: time per sync over many.
    let gr = k::bench_grid_sync::load(&module)?;
    let gc = twins.function("cpp_grid_sync", true)?;
    let iters = 2000u32;
    for blocks in [gpu.info().sms, 8 * gpu.info().sms] {
        let gcfg = LaunchConfig::new(blocks, 256);
        let (mut marks, mut marks_cpp) = (gpu.zeroed::<u32>(blocks as usize)?, gpu.zeroed::<u32>(blocks as usize)?);
        let m_ptr = marks_cpp.as_device_ptr().addr();
        let t = paired_ms(
            &gpu,
            2,
            reps.min(10),
            |p| match p {
                Phase::Prep => marks.fill_zero(),
                Phase::Run => gr.launch_cooperative(s, gcfg, iters, &mut marks),
            },
            |phase| {
                if phase == Phase::Prep {
                    return marks_cpp.fill_zero();
                }
                let nb = blocks as u64;
                let mut p: [*mut std::ffi::c_void; 3] = [
                    (&raw const iters).cast_mut().cast(),
                    (&raw const m_ptr).cast_mut().cast(),
                    (&raw const nb).cast_mut().cast(),
                ];
                // SAFETY: (unsigned, unsigned*, size) as the twin declares; `marks_cpp` outlives
                // the launch.
                unsafe { gc.launch_cooperative_raw(s, gcfg, &mut p) }
            },
        )?;
        for (m, who) in [(&marks, "Rust"), (&marks_cpp, "C++")] {
            if m.to_vec()?.iter().any(|&k| k != iters) {
                return Err(CliError::Failed(format!("{who} grid sync: a block did not finish every round")));
            }
        }
        rows.push(Row {
            name: format!("grid.sync, {blocks} blocks of 256"),
            t,
            scale: 1000.0 / iters as f64,
            unit: "us/sync",
            bytes: 0.0,
        });
    }

    println!();
    let mut t = Table::new(&["benchmark", "Rust (Cohort)", "CUDA C++", "Rust / C++ (speed) [quartiles]"]).numeric(1..4);
    for r in rows {
        let (a, b) = if r.bytes > 0.0 {
            (format!("{:.0} {}", r.bytes / r.t.a / 1e6, r.unit), format!("{:.0} {}", r.bytes / r.t.b / 1e6, r.unit))
        } else {
            (format!("{:.3} {}", r.t.a * r.scale, r.unit), format!("{:.3} {}", r.t.b * r.scale, r.unit))
        };
        t.row(vec![r.name, a, b, r.t.ratio_text()]);
    }
    t.print();
    println!("\nall results verified against the CPU");
    Ok(())
}

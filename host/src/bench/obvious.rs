//! `cohort bench obvious`: the classic kernels written the obvious way
//! (`cohort_kernels::obvious`: plain slice and shared-array indexing, `DisjointMatrix` element
//! writes) against their CUDA C++ twins (`host/benches/obvious_twins.cu`: the same algorithm,
//! tiles, launch shape and guards, as a competent CUDA programmer writes them), each side also as
//! a fraction of the GPU's limits (DRAM bandwidth for the transposes and the stencil, FP32 peak
//! for the SGEMMs; an H200's by default). Every result is checked against the CPU, and the
//! stencil's steps Rust against C++ bit for bit. `docs/obvious-code.md` explains the differences.

use cohort_kernels::PTX;
use cohort_kernels::obvious as k;
use cohort_runtime::{DeviceBuffer, LaunchConfig};

use super::kernels::{Step, check_gemm_cpu, check_transpose, jacobi_cpu, random, stepping};
use super::{TwinsArgs, launch_twin, twins_from};
use crate::timing::{Paired, Phase, paired_ms};
use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench obvious`' options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Side of the transposed and stencil matrices
    #[arg(long, default_value = "8192", value_parser = util::parse_positive)]
    pub n: usize,
    /// Side of the SGEMM matrices
    #[arg(long, default_value = "4096", value_parser = util::parse_positive)]
    pub gemm: usize,
    /// Jacobi steps per timed run
    #[arg(long, default_value = "100", value_parser = util::parse_positive)]
    pub steps: usize,
    /// Transposes per timed run (times are reported per transpose)
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub batch: usize,
    /// Timed runs per kernel (the median is reported)
    #[arg(long, default_value = "15", value_parser = util::parse_positive)]
    pub reps: usize,
    /// The GPU's DRAM bandwidth in TB/s (default: an H200's 4.8)
    #[arg(long, default_value = "4.8")]
    pub dram_tbs: f64,
    /// The GPU's FP32 peak in TFLOP/s (default: an H200's, about 67)
    #[arg(long, default_value = "67")]
    pub fp32_tflops: f64,
    #[command(flatten)]
    pub twins: TwinsArgs,
}

struct Row {
    name: String,
    t: Paired,
    /// Bytes (transposes, stencil) or flops (SGEMMs) per run.
    work: f64,
    /// Whether `work` is flops.
    flops: bool,
}

fn fail(msg: String) -> CliError {
    CliError::Failed(msg)
}

/// A buffer's device address and length, as the twins take a slice.
fn slice(b: &DeviceBuffer<f32>) -> [u64; 2] {
    [b.as_device_ptr().addr(), b.len() as u64]
}

pub fn run(args: Args) -> CliResult {
    let Args { n, gemm: g, steps, batch, reps, dram_tbs, fp32_tflops, twins } = args;
    if !(3..=1 << 15).contains(&n) || g > 1 << 15 {
        return Err(CliError::Usage(
            "--n must be 3 to 32768 and --gemm at most 32768 (the twins' `int` indices)".into(),
        ));
    }
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let (twins, how) = twins_from(&gpu, &twins, "obvious_twins", include_str!("../../benches/obvious_twins.cu"))?;
    println!(
        "CUDA C++ twins: {how}; transposes and stencil {n}²; SGEMM {g}³; {reps} runs of each, Rust and C++ \
         interleaved in pairs (medians; the ratio is the median of the pairs' ratios, with its quartiles); \
         limits: DRAM {dram_tbs} TB/s, FP32 {fp32_tflops} TFLOP/s\n"
    );
    let s = gpu.stream();
    let mut rows = Vec::new();
    let nn = n as u32;

    // --- Transposes ---
    let input = random(n * n, 1);
    let d_in = gpu.upload(&input)?;
    let (mut out, mut out_cpp) = (gpu.zeroed::<f32>(n * n)?, gpu.zeroed::<f32>(n * n)?);
    let tcfg = LaunchConfig::new((n.div_ceil(32) as u32, n.div_ceil(32) as u32), (32, 8));
    let naive = k::obvious_transpose_naive::load(&module)?;
    let tiled = k::obvious_transpose_tiled::load(&module)?;
    for (name, is_naive, cpp) in [
        ("transpose 32×8 naive", true, "cpp_obvious_transpose_naive"),
        ("transpose 32×33 shared tile", false, "cpp_obvious_transpose_tiled"),
    ] {
        out.fill_zero()?;
        out_cpp.fill_zero()?;
        let f = twins.function(cpp, false)?;
        let [ip, il] = slice(&d_in);
        let op = out_cpp.as_device_ptr().addr();
        let (n64, batch) = (n as u64, batch);
        let run_cpp = |p: Phase| match p {
            Phase::Prep => Ok(()),
            Phase::Run => (0..batch).try_for_each(|_| {
                // SAFETY: (in, len, rows, cols, out, out rows, out cols), all 8 bytes, as the twin
                // declares; both buffers live and hold n² elements.
                unsafe { launch_twin(&f, s, tcfg, [ip, il, n64, n64, op, n64, n64]) }
            }),
        };
        let run_rust = |p: Phase| match p {
            Phase::Prep => Ok(()),
            Phase::Run => (0..batch).try_for_each(|_| {
                let m = out.as_matrix_mut(n, n)?;
                if is_naive { naive.launch(s, tcfg, &d_in, nn, nn, m) } else { tiled.launch(s, tcfg, &d_in, nn, nn, m) }
            }),
        };
        let mut t = paired_ms(&gpu, 3, reps, run_rust, &run_cpp)?;
        t.a /= batch as f64;
        t.b /= batch as f64;
        check_transpose(&input, n, n, &out, &format!("Rust {name}"))?;
        check_transpose(&input, n, n, &out_cpp, &format!("C++ {name}"))?;
        rows.push(Row { name: format!("{name}, {n}²"), t, work: 8.0 * (n * n) as f64, flops: false });
    }
    drop((d_in, out, out_cpp));

    // --- SGEMMs ---
    let (a, b) = (random(g * g, 2), random(g * g, 3));
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let (mut c_rust, mut c_cpp) = (gpu.zeroed::<f32>(g * g)?, gpu.zeroed::<f32>(g * g)?);
    let (g32, g128) = (k::obvious_sgemm_tiled32::load(&module)?, k::obvious_sgemm_128x128::load(&module)?);
    let gg = g as u32;
    for (name, big, cpp) in [
        ("SGEMM 32×32 shared tiles", false, "cpp_obvious_sgemm_tiled32"),
        ("SGEMM 128×128 tile, BK 8, 8×8/thread", true, "cpp_obvious_sgemm_128x128"),
    ] {
        let cfg = if big {
            LaunchConfig::new((g.div_ceil(128) as u32, g.div_ceil(128) as u32), (16, 16))
        } else {
            LaunchConfig::new((g.div_ceil(32) as u32, g.div_ceil(32) as u32), (32, 32))
        };
        c_rust.fill_zero()?;
        c_cpp.fill_zero()?;
        let f = twins.function(cpp, false)?;
        let ([ap, al], [bp, bl]) = (slice(&da), slice(&db));
        let (cp, g64) = (c_cpp.as_device_ptr().addr(), g as u64);
        let run_cpp = |p: Phase| match p {
            Phase::Prep => Ok(()),
            // SAFETY: (A, len, B, len, m, n, k, C, rows, cols), all 8 bytes, as declared; buffers
            // live and hold g² elements each.
            Phase::Run => unsafe { launch_twin(&f, s, cfg, [ap, al, bp, bl, g64, g64, g64, cp, g64, g64]) },
        };
        let run_rust = |p: Phase| match p {
            Phase::Prep => Ok(()),
            Phase::Run => {
                let m = c_rust.as_matrix_mut(g, g)?;
                if big {
                    g128.launch(s, cfg, &da, &db, gg, gg, gg, m)
                } else {
                    g32.launch(s, cfg, &da, &db, gg, gg, gg, m)
                }
            }
        };
        let t = paired_ms(&gpu, 2, reps, run_rust, &run_cpp)?;
        let (r, c) = (c_rust.to_vec()?, c_cpp.to_vec()?);
        check_gemm_cpu(&a, &b, g, &r, &format!("Rust {name}"))?;
        check_gemm_cpu(&a, &b, g, &c, &format!("C++ {name}"))?;
        let same = r.iter().zip(&c).filter(|(x, y)| x.to_bits() == y.to_bits()).count();
        println!("{name}: Rust and C++ agree bit for bit on {same} of {} elements", r.len());
        rows.push(Row { name: format!("{name}, {g}³"), t, work: 2.0 * (g as f64).powi(3), flops: true });
    }
    drop((da, db, c_rust, c_cpp));

    // --- Jacobi: a 32×32 shared tile + halo (four rows per thread), and a column walk of eight
    // rows per thread without shared memory; 32×8 threads each ---
    let u0 = random(n * n, 4);
    let one = jacobi_cpu(&u0, n);
    let (jtile, jrows) = (k::obvious_jacobi::load(&module)?, k::obvious_jacobi_rows::load(&module)?);
    let n64 = n as u64;
    for (name, walk, cpp) in [
        ("Jacobi 5-point, 32×32 shared tile + halo, 4 rows/thread", false, "cpp_obvious_jacobi"),
        ("Jacobi 5-point, column walk, 8 rows/thread, no shared memory", true, "cpp_obvious_jacobi_rows"),
    ] {
        let jc = twins.function(cpp, false)?;
        let jcfg = LaunchConfig::new((n.div_ceil(32) as u32, n.div_ceil(if walk { 64 } else { 32 }) as u32), (32, 8));
        let cpp_step = |x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>| {
            let ([xp, xl], yp) = (slice(x), y.as_device_ptr().addr());
            // SAFETY: (u, len, rows, cols, out, rows, cols), all 8 bytes, as the twin declares;
            // both buffers live and hold n² elements.
            unsafe { launch_twin(&jc, s, jcfg, [xp, xl, n64, n64, yp, n64, n64]) }
        };
        let rust_step = |x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>| {
            let m = y.as_matrix_mut(n, n)?;
            if walk { jrows.launch(s, jcfg, x, nn, nn, m) } else { jtile.launch(s, jcfg, x, nn, nn, m) }
        };
        let (mut xr, mut yr) = (gpu.upload(&u0)?, gpu.zeroed::<f32>(n * n)?);
        let (mut xc, mut yc) = (gpu.upload(&u0)?, gpu.zeroed::<f32>(n * n)?);
        rust_step(&xr, &mut yr)?;
        let got = yr.to_vec()?;
        if let Some(i) = (0..n * n).find(|&i| got[i].to_bits() != one[i].to_bits()) {
            return Err(fail(format!("Rust {name}: u[{i}] = {}, CPU says {}", got[i], one[i])));
        }
        let (rs, cs): (&Step<'_>, &Step<'_>) = (&rust_step, &cpp_step);
        let t = paired_ms(
            &gpu,
            1,
            reps.min(10),
            stepping(&u0, steps, rs, &mut xr, &mut yr),
            stepping(&u0, steps, cs, &mut xc, &mut yc),
        )?;
        let last = |x: &DeviceBuffer<f32>, y: &DeviceBuffer<f32>| if steps % 2 == 0 { x.to_vec() } else { y.to_vec() };
        let (r, c) = (last(&xr, &yr)?, last(&xc, &yc)?);
        if let Some(i) = (0..n * n).find(|&i| r[i].to_bits() != c[i].to_bits()) {
            return Err(fail(format!("{name} after {steps} steps: Rust u[{i}] = {}, C++ {}", r[i], c[i])));
        }
        rows.push(Row {
            name: format!("{name}, {n}², {steps} steps"),
            t,
            work: 8.0 * (n * n) as f64 * steps as f64,
            flops: false,
        });
    }

    println!();
    let head = [
        "kernel (obvious safe Rust vs CUDA C++)",
        "Rust",
        "CUDA C++",
        "Rust / C++ (speed) [quartiles]",
        "Rust of limit",
        "C++ of limit",
    ];
    let mut table = Table::new(&head).numeric(1..head.len());
    for r in rows {
        let (unit, scale, limit) =
            if r.flops { ("GFLOP/s", 1e6, fp32_tflops * 1e3) } else { ("GB/s", 1e6, dram_tbs * 1e3) };
        let rate = |ms: f64| r.work / ms / scale;
        table.row(vec![
            r.name,
            format!("{:.3} ms ({:.0} {unit})", r.t.a, rate(r.t.a)),
            format!("{:.3} ms ({:.0} {unit})", r.t.b, rate(r.t.b)),
            r.t.ratio_text(),
            format!("{:.2}", rate(r.t.a) / limit),
            format!("{:.2}", rate(r.t.b) / limit),
        ]);
    }
    table.print();
    println!(
        "\ntransposes checked element for element against the CPU; SGEMMs at 2048 sampled elements against f64 CPU \
         dot products; Jacobi's first step against the CPU, {steps} steps Rust against C++ bit for bit. Limits: \
         bytes moved (8 per element of a transpose or a stencil step) over DRAM bandwidth, 2·g³ flops over the FP32 peak"
    );
    Ok(())
}

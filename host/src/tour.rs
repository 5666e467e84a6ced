//! `cohort tour`: every kernel of `cohort_kernels::tour`, on random data, checked element by
//! element against a CPU reference: on a GPU, or on the CPU device (`cohort-cpu`, the same
//! kernels run on this machine's cores) when there is none or `--device cpu` asks.

use cohort_kernels::PTX;
use cohort_kernels::tour::{self, Affine};
use cohort_runtime::{Event, Gpu, LaunchConfig, Module};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::util::{self, CliError, CliResult, Table};

struct Outcome {
    kernel: &'static str,
    params: &'static str,
    elements: usize,
    ms: f64,
    bytes: f64,
    check: String,
    ok: bool,
}

/// `cohort tour`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Elements per kernel (k, M, G suffixes: 2^10, 2^20, 2^30)
    #[arg(long, default_value = "16M", value_parser = util::parse_positive)]
    pub n: usize,
    /// Seed of the random inputs
    #[arg(long, default_value_t = 0x5eed, value_parser = util::parse_count)]
    pub seed: u64,
    /// Where the kernels run.
    #[command(flatten)]
    pub device: util::DeviceArgs,
}

pub fn run(args: Args) -> CliResult {
    let Args { n, seed, device } = args;
    let (gpu, cpu_line) = util::device(device.device)?;
    let module = gpu.load(&PTX)?;
    match cpu_line {
        Some(line) => {
            println!("{line}");
            println!("running the tour on {n} elements (seed {seed}) on the CPU device, every kernel checked\n");
        }
        None => {
            println!("{}", gpu.info());
            println!("running the tour on {n} elements (seed {seed}), sm_{} PTX\n", module.arch());
        }
    }
    let mut rng = StdRng::seed_from_u64(seed);
    type Step = fn(&Gpu, &Module, usize, &mut StdRng) -> cohort_runtime::Result<Outcome>;
    let steps: [(&str, Step); 8] = [
        ("vector_add", vector_add),
        ("saxpy_f32", saxpy_f32),
        ("saxpy_f64", saxpy_f64),
        ("sum_u32", sum_u32),
        ("affine", affine),
        ("scale_in_place", scale_in_place),
        ("neighbour_sums", neighbour_sums),
        ("hello", hello),
    ];
    let progress = util::progress(steps.len());
    let mut outcomes = Vec::new();
    for (name, step) in steps {
        progress.set_message(name);
        outcomes.push(step(&gpu, &module, n, &mut rng)?);
        progress.inc(1);
    }
    progress.finish_and_clear();
    let mut table =
        Table::new(&["kernel", "parameters", "elements", "time ms", "GB/s", "check", "result"]).numeric(2..5);
    let mut failed = 0;
    for o in &outcomes {
        failed += usize::from(!o.ok);
        table.row(vec![
            o.kernel.to_string(),
            o.params.to_string(),
            o.elements.to_string(),
            if o.ms > 0.0 { format!("{:.3}", o.ms) } else { "-".into() },
            if o.bytes > 0.0 && o.ms > 0.0 { format!("{:.0}", o.bytes / o.ms / 1e6) } else { "-".into() },
            o.check.clone(),
            if o.ok { "verified".into() } else { "FAILED".into() },
        ]);
    }
    table.print();
    if failed > 0 {
        return Err(CliError::Failed(format!("{failed} kernel(s) did not match the CPU reference")));
    }
    let on = if gpu.is_cpu() { "on the CPU device, " } else { "" };
    println!("\nall {} kernels verified {on}against the CPU reference", outcomes.len());
    Ok(())
}

/// Runs `launch` once to warm up, then times one more run with events.
fn timed(gpu: &Gpu, mut launch: impl FnMut() -> cohort_runtime::Result<()>) -> cohort_runtime::Result<f64> {
    launch()?;
    let (a, b) = (Event::new(gpu)?, Event::new(gpu)?);
    a.record(gpu.stream())?;
    launch()?;
    b.record(gpu.stream())?;
    b.synchronize()?;
    Ok(b.elapsed_ms_since(&a)? as f64)
}

fn rand_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// The largest difference from the reference, relative to the reference's magnitude but never
/// to less than 1: near zero a sum like `a*x + y` cancels, and its rounding error is relative
/// to the terms, not to the tiny result (a plain relative error there reads as a bug).
fn max_scaled_err(got: &[f64], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(g, w)| (g - w).abs() / w.abs().max(1.0)).fold(0.0, f64::max)
}

/// The check column of a float kernel: what is compared, the worst error and the bound.
fn float_check(got: &[f64], want: &[f64], bound: f64) -> String {
    format!("|Δ|/max(|f64 ref|,1) ≤ {bound:.0e}: worst {:.1e}", max_scaled_err(got, want))
}

fn vector_add(gpu: &Gpu, m: &Module, n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let (a, b) = (rand_f32(rng, n), rand_f32(rng, n));
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut out = gpu.upload(&vec![f32::NAN; n])?;
    let k = tour::vector_add::load(m)?;
    let cfg = LaunchConfig::for_elements(n, 256);
    let ms = timed(gpu, || k.launch(gpu.stream(), cfg, &da, &db, &mut out))?;
    let got = out.to_vec()?;
    let bad = got.iter().zip(a.iter().zip(&b)).filter(|(g, (x, y))| g.to_bits() != (*x + *y).to_bits()).count();
    Ok(Outcome {
        kernel: "vector_add",
        params: "&[f32], &[f32], DisjointSlice<f32>",
        elements: n,
        ms,
        bytes: 12.0 * n as f64,
        check: format!("{bad} of {n} differ (bitwise)"),
        ok: bad == 0,
    })
}

fn saxpy_f32(gpu: &Gpu, m: &Module, n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let (x, y) = (rand_f32(rng, n), rand_f32(rng, n));
    let a = rng.random_range(0.5f32..2.0);
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.upload(&y)?;
    let k = tour::saxpy::<f32>::load(m)?;
    let cfg = LaunchConfig::for_elements(n, 256);
    k.launch(gpu.stream(), cfg, a, &dx, &mut dy)?;
    let got = dy.to_vec()?;
    // y = a*x + y (fused or not, within 1 ulp-ish of the f64 reference)
    let want: Vec<f64> = x.iter().zip(&y).map(|(&x, &y)| a as f64 * x as f64 + y as f64).collect();
    let got64: Vec<f64> = got.iter().map(|&v| v as f64).collect();
    let bad = got64.iter().zip(&want).filter(|(g, w)| (*g - *w).abs() > 1e-6 * w.abs().max(1.0)).count();
    dy.copy_from(&y)?;
    let ms = timed(gpu, || k.launch(gpu.stream(), cfg, a, &dx, &mut dy))?;
    Ok(Outcome {
        kernel: "saxpy_f32",
        params: "f32, &[f32], DisjointSlice<f32>",
        elements: n,
        ms,
        bytes: 12.0 * n as f64,
        check: float_check(&got64, &want, 1e-6),
        ok: bad == 0,
    })
}

fn saxpy_f64(gpu: &Gpu, m: &Module, n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let x: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let y: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let a = rng.random_range(0.5f64..2.0);
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.upload(&y)?;
    let k = tour::saxpy::<f64>::load(m)?;
    let cfg = LaunchConfig::for_elements(n, 256);
    k.launch(gpu.stream(), cfg, a, &dx, &mut dy)?;
    let got = dy.to_vec()?;
    let want: Vec<f64> = x.iter().zip(&y).map(|(&x, &y)| a.mul_add(x, y)).collect();
    let bad = got.iter().zip(&want).filter(|(g, w)| (*g - *w).abs() > 1e-15 * w.abs().max(1.0)).count();
    let check = float_check(&got, &want, 1e-15);
    dy.copy_from(&y)?;
    let ms = timed(gpu, || k.launch(gpu.stream(), cfg, a, &dx, &mut dy))?;
    Ok(Outcome {
        kernel: "saxpy_f64",
        params: "f64, &[f64], DisjointSlice<f64>",
        elements: n,
        ms,
        bytes: 24.0 * n as f64,
        check,
        ok: bad == 0,
    })
}

fn sum_u32(gpu: &Gpu, m: &Module, n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let data: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let want: u64 = data.iter().map(|&v| v as u64).sum();
    let dd = gpu.upload(&data)?;
    let mut total = gpu.zeroed::<u64>(1)?;
    let k = tour::sum_u32::load(m)?;
    let cfg = k.function().persistent_config(256, 0)?;
    k.launch(gpu.stream(), cfg, &dd, &mut total)?;
    let got = total.to_vec()?[0];
    total.fill_zero()?;
    let ms = timed(gpu, || {
        total.fill_zero()?;
        k.launch(gpu.stream(), cfg, &dd, &mut total)
    })?;
    Ok(Outcome {
        kernel: "sum_u32",
        params: "&[u32], &[AtomicU64]",
        elements: n,
        ms,
        bytes: 4.0 * n as f64,
        check: format!("{got} vs {want}"),
        ok: got == want,
    })
}

fn affine(gpu: &Gpu, m: &Module, n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let x = rand_f32(rng, n);
    let p = Affine { scale: rng.random_range(1.0..3.0), shift: rng.random_range(-0.5..0.5), limit: 1.25 };
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.upload(&vec![f32::NAN; n])?;
    let k = tour::affine::load(m)?;
    let cfg = LaunchConfig::for_elements(n, 256);
    let ms = timed(gpu, || k.launch(gpu.stream(), cfg, p, &dx, &mut dy))?;
    let got = dy.to_vec()?;
    let bad = got
        .iter()
        .zip(&x)
        .filter(|(g, x)| {
            let v = p.scale * **x + p.shift;
            let want = if v as f64 > p.limit { p.limit as f32 } else { v };
            (**g - want).abs() > 1e-6 * want.abs().max(1.0)
        })
        .count();
    Ok(Outcome {
        kernel: "affine",
        params: "#[repr(C)] struct, &[f32], DisjointSlice<f32>",
        elements: n,
        ms,
        bytes: 8.0 * n as f64,
        check: format!("{bad} of {n} differ"),
        ok: bad == 0,
    })
}

fn scale_in_place(gpu: &Gpu, m: &Module, n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let x = rand_f32(rng, n);
    let f = rng.random_range(1.5f32..2.5);
    let mut dx = gpu.upload(&x)?;
    let k = tour::scale_in_place::load(m)?;
    let cfg = LaunchConfig::for_elements(n, 256);
    let ptr = dx.as_device_ptr_mut();
    // SAFETY: `ptr` points at `n` f32 of `dx`, which nothing else uses during the launch.
    unsafe { k.launch(gpu.stream(), cfg, ptr, n as u32, f)? };
    let got = dx.to_vec()?;
    let bad = got.iter().zip(&x).filter(|(g, x)| g.to_bits() != (**x * f).to_bits()).count();
    // SAFETY: as above.
    let ms = timed(gpu, || unsafe { k.launch(gpu.stream(), cfg, ptr, n as u32, 1.0) })?;
    Ok(Outcome {
        kernel: "scale_in_place",
        params: "unsafe: *mut f32, u32, f32",
        elements: n,
        ms,
        bytes: 8.0 * n as f64,
        check: format!("{bad} of {n} differ (bitwise)"),
        ok: bad == 0,
    })
}

fn neighbour_sums(gpu: &Gpu, m: &Module, n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let data: Vec<u32> = (0..n).map(|_| rng.random_range(0..1 << 20)).collect();
    let dd = gpu.upload(&data)?;
    let k = tour::neighbour_sums::load(m)?;
    let cfg = k.function().persistent_config(256, 0)?;
    let nb = cfg.grid.volume() as usize;
    let mut published = gpu.zeroed::<u64>(nb)?;
    let mut out = gpu.upload(&vec![u64::MAX; nb])?;
    k.launch_cooperative(gpu.stream(), cfg, &dd, &mut published, &mut out)?;
    let got = out.to_vec()?;
    let mut block_sums = vec![0u64; nb];
    for (i, &v) in data.iter().enumerate() {
        block_sums[i % nb] += v as u64;
    }
    let bad = (0..nb).filter(|&b| got[b] != block_sums[(b + 1) % nb]).count();
    let ms = timed(gpu, || {
        published.fill_zero()?;
        k.launch_cooperative(gpu.stream(), cfg, &dd, &mut published, &mut out)
    })?;
    Ok(Outcome {
        kernel: "neighbour_sums",
        params: "cooperative: GridGroup, &[u32], &[AtomicU64], DisjointSlice<u64>",
        elements: n,
        ms,
        bytes: 4.0 * n as f64,
        check: format!("{bad} of {nb} blocks differ (grid sync)"),
        ok: bad == 0,
    })
}

fn hello(gpu: &Gpu, m: &Module, _n: usize, rng: &mut StdRng) -> cohort_runtime::Result<Outcome> {
    let lines = 8u32;
    let tag = (rng.random_range(100..999) as f32) / 100.0;
    let k = tour::hello::load(m)?;
    let (r, text) = cohort_runtime::capture_stdout(|| {
        k.launch(gpu.stream(), (2u32, 32u32), lines, tag)?;
        gpu.stream().synchronize()
    })
    .map_err(|e| cohort_runtime::Error::Argument(format!("capturing printf output: {e}")))?;
    r?;
    let mut got: Vec<&str> = text.lines().filter(|l| l.starts_with("hello from")).collect();
    got.sort_unstable();
    let mut want: Vec<String> =
        (0..lines).map(|i| format!("hello from thread {i} of block 0: tag {tag:.2}, id {i}")).collect();
    want.sort_unstable();
    let ok = got == want.iter().map(String::as_str).collect::<Vec<_>>();
    Ok(Outcome {
        kernel: "hello",
        params: "u32, f32 (printf)",
        elements: lines as usize,
        ms: 0.0,
        bytes: 0.0,
        check: format!("{} of {lines} lines as expected", if ok { lines as usize } else { got.len() }),
        ok,
    })
}

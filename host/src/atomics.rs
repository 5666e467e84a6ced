//! `cohort atomics`: the atomics-and-mutex tutorial's workloads, each checked against the CPU.
//!
//! ```text
//! cohort atomics race        10 blocks x 16 threads: x[0] += 1 without atomics (lost updates), then with
//! cohort atomics mutex       10 x 16 threads each take a mutex and add one: exactly 160
//! cohort atomics histogram   128-bin histograms of Alice and of a generated corpus (global atomics,
//!                            shared privatized, Cohort's), CPU speedups, and a block-count sweep
//! cohort atomics dot         dot product of 10M f32: partial (host finishes) and mutex (device finishes)
//! cohort atomics all         everything (the default)
//! ```
//!
//! Without a GPU (or with `--device cpu`) they run on the CPU device, every result checked the
//! same way; the histogram's timings and block-count sweep are GPU measurements and are left
//! out there, and its generated input defaults to 16 MiB instead of 1 GiB.

use std::time::Instant;

use cohort_kernels::PTX;
use cohort_kernels::atomics::{self as k, BINS};
use cohort_runtime::{DeviceBuffer, Gpu, LaunchConfig, Module};

use crate::timing::{Phase, median_ms};
use crate::util::{self, CliError, CliResult, Table};
use cohort_host::corpus;
use cohort_host::reference::{dot_close, dot_inputs};

/// `cohort atomics`' options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Which workload
    #[arg(value_enum, default_value_t = Workload::All)]
    pub workload: Workload,
    /// Bytes of the generated histogram input (k, M, G suffixes)
    #[arg(long, default_value = "1G", value_parser = util::parse_positive)]
    pub size: usize,
    /// Elements of the dot product
    #[arg(long, default_value = "10000000", value_parser = util::parse_positive)]
    pub n: usize,
    /// Where the kernels run.
    #[command(flatten)]
    pub device: util::DeviceArgs,
}

/// The generated histogram input's default size (`--size`).
const DEFAULT_SIZE: usize = 1 << 30;
/// What the CPU device generates when `--size` is the default.
const CPU_SIZE: usize = 16 << 20;

/// The tutorial's workloads.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// 10 blocks x 16 threads: x[0] += 1 without atomics (lost updates), then with
    Race,
    /// 10 x 16 threads each take a mutex and add one: exactly 160
    Mutex,
    /// 128-bin histograms of Alice and of a generated corpus, CPU speedups, a block-count sweep
    Histogram,
    /// Dot product: partial (host finishes) and mutex (device finishes)
    Dot,
    /// Everything
    All,
}

pub fn run(args: Args) -> CliResult {
    let (gpu, cpu_line) = util::device(args.device.device)?;
    match cpu_line {
        Some(line) => println!("{line}"),
        None => println!("{}", gpu.info()),
    }
    let module = gpu.load(&PTX)?;
    let mut args = args;
    if gpu.is_cpu() && args.size == DEFAULT_SIZE {
        args.size = CPU_SIZE;
    }
    match args.workload {
        Workload::Race => race(&gpu, &module),
        Workload::Mutex => mutex(&gpu, &module),
        Workload::Histogram => histogram(&gpu, &module, args.size),
        Workload::Dot => dot(&gpu, &module, args.n),
        Workload::All => {
            race(&gpu, &module)?;
            mutex(&gpu, &module)?;
            histogram(&gpu, &module, args.size)?;
            dot(&gpu, &module, args.n)
        }
    }
}

fn race(gpu: &Gpu, m: &Module) -> CliResult {
    println!("\n== the race: 10 blocks x 16 threads, each doing x[0] += 1");
    let racy = k::race_increment::load(m)?;
    let atomic = k::atomic_increment::load(m)?;
    let mut x = gpu.zeroed::<u32>(1)?;
    let mut seen = Vec::new();
    for _ in 0..5 {
        x.fill_zero()?;
        racy.launch(gpu.stream(), (10u32, 16u32), &mut x)?;
        seen.push(x.to_vec()?[0]);
    }
    if seen.iter().any(|&v| v == 0 || v > 160) {
        return Err(CliError::Failed(format!("non-atomic results out of range: {seen:?}")));
    }
    if gpu.is_cpu() {
        println!(
            "without atomics (5 runs): {seen:?}  (at most 160; on the CPU device a block's threads switch only at \
             barriers and collectives, so only blocks running at once on other cores can lose updates: a GPU loses \
             most)"
        );
    } else {
        println!("without atomics (5 runs): {seen:?}  (at most 160: read-modify-writes overlap and updates are lost)");
    }
    x.fill_zero()?;
    atomic.launch(gpu.stream(), (10u32, 16u32), &mut x)?;
    let got = x.to_vec()?[0];
    println!("with atomicAdd:           {got}");
    if got != 160 {
        return Err(CliError::Failed(format!("atomic increment gave {got}, not 160")));
    }
    Ok(())
}

fn mutex(gpu: &Gpu, m: &Module) -> CliResult {
    println!("\n== the mutex: 10 blocks x 16 threads, each locks, adds one, unlocks");
    let kern = k::mutex_add_one::load(m)?;
    let mut lock = gpu.zeroed::<u32>(1)?;
    let mut x = gpu.zeroed::<u32>(1)?;
    kern.launch(gpu.stream(), (10u32, 16u32), &mut lock, &mut x)?;
    let (got, l) = (x.to_vec()?[0], lock.to_vec()?[0]);
    println!("x = {got}, lock word afterwards = {l}");
    if got != 160 || l != 0 {
        return Err(CliError::Failed(format!("mutex counter gave {got} (lock {l}), not 160 (0)")));
    }
    Ok(())
}

/// A histogram kernel's result, checked bin by bin.
fn check_bins(got: &[u32], want: &[u64], what: &str) -> CliResult {
    for (b, (&g, &w)) in got.iter().zip(want).enumerate() {
        if g as u64 != w {
            return Err(CliError::Failed(format!("{what}: bin {b} ({:?}) = {g}, CPU says {w}", b as u8 as char)));
        }
    }
    Ok(())
}

/// Private copies of the bins per warp for Cohort's histogram. One measured best on an H200
/// (`cohort bench atomics`: 3278 GB/s on text-like input at 528 blocks, 2531 GB/s uniform at
/// 1056; 2 copies 2806/2292, 4 copies 2426/2134): ptxas turns the shared `red.add` of 1 into
/// `ATOMS.POPC.INC`, which aggregates equal addresses within a warp in hardware, so spreading
/// them over copies no longer pays.
const LIB_COPIES: u32 = 1;

fn histogram(gpu: &Gpu, m: &Module, size: usize) -> CliResult {
    let s = gpu.stream();
    println!("\n== character histograms, 128 bins");
    // 1. The book itself.
    let dt = gpu.upload(corpus::ALICE)?;
    let want = corpus::histogram_1t(corpus::ALICE);
    let mut bins = gpu.zeroed::<u32>(BINS)?;
    let cfg = LaunchConfig::new(4 * gpu.info().sms, 256);
    for (which, name) in [(0, "global atomics"), (1, "shared privatized"), (2, "Cohort's")] {
        bins.fill_zero()?;
        launch_histogram_on(m, s, which, cfg, LIB_COPIES, &dt, &mut bins)?;
        check_bins(&bins.to_vec()?, &want, name)?;
    }
    let top: Vec<String> = {
        let mut idx: Vec<usize> = (0..128).collect();
        idx.sort_by_key(|&b| std::cmp::Reverse(want[b]));
        idx.iter().take(6).map(|&b| format!("{:?}: {}", b as u8 as char, want[b])).collect()
    };
    println!(
        "Alice ({} bytes): all three kernels match the CPU in every bin; most common: {}",
        corpus::ALICE.len(),
        top.join(", ")
    );

    // 2. A generated corpus.
    let t0 = Instant::now();
    let text = corpus::text_like(size, 0xa11ce);
    println!(
        "generated {:.2} GiB of text-like input from Alice's words in {:.1} s",
        size as f64 / (1u64 << 30) as f64,
        t0.elapsed().as_secs_f64()
    );
    let t0 = Instant::now();
    let want = corpus::histogram_1t(&text);
    let cpu1 = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    let want_mt = corpus::histogram_mt(&text);
    let cpu_mt = t0.elapsed().as_secs_f64() * 1e3;
    if want_mt != want {
        return Err(CliError::Failed("multi-threaded CPU histogram differs from single-threaded".into()));
    }
    let dtext = gpu.upload(&text)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if gpu.is_cpu() {
        // Timings against the CPU and the sweep measure a GPU: here, each kernel once, checked.
        for (which, name) in [(0, "global atomics"), (1, "shared privatized"), (2, "Cohort's")] {
            bins.fill_zero()?;
            launch_histogram_on(m, s, which, cfg, LIB_COPIES, &dtext, &mut bins)?;
            check_bins(&bins.to_vec()?, &want, name)?;
        }
        println!(
            "on the CPU device ({} blocks x 256 threads): all three kernels match the CPU histogram in all 128 bins \
             (timings and the block-count sweep are GPU measurements: run on a GPU for them)",
            cfg.grid.x
        );
        return Ok(());
    }

    // Block-count sweep of the shared-memory kernel (and Cohort's).
    println!("\nblock-count sweep (256 threads per block), GB/s:");
    let mut sweep = Table::new(&["blocks", "shared privatized", "Cohort's (1 copy/warp)"]).numeric(0..3);
    let mut best = (0u32, 0.0f64, 0u32, 0.0f64);
    for blocks in [33u32, 66, 132, 264, 528, 1056, 2112, 4224, 8448, 16896] {
        let cfg = LaunchConfig::new(blocks, 256);
        let mut row = vec![blocks.to_string()];
        for which in [1u32, 2] {
            let ms = median_ms(gpu, 1, 5, |p| match p {
                Phase::Prep => bins.fill_zero(),
                Phase::Run => launch_histogram_on(m, s, which, cfg, LIB_COPIES, &dtext, &mut bins),
            })?;
            check_bins(&bins.to_vec()?, &want, "sweep")?;
            let gbs = size as f64 / ms / 1e6;
            if which == 1 && gbs > best.1 {
                best.0 = blocks;
                best.1 = gbs;
            }
            if which == 2 && gbs > best.3 {
                best.2 = blocks;
                best.3 = gbs;
            }
            row.push(format!("{gbs:.0}"));
        }
        sweep.row(row);
    }
    sweep.print();
    println!(
        "best: shared privatized at {} blocks ({:.0} GB/s); Cohort's at {} blocks ({:.0} GB/s)",
        best.0, best.1, best.2, best.3
    );

    let mut t = Table::new(&["implementation", "time ms", "GB/s", "speedup vs 1 CPU thread"]).numeric(1..4);
    t.row(vec!["CPU, 1 thread".into(), format!("{cpu1:.1}"), format!("{:.1}", size as f64 / cpu1 / 1e6), "1.0".into()]);
    t.row(vec![
        format!("CPU, {threads} threads"),
        format!("{cpu_mt:.1}"),
        format!("{:.1}", size as f64 / cpu_mt / 1e6),
        format!("{:.1}", cpu1 / cpu_mt),
    ]);
    for (which, name, blocks) in [
        (0u32, "GPU global atomics", 8 * gpu.info().sms),
        (1, "GPU shared privatized", best.0),
        (2, "GPU Cohort's histogram", best.2),
    ] {
        let cfg = LaunchConfig::new(blocks, 256);
        let ms = median_ms(gpu, 1, if which == 0 { 3 } else { 10 }, |p| match p {
            Phase::Prep => bins.fill_zero(),
            Phase::Run => launch_histogram_on(m, s, which, cfg, LIB_COPIES, &dtext, &mut bins),
        })?;
        check_bins(&bins.to_vec()?, &want, name)?;
        t.row(vec![
            format!("{name} ({blocks} blocks)"),
            format!("{ms:.3}"),
            format!("{:.0}", size as f64 / ms / 1e6),
            format!("{:.0}", cpu1 / ms),
        ]);
    }
    println!();
    t.print();
    println!("every GPU result matched the CPU histogram in all 128 bins");
    Ok(())
}

/// Launches histogram kernel `which` (0: global atomics, 1: shared privatized, 2: Cohort's with
/// `copies` per warp) on `s`.
pub fn launch_histogram_on(
    m: &Module,
    s: &cohort_runtime::Stream,
    which: u32,
    cfg: LaunchConfig,
    copies: u32,
    text: &DeviceBuffer<u8>,
    bins: &mut DeviceBuffer<u32>,
) -> cohort_runtime::Result<()> {
    match which {
        0 => k::histogram_global::load(m)?.launch(s, cfg, text, bins),
        1 => k::histogram_shared::load(m)?.launch(s, cfg, text, bins),
        _ => {
            let warps = (cfg.block.volume() as u32).div_ceil(32);
            let cfg = cfg.with_shared_mem(warps * copies * (BINS as u32 + 1) * 4);
            k::histogram_lib::load(m)?.launch(s, cfg, text, copies, bins)
        }
    }
}

fn dot(gpu: &Gpu, m: &Module, n: usize) -> CliResult {
    println!("\n== dot product of {n} f32 (640 blocks x 256 threads)");
    let d = dot_inputs(n);
    let (da, db) = (gpu.upload(&d.a)?, gpu.upload(&d.b)?);
    let (blocks, threads) = (640u32, 256u32);
    let mut partial = gpu.zeroed::<f32>(blocks as usize)?;
    k::dot_partial::load(m)?.launch(gpu.stream(), (blocks, threads), &da, &db, &mut partial)?;
    let p: f64 = partial.to_vec()?.iter().map(|&v| v as f64).sum();
    let mut lock = gpu.zeroed::<u32>(1)?;
    let mut c = gpu.zeroed::<f32>(1)?;
    k::dot_mutex::load(m)?.launch(gpu.stream(), (blocks, threads), &mut lock, &da, &db, &mut c)?;
    let full = c.to_vec()?[0] as f64;
    let mut t = Table::new(&["version", "result", "float64 reference", "|error|", "float32 bound", "ok"]).numeric(1..5);
    let mut bad = false;
    for (name, v) in [("partial (host adds 640 block sums)", p), ("mutex (device adds under the lock)", full)] {
        let (ok, bound) = dot_close(v, &d, (blocks * threads) as usize, blocks as usize);
        bad |= !ok;
        t.row(vec![
            name.into(),
            format!("{v:.6}"),
            format!("{:.6}", d.exact),
            format!("{:.2e}", (v - d.exact).abs()),
            format!("{bound:.2e}"),
            ok.to_string(),
        ]);
    }
    t.print();
    if bad {
        return Err(CliError::Failed("a dot product is outside float32 error".into()));
    }
    Ok(())
}

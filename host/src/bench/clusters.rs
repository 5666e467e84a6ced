//! `cohort bench clusters`: thread-block clusters and distributed shared memory
//! (`cohort_kernels::clusters`) beside their CUDA C++ twins (`host/benches/cluster_twins.cu`):
//! the Programming Guide's distributed-shared-memory histogram in clusters of 1, 2, 4 and 8
//! blocks over 1K–64K bins (where a block's part fits in shared memory), and the same histogram
//! without clusters (one block's shared histogram of every bin); a cluster reduction; a
//! three-point stencil whose halo comes from the neighbour blocks' shared memory. Rust and C++
//! are timed interleaved in pairs (medians), each result checked element by element against the
//! CPU, and each side given as a fraction of the DRAM bandwidth (the bytes of input read, and
//! for the stencil written).
//!
//! The twins need sm_90: build them with `nvcc -ptx -O3 -arch=sm_90a host/benches/cluster_twins.cu
//! -o cluster_twins.ptx` and pass `--twins-ptx cluster_twins.ptx` (without it the bench compiles
//! the file with NVRTC for sm_90, which needs libnvrtc and CUDA's headers).

use cohort_kernels::PTX;
use cohort_kernels::clusters as k;
use cohort_runtime::LaunchConfig;
use rand::{Rng, SeedableRng};

use super::{TwinsArgs, launch_twin, twins_from};
use crate::timing::{Paired, Phase, paired_ms};
use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench clusters`' options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Elements of the histogram's, the reduction's and the stencil's input (u32)
    #[arg(long, default_value = "67108864", value_parser = util::parse_positive)]
    pub n: usize,
    /// Timed runs per kernel (the median is reported)
    #[arg(long, default_value = "15", value_parser = util::parse_positive)]
    pub reps: usize,
    /// Blocks per SM of the grid-stride kernels (histogram, reduction); the grid is rounded up to a
    /// multiple of 8 blocks
    #[arg(long, default_value = "2", value_parser = util::parse_positive)]
    pub blocks_per_sm: usize,
    /// The GPU's DRAM bandwidth in TB/s (default: an H200's 4.8)
    #[arg(long, default_value = "4.8")]
    pub dram_tbs: f64,
    #[command(flatten)]
    pub twins: TwinsArgs,
}

struct Row {
    name: String,
    t: Paired,
    /// Bytes of DRAM traffic per run (input read, output written).
    bytes: f64,
}

fn fail(msg: String) -> CliError {
    CliError::Failed(msg)
}

/// Bytes of shared memory a block may have (sm_90: 227 KiB).
const SMEM_MAX: usize = 227 * 1024;
/// Threads per block of every kernel (the stencil's tile is 512).
const BLOCK: u32 = 512;

fn check_eq(got: &[u32], want: &[u32], who: &str) -> CliResult {
    if got.len() != want.len() {
        return Err(fail(format!("{who}: {} elements, expected {}", got.len(), want.len())));
    }
    match (0..got.len()).find(|&i| got[i] != want[i]) {
        Some(i) => Err(fail(format!("{who}: element {i} is {}, the CPU says {}", got[i], want[i]))),
        None => Ok(()),
    }
}

pub fn run(args: Args) -> CliResult {
    let Args { n, reps, blocks_per_sm, dram_tbs, twins } = args;
    if n > u32::MAX as usize {
        return Err(CliError::Usage("--n must fit in a u32".into()));
    }
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    if gpu.info().cc() < 90 {
        return Err(fail(format!(
            "{} is compute capability {}.{}: thread-block clusters need sm_90 (Hopper) or later",
            gpu.info().name,
            gpu.info().compute_capability.0,
            gpu.info().compute_capability.1
        )));
    }
    let module = gpu.load(&PTX)?;
    let (twins, how) = twins_from(&gpu, &twins, "cluster_twins", include_str!("../../benches/cluster_twins.cu"))
        .map_err(|e| {
            fail(format!(
                "{e:?}\n(the cluster twins need sm_90: build them with `nvcc -ptx -O3 -arch=sm_90a \
                 host/benches/cluster_twins.cu -o cluster_twins.ptx` and pass --twins-ptx cluster_twins.ptx)"
            ))
        })?;
    let twin = |name: &str| {
        twins.function(name, false).map_err(|e| {
            fail(format!(
                "the C++ twin `{name}` is not in the twins' module ({how}): {e}; rebuild it from \
                 host/benches/cluster_twins.cu (nvcc -ptx -O3 -arch=sm_90a)"
            ))
        })
    };
    let sms = gpu.info().sms as usize;
    let grid = (sms * blocks_per_sm).div_ceil(8) * 8;
    println!(
        "CUDA C++ twins: {how}; {n} u32 elements; grid-stride kernels on {grid} blocks of {BLOCK}; {reps} runs of \
         each, Rust and C++ interleaved in pairs (medians; the ratio is the median of the pairs' ratios, with its \
         quartiles); limit: DRAM {dram_tbs} TB/s\n"
    );
    let s = gpu.stream();
    let mut rows = Vec::new();
    let n64 = n as u64;

    // --- Histograms ---
    let mut rng = rand::rngs::StdRng::seed_from_u64(27);
    let raw: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let hist_cluster = k::cluster_hist::load(&module)?;
    let hist_block = k::block_hist::load(&module)?;
    for bins_log in [10u32, 12, 14, 16] {
        let nbins = 1usize << bins_log;
        // Values in 0..nbins + nbins / 8: an eighth of the elements clamp into the last bin.
        let input: Vec<u32> = raw.iter().map(|v| v % (nbins as u32 + nbins as u32 / 8)).collect();
        let mut want = vec![0u32; nbins];
        for &v in &input {
            want[(v as usize).min(nbins - 1)] += 1;
        }
        let din = gpu.upload(&input)?;
        let (mut bins_r, mut bins_c) = (gpu.zeroed::<u32>(nbins)?, gpu.zeroed::<u32>(nbins)?);
        let (ip, bp) = (din.as_device_ptr().addr(), bins_c.as_device_ptr().addr());
        let nb = nbins as u32;
        // (cluster blocks, 0 = the kernel without clusters)
        for cs in [0usize, 1, 2, 4, 8] {
            let per_block = nbins / cs.max(1);
            if per_block * 4 > SMEM_MAX {
                println!("histogram of {nbins} bins in clusters of {cs}: {per_block} bins per block do not fit");
                continue;
            }
            let cfg = LaunchConfig::new(grid as u32, BLOCK).with_shared_mem((per_block * 4) as u32);
            let (name, cpp) = if cs == 0 {
                (format!("histogram {nbins} bins, no clusters"), "cpp_block_hist".to_string())
            } else {
                (format!("histogram {nbins} bins, clusters of {cs}"), format!("cpp_cluster_hist_c{cs}"))
            };
            let f = twin(&cpp)?;
            let run_rust = |p: Phase| match p {
                Phase::Prep => bins_r.fill_zero(),
                Phase::Run if cs == 0 => hist_block.launch(s, cfg, &din, nb, &mut bins_r),
                Phase::Run => hist_cluster.launch(s, cfg.with_cluster(cs as u32), &din, nb, &mut bins_r),
            };
            let run_cpp = |p: Phase| match p {
                Phase::Prep => bins_c.fill_zero(),
                // SAFETY: (input, len, nbins, bins, len), all 8 bytes, as the twin declares; both
                // buffers live, `bins` holds nbins elements; the cluster size is compiled in.
                Phase::Run => unsafe { launch_twin(&f, s, cfg, [ip, n64, nbins as u64, bp, nbins as u64]) },
            };
            let t = paired_ms(&gpu, 2, reps, run_rust, run_cpp)?;
            check_eq(&bins_r.to_vec()?, &want, &format!("Rust {name}"))?;
            check_eq(&bins_c.to_vec()?, &want, &format!("C++ {name}"))?;
            rows.push(Row { name, t, bytes: 4.0 * n as f64 });
        }
    }

    // --- Cluster reduction ---
    let input: Vec<u32> = raw.clone();
    let want = input.iter().fold(0u32, |a, &b| a.wrapping_add(b));
    let din = gpu.upload(&input)?;
    let (mut out_r, mut out_c) = (gpu.zeroed::<u32>(1)?, gpu.zeroed::<u32>(1)?);
    let sum = k::cluster_sum::load(&module)?;
    for cs in [1usize, 2, 4, 8] {
        let cfg = LaunchConfig::new(grid as u32, BLOCK);
        let name = format!("cluster reduction (u32 sum), clusters of {cs}");
        let f = twin(&format!("cpp_cluster_sum_c{cs}"))?;
        let (ip, op) = (din.as_device_ptr().addr(), out_c.as_device_ptr().addr());
        let run_rust = |p: Phase| match p {
            Phase::Prep => out_r.fill_zero(),
            Phase::Run => sum.launch(s, cfg.with_cluster(cs as u32), &din, &mut out_r),
        };
        let run_cpp = |p: Phase| match p {
            Phase::Prep => out_c.fill_zero(),
            // SAFETY: (input, len, out, len), all 8 bytes, as the twin declares; buffers live.
            Phase::Run => unsafe { launch_twin(&f, s, cfg, [ip, n64, op, 1]) },
        };
        let t = paired_ms(&gpu, 2, reps, run_rust, run_cpp)?;
        check_eq(&out_r.to_vec()?, &[want], &format!("Rust {name}"))?;
        check_eq(&out_c.to_vec()?, &[want], &format!("C++ {name}"))?;
        rows.push(Row { name, t, bytes: 4.0 * n as f64 });
    }
    drop((out_r, out_c));

    // --- Stencil with its halo from neighbour blocks ---
    let mut want = vec![0u32; n];
    for i in 0..n {
        let l = if i > 0 { input[i - 1] } else { 0 };
        let r = if i + 1 < n { input[i + 1] } else { 0 };
        want[i] = l.wrapping_add(input[i].wrapping_mul(2)).wrapping_add(r);
    }
    let (mut st_r, mut st_c) = (gpu.zeroed::<u32>(n)?, gpu.zeroed::<u32>(n)?);
    let stencil = k::cluster_stencil3::load(&module)?;
    let sblocks = n.div_ceil(BLOCK as usize).div_ceil(8) * 8;
    for cs in [1usize, 2, 4, 8] {
        let cfg = LaunchConfig::new(sblocks as u32, BLOCK);
        let name = format!("stencil 3-point, halo from neighbours, clusters of {cs}");
        st_r.fill_zero()?;
        st_c.fill_zero()?;
        let f = twin(&format!("cpp_cluster_stencil3_c{cs}"))?;
        let (ip, op) = (din.as_device_ptr().addr(), st_c.as_device_ptr().addr());
        let run_rust = |p: Phase| match p {
            Phase::Prep => Ok(()),
            Phase::Run => stencil.launch(s, cfg.with_cluster(cs as u32), &din, &mut st_r),
        };
        let run_cpp = |p: Phase| match p {
            Phase::Prep => Ok(()),
            // SAFETY: (input, len, out, len), all 8 bytes, as the twin declares; both buffers live
            // and hold n elements.
            Phase::Run => unsafe { launch_twin(&f, s, cfg, [ip, n64, op, n64]) },
        };
        let t = paired_ms(&gpu, 2, reps, run_rust, run_cpp)?;
        check_eq(&st_r.to_vec()?, &want, &format!("Rust {name}"))?;
        check_eq(&st_c.to_vec()?, &want, &format!("C++ {name}"))?;
        rows.push(Row { name, t, bytes: 8.0 * n as f64 });
    }

    println!();
    let head = [
        "kernel (safe Rust vs CUDA C++)",
        "Rust",
        "CUDA C++",
        "Rust / C++ (speed) [quartiles]",
        "Rust of DRAM",
        "C++ of DRAM",
    ];
    let mut table = Table::new(&head).numeric(1..head.len());
    for r in rows {
        let rate = |ms: f64| r.bytes / ms / 1e6;
        let limit = dram_tbs * 1e3;
        table.row(vec![
            r.name,
            format!("{:.3} ms ({:.0} GB/s)", r.t.a, rate(r.t.a)),
            format!("{:.3} ms ({:.0} GB/s)", r.t.b, rate(r.t.b)),
            r.t.ratio_text(),
            format!("{:.2}", rate(r.t.a) / limit),
            format!("{:.2}", rate(r.t.b) / limit),
        ]);
    }
    table.print();
    println!(
        "\nevery histogram bin, the sums and every stencil element checked against the CPU, Rust and C++ alike. \
         Limit: bytes read (4 per element) — and written, for the stencil (8 per element) — over DRAM bandwidth"
    );
    Ok(())
}

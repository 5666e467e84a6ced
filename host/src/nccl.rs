//! `cohort nccl`: a data-parallel SAXPY and sum split across every GPU, finished by an NCCL
//! all-reduce, checked against the CPU.
//!
//! Each GPU (rank) gets its slice of `x` and `y` (generated from the element index, so every
//! process can make any slice and the CPU reference), runs the tour's `saxpy_f32`
//! (`y = a·x + y`) and `dot_partial` against ones (each block's sum of `y`), then the ranks'
//! block sums are all-reduced with NCCL (sum). Every `y` element, every reduced block sum and
//! the total are checked against the CPU.
//!
//! Three ways to run it:
//!
//! - by default, one process drives every GPU (a communicator per GPU, the all-reduce in one
//!   NCCL group);
//! - `--from-env`: this process is one rank of a job a launcher started (`torchrun`, `srun`,
//!   `mpirun`): its rank, the world size and its GPU (`LOCAL_RANK`) come from the launcher's
//!   environment, the NCCL id from rank 0 over TCP at `MASTER_ADDR:MASTER_PORT`
//!   (`cohort_runtime::nccl::bootstrap`); every rank prints its result;
//! - `--processes N`: this program starts itself N times on this machine, one rank each, and
//!   checks that all exit 0. With `--bootstrap tcp` (the default) the children get a
//!   launcher's environment (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
//!   `MASTER_ADDR=127.0.0.1`, a free `MASTER_PORT`) and run as `--from-env`; with
//!   `--bootstrap file` rank 0 writes the id to a file the others read.
//!
//! Every rank checks the same figures whichever way it started: its `y` elements, the
//! all-reduced block sums and their total against the CPU.

use std::path::PathBuf;
use std::time::Duration;

use cohort_kernels::PTX;
use cohort_kernels::atomics::dot_partial;
use cohort_kernels::tour::saxpy;
use cohort_runtime::nccl::{Comm, Group, Launch, NcclError, ReduceOp};
use cohort_runtime::{DeviceBuffer, Gpu, LaunchConfig};

use crate::util::{CliError, CliResult};

/// `cohort nccl` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Elements of x and y in all (split across the ranks; suffixes k, M, G)
    #[arg(long, default_value = "32M", value_parser = crate::util::parse_positive)]
    pub n: usize,
    /// Run one process per GPU (this program started N times on this machine)
    #[arg(long, value_name = "N", value_parser = crate::util::parse_positive)]
    pub processes: Option<usize>,
    /// With --processes: how the ranks get the NCCL id: `tcp` (a launcher's environment, the id from rank 0 on
    /// 127.0.0.1) or `file` (a file in the temporary directory)
    #[arg(long, value_enum)]
    pub bootstrap: Option<Bootstrap>,
    /// Run as one rank of a job that torchrun, srun or mpirun started: RANK, WORLD_SIZE, LOCAL_RANK … from the
    /// environment, the NCCL id over TCP from rank 0 at MASTER_ADDR:MASTER_PORT, on device LOCAL_RANK (or
    /// COHORT_DEVICE if set)
    #[arg(long, conflicts_with_all = ["processes", "bootstrap", "rank", "id_file"])]
    pub from_env: bool,
    /// Seconds each rank waits for the others to join (the NCCL id's exchange)
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = crate::util::parse_positive)]
    pub timeout: usize,
    /// (internal) this process's rank, with --processes and --id-file
    #[arg(long, hide = true, requires = "id_file", requires = "processes")]
    pub rank: Option<usize>,
    /// (internal) the NCCL id file of a multi-process run
    #[arg(long, hide = true)]
    pub id_file: Option<PathBuf>,
}

/// How the ranks of `--processes` get the NCCL id.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bootstrap {
    /// A launcher's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT), the id over TCP
    #[default]
    Tcp,
    /// Rank 0 writes the id to a file; the others wait for it
    File,
}

/// The SAXPY factor.
const A: f32 = 1.75;
/// Threads per block and blocks of `dot_partial` (a power of two ≤ 1024, as it requires).
const THREADS: u32 = 256;
const BLOCKS: u32 = 512;

fn x_at(i: usize) -> f32 {
    ((i.wrapping_mul(2_654_435_761) >> 7) % 2001) as f32 / 1000.0 - 1.0
}
fn y_at(i: usize) -> f32 {
    ((i.wrapping_mul(40_503) >> 3) % 1001) as f32 / 500.0 - 1.0
}

/// Rank `r`'s slice of `0..n` over `size` ranks.
fn slice_of(n: usize, r: usize, size: usize) -> std::ops::Range<usize> {
    n * r / size..n * (r + 1) / size
}

/// An NCCL error as the CLI reports it (a Cohort error as such).
pub fn nccl_err(e: NcclError) -> CliError {
    match e {
        NcclError::Cohort(e) => e.into(),
        other => CliError::Failed(other.to_string()),
    }
}

/// One rank's buffers after its kernels: `y` updated and its block sums.
struct RankWork {
    range: std::ops::Range<usize>,
    y: DeviceBuffer<f32>,
    partial: DeviceBuffer<f32>,
}

/// Uploads the rank's slice and runs SAXPY and the block sums on the GPU's stream.
fn compute(gpu: &Gpu, range: std::ops::Range<usize>) -> cohort_runtime::Result<RankWork> {
    let module = gpu.load(&PTX)?;
    let (x, y): (Vec<f32>, Vec<f32>) = range.clone().map(|i| (x_at(i), y_at(i))).unzip();
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.upload(&y)?;
    let ones = gpu.upload(&vec![1.0f32; range.len()])?;
    let mut partial = gpu.zeroed::<f32>(BLOCKS as usize)?;
    saxpy::<f32>::load(&module)?.launch(
        gpu.stream(),
        LaunchConfig::for_elements(range.len(), THREADS),
        A,
        &dx,
        &mut dy,
    )?;
    dot_partial::load(&module)?.launch(gpu.stream(), (BLOCKS, THREADS), &dy, &ones, &mut partial)?;
    Ok(RankWork { range, y: dy, partial })
}

/// The CPU's `y` after SAXPY, in f64.
fn y_new(i: usize) -> f64 {
    f64::from(A) * f64::from(x_at(i)) + f64::from(y_at(i))
}

/// The CPU reference of the all-reduced block sums: block `b` of rank `r` sums the elements
/// its threads visit in `dot_partial`'s grid-stride loop.
fn reference_partials(n: usize, size: usize) -> (Vec<f64>, Vec<f64>) {
    let stride = (BLOCKS * THREADS) as usize;
    let mut sums = vec![0.0f64; BLOCKS as usize];
    let mut mags = vec![0.0f64; BLOCKS as usize];
    for r in 0..size {
        let range = slice_of(n, r, size);
        for (k, i) in range.enumerate() {
            let b = (k % stride) / THREADS as usize;
            let v = y_new(i);
            sums[b] += v;
            mags[b] += v.abs();
        }
    }
    (sums, mags)
}

/// Checks a rank's `y` and its copy of the reduced block sums; returns a one-line report.
fn check_rank(work: &RankWork, rank: usize, n: usize, size: usize, reduced: &[f32]) -> CliResult<String> {
    let y = work.y.to_vec()?;
    let mut worst = 0.0f64;
    let mut bad = 0usize;
    for (k, i) in work.range.clone().enumerate() {
        let (g, w) = (f64::from(y[k]), y_new(i));
        let e = (g - w).abs() / w.abs().max(1.0);
        worst = worst.max(e);
        if e > 1e-6 {
            bad += 1;
        }
    }
    let (sums, mags) = reference_partials(n, size);
    let mut bad_sums = 0usize;
    for b in 0..sums.len() {
        // f32 accumulation in a different order: relative to the block's sum of magnitudes.
        if (f64::from(reduced[b]) - sums[b]).abs() > 1e-4 * mags[b].max(1.0) {
            bad_sums += 1;
        }
    }
    let total: f64 = reduced.iter().map(|&v| f64::from(v)).sum();
    let want: f64 = sums.iter().sum();
    let mag: f64 = mags.iter().sum();
    let rel = (total - want).abs() / mag.max(1.0);
    let ok = bad == 0 && bad_sums == 0 && rel <= 1e-4;
    let line = format!(
        "rank {rank} of {size}: elements {}..{}: y {} of {} differ (max rel err {worst:.1e}); block sums {bad_sums} of {} \
         differ; total {total:.3} vs CPU {want:.3} (err {rel:.1e} of Σ|y|): {}",
        work.range.start,
        work.range.end,
        bad,
        work.range.len(),
        sums.len(),
        if ok { "ok" } else { "MISMATCH" }
    );
    if ok { Ok(line) } else { Err(CliError::Failed(line)) }
}

/// Runs the workload.
pub fn run(args: Args) -> CliResult {
    let timeout = Duration::from_secs(args.timeout as u64);
    if args.bootstrap.is_some() && args.processes.is_none() {
        return Err(CliError::Usage("--bootstrap goes with --processes".into()));
    }
    match (args.rank, &args.id_file, args.processes) {
        _ if args.from_env => from_env(args.n, timeout),
        (Some(rank), Some(file), Some(size)) => child(args.n, rank, size, file, timeout),
        (None, _, Some(size)) => parent(args.n, size, args.bootstrap.unwrap_or_default(), timeout),
        (None, _, None) => single(args.n),
        _ => Err(CliError::Usage("--rank needs --processes and --id-file".into())),
    }
}

/// Every GPU of this process, and NCCL's version (a usage error without a GPU). NCCL is loaded
/// first, while this is the only thread (it sets NCCL_NVLS_ENABLE; see cohort_runtime::nccl).
pub fn every_gpu() -> CliResult<(Vec<Gpu>, (u32, u32, u32))> {
    let nccl = cohort_runtime::nccl::version();
    let count = Gpu::count()?;
    if count == 0 {
        return Err(CliError::NoGpu(cohort_runtime::Error::NoDevice { requested: 0, count: 0, detail: None }));
    }
    let gpus = (0..count).map(Gpu::new).collect::<cohort_runtime::Result<Vec<_>>>()?;
    let version = nccl.map_err(nccl_err)?;
    Ok((gpus, version))
}

/// Every GPU from this process.
fn single(n: usize) -> CliResult {
    let (gpus, (major, minor, patch)) = every_gpu()?;
    let count = gpus.len();
    println!("NCCL {major}.{minor}.{patch}, {count} GPU(s) in one process, {n} elements");
    let comms = Comm::for_gpus(&gpus).map_err(nccl_err)?;
    let mut work = gpus
        .iter()
        .enumerate()
        .map(|(r, g)| compute(g, slice_of(n, r, count)))
        .collect::<cohort_runtime::Result<Vec<_>>>()?;
    let mut group = Group::new();
    for (c, w) in comms.iter().zip(&mut work) {
        group.all_reduce_in_place(c, c.gpu().stream(), &mut w.partial, ReduceOp::Sum).map_err(nccl_err)?;
    }
    group.run().map_err(nccl_err)?;
    let mut failed = None;
    for (r, w) in work.iter().enumerate() {
        let reduced = w.partial.to_vec()?;
        match check_rank(w, r, n, count, &reduced) {
            Ok(line) => println!("{line}"),
            Err(CliError::Failed(line)) => {
                println!("{line}");
                failed.get_or_insert(line);
            }
            Err(e) => return Err(e),
        }
    }
    failed.map_or(Ok(()), |_| Err(CliError::Failed("the NCCL workload differs from the CPU".into())))
}

/// Starts `size` copies of this program, one rank each, and waits for them.
fn parent(n: usize, size: usize, bootstrap: Bootstrap, timeout: Duration) -> CliResult {
    let count = Gpu::count()?;
    if size > count {
        return Err(CliError::Usage(format!(
            "--processes {size}: this machine has {count} GPU(s), and NCCL wants one rank per GPU"
        )));
    }
    let exe = std::env::current_exe().map_err(|e| CliError::Failed(format!("finding this program: {e}")))?;
    let common = ["nccl".to_string(), "--n".into(), n.to_string(), "--timeout".into(), timeout.as_secs().to_string()];
    let (file, commands): (Option<PathBuf>, Vec<std::process::Command>) = match bootstrap {
        Bootstrap::File => {
            let file = std::env::temp_dir().join(format!("cohort-nccl-id-{}", std::process::id()));
            let _ = std::fs::remove_file(&file);
            println!("{size} processes, one GPU each, NCCL id through {}", file.display());
            let commands = (0..size)
                .map(|r| {
                    let mut c = std::process::Command::new(&exe);
                    c.args(&common)
                        .args(["--processes", &size.to_string(), "--rank", &r.to_string()])
                        .arg("--id-file")
                        .arg(&file)
                        .env_remove("COHORT_DEVICE");
                    c
                })
                .collect();
            (Some(file), commands)
        }
        Bootstrap::Tcp => {
            let port = free_port()?;
            println!(
                "{size} processes, one GPU each, NCCL id over TCP from rank 0 at 127.0.0.1:{port} (RANK, WORLD_SIZE,                  LOCAL_RANK, MASTER_ADDR, MASTER_PORT as torchrun sets them)"
            );
            let commands = (0..size)
                .map(|r| {
                    let mut c = std::process::Command::new(&exe);
                    c.args(&common).arg("--from-env");
                    for var in CLEARED {
                        c.env_remove(var);
                    }
                    c.envs(launcher_env(r, size, port));
                    c
                })
                .collect();
            (None, commands)
        }
    };
    let children =
        commands.into_iter().map(|mut c| c.spawn().map_err(|e| format!("starting: {e}"))).collect::<Vec<_>>();
    let mut failed = supervise(children, Duration::from_secs(600));
    failed.retain(|f| !f.is_empty());
    if let Some(file) = file {
        let _ = std::fs::remove_file(&file);
    }
    if failed.is_empty() {
        println!("all {size} ranks passed");
        Ok(())
    } else {
        Err(CliError::Failed(format!("ranks failed: {}", failed.join("; "))))
    }
}

/// Variables of the parent's environment that would change how a child reads its launch
/// (another launcher's, torchrun's agent store, Cohort's overrides, a device choice).
const CLEARED: [&str; 9] = [
    "COHORT_DEVICE",
    "COHORT_LAUNCHER",
    "COHORT_RENDEZVOUS_PORT",
    "COHORT_RENDEZVOUS_BIND",
    "COHORT_JOB_ID",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_RUN_ID",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
];

/// The environment torchrun would give rank `rank` of `size` on this machine, rank 0 serving
/// the id on 127.0.0.1:`port`.
fn launcher_env(rank: usize, size: usize, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("RANK", rank.to_string()),
        ("WORLD_SIZE", size.to_string()),
        ("LOCAL_RANK", rank.to_string()),
        ("LOCAL_WORLD_SIZE", size.to_string()),
        ("MASTER_ADDR", "127.0.0.1".into()),
        ("MASTER_PORT", port.to_string()),
        ("COHORT_JOB_ID", format!("cohort-nccl-{}-{port}", std::process::id())),
    ]
}

/// A loopback port free now (the children's rank 0 binds it moments later; if another program
/// takes it meanwhile, rank 0 says so).
fn free_port() -> CliResult<u16> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| CliError::Failed(format!("finding a free port on 127.0.0.1: {e}")))
}

/// Waits for every child. Once one fails, or after `limit`, kills those still running (a rank
/// whose peer is gone would wait in NCCL forever). Returns one line per rank, empty for success.
fn supervise(children: Vec<Result<std::process::Child, String>>, limit: Duration) -> Vec<String> {
    let start = std::time::Instant::now();
    let mut out: Vec<Option<String>> = vec![None; children.len()];
    let mut running: Vec<(usize, std::process::Child)> = Vec::new();
    for (r, c) in children.into_iter().enumerate() {
        match c {
            Ok(c) => running.push((r, c)),
            Err(e) => out[r] = Some(format!("rank {r}: {e}")),
        }
    }
    while !running.is_empty() {
        let mut i = 0;
        while i < running.len() {
            let (r, c) = &mut running[i];
            match c.try_wait() {
                Ok(Some(status)) => {
                    out[*r] = Some(if status.success() { String::new() } else { format!("rank {r}: {status}") });
                    running.swap_remove(i);
                }
                Ok(None) => i += 1,
                Err(e) => {
                    out[*r] = Some(format!("rank {r}: waiting: {e}"));
                    running.swap_remove(i);
                }
            }
        }
        let someone_failed = out.iter().any(|o| o.as_ref().is_some_and(|s| !s.is_empty()));
        if !running.is_empty() && (someone_failed || start.elapsed() > limit) {
            let why = if someone_failed {
                "another rank failed".to_string()
            } else {
                format!("still running after {limit:?}")
            };
            for (r, c) in &mut running {
                let _ = c.kill();
                let _ = c.wait();
                out[*r] = Some(format!("rank {r}: killed ({why})"));
            }
            running.clear();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    out.into_iter().map(Option::unwrap_or_default).collect()
}

/// One rank of a multi-process run, the id through a file.
fn child(n: usize, rank: usize, size: usize, file: &std::path::Path, timeout: Duration) -> CliResult {
    let gpu = Gpu::new(rank)?;
    let comm = Comm::from_id_file(&gpu, file, rank, size, timeout).map_err(nccl_err)?;
    rank_work(&gpu, &comm, n)
}

/// One rank of a job a launcher started: the rank and GPU from the environment, the id over TCP.
fn from_env(n: usize, timeout: Duration) -> CliResult {
    // NCCL first, while this is the only thread (it sets NCCL_NVLS_ENABLE; see cohort_runtime::nccl).
    let nccl = cohort_runtime::nccl::version();
    let launch = Launch::from_env().map_err(nccl_err)?;
    // Device LOCAL_RANK, unless COHORT_DEVICE names one (a launcher that gives each process a
    // GPU of its own, as Slurm's --gpus-per-task: COHORT_DEVICE=0).
    let gpu =
        if std::env::var_os("COHORT_DEVICE").is_some() { Gpu::from_env()? } else { launch.gpu().map_err(nccl_err)? };
    let (major, minor, patch) = nccl.map_err(nccl_err)?;
    if launch.rank == 0 {
        println!("NCCL {major}.{minor}.{patch}, {launch}, device {} on rank 0, {n} elements", gpu.info().ordinal);
    }
    let comm = Comm::from_launch(&gpu, &launch, timeout).map_err(nccl_err)?;
    rank_work(&gpu, &comm, n)
}

/// A rank's share: its slice's kernels, the all-reduce, the check; prints the rank's line.
fn rank_work(gpu: &Gpu, comm: &Comm, n: usize) -> CliResult {
    let (rank, size) = (comm.rank(), comm.size());
    let mut work = compute(gpu, slice_of(n, rank, size))?;
    comm.all_reduce_in_place(gpu.stream(), &mut work.partial, ReduceOp::Sum).map_err(nccl_err)?;
    let reduced = work.partial.to_vec()?;
    let line = check_rank(&work, rank, n, size, &reduced)?;
    println!("{line}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Result<std::process::Child, String> {
        std::process::Command::new("sh").args(["-c", script]).spawn().map_err(|e| e.to_string())
    }

    #[test]
    fn supervise_kills_the_rest_once_a_rank_fails() {
        let t = std::time::Instant::now();
        let out = supervise(vec![sh("exit 0"), sh("sleep 30"), sh("sleep 0.2; exit 3")], Duration::from_secs(60));
        assert!(t.elapsed() < Duration::from_secs(10), "waited for the sleeper");
        assert_eq!(out[0], "");
        assert!(out[1].contains("killed (another rank failed)"), "{}", out[1]);
        assert!(out[2].starts_with("rank 2: exit status: 3"), "{}", out[2]);
    }

    #[test]
    fn supervise_kills_after_the_limit() {
        let out = supervise(vec![sh("exit 0"), sh("sleep 30")], Duration::from_millis(300));
        assert_eq!(out[0], "");
        assert!(out[1].contains("still running"), "{}", out[1]);
        // A rank that did not start counts as failed: the others would wait for it.
        let out = supervise(vec![sh("sleep 30"), Err("starting: nope".into())], Duration::from_secs(60));
        assert!(out[0].contains("killed (another rank failed)"), "{}", out[0]);
        assert_eq!(out[1], "rank 1: starting: nope");
    }

    /// The children of `--processes N --bootstrap tcp` read the launch their parent meant,
    /// whatever launcher variables the parent itself had.
    #[test]
    fn children_read_the_launch_their_parent_gives() {
        let inherited = [("SLURM_PROCID", "3"), ("SLURM_NTASKS", "8"), ("TORCHELASTIC_USE_AGENT_STORE", "True")];
        for rank in 0..3 {
            let mut env: std::collections::HashMap<String, String> =
                inherited.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            for var in CLEARED {
                env.remove(var);
            }
            env.extend(launcher_env(rank, 3, 40_000).into_iter().map(|(k, v)| (k.to_owned(), v)));
            let l = Launch::from_vars(|k| env.get(k).cloned()).unwrap();
            assert_eq!((l.rank, l.world_size, l.local_rank, l.local_world_size), (rank, 3, Some(rank), Some(3)));
            let ep = l.rendezvous.unwrap();
            assert_eq!((ep.host.as_str(), ep.port), ("127.0.0.1", 40_000));
            assert!(l.token.starts_with("cohort-nccl-"), "{}", l.token);
        }
    }

    #[test]
    fn slices_cover_everything_once() {
        for size in 1..=5 {
            let mut next = 0;
            for r in 0..size {
                let s = slice_of(1001, r, size);
                assert_eq!(s.start, next);
                next = s.end;
            }
            assert_eq!(next, 1001);
        }
    }
}

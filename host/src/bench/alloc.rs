//! `cohort bench alloc`: N iterations of allocate → small kernel → free on one stream, with
//! `cuMemAlloc` (`DeviceBuffer::uninit`, whose drop waits for the kernel on the host), with
//! stream-ordered allocation from the device's default pool (`Stream::alloc_uninit`, release
//! threshold 0) and from a pool of its own that keeps its memory (`MemPool`, threshold
//! `u64::MAX`) — each free-running (one synchronize at the end) and synchronizing every
//! iteration (where the threshold matters: a pool at 0 gives its memory back at each
//! synchronize). With `--twin PATH`, the same loops in CUDA C++ (`host/benches/memory_twin.cu`
//! `alloc`) beside them. Wall time per iteration, median of the rounds; each round's last
//! buffer is copied out and checked on both sides.

use std::collections::HashMap;
use std::time::Instant;

use cohort_kernels::PTX;
use cohort_kernels::memory as k;
use cohort_runtime::{DeviceBuffer, Gpu, LaunchConfig, MemPool, Stream, StreamOptions};

use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench alloc`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bytes of each allocation (k, M, G suffixes; a multiple of 4)
    #[arg(long, default_value = "1M", value_parser = util::parse_positive)]
    pub bytes: usize,
    /// Iterations per round
    #[arg(long, default_value = "2000", value_parser = util::parse_positive)]
    pub iters: usize,
    /// Timed rounds, after one warm-up round of 50 iterations (the median is reported)
    #[arg(long, default_value = "10", value_parser = util::parse_positive)]
    pub reps: usize,
    /// The nvcc-built twin (`nvcc -O3 -arch=sm_90 -o memory_twin host/benches/memory_twin.cu`), run after
    #[arg(long, value_name = "BIN")]
    pub twin: Option<String>,
}

/// The ways, in the twin's keys.
const WAYS: [(&str, &str); 3] = [
    ("malloc", "cuMemAlloc / cuMemFree (DeviceBuffer)"),
    ("async_default", "stream-ordered, default pool (threshold 0)"),
    ("async_pool", "stream-ordered, own pool (threshold max)"),
];

/// Runs the twin with `args` and reads its `twin <key> <value>` lines.
pub(super) fn twin_figures(path: &str, args: &[String]) -> CliResult<HashMap<String, f64>> {
    let stdout = util::run_twin(path, args)?;
    let mut out = HashMap::new();
    for line in stdout.lines() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["twin", key, value] => {
                let v = value
                    .parse()
                    .map_err(|_| CliError::Failed(format!("the C++ twin printed a line I cannot read: `{line}`")))?;
                out.insert(key.to_string(), v);
            }
            _ if line.starts_with('#') => println!("C++ twin: {}", line.trim_start_matches("# ")),
            _ => {}
        }
    }
    Ok(out)
}

/// The memory twin's figures for `mode` (`alloc`, `pdl`, `managed`) with `flags` (name, value)
/// and the device's ordinal, when a twin was given.
pub(super) fn memory_twin(
    twin: Option<&str>,
    gpu: &Gpu,
    mode: &str,
    flags: &[(&str, usize)],
) -> CliResult<Option<HashMap<String, f64>>> {
    let Some(path) = twin else { return Ok(None) };
    let mut args = vec![mode.to_string()];
    for (name, value) in flags {
        args.extend([format!("--{name}"), value.to_string()]);
    }
    args.extend(["--device".to_string(), gpu.info().ordinal.to_string()]);
    twin_figures(path, &args).map(Some)
}

/// A table of Cohort's figures, each beside the twin's (when there is one) and their ratio.
pub(super) struct TwinTable {
    table: Table,
    theirs: Option<HashMap<String, f64>>,
    /// Decimals of the figures.
    decimals: usize,
}

impl TwinTable {
    /// Columns `first` and `second` name the row; `unit` is the figures' (e.g. "µs/iter").
    pub(super) fn new(
        first: &str,
        second: &str,
        unit: &str,
        theirs: Option<HashMap<String, f64>>,
        decimals: usize,
    ) -> Self {
        let ours = format!("Cohort {unit}");
        let cpp = format!("C++ {unit}");
        let mut head = vec![first, second, ours.as_str()];
        if theirs.is_some() {
            head.extend([cpp.as_str(), "Cohort / C++"]);
        }
        Self { table: Table::new(&head).numeric(2..head.len()), theirs, decimals }
    }

    /// A row: Cohort's figure `ours` for the twin's key `key`.
    pub(super) fn row(&mut self, first: String, second: String, key: &str, ours: f64) -> CliResult<()> {
        let d = self.decimals;
        let mut cells = vec![first, second, format!("{ours:.d$}")];
        if let Some(t) = &self.theirs {
            let c = t.get(key).copied().ok_or_else(|| CliError::Failed(format!("the twin printed no `{key}`")))?;
            cells.push(format!("{c:.d$}"));
            cells.push(format!("{:.3}", ours / c));
        }
        self.table.row(cells);
        Ok(())
    }

    pub(super) fn print(&self) {
        self.table.print();
    }
}

/// One round of `count` iterations of way `way`: µs per iteration; the last buffer is copied
/// into `check` and checked.
#[allow(clippy::too_many_arguments)]
fn round(
    gpu: &Gpu,
    s: &Stream,
    pool: &MemPool,
    fill: &k::alloc_bench_fill,
    way: usize,
    sync: bool,
    count: usize,
    check: &mut DeviceBuffer<f32>,
) -> CliResult<f64> {
    let n = check.len();
    let cfg = LaunchConfig::for_elements(n, 256);
    let t = Instant::now();
    for i in 0..count {
        // SAFETY: the kernel writes every element before anything reads the buffer.
        let mut buf = unsafe {
            match way {
                0 => DeviceBuffer::<f32>::uninit(gpu, n)?,
                1 => s.alloc_uninit::<f32>(n)?,
                _ => pool.alloc_uninit::<f32>(s, n)?,
            }
        };
        fill.launch(s, cfg, &mut buf, i as f32)?;
        if i == count - 1 {
            s.copy(&buf, &mut *check)?;
        }
        drop(buf);
        if sync {
            s.synchronize()?;
        }
    }
    s.synchronize()?;
    let us = t.elapsed().as_secs_f64() * 1e6 / count as f64;
    let got = check.to_vec()?;
    let want = (count - 1) as f32;
    if let Some(j) = got.iter().position(|&v| v != want) {
        return Err(CliError::Failed(format!("{}: element {j} is {}, expected {want}", WAYS[way].0, got[j])));
    }
    Ok(us)
}

pub fn run(args: Args) -> CliResult {
    let Args { bytes, iters, reps, twin } = args;
    if !bytes.is_multiple_of(4) {
        return Err(CliError::Usage("--bytes must be a multiple of 4 (f32 elements)".into()));
    }
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let fill = k::alloc_bench_fill::load(&module)?;
    let s = gpu.new_stream_with(StreamOptions::new().non_blocking(true))?;
    // The default pool at its default threshold (a setting of the whole process: say it).
    MemPool::device_default(&gpu)?.set_release_threshold(0)?;
    let pool = MemPool::new(&gpu)?;
    pool.set_release_threshold(u64::MAX)?;
    let mut check = gpu.zeroed::<f32>(bytes / 4)?;
    println!(
        "{iters} iterations of allocate {bytes} B -> fill kernel -> free, one non-blocking stream; median of {reps} \
         rounds (+1 warm-up)\n"
    );
    let mut ours: HashMap<String, f64> = HashMap::new();
    for sync in [false, true] {
        for (way, (key, _)) in WAYS.iter().enumerate() {
            round(&gpu, &s, &pool, &fill, way, sync, iters.min(50), &mut check)?;
            let mut t = Vec::with_capacity(reps);
            for _ in 0..reps {
                t.push(round(&gpu, &s, &pool, &fill, way, sync, iters, &mut check)?);
            }
            ours.insert(format!("alloc_{key}_{}_us", if sync { "sync" } else { "free" }), util::median(&mut t));
        }
    }
    let theirs = memory_twin(twin.as_deref(), &gpu, "alloc", &[("bytes", bytes), ("iters", iters), ("reps", reps)])?;
    let mut table = TwinTable::new("allocation", "loop", "µs/iter", theirs, 2);
    for sync in [false, true] {
        for (key, what) in WAYS {
            let k = format!("alloc_{key}_{}_us", if sync { "sync" } else { "free" });
            let loop_ = if sync { "synchronize each iteration" } else { "free-running" };
            table.row(what.to_string(), loop_.to_string(), &k, ours[&k])?;
        }
    }
    table.print();
    println!("every round's last buffer checked ({} floats)", bytes / 4);
    Ok(())
}

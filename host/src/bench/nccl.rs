//! `cohort bench nccl`: NCCL all-reduce (f32, sum, in place) bus bandwidth over every GPU,
//! through Cohort (one process, a communicator per GPU, one NCCL group per all-reduce) and,
//! with `--torch`, through PyTorch's `torch.distributed` (NCCL backend, one process per GPU:
//! `host/benches/nccl_torch.py`, run here as a child process), for the same sizes.
//!
//! Bus bandwidth as nccl-tests defines it: `algBw = bytes / time`, `busBw = algBw × 2(n−1)/n`
//! (what each GPU's links carry, comparable across GPU counts; 0 with one GPU, where algBw is
//! the figure to read). Each sample times `--iters` all-reduces back to back (host wall clock,
//! from a synchronized start to the last stream's end); the median of `--reps` samples.

use std::time::Instant;

use cohort_runtime::Gpu;
use cohort_runtime::nccl::{Comm, Group, ReduceOp};

use crate::nccl::{every_gpu, nccl_err};
use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench nccl` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Message sizes in bytes, comma-separated (suffixes k, M, G: binary)
    #[arg(long, default_value = "1M,4M,16M,64M,256M,1G", value_delimiter = ',', value_parser = crate::util::parse_positive)]
    pub sizes: Vec<usize>,
    /// Also run this PyTorch twin (`host/benches/nccl_torch.py`) with `python3` and show its figures beside Cohort's
    #[arg(long, value_name = "PATH_TO_PY")]
    pub torch: Option<std::path::PathBuf>,
    /// All-reduces per timed sample
    #[arg(long, default_value_t = 20, value_parser = crate::util::parse_positive)]
    pub iters: usize,
    /// Timed samples per size (the median is reported)
    #[arg(long, default_value_t = 7, value_parser = crate::util::parse_positive)]
    pub reps: usize,
}

/// `busBw / algBw` for `n` ranks.
fn bus_factor(n: usize) -> f64 {
    2.0 * (n as f64 - 1.0) / n as f64
}

/// Median seconds of one all-reduce of `bytes` over every communicator.
fn time_cohort(gpus: &[Gpu], comms: &[Comm], bytes: usize, iters: usize, reps: usize) -> CliResult<f64> {
    let len = bytes / 4;
    let mut bufs = gpus.iter().map(|g| g.upload(&vec![1.0f32; len])).collect::<cohort_runtime::Result<Vec<_>>>()?;
    let once = |bufs: &mut [cohort_runtime::DeviceBuffer<f32>]| -> CliResult {
        let mut group = Group::new();
        for (c, b) in comms.iter().zip(bufs.iter_mut()) {
            group.all_reduce_in_place(c, c.gpu().stream(), b, ReduceOp::Sum).map_err(nccl_err)?;
        }
        group.run().map_err(nccl_err)
    };
    let sync = |gpus: &[Gpu]| -> CliResult {
        for g in gpus {
            g.stream().synchronize()?;
        }
        Ok(())
    };
    for _ in 0..3 {
        once(&mut bufs)?;
    }
    sync(gpus)?;
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..iters {
            once(&mut bufs)?;
        }
        sync(gpus)?;
        samples.push(t.elapsed().as_secs_f64() / iters as f64);
    }
    Ok(util::median(&mut samples))
}

/// Runs the twin and parses its `twin allreduce <bytes> <busbw GB/s>` lines.
fn run_torch(path: &std::path::Path, sizes: &[usize], iters: usize, reps: usize) -> CliResult<Vec<(usize, f64)>> {
    let list: Vec<String> = sizes.iter().map(ToString::to_string).collect();
    let out = std::process::Command::new("python3")
        .arg(path)
        .args(["--sizes", &list.join(","), "--iters", &iters.to_string(), "--reps", &reps.to_string()])
        .env("NCCL_NVLS_ENABLE", std::env::var("NCCL_NVLS_ENABLE").unwrap_or_else(|_| "0".into()))
        .output()
        .map_err(|e| CliError::Failed(format!("running python3 {}: {e}", path.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(CliError::Failed(format!(
            "the PyTorch twin failed ({}):\n{text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    for info in text.lines().filter_map(|l| l.strip_prefix("twin info ")) {
        println!("PyTorch twin: {info}");
    }
    Ok(parse_twin(&text))
}

/// `twin allreduce <bytes> <busbw>` lines.
fn parse_twin(text: &str) -> Vec<(usize, f64)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            match (w.next(), w.next(), w.next(), w.next()) {
                (Some("twin"), Some("allreduce"), Some(b), Some(bw)) => Some((b.parse().ok()?, bw.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// Runs the benchmark.
pub fn run(args: Args) -> CliResult {
    let (gpus, (major, minor, patch)) = every_gpu()?;
    let count = gpus.len();
    let names: Vec<String> = gpus.iter().map(|g| g.info().name.clone()).collect();
    println!(
        "all-reduce f32 sum in place over {count} GPU(s) ({}), NCCL {major}.{minor}.{patch}, NCCL_NVLS_ENABLE={}; \
         median of {} samples of {} back-to-back all-reduces",
        names.join(", "),
        std::env::var("NCCL_NVLS_ENABLE").unwrap_or_else(|_| "0 (Cohort's default)".into()),
        args.reps,
        args.iters
    );
    let comms = Comm::for_gpus(&gpus).map_err(nccl_err)?;
    let mut ours = Vec::new();
    for &bytes in &args.sizes {
        let bytes = bytes / 4 * 4;
        let s = time_cohort(&gpus, &comms, bytes, args.iters, args.reps)?;
        ours.push((bytes, s));
    }
    drop(comms);
    let twin = match &args.torch {
        Some(p) => {
            Some(run_torch(p, &args.sizes.iter().map(|b| b / 4 * 4).collect::<Vec<_>>(), args.iters, args.reps)?)
        }
        None => None,
    };
    let factor = bus_factor(count);
    let mut table = Table::new(&[
        "bytes",
        "Cohort time µs",
        "Cohort algBw GB/s",
        "Cohort busBw GB/s",
        "PyTorch busBw GB/s",
        "ratio",
    ])
    .numeric(0..6);
    let mut goal = Vec::new();
    for &(bytes, s) in &ours {
        let alg = bytes as f64 / s / 1e9;
        let bus = alg * factor;
        let theirs = twin.as_ref().and_then(|t| t.iter().find(|(b, _)| *b == bytes).map(|&(_, bw)| bw));
        let ratio = theirs.filter(|&t| t > 0.0).map(|t| bus / t);
        if let (Some(r), true) = (ratio, bytes >= 64 << 20) {
            goal.push(r);
        }
        table.row(vec![
            bytes.to_string(),
            format!("{:.1}", s * 1e6),
            format!("{alg:.1}"),
            format!("{bus:.1}"),
            theirs.map_or("-".into(), |t| format!("{t:.1}")),
            ratio.map_or("-".into(), |r| format!("{r:.3}")),
        ]);
    }
    table.print();
    if count == 1 {
        println!("one GPU: busBw is 0 by definition (nothing crosses a link); compare algBw");
    }
    if !goal.is_empty() {
        let worst = goal.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "goal busBw ≥ 0.97 × PyTorch at ≥ 64 MiB: worst ratio {worst:.3}: {}",
            if worst >= 0.97 { "met" } else { "missed" }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twin_lines_parse() {
        let t = "NCCL INFO noise\ntwin allreduce 1048576 12.5\ntwin allreduce 67108864 301.25\nother 1 2\n";
        assert_eq!(parse_twin(t), vec![(1 << 20, 12.5), (64 << 20, 301.25)]);
    }

    #[test]
    fn bus_factor_is_nccl_tests() {
        assert_eq!(bus_factor(1), 0.0);
        assert_eq!(bus_factor(2), 1.0);
        assert_eq!(bus_factor(4), 1.5);
    }
}

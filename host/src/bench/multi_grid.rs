//! `cohort bench multi-grid`: the latency of one multi-grid sync (`MultiGridGroup::sync`) on
//! one GPU and on every GPU, beside `grid.sync()` on one GPU, and with `--twin PATH` the same
//! three through the C++ twin of NVIDIA's multi-device pattern (`host/benches/multigrid_twin.cu`,
//! built with nvcc), in rounds that alternate the twin (a child process) and Cohort.
//!
//! Both sides: one block of `--threads` threads per SM on every GPU; a launch of `--iters`
//! syncs and a launch of none, each timed on the host from the first launch to the last
//! stream's end, `--reps` times; the figure is (median full − median empty) / iters, in µs;
//! then the median over rounds. Every launch's block marks are checked.

use std::collections::BTreeMap;
use std::time::Instant;

use cohort_kernels::{PTX, bench as kb, multi as km};
use cohort_runtime::{DeviceBuffer, Gpu, LaunchConfig, MultiGrid};

use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench multi-grid` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Syncs per timed launch
    #[arg(long, default_value = "20000", value_parser = crate::util::parse_positive)]
    pub iters: usize,
    /// Timed launches per case and round (medians are taken)
    #[arg(long, default_value = "5", value_parser = crate::util::parse_positive)]
    pub reps: usize,
    /// Threads per block (one block per SM)
    #[arg(long, default_value = "256", value_parser = crate::util::parse_positive)]
    pub threads: usize,
    /// Rounds, alternating the C++ twin and Cohort
    #[arg(long, default_value = "3", value_parser = crate::util::parse_positive)]
    pub rounds: usize,
    /// The nvcc-built twin (`nvcc -O3 -arch=sm_90 -o BIN host/benches/multigrid_twin.cu`), run side by side
    #[arg(long, value_name = "PATH")]
    pub twin: Option<String>,
}

/// (kind, GPUs) → µs per sync of each round.
type Figures = BTreeMap<(String, usize), Vec<f64>>;

fn parse_twin(stdout: &str, into: &mut Figures, first: bool) -> CliResult {
    util::twin_lines(stdout, first, |[kind, gpus], v| {
        into.entry((kind.to_string(), gpus.parse().ok()?)).or_default().push(v);
        Some(())
    })
}

fn run_twin(path: &str, args: &Args, into: &mut Figures, first: bool) -> CliResult {
    let stdout = util::run_twin(
        path,
        &["--iters", &args.iters.to_string(), "--reps", &args.reps.to_string(), "--threads", &args.threads.to_string()],
    )?;
    parse_twin(&stdout, into, first)
}

/// Checks that every block of every grid reported `iters` syncs.
fn check_marks(marks: &[DeviceBuffer<u32>], iters: u32) -> CliResult {
    for (g, m) in marks.iter().enumerate() {
        if let Some(bad) = m.to_vec()?.into_iter().find(|&v| v != iters) {
            return Err(CliError::Failed(format!("grid {g}: a block reported {bad} syncs, expected {iters}")));
        }
    }
    Ok(())
}

/// Seconds of one multi-grid launch of `iters` syncs on `gpus` (launch to the end of every stream).
fn multi_once(
    group: &MultiGrid,
    kernels: &[km::bench_multi_grid_sync],
    marks: &mut [DeviceBuffer<u32>],
    cfg: LaunchConfig,
    iters: u32,
) -> CliResult<f64> {
    let t = Instant::now();
    let mut launch = group.launch(cfg);
    for ((k, g), m) in kernels.iter().zip(group.gpus()).zip(marks.iter_mut()) {
        k.add_to(&mut launch, g.stream(), iters, m)?;
    }
    launch.submit()?;
    for g in group.gpus() {
        g.stream().synchronize()?;
    }
    let s = t.elapsed().as_secs_f64();
    check_marks(marks, iters)?;
    Ok(s)
}

/// µs per sync: (median of `reps` full launches − median of `reps` empty ones) / iters.
fn per_sync(reps: usize, iters: u32, mut once: impl FnMut(u32) -> CliResult<f64>) -> CliResult<f64> {
    once(iters)?; // warm-up
    let (mut base, mut full) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        base.push(once(0)?);
        full.push(once(iters)?);
    }
    Ok((util::median(&mut full) - util::median(&mut base)) / iters as f64 * 1e6)
}

/// One round of Cohort's three figures into `into`.
fn measure(gpus: &[Gpu], args: &Args, into: &mut Figures) -> CliResult {
    let iters = args.iters as u32;
    let sms = gpus.iter().map(|g| g.info().sms).min().unwrap_or(1);
    let cfg = LaunchConfig::new(sms, args.threads as u32);
    let modules = gpus.iter().map(|g| g.load(&PTX)).collect::<cohort_runtime::Result<Vec<_>>>()?;
    let kernels = modules.iter().map(km::bench_multi_grid_sync::load).collect::<cohort_runtime::Result<Vec<_>>>()?;
    let mut marks = gpus.iter().map(|g| g.zeroed::<u32>(sms as usize)).collect::<cohort_runtime::Result<Vec<_>>>()?;

    // grid.sync on GPU 0.
    let gk = kb::bench_grid_sync::load(&modules[0])?;
    let g0 = &gpus[0];
    let us = per_sync(args.reps, iters, |n| {
        let t = Instant::now();
        gk.launch_cooperative(g0.stream(), cfg, n, &mut marks[0])?;
        g0.stream().synchronize()?;
        let s = t.elapsed().as_secs_f64();
        check_marks(&marks[..1], n)?;
        Ok(s)
    })?;
    into.entry(("grid_sync".into(), 1)).or_default().push(us);

    let mut sizes = vec![1];
    if gpus.len() > 1 {
        sizes.push(gpus.len());
    }
    for n in sizes {
        let group = MultiGrid::new(&gpus[..n])?;
        let us = per_sync(args.reps, iters, |it| multi_once(&group, &kernels[..n], &mut marks[..n], cfg, it))?;
        into.entry(("multi_grid".into(), n)).or_default().push(us);
    }
    Ok(())
}

pub fn run(args: Args) -> CliResult {
    let gpus = Gpu::all()?;
    if gpus.is_empty() {
        return Err(CliError::Failed("no GPU".into()));
    }
    for g in &gpus {
        println!("{}", g.info());
    }
    println!(
        "one block of {} threads per SM, {} syncs per launch, {} launches per case, {} rounds; block marks checked",
        args.threads, args.iters, args.reps, args.rounds
    );
    let (mut ours, mut theirs) = (Figures::new(), Figures::new());
    let progress = util::progress(args.rounds * (1 + usize::from(args.twin.is_some())));
    for round in 0..args.rounds {
        if let Some(path) = &args.twin {
            progress.set_message(format!("round {}: C++ twin", round + 1));
            run_twin(path, &args, &mut theirs, round == 0)?;
            progress.inc(1);
        }
        progress.set_message(format!("round {}: Cohort", round + 1));
        measure(&gpus, &args, &mut ours)?;
        progress.inc(1);
    }
    progress.finish_and_clear();
    let twin = args.twin.is_some();
    let mut head = vec!["sync", "GPUs", "Cohort µs"];
    if twin {
        head.extend(["C++ µs", "Cohort / C++ time"]);
    }
    let mut t = Table::new(&head).numeric(1..head.len());
    let mut worst: Option<f64> = None;
    for ((kind, n), v) in &ours {
        let mine = util::median(&mut v.clone());
        let name = if kind == "grid_sync" { "grid.sync()" } else { "multi_grid.sync()" };
        let mut row = vec![name.to_string(), n.to_string(), format!("{mine:.2}")];
        if twin {
            let cpp = util::twin_figure(&theirs, &(kind.clone(), *n), &format!("{kind} {n}"))?;
            let ratio = mine / cpp;
            if kind == "multi_grid" {
                worst = Some(worst.map_or(ratio, |w: f64| w.max(ratio)));
            }
            row.extend([format!("{cpp:.2}"), format!("{ratio:.3}")]);
        }
        t.row(row);
    }
    t.print();
    if let Some(w) = worst {
        println!("highest multi-grid Cohort / C++ time: {w:.3} (goal <= 1.2)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twin_lines_are_parsed() {
        let mut f = Figures::new();
        parse_twin("# H200\ntwin grid_sync 1 1.25\ntwin multi_grid 2 4.5\nnoise\n", &mut f, false).unwrap();
        assert_eq!(f[&("grid_sync".to_string(), 1)], vec![1.25]);
        assert_eq!(f[&("multi_grid".to_string(), 2)], vec![4.5]);
        assert!(parse_twin("twin multi_grid two 4.5", &mut f, false).is_err());
    }
}

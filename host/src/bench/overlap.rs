//! `cohort bench overlap`: the overlap article's experiment ([`crate::overlap`]) through
//! Cohort — sequential, V1 and V2 with 4, 8 and 16 streams, the whole-array transfers and
//! kernel alone — and, with `--twin PATH`, the same experiment in CUDA C++
//! (`host/benches/overlap_twin.cu`, built with nvcc) side by side.
//!
//! The C++ twin runs as a child process, in rounds: a block of its repetitions, then a block of
//! Cohort's, and again, so that clock or thermal drift during the benchmark hits both sides
//! alike. Each side's figure is the median over the rounds of each round's median.

use std::collections::HashMap;

use crate::overlap::{Alone, Experiment, TOLERANCE, Way, check_n, within_tolerance};
use crate::util::{self, CliError, CliResult, Table};

/// One side's figures for one round (or the medians over rounds): `(key, streams) → value`,
/// with the twin's keys (`seq_ms`, `v1_ms`, `h2d_ms`, `v2_err`, …).
#[derive(Default)]
struct Figures(HashMap<(String, usize), Vec<f64>>);

impl Figures {
    fn push(&mut self, key: &str, streams: usize, v: f64) {
        self.0.entry((key.to_string(), streams)).or_default().push(v);
    }
    fn get(&self, key: &str, streams: usize) -> Option<f64> {
        let v = self.0.get(&(key.to_string(), streams))?;
        // Errors: the worst round; times: the median of the rounds.
        if key.ends_with("_err") {
            Some(v.iter().copied().fold(0.0, |m, e| if e.is_nan() || m.is_nan() { f64::NAN } else { m.max(e) }))
        } else {
            Some(util::median(&mut v.clone()))
        }
    }
    fn need(&self, who: &str, key: &str, streams: usize) -> CliResult<f64> {
        self.get(key, streams).ok_or_else(|| CliError::Failed(format!("{who}: no `{key} {streams}` measurement")))
    }
}

/// One round of the twin: runs it and parses its `twin <key> <streams> <value>` lines.
fn run_twin(path: &str, args: &[String], into: &mut Figures, first: bool) -> CliResult {
    let stdout = util::run_twin(path, args)?;
    util::twin_lines(&stdout, first, |[key, streams], v| {
        into.push(key, streams.parse().ok()?, v);
        Some(())
    })
}

/// One round of Cohort's side, in the twin's keys.
fn run_cohort(ex: &mut Experiment, counts: &[usize], warmup: usize, reps: usize, into: &mut Figures) -> CliResult {
    let alone = ex.alone(warmup, reps)?;
    let gb = ex.bytes() as f64 / 1e6;
    for (key, v) in [
        ("h2d_ms", alone.h2d),
        ("d2h_ms", alone.d2h),
        ("kernel_ms", alone.kernel),
        ("h2d_gbs", gb / alone.h2d),
        ("d2h_gbs", gb / alone.d2h),
    ] {
        into.push(key, 1, v);
    }
    let mut one = |way: Way, c: usize| -> CliResult {
        let mut t = ex.runs(way, c, warmup, reps)?;
        into.push(&format!("{}_ms", way.key()), c, util::median(&mut t));
        into.push(&format!("{}_err", way.key()), c, f64::from(ex.max_error()?));
        Ok(())
    };
    one(Way::Sequential, 1)?;
    for &c in counts {
        one(Way::V1, c)?;
        one(Way::V2, c)?;
    }
    Ok(())
}

fn alone_of(f: &Figures, who: &str) -> CliResult<Alone> {
    Ok(Alone { h2d: f.need(who, "h2d_ms", 1)?, d2h: f.need(who, "d2h_ms", 1)?, kernel: f.need(who, "kernel_ms", 1)? })
}

fn table(head: &[&str]) -> Table {
    Table::new(head).numeric(1..head.len())
}

/// `cohort bench overlap`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Floats in the array (k, M, G suffixes; at least the most streams, at most 2^31)
    #[arg(long, default_value = "128M", value_parser = util::parse_usize)]
    pub n: usize,
    /// Stream counts to run V1 and V2 with, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "4,8,16", value_parser = util::parse_positive)]
    pub streams: Vec<usize>,
    /// Timed runs per measurement, over all rounds (the median is reported)
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub reps: usize,
    /// Rounds, alternating the C++ twin and Cohort [default: 4 with --twin, else 1]
    #[arg(long, value_parser = util::parse_positive)]
    pub rounds: Option<usize>,
    /// Untimed runs before each measurement
    #[arg(long, default_value = "2", value_parser = util::parse_usize)]
    pub warmup: usize,
    /// The nvcc-built twin (`nvcc -O3 -arch=sm_90 -o BIN host/benches/overlap_twin.cu`), run side by side
    #[arg(long, value_name = "BIN")]
    pub twin: Option<String>,
}

pub fn run(args: Args) -> CliResult {
    let Args { n, streams: counts, reps, rounds, warmup, twin } = args;
    let rounds = rounds.unwrap_or(if twin.is_some() { 4 } else { 1 });
    check_n(n, &counts)?;
    if twin.is_some() && counts.iter().any(|&c| !n.is_multiple_of(c * 256)) {
        return Err(CliError::Usage(
            "with --twin, --n must be a multiple of 256 × each stream count (the article's \
                                     kernel has no bounds check)"
                .into(),
        ));
    }
    let per_round = reps.div_ceil(rounds);
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let mut ex = Experiment::new(&gpu, n, counts.iter().copied().max().unwrap_or(1))?;
    println!(
        "{n} floats ({:.0} MiB), pinned; streams {counts:?}; {rounds} round(s) of {per_round} runs (+{warmup} warm-up) \
         per measurement{}\n",
        ex.bytes() as f64 / (1 << 20) as f64,
        if twin.is_some() { ", alternating C++ and Cohort" } else { "" }
    );
    let twin_args: Vec<String> = [
        "--n".to_string(),
        n.to_string(),
        "--streams".into(),
        counts.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
        "--reps".into(),
        per_round.to_string(),
        "--warmup".into(),
        warmup.to_string(),
        "--device".into(),
        gpu.info().ordinal.to_string(),
    ]
    .into();
    let (mut ours, mut theirs) = (Figures::default(), Figures::default());
    let progress = util::progress(rounds * (1 + usize::from(twin.is_some())));
    for round in 0..rounds {
        if let Some(path) = &twin {
            progress.set_message(format!("round {}: C++ twin", round + 1));
            let mut f = Figures::default();
            run_twin(path, &twin_args, &mut f, round == 0)?;
            merge(&mut theirs, f);
            progress.inc(1);
        }
        progress.set_message(format!("round {}: Cohort", round + 1));
        let mut f = Figures::default();
        run_cohort(&mut ex, &counts, warmup, per_round, &mut f)?;
        merge(&mut ours, f);
        progress.inc(1);
    }
    progress.finish_and_clear();

    let a = alone_of(&ours, "Cohort")?;
    let b = match twin {
        Some(_) => Some(alone_of(&theirs, "C++ twin")?),
        None => None,
    };
    let mut ways = vec![(Way::Sequential, 1)];
    for &c in &counts {
        ways.push((Way::V1, c));
        ways.push((Way::V2, c));
    }
    let mut worst = 0.0f64;
    let mut t = match b {
        Some(_) => table(&[
            "way",
            "streams",
            "Cohort ms",
            "C++ ms",
            "Cohort / C++",
            "overlap Cohort",
            "overlap C++",
            "max error Cohort",
            "max error C++",
        ]),
        None => table(&["way", "streams", "Cohort ms", "overlap", "max error"]),
    };
    for (way, c) in ways {
        let k = way.key();
        let ms = ours.need("Cohort", &format!("{k}_ms"), c)?;
        let err = ours.need("Cohort", &format!("{k}_err"), c)?;
        worst = if err.is_nan() || worst.is_nan() { f64::NAN } else { worst.max(err) };
        let mut row = vec![way.label().to_string(), c.to_string(), format!("{ms:.3}")];
        match b {
            Some(b) => {
                let cpp = theirs.need("C++ twin", &format!("{k}_ms"), c)?;
                let cerr = theirs.need("C++ twin", &format!("{k}_err"), c)?;
                row.extend([
                    format!("{cpp:.3}"),
                    format!("{:.3}", ms / cpp),
                    format!("{:.0}%", 100.0 * a.bound() / ms),
                    format!("{:.0}%", 100.0 * b.bound() / cpp),
                    format!("{err:.1e}"),
                    format!("{cerr:.1e}"),
                ]);
            }
            None => row.extend([format!("{:.0}%", 100.0 * a.bound() / ms), format!("{err:.1e}")]),
        }
        t.row(row);
    }
    t.print();

    let mut t = match b {
        Some(_) => table(&["alone, whole array", "Cohort", "C++", "Cohort / C++"]),
        None => table(&["alone, whole array", "Cohort"]),
    };
    let gb = ex.bytes() as f64 / 1e6;
    /// A figure from the medians and the array's size in MB.
    type Figure = fn(&Alone, f64) -> f64;
    let lines: [(&str, Figure, &str); 5] = [
        ("H2D, pinned", |x, gb| gb / x.h2d, "GB/s"),
        ("D2H, pinned", |x, gb| gb / x.d2h, "GB/s"),
        ("H2D", |x, _| x.h2d, "ms"),
        ("D2H", |x, _| x.d2h, "ms"),
        ("kernel", |x, _| x.kernel, "ms"),
    ];
    for (name, f, unit) in lines {
        let mut row = vec![format!("{name} ({unit})"), format!("{:.3}", f(&a, gb))];
        if let Some(b) = &b {
            row.extend([format!("{:.3}", f(b, gb)), format!("{:.3}", f(&a, gb) / f(b, gb))]);
        }
        t.row(row);
    }
    let mut row = vec!["ideal: max(H2D, kernel, D2H) (ms)".to_string(), format!("{:.3}", a.bound())];
    if let Some(b) = &b {
        row.extend([format!("{:.3}", b.bound()), format!("{:.3}", a.bound() / b.bound())]);
    }
    t.row(row);
    println!();
    t.print();
    println!("overlap = ideal / time; max error = max |a[i] - (a0[i] + 1)| over the array after the last run");
    if !within_tolerance(worst) {
        return Err(CliError::Failed(format!("Cohort's max error {worst:e} is above {TOLERANCE:e}")));
    }
    if b.is_some() {
        let mut bad = Vec::new();
        for ((key, c), _) in theirs.0.iter().filter(|(k, _)| k.0.ends_with("_err")) {
            let e = theirs.get(key, *c).unwrap_or(f64::NAN);
            if !within_tolerance(e) {
                bad.push(format!("{key} {c}: {e:e}"));
            }
        }
        if !bad.is_empty() {
            return Err(CliError::Failed(format!(
                "the C++ twin's max error is above {TOLERANCE:e}: {}",
                bad.join(", ")
            )));
        }
    }
    Ok(())
}

/// Adds a round's figures (each already one value per key) to the totals.
fn merge(total: &mut Figures, round: Figures) {
    for ((key, c), v) in round.0 {
        for x in v {
            total.push(&key, c, x);
        }
    }
}

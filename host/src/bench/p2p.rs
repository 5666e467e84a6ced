//! `cohort bench p2p`: the peer copy bandwidth of every GPU pair (see `cohort p2p`) and, with
//! `--twin PATH`, the same pairs through CUDA C++ `cudaMemcpyPeerAsync`
//! (`host/benches/p2p_twin.cu`, built with nvcc) side by side, in rounds that alternate the twin
//! (a child process) and Cohort. Each figure is the median over rounds of each round's median
//! block. The twin prints `twin <mode> <src> <dst> <GB/s>` lines, `mode` one of `uni_off`,
//! `bidi_off`, `uni_on`, `bidi_on`; both sides check every copy's data.

use std::collections::BTreeMap;

use crate::p2p::{self, Cell};
use crate::util::{self, CliResult, Table};

/// `cohort bench p2p` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// MiB per copy
    #[arg(long, default_value = "256", value_parser = crate::util::parse_positive)]
    pub mib: usize,
    /// Copies per timed block
    #[arg(long, default_value = "10", value_parser = crate::util::parse_positive)]
    pub reps: usize,
    /// Timed blocks per round (the median is taken)
    #[arg(long, default_value = "5", value_parser = crate::util::parse_positive)]
    pub blocks: usize,
    /// Rounds, alternating the C++ twin and Cohort
    #[arg(long, default_value = "3", value_parser = crate::util::parse_positive)]
    pub rounds: usize,
    /// The nvcc-built twin (`nvcc -O3 -arch=sm_90 -o BIN host/benches/p2p_twin.cu`), run side by side
    #[arg(long, value_name = "PATH")]
    pub twin: Option<String>,
}

/// (mode, src, dst) → GB/s of each round.
type Figures = BTreeMap<(String, usize, usize), Vec<f64>>;

const MODES: [&str; 4] = ["uni_off", "bidi_off", "uni_on", "bidi_on"];

/// Parses the twin's output into `into`.
fn parse_twin(stdout: &str, into: &mut Figures, first: bool) -> CliResult {
    util::twin_lines(stdout, first, |[mode, src, dst], v| {
        into.entry((mode.to_string(), src.parse().ok()?, dst.parse().ok()?)).or_default().push(v);
        Some(())
    })
}

fn run_twin(path: &str, args: &Args, into: &mut Figures, first: bool) -> CliResult {
    let stdout = util::run_twin(
        path,
        &["--mib", &args.mib.to_string(), "--reps", &args.reps.to_string(), "--blocks", &args.blocks.to_string()],
    )?;
    parse_twin(&stdout, into, first)
}

fn push(into: &mut Figures, mode: &str, cells: &[Cell], uni: bool) {
    for c in cells {
        into.entry((mode.to_string(), c.src, c.dst)).or_default().push(if uni { c.uni } else { c.bidi });
    }
}

pub fn run(args: Args) -> CliResult {
    let gpus = p2p::two_or_more()?;
    let n = args.mib * (1 << 20) / 4;
    for g in &gpus {
        println!("{}", g.info());
    }
    println!(
        "{} MiB per copy, {} copies per block, {} blocks per round, {} rounds; every copy checked on both sides",
        args.mib, args.reps, args.blocks, args.rounds
    );
    let (mut ours, mut theirs) = (Figures::new(), Figures::new());
    // Peer access, once enabled, stays on in this process: every round measures "off" first.
    // The "off" rounds therefore run before any "on" round.
    let progress = util::progress(args.rounds * (1 + usize::from(args.twin.is_some())));
    for round in 0..args.rounds {
        if let Some(path) = &args.twin {
            progress.set_message(format!("round {}: C++ twin", round + 1));
            run_twin(path, &args, &mut theirs, round == 0)?;
            progress.inc(1);
        }
        progress.set_message(format!("round {}: Cohort, peer access off", round + 1));
        let off = p2p::measure_all(&gpus, n, args.reps, args.blocks)?;
        push(&mut ours, "uni_off", &off, true);
        push(&mut ours, "bidi_off", &off, false);
        progress.inc(1);
    }
    p2p::enable_all(&gpus)?;
    for round in 0..args.rounds {
        progress.set_message(format!("round {}: Cohort, peer access on", round + 1));
        let on = p2p::measure_all(&gpus, n, args.reps, args.blocks)?;
        push(&mut ours, "uni_on", &on, true);
        push(&mut ours, "bidi_on", &on, false);
    }
    progress.finish_and_clear();
    let twin = args.twin.is_some();
    let mut head = vec!["mode", "src", "dst", "Cohort GB/s"];
    if twin {
        head.extend(["C++ GB/s", "Cohort / C++"]);
    }
    let mut t = Table::new(&head).numeric(1..head.len());
    let mut worst: Option<f64> = None;
    for mode in MODES {
        for ((m, src, dst), v) in &ours {
            if m != mode {
                continue;
            }
            let mine = util::median(&mut v.clone());
            let mut row = vec![mode.to_string(), src.to_string(), dst.to_string(), format!("{mine:.1}")];
            if twin {
                let cpp = util::twin_figure(&theirs, &(mode.to_string(), *src, *dst), &format!("{mode} {src} {dst}"))?;
                let ratio = mine / cpp;
                worst = Some(worst.map_or(ratio, |w: f64| w.min(ratio)));
                row.extend([format!("{cpp:.1}"), format!("{ratio:.3}")]);
            }
            t.row(row);
        }
    }
    t.print();
    if let Some(w) = worst {
        println!("lowest Cohort / C++ ratio: {w:.3} (goal >= 0.97)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twin_lines_are_parsed() {
        let mut f = Figures::new();
        parse_twin("# device 0: H200\ntwin uni_off 0 1 41.5\ntwin bidi_on 1 0 80.25\nnoise\n", &mut f, false).unwrap();
        assert_eq!(f[&("uni_off".to_string(), 0, 1)], vec![41.5]);
        assert_eq!(f[&("bidi_on".to_string(), 1, 0)], vec![80.25]);
        assert!(parse_twin("twin uni_off zero 1 2.0", &mut f, false).is_err());
    }
}

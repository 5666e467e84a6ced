//! `cohort`: device information, the kernel tour, and benchmarks.
//!
//! ```text
//! cohort info                 devices, and the embedded kernels with their resource use
//! cohort tour [--n N]         runs every tour kernel against a CPU reference, prints a table
//! cohort bench launch         launch overhead: typed launch vs raw cuLaunchKernel
//! cohort bench cg             cooperative-groups kernels, Rust vs CUDA C++
//! cohort bench atomics        histograms and dot products, Rust vs CUDA C++
//! cohort bench overlap        the overlap article's three ways, Rust vs the nvcc twin
//! cohort atomics [workload]   the atomics-and-mutex tutorial's workloads
//! cohort overlap              the overlap article's three ways once, checked, with an engine diagram
//! cohort pipeline             a host array of GiBs through a multi-stream pinned pipeline
//! ```
//!
//! Without a GPU every command that needs one says so and exits with status 2.

mod atomics;
mod bench;
mod info;
mod overlap;
mod pipeline;
mod tour;
mod util;

use std::process::ExitCode;

const USAGE: &str = "usage: cohort <command> [options]

commands:
  info                     devices, cooperative-launch support, embedded kernels and their resource use
  tour [--n N] [--seed S]  run every tour kernel on random data and check it against the CPU
  bench launch [--iters N] launch overhead: typed launch vs raw cuLaunchKernel (median of N launches)
  bench cg [--n N] [--reps R] [--twins-ptx FILE]
                           cooperative-groups kernels, Rust vs the same kernels in CUDA C++ (NVRTC)
  bench atomics [--size BYTES] [--reps R] [--twins-ptx FILE] [--dump DIR]
                           histograms and dot products, Rust vs CUDA C++; --dump writes CUB's inputs
  bench overlap [--n N] [--streams 4,8,16] [--reps R] [--rounds K] [--twin PATH]
                           the overlap article (sequential, V1, V2 over N streams) against max(H2D, kernel,
                           D2H); --twin runs the nvcc-built host/benches/overlap_twin.cu side by side
  atomics [race|mutex|histogram|dot|all] [--size BYTES] [--n N]
                           the atomics-and-mutex tutorial's workloads, checked against the CPU
  overlap [--streams N] [--n N] [--timeline FILE.svg]
                           the overlap article's three ways once each, checked against the CPU;
                           --timeline draws each stream's copies and kernels (events around each)
  pipeline [--gib G] [--streams N] [--chunk-mib M] [--host-threads T] [--pinned]
                           G GiB through cohort_runtime::Pipeline (double-buffered pinned staging),
                           every element checked; GB/s against the pinned H2D/D2H bound
  help                     this text

environment: COHORT_DEVICE=<ordinal> picks the GPU (default 0)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    let result = match cmd.as_str() {
        "info" => info::run(rest),
        "tour" => tour::run(rest),
        "bench" => bench::run(rest),
        "atomics" => atomics::run(rest),
        "overlap" => overlap::run(rest),
        "pipeline" => pipeline::run(rest),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(util::CliError::Usage(format!("unknown command `{other}`"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(util::CliError::Usage(m)) => {
            eprintln!("cohort: {m}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(util::CliError::NoGpu(e)) => {
            eprintln!("cohort: no GPU to run on: {e}");
            ExitCode::from(2)
        }
        Err(util::CliError::Failed(m)) => {
            eprintln!("cohort: {m}");
            ExitCode::FAILURE
        }
    }
}

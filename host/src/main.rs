//! `cohort`: device information, the kernel tour, and benchmarks.
//!
//! ```text
//! cohort info                 devices, and the embedded kernels with their resource use
//! cohort tour [--n N]         runs every tour kernel against a CPU reference, prints a table
//! cohort bench launch         launch overhead: typed launch vs raw cuLaunchKernel
//! cohort bench cg             cooperative-groups kernels, Rust vs CUDA C++
//! cohort bench atomics        histograms and dot products, Rust vs CUDA C++
//! cohort atomics [workload]   the atomics-and-mutex tutorial's workloads
//! ```
//!
//! Without a GPU every command that needs one says so and exits with status 2.

mod atomics;
mod bench;
mod info;
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
  atomics [race|mutex|histogram|dot|all] [--size BYTES] [--n N]
                           the atomics-and-mutex tutorial's workloads, checked against the CPU
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

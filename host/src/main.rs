//! `cohort`: device information, a check of this machine, one kernel's PTX or SASS, the kernel
//! tour, the tutorials' workloads and benchmarks. `cohort --help` lists the commands,
//! `cohort <command> --help` each one's options.
//!
//! Exit status: 0 success; 1 a failure (a kernel, a check, a failed `doctor` check); 2 a usage
//! error, or no GPU for a command that needs one (the message says so).
//!
//! A new command: a module with an `Args` struct (`#[derive(clap::Args)]`, documented fields:
//! they are its `--help`) and `run(Args) -> CliResult`; a variant of [`Command`] (its doc
//! comment is the one-line help); its arm in [`run`]. A new benchmark goes into
//! [`bench::Bench`] the same way.

mod atomics;
mod bench;
mod doctor;
mod dynamic;
mod info;
mod inspect;
mod managed;
mod multi_grid;
mod nccl;
mod overlap;
mod p2p;
mod pipeline;
mod timing;
mod tools;
mod tour;
mod util;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use util::{CliError, CliResult};

/// CUDA kernels in pure Rust: devices, checks, inspection, the tour, workloads and benchmarks.
#[derive(Parser, Debug)]
#[command(
    name = "cohort",
    version,
    arg_required_else_help = true,
    after_help = "Environment: COHORT_DEVICE=<ordinal> picks the GPU (default 0); COHORT_DEVICE=cpu the CPU device.\n\
                  Without a GPU, `tour`, `atomics` and `managed` run on the CPU device (cohort-cpu); `--device cpu` asks for it.\n\
                  Exit status: 0 success, 1 a failure, 2 a usage error or no GPU."
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Devices, cooperative-launch support, the embedded kernels and their resource use
    Info,
    /// Checks this machine: toolchain, nvptx build, ptxas, driver and GPUs, device runtime, NCCL
    Doctor(doctor::Args),
    /// Prints one embedded kernel's PTX (the entry and what it uses) with its resource use
    Ptx(inspect::PtxArgs),
    /// Prints one embedded kernel's SASS (ptxas, then nvdisasm or cuobjdump) with its resource use
    Sass(inspect::SassArgs),
    /// Runs every tour kernel on random data and checks it against the CPU
    Tour(tour::Args),
    /// Benchmarks, each beside its reference (CUDA C++ twins, raw launches, cuBLAS)
    #[command(subcommand)]
    Bench(bench::Bench),
    /// The atomics-and-mutex tutorial's workloads, checked against the CPU
    Atomics(atomics::Args),
    /// The overlap article's three ways once each, checked against the CPU, with an engine diagram
    Overlap(overlap::Args),
    /// A host array of GiBs through H2D, kernel, D2H on N streams (`Pipeline`), every element checked
    Pipeline(pipeline::Args),
    /// Kernels that launch kernels: nested hello world, recursive reductions, launch storms, checked
    Dynamic(dynamic::Args),
    /// Data-parallel SAXPY and sum over every GPU, finished by an NCCL all-reduce, checked
    Nccl(nccl::Args),
    /// Peer copy bandwidth between every pair of GPUs, one and both ways, peer access off and on, checked
    P2p(p2p::Args),
    /// A Jacobi solver whose cooperative kernel spans every GPU (multi-grid barrier), vs one GPU, checked
    MultiGrid(multi_grid::Args),
    /// The Cooperative Groups blog's managed-memory sum (ManagedBuffer, prefetches), checked
    Managed(managed::Args),
}

/// Runs one command.
fn run(command: Command) -> CliResult {
    match command {
        Command::Info => info::run(),
        Command::Doctor(a) => doctor::run(a),
        Command::Ptx(a) => inspect::ptx(a),
        Command::Sass(a) => inspect::sass(a),
        Command::Tour(a) => tour::run(a),
        Command::Bench(b) => bench::run(b),
        Command::Atomics(a) => atomics::run(a),
        Command::Overlap(a) => overlap::run(a),
        Command::Pipeline(a) => pipeline::run(a),
        Command::Dynamic(a) => dynamic::run(a),
        Command::Nccl(a) => nccl::run(a),
        Command::P2p(a) => p2p::run(a),
        Command::MultiGrid(a) => multi_grid::run(a),
        Command::Managed(a) => managed::run(a),
    }
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`cohort tour | head`) would panic;
    // end quietly instead, as `cat` and other command-line tools do.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Usage errors and `--help` end here, with clap's message (and suggestions) and status 2 / 0.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // `bench launch`: the command's path, for the hint after a usage error found later.
    let mut path = Vec::new();
    let mut m = &matches;
    while let Some((name, sub)) = m.subcommand() {
        path.push(name);
        m = sub;
    }
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(m)) => {
            eprintln!("error: {m}\n\nFor more information, try 'cohort {} --help'.", path.join(" "));
            ExitCode::from(2)
        }
        Err(CliError::NoGpu(e)) => {
            eprintln!("cohort: no GPU to run on: {e}");
            if matches!(e, cohort_runtime::Error::NoDriver | cohort_runtime::Error::NoDevice { .. }) {
                eprintln!("(`cohort tour`, `cohort atomics` and `cohort managed` run on the CPU device without a GPU)");
            }
            ExitCode::from(2)
        }
        Err(CliError::Failed(m)) => {
            eprintln!("cohort: {m}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use clap::error::ErrorKind;

    use super::{Cli, Command};
    use crate::atomics::Workload;
    use crate::bench::Bench;

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("cohort").chain(args.iter().copied())).map(|c| c.command)
    }

    #[test]
    fn cli_definition_is_consistent() {
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn cli_defaults_are_the_documented_ones() {
        let Command::Tour(t) = parse(&["tour"]).unwrap() else { panic!("not tour") };
        assert_eq!((t.n, t.seed), (1 << 24, 0x5eed));
        let Command::Atomics(a) = parse(&["atomics"]).unwrap() else { panic!("not atomics") };
        assert_eq!((a.workload, a.size, a.n), (Workload::All, 1 << 30, 10_000_000));
        let Command::Overlap(o) = parse(&["overlap"]).unwrap() else { panic!("not overlap") };
        assert_eq!((o.streams, o.n, o.timeline), (4, 1 << 27, None));
        let Command::Pipeline(p) = parse(&["pipeline"]).unwrap() else { panic!("not pipeline") };
        assert_eq!((p.gib, p.streams, p.chunk_mib, p.host_threads, p.pinned), (2, 4, 16, None, false));
        let Command::Bench(Bench::Overlap(b)) = parse(&["bench", "overlap"]).unwrap() else {
            panic!("not bench overlap")
        };
        assert_eq!((b.n, b.streams, b.reps, b.rounds, b.warmup, b.twin), (1 << 27, vec![4, 8, 16], 20, None, 2, None));
        let Command::Bench(Bench::Launch(l)) = parse(&["bench", "launch"]).unwrap() else { panic!("not bench launch") };
        assert_eq!(l.iters, 100_000);
        let Command::Bench(Bench::Cg(c)) = parse(&["bench", "cg"]).unwrap() else { panic!("not bench cg") };
        assert_eq!((c.n, c.reps, c.twins.twins_ptx), (1 << 28, 20, None));
        let Command::Bench(Bench::Kernels(k)) = parse(&["bench", "kernels"]).unwrap() else { panic!("not kernels") };
        assert_eq!((k.n, k.gemm, k.steps, k.batch, k.reps, k.control), (8192, 4096, 100, 20, 15, false));
        let Command::Bench(Bench::Kernels(k)) = parse(&["bench", "kernels", "--control"]).unwrap() else {
            panic!("not kernels")
        };
        assert!(k.control);
        let Command::Bench(Bench::Alloc(a)) = parse(&["bench", "alloc"]).unwrap() else { panic!("not bench alloc") };
        assert_eq!((a.bytes, a.iters, a.reps, a.twin), (1 << 20, 2000, 10, None));
        let Command::Bench(Bench::Pdl(p)) = parse(&["bench", "pdl", "--twin", "./t"]).unwrap() else {
            panic!("not bench pdl")
        };
        assert_eq!((p.n, p.kernels, p.reps, p.twin.as_deref()), (65536, 256, 20, Some("./t")));
        let Command::Bench(Bench::Managed(m)) = parse(&["bench", "managed"]).unwrap() else { panic!("not managed") };
        assert_eq!((m.n, m.reps), (1 << 24, 10));
        let Command::Managed(m) = parse(&["managed", "--device", "cpu"]).unwrap() else { panic!("not managed") };
        assert_eq!((m.n, m.device.device), (None, crate::util::DeviceChoice::Cpu));
        let Command::Doctor(d) = parse(&["doctor"]).unwrap() else { panic!("not doctor") };
        assert!(!d.gpu);
        assert!(matches!(parse(&["info"]).unwrap(), Command::Info));
    }

    #[test]
    fn cli_options_parse_as_before() {
        let Command::Tour(t) = parse(&["tour", "--n", "1_000", "--seed", "7"]).unwrap() else { panic!() };
        assert_eq!((t.n, t.seed, t.device.device), (1000, 7, crate::util::DeviceChoice::Auto));
        let Command::Tour(t) = parse(&["tour", "--device", "cpu"]).unwrap() else { panic!() };
        assert_eq!(t.device.device, crate::util::DeviceChoice::Cpu);
        let Command::Atomics(a) = parse(&["atomics", "histogram", "--size", "64M"]).unwrap() else { panic!() };
        assert_eq!((a.workload, a.size), (Workload::Histogram, 64 << 20));
        let Command::Bench(Bench::Overlap(b)) =
            parse(&["bench", "overlap", "--streams", "2,32", "--twin", "./t", "--rounds", "3"]).unwrap()
        else {
            panic!()
        };
        assert_eq!((b.streams, b.twin.as_deref(), b.rounds), (vec![2, 32], Some("./t"), Some(3)));
        let Command::Bench(Bench::Atomics(b)) =
            parse(&["bench", "atomics", "--twins-ptx", "t.ptx", "--dump", "/tmp/d", "--size", "1k"]).unwrap()
        else {
            panic!()
        };
        assert_eq!(b.size, 1024);
        assert_eq!(b.twins.twins_ptx.as_deref(), Some(std::path::Path::new("t.ptx")));
        assert_eq!(b.dump.as_deref(), Some(std::path::Path::new("/tmp/d")));
        let Command::Pipeline(p) = parse(&["pipeline", "--pinned", "--gib", "1", "--host-threads", "8"]).unwrap()
        else {
            panic!()
        };
        assert_eq!((p.gib, p.host_threads, p.pinned), (1, Some(8), true));
        let Command::Ptx(x) = parse(&["ptx", "vector_add", "--arch", "sm_80"]).unwrap() else { panic!() };
        assert_eq!((x.kernel.as_str(), x.arch, x.module), ("vector_add", Some(80), false));
        let Command::Sass(x) = parse(&["sass", "saxpy_f32"]).unwrap() else { panic!() };
        assert_eq!((x.kernel.as_str(), x.arch), ("saxpy_f32", None));
    }

    #[test]
    fn cli_rejects_with_usage_errors_and_suggestions() {
        let kind = |args: &[&str]| parse(args).unwrap_err().kind();
        // Unknown commands and flags: clap's suggestion.
        let e = parse(&["tuor"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidSubcommand);
        assert!(e.to_string().contains("tour"), "{e}");
        let e = parse(&["tour", "--sed", "1"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
        assert!(e.to_string().contains("--seed"), "{e}");
        let e = parse(&["bench", "atomic"]).unwrap_err();
        assert!(e.to_string().contains("atomics"), "{e}");
        assert_eq!(kind(&["atomics", "histogram", "--twins-ptx", "x"]), ErrorKind::UnknownArgument);
        // Bad values.
        assert_eq!(kind(&["atomics", "hist"]), ErrorKind::InvalidValue);
        assert_eq!(kind(&["tour", "--n", "0"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["tour", "--n", "lots"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["tour", "--n"]), ErrorKind::InvalidValue);
        assert_eq!(kind(&["tour", "--device", "tpu"]), ErrorKind::InvalidValue);
        assert_eq!(kind(&["overlap", "--streams", "4,8"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["bench", "overlap", "--streams", "4,0"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["ptx", "vector_add", "--arch", "volta"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["ptx"]), ErrorKind::MissingRequiredArgument);
        assert_eq!(kind(&["info", "--n", "3"]), ErrorKind::UnknownArgument);
        // No command: the help, as an error (status 2); `bench` without a benchmark likewise.
        assert_eq!(kind(&[]), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
        assert_eq!(kind(&["bench"]), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
        // Usage errors exit with 2, help with 0.
        assert_eq!(parse(&["tuor"]).unwrap_err().exit_code(), 2);
        assert_eq!(parse(&["tour", "--help"]).unwrap_err().exit_code(), 0);
        assert_eq!(parse(&["bench", "cg", "--help"]).unwrap_err().kind(), ErrorKind::DisplayHelp);
    }
}

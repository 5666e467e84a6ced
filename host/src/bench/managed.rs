//! `cohort bench managed`: the Cooperative Groups blog's managed-memory program (`cohort
//! managed`) timed — the kernel alone (events) and the whole round on the host's clock (fill
//! the data in place, launch, read the sum in place) — with pages migrating on demand and with
//! prefetches; with `--twin PATH`, the blog's own CUDA C++ (`host/benches/memory_twin.cu`
//! `managed`) beside it. Medians of the repetitions, after one warm-up; every sum checked on
//! both sides.

use crate::managed::Program;
use crate::util::{self, CliResult};

/// `cohort bench managed`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Ints to sum (a multiple of 4; k, M, G suffixes)
    #[arg(long, default_value = "16M", value_parser = util::parse_positive)]
    pub n: usize,
    /// Timed repetitions per row, after one warm-up (the median is reported)
    #[arg(long, default_value = "10", value_parser = util::parse_positive)]
    pub reps: usize,
    /// The nvcc-built twin (`nvcc -O3 -arch=sm_90 -o memory_twin host/benches/memory_twin.cu`), run after
    #[arg(long, value_name = "BIN")]
    pub twin: Option<String>,
}

pub fn run(args: Args) -> CliResult {
    let Args { n, reps, twin } = args;
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let mut program = Program::new(&gpu, n)?;
    let mut ours = std::collections::HashMap::new();
    for prefetch in [false, true] {
        program.run(&gpu, prefetch)?;
        let (mut kernel, mut total) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
        for _ in 0..reps {
            let r = program.run(&gpu, prefetch)?;
            kernel.push(r.kernel_ms);
            total.push(r.total_ms);
        }
        let p = if prefetch { "prefetch_" } else { "" };
        ours.insert(format!("managed_{p}kernel_ms"), util::median(&mut kernel));
        ours.insert(format!("managed_{p}total_ms"), util::median(&mut total));
    }
    drop(program);
    let theirs = super::alloc::memory_twin(twin.as_deref(), &gpu, "managed", &[("n", n), ("reps", reps)])?;
    println!("\nsum_kernel_block over {n} ints of managed memory; median of {reps} repetitions (+1 warm-up)\n");
    let mut table = super::alloc::TwinTable::new("pages", "measured", "ms", theirs, 3);
    for prefetch in [false, true] {
        for (what, key) in [("the kernel", "kernel"), ("fill + kernel + read", "total")] {
            let k = format!("managed_{}{key}_ms", if prefetch { "prefetch_" } else { "" });
            let pages = if prefetch { "prefetched" } else { "migrated on demand" };
            table.row(pages.to_string(), what.to_string(), &k, ours[&k])?;
        }
    }
    table.print();
    println!("every sum checked ({n})");
    Ok(())
}

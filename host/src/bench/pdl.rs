//! `cohort bench pdl`: programmatic dependent launch on a chain of K short kernels (SAXPY in
//! place, `y += x`): the plain kernel launched plainly, the `#[kernel(dependent)]` kernel
//! launched plainly (what its entry's wait and `launch_dependents` cost), and the dependent
//! kernel launched with `launch_programmatic` (each may begin while the one before finishes).
//! "stream": the K launches are enqueued behind a gate kernel that holds the stream until all
//! are queued, and timed with events from the gate's end, so that the GPU, not the host, sets
//! the pace; "graph": the chain captured once and replayed (programmatic launches become
//! programmatic edges). With `--twin PATH`, the same in CUDA C++ (`host/benches/memory_twin.cu`
//! `pdl`: `<<<>>>`, and `cudaLaunchKernelEx` with
//! `cudaLaunchAttributeProgrammaticStreamSerialization` and `cudaGridDependencySynchronize()`)
//! beside them. GPU µs per kernel, median of the repetitions; `y` is checked after every
//! variant on both sides.

use std::collections::HashMap;

use cohort_kernels::PTX;
use cohort_kernels::memory as k;
use cohort_runtime::{DeviceBuffer, Event, Gpu, LaunchConfig, Module, Stream, StreamOptions};

use crate::util::{self, CliError, CliResult};

/// `cohort bench pdl`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Floats per kernel (one thread each, blocks of 256)
    #[arg(long, default_value = "65536", value_parser = util::parse_positive)]
    pub n: usize,
    /// Kernels in the chain
    #[arg(long, default_value = "256", value_parser = util::parse_positive)]
    pub kernels: usize,
    /// Timed repetitions per row, after two warm-ups (the median is reported)
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub reps: usize,
    /// The nvcc-built twin (`nvcc -O3 -arch=sm_90 -o memory_twin host/benches/memory_twin.cu`), run after
    #[arg(long, value_name = "BIN")]
    pub twin: Option<String>,
}

/// The variants, in the twin's keys.
const VARIANTS: [(&str, &str); 3] = [
    ("plain", "plain kernel, launch"),
    ("dependent", "dependent kernel, launch"),
    ("programmatic", "dependent kernel, launch_programmatic"),
];

struct Chain {
    plain: k::chain_saxpy,
    dependent: k::chain_saxpy_dependent,
    gate: k::pdl_gate,
}

impl Chain {
    fn load(m: &Module) -> cohort_runtime::Result<Self> {
        Ok(Self {
            plain: k::chain_saxpy::load(m)?,
            dependent: k::chain_saxpy_dependent::load(m)?,
            gate: k::pdl_gate::load(m)?,
        })
    }

    /// Enqueues the `kernels` launches of `variant` on `s`.
    fn launch(
        &self,
        variant: usize,
        s: &Stream,
        kernels: usize,
        x: &DeviceBuffer<f32>,
        y: &mut DeviceBuffer<f32>,
    ) -> cohort_runtime::Result<()> {
        let cfg = LaunchConfig::for_elements(x.len(), 256);
        for _ in 0..kernels {
            match variant {
                0 => self.plain.launch(s, cfg, x, &mut *y, 1.0)?,
                1 => self.dependent.launch(s, cfg, x, &mut *y, 1.0)?,
                _ => self.dependent.launch_programmatic(s, cfg, x, &mut *y, 1.0)?,
            }
        }
        Ok(())
    }
}

fn measure(gpu: &Gpu, chain: &Chain, n: usize, kernels: usize, reps: usize) -> CliResult<HashMap<String, f64>> {
    let s = gpu.new_stream_with(StreamOptions::new().non_blocking(true))?;
    let x = gpu.upload(&vec![1.0f32; n])?;
    let mut y = gpu.zeroed::<f32>(n)?;
    let mut flag = gpu.zeroed::<u32>(1)?;
    let (e0, e1) = (Event::new(gpu)?, Event::new(gpu)?);
    let gate_ns = 2_000_000u64.max(kernels as u64 * 8_000);
    let mut out = HashMap::new();
    for graph in [false, true] {
        for (v, (key, _)) in VARIANTS.iter().enumerate() {
            s.fill(&mut y, 0.0f32)?;
            let exec = if graph {
                let g = s.capture(|s| chain.launch(v, s, kernels, &x, &mut y))?;
                Some(g.instantiate()?)
            } else {
                None
            };
            let mut per_kernel = Vec::with_capacity(reps);
            for r in 0..reps + 2 {
                match &exec {
                    Some(exec) => {
                        e0.record(&s)?;
                        exec.launch(&s)?;
                    }
                    None => {
                        chain.gate.launch(&s, (1u32, 1u32), &mut flag, gate_ns)?;
                        e0.record(&s)?;
                        chain.launch(v, &s, kernels, &x, &mut y)?;
                    }
                }
                e1.record(&s)?;
                e1.synchronize()?;
                if r >= 2 {
                    per_kernel.push(f64::from(e1.elapsed_ms_since(&e0)?) * 1e3 / kernels as f64);
                }
            }
            let want = ((reps + 2) * kernels) as f32;
            let got = y.to_vec()?;
            if let Some(j) = got.iter().position(|&g| g != want) {
                return Err(CliError::Failed(format!("{key}: y[{j}] = {}, expected {want}", got[j])));
            }
            out.insert(
                format!("pdl_{key}_{}_us", if graph { "graph" } else { "stream" }),
                util::median(&mut per_kernel),
            );
        }
    }
    Ok(out)
}

pub fn run(args: Args) -> CliResult {
    let Args { n, kernels, reps, twin } = args;
    if (reps + 2) * kernels >= 1 << 24 {
        return Err(CliError::Usage("(--reps + 2) × --kernels must stay below 2^24 (the check counts in f32)".into()));
    }
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let chain = Chain::load(&module)?;
    let overlap = chain.dependent.function().overlaps_when_programmatic();
    println!(
        "a chain of {kernels} SAXPYs over {n} floats (y += x), one stream; median of {reps} repetitions (+2 \
         warm-ups); sm_{} PTX: launch_programmatic {}\n",
        module.arch(),
        if overlap { "overlaps (griddepcontrol)" } else { "launches in plain stream order (no sm_90 PTX)" }
    );
    let ours = measure(&gpu, &chain, n, kernels, reps)?;
    let flags = [("n", n), ("kernels", kernels), ("reps", reps)];
    let theirs = super::alloc::memory_twin(twin.as_deref(), &gpu, "pdl", &flags)?;
    let mut table = super::alloc::TwinTable::new("launch", "chain", "µs/kernel", theirs, 3);
    for graph in [false, true] {
        for (key, what) in VARIANTS {
            let k = format!("pdl_{key}_{}_us", if graph { "graph" } else { "stream" });
            let chain = if graph { "graph replay" } else { "stream, behind a gate" };
            table.row(what.to_string(), chain.to_string(), &k, ours[&k])?;
        }
    }
    table.print();
    println!("y checked after every row: every element (reps + 2) × {kernels}");
    Ok(())
}

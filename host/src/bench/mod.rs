//! `cohort bench`: benchmarks (programs, not tests), each side by side with its reference in
//! one process: the typed launch against raw `cuLaunchKernel`, and Rust kernels against the
//! same kernels in CUDA C++ (compiled here with NVRTC, or given as a `.ptx` from nvcc).

mod alloc;
mod atomics;
mod cg;
mod cpu;
pub mod dynamic;
mod interop;
mod kernels;
mod launch;
mod managed;
mod multi_grid;
mod nccl;
mod overlap;
mod p2p;
mod pdl;

use cohort_runtime::{Event, Function, Gpu, LaunchConfig, Module, Stream};

use crate::util::{CliError, CliResult};

/// The benchmarks (`cohort bench <name>`). A new one: a module with `Args` (`clap::Args`) and
/// `run(Args) -> CliResult`, a variant here, and its arm in [`run`].
#[derive(clap::Subcommand, Debug)]
pub enum Bench {
    /// Launch overhead: typed launch vs raw cuLaunchKernel, and graph replay vs single launches
    Launch(launch::Args),
    /// The CPU device (no GPU needed): SAXPY beside rayon, a block reduce, a warp scan, the cost of a barrier and a shuffle
    Cpu(cpu::Args),
    /// Cooperative-groups kernels (tile reduce/scan, grid sync), Rust vs the same kernels in CUDA C++
    Cg(cg::Args),
    /// Histograms and dot products, Rust vs CUDA C++, and Cohort's histogram over copies x blocks
    Atomics(atomics::Args),
    /// Transposes, SGEMMs and a Jacobi stencil, safe Rust vs CUDA C++ and cuBLAS
    Kernels(kernels::Args),
    /// The overlap article (sequential, V1, V2 over N streams), beside its nvcc-built C++ twin with `--twin`
    Overlap(overlap::Args),
    /// Device-side launches: recursive reductions and the cost of one launch, beside the C++ twin with `--twin`
    Dynamic(dynamic::Options),
    /// Multi-grid sync latency on one GPU and every GPU, and grid.sync, beside NVIDIA's host-flag pattern in C++ with `--twin`
    MultiGrid(multi_grid::Args),
    /// NCCL all-reduce bus bandwidth over every GPU, 1 MiB to 1 GiB, beside PyTorch's with `--torch`
    Nccl(nccl::Args),
    /// Peer copy bandwidth between every pair of GPUs, beside the cudaMemcpyPeerAsync C++ twin with `--twin`
    P2p(p2p::Args),
    /// Allocate -> kernel -> free loops: cuMemAlloc vs stream-ordered pools, beside the C++ twin with `--twin`
    Alloc(alloc::Args),
    /// A chain of short kernels with and without programmatic dependent launch, beside the C++ twin with `--twin`
    Pdl(pdl::Args),
    /// The Cooperative Groups blog's managed-memory sum, on demand and prefetched, beside its C++ with `--twin`
    Managed(managed::Args),
    /// Launches on cudarc's memory and stream: Cohort's typed launch on cudarc slices beside cudarc's launch_builder
    Interop(interop::Args),
}

/// Runs one benchmark.
pub fn run(which: Bench) -> CliResult {
    match which {
        Bench::Launch(a) => launch::run(a),
        Bench::Cpu(a) => cpu::run(a),
        Bench::Cg(a) => cg::run(a),
        Bench::Atomics(a) => atomics::run(a),
        Bench::Kernels(a) => kernels::run(a),
        Bench::Overlap(a) => overlap::run(a),
        Bench::Dynamic(a) => dynamic::run(a),
        Bench::MultiGrid(a) => multi_grid::run(a),
        Bench::Nccl(a) => nccl::run(a),
        Bench::P2p(a) => p2p::run(a),
        Bench::Alloc(a) => alloc::run(a),
        Bench::Pdl(a) => pdl::run(a),
        Bench::Managed(a) => managed::run(a),
        Bench::Interop(a) => interop::run(a),
    }
}

/// Where the CUDA C++ twins come from (the benchmarks that have them).
#[derive(clap::Args, Debug)]
pub struct TwinsArgs {
    /// Take the twins from this nvcc-built PTX (`nvcc -ptx -arch=sm_90 host/benches/cuda_twins.cu`)
    /// instead of compiling them here with NVRTC
    #[arg(long, value_name = "FILE")]
    pub twins_ptx: Option<std::path::PathBuf>,
}

/// What a timed closure is asked to do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reset state before a run (not timed).
    Prep,
    /// The work to time.
    Run,
}

/// Median milliseconds of `reps` timed runs (after `warmup` untimed ones), each bracketed by
/// events on the GPU's stream; `f(Phase::Prep)` runs before each, outside the timing.
pub fn median_ms(
    gpu: &Gpu,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut(Phase) -> cohort_runtime::Result<()>,
) -> cohort_runtime::Result<f64> {
    for _ in 0..warmup {
        f(Phase::Prep)?;
        f(Phase::Run)?;
    }
    let (a, b) = (Event::new(gpu)?, Event::new(gpu)?);
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        f(Phase::Prep)?;
        a.record(gpu.stream())?;
        f(Phase::Run)?;
        b.record(gpu.stream())?;
        b.synchronize()?;
        t.push(b.elapsed_ms_since(&a)? as f64);
    }
    Ok(crate::util::median(&mut t))
}

/// Two versions timed in pairs by [`paired_ms`].
#[derive(Clone, Copy, Debug)]
pub struct Paired {
    /// Median milliseconds of the first version.
    pub a: f64,
    /// Median milliseconds of the second.
    pub b: f64,
    /// Median over the pairs of `b / a` (the first version's speed relative to the second).
    pub ratio: f64,
    /// The lower and upper quartiles of those per-pair ratios.
    pub quartiles: (f64, f64),
}

impl Paired {
    /// The ratio and its quartiles as the tables print them: `0.981 [0.975–0.986]`.
    #[must_use]
    pub fn ratio_text(&self) -> String {
        format!("{:.3} [{:.3}–{:.3}]", self.ratio, self.quartiles.0, self.quartiles.1)
    }
}

/// Times two versions of one piece of work in `reps` pairs (after `warmup` untimed pairs),
/// interleaved — `a` then `b`, then `b` then `a`, and so on — each run bracketed by its own
/// device events, so that drift in clocks, temperature or the device's state falls on both
/// alike and neither always runs first. Each closure is asked to [`Phase::Prep`] (untimed)
/// before each of its runs.
pub fn paired_ms(
    gpu: &Gpu,
    warmup: usize,
    reps: usize,
    mut a: impl FnMut(Phase) -> cohort_runtime::Result<()>,
    mut b: impl FnMut(Phase) -> cohort_runtime::Result<()>,
) -> cohort_runtime::Result<Paired> {
    let (start, end) = (Event::new(gpu)?, Event::new(gpu)?);
    let time = |f: &mut dyn FnMut(Phase) -> cohort_runtime::Result<()>| -> cohort_runtime::Result<f64> {
        f(Phase::Prep)?;
        start.record(gpu.stream())?;
        f(Phase::Run)?;
        end.record(gpu.stream())?;
        end.synchronize()?;
        Ok(end.elapsed_ms_since(&start)? as f64)
    };
    for _ in 0..warmup {
        time(&mut a)?;
        time(&mut b)?;
    }
    let (mut ta, mut tb, mut ratios) = (Vec::with_capacity(reps), Vec::with_capacity(reps), Vec::with_capacity(reps));
    for rep in 0..reps {
        let (x, y) = if rep % 2 == 0 {
            let x = time(&mut a)?;
            (x, time(&mut b)?)
        } else {
            let y = time(&mut b)?;
            (time(&mut a)?, y)
        };
        ta.push(x);
        tb.push(y);
        ratios.push(y / x);
    }
    // `median` sorts: the quartiles are read from the sorted ratios.
    let ratio = crate::util::median(&mut ratios);
    let quartiles = (crate::util::quantile(&ratios, 0.25), crate::util::quantile(&ratios, 0.75));
    Ok(Paired { a: crate::util::median(&mut ta), b: crate::util::median(&mut tb), ratio, quartiles })
}

/// Launches a CUDA C++ twin whose parameters are all 8 bytes wide (device addresses and
/// sizes), given in order.
///
/// # Safety
/// The twin must declare exactly these parameters (pointer or 64-bit integer each), and every
/// buffer whose address is among `args` must outlive the kernel.
pub unsafe fn launch_twin<const N: usize>(
    f: &Function,
    s: &Stream,
    cfg: LaunchConfig,
    args: [u64; N],
) -> cohort_runtime::Result<()> {
    let mut params = args.each_ref().map(|a| std::ptr::from_ref(a).cast_mut().cast::<std::ffi::c_void>());
    // SAFETY: the caller's contract; `args` lives until the launch has copied the parameters.
    unsafe { f.launch_raw(s, cfg, &mut params) }
}

/// The CUDA C++ twins: from `--twins-ptx FILE` (nvcc output), else compiled here with NVRTC.
pub fn cuda_twins(gpu: &Gpu, args: &TwinsArgs) -> CliResult<(Module, String)> {
    if let Some(file) = &args.twins_ptx {
        let text = std::fs::read_to_string(file).map_err(|e| CliError::Failed(format!("{}: {e}", file.display())))?;
        return Ok((gpu.load_ptx_text("cuda_twins", &text)?, format!("nvcc PTX from {}", file.display())));
    }
    // SAFETY: only probes whether the NVRTC library can be opened.
    if !unsafe { cohort_runtime::cudarc::nvrtc::sys::is_culib_present() } {
        return Err(CliError::Failed(
            "NVRTC (libnvrtc.so) not found: add CUDA's lib64 to LD_LIBRARY_PATH, or pass --twins-ptx FILE \
             (nvcc -ptx -arch=sm_90 host/benches/cuda_twins.cu)"
                .into(),
        ));
    }
    let cc = gpu.info().cc();
    let arch: &'static str = match cc {
        90.. => "sm_90",
        89 => "sm_89",
        86..=88 => "sm_86",
        _ => "sm_80",
    };
    let root =
        std::env::var("CUDA_PATH").or_else(|_| std::env::var("CUDA_HOME")).unwrap_or_else(|_| "/usr/local/cuda".into());
    let opts = cohort_runtime::cudarc::nvrtc::CompileOptions {
        arch: Some(arch),
        include_paths: vec![format!("{root}/include"), format!("{root}/include/cccl")],
        options: vec!["-std=c++17".into(), "-default-device".into()],
        ..Default::default()
    };
    let ptx = cohort_runtime::cudarc::nvrtc::compile_ptx_with_opts(include_str!("../../benches/cuda_twins.cu"), opts)
        .map_err(|e| CliError::Failed(format!("NVRTC could not compile the CUDA C++ twins: {e:?}")))?;
    Ok((gpu.load_ptx_text("cuda_twins", &ptx.to_src())?, format!("NVRTC -arch={arch} -O3 (default)")))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::{Phase, paired_ms};

    /// The pairs alternate which side runs first (A B, B A, …), every run follows its own
    /// preparation, warm-up pairs come first, and the ratio is of the second side to the first.
    #[test]
    fn paired_runs_alternate_and_prepare_each_run() {
        let gpu = cohort_runtime::Gpu::cpu().expect("the CPU device");
        let log = RefCell::new(String::new());
        let side = |name: char| {
            let log = &log;
            move |p: Phase| {
                log.borrow_mut().push(if p == Phase::Prep { name.to_ascii_lowercase() } else { name });
                if p == Phase::Run && name == 'B' {
                    // Some host time inside B's bracket (the CPU device's events are host clocks).
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Ok(())
            }
        };
        let t = paired_ms(&gpu, 1, 4, side('A'), side('B')).unwrap();
        assert_eq!(
            log.borrow().as_str(),
            "aAbB" /* warm-up */
                .to_owned()
                + "aAbB"
                + "bBaA"
                + "aAbB"
                + "bBaA"
        );
        assert!(t.b >= 2.0 && t.b > t.a, "{t:?}");
        assert!(t.ratio > 1.0 && t.quartiles.0 <= t.ratio && t.ratio <= t.quartiles.1, "{t:?}");
    }
}

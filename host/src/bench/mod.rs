//! `cohort bench`: benchmarks (programs, not tests), each side by side with its reference in
//! one process: the typed launch against raw `cuLaunchKernel`, and Rust kernels against the
//! same kernels in CUDA C++ (compiled here with NVRTC, or given as a `.ptx` from nvcc).

mod algorithms;
mod alloc;
mod atomics;
mod cg;
mod clusters;
mod cpu;
mod dynamic;
mod gemm;
mod interop;
mod kernels;
mod launch;
mod managed;
mod multi_grid;
mod nccl;
mod obvious;
mod overlap;
mod p2p;
mod pdl;

use cohort_runtime::{Function, Gpu, LaunchConfig, Module, Stream};

use crate::util::{CliError, CliResult};

/// The benchmarks (`cohort bench <name>`). A new one: a module with `Args` (`clap::Args`) and
/// `run(Args) -> CliResult`, a variant here, and its arm in [`run`].
#[derive(clap::Subcommand, Debug)]
pub enum Bench {
    /// Launch overhead: typed launch vs raw cuLaunchKernel, and graph replay vs single launches
    Launch(launch::Args),
    /// The CPU device (no GPU needed): SAXPY beside rayon, a block reduce, a warp scan, the cost of a barrier and a shuffle
    Cpu(cpu::Args),
    /// Thread-block clusters (sm_90): the DSMEM histogram (clusters of 1-8, 1K-64K bins, and without clusters), a cluster reduction, a stencil with its halo from neighbour blocks, vs C++ twins
    Clusters(clusters::Args),
    /// Cooperative-groups kernels (tile reduce/scan, grid sync), Rust vs the same kernels in CUDA C++
    Cg(cg::Args),
    /// Histograms and dot products, Rust vs CUDA C++, and Cohort's histogram over copies x blocks
    Atomics(atomics::Args),
    /// Transposes, SGEMMs and a Jacobi stencil, safe Rust vs CUDA C++ and cuBLAS
    Kernels(kernels::Args),
    /// Tensor-core GEMMs: the mma.sync GEMM (BF16/F16 in, f32 out) vs its CUDA C++ twin and cuBLAS; cuBLAS BF16, the C++ Hopper twin (TMA + wgmma) and cuBLASLt FP8
    Gemm(gemm::Args),
    /// The same kernels written the obvious way (slice and shared-array indexing) vs their C++ twins, as fractions of the GPU's limits
    Obvious(obvious::Args),
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
    /// Device-wide algorithms (reduce, scan, select, partition, unique, run-length encode, radix sort, histogram, segmented reduce, argmax) beside CUB with `--cub`; `--only` picks some
    Algorithms(algorithms::Args),
}

/// Runs one benchmark.
pub fn run(which: Bench) -> CliResult {
    match which {
        Bench::Launch(a) => launch::run(a),
        Bench::Cpu(a) => cpu::run(a),
        Bench::Cg(a) => cg::run(a),
        Bench::Clusters(a) => clusters::run(a),
        Bench::Atomics(a) => atomics::run(a),
        Bench::Kernels(a) => kernels::run(a),
        Bench::Gemm(a) => gemm::run(a),
        Bench::Obvious(a) => obvious::run(a),
        Bench::Overlap(a) => overlap::run(a),
        Bench::Dynamic(a) => dynamic::run(a),
        Bench::MultiGrid(a) => multi_grid::run(a),
        Bench::Nccl(a) => nccl::run(a),
        Bench::P2p(a) => p2p::run(a),
        Bench::Alloc(a) => alloc::run(a),
        Bench::Pdl(a) => pdl::run(a),
        Bench::Managed(a) => managed::run(a),
        Bench::Interop(a) => interop::run(a),
        Bench::Algorithms(a) => algorithms::run(a),
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
    twins_from(gpu, args, "cuda_twins", include_str!("../../benches/cuda_twins.cu"))
}

/// Twins named `name` (a file of `host/benches/`, whose text is `source`): from `--twins-ptx
/// FILE`, else compiled here with NVRTC.
pub fn twins_from(gpu: &Gpu, args: &TwinsArgs, name: &'static str, source: &str) -> CliResult<(Module, String)> {
    if let Some(file) = &args.twins_ptx {
        let text = std::fs::read_to_string(file).map_err(|e| CliError::Failed(format!("{}: {e}", file.display())))?;
        return Ok((gpu.load_ptx_text(name, &text)?, format!("nvcc PTX from {}", file.display())));
    }
    // SAFETY: only probes whether the NVRTC library can be opened.
    if !unsafe { cohort_runtime::cudarc::nvrtc::sys::is_culib_present() } {
        return Err(CliError::Failed(format!(
            "NVRTC (libnvrtc.so) not found: add CUDA's lib64 to LD_LIBRARY_PATH, or pass --twins-ptx FILE \
             (nvcc -ptx -arch=sm_90 host/benches/{name}.cu)"
        )));
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
    let ptx = cohort_runtime::cudarc::nvrtc::compile_ptx_with_opts(source, opts)
        .map_err(|e| CliError::Failed(format!("NVRTC could not compile the CUDA C++ twins ({name}.cu): {e:?}")))?;
    Ok((gpu.load_ptx_text(name, &ptx.to_src())?, format!("NVRTC -arch={arch} -O3 (default)")))
}

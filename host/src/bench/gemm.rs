//! `cohort bench gemm`: tensor-core GEMMs, `C = A · Bᵀ` with A M×K and B N×K row-major ("TN"),
//! C M×N row-major `f32`, at 4096³, 8192³ and 8192×8192×1024 (M×N×K), in two tables:
//!
//! - **Ampere** (`--rows ampere`): the GEMM written with Cohort's safe API
//!   (`cohort_kernels::gemm`: `mma.sync` m16n8k16, `ldmatrix`, a 4-stage `cp.async` pipeline)
//!   beside its CUDA C++ twin (`cpp_gemm_tn_*` in `host/benches/gemm_twins.cu`, the same
//!   algorithm, tiles, stages and padding) and cuBLAS (`cublasGemmEx`), BF16 and F16 inputs. Rust
//!   and C++ are timed interleaved in pairs (medians, and the median of the pairs' ratios with its
//!   quartiles); cuBLAS by itself, on the same inputs.
//! - **Hopper and FP8**: cuBLAS BF16 (`--rows cublas`), the CUDA C++ Hopper twin
//!   (`--rows hopper-twin`: `cpp_gemm_hopper_bf16`, TMA + `wgmma` m64n256k16, warp-specialized
//!   and persistent, see the file), Cohort's Hopper GEMM (`--rows hopper-rust`: the place for
//!   `cohort_kernels::gemm_hopper`, see [`hopper_rust`]) and cuBLASLt FP8 E4M3 (`--rows fp8`:
//!   `cublasLtMatmul`, A and B E4M3 with scales 1, f32 accumulate and output, "TN" as FP8 needs),
//!   each a median of `--reps` runs, in TFLOP/s, as a fraction of the dense peak (`--peak-tflops`
//!   for BF16, `--peak-fp8-tflops` for FP8) and against cuBLAS BF16.
//!
//! Every output is checked: 4096 sampled elements against `f64` dot products on the CPU (of the
//! inputs as the GEMM saw them: BF16, or rounded to E4M3 for FP8; within the worst-case bound of an
//! `f32` sum, and for FP8 within 2⁻⁸ of Σ|a·b|, the tensor cores' FP8 accumulation being
//! coarser); Cohort's whole C against the twin's (the same algorithm: they agree bit for bit,
//! reported) and against cuBLAS's, and the Hopper twin's whole C against cuBLAS's (within
//! summation-order rounding). A Hopper or FP8 row that fails its check says so in its row (and
//! on stderr) and the others still run and print; the command then fails. The Hopper rows run
//! after all the others, so that a fault there (which ends the process's CUDA context) cannot
//! cost the library rows; the twin's mbarrier waits trap after 4 s instead of hanging.
//!
//! The twins need nvcc or NVRTC: `nvcc -ptx -O3 -arch=sm_90a host/benches/gemm_twins.cu -o
//! gemm_twins.ptx` and `--twins-ptx gemm_twins.ptx` (without it the bench compiles the file with
//! NVRTC for sm_90, which has no `wgmma`: the Hopper twin's row then says it is missing). Without
//! libcublas / libcublasLt their rows read why.

use cohort::mma::{Half, bf16, f16};
use cohort_kernels::PTX;
use cohort_kernels::gemm::host::{self, Gemm};
use cohort_runtime::{DeviceBuffer, Function, Gpu, LaunchConfig, Module, Stream};
use rand::{Rng, SeedableRng};

use super::{TwinsArgs, launch_twin, twins_from};
use crate::timing::{Paired, Phase, median_ms, paired_ms};
use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench gemm`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// One shape `M,N,K` instead of the three defaults (4096³, 8192³, 8192×8192×1024); M and N
    /// multiples of 128, K of 32 (the Hopper rows need N a multiple of 256 and K of 64, and say
    /// so otherwise)
    #[arg(long, value_parser = parse_shape)]
    pub size: Option<(usize, usize, usize)>,
    /// Timed runs per kernel after 3 warm-up runs (the median is reported)
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub reps: usize,
    /// The GPU's dense BF16/F16 tensor-core peak in TFLOP/s, for the "of peak" columns (default:
    /// an H100 SXM's or H200's 989)
    #[arg(long, default_value = "989")]
    pub peak_tflops: f64,
    /// The GPU's dense FP8 tensor-core peak in TFLOP/s (default: an H100 SXM's or H200's 1979)
    #[arg(long, default_value = "1979")]
    pub peak_fp8_tflops: f64,
    /// BF16 only (skip F16 in the Ampere table)
    #[arg(long)]
    pub bf16_only: bool,
    /// Only these rows, comma-separated (default: all): ampere, cublas, hopper-twin, hopper-rust,
    /// fp8
    #[arg(long, value_enum, value_delimiter = ',')]
    pub rows: Vec<Rows>,
    #[command(flatten)]
    pub twins: TwinsArgs,
}

/// The rows `--rows` selects.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// Cohort's `mma.sync` GEMM beside its C++ twin and cuBLAS (BF16, and F16 unless --bf16-only)
    Ampere,
    /// cuBLAS BF16 (`cublasGemmEx`) in the Hopper table
    Cublas,
    /// The CUDA C++ Hopper twin (TMA + wgmma; needs the nvcc sm_90a PTX)
    HopperTwin,
    /// Cohort's Hopper GEMM (`cohort_kernels::gemm_hopper`)
    HopperRust,
    /// cuBLASLt FP8 E4M3 (f32 accumulate and output)
    Fp8,
}

fn parse_shape(s: &str) -> Result<(usize, usize, usize), String> {
    let v: Vec<usize> = s.split([',', 'x', '×']).map(|p| util::parse_usize(p.trim())).collect::<Result<_, _>>()?;
    match v[..] {
        [m, n, k] => match host::check_shape(m, n, k) {
            None => Ok((m, n, k)),
            Some(why) => Err(why),
        },
        _ => Err(format!("`{s}`: expected M,N,K")),
    }
}

fn fail(msg: String) -> CliError {
    CliError::Failed(msg)
}

/// An input element type: BF16 or F16, with its twin and its cuBLAS type.
trait Elem: Gemm + Copy {
    const NAME: &'static str;
    const TWIN: &'static str;
    const CUDA: cudarc::cublas::sys::cudaDataType;
}

impl Elem for bf16 {
    const NAME: &'static str = "BF16";
    const TWIN: &'static str = "cpp_gemm_tn_bf16";
    const CUDA: cudarc::cublas::sys::cudaDataType = cudarc::cublas::sys::cudaDataType::CUDA_R_16BF;
}

impl Elem for f16 {
    const NAME: &'static str = "F16";
    const TWIN: &'static str = "cpp_gemm_tn_f16";
    const CUDA: cudarc::cublas::sys::cudaDataType = cudarc::cublas::sys::cudaDataType::CUDA_R_16F;
}

struct Row {
    name: String,
    flops: f64,
    /// Rust (`a`) against C++ (`b`).
    t: Paired,
    cublas: Option<f64>,
}

pub fn run(args: Args) -> CliResult {
    let Args { size, reps, peak_tflops, peak_fp8_tflops, bf16_only, rows, twins } = args;
    let want = |r: Rows| rows.is_empty() || rows.contains(&r);
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    if gpu.info().cc() < 80 {
        return Err(fail(format!(
            "{} is compute capability {}.{}: mma.sync with BF16 needs sm_80 or later",
            gpu.info().name,
            gpu.info().cc() / 10,
            gpu.info().cc() % 10
        )));
    }
    let shapes = match size {
        Some(s) => vec![s],
        None => vec![(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024)],
    };
    let twins = if want(Rows::Ampere) || want(Rows::HopperTwin) {
        twins_from(&gpu, &twins, "gemm_twins", include_str!("../../benches/gemm_twins.cu")).map_err(why)
    } else {
        Err("not asked for".into())
    };
    let blas = if want(Rows::Ampere) || want(Rows::Cublas) || want(Rows::HopperTwin) {
        Cublas::new(gpu.stream())
    } else {
        Err("not asked for".into())
    };
    let lt = if want(Rows::Fp8) { CublasLt::new(&gpu) } else { Err("not asked for".into()) };
    println!(
        "CUDA C++ twins: {}; cuBLAS: {}; cuBLASLt: {}; {reps} runs of each after 3 warm-up runs (medians; in the \
         Ampere table Rust and C++ interleaved in pairs, the ratio the median of the pairs' ratios, with its \
         quartiles)\n",
        match &twins {
            Ok((_, how)) => how.clone(),
            Err(e) => format!("not available ({e})"),
        },
        match &blas {
            Ok(_) => "cublasGemmEx, CUBLAS_COMPUTE_32F, default algorithm".to_string(),
            Err(e) => format!("not available ({e})"),
        },
        match &lt {
            Ok(_) => "cublasLtMatmul, FP8 E4M3 in, f32 out, fast accumulation, best heuristic algorithm".to_string(),
            Err(e) => format!("not available ({e})"),
        },
    );

    // The library rows and the Ampere kernels first.
    let mut ampere = Vec::new();
    let mut hopper: Vec<HopperRow> = Vec::new();
    let ampere_kernels = match (want(Rows::Ampere), &twins) {
        (false, _) => None,
        (true, Ok((t, _))) => Some((gpu.load(&PTX)?, t)),
        (true, Err(e)) => return Err(fail(format!("the Ampere rows need the CUDA C++ twins: {e}"))),
    };
    for &(m, n, k) in &shapes {
        if let Some((module, twins)) = &ampere_kernels {
            ampere.push(one::<bf16>(&gpu, module, twins, blas.as_ref().ok(), (m, n, k), reps)?);
            if !bf16_only {
                ampere.push(one::<f16>(&gpu, module, twins, blas.as_ref().ok(), (m, n, k), reps)?);
            }
        }
        if !want(Rows::Cublas) && !want(Rows::Fp8) {
            continue;
        }
        let inputs = Inputs::new(&gpu, (m, n, k))?;
        if want(Rows::Cublas) {
            let outcome = match &blas {
                Ok(blas) => cublas_bf16(&gpu, blas, &inputs, reps),
                Err(e) => Outcome::Skipped(format!("cuBLAS not available ({e})")),
            };
            hopper.push(HopperRow::new((m, n, k), "cuBLAS BF16 (cublasGemmEx)", peak_tflops, outcome));
        }
        if want(Rows::Fp8) {
            let outcome = match &lt {
                Ok(lt) => fp8_row(&gpu, lt, &inputs, reps),
                Err(e) => Outcome::Skipped(format!("cuBLASLt not available ({e})")),
            };
            hopper.push(HopperRow::new((m, n, k), "cuBLASLt FP8 E4M3 (f32 out, fast accum)", peak_fp8_tflops, outcome));
        }
    }

    // The Hopper kernels last: a fault in one ends the process's CUDA context, and everything
    // above is measured by then.
    if want(Rows::HopperTwin) || want(Rows::HopperRust) {
        for &(m, n, k) in &shapes {
            // After a fault of an earlier row the context is lost: every later row says so.
            let inputs = match Inputs::new(&gpu, (m, n, k)) {
                Ok(inputs) => inputs,
                Err(e) => {
                    let e = format!("preparing the inputs: {}", why(e));
                    if want(Rows::HopperTwin) {
                        hopper.push(HopperRow::new((m, n, k), TWIN_ROW, peak_tflops, Outcome::failed(e.clone())));
                    }
                    if want(Rows::HopperRust) {
                        hopper.push(HopperRow::new((m, n, k), RUST_ROW, peak_tflops, Outcome::failed(e)));
                    }
                    continue;
                }
            };
            // cuBLAS's C, for the whole-C comparison.
            let reference = match &blas {
                Ok(blas) => cublas_c(&gpu, blas, &inputs).ok(),
                Err(_) => None,
            };
            if want(Rows::HopperTwin) {
                let outcome = hopper_twin(&gpu, &twins, &inputs, reference.as_deref(), reps);
                hopper.push(HopperRow::new((m, n, k), TWIN_ROW, peak_tflops, outcome));
            }
            if want(Rows::HopperRust) {
                let outcome = hopper_rust(&gpu, &inputs, reference.as_deref(), reps);
                hopper.push(HopperRow::new((m, n, k), RUST_ROW, peak_tflops, outcome));
            }
        }
    }
    if let Ok(b) = blas {
        b.destroy();
    }
    if let Ok(lt) = lt {
        lt.destroy();
    }

    if !ampere.is_empty() {
        println!();
        print_ampere(ampere, peak_tflops);
    }
    let failed = if hopper.is_empty() { Vec::new() } else { print_hopper(&hopper) };
    if failed.is_empty() { Ok(()) } else { Err(fail(format!("{} row(s) failed: {}", failed.len(), failed.join("; ")))) }
}

/// The Hopper table's names of the Hopper kernels' rows.
const TWIN_ROW: &str = "CUDA C++ Hopper twin (TMA + wgmma)";
const RUST_ROW: &str = "Rust Hopper (Cohort, gemm_hopper)";

/// The Ampere table: Rust against its twin and cuBLAS.
fn print_ampere(rows: Vec<Row>, peak_tflops: f64) {
    let head = [
        "GEMM (C = A·Bᵀ, f32 accumulate)",
        "Rust (Cohort)",
        "CUDA C++ twin",
        "Rust / C++ (speed) [quartiles]",
        "cuBLAS",
        "Rust / cuBLAS",
        "Rust, of peak",
    ];
    let mut t = Table::new(&head).numeric(1..head.len());
    for r in rows {
        let tf = |ms: f64| r.flops / ms / 1e9;
        let (blas, vs) = match r.cublas {
            Some(b) => (format!("{:.3} ms ({:.0} TFLOP/s)", b, tf(b)), format!("{:.3}", b / r.t.a)),
            None => ("—".into(), "—".into()),
        };
        t.row(vec![
            r.name,
            format!("{:.3} ms ({:.0} TFLOP/s)", r.t.a, tf(r.t.a)),
            format!("{:.3} ms ({:.0} TFLOP/s)", r.t.b, tf(r.t.b)),
            r.t.ratio_text(),
            blas,
            vs,
            format!("{:.2}", tf(r.t.a) / peak_tflops),
        ]);
    }
    t.print();
    println!(
        "\nevery C checked: 4096 sampled elements against f64 CPU dot products (within the worst-case f32 \
         rounding bound), Cohort's whole C against the twin's and cuBLAS's; peak = {peak_tflops} TFLOP/s dense"
    );
}

/// Random inputs in [-1, 1], rounded to `T`.
fn random<T: Half>(n: usize, seed: u64) -> Vec<T> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| T::from_f32(r.random_range(-1.0f32..1.0))).collect()
}

/// One shape and type: the three GEMMs timed and checked.
fn one<T: Elem>(
    gpu: &Gpu,
    module: &Module,
    twins: &Module,
    blas: Option<&Cublas>,
    (m, n, k): (usize, usize, usize),
    reps: usize,
) -> CliResult<Row> {
    let s = gpu.stream();
    let name = format!("{} {m}×{n}×{k}", T::NAME);
    eprintln!("{name}: preparing the inputs");
    let (a, b) = (random::<T>(m * k, 1 + m as u64), random::<T>(n * k, 2 + n as u64));
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut c_rust = gpu.zeroed::<f32>(m * n)?;
    let c_cpp = gpu.zeroed::<f32>(m * n)?;
    let kern = T::load(module)?;
    let twin: Function = twins.function(T::TWIN, false)?;
    let cfg = host::config(m, n);
    let (pa, pb, pc) = (da.as_device_ptr().addr(), db.as_device_ptr().addr(), c_cpp.as_device_ptr().addr());
    let run_cpp = |p: Phase| match p {
        Phase::Prep => Ok(()),
        // SAFETY: (const T* A, const T* B, float* C, u64 M, u64 N, u64 K) as the twin declares;
        // A holds m·k, B n·k and C m·n elements, all alive until the bench ends.
        Phase::Run => unsafe { launch_twin(&twin, s, cfg, [pa, pb, pc, m as u64, n as u64, k as u64]) },
    };
    let run_rust = |p: Phase| match p {
        Phase::Prep => Ok(()),
        Phase::Run => host::launch_loaded(&kern, s, (m, n, k), &da, &db, &mut c_rust),
    };
    let t = paired_ms(gpu, 3, reps, run_rust, run_cpp)?;
    let cublas = match blas {
        Some(blas) => {
            let mut c_blas = gpu.zeroed::<f32>(m * n)?;
            let ms = median_ms(gpu, 3, reps, |p| match p {
                Phase::Prep => Ok(()),
                Phase::Run => {
                    blas.gemm_tn::<T>((m, n, k), &da, &db, &mut c_blas).map_err(cohort_runtime::Error::Argument)
                }
            })?;
            Some((ms, c_blas.to_vec()?))
        }
        None => None,
    };
    eprintln!("{name}: checking");
    let (r, c) = (c_rust.to_vec()?, c_cpp.to_vec()?);
    let (af, bf): (Vec<f32>, Vec<f32>) =
        (a.iter().map(|x| x.to_f32()).collect(), b.iter().map(|x| x.to_f32()).collect());
    check_sampled(&af, &bf, (m, n, k), &r, &format!("Rust {name}"))?;
    check_sampled(&af, &bf, (m, n, k), &c, &format!("C++ {name}"))?;
    let same = r.iter().zip(&c).filter(|(x, y)| x.to_bits() == y.to_bits()).count();
    check_close(&r, &c, &format!("Rust {name} vs the C++ twin"))?;
    println!("{name}: Rust and the C++ twin agree bit for bit on {same} of {} elements", r.len());
    if let Some((_, want)) = &cublas {
        check_sampled(&af, &bf, (m, n, k), want, &format!("cuBLAS {name}"))?;
        check_close(&r, want, &format!("Rust {name} vs cuBLAS"))?;
    }
    Ok(Row { name, flops: 2.0 * m as f64 * n as f64 * k as f64, t, cublas: cublas.map(|c| c.0) })
}

/// 4096 sampled elements of `c` against f64 dot products: each of the K additions of an `f32`
/// sum rounds by at most 2^-24 of the running magnitude, so the error is below `K · ε · Σ|ab|`.
fn check_sampled(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize), c: &[f32], who: &str) -> CliResult {
    let bound = |mag: f64, _: f64| mag * k as f64 * f64::from(f32::EPSILON) + 1e-6;
    sampled(a, b, (m, n, k), c, bound).map(|_| ()).map_err(|e| fail(format!("{who}: {e}")))
}

/// 4096 sampled elements of `c` (m×n, row-major) against f64 dot products of the rows of `a`
/// (m×k) and `b` (n×k), each within `bound(Σ|ab|, dot)`: the worst error as a fraction of its
/// Σ|ab|, or the first element out of bounds (or NaN).
fn sampled(
    a: &[f32],
    b: &[f32],
    (m, n, k): (usize, usize, usize),
    c: &[f32],
    bound: impl Fn(f64, f64) -> f64,
) -> Result<f64, String> {
    if a.len() < m * k || b.len() < n * k || c.len() < m * n {
        return Err(format!("{} / {} / {} elements for {m}×{n}×{k}", a.len(), b.len(), c.len()));
    }
    let mut r = rand::rngs::StdRng::seed_from_u64(9);
    let mut worst = 0.0f64;
    for _ in 0..4096 {
        let (i, j) = (r.random_range(0..m), r.random_range(0..n));
        let (mut dot, mut mag) = (0.0f64, 0.0f64);
        for (x, y) in a[i * k..(i + 1) * k].iter().zip(&b[j * k..(j + 1) * k]) {
            let p = f64::from(*x) * f64::from(*y);
            dot += p;
            mag += p.abs();
        }
        let got = f64::from(c[i * n + j]);
        let tol = bound(mag, dot);
        if (got - dot).abs() > tol || got.is_nan() {
            return Err(format!("C[{i}][{j}] = {got}, the CPU says {dot} (tolerance {tol:.2e})"));
        }
        if mag > 0.0 {
            worst = worst.max((got - dot).abs() / mag);
        }
    }
    Ok(worst)
}

/// `got` and `want` agree within summation-order rounding everywhere (a missing or doubled term
/// of a dot product, about 0.3 on average, is off by far more).
fn check_close(got: &[f32], want: &[f32], who: &str) -> CliResult {
    close(got, want).map_err(|e| fail(format!("{who}: {e}")))
}

/// [`check_close`]'s test: the first element that differs, described.
fn close(got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} elements against {}", got.len(), want.len()));
    }
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        let near = (x - y).abs() <= 2e-2 + 1e-3 * y.abs();
        if !near || x.is_nan() {
            return Err(format!("C[{i}] = {x}, against {y}"));
        }
    }
    Ok(())
}

/// The cuBLAS handle (libcublas loaded at run time).
struct Cublas {
    handle: cudarc::cublas::sys::cublasHandle_t,
}

impl Cublas {
    fn new(s: &Stream) -> Result<Self, String> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err("libcublas not found: add CUDA's lib64 to LD_LIBRARY_PATH".into());
        }
        let handle = cudarc::cublas::result::create_handle().map_err(|e| format!("cublasCreate: {e:?}"))?;
        // SAFETY: a live handle and a live stream of the current context.
        unsafe { cudarc::cublas::result::set_stream(handle, s.cu_stream().cast()) }
            .map_err(|e| format!("cublasSetStream: {e:?}"))?;
        Ok(Self { handle })
    }

    /// Row-major `C = A · Bᵀ` (A m×k, B n×k, C m×n). cuBLAS is column-major: the row-major C is
    /// the column-major n×m `Cᵀ = B · Aᵀ`; the row-major n×k B is the column-major k×n `Bᵀ`
    /// (so `op = T` gives B), the row-major m×k A is the column-major k×m `Aᵀ` (`op = N`).
    fn gemm_tn<T: Elem>(
        &self,
        (m, n, k): (usize, usize, usize),
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<f32>,
    ) -> Result<(), String> {
        use cudarc::cublas::sys::{
            cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cublasStatus_t, cudaDataType,
        };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let int = |v: usize| i32::try_from(v).map_err(|_| format!("cuBLAS: {v} does not fit an int"));
        let (mi, ni, ki) = (int(m)?, int(n)?, int(k)?);
        if a.len() < m * k || b.len() < n * k || c.len() < m * n {
            return Err("cuBLAS: buffers smaller than the shape".into());
        }
        // SAFETY: three live device buffers of the sizes checked above; host scalars; the
        // handle is live.
        let st = unsafe {
            cudarc::cublas::sys::cublasGemmEx(
                self.handle,
                cublasOperation_t::CUBLAS_OP_T,
                cublasOperation_t::CUBLAS_OP_N,
                ni,
                mi,
                ki,
                std::ptr::from_ref(&alpha).cast(),
                b.as_device_ptr().addr() as *const std::ffi::c_void,
                T::CUDA,
                ki,
                a.as_device_ptr().addr() as *const std::ffi::c_void,
                T::CUDA,
                ki,
                std::ptr::from_ref(&beta).cast(),
                c.as_device_ptr().addr() as *mut std::ffi::c_void,
                cudaDataType::CUDA_R_32F,
                ni,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        if st == cublasStatus_t::CUBLAS_STATUS_SUCCESS { Ok(()) } else { Err(format!("cublasGemmEx: {st:?}")) }
    }

    fn destroy(self) {
        // SAFETY: the handle is live and used no more.
        let _ = unsafe { cudarc::cublas::result::destroy_handle(self.handle) };
    }
}

/// A [`CliError`]'s message.
fn why(e: CliError) -> String {
    match e {
        CliError::Usage(s) | CliError::Failed(s) => s,
        CliError::NoGpu(e) => e.to_string(),
    }
}

// ------------------------------------------------------------------------------------------------
// The Hopper and FP8 table.

/// One shape's BF16 inputs (random in [-1, 1], seeded by the shape as the Ampere rows' are): as
/// `f32` (exactly their values) for the CPU's checks, and on the GPU.
struct Inputs {
    shape: (usize, usize, usize),
    af: Vec<f32>,
    bf: Vec<f32>,
    da: DeviceBuffer<bf16>,
    db: DeviceBuffer<bf16>,
}

impl Inputs {
    fn new(gpu: &Gpu, (m, n, k): (usize, usize, usize)) -> CliResult<Self> {
        eprintln!("{m}×{n}×{k}: preparing the BF16 inputs");
        let (a, b) = (random::<bf16>(m * k, 1 + m as u64), random::<bf16>(n * k, 2 + n as u64));
        let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
        let f = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect();
        Ok(Self { shape: (m, n, k), af: f(&a), bf: f(&b), da, db })
    }
}

/// What became of one row.
enum Outcome {
    /// Not run, and why (a library or kernel that is missing, a shape it does not take).
    Skipped(String),
    /// Run: the median milliseconds (`None` when it failed before a time was taken) and its check
    /// (what was checked, or what failed).
    Ran { ms: Option<f64>, check: Result<String, String> },
}

impl Outcome {
    fn failed(why: String) -> Self {
        Outcome::Ran { ms: None, check: Err(why) }
    }
}

/// A row of the Hopper and FP8 table.
struct HopperRow {
    shape: (usize, usize, usize),
    name: &'static str,
    /// The dense peak its "of peak" column is against (BF16 or FP8).
    peak: f64,
    outcome: Outcome,
}

impl HopperRow {
    fn new(shape: (usize, usize, usize), name: &'static str, peak: f64, outcome: Outcome) -> Self {
        let (m, n, k) = shape;
        match &outcome {
            Outcome::Ran { check: Err(e), .. } => eprintln!("*** CHECK FAILED: {name} {m}×{n}×{k}: {e}"),
            Outcome::Ran { ms: Some(ms), check: Ok(_) } => eprintln!("{name} {m}×{n}×{k}: {ms:.3} ms, checked"),
            Outcome::Ran { ms: None, check: Ok(_) } => {}
            Outcome::Skipped(why) => eprintln!("{name} {m}×{n}×{k}: not run ({why})"),
        }
        Self { shape, name, peak, outcome }
    }
}

/// Prints the Hopper and FP8 table; the rows that failed, described.
fn print_hopper(rows: &[HopperRow]) -> Vec<String> {
    let head = ["M×N×K", "GEMM (C = A·Bᵀ, f32 out)", "time", "TFLOP/s", "of peak", "vs cuBLAS BF16", "check"];
    let mut t = Table::new(&head).numeric(2..6);
    let mut failed = Vec::new();
    for r in rows {
        let (m, n, k) = r.shape;
        let shape = format!("{m}×{n}×{k}");
        let flops = 2.0 * m as f64 * n as f64 * k as f64;
        let cublas = rows.iter().find_map(|o| match o.outcome {
            Outcome::Ran { ms: Some(ms), check: Ok(_) } if o.shape == r.shape && o.name.starts_with("cuBLAS BF16") => {
                Some(ms)
            }
            _ => None,
        });
        let dash = || "—".to_string();
        let cells = match &r.outcome {
            Outcome::Skipped(why) => [dash(), dash(), dash(), dash(), format!("not run: {why}")],
            Outcome::Ran { ms, check } => {
                if let Err(e) = check {
                    failed.push(format!("{} {shape}: {e}", r.name));
                }
                let check = match check {
                    Ok(what) => what.clone(),
                    Err(e) => format!("FAILED: {e}"),
                };
                match ms {
                    Some(ms) => {
                        let tf = flops / ms / 1e9;
                        [
                            format!("{ms:.3} ms"),
                            format!("{tf:.0}"),
                            format!("{:.2}", tf / r.peak),
                            cublas.map_or_else(dash, |b| format!("{:.3}", b / ms)),
                            check,
                        ]
                    }
                    None => [dash(), dash(), dash(), dash(), check],
                }
            }
        };
        let [time, tf, of_peak, vs, check] = cells;
        t.row(vec![shape, r.name.to_string(), time, tf, of_peak, vs, check]);
    }
    println!();
    t.print();
    let mut peaks: Vec<String> = Vec::new();
    for r in rows {
        let p = format!("{}", r.peak);
        if !peaks.contains(&p) {
            peaks.push(p);
        }
    }
    println!(
        "\nmedians; of peak: against the dense peak of the row's input type ({} TFLOP/s); vs cuBLAS BF16: its time \
         over the row's (above 1: faster). Checks: 4096 sampled elements against f64 CPU dot products of the inputs \
         the GEMM saw (BF16: within the worst-case f32 bound; FP8: within 2^-8 of Σ|ab|), worst error as a fraction \
         of Σ|ab|; the Hopper rows' whole C against cuBLAS's",
        peaks.join(" / ")
    );
    failed
}

/// The median milliseconds of `launch` (3 warm-up runs, then `reps`), or why it failed.
fn time(gpu: &Gpu, reps: usize, mut launch: impl FnMut() -> cohort_runtime::Result<()>) -> Result<f64, String> {
    median_ms(gpu, 3, reps, |p| match p {
        Phase::Prep => Ok(()),
        Phase::Run => launch(),
    })
    .map_err(|e| format!("failed: {e}"))
}

/// A BF16 GEMM's row: `launch` writes C (m×n `f32`, NaN before the first run, so that an element
/// it never writes cannot pass), timed, then checked against the CPU (and `reference`, cuBLAS's C,
/// as a whole).
fn bf16_row(
    gpu: &Gpu,
    inputs: &Inputs,
    reference: Option<&[f32]>,
    reps: usize,
    mut launch: impl FnMut(&mut DeviceBuffer<f32>) -> cohort_runtime::Result<()>,
) -> Outcome {
    let (m, n, _) = inputs.shape;
    let mut c = match gpu.upload(&vec![f32::NAN; m * n]) {
        Ok(c) => c,
        Err(e) => return Outcome::failed(format!("allocating C: {e}")),
    };
    let ms = match time(gpu, reps, || launch(&mut c)) {
        Ok(ms) => ms,
        Err(e) => return Outcome::failed(e),
    };
    let check = match c.to_vec() {
        Ok(got) => check_bf16(inputs, &got, reference),
        Err(e) => Err(format!("reading C: {e}")),
    };
    Outcome::Ran { ms: Some(ms), check }
}

/// `c` against the CPU (sampled) and against `reference` (whole).
fn check_bf16(inputs: &Inputs, c: &[f32], reference: Option<&[f32]>) -> Result<String, String> {
    let (_, _, k) = inputs.shape;
    let bound = |mag: f64, _: f64| mag * k as f64 * f64::from(f32::EPSILON) + 1e-6;
    let worst = sampled(&inputs.af, &inputs.bf, inputs.shape, c, bound)?;
    let whole = match reference {
        Some(r) => {
            close(c, r).map_err(|e| format!("against cuBLAS: {e}"))?;
            "; whole C = cuBLAS's within rounding"
        }
        None => "",
    };
    Ok(format!("ok: sampled, worst {worst:.1e}{whole}"))
}

/// cuBLAS BF16, timed and checked against the CPU.
fn cublas_bf16(gpu: &Gpu, blas: &Cublas, inputs: &Inputs, reps: usize) -> Outcome {
    bf16_row(gpu, inputs, None, reps, |c| {
        blas.gemm_tn::<bf16>(inputs.shape, &inputs.da, &inputs.db, c).map_err(cohort_runtime::Error::Argument)
    })
}

/// cuBLAS's C (one run), the Hopper rows' whole-C reference.
fn cublas_c(gpu: &Gpu, blas: &Cublas, inputs: &Inputs) -> Result<Vec<f32>, String> {
    let (m, n, _) = inputs.shape;
    let mut c = gpu.zeroed::<f32>(m * n).map_err(|e| e.to_string())?;
    blas.gemm_tn::<bf16>(inputs.shape, &inputs.da, &inputs.db, &mut c)?;
    gpu.stream().synchronize().map_err(|e| e.to_string())?;
    c.to_vec().map_err(|e| e.to_string())
}

// --- The C++ Hopper twin ---

/// `cpp_gemm_hopper_bf16`'s block tile (M, N) and K step: the shapes it takes are multiples.
const HOPPER_TILE: (usize, usize, usize) = (128, 256, 64);
/// Its threads per block: a producer warpgroup and two consumer warpgroups.
const HOPPER_THREADS: u32 = 384;
/// Its dynamic shared memory (`hopper::SMEM_BYTES` in `host/benches/gemm_twins.cu`: 1 KiB of
/// alignment slack, 4 stages of 48 KiB, 8 mbarriers); the kernel returns at once with less.
const HOPPER_SMEM_BYTES: u32 = 197_696;

const _: () = assert!(size_of::<cudarc::driver::sys::CUtensorMap>() == 128);

/// Why the Hopper GEMMs do not take `m × n × k`, if they do not.
fn hopper_shape((m, n, k): (usize, usize, usize)) -> Option<String> {
    let (bm, bn, bk) = HOPPER_TILE;
    if m == 0 || n == 0 || k == 0 || !m.is_multiple_of(bm) || !n.is_multiple_of(bn) || !k.is_multiple_of(bk) {
        return Some(format!("{m}×{n}×{k}: M must be a multiple of {bm}, N of {bn} and K of {bk}"));
    }
    if m > 1 << 31 || n > 1 << 31 || k > 1 << 31 {
        return Some(format!("{m}×{n}×{k}: dimensions past 2^31 (TMA coordinates are 32-bit)"));
    }
    None
}

/// The tensor map of a row-major `rows × cols` bf16 matrix (`cols` = K, contiguous) in boxes of
/// `box_rows × 64` with the 128-byte swizzle — what `cpp_gemm_hopper_bf16` loads A and B with.
/// The fields pass Cohort's checks of `cuTensorMapEncodeTiled`'s rules (and stay inside the
/// buffer) before the driver encodes them.
fn bf16_tensor_map(
    buf: &DeviceBuffer<bf16>,
    rows: usize,
    cols: usize,
    box_rows: u32,
) -> Result<cudarc::driver::sys::CUtensorMap, String> {
    use cohort_runtime::tensor_map::{L2Promotion, Swizzle, TensorMapSpec};
    use cudarc::driver::sys as d;
    let addr = buf.as_device_ptr().addr();
    let spec = TensorMapSpec::new([cols as u64, rows as u64], [64, box_rows])
        .strides(&[cols as u64 * 2])
        .swizzle(Swizzle::B128)
        .l2_promotion(L2Promotion::B256);
    spec.check(2, true, buf.num_bytes() as u64, addr).map_err(|e| e.to_string())?;
    let (dims, strides) = ([cols as u64, rows as u64], [cols as u64 * 2]);
    let (boxes, element_strides) = ([64u32, box_rows], [1u32, 1]);
    let mut map = std::mem::MaybeUninit::<d::CUtensorMap>::zeroed();
    // SAFETY: rank 2: two dimensions, one stride, two box sizes and element strides, as the
    // arrays hold; the address is the live buffer's (16-byte aligned, checked above); `map` has
    // room for the 128-byte map. The call only encodes (it reads no device memory).
    let r = unsafe {
        d::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            d::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            2,
            addr as usize as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            d::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            d::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            d::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            d::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != d::cudaError_enum::CUDA_SUCCESS {
        return Err(format!("cuTensorMapEncodeTiled: {r:?}"));
    }
    // SAFETY: written by the successful call (and zeroed before).
    Ok(unsafe { map.assume_init() })
}

/// The CUDA C++ Hopper twin (`cpp_gemm_hopper_bf16`), timed and checked.
fn hopper_twin(
    gpu: &Gpu,
    twins: &Result<(Module, String), String>,
    inputs: &Inputs,
    reference: Option<&[f32]>,
    reps: usize,
) -> Outcome {
    let f = match twins {
        Err(e) => return Outcome::Skipped(format!("no C++ twins ({e})")),
        Ok((module, how)) => match module.function("cpp_gemm_hopper_bf16", false) {
            Ok(f) => f,
            Err(_) => {
                return Outcome::Skipped(format!(
                    "the twins ({how}) have no cpp_gemm_hopper_bf16, which needs sm_90a: build them with `nvcc \
                     -ptx -O3 -arch=sm_90a host/benches/gemm_twins.cu -o gemm_twins.ptx` and pass --twins-ptx \
                     gemm_twins.ptx"
                ));
            }
        },
    };
    let (m, n, k) = inputs.shape;
    if let Some(why) = hopper_shape(inputs.shape) {
        return Outcome::Skipped(why);
    }
    let maps = match (bf16_tensor_map(&inputs.da, m, k, 128), bf16_tensor_map(&inputs.db, n, k, 256)) {
        (Ok(a), Ok(b)) => [a, b],
        (Err(e), _) | (_, Err(e)) => return Outcome::failed(format!("tensor map: {e}")),
    };
    let tiles = (m / HOPPER_TILE.0) * (n / HOPPER_TILE.1);
    let grid = tiles.min(gpu.info().sms as usize) as u32;
    let cfg = LaunchConfig::new(grid, HOPPER_THREADS).with_shared_mem(HOPPER_SMEM_BYTES);
    let s = gpu.stream();
    bf16_row(gpu, inputs, reference, reps, |c| {
        // SAFETY: `f` is `cpp_gemm_hopper_bf16`; the maps describe A (m×k) and B (n×k), which
        // `inputs` keeps alive, C holds m×n f32 and outlives the launch (`bf16_row` reads it back
        // after the stream's work ends); the shape passed `hopper_shape`.
        unsafe { launch_hopper_twin(&f, s, cfg, &maps, c.as_device_ptr_mut().addr(), (m, n, k)) }
    })
}

/// Launches `cpp_gemm_hopper_bf16(tmA, tmB, C, M, N, K)`: the two 128-byte tensor maps by value
/// (the driver copies each parameter's bytes from the pointer given for it, whatever its size),
/// then four 8-byte values.
///
/// # Safety
/// `f` must be `cpp_gemm_hopper_bf16`; `maps` must describe live bf16 buffers of m×k (A) and n×k
/// (B) as [`bf16_tensor_map`] makes them, and `c` a live buffer of m×n `f32` that nothing else
/// uses until the kernel ends.
unsafe fn launch_hopper_twin(
    f: &Function,
    s: &Stream,
    cfg: LaunchConfig,
    maps: &[cudarc::driver::sys::CUtensorMap; 2],
    c: u64,
    (m, n, k): (usize, usize, usize),
) -> cohort_runtime::Result<()> {
    let values = [c, m as u64, n as u64, k as u64];
    let mut params: [*mut std::ffi::c_void; 6] = [
        std::ptr::from_ref(&maps[0]).cast_mut().cast(),
        std::ptr::from_ref(&maps[1]).cast_mut().cast(),
        std::ptr::from_ref(&values[0]).cast_mut().cast(),
        std::ptr::from_ref(&values[1]).cast_mut().cast(),
        std::ptr::from_ref(&values[2]).cast_mut().cast(),
        std::ptr::from_ref(&values[3]).cast_mut().cast(),
    ];
    // SAFETY: one pointer per parameter of the kernel, each at a value of its type (the maps
    // are `CUtensorMap`s, 128 bytes; the rest 8-byte values), alive until the launch has copied
    // them; the buffers: the caller's contract.
    unsafe { f.launch_raw(s, cfg, &mut params) }
}

// --- Cohort's Hopper GEMM ---

/// Cohort's Hopper GEMM (`cohort_kernels::gemm_hopper::gemm_tn_hopper::<bf16>`: TMA + `wgmma`,
/// warp-specialized, written with the safe API), with its two tensor maps made once (as the
/// twin's): `bf16_row` fills C with NaN, times the launches, and checks C against the CPU and
/// cuBLAS.
fn hopper_rust(gpu: &Gpu, inputs: &Inputs, reference: Option<&[f32]>, reps: usize) -> Outcome {
    use cohort_kernels::gemm_hopper::{self as gh, host as hh};
    let (m, n, k) = inputs.shape;
    if let Some(why) = hopper_shape(inputs.shape) {
        return Outcome::Skipped(why);
    }
    let module = match gpu.load(&PTX) {
        Ok(module) => module,
        Err(e) => return Outcome::failed(format!("loading cohort_kernels: {e}")),
    };
    let kernel = match <bf16 as hh::Gemm>::load(&module) {
        Ok(kernel) => kernel,
        Err(e) => return Outcome::Skipped(format!("gemm_tn_hopper: {e}")),
    };
    let maps = hh::map(&inputs.da, m, k, gh::BM).and_then(|a| Ok((a, hh::map(&inputs.db, n, k, gh::BN)?)));
    let (ma, mb) = match maps {
        Ok(maps) => maps,
        Err(e) => return Outcome::failed(format!("tensor maps: {e}")),
    };
    bf16_row(gpu, inputs, reference, reps, |c| {
        hh::launch_mapped::<bf16>(&kernel, gpu.stream(), inputs.shape, &ma, &mb, c)
    })
}

// --- cuBLASLt FP8 ---

/// The positive finite E4M3 values, by code (0x00..=0x7E: they increase with the code).
fn e4m3_positive() -> [f32; 127] {
    std::array::from_fn(|c| e4m3_to_f32(c as u8))
}

/// The value of an FP8 E4M3 byte (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no
/// infinities; S.1111.111 is NaN; exponent 0 is subnormal, m/8 · 2⁻⁶).
fn e4m3_to_f32(b: u8) -> f32 {
    let (e, m) = ((b >> 3) & 0xF, b & 7);
    if e == 0xF && m == 7 {
        return f32::NAN;
    }
    let mag = if e == 0 {
        f32::from(m) / 8.0 * (-6f32).exp2()
    } else {
        (1.0 + f32::from(m) / 8.0) * f32::from(e).mul_add(1.0, -7.0).exp2()
    };
    if b & 0x80 != 0 { -mag } else { mag }
}

/// The E4M3 byte nearest `x`, ties to even; magnitudes past the largest finite value (448) become
/// it (saturating, as `__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)`); NaN is NaN.
/// `table` is [`e4m3_positive`].
fn e4m3_from_f32(x: f32, table: &[f32; 127]) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = f64::from(x.abs());
    // The first code whose value is above |x|: |x| lies between its predecessor and it.
    let above = table.partition_point(|&v| f64::from(v) <= a);
    if above == table.len() {
        return sign | 0x7E;
    }
    let below = above - 1; // table[0] = 0 ≤ |x|
    let (lo, hi) = (f64::from(table[below]), f64::from(table[above]));
    let code = if a - lo < hi - a || (a - lo == hi - a && below % 2 == 0) { below } else { above };
    sign | code as u8
}

/// The cuBLASLt handle (libcublasLt loaded at run time) and its workspace.
struct CublasLt {
    handle: cudarc::cublaslt::sys::cublasLtHandle_t,
    workspace: DeviceBuffer<u8>,
}

/// cuBLASLt's workspace: 32 MiB, NVIDIA's recommendation for Hopper.
const LT_WORKSPACE: usize = 32 << 20;

/// `cublasLtMatmul`'s descriptors and algorithm for one FP8 shape (destroyed on drop).
struct Fp8Plan {
    desc: cudarc::cublaslt::sys::cublasLtMatmulDesc_t,
    /// Lt's A (our B: k×n column-major, transposed), Lt's B (our A: k×m column-major), D (n×m).
    layouts: [cudarc::cublaslt::sys::cublasLtMatrixLayout_t; 3],
    algo: cudarc::cublaslt::sys::cublasLtMatmulAlgo_t,
    /// Whether D is f32 (else bf16, where cuBLASLt offers no f32 output).
    f32_out: bool,
}

impl Drop for Fp8Plan {
    fn drop(&mut self) {
        use cudarc::cublaslt::result as lt;
        // SAFETY: created by `CublasLt::plan`, destroyed only here.
        unsafe {
            let _ = lt::destroy_matmul_desc(self.desc);
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
        }
    }
}

impl CublasLt {
    fn new(gpu: &Gpu) -> Result<Self, String> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { cudarc::cublaslt::sys::is_culib_present() } {
            return Err("libcublasLt not found: add CUDA's lib64 to LD_LIBRARY_PATH".into());
        }
        let handle = cudarc::cublaslt::result::create_handle().map_err(|e| format!("cublasLtCreate: {e:?}"))?;
        let workspace = gpu.zeroed::<u8>(LT_WORKSPACE).map_err(|e| e.to_string())?;
        Ok(Self { handle, workspace })
    }

    /// The plan of row-major `C = A · Bᵀ` (A m×k, B n×k E4M3, C m×n): column-major, that is
    /// `Cᵀ (n×m) = B · Aᵀ`, Lt's A being our B read transposed and Lt's B our A as it is — the
    /// "TN" form FP8 needs. f32 out where cuBLASLt has an algorithm for it, else bf16.
    fn plan(&self, (m, n, k): (usize, usize, usize)) -> Result<Fp8Plan, String> {
        use cudarc::cublaslt::result as lt;
        use cudarc::cublaslt::sys;
        let mut last = String::new();
        for out in [sys::cudaDataType::CUDA_R_32F, sys::cudaDataType::CUDA_R_16BF] {
            let e = |what: &'static str| move |err: lt::CublasError| format!("{what}: {err:?}");
            let desc =
                lt::create_matmul_desc(sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, sys::cudaDataType::CUDA_R_32F)
                    .map_err(e("cublasLtMatmulDescCreate"))?;
            let layouts = [
                lt::create_matrix_layout(sys::cudaDataType::CUDA_R_8F_E4M3, k as u64, n as u64, k as i64),
                lt::create_matrix_layout(sys::cudaDataType::CUDA_R_8F_E4M3, k as u64, m as u64, k as i64),
                lt::create_matrix_layout(out, n as u64, m as u64, n as i64),
            ];
            let mut plan = match layouts {
                [Ok(a), Ok(b), Ok(d)] => Fp8Plan {
                    desc,
                    layouts: [a, b, d],
                    algo: sys::cublasLtMatmulAlgo_t { data: [0; 8] },
                    f32_out: out == sys::cudaDataType::CUDA_R_32F,
                },
                _ => {
                    // SAFETY: created above, used no more (the layouts that were made leak: an error path).
                    let _ = unsafe { lt::destroy_matmul_desc(desc) };
                    return Err("cublasLtMatrixLayoutCreate failed".into());
                }
            };
            let (op_t, op_n) = (
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T as i32,
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N as i32,
            );
            let fast_accum: i8 = 1;
            use sys::cublasLtMatmulDescAttributes_t as A;
            // SAFETY: a live descriptor; each value is of the attribute's type (int32 operations,
            // int8 fast-accumulation flag) and lives through the call.
            unsafe {
                lt::set_matmul_desc_attribute(plan.desc, A::CUBLASLT_MATMUL_DESC_TRANSA, (&raw const op_t).cast(), 4)
                    .map_err(e("TRANSA"))?;
                lt::set_matmul_desc_attribute(plan.desc, A::CUBLASLT_MATMUL_DESC_TRANSB, (&raw const op_n).cast(), 4)
                    .map_err(e("TRANSB"))?;
                lt::set_matmul_desc_attribute(
                    plan.desc,
                    A::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                    (&raw const fast_accum).cast(),
                    1,
                )
                .map_err(e("FAST_ACCUM"))?;
            }
            let pref = lt::create_matmul_pref().map_err(e("cublasLtMatmulPreferenceCreate"))?;
            let ws = LT_WORKSPACE as u64;
            // SAFETY: a live preference; a u64 for the u64 attribute.
            let set = unsafe {
                lt::set_matmul_pref_attribute(
                    pref,
                    sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&raw const ws).cast(),
                    8,
                )
            };
            let [a, b, d] = plan.layouts;
            // SAFETY: live handle, descriptor, layouts and preference (C and D share a layout).
            let heuristic =
                set.and_then(|()| unsafe { lt::get_matmul_algo_heuristic(self.handle, plan.desc, a, b, d, d, pref) });
            // SAFETY: created above, used no more.
            let _ = unsafe { lt::destroy_matmul_pref(pref) };
            match heuristic {
                Ok(h) if h.workspaceSize <= LT_WORKSPACE => {
                    // (Not `Fp8Plan { algo, ..plan }`: the fields are `Copy`, and `plan` would be
                    // dropped, destroying the descriptors the copy names.)
                    plan.algo = h.algo;
                    return Ok(plan);
                }
                Ok(h) => last = format!("the algorithm wants {} B of workspace", h.workspaceSize),
                Err(err) => last = format!("cublasLtMatmulAlgoGetHeuristic ({out:?} out): {err:?}"),
            }
        }
        Err(last)
    }

    /// Runs `plan` on E4M3 `a` (m×k) and `b` (n×k) into `d` (m×n elements of 4 bytes for an f32
    /// plan, 2 for bf16), on `s`.
    fn matmul<D: cohort::DeviceCopy>(
        &self,
        plan: &Fp8Plan,
        (m, n, k): (usize, usize, usize),
        a: &DeviceBuffer<u8>,
        b: &DeviceBuffer<u8>,
        d: &mut DeviceBuffer<D>,
        s: &Stream,
    ) -> Result<(), String> {
        if a.len() < m * k || b.len() < n * k || d.len() < m * n || size_of::<D>() != if plan.f32_out { 4 } else { 2 } {
            return Err("cuBLASLt: buffers that do not match the shape or the plan".into());
        }
        let (alpha, beta) = (1.0f32, 0.0f32);
        let dp = d.as_device_ptr_mut().addr() as *mut std::ffi::c_void;
        let [la, lb, ld] = plan.layouts;
        // SAFETY: live handle, plan and buffers of the sizes checked above (Lt's A is our B, Lt's
        // B our A, C = D with beta 0); host scalars; the workspace is ours and as large as the
        // preference said; the stream is live in the current context.
        unsafe {
            cudarc::cublaslt::result::matmul(
                self.handle,
                plan.desc,
                (&raw const alpha).cast(),
                (&raw const beta).cast(),
                b.as_device_ptr().addr() as *const std::ffi::c_void,
                la,
                a.as_device_ptr().addr() as *const std::ffi::c_void,
                lb,
                dp,
                ld,
                dp,
                ld,
                &raw const plan.algo,
                self.workspace.as_device_ptr().addr() as *mut std::ffi::c_void,
                LT_WORKSPACE,
                s.cu_stream().cast(),
            )
        }
        .map_err(|e| format!("cublasLtMatmul: {e:?}"))
    }

    fn destroy(self) {
        // SAFETY: the handle is live and used no more.
        let _ = unsafe { cudarc::cublaslt::result::destroy_handle(self.handle) };
    }
}

/// cuBLASLt FP8: the BF16 inputs rounded to E4M3 (scales 1), timed, and checked against the CPU's
/// product of the rounded inputs.
fn fp8_row(gpu: &Gpu, lt: &CublasLt, inputs: &Inputs, reps: usize) -> Outcome {
    use rayon::prelude::*;
    let (m, n, k) = inputs.shape;
    if gpu.info().cc() < 89 {
        return Outcome::Skipped("FP8 tensor cores need sm_89 or later".into());
    }
    if !k.is_multiple_of(16) {
        return Outcome::Skipped(format!("cuBLASLt FP8 needs K a multiple of 16 (K = {k})"));
    }
    let plan = match lt.plan(inputs.shape) {
        Ok(p) => p,
        Err(e) => return Outcome::failed(format!("no cuBLASLt FP8 algorithm: {e}")),
    };
    let table = e4m3_positive();
    let to8 = |v: &[f32]| -> Vec<u8> { v.par_iter().map(|&x| e4m3_from_f32(x, &table)).collect() };
    let (a8, b8) = (to8(&inputs.af), to8(&inputs.bf));
    let back = |v: &[u8]| -> Vec<f32> { v.par_iter().map(|&x| e4m3_to_f32(x)).collect() };
    let (af8, bf8) = (back(&a8), back(&b8));
    let (da, db) = match (gpu.upload(&a8), gpu.upload(&b8)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Outcome::failed(format!("uploading the inputs: {e}")),
    };
    let s = gpu.stream();
    // D: NaN (f32 or bf16 bits) before the first run.
    let (ms, got) = if plan.f32_out {
        let mut d = match gpu.upload(&vec![f32::NAN; m * n]) {
            Ok(d) => d,
            Err(e) => return Outcome::failed(format!("allocating D: {e}")),
        };
        let ms = time(gpu, reps, || {
            lt.matmul(&plan, inputs.shape, &da, &db, &mut d, s).map_err(cohort_runtime::Error::Argument)
        });
        (ms, d.to_vec().map_err(|e| e.to_string()))
    } else {
        let mut d = match gpu.upload(&vec![bf16::from_f32(f32::NAN); m * n]) {
            Ok(d) => d,
            Err(e) => return Outcome::failed(format!("allocating D: {e}")),
        };
        let ms = time(gpu, reps, || {
            lt.matmul(&plan, inputs.shape, &da, &db, &mut d, s).map_err(cohort_runtime::Error::Argument)
        });
        (ms, d.to_vec().map(|v| v.iter().map(|x| x.to_f32()).collect()).map_err(|e| e.to_string()))
    };
    let ms = match ms {
        Ok(ms) => ms,
        Err(e) => return Outcome::failed(e),
    };
    // FP8 tensor-core sums keep fewer bits than f32 (and a bf16 D rounds to 8): within 2^-8 of
    // Σ|ab| (plus |C| for a bf16 D) — a check of layouts and operands (a wrong one is off by
    // about |C| ≈ sqrt(K)/3 on most elements), not of the last bits.
    let check = got.and_then(|got| {
        let bound = |mag: f64, dot: f64| (mag + dot.abs()) * (-8f64).exp2() + 1e-3;
        sampled(&af8, &bf8, inputs.shape, &got, bound)
            .map(|worst| format!("ok: sampled, worst {worst:.1e}; D {}", if plan.f32_out { "f32" } else { "bf16" }))
    });
    Outcome::Ran { ms: Some(ms), check }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        <Cli as clap::Parser>::try_parse_from(std::iter::once("gemm").chain(args.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn gemm_rows_option() {
        let a = parse(&[]).unwrap();
        assert!(a.rows.is_empty());
        assert_eq!((a.peak_tflops, a.peak_fp8_tflops, a.reps), (989.0, 1979.0, 20));
        let a = parse(&["--rows", "hopper-twin,fp8", "--size", "8192,8192,1024"]).unwrap();
        assert_eq!(a.rows, vec![Rows::HopperTwin, Rows::Fp8]);
        assert_eq!(a.size, Some((8192, 8192, 1024)));
        let a = parse(&["--rows", "ampere", "--rows", "cublas,hopper-rust"]).unwrap();
        assert_eq!(a.rows, vec![Rows::Ampere, Rows::Cublas, Rows::HopperRust]);
        assert!(parse(&["--rows", "hopper"]).is_err());
    }

    #[test]
    fn gemm_hopper_shapes() {
        for s in [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (128, 256, 64)] {
            assert_eq!(hopper_shape(s), None, "{s:?}");
        }
        for s in [(4096, 4096 + 128, 4096), (4096 + 64, 4096, 4096), (4096, 4096, 4096 + 32), (0, 256, 64)] {
            assert!(hopper_shape(s).is_some(), "{s:?}");
        }
    }

    #[test]
    fn gemm_e4m3_known_values() {
        let t = e4m3_positive();
        let enc = |x: f32| e4m3_from_f32(x, &t);
        assert_eq!(e4m3_to_f32(0x38), 1.0);
        assert_eq!(e4m3_to_f32(0x7E), 448.0);
        assert_eq!(e4m3_to_f32(0x01), (-9f32).exp2());
        assert_eq!(e4m3_to_f32(0x08), (-6f32).exp2());
        assert_eq!(e4m3_to_f32(0xB8), -1.0);
        assert!(e4m3_to_f32(0x7F).is_nan() && e4m3_to_f32(0xFF).is_nan());
        assert_eq!((enc(1.0), enc(-1.0), enc(448.0), enc(0.0)), (0x38, 0xB8, 0x7E, 0x00));
        // Ties to even: 1.0625 lies halfway between 1.0 (0x38) and 1.125 (0x39); 1.1875 between
        // 0x39 and 1.25 (0x3A); 2^-10 between 0 and the least subnormal.
        assert_eq!((enc(1.0625), enc(1.1875), enc((-10f32).exp2())), (0x38, 0x3A, 0x00));
        // Just off the ties.
        assert_eq!((enc(1.0626), enc(1.1874)), (0x39, 0x39));
        // Saturation and NaN.
        assert_eq!((enc(464.0), enc(1e30), enc(-1e30), enc(f32::INFINITY)), (0x7E, 0x7E, 0xFE, 0x7E));
        assert_eq!(enc(f32::NAN), 0x7F);
    }

    #[test]
    fn gemm_e4m3_round_trip_and_nearest() {
        let t = e4m3_positive();
        for code in 0..=255u8 {
            if code & 0x7F == 0x7F {
                continue;
            }
            assert_eq!(e4m3_from_f32(e4m3_to_f32(code), &t), code, "code {code:#04x}");
        }
        // Nearest, against a search of every finite value.
        let finite: Vec<f32> = (0..=255u8).map(e4m3_to_f32).filter(|v| v.is_finite()).collect();
        let mut r = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..20_000 {
            let x: f32 = r.random_range(-500.0f32..500.0) * (r.random_range(-12.0f32..0.0)).exp2();
            let got = e4m3_to_f32(e4m3_from_f32(x, &t));
            let best = finite.iter().map(|v| (x - v).abs()).fold(f32::INFINITY, f32::min);
            if x.abs() > 448.0 {
                assert_eq!(got, 448f32.copysign(x), "{x} saturates");
            } else {
                assert!((x - got).abs() <= best, "{x} → {got}, best error {best}");
            }
        }
    }

    #[test]
    fn gemm_sampled_check_finds_errors() {
        let (m, n, k) = (8, 8, 16);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 - 2.0).collect();
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|x| a[i * k + x] * b[j * k + x]).sum();
            }
        }
        let bound = |mag: f64, _: f64| mag * 1e-6;
        assert_eq!(sampled(&a, &b, (m, n, k), &c, bound), Ok(0.0));
        assert_eq!(close(&c, &c), Ok(()));
        // Every element is sampled (4096 draws of 64): one off by one, or NaN, is found.
        let mut off = c.clone();
        off[27] += 1.0;
        assert!(sampled(&a, &b, (m, n, k), &off, bound).unwrap_err().starts_with("C[3][3]"));
        assert!(close(&off, &c).is_err());
        off[27] = f32::NAN;
        assert!(sampled(&a, &b, (m, n, k), &off, bound).is_err());
        assert!(close(&off, &c).is_err());
        // Transposed operands are far off.
        assert!(sampled(&b, &a, (m, n, k), &c, bound).is_err());
    }
}

//! `cohort bench gemm`: the tensor-core GEMM written with Cohort's safe API
//! (`cohort_kernels::gemm`: `mma.sync` m16n8k16, `ldmatrix`, a 4-stage `cp.async` pipeline)
//! beside its CUDA C++ twin (`host/benches/gemm_twins.cu`, the same algorithm, tiles, stages
//! and padding) and cuBLAS (`cublasGemmEx`, loaded at run time), for BF16 and F16 inputs with
//! FP32 accumulation and output: `C = A · Bᵀ`, A M×K and B N×K row-major ("TN"), C M×N
//! row-major, at 4096³, 8192³ and 8192×8192×1024 (M×N×K).
//!
//! Rust and C++ are timed interleaved in pairs (medians, and the median of the pairs' ratios
//! with its quartiles); cuBLAS by itself, on the same inputs. Every output is checked: 4096
//! sampled elements of each against `f64` dot products on the CPU (within the worst-case bound
//! of an `f32` sum), and Cohort's whole C against the twin's (the same algorithm: they agree
//! bit for bit, reported) and against cuBLAS's (within summation-order rounding).
//!
//! The twin needs nvcc or NVRTC: `nvcc -ptx -O3 -arch=sm_90a host/benches/gemm_twins.cu -o
//! gemm_twins.ptx` and `--twins-ptx gemm_twins.ptx` (without it the bench compiles the file with
//! NVRTC, which needs libnvrtc and CUDA's headers). Without libcublas the cuBLAS column reads
//! "—".

use cohort::mma::{Half, bf16, f16};
use cohort_kernels::PTX;
use cohort_kernels::gemm::host::{self, Gemm};
use cohort_runtime::{DeviceBuffer, Function, Gpu, Module, Stream};
use rand::{Rng, SeedableRng};

use super::{TwinsArgs, launch_twin, twins_from};
use crate::timing::{Paired, Phase, median_ms, paired_ms};
use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench gemm`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// One shape `M,N,K` instead of the three defaults (4096³, 8192³, 8192×8192×1024); M and N
    /// multiples of 128, K of 32
    #[arg(long, value_parser = parse_shape)]
    pub size: Option<(usize, usize, usize)>,
    /// Timed runs per kernel after 3 warm-up runs (the median is reported)
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub reps: usize,
    /// The GPU's dense BF16/F16 tensor-core peak in TFLOP/s, for the "of peak" column (default:
    /// an H100 SXM's or H200's 989)
    #[arg(long, default_value = "989")]
    pub peak_tflops: f64,
    /// BF16 only (skip F16)
    #[arg(long)]
    pub bf16_only: bool,
    #[command(flatten)]
    pub twins: TwinsArgs,
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
    let Args { size, reps, peak_tflops, bf16_only, twins } = args;
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
    let module = gpu.load(&PTX)?;
    let (twins, how) = twins_from(&gpu, &twins, "gemm_twins", include_str!("../../benches/gemm_twins.cu"))?;
    let blas = Cublas::new(gpu.stream());
    let shapes = match size {
        Some(s) => vec![s],
        None => vec![(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024)],
    };
    println!(
        "CUDA C++ twins: {how}; cuBLAS: {}; {reps} runs of each after 3 warm-up runs, Rust and C++ interleaved in \
         pairs (medians; the ratio is the median of the pairs' ratios, with its quartiles)\n",
        match &blas {
            Ok(_) => "cublasGemmEx, CUBLAS_COMPUTE_32F, default algorithm".to_string(),
            Err(e) => format!("not available ({e})"),
        }
    );
    let mut rows = Vec::new();
    for &(m, n, k) in &shapes {
        rows.push(one::<bf16>(&gpu, &module, &twins, blas.as_ref().ok(), (m, n, k), reps)?);
        if !bf16_only {
            rows.push(one::<f16>(&gpu, &module, &twins, blas.as_ref().ok(), (m, n, k), reps)?);
        }
    }
    if let Ok(b) = blas {
        b.destroy();
    }

    println!();
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
    Ok(())
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
    let mut r = rand::rngs::StdRng::seed_from_u64(9);
    for _ in 0..4096 {
        let (i, j) = (r.random_range(0..m), r.random_range(0..n));
        let (mut dot, mut mag) = (0.0f64, 0.0f64);
        for (x, y) in a[i * k..(i + 1) * k].iter().zip(&b[j * k..(j + 1) * k]) {
            let p = f64::from(*x) * f64::from(*y);
            dot += p;
            mag += p.abs();
        }
        let got = f64::from(c[i * n + j]);
        let tol = mag * k as f64 * f64::from(f32::EPSILON) + 1e-6;
        if (got - dot).abs() > tol || got.is_nan() {
            return Err(fail(format!("{who}: C[{i}][{j}] = {got}, the CPU says {dot} (tolerance {tol:.2e})")));
        }
    }
    Ok(())
}

/// `got` and `want` agree within summation-order rounding everywhere (a missing or doubled term
/// of a dot product, about 0.3 on average, is off by far more).
fn check_close(got: &[f32], want: &[f32], who: &str) -> CliResult {
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        let close = (x - y).abs() <= 2e-2 + 1e-3 * y.abs();
        if !close || x.is_nan() {
            return Err(fail(format!("{who}: C[{i}] = {x}, against {y}")));
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

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

mod check;
mod cublas;
mod hopper;
mod table;

use check::{check_close, check_sampled, sampled};
use cublas::{Cublas, CublasLt, fp8_row};
use hopper::{hopper_rust, hopper_twin};
use table::{HopperRow, Inputs, Outcome, cublas_bf16, cublas_c, print_hopper};

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
        twins_from(&gpu, &twins, "gemm_twins", include_str!("../../../benches/gemm_twins.cu")).map_err(why)
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

/// A [`CliError`]'s message.
fn why(e: CliError) -> String {
    match e {
        CliError::Usage(s) | CliError::Failed(s) => s,
        CliError::NoGpu(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::check::close;
    use super::cublas::{e4m3_from_f32, e4m3_positive, e4m3_to_f32};
    use super::hopper::hopper_shape;
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

//! `cohort bench kernels`: the classic CUDA kernels (transposes, SGEMMs, a Jacobi stencil),
//! written with Cohort's safe API, against their CUDA C++ twins (same algorithm, tiles and launch
//! shape) and cuBLAS for the SGEMMs; every result checked.

use cohort_kernels::PTX;
use cohort_kernels::classic as k;
use cohort_runtime::{DeviceBuffer, LaunchConfig, Stream};
use rand::{Rng, SeedableRng};

use super::{TwinsArgs, cuda_twins, launch_twin};
use crate::timing::{Paired, Phase, median_ms, paired_ms};
use crate::util::{self, CliError, CliResult, Table};

/// One Jacobi step from the first buffer into the second.
pub(super) type Step<'a> = dyn Fn(&DeviceBuffer<f32>, &mut DeviceBuffer<f32>) -> cohort_runtime::Result<()> + 'a;

struct Row {
    name: String,
    /// Rust (`a`) against C++ (`b`), in interleaved pairs.
    t: Paired,
    /// With `--control`: the C++ twin against itself (A/A).
    control: Option<Paired>,
    /// Bytes (transposes, stencil) or flops (SGEMM) per run.
    work: f64,
    unit: &'static str,
    cublas: Option<f64>,
}

pub(super) fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect()
}

fn fail(msg: String) -> CliError {
    CliError::Failed(msg)
}

/// Both outputs equal the CPU's transpose of `input` (`rows × cols`), element for element.
pub(super) fn check_transpose(
    input: &[f32],
    rows: usize,
    cols: usize,
    got: &DeviceBuffer<f32>,
    who: &str,
) -> CliResult {
    let got = got.to_vec()?;
    for r in 0..rows {
        for c in 0..cols {
            let (w, g) = (input[r * cols + c], got[c * rows + r]);
            if w.to_bits() != g.to_bits() {
                return Err(fail(format!("{who}: out[{c}][{r}] = {g}, CPU says {w}")));
            }
        }
    }
    Ok(())
}

/// `cohort bench kernels`' options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Side of the transposed and stencil matrices (a multiple of 32)
    #[arg(long, default_value = "8192", value_parser = util::parse_usize)]
    pub n: usize,
    /// Side of the SGEMM matrices (a multiple of 128)
    #[arg(long, default_value = "4096", value_parser = util::parse_usize)]
    pub gemm: usize,
    /// Jacobi steps per timed run
    #[arg(long, default_value = "100", value_parser = util::parse_usize)]
    pub steps: usize,
    /// Transposes per timed run (one takes about 0.15 ms at 8192²: a batch keeps the timing's
    /// own jitter out of the ratio); times are reported per transpose
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub batch: usize,
    /// Timed runs per kernel (the median is reported)
    #[arg(long, default_value = "15", value_parser = util::parse_positive)]
    pub reps: usize,
    /// Also time each C++ twin against itself, interleaved in the same way (an A/A run): the
    /// spread of a ratio between identical kernels, which a Rust/C++ difference must exceed
    #[arg(long)]
    pub control: bool,
    #[command(flatten)]
    pub twins: TwinsArgs,
}

pub fn run(args: Args) -> CliResult {
    let Args { n, gemm: g, steps, batch, reps, control, twins } = args;
    if n % 32 != 0 || g % 128 != 0 || n == 0 || g == 0 || steps == 0 {
        return Err(CliError::Usage(
            "--n must be a multiple of 32 and --gemm of 128 (the C++ twins assume whole tiles)".into(),
        ));
    }
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let (twins, how) = cuda_twins(&gpu, &twins)?;
    println!(
        "CUDA C++ twins: {how}; transposes and stencil {n}²; SGEMM {g}³; {reps} runs of each, Rust and C++ \
         interleaved in pairs (medians; the ratio is the median of the pairs' ratios, with its quartiles)\n"
    );
    let s = gpu.stream();
    let mut rows = Vec::new();

    // --- Transposes ---
    let input = random(n * n, 1);
    let d_in = gpu.upload(&input)?;
    let (mut out, mut out_cpp) = (gpu.zeroed::<f32>(n * n)?, gpu.zeroed::<f32>(n * n)?);
    let tcfg = LaunchConfig::new((n as u32 / 32, n as u32 / 32), (32, 8));
    let naive = k::transpose_naive::load(&module)?;
    let tiled = k::transpose_tiled::load(&module)?;
    let in_ptr = d_in.as_device_ptr().addr();
    let bytes = 8.0 * (n * n) as f64;
    for (name, rust, cpp) in [
        ("transpose 32×8 naive", true, "cpp_transpose_naive"),
        ("transpose 32×33 shared tile", false, "cpp_transpose_tiled"),
    ] {
        out.fill_zero()?;
        out_cpp.fill_zero()?;
        let f = twins.function(cpp, false)?;
        let o = out_cpp.as_device_ptr().addr();
        let run_cpp = |p: Phase| match p {
            Phase::Prep => Ok(()),
            Phase::Run => (0..batch).try_for_each(|_| {
                // SAFETY: (const float*, size, size, float*) as the twin declares; buffers live.
                unsafe { launch_twin(&f, s, tcfg, [in_ptr, n as u64, n as u64, o]) }
            }),
        };
        let run_rust = |p: Phase| match p {
            Phase::Prep => Ok(()),
            Phase::Run => (0..batch).try_for_each(|_| {
                let m = out.as_matrix_mut(n, n)?;
                let nn = n as u32;
                if rust {
                    naive.launch(s, tcfg, &d_in, nn, nn, m)
                } else {
                    tiled.launch(s, tcfg, d_in.as_matrix(n, n)?, m)
                }
            }),
        };
        // Per transpose: the batch's times divided by its size (the ratios are unchanged).
        let per = |mut t: Paired| {
            t.a /= batch as f64;
            t.b /= batch as f64;
            t
        };
        let t = per(paired_ms(&gpu, 3, reps, run_rust, &run_cpp)?);
        check_transpose(&input, n, n, &out, &format!("Rust {name}"))?;
        check_transpose(&input, n, n, &out_cpp, &format!("C++ {name}"))?;
        let aa = if control { Some(per(paired_ms(&gpu, 3, reps, &run_cpp, &run_cpp)?)) } else { None };
        rows.push(Row {
            name: format!("{name}, {n}², {batch} per run"),
            t,
            control: aa,
            work: bytes,
            unit: "GB/s",
            cublas: None,
        });
    }
    drop((d_in, out, out_cpp));

    // --- SGEMM ---
    let (a, b) = (random(g * g, 2), random(g * g, 3));
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut c_rust = gpu.zeroed::<f32>(g * g)?;
    let mut c_cpp = gpu.zeroed::<f32>(g * g)?;
    let mut c_blas = gpu.zeroed::<f32>(g * g)?;
    let blas = Cublas::new(s)?;
    let blas_ms = median_ms(&gpu, 3, reps, |p| match p {
        Phase::Prep => Ok(()),
        Phase::Run => blas.sgemm_row_major(g, &da, &db, &mut c_blas).map_err(cohort_runtime::Error::Argument),
    })?;
    let want = c_blas.to_vec()?;
    check_gemm_cpu(&a, &b, g, &want, "cuBLAS")?;
    let flops = 2.0 * (g as f64).powi(3);
    let (a_ptr, b_ptr) = (da.as_device_ptr().addr(), db.as_device_ptr().addr());
    let g32 = k::sgemm_tiled32::load(&module)?;
    let g128 = k::sgemm_128x128::load(&module)?;
    // (row name, which Rust kernel: 0 `sgemm_tiled32`, 2 `sgemm_128x128`)
    for (name, which, cpp) in [
        ("SGEMM 32×32 shared tiles", 0, "cpp_sgemm_tiled32"),
        ("SGEMM 128×128 tile, BK 8, 8×8/thread", 2, "cpp_sgemm_128x128"),
    ] {
        let big = which == 2;
        let cfg = if big {
            LaunchConfig::new((g as u32 / 128, g as u32 / 128), (16, 16))
        } else {
            LaunchConfig::new((g as u32 / 32, g as u32 / 32), (32, 32))
        };
        c_rust.fill_zero()?;
        c_cpp.fill_zero()?;
        let f = twins.function(cpp, false)?;
        let o = c_cpp.as_device_ptr().addr();
        let run_cpp = |p: Phase| match p {
            Phase::Prep => Ok(()),
            // SAFETY: (const float*, const float*, size, size, size, float*) as declared.
            Phase::Run => unsafe { launch_twin(&f, s, cfg, [a_ptr, b_ptr, g as u64, g as u64, g as u64, o]) },
        };
        let run_rust = |p: Phase| match p {
            Phase::Prep => Ok(()),
            Phase::Run => {
                let m = c_rust.as_matrix_mut(g, g)?;
                let gg = g as u32;
                match which {
                    0 => g32.launch(s, cfg, &da, &db, gg, gg, gg, m),
                    _ => g128.launch(s, cfg, &da, &db, gg, gg, gg, m),
                }
            }
        };
        let t = paired_ms(&gpu, 2, reps, run_rust, &run_cpp)?;
        let aa = if control { Some(paired_ms(&gpu, 2, reps, &run_cpp, &run_cpp)?) } else { None };
        let (r, c) = (c_rust.to_vec()?, c_cpp.to_vec()?);
        check_gemm_cpu(&a, &b, g, &r, &format!("Rust {name}"))?;
        check_gemm_cpu(&a, &b, g, &c, &format!("C++ {name}"))?;
        check_close(&r, &want, &format!("Rust {name} vs cuBLAS"))?;
        let same = r.iter().zip(&c).filter(|(x, y)| x.to_bits() == y.to_bits()).count();
        println!("{name}: Rust and C++ agree bit for bit on {same} of {} elements", r.len());
        rows.push(Row {
            name: format!("{name}, {g}³"),
            t,
            control: aa,
            work: flops,
            unit: "GFLOP/s",
            cublas: Some(blas_ms),
        });
    }
    blas.destroy();
    drop((da, db, c_rust, c_cpp, c_blas));

    // --- Jacobi ---
    let u0 = random(n * n, 4);
    let jc = twins.function("cpp_jacobi_step", false)?;
    let jcfg = LaunchConfig::new((n as u32 / 32, n as u32 / 8), (32, 8));
    let one = jacobi_cpu(&u0, n);
    let cpp_step = |x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>| {
        let (xp, yp) = (x.as_device_ptr().addr(), y.as_device_ptr().addr());
        // SAFETY: (const float*, size, float*) as the twin declares; both buffers live.
        unsafe { launch_twin(&jc, s, jcfg, [xp, n as u64, yp]) }
    };
    // Each side steps its own pair of buffers, from the same start.
    let (mut xr, mut yr) = (gpu.upload(&u0)?, gpu.zeroed::<f32>(n * n)?);
    let (mut xc, mut yc) = (gpu.upload(&u0)?, gpu.zeroed::<f32>(n * n)?);
    let jreps = reps.min(10);
    let last = |x: &DeviceBuffer<f32>, y: &DeviceBuffer<f32>| if steps % 2 == 0 { x.to_vec() } else { y.to_vec() };
    // The halo read through a `Point` (addresses relative to the centre's, as C++), and
    // through `Matrix::load_or` (each neighbour's address computed afresh, clamped, selected).
    let (point_k, select_k) = (k::jacobi_step::load(&module)?, k::jacobi_step_select::load(&module)?);
    for (form, select) in [("`Point` reads", false), ("`load_or` reads", true)] {
        let rust_step = |x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>| {
            let (g, o) = (x.as_matrix(n, n)?, y.as_matrix_mut(n, n)?);
            if select { select_k.launch(s, jcfg, g, o) } else { point_k.launch(s, jcfg, g, o) }
        };
        // One step, checked against the CPU element for element.
        xr.copy_from(&u0)?;
        rust_step(&xr, &mut yr)?;
        let got = yr.to_vec()?;
        if let Some(i) = (0..n * n).find(|&i| got[i].to_bits() != one[i].to_bits()) {
            return Err(fail(format!("Rust Jacobi step ({form}): u[{i}] = {}, CPU says {}", got[i], one[i])));
        }
        let t = paired_ms(
            &gpu,
            1,
            jreps,
            stepping(&u0, steps, &rust_step, &mut xr, &mut yr),
            stepping(&u0, steps, &cpp_step, &mut xc, &mut yc),
        )?;
        let results = [last(&xr, &yr)?, last(&xc, &yc)?];
        if let Some(i) = (0..n * n).find(|&i| results[0][i].to_bits() != results[1][i].to_bits()) {
            return Err(fail(format!(
                "Jacobi ({form}) after {steps} steps: Rust u[{i}] = {}, C++ {}",
                results[0][i], results[1][i]
            )));
        }
        // The A/A run: the C++ twin on the Rust side's buffers against itself on its own.
        let aa = if control && !select {
            Some(paired_ms(
                &gpu,
                1,
                jreps,
                stepping(&u0, steps, &cpp_step, &mut xr, &mut yr),
                stepping(&u0, steps, &cpp_step, &mut xc, &mut yc),
            )?)
        } else {
            None
        };
        rows.push(Row {
            name: format!("Jacobi 5-point, shared tile + halo ({form}), {n}², {steps} steps"),
            t,
            control: aa,
            work: 8.0 * (n * n) as f64 * steps as f64,
            unit: "GB/s",
            cublas: None,
        });
    }

    println!();
    let mut head =
        vec!["kernel (safe Rust vs CUDA C++)", "Rust (Cohort)", "CUDA C++", "Rust / C++ (speed) [quartiles]"];
    if control {
        head.push("C++ / C++ (A/A) [quartiles]");
    }
    head.extend(["cuBLAS", "Rust / cuBLAS"]);
    let mut t = Table::new(&head).numeric(1..head.len());
    for r in rows {
        let rate = |ms: f64| r.work / ms / 1e6;
        let (blas, vs) = match r.cublas {
            Some(b) => (format!("{:.0} {}", rate(b), r.unit), format!("{:.3}", b / r.t.a)),
            None => ("—".into(), "—".into()),
        };
        let mut cells = vec![
            r.name,
            format!("{:.3} ms ({:.0} {})", r.t.a, rate(r.t.a), r.unit),
            format!("{:.3} ms ({:.0} {})", r.t.b, rate(r.t.b), r.unit),
            r.t.ratio_text(),
        ];
        if let Some(c) = &r.control {
            cells.push(c.ratio_text());
        }
        cells.extend([blas, vs]);
        t.row(cells);
    }
    t.print();
    println!(
        "\ntransposes checked element for element against the CPU; SGEMMs at 2048 sampled elements against \
         f64 CPU dot products and in full against cuBLAS; Jacobi's first step against the CPU, {steps} steps Rust \
         against C++ bit for bit"
    );
    Ok(())
}

/// One timed side of the Jacobi benchmark: prepare by resetting `x` to `u0`, run `steps` steps
/// of `step`, back and forth between `x` and `y`.
pub(super) fn stepping<'s>(
    u0: &'s [f32],
    steps: usize,
    step: &'s Step<'s>,
    x: &'s mut DeviceBuffer<f32>,
    y: &'s mut DeviceBuffer<f32>,
) -> impl FnMut(Phase) -> cohort_runtime::Result<()> + 's {
    move |p| match p {
        Phase::Prep => x.copy_from(u0),
        Phase::Run => {
            for i in 0..steps {
                if i % 2 == 0 { step(x, y)? } else { step(y, x)? }
            }
            Ok(())
        }
    }
}

/// One Jacobi step on the CPU, in the kernels' operation order.
pub(super) fn jacobi_cpu(u: &[f32], n: usize) -> Vec<f32> {
    let mut out = u.to_vec();
    for y in 1..n - 1 {
        for x in 1..n - 1 {
            let at = |r: usize, c: usize| u[r * n + c];
            out[y * n + x] = 0.25 * (at(y - 1, x) + at(y + 1, x) + at(y, x - 1) + at(y, x + 1));
        }
    }
    out
}

/// 2048 sampled elements of `c` against f64 dot products, within a bound on f32 rounding.
pub(super) fn check_gemm_cpu(a: &[f32], b: &[f32], g: usize, c: &[f32], who: &str) -> CliResult {
    let mut r = rand::rngs::StdRng::seed_from_u64(9);
    for _ in 0..2048 {
        let (i, j) = (r.random_range(0..g), r.random_range(0..g));
        let (mut dot, mut mag) = (0.0f64, 0.0f64);
        for q in 0..g {
            let p = a[i * g + q] as f64 * b[q * g + j] as f64;
            dot += p;
            mag += p.abs();
        }
        let got = c[i * g + j] as f64;
        // Each of g additions rounds by at most 2^-24 of the running magnitude.
        let tol = mag * g as f64 * f32::EPSILON as f64 + 1e-6;
        if (got - dot).abs() > tol {
            return Err(fail(format!("{who}: C[{i}][{j}] = {got}, CPU says {dot} (tolerance {tol:.2e})")));
        }
    }
    Ok(())
}

/// `got` and `want` agree within summation-order rounding everywhere (a missing or doubled
/// term of the dot product is off by far more).
fn check_close(got: &[f32], want: &[f32], who: &str) -> CliResult {
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        if (x - y).abs() > 1e-2 + 1e-3 * y.abs() {
            return Err(fail(format!("{who}: C[{i}] = {x}, cuBLAS {y}")));
        }
    }
    Ok(())
}

/// The cuBLAS handle for the SGEMM ceiling (libcublas loaded at run time).
struct Cublas {
    handle: cudarc::cublas::sys::cublasHandle_t,
}

impl Cublas {
    fn new(s: &Stream) -> CliResult<Self> {
        let handle = cudarc::cublas::result::create_handle()
            .map_err(|e| fail(format!("cuBLAS is not available ({e:?}): add CUDA's lib64 to LD_LIBRARY_PATH")))?;
        // SAFETY: a live handle and a live stream of the current context.
        unsafe { cudarc::cublas::result::set_stream(handle, s.cu_stream().cast()) }
            .map_err(|e| fail(format!("cublasSetStream: {e:?}")))?;
        Ok(Self { handle })
    }

    /// Row-major `C = A · B` (`g × g` each): column-major `Cᵀ = Bᵀ · Aᵀ`.
    fn sgemm_row_major(
        &self,
        g: usize,
        a: &DeviceBuffer<f32>,
        b: &DeviceBuffer<f32>,
        c: &mut DeviceBuffer<f32>,
    ) -> Result<(), String> {
        use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let gi = g as i32;
        assert!(a.len() >= g * g && b.len() >= g * g && c.len() >= g * g);
        // SAFETY: three live device buffers of g² floats each (asserted); host scalars.
        unsafe {
            cudarc::cublas::result::sgemm(
                self.handle,
                CUBLAS_OP_N,
                CUBLAS_OP_N,
                gi,
                gi,
                gi,
                &alpha,
                b.as_device_ptr().addr() as *const f32,
                gi,
                a.as_device_ptr().addr() as *const f32,
                gi,
                &beta,
                c.as_device_ptr().addr() as *mut f32,
                gi,
            )
        }
        .map_err(|e| format!("cublasSgemm: {e:?}"))
    }

    fn destroy(self) {
        // SAFETY: the handle is live and used no more.
        let _ = unsafe { cudarc::cublas::result::destroy_handle(self.handle) };
    }
}

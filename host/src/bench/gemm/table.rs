//! The Hopper and FP8 table: its inputs, rows and outcomes, the timing and checks its rows share.

use super::check::close;
use super::*;

/// One shape's BF16 inputs (random in [-1, 1], seeded by the shape as the Ampere rows' are): as
/// `f32` (exactly their values) for the CPU's checks, and on the GPU.
pub(super) struct Inputs {
    pub(super) shape: (usize, usize, usize),
    pub(super) af: Vec<f32>,
    pub(super) bf: Vec<f32>,
    pub(super) da: DeviceBuffer<bf16>,
    pub(super) db: DeviceBuffer<bf16>,
}

impl Inputs {
    pub(super) fn new(gpu: &Gpu, (m, n, k): (usize, usize, usize)) -> CliResult<Self> {
        eprintln!("{m}×{n}×{k}: preparing the BF16 inputs");
        let (a, b) = (random::<bf16>(m * k, 1 + m as u64), random::<bf16>(n * k, 2 + n as u64));
        let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
        let f = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect();
        Ok(Self { shape: (m, n, k), af: f(&a), bf: f(&b), da, db })
    }
}

/// What became of one row.
pub(super) enum Outcome {
    /// Not run, and why (a library or kernel that is missing, a shape it does not take).
    Skipped(String),
    /// Run: the median milliseconds (`None` when it failed before a time was taken) and its check
    /// (what was checked, or what failed).
    Ran { ms: Option<f64>, check: Result<String, String> },
}

impl Outcome {
    pub(super) fn failed(why: String) -> Self {
        Outcome::Ran { ms: None, check: Err(why) }
    }
}

/// A row of the Hopper and FP8 table.
pub(super) struct HopperRow {
    pub(super) shape: (usize, usize, usize),
    pub(super) name: &'static str,
    /// The dense peak its "of peak" column is against (BF16 or FP8).
    pub(super) peak: f64,
    pub(super) outcome: Outcome,
}

impl HopperRow {
    pub(super) fn new(shape: (usize, usize, usize), name: &'static str, peak: f64, outcome: Outcome) -> Self {
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
pub(super) fn print_hopper(rows: &[HopperRow]) -> Vec<String> {
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
pub(super) fn time(
    gpu: &Gpu,
    reps: usize,
    mut launch: impl FnMut() -> cohort_runtime::Result<()>,
) -> Result<f64, String> {
    median_ms(gpu, 3, reps, |p| match p {
        Phase::Prep => Ok(()),
        Phase::Run => launch(),
    })
    .map_err(|e| format!("failed: {e}"))
}

/// A BF16 GEMM's row: `launch` writes C (m×n `f32`, NaN before the first run, so that an element
/// it never writes cannot pass), timed, then checked against the CPU (and `reference`, cuBLAS's C,
/// as a whole).
pub(super) fn bf16_row(
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
pub(super) fn check_bf16(inputs: &Inputs, c: &[f32], reference: Option<&[f32]>) -> Result<String, String> {
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
pub(super) fn cublas_bf16(gpu: &Gpu, blas: &Cublas, inputs: &Inputs, reps: usize) -> Outcome {
    bf16_row(gpu, inputs, None, reps, |c| {
        blas.gemm_tn::<bf16>(inputs.shape, &inputs.da, &inputs.db, c).map_err(cohort_runtime::Error::Argument)
    })
}

/// cuBLAS's C (one run), the Hopper rows' whole-C reference.
pub(super) fn cublas_c(gpu: &Gpu, blas: &Cublas, inputs: &Inputs) -> Result<Vec<f32>, String> {
    let (m, n, _) = inputs.shape;
    let mut c = gpu.zeroed::<f32>(m * n).map_err(|e| e.to_string())?;
    blas.gemm_tn::<bf16>(inputs.shape, &inputs.da, &inputs.db, &mut c)?;
    gpu.stream().synchronize().map_err(|e| e.to_string())?;
    c.to_vec().map_err(|e| e.to_string())
}

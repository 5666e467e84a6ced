//! `cohort bench dynamic`: device-side launches (CDP2) — the dynamic-parallelism article's
//! recursive reductions and the cost of one device launch — and, with `--twin PATH`, the same
//! kernels in CUDA C++ (`host/benches/dynamic_twin.cu`, built with `nvcc -rdc=true
//! -lcudadevrt`) side by side, in the same run.
//!
//! Both sides time a host launch with events around it on one stream (the median of `reps`,
//! after one warm-up), with the input restored before each repetition; Cohort's time includes
//! what its safety adds to a device-launching kernel's host launch (the launch budget's reset
//! and the ordering after the module's previous such launch). Every reduction's sum is checked
//! on both sides.

use cohort_dynamic_kernels::{bench, reduce};
use cohort_runtime::{DeviceBuffer, Event, Gpu, LaunchConfig, Module};

use crate::dynamic::PENDING;
use crate::util::{self, CliError, CliResult, Table};

/// The rows, in the twin's keys and order.
const KEYS: [(&str, &str); 8] = [
    ("neighbored", "reduce 2^20 ints, neighbored (no nesting)"),
    ("nested", "reduce, nested, fire-and-forget children"),
    ("nested_tail", "reduce, nested, tail-launched children"),
    ("nested2", "reduce, nested 2 (block 0 launches the grid)"),
    ("serial_ff", "1 thread launches N children, fire-and-forget"),
    ("serial_tail", "1 thread launches N children, tail"),
    ("each_ff", "N threads launch 1 child each, fire-and-forget"),
    ("each_tail", "N threads launch 1 child each, tail"),
];

/// What the command measures.
#[derive(clap::Args, Clone, Debug)]
pub struct Options {
    /// Timed repetitions per row, after one warm-up (the median is reported)
    #[arg(long, default_value = "20", value_parser = util::parse_positive)]
    pub reps: usize,
    /// Children one thread launches, one after another, in the serial rows
    #[arg(long, default_value = "4096", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub serial: u32,
    /// Threads, each launching one child, in the "each" rows (a multiple of 256)
    #[arg(long, default_value = "16384", value_parser = clap::value_parser!(u32).range(256..=65536))]
    pub each: u32,
    /// The nvcc-built C++ twin to run side by side
    /// (`nvcc -O3 -arch=sm_90 -rdc=true -o dynamic_twin host/benches/dynamic_twin.cu -lcudadevrt`)
    #[arg(long, value_name = "PATH")]
    pub twin: Option<String>,
}

/// One row: median milliseconds and its check (a sum, or refused launches).
type Row = (f64, i64);

/// Runs the benchmark and prints the table.
pub fn run(o: Options) -> CliResult {
    let o = &o;
    if o.reps == 0 || o.each == 0 || !o.each.is_multiple_of(256) {
        return Err(CliError::Usage("--reps must be positive and --each a positive multiple of 256".into()));
    }
    let gpu = util::gpu()?;
    gpu.set_pending_launch_limit(PENDING)?;
    let module = gpu.load(&cohort_dynamic_kernels::PTX)?;
    println!("{} (sm_{}), pending-launch limit {PENDING}", gpu.info().name, gpu.info().cc());
    let ours = measure(&gpu, &module, o)?;
    let theirs = match &o.twin {
        Some(path) => Some(run_twin(path, o)?),
        None => None,
    };
    let (n, want) = (1usize << 20, expected_sum());
    let mut head = vec!["workload", "Cohort ms"];
    if theirs.is_some() {
        head.extend(["C++ ms", "Cohort / C++"]);
    }
    head.push("per launch µs");
    let mut table = Table::new(&head).numeric(1..head.len());
    let mut bad = Vec::new();
    for (i, (key, what)) in KEYS.iter().enumerate() {
        let (ms, check) = ours[i];
        let label = what.replace(" N ", &format!(" {} ", if key.starts_with("serial") { o.serial } else { o.each }));
        let mut cells = vec![label, format!("{ms:.4}")];
        if let Some(t) = &theirs {
            let (cms, ccheck) = t[i];
            cells.push(format!("{cms:.4}"));
            cells.push(format!("{:.3}", ms / cms));
            if i >= 4 && ccheck != 0 {
                bad.push(format!("the C++ twin refused {ccheck} launches in `{key}`"));
            }
        }
        let launches = match *key {
            k if k.starts_with("serial") => f64::from(o.serial),
            k if k.starts_with("each") => f64::from(o.each),
            _ => f64::NAN,
        };
        cells.push(if launches.is_nan() { "".into() } else { format!("{:.3}", ms * 1e3 / launches) });
        table.row(cells);
        if i < 4 && check != want {
            bad.push(format!("`{key}` summed {n} ints to {check}, expected {want}"));
        }
        if i >= 4 && check != 0 {
            bad.push(format!("{check} device launches refused in `{key}`"));
        }
    }
    table.print();
    println!("medians of {} repetitions; every reduction's sum checked ({want})", o.reps);
    if bad.is_empty() { Ok(()) } else { Err(CliError::Failed(bad.join("; "))) }
}

/// The input: small mixed-sign values (never all zeros or all ones).
fn input() -> Vec<i32> {
    (0..1u32 << 20).map(|i| (i % 7) as i32 - 3 + if i % 5 == 0 { 2 } else { 0 }).collect()
}

fn expected_sum() -> i64 {
    input().iter().map(|&v| i64::from(v)).sum()
}

/// Cohort's side of every row.
fn measure(gpu: &Gpu, m: &Module, o: &Options) -> CliResult<Vec<Row>> {
    const N: usize = 1 << 20;
    const B: u32 = 512;
    let blocks = (N / B as usize) as u32;
    let s = gpu.new_stream()?;
    let pristine = gpu.upload(&input())?;
    let mut data: DeviceBuffer<i32> = gpu.zeroed(N)?;
    let mut out: DeviceBuffer<i32> = gpu.zeroed(blocks as usize)?;
    let mut refused: DeviceBuffer<u32> = gpu.zeroed(1)?;
    let (t0, t1) = (Event::new(gpu)?, Event::new(gpu)?);
    let neighbored = reduce::reduce_neighbored::load(m)?;
    let nested = reduce::reduce_nested::load(m)?;
    let nested_tail = reduce::reduce_nested_tail::load(m)?;
    let nested2 = reduce::reduce_nested2::load(m)?;
    let serial = bench::launch_serial::load(m)?;
    let each = bench::launch_each::load(m)?;
    let mut rows = Vec::new();
    for k in 0..KEYS.len() {
        let mut ms = Vec::with_capacity(o.reps);
        let mut check = 0i64;
        for r in 0..=o.reps {
            s.copy(&pristine, &mut data)?;
            s.fill(&mut out, 0)?;
            s.fill(&mut refused, 0)?;
            let (d, p) = (data.as_device_ptr_mut(), out.as_device_ptr_mut());
            t0.record(&s)?;
            let full = LaunchConfig::new(blocks, B);
            // SAFETY (the reductions): `data` holds blocks × B ints and `out` one per block;
            // both live until the synchronize below, and nothing else touches them meanwhile
            // (this stream's copies and fills are ordered before); B is a power of two.
            match k {
                // SAFETY: as above.
                0 => unsafe { neighbored.launch(&s, full, d, p) }?,
                // SAFETY: as above.
                1 => unsafe { nested.launch(&s, full, d, p, B) }?,
                // SAFETY: as above.
                2 => unsafe { nested_tail.launch(&s, full, d, p, B) }?,
                // SAFETY: as above; the nested-2 kernel runs B / 2 threads per block of B elements.
                3 => unsafe { nested2.launch(&s, LaunchConfig::new(blocks, B / 2), d, p, B / 2, B) }?,
                4 | 5 => serial.launch(&s, (1u32, 32u32), &mut refused, o.serial, (k - 4) as u32)?,
                _ => each.launch(&s, (o.each / 256, 256u32), &mut refused, (k - 6) as u32)?,
            }
            t1.record(&s)?;
            s.synchronize()?;
            if r > 0 {
                ms.push(f64::from(t1.elapsed_ms_since(&t0)?));
            }
            check =
                if k < 4 { out.to_vec()?.iter().map(|&v| i64::from(v)).sum() } else { i64::from(refused.to_vec()?[0]) };
        }
        rows.push((util::median(&mut ms), check));
    }
    Ok(rows)
}

/// Runs the C++ twin and reads its `twin <key> <ms> <check>` lines.
fn run_twin(path: &str, o: &Options) -> CliResult<Vec<Row>> {
    let device = std::env::var("COHORT_DEVICE").unwrap_or_else(|_| "0".into());
    let args = [
        "--reps".to_string(),
        o.reps.to_string(),
        "--serial".into(),
        o.serial.to_string(),
        "--each".into(),
        o.each.to_string(),
        "--device".into(),
        device,
    ];
    let stdout = util::run_twin(path, &args)?;
    let mut rows = vec![None; KEYS.len()];
    for line in stdout.lines() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["twin", key, ms, check] => {
                let bad = || CliError::Failed(format!("the C++ twin printed a line I cannot read: `{line}`"));
                let i = KEYS.iter().position(|(k, _)| *k == key).ok_or_else(bad)?;
                rows[i] = Some((ms.parse::<f64>().map_err(|_| bad())?, check.parse::<i64>().map_err(|_| bad())?));
            }
            _ if line.starts_with('#') => println!("C++ twin: {}", line.trim_start_matches("# ")),
            _ => {}
        }
    }
    rows.into_iter()
        .zip(KEYS)
        .map(|(r, (k, _))| r.ok_or_else(|| CliError::Failed(format!("the C++ twin printed no `{k}` row"))))
        .collect()
}

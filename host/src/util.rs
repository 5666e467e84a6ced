//! Small helpers shared by the commands: errors, option values, tables, progress, statistics.

use cohort_runtime::{Error, Gpu};

/// How a command failed.
#[derive(Debug)]
pub enum CliError {
    /// Bad command line.
    Usage(String),
    /// No GPU (or no driver) here.
    NoGpu(Error),
    /// Something ran and failed (a kernel, a check).
    Failed(String),
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        match e {
            Error::NoDriver | Error::NoDevice { .. } => CliError::NoGpu(e),
            other => CliError::Failed(other.to_string()),
        }
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

/// The GPU named by `COHORT_DEVICE` (default 0), for the commands that need a GPU (the
/// benchmarks against CUDA C++, device-side launches, copy engines overlapping kernels): the CPU
/// device (`COHORT_DEVICE=cpu`) is refused, saying so.
pub fn gpu() -> CliResult<Gpu> {
    let gpu = Gpu::from_env()?;
    if gpu.is_cpu() {
        return Err(CliError::NoGpu(Error::NotOnCpu {
            what: "this command measures or uses what only a GPU has (benchmarks against CUDA C++, device-side \
                   launches); unset COHORT_DEVICE=cpu and run it on a machine with a GPU (`cohort tour` and `cohort \
                   atomics` run on the CPU device)"
                .into(),
        }));
    }
    Ok(gpu)
}

/// Where a workload that runs anywhere runs (`--device`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    /// A GPU if there is one (`COHORT_DEVICE` picks it), else the CPU device
    #[default]
    Auto,
    /// The CPU device (cohort-cpu: kernels on this machine's cores), even with a GPU
    Cpu,
    /// A GPU only
    Gpu,
}

/// The `--device` option of the workloads that run on the CPU device too.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct DeviceArgs {
    /// Where to run: a GPU if there is one, else the CPU device (auto; COHORT_DEVICE=cpu also
    /// picks the CPU device), the CPU device, or a GPU only
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
}

/// The device `choice` names, and the line that says where the work runs when it is the CPU
/// device (`None` on a GPU): a workload prints it first.
pub fn device(choice: DeviceChoice) -> CliResult<(Gpu, Option<String>)> {
    let wants_cpu = std::env::var("COHORT_DEVICE").is_ok_and(|v| v.trim().eq_ignore_ascii_case("cpu"));
    match choice {
        DeviceChoice::Cpu => {
            let gpu = Gpu::cpu()?;
            let line = cpu_line(&gpu, "as --device cpu asks");
            Ok((gpu, Some(line)))
        }
        DeviceChoice::Gpu if wants_cpu => {
            Err(CliError::Usage("--device gpu and COHORT_DEVICE=cpu contradict each other".into()))
        }
        DeviceChoice::Gpu => Ok((Gpu::from_env()?, None)),
        DeviceChoice::Auto => Ok(Gpu::any_noted()?),
    }
}

/// "Running on the CPU device (cohort-cpu, N cores), `why`".
fn cpu_line(gpu: &Gpu, why: &str) -> String {
    let name = &gpu.info().name;
    let name = match (name.find('('), name.rfind(')')) {
        (Some(a), Some(b)) if a < b => &name[a + 1..b],
        _ => name.as_str(),
    };
    format!("Running on the CPU device ({name}), {why}")
}

/// A count or size as the options take it: digits with optional `_` separators and an optional
/// binary suffix `k`, `M`, `G` (`1G` = 2³⁰, `16k` = 16384). A clap value parser.
pub fn parse_count(v: &str) -> Result<u64, String> {
    let v = v.replace('_', "");
    let (num, mul) = match v.chars().last() {
        Some('k' | 'K') => (&v[..v.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&v[..v.len() - 1], 1 << 20),
        Some('g' | 'G') => (&v[..v.len() - 1], 1 << 30),
        _ => (&v[..], 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("`{v}` is not a count (digits, optionally with a k, M or G suffix)"))
}

/// [`parse_count`] as a `usize` of at least 1.
pub fn parse_positive(v: &str) -> Result<usize, String> {
    match usize::try_from(parse_count(v)?) {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{v}` is too large")),
    }
}

/// [`parse_count`] as a `usize` (0 allowed).
pub fn parse_usize(v: &str) -> Result<usize, String> {
    usize::try_from(parse_count(v)?).map_err(|_| format!("`{v}` is too large"))
}

/// Writes `text` to stdout; a reader that went away (`cohort ptx k | head`) ends the output
/// quietly instead of a panic.
pub fn print_out(text: &str) -> CliResult {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Failed(format!("writing: {e}"))),
        _ => Ok(()),
    }
}

/// A table (comfy-table, one style for every command), printed with [`Table::print`].
pub struct Table(comfy_table::Table);

impl Table {
    /// A table with these column heads.
    pub fn new(head: &[&str]) -> Self {
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED).set_header(head.to_vec());
        Self(t)
    }
    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.0.add_row(cells);
    }
    /// Right-aligns these columns (numbers).
    pub fn numeric(mut self, columns: impl IntoIterator<Item = usize>) -> Self {
        for i in columns {
            if let Some(c) = self.0.column_mut(i) {
                c.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        self
    }
    /// Prints the table to stdout.
    pub fn print(&self) {
        println!("{}", self.0);
    }
}

/// A progress bar of `total` steps on stderr (indicatif: drawn only when stderr is a terminal);
/// `set_message` names the current step, `inc(1)` ends it, `finish_and_clear` removes the bar.
pub fn progress(total: usize) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template("[{pos}/{len}] {elapsed:>4} {wide_msg}") {
        bar.set_style(style);
    }
    bar
}

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

/// The `q` quantile of sorted `v`.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Runs the C++ twin of a benchmark (an nvcc-built program) with `args` and returns its
/// standard output; a twin that cannot start or exits non-zero is an error carrying its output.
pub fn run_twin<S: AsRef<std::ffi::OsStr>>(path: &str, args: &[S]) -> CliResult<String> {
    let out = std::process::Command::new(path)
        .args(args)
        .output()
        .map_err(|e| CliError::Failed(format!("could not run the C++ twin `{path}`: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(CliError::Failed(format!(
            "the C++ twin `{path}` failed ({}):\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(stdout)
}

/// The C++ twin's figure `key`: the median of its rounds (`name`: the key as the twin prints
/// it, for the error when it printed none).
pub fn twin_figure<K: Ord>(theirs: &std::collections::BTreeMap<K, Vec<f64>>, key: &K, name: &str) -> CliResult<f64> {
    let v = theirs.get(key).ok_or_else(|| CliError::Failed(format!("the C++ twin printed no `{name}` figure")))?;
    Ok(median(&mut v.clone()))
}

/// Reads the `twin <N fields> <value>` lines a C++ twin printed, handing each line's fields and
/// value to `add`, which returns `None` for a field it cannot read: an error naming the line, as
/// is a value that is not a number. Other lines are skipped; the twin's `# …` lines are printed
/// when `first` (its first round).
pub fn twin_lines<const N: usize>(
    stdout: &str,
    first: bool,
    mut add: impl FnMut([&str; N], f64) -> Option<()>,
) -> CliResult {
    for line in stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == N + 2 && f[0] == "twin" {
            let bad = || CliError::Failed(format!("the C++ twin printed a line I cannot read: `{line}`"));
            let value: f64 = f[N + 1].parse().map_err(|_| bad())?;
            add(std::array::from_fn(|i| f[i + 1]), value).ok_or_else(bad)?;
        } else if first && line.starts_with('#') {
            println!("C++ twin: {}", line.trim_start_matches("# "));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn util_counts_take_suffixes_and_separators() {
        assert_eq!(parse_count("1G"), Ok(1 << 30));
        assert_eq!(parse_count("16k"), Ok(16 << 10));
        assert_eq!(parse_count("128M"), Ok(128 << 20));
        assert_eq!(parse_count("10_000_000"), Ok(10_000_000));
        assert!(parse_count("").is_err() && parse_count("x").is_err() && parse_count("-1").is_err());
        assert!(parse_count("99999999999999G").is_err(), "overflow");
        assert_eq!(parse_positive("3"), Ok(3));
        assert!(parse_positive("0").is_err());
        assert_eq!(parse_usize("0"), Ok(0));
    }
}

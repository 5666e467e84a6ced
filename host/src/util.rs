//! Small helpers shared by the commands: errors, options, random data, tables, progress.

use std::io::Write;
use std::time::Instant;

use cohort_runtime::{Error, Gpu};

/// How a command failed.
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

/// The GPU named by `COHORT_DEVICE` (default 0).
pub fn gpu() -> CliResult<Gpu> {
    Ok(Gpu::from_env()?)
}

/// `--name value` as a number, or `default`.
pub fn opt_num(args: &[String], name: &str, default: u64) -> CliResult<u64> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => {
            let v = args.get(i + 1).ok_or_else(|| CliError::Usage(format!("{name} needs a value")))?;
            let v = v.replace('_', "");
            let (num, mul) = match v.chars().last() {
                Some('k' | 'K') => (&v[..v.len() - 1], 1u64 << 10),
                Some('m' | 'M') => (&v[..v.len() - 1], 1 << 20),
                Some('g' | 'G') => (&v[..v.len() - 1], 1 << 30),
                _ => (&v[..], 1),
            };
            num.parse::<u64>().map(|n| n * mul).map_err(|_| CliError::Usage(format!("{name}: `{v}` is not a number")))
        }
    }
}

/// Checks that every argument is one of `known` (flags taking a value skip it).
pub fn check_args(args: &[String], known: &[&str]) -> CliResult {
    let mut i = 0;
    while i < args.len() {
        if !known.contains(&args[i].as_str()) {
            return Err(CliError::Usage(format!("unknown option `{}`", args[i])));
        }
        i += 2;
    }
    Ok(())
}

/// A text table printed with aligned columns.
pub struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(head: &[&str]) -> Self {
        Self { head: head.iter().map(|s| s.to_string()).collect(), rows: Vec::new() }
    }
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    pub fn print(&self) {
        let n = self.head.len();
        let mut w = vec![0; n];
        for r in std::iter::once(&self.head).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &Vec<String>| {
            let cells: Vec<String> = r.iter().enumerate().map(|(i, c)| format!("{c:<width$}", width = w[i])).collect();
            println!("{}", cells.join("  ").trim_end());
        };
        line(&self.head);
        println!("{}", w.iter().map(|&x| "-".repeat(x)).collect::<Vec<_>>().join("  "));
        for r in &self.rows {
            line(r);
        }
    }
}

/// A one-line progress display on stderr (only when stderr is a terminal).
pub struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
}

impl Progress {
    pub fn new(total: usize) -> Self {
        use std::io::IsTerminal;
        Self { total, done: 0, start: Instant::now(), tty: std::io::stderr().is_terminal() }
    }
    pub fn step(&mut self, what: &str) {
        self.done += 1;
        if self.tty {
            let mut e = std::io::stderr();
            let _ = write!(
                e,
                "\r\x1b[2K[{}/{}] {:>5.1}s  {what}",
                self.done,
                self.total,
                self.start.elapsed().as_secs_f64()
            );
            let _ = e.flush();
        }
    }
    pub fn finish(&self) {
        if self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
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

//! `cohort doctor`: whether this machine can build and run Cohort kernels. One line per check,
//! `ok`, `warn` or `FAIL` with what was found; under each problem, the command that fixes it.
//! Exit status 0 when no check failed (warnings are optional parts), 1 otherwise.

use std::process::Command;

use cohort_runtime::{Error, Gpu};

use crate::inspect::EMBEDDED;
use crate::tools;
use crate::util::{CliError, CliResult};

/// The toolchain Cohort pins (this repository's `rust-toolchain.toml`, as this binary was built).
const TOOLCHAIN_TOML: &str = include_str!("../../rust-toolchain.toml");

/// Components the nvptx64 build cannot do without.
const REQUIRED_COMPONENTS: &[&str] = &["rust-src", "llvm-tools", "llvm-bitcode-linker"];

/// The oldest driver API Cohort runs on: CUDA 13.0 (driver 580).
const MIN_DRIVER: i32 = 13000;

/// `cohort doctor`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Treat a missing driver or GPU as a failure (on a machine meant to run kernels)
    #[arg(long)]
    pub gpu: bool,
}

/// A check's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Fine.
    Ok,
    /// An optional part is missing or odd; nothing required fails.
    Warn,
    /// A required part is missing or broken.
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

/// One check: what, how it went, the details, and the command that fixes it.
#[derive(Debug)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// The outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// The command (or step) that fixes a problem.
    pub fix: Option<String>,
}

impl Check {
    fn new(name: impl Into<String>, status: Status, detail: impl Into<String>) -> Self {
        Self { name: name.into(), status, detail: detail.into(), fix: None }
    }
    fn ok(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(name, Status::Ok, detail)
    }
    fn fix(mut self, how: impl Into<String>) -> Self {
        self.fix = Some(how.into());
        self
    }
}

/// The pinned toolchain: its channel and components, from `rust-toolchain.toml` text.
pub fn parse_toolchain(toml: &str) -> Option<(String, Vec<String>)> {
    let value = |key: &str| -> Option<String> {
        let at = toml.lines().position(|l| l.trim_start().starts_with(key) && l.contains('='))?;
        // The value, up to its closing bracket when it is a list spread over lines.
        let mut v = toml.lines().skip(at).collect::<Vec<_>>().join("\n");
        v = v[v.find('=')? + 1..].to_string();
        let v = v.trim_start();
        let end = if v.starts_with('[') { v.find(']')? + 1 } else { v.find('\n').unwrap_or(v.len()) };
        Some(v[..end].to_string())
    };
    let strings = |v: &str| -> Vec<String> { v.split('"').skip(1).step_by(2).map(str::to_string).collect() };
    let channel = strings(&value("channel")?).into_iter().next()?;
    let components = value("components").map(|v| strings(&v)).unwrap_or_default();
    Some((channel, components))
}

/// Whether `rustup toolchain list` output has `channel` (listed as `<channel>-<host triple>`,
/// maybe with ` (active)`/` (default)`).
pub fn toolchain_listed(list: &str, channel: &str) -> bool {
    list.lines().filter_map(|l| l.split_whitespace().next()).any(|t| {
        t == channel
            || t.strip_prefix(channel).is_some_and(|r| r.starts_with('-') && !r[1..].starts_with(char::is_numeric))
    })
}

/// Whether `rustup component list --installed` output has `component` (listed bare, as
/// `rust-src`, or with this host's triple, as `llvm-tools-x86_64-unknown-linux-gnu`;
/// `llvm-tools` was once `llvm-tools-preview`).
pub fn component_listed(list: &str, component: &str) -> bool {
    let host = format!("-{}-", std::env::consts::ARCH);
    list.lines().map(str::trim).any(|l| {
        let rest = l.strip_prefix(component).map(|r| r.strip_prefix("-preview").unwrap_or(r));
        rest.is_some_and(|r| r.is_empty() || r.starts_with(&host))
    })
}

/// `program args…`: its stdout when it ran and succeeded, else why not.
fn output(program: &str, args: &[&str]) -> Result<String, String> {
    match Command::new(program).args(args).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("").trim()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("`{program}` is not on PATH")),
        Err(e) => Err(format!("cannot run `{program}`: {e}")),
    }
}

const RUSTUP_INSTALL: &str = "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh";

/// rustup, the pinned toolchain and its components.
fn toolchain_checks(out: &mut Vec<Check>) {
    let Some((channel, components)) = parse_toolchain(TOOLCHAIN_TOML) else {
        out.push(Check::new("toolchain", Status::Fail, "this binary's rust-toolchain.toml names no channel"));
        return;
    };
    let install = format!(
        "rustup toolchain install {channel} --profile minimal --component {}",
        if components.is_empty() { REQUIRED_COMPONENTS.join(",") } else { components.join(",") }
    );
    match output("rustup", &["--version"]) {
        Ok(v) => out.push(Check::ok("rustup", v.lines().next().unwrap_or("").trim())),
        Err(e) => {
            out.push(Check::new("rustup", Status::Fail, e).fix(RUSTUP_INSTALL));
            out.push(
                Check::new("toolchain", Status::Fail, format!("{channel}: cannot check without rustup"))
                    .fix(format!("{RUSTUP_INSTALL}, then {install}")),
            );
            return;
        }
    }
    match output("rustup", &["toolchain", "list"]) {
        Ok(list) if toolchain_listed(&list, &channel) => {
            out.push(Check::ok("toolchain", format!("{channel} installed (pinned by Cohort's rust-toolchain.toml)")));
        }
        Ok(_) => {
            out.push(
                Check::new("toolchain", Status::Fail, format!("{channel} (pinned by Cohort) is not installed"))
                    .fix(install),
            );
            return;
        }
        Err(e) => {
            out.push(Check::new("toolchain", Status::Fail, e).fix(install));
            return;
        }
    }
    let listed = match output("rustup", &["component", "list", "--installed", "--toolchain", &channel]) {
        Ok(l) => l,
        Err(e) => {
            out.push(Check::new("components", Status::Fail, e).fix(install));
            return;
        }
    };
    let mut wanted: Vec<&str> = REQUIRED_COMPONENTS.to_vec();
    wanted.extend(components.iter().map(String::as_str).filter(|c| !REQUIRED_COMPONENTS.contains(c)));
    let missing: Vec<&str> = wanted.iter().copied().filter(|c| !component_listed(&listed, c)).collect();
    let missing_required: Vec<&str> = missing.iter().copied().filter(|c| REQUIRED_COMPONENTS.contains(c)).collect();
    let check = if missing.is_empty() {
        Check::ok("components", wanted.join(", "))
    } else {
        let status = if missing_required.is_empty() { Status::Warn } else { Status::Fail };
        Check::new("components", status, format!("{channel} lacks {}", missing.join(", ")))
            .fix(format!("rustup component add --toolchain {channel} {}", missing.join(" ")))
    };
    out.push(check);
}

/// The PTX this binary embeds: proof that its nvptx64 build worked, for which architectures.
fn build_checks(out: &mut Vec<Check>) {
    for set in EMBEDDED {
        let archs: Vec<String> = set.archs().iter().map(|a| format!("sm_{a}")).collect();
        let kernels = set.modules.first().map_or(0, |m| m.kernels().len());
        let checked = match set.modules.iter().find_map(|m| m.ptxas) {
            Some(v) => format!("checked by ptxas at build time ({v})"),
            None => "not checked by ptxas at build time (none was found then)".into(),
        };
        out.push(if set.modules.is_empty() || kernels == 0 {
            Check::new("nvptx build", Status::Fail, format!("{}: no PTX embedded", set.crate_name))
                .fix("cargo build --release -p cohort-host (in the repository; see the README's Requirements)")
        } else {
            Check::ok(
                "nvptx build",
                format!("{}: {} PTX embedded ({kernels} kernels), {checked}", set.crate_name, archs.join(", ")),
            )
        });
    }
}

/// ptxas and a disassembler (both optional).
fn tool_checks(out: &mut Vec<Check>) {
    let get_nvcc = format!(
        "{} && export PATH=\"{}/nvidia/cu13/bin:$PATH\"",
        tools::pip_install("nvcc", tools::NVCC_WHEEL),
        tools::cohort_dir("nvcc")
    );
    match tools::ptxas() {
        Some((p, true)) => out.push(Check::ok(
            "ptxas",
            format!("{} ({})", p.display(), tools::version(&p).unwrap_or_else(|| "version unknown".into())),
        )),
        Some((p, false)) => out.push(
            Check::new(
                "ptxas",
                Status::Warn,
                format!("{} is installed, but builds do not look there (optional: build-time checks)", p.display()),
            )
            .fix(format!("export PATH=\"{}:$PATH\"", p.parent().map(|d| d.display().to_string()).unwrap_or_default())),
        ),
        None => out.push(
            Check::new(
                "ptxas",
                Status::Warn,
                "not found (optional: checks every kernel at build time, resource use, `cohort sass`)",
            )
            .fix(get_nvcc),
        ),
    }
    match tools::disassembler() {
        Some(p) => out.push(Check::ok("disassembler", format!("{} (for `cohort sass`)", p.display()))),
        None => out.push(
            Check::new("disassembler", Status::Warn, "no nvdisasm or cuobjdump (optional: `cohort sass`)").fix(
                format!(
                    "{} && export PATH=\"{}/nvidia/cu13/bin:$PATH\"",
                    tools::pip_install("nvdisasm", tools::NVDISASM_WHEEL),
                    tools::cohort_dir("nvdisasm")
                ),
            ),
        ),
    }
}

/// The driver and every GPU. Missing ones are failures with `--gpu`, else warnings.
fn gpu_checks(out: &mut Vec<Check>, required: bool) {
    let missing = if required { Status::Fail } else { Status::Warn };
    let why = if required {
        ""
    } else {
        " (kernels run on the CPU device instead, checked the same way; a GPU is needed for GPU speed, the \
         benchmarks and GPU-only features)"
    };
    // The CPU device needs nothing: it is always there (`Gpu::cpu`, `COHORT_DEVICE=cpu`).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    out.push(Check::ok(
        "CPU device",
        format!(
            "cohort-cpu on {cores} cores: runs every kernel without a GPU (COHORT_DEVICE=cpu picks it even with one)"
        ),
    ));
    let driver_fix = "install the NVIDIA driver, 580 or newer (CUDA 13), e.g. `sudo apt install nvidia-driver-580`";
    let count = match Gpu::count() {
        Ok(n) => n,
        Err(Error::NoDriver) => {
            out.push(
                Check::new("CUDA driver", missing, format!("libcuda.so could not be loaded: no NVIDIA driver{why}"))
                    .fix(driver_fix),
            );
            out.push(Check::new("GPUs", missing, format!("none: no driver{why}")));
            return;
        }
        Err(e) => {
            out.push(
                Check::new("CUDA driver", Status::Fail, format!("libcuda.so loaded, but the driver failed: {e}"))
                    .fix("nvidia-smi (does the driver see the GPUs?); check CUDA_VISIBLE_DEVICES"),
            );
            return;
        }
    };
    if count == 0 {
        out.push(Check::ok("CUDA driver", "libcuda.so loaded"));
        out.push(
            Check::new("GPUs", missing, format!("the driver reports none{why}"))
                .fix("nvidia-smi (does the driver see the GPUs?); check CUDA_VISIBLE_DEVICES"),
        );
        return;
    }
    let mut driver_checked = false;
    for ordinal in 0..count {
        let gpu = match Gpu::new(ordinal) {
            Ok(g) => g,
            Err(e) => {
                out.push(Check::new(format!("GPU {ordinal}"), Status::Fail, e.to_string()).fix("nvidia-smi"));
                continue;
            }
        };
        let i = gpu.info();
        if !driver_checked {
            driver_checked = true;
            let v = format!("CUDA {}.{}", i.driver_version / 1000, i.driver_version % 1000 / 10);
            out.push(if i.driver_version >= MIN_DRIVER {
                Check::ok("CUDA driver", format!("libcuda.so loaded; the driver supports {v}"))
            } else {
                Check::new("CUDA driver", Status::Fail, format!("the driver supports {v}; Cohort needs CUDA 13.0"))
                    .fix(driver_fix)
            });
        }
        let cc = i.cc();
        let what =
            format!("{}, sm_{cc}, {:.0} GiB, {} SMs", i.name, i.total_memory as f64 / (1u64 << 30) as f64, i.sms);
        let unrunnable: Vec<&str> = EMBEDDED.iter().filter(|s| s.select(cc).is_none()).map(|s| s.crate_name).collect();
        out.push(if unrunnable.is_empty() {
            let runs: Vec<String> =
                EMBEDDED.iter().filter_map(|s| s.select(cc)).map(|m| format!("sm_{}", m.arch)).collect();
            Check::ok(format!("GPU {ordinal}"), format!("{what}; runs the embedded {} PTX", runs.join("/")))
        } else {
            Check::new(
                format!("GPU {ordinal}"),
                Status::Fail,
                format!("{what}; no embedded PTX of {} runs on it", unrunnable.join(", ")),
            )
            .fix(format!("COHORT_ARCHS=sm_{cc},sm_80,sm_90 cargo build --release -p cohort-host"))
        });
    }
    if let Ok(v) = std::env::var("COHORT_DEVICE") {
        out.push(match v.trim().parse::<usize>() {
            Ok(d) if d < count => Check::ok("COHORT_DEVICE", format!("{d}: commands use GPU {d}")),
            _ if v.trim().eq_ignore_ascii_case("cpu") => {
                Check::ok("COHORT_DEVICE", "cpu: commands use the CPU device, not the GPUs")
            }
            _ => Check::new(
                "COHORT_DEVICE",
                Status::Fail,
                format!("`{v}` is not one of the ordinals 0..{count}, nor `cpu`"),
            )
            .fix("unset COHORT_DEVICE, or set it to a GPU's ordinal or to `cpu`"),
        });
    }
}

/// The device runtime library (kernels that launch kernels).
fn cudadevrt_check(out: &mut Vec<Check>) {
    let embedded: Vec<String> = EMBEDDED
        .iter()
        .filter_map(|s| {
            let lib = s.modules.iter().find_map(|m| m.device_runtime)?;
            Some(format!("{} ({} KiB)", s.crate_name, lib.len() >> 10))
        })
        .collect();
    let lacking: Vec<&str> = EMBEDDED
        .iter()
        .filter(|s| s.modules.iter().any(|m| m.needs_device_runtime() && m.device_runtime.is_none()))
        .map(|s| s.crate_name)
        .collect();
    let here = if embedded.is_empty() {
        "this binary's kernels do not need it".to_string()
    } else {
        format!("this binary embeds it for {}", embedded.join(", "))
    };
    let dir = tools::cohort_dir("cudadevrt");
    let get = format!(
        "{} && export COHORT_CUDADEVRT=\"{dir}/nvidia/cu13/lib/libcudadevrt.a\" (the CUDA version of your driver)",
        tools::pip_install("cudadevrt", tools::CUDADEVRT_WHEEL)
    );
    let check = match cohort_build::find_cudadevrt(cohort_build::ptxas_path().as_deref()) {
        Ok(p) => Check::ok("libcudadevrt.a", format!("{} for builds; {here}", p.display())),
        Err(e) => {
            let installed = std::env::var_os("HOME")
                .map(|h| std::path::PathBuf::from(h).join(".cohort/cudadevrt/nvidia/cu13/lib/libcudadevrt.a"))
                .filter(|p| p.is_file());
            let (detail, fix) = match (e.starts_with("COHORT_CUDADEVRT="), installed) {
                (true, _) => (e.split(" (").next().unwrap_or(&e).to_string(), get),
                (false, Some(p)) => (
                    format!("installed at {}, but builds do not look there", p.display()),
                    format!("export COHORT_CUDADEVRT=\"{}\"", p.display()),
                ),
                (false, None) => ("not found".to_string(), get),
            };
            let status = if lacking.is_empty() { Status::Warn } else { Status::Fail };
            Check::new(
                "libcudadevrt.a",
                status,
                format!("{detail} (optional: needed to build kernels that launch kernels); {here}"),
            )
            .fix(fix)
        }
    };
    out.push(check);
    if !lacking.is_empty() {
        out.push(
            Check::new(
                "device runtime",
                Status::Fail,
                format!(
                    "{} launch kernels from the device, but this binary was built without libcudadevrt.a",
                    lacking.join(", ")
                ),
            )
            .fix("get libcudadevrt.a (above), then rebuild: cargo build --release -p cohort-host"),
        );
    }
}

/// NCCL's version, if `libnccl.so.2` loads: `major.minor.patch`.
fn nccl_version() -> Result<String, String> {
    // SAFETY: loading a library runs its initializers; NCCL's have no preconditions (they only
    // set up its own state), and nothing of the library is used after `lib` is dropped.
    let lib = unsafe { libloading::Library::new("libnccl.so.2") }.map_err(|e| match std::error::Error::source(&e) {
        Some(why) => format!("{e}: {why}"),
        None => e.to_string(),
    })?;
    type GetVersion = unsafe extern "C" fn(*mut std::ffi::c_int) -> std::ffi::c_int;
    // SAFETY: `ncclGetVersion` has this signature in every NCCL 2 (`ncclResult_t
    // ncclGetVersion(int *version)`; `ncclResult_t` is a C enum, an `int`).
    let get = unsafe { lib.get::<GetVersion>(b"ncclGetVersion\0") }.map_err(|e| e.to_string())?;
    let mut v: std::ffi::c_int = 0;
    // SAFETY: `v` is a live `int` for NCCL to write; `lib` is loaded while `get` is called.
    let rc = unsafe { get(&mut v) };
    if rc != 0 {
        return Err(format!("ncclGetVersion returned {rc}"));
    }
    // NCCL ≥ 2.9 encodes major * 10000 + minor * 100 + patch.
    Ok(format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100))
}

fn nccl_check(out: &mut Vec<Check>) {
    out.push(match nccl_version() {
        Ok(v) => Check::ok("NCCL", format!("libnccl.so.2 loaded, NCCL {v}")),
        Err(e) => Check::new(
            "NCCL",
            Status::Warn,
            format!("libnccl.so.2 could not be loaded (optional: needed only for multi-GPU collectives): {e}"),
        )
        .fix(format!(
            "{} && export LD_LIBRARY_PATH=\"$(dirname \"$(find {} -name libnccl.so.2)\"):$LD_LIBRARY_PATH\"",
            tools::pip_install("nccl", "nvidia-nccl-cu13"),
            tools::cohort_dir("nccl")
        )),
    });
}

/// Every check, in order.
pub fn checks(require_gpu: bool) -> Vec<Check> {
    let mut out = Vec::new();
    toolchain_checks(&mut out);
    build_checks(&mut out);
    tool_checks(&mut out);
    gpu_checks(&mut out, require_gpu);
    cudadevrt_check(&mut out);
    nccl_check(&mut out);
    out
}

/// The report: one line per check, the fix under each problem, then a summary line.
pub fn render(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.chars().count()).max().unwrap_or(0);
    let mut s = String::new();
    for c in checks {
        s.push_str(&format!("{:<4}  {:<width$}  {}\n", c.status.label(), c.name, c.detail));
        if let Some(fix) = &c.fix {
            s.push_str(&format!("{:<4}  {:<width$}  fix: {fix}\n", "", ""));
        }
    }
    let n = |st: Status| checks.iter().filter(|c| c.status == st).count();
    s.push_str(&format!("{} ok, {} warnings, {} failed\n", n(Status::Ok), n(Status::Warn), n(Status::Fail)));
    s
}

/// `cohort doctor`.
pub fn run(args: Args) -> CliResult {
    let checks = checks(args.gpu);
    print!("{}", render(&checks));
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed > 0 {
        return Err(CliError::Failed(format!("{failed} check(s) failed; each `fix:` line says what to run")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_reads_the_pinned_toolchain() {
        let (channel, components) = parse_toolchain(TOOLCHAIN_TOML).unwrap();
        assert!(channel.starts_with("nightly-"), "{channel}");
        for c in REQUIRED_COMPONENTS {
            assert!(components.iter().any(|x| x == c), "{c} not in {components:?}");
        }
        let spread = "[toolchain]\n# a comment\nchannel = \"nightly-2030-01-02\"\ncomponents = [\n  \"rust-src\",\n  \"llvm-tools\",\n]\n";
        assert_eq!(
            parse_toolchain(spread),
            Some(("nightly-2030-01-02".to_string(), vec!["rust-src".to_string(), "llvm-tools".to_string()]))
        );
        assert_eq!(parse_toolchain("[toolchain]\nprofile = \"minimal\"\n"), None);
    }

    #[test]
    fn doctor_reads_rustup_listings() {
        let toolchains = "stable-x86_64-unknown-linux-gnu (default)\nnightly-x86_64-unknown-linux-gnu\n\
                          nightly-2026-10-29-x86_64-unknown-linux-gnu (active)\n";
        assert!(toolchain_listed(toolchains, "nightly-2026-10-29"));
        assert!(toolchain_listed(toolchains, "nightly"));
        assert!(!toolchain_listed(toolchains, "nightly-2026-10-30"));
        assert!(!toolchain_listed("nightly-2026-10-29-x86_64-unknown-linux-gnu\n", "nightly"));
        let components = "cargo-{A}-unknown-linux-gnu\nllvm-bitcode-linker-{A}-unknown-linux-gnu\n\
                          llvm-tools-preview-{A}-unknown-linux-gnu\nrust-src\n"
            .replace("{A}", std::env::consts::ARCH);
        let components = components.as_str();
        for c in ["rust-src", "llvm-tools", "llvm-bitcode-linker", "cargo"] {
            assert!(component_listed(components, c), "{c}");
        }
        for c in ["rust", "llvm", "clippy", "rustfmt"] {
            assert!(!component_listed(components, c), "{c}");
        }
    }

    #[test]
    fn doctor_report_has_one_line_per_check_and_fix_lines() {
        let checks = [
            Check::ok("rustup", "rustup 1.29.0"),
            Check::new("ptxas", Status::Warn, "not found").fix("pip install x"),
            Check::new("GPU 0", Status::Fail, "no PTX runs on it").fix("COHORT_ARCHS=sm_75 cargo build"),
        ];
        let text = render(&checks);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "ok    rustup  rustup 1.29.0",
                "warn  ptxas   not found",
                "              fix: pip install x",
                "FAIL  GPU 0   no PTX runs on it",
                "              fix: COHORT_ARCHS=sm_75 cargo build",
                "1 ok, 1 warnings, 1 failed",
            ]
        );
    }

    /// On any machine: every check runs and says something; a problem comes with its fix; with
    /// no GPU, the driver is a warning, or a failure with `--gpu`.
    #[test]
    fn doctor_checks_run_here() {
        let checks = checks(false);
        for name in ["rustup", "nvptx build", "ptxas", "CUDA driver", "libcudadevrt.a", "NCCL"] {
            assert!(checks.iter().any(|c| c.name == name), "no `{name}` check: {checks:?}");
        }
        for c in &checks {
            assert!(!c.detail.is_empty(), "{c:?}");
            if c.status != Status::Ok && c.name != "GPUs" {
                assert!(c.fix.is_some(), "a problem without a fix: {c:?}");
            }
        }
        let nvptx = checks.iter().find(|c| c.name == "nvptx build").unwrap();
        assert_eq!(nvptx.status, Status::Ok, "{nvptx:?}");
        if !Gpu::available() {
            let driver = |checks: &[Check]| checks.iter().find(|c| c.name == "CUDA driver").unwrap().status;
            assert_eq!(driver(&checks), Status::Warn);
            assert_eq!(driver(&self::checks(true)), Status::Fail);
        }
    }
}

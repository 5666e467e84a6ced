//! # cohort-build: Rust kernels → PTX, from `build.rs`
//!
//! The counterpart of Rust-CUDA's `cuda_builder` for rustc's own `nvptx64-nvidia-cuda` target.
//! A kernels crate calls it from its own `build.rs`:
//!
//! ```no_run
//! // kernels-gpu/build.rs, inside `fn main()`:
//! cohort_build::Builder::for_build_script().build_or_exit();
//! ```
//!
//! and includes the result on the host with `cohort_runtime::include_ptx!()`, which defines
//! `pub static PTX: cohort_runtime::PtxSet` (every module, embedded: no run-time paths).
//!
//! What a build does, per architecture (default `sm_80` and `sm_90`; `COHORT_ARCHS=sm_80,sm_90,…`
//! or [`Builder::archs`] to change; `COHORT_ARCHS=native` builds only for the GPUs `nvidia-smi`
//! reports on the building machine, half the device build on a one-GPU machine):
//!
//! 1. checks the toolchain: a nightly `rustc` with the `rust-src`, `llvm-tools` and
//!    `llvm-bitcode-linker` components, else fails naming the command that fixes it;
//! 2. runs `cargo rustc --lib --crate-type cdylib --release --target nvptx64-nvidia-cuda
//!    -Zbuild-std=core` on the crate with `-Ctarget-cpu=sm_XX`, in a target directory of its own
//!    (`<target>/cohort-ptx`, so no lock is shared with the outer build; `COHORT_PTX_TARGET_DIR`
//!    to share one between workspaces), with the outer build's `RUSTFLAGS`, wrappers and profile
//!    overrides removed. Every kernels crate, architecture and mode (checked or not) builds in
//!    that one directory, where cargo keeps each set of flags' artifacts apart: `core` and the
//!    device library are built once per architecture and mode for all the kernels crates, and
//!    the host crates of the device build (the `#[kernel]` macro, build scripts) once. A lock
//!    file there lets one device build run at a time. rustc's `llvm-bitcode-linker` writes the
//!    `.ptx`, whose `.target` is checked against the architecture asked, and in which the
//!    builder numbers checked mode's call-site markers, one number per call instruction
//!    ([`number_site_markers`]);
//! 3. when `ptxas` is found (`COHORT_PTXAS`, `PATH`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`),
//!    assembles the PTX for its architecture and records each kernel's registers, spills,
//!    stack and shared memory, which end up in the [`PtxSet`](../cohort_runtime/struct.PtxSet.html);
//! 4. when the PTX calls the device runtime (`__cudaCDP2*`: a kernel launches kernels, see
//!    `cohort::launch`), assembles it as relocatable code (`ptxas -c`: the calls are resolved
//!    only when the runtime links it) and finds `libcudadevrt.a` ([`find_cudadevrt`]), which is
//!    embedded beside the PTX so that the runtime can link the module without a CUDA toolkit;
//!    a missing one is a warning (an error under `COHORT_REQUIRE_PTXAS=1`, as in CI) saying how
//!    to get it, and loading such a module is then `cohort_runtime::Error::NoDeviceRuntime`;
//! 5. emits `rerun-if-changed` for every source file the kernels were built from (the crate
//!    and its path dependencies, from rustc's dep-info), so host-only edits elsewhere never
//!    rebuild PTX.
//!
//! Inside the nested build (`TARGET=nvptx64-…`) the builder does nothing, so the kernels crate's
//! own `build.rs` cannot recurse.

use std::env;
use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod ptxas;

pub use ptxas::{KernelResources, parse_ptxas_output};

/// Where ptxas would be found: `COHORT_PTXAS`, `PATH`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin`,
/// `/usr/local/cuda/bin`.
#[must_use]
pub fn ptxas_path() -> Option<PathBuf> {
    ptxas::find()
}

/// The nvptx target triple.
pub const TARGET: &str = "nvptx64-nvidia-cuda";
/// The toolchain Cohort is built and tested with (the `channel` of its `rust-toolchain.toml`).
/// A kernels crate's workspace pins it the same way; error messages print that file.
pub const TOOLCHAIN: &str = "nightly-2026-10-29";

/// The `rustup` components a device build needs.
pub const TOOLCHAIN_COMPONENTS: &[&str] = &["rust-src", "llvm-tools", "llvm-bitcode-linker"];

/// The `rust-toolchain.toml` a workspace with Cohort kernels needs (beside its root
/// `Cargo.toml`), then `rustup toolchain install` there.
#[must_use]
pub fn rust_toolchain_toml() -> String {
    let components = TOOLCHAIN_COMPONENTS.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join(", ");
    format!("[toolchain]\nchannel = {TOOLCHAIN:?}\ncomponents = [{components}]\n")
}

/// Architectures built when nothing else is asked for.
pub const DEFAULT_ARCHS: &[u32] = &[80, 90];

/// Builds one kernels crate to PTX.
#[derive(Clone, Debug)]
pub struct Builder {
    crate_dir: PathBuf,
    archs: Vec<u32>,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
    rustflags: Vec<String>,
    ptxas: PtxasMode,
    checked: Option<bool>,
}

/// Whether to run `ptxas` on the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PtxasMode {
    /// If it can be found (the default).
    IfFound,
    /// Always; fail if it cannot be found.
    Required,
    /// Never.
    Off,
}

/// One PTX module produced by a build.
#[derive(Clone, Debug)]
pub struct PtxModule {
    /// Compute capability × 10 (`80` for `sm_80`).
    pub arch: u32,
    /// Path of the `.ptx` file.
    pub path: PathBuf,
    /// What `ptxas -v` reported per kernel (empty when ptxas did not run).
    pub resources: Vec<KernelResources>,
    /// The `ptxas --version` line, when it ran.
    pub ptxas: Option<String>,
    /// Whether the PTX calls the device runtime (`__cudaCDP2*`): it must be linked with
    /// `libcudadevrt.a`.
    pub needs_device_runtime: bool,
}

/// The symbol prefix of the device runtime's CDP2 entry points: PTX that mentions it must be
/// linked with `libcudadevrt.a`.
pub const DEVICE_RUNTIME_MARK: &str = "__cudaCDP2";

/// Whether PTX text calls the device runtime (a kernel launches kernels).
#[must_use]
pub fn needs_device_runtime(ptx: &str) -> bool {
    ptx.contains(DEVICE_RUNTIME_MARK)
}

/// What a checked-mode call-site marker says in PTX before the builder numbers it: the device
/// library's `raw::site_marker` emits `mov.u32 %r, 0; // cohort-site?` at each collective's
/// check, one per call instruction after inlining (the same text as
/// `cohort::raw::SITE_MARKER_UNNUMBERED`).
pub const SITE_MARKER_UNNUMBERED: &str = "// cohort-site?";
/// What a numbered marker says, before its number (`cohort::raw::SITE_MARKER_NUMBERED`).
pub const SITE_MARKER_NUMBERED: &str = "// cohort-site=";

/// Numbers checked mode's call-site markers: the `n`-th `mov.u32 %r, 0; // cohort-site?` of the
/// module becomes `mov.u32 %r, n; // cohort-site=n` (`n` from 1). Checked mode compares these
/// numbers between the members of a collective, so each call instruction needs its own; the
/// runtime refuses PTX whose markers are not numbered. Returns the text and how many markers
/// it numbered (PTX without markers, as release builds are, comes back unchanged).
///
/// # Errors
/// A marker in another form than the device library's (the text of the line).
pub fn number_site_markers(ptx: &str) -> Result<(String, u32), String> {
    if !ptx.contains(SITE_MARKER_UNNUMBERED) {
        return Ok((ptx.to_owned(), 0));
    }
    let mut out = String::with_capacity(ptx.len() + ptx.len() / 64);
    let mut n = 0u32;
    for line in ptx.split_inclusive('\n') {
        let Some(at) = line.find(SITE_MARKER_UNNUMBERED) else {
            out.push_str(line);
            continue;
        };
        let (code, rest) = line.split_at(at);
        let Some(head) = code.trim_end().strip_suffix(", 0;").filter(|h| h.trim_start().starts_with("mov.u32")) else {
            return Err(format!("a call-site marker in an unexpected form: `{}`", line.trim()));
        };
        n = n.checked_add(1).ok_or("more than 2^32 call-site markers")?;
        let rest = &rest[SITE_MARKER_UNNUMBERED.len()..];
        out.push_str(&format!("{head}, {n}; {SITE_MARKER_NUMBERED}{n}{rest}"));
    }
    Ok((out, n))
}

/// Finds `libcudadevrt.a`: `COHORT_CUDADEVRT` (the file), then `lib64/` and `lib/` of
/// `$CUDA_PATH`, `$CUDA_HOME` and `/usr/local/cuda`, then beside a pip-installed ptxas
/// (`<...>/nvidia/cu13/bin/ptxas` → `<...>/nvidia/cu13/lib/libcudadevrt.a`).
///
/// # Errors
/// A message naming what was searched and how to get the library.
pub fn find_cudadevrt(ptxas: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = env::var_os("COHORT_CUDADEVRT") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("COHORT_CUDADEVRT={} is not a file (it names libcudadevrt.a itself)", p.display()))
        };
    }
    let mut roots: Vec<PathBuf> =
        ["CUDA_PATH", "CUDA_HOME"].iter().filter_map(env::var_os).map(PathBuf::from).collect();
    roots.push("/usr/local/cuda".into());
    let mut candidates: Vec<PathBuf> =
        roots.iter().flat_map(|r| [r.join("lib64/libcudadevrt.a"), r.join("lib/libcudadevrt.a")]).collect();
    if let Some(bin_dir) = ptxas.and_then(Path::parent).and_then(Path::parent) {
        candidates.push(bin_dir.join("lib/libcudadevrt.a"));
    }
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        format!(
            "these kernels launch kernels (dynamic parallelism), so their module must be linked with the CUDA device \
             runtime, libcudadevrt.a, which was not found (searched {}). Get it without a CUDA toolkit with \
             `python3 -m pip install --target DIR nvidia-cuda-runtime==13.0.96` and set \
             COHORT_CUDADEVRT=DIR/nvidia/cu13/lib/libcudadevrt.a, or set CUDA_PATH to a CUDA toolkit",
            candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )
    })
}

/// The result of [`Builder::build`].
#[derive(Clone, Debug)]
pub struct Built {
    /// The crate's library name (`cohort_kernels`).
    pub lib_name: String,
    /// One module per architecture, in the order asked.
    pub modules: Vec<PtxModule>,
    /// Source files the modules were built from (for `rerun-if-changed`).
    pub sources: Vec<PathBuf>,
    /// `libcudadevrt.a`, when some module calls the device runtime (embedded beside the PTX).
    pub device_runtime: Option<PathBuf>,
}

/// Why a build failed. The message names the fix where there is one.
#[derive(Debug)]
pub enum BuildError {
    /// The toolchain cannot build nvptx (stable rustc, missing components).
    Toolchain(String),
    /// rustc rejected the kernels; `diagnostics` holds its messages with file:line.
    Compile {
        /// Which architecture.
        arch: u32,
        /// rustc's messages as rustc renders them (or, when the failure was cargo's, such as a
        /// dependency that cannot be resolved, cargo's output).
        diagnostics: String,
        /// One line per error, `file:line:col: error[E…]: message` (rustc's short form).
        errors: Vec<String>,
    },
    /// ptxas rejected a module.
    Ptxas {
        /// Which architecture.
        arch: u32,
        /// ptxas' messages.
        message: String,
    },
    /// Anything else (I/O, bad configuration).
    Other(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Toolchain(m) | BuildError::Other(m) => f.write_str(m),
            BuildError::Compile { arch, diagnostics, .. } => {
                write!(f, "building the kernels for sm_{arch} failed:\n{diagnostics}")
            }
            BuildError::Ptxas { arch, message } => write!(f, "ptxas rejected the sm_{arch} PTX:\n{message}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl BuildError {
    /// How a build script reports this error: the headlines (`cargo::error=` lines, which cargo
    /// prints before anything else) and the details for stderr (rustc's rendered messages;
    /// empty when the headlines say everything).
    #[must_use]
    pub fn report(&self) -> (Vec<String>, String) {
        match self {
            BuildError::Compile { arch, diagnostics, errors } => {
                let mut head = errors.clone();
                if head.is_empty() {
                    head.push(format!("the kernels do not build for sm_{arch}; cargo's output follows"));
                }
                let details = format!(
                    "{}\ncohort-build: the kernels failed to compile for sm_{arch} (the device build of \
                     `cargo rustc --target {TARGET}`); the other architectures were not built",
                    diagnostics.trim_end()
                );
                (head, details)
            }
            BuildError::Ptxas { arch, message } => {
                let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
                (vec![format!("ptxas rejected the sm_{arch} PTX: {first}")], message.clone())
            }
            // A multi-line message (a file to create) is flattened in the headline and kept whole below.
            BuildError::Toolchain(m) | BuildError::Other(m) => (
                vec![format!("cohort-build: {}", m.replace('\n', " "))],
                if m.contains('\n') { format!("cohort-build: {m}") } else { String::new() },
            ),
        }
    }
}

impl Builder {
    /// A builder for the kernels crate at `crate_dir` (the directory with its `Cargo.toml`).
    pub fn new(crate_dir: impl AsRef<Path>) -> Self {
        Self {
            crate_dir: crate_dir.as_ref().to_path_buf(),
            archs: DEFAULT_ARCHS.to_vec(),
            out_dir: None,
            target_dir: None,
            rustflags: Vec::new(),
            ptxas: PtxasMode::IfFound,
            checked: None,
        }
    }

    /// A builder for the crate whose `build.rs` is running (`CARGO_MANIFEST_DIR`), writing to
    /// `OUT_DIR`.
    ///
    /// # Panics
    /// Outside a build script (no `CARGO_MANIFEST_DIR`).
    pub fn for_build_script() -> Self {
        let dir = env::var_os("CARGO_MANIFEST_DIR").expect("Builder::for_build_script must run inside build.rs");
        Self::new(dir)
    }

    /// The architectures to build, as `sm_XX` numbers (`&[80, 90]`). `COHORT_ARCHS` overrides.
    #[must_use]
    pub fn archs(mut self, archs: &[u32]) -> Self {
        self.archs = archs.to_vec();
        self
    }

    /// Where the `.ptx` files go (default `OUT_DIR`).
    #[must_use]
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The device build's target directory. Default: `COHORT_PTX_TARGET_DIR` when set (one
    /// directory shared by several workspaces: their device builds of the same Cohort sources
    /// share `core` and the device library), else `cohort-ptx/` in the outer build's target
    /// directory. Every kernels crate, architecture and mode shares it.
    #[must_use]
    pub fn target_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.target_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// An extra rustc flag for the device build (`-Ctarget-feature=+ptx80`, …).
    #[must_use]
    pub fn rustflag(mut self, flag: impl Into<String>) -> Self {
        self.rustflags.push(flag.into());
        self
    }

    /// Whether the kernels are built in **checked mode** (`--cfg cohort_checked`): every
    /// collective checks that exactly its group reached it, at one call site, and panics with
    /// the group, the site and the threads present otherwise (the host receives an `Err`).
    ///
    /// Default: on when the crate is built in a debug profile (`PROFILE=debug`, e.g. `cargo
    /// test`), off in release. `COHORT_CHECKED=1` / `COHORT_CHECKED=0` overrides both this and
    /// the default.
    #[must_use]
    pub fn checked(mut self, on: bool) -> Self {
        self.checked = Some(on);
        self
    }

    /// Whether this build is checked (see [`Builder::checked`]).
    #[must_use]
    pub fn is_checked(&self) -> bool {
        match env::var("COHORT_CHECKED").as_deref() {
            Ok("1") => true,
            Ok("0") => false,
            _ => self.checked.unwrap_or_else(|| env::var("PROFILE").is_ok_and(|p| p == "debug")),
        }
    }

    /// Whether to run ptxas (default [`PtxasMode::IfFound`]; `COHORT_REQUIRE_PTXAS=1` makes it
    /// [`PtxasMode::Required`]).
    #[must_use]
    pub fn ptxas(mut self, mode: PtxasMode) -> Self {
        self.ptxas = mode;
        self
    }

    /// Whether this build script runs inside the nested device build (then there is nothing
    /// to do).
    #[must_use]
    pub fn is_nested() -> bool {
        env::var("TARGET").is_ok_and(|t| t.starts_with("nvptx64"))
    }

    /// Runs the build from a build script: prints `cargo::` directives, writes
    /// `OUT_DIR/cohort_ptx.rs` for `cohort_runtime::include_ptx!()`, and on failure exits with
    /// status 1 after reporting the error so that it is the first thing the user sees: one
    /// `cargo::error=` headline per compiler error (`file:line:col: error[E…]: …`, which cargo
    /// prints first), then rustc's own rendered messages, once, on stderr. The first
    /// architecture that fails stops the build (the others would repeat the same errors).
    ///
    /// The `rerun-if` directives are printed only after a successful build: cargo reruns a
    /// build script that failed anyway, and so they do not drown the error in cargo's report.
    pub fn build_or_exit(self) {
        if Self::is_nested() {
            return;
        }
        match self.build() {
            Ok(built) => {
                for var in [
                    "COHORT_ARCHS",
                    "COHORT_CHECKED",
                    "COHORT_PTXAS",
                    "COHORT_REQUIRE_PTXAS",
                    "COHORT_CUDADEVRT",
                    "COHORT_PTX_TARGET_DIR",
                    "CUDA_PATH",
                    "CUDA_HOME",
                ] {
                    println!("cargo::rerun-if-env-changed={var}");
                }
                println!("cargo::rerun-if-changed={}", self.crate_dir.join("Cargo.toml").display());
                println!("cargo::rerun-if-changed=build.rs");
                for src in built.sources.iter().chain(&built.device_runtime) {
                    println!("cargo::rerun-if-changed={}", src.display());
                }
                if let Some(lock) = find_upwards(&self.crate_dir, "Cargo.lock") {
                    println!("cargo::rerun-if-changed={}", lock.display());
                }
                let out = self.out_dir.clone().or_else(|| env::var_os("OUT_DIR").map(PathBuf::from)).expect("OUT_DIR");
                let rs = generate_rust(&built);
                if let Err(e) = write_if_changed(&out.join("cohort_ptx.rs"), rs.as_bytes()) {
                    fail(&[format!("cohort-build: cannot write cohort_ptx.rs: {e}")], "");
                }
            }
            Err(e) => {
                let (headlines, details) = e.report();
                fail(&headlines, &details);
            }
        }
    }

    /// Builds every architecture; returns the modules and the sources they came from.
    ///
    /// # Errors
    /// See [`BuildError`].
    pub fn build(&self) -> Result<Built, BuildError> {
        let archs = archs_from_env()?.unwrap_or_else(|| self.archs.clone());
        if archs.is_empty() {
            return Err(BuildError::Other("no architectures to build (COHORT_ARCHS is empty)".into()));
        }
        let tc = Toolchain::check()?;
        let out_dir = self
            .out_dir
            .clone()
            .or_else(|| env::var_os("OUT_DIR").map(PathBuf::from))
            .ok_or_else(|| BuildError::Other("no OUT_DIR: call out_dir() outside build scripts".into()))?;
        let crate_dir = fs::canonicalize(&self.crate_dir)
            .map_err(|e| BuildError::Other(format!("kernels crate {}: {e}", self.crate_dir.display())))?;
        let pkg = package_name(&crate_dir)?;
        let mut lib_name = pkg.replace('-', "_");
        // One device target directory for every kernels crate, architecture and mode (cargo keeps
        // the artifacts of each set of flags apart): `core` is built once per architecture and
        // mode, the host-side crates of the device build (the proc macro, build scripts) once.
        let target_root = self.device_target_dir(&out_dir);
        let ptxas = match (&self.ptxas, env::var("COHORT_REQUIRE_PTXAS").as_deref()) {
            (PtxasMode::Off, _) => None,
            (_, Ok("1")) | (PtxasMode::Required, _) => Some(ptxas::find().ok_or_else(|| {
                BuildError::Toolchain(
                    "ptxas is required (COHORT_REQUIRE_PTXAS=1) but was not found: set COHORT_PTXAS=/path/to/ptxas, \
                     put CUDA's bin directory on PATH, or `pip install nvidia-cuda-nvcc==13.0.88`"
                        .into(),
                )
            })?),
            (PtxasMode::IfFound, _) => ptxas::find(),
        };

        let mut modules = Vec::new();
        let mut sources = Vec::new();
        let mut device_runtime = None;
        let mut devrt_missing = false;
        let mut warned = Vec::new();
        for &arch in &archs {
            // The `.ptx` and its dep-info are where cargo puts the last build of the crate in
            // the shared directory, whatever its flags: read them before another build can run.
            let (ptx, text, deps) = {
                let _lock = lock_dir(&target_root)?;
                let ptx = self.build_arch(&tc, &crate_dir, &lib_name, arch, &target_root, &mut warned)?;
                let text = fs::read(&ptx).map_err(|e| BuildError::Other(format!("reading {}: {e}", ptx.display())))?;
                check_target(&text, arch, &ptx)?;
                let deps = read_dep_info(&ptx.with_extension("d"), &tc.sysroot);
                (ptx, text, deps)
            };
            if let Some(stem) = ptx.file_stem() {
                lib_name = stem.to_string_lossy().into_owned();
            }
            let dest = out_dir.join(format!("{lib_name}.sm_{arch}.ptx"));
            let text = String::from_utf8(text)
                .map_err(|e| BuildError::Other(format!("{} (sm_{arch}) is not UTF-8: {e}", ptx.display())))?;
            let text = number_site_markers(&text)
                .map_err(|e| BuildError::Other(format!("{} (sm_{arch}): {e}", ptx.display())))?
                .0
                .into_bytes();
            write_if_changed(&dest, &text)
                .map_err(|e| BuildError::Other(format!("writing {}: {e}", dest.display())))?;
            for src in deps {
                if !sources.contains(&src) {
                    sources.push(src);
                }
            }
            let needs_devrt = needs_device_runtime(&String::from_utf8_lossy(&text));
            if needs_devrt && device_runtime.is_none() && !devrt_missing {
                match find_cudadevrt(ptxas.as_deref()) {
                    Ok(p) => device_runtime = Some(p),
                    // CI (`COHORT_REQUIRE_PTXAS=1`) must embed it; elsewhere the crate still
                    // builds, and loading the module is `Error::NoDeviceRuntime`, saying the same.
                    Err(m) if env::var("COHORT_REQUIRE_PTXAS").as_deref() == Ok("1") => {
                        return Err(BuildError::Toolchain(m));
                    }
                    Err(m) => {
                        println!("cargo::warning={m}");
                        devrt_missing = true;
                    }
                }
            }
            let (resources, version) = match &ptxas {
                Some(bin) => {
                    let (res, ver) = ptxas::run(bin, &dest, arch, &out_dir, needs_devrt)
                        .map_err(|message| BuildError::Ptxas { arch, message })?;
                    (res, Some(ver))
                }
                None => (Vec::new(), None),
            };
            modules.push(PtxModule { arch, path: dest, resources, ptxas: version, needs_device_runtime: needs_devrt });
        }
        Ok(Built { lib_name, modules, sources, device_runtime })
    }

    /// Where the device builds go (see [`Builder::target_dir`]).
    fn device_target_dir(&self, out_dir: &Path) -> PathBuf {
        if let Some(dir) = &self.target_dir {
            return dir.clone();
        }
        match env::var_os("COHORT_PTX_TARGET_DIR") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => default_target_root(out_dir),
        }
    }

    fn build_arch(
        &self,
        tc: &Toolchain,
        crate_dir: &Path,
        lib_name: &str,
        arch: u32,
        dir: &Path,
        warned: &mut Vec<String>,
    ) -> Result<PathBuf, BuildError> {
        let mut flags = vec![format!("-Ctarget-cpu=sm_{arch}")];
        if self.is_checked() {
            flags.extend(["--cfg".to_string(), "cohort_checked".to_string()]);
        }
        flags.extend(self.rustflags.iter().cloned());
        let color = env::var_os("CARGO_TERM_COLOR").is_some_and(|c| c == "always");
        let mut cmd = Command::new(&tc.cargo);
        cmd.arg("rustc")
            .arg("--manifest-path")
            .arg(crate_dir.join("Cargo.toml"))
            .args(["--lib", "--crate-type", "cdylib", "--release", "--target", TARGET, "-Zbuild-std=core"])
            .arg("--target-dir")
            .arg(dir)
            // rustc's messages as JSON (with its own rendering inside), so that the build
            // script reports rustc's errors alone, without cargo's progress lines.
            .arg(if color { "--message-format=json-diagnostic-rendered-ansi" } else { "--message-format=json" })
            .arg("--color")
            .arg(if color { "always" } else { "never" })
            .current_dir(crate_dir);
        // The outer build's settings must not leak into the device build.
        for (key, _) in env::vars_os() {
            let k = key.to_string_lossy();
            if k == "RUSTFLAGS"
                || k == "CARGO_ENCODED_RUSTFLAGS"
                || k == "RUSTDOCFLAGS"
                || k == "RUSTC_WRAPPER"
                || k == "RUSTC_WORKSPACE_WRAPPER"
                || k == "CARGO_TARGET_DIR"
                || k == "CARGO_BUILD_TARGET"
                || k.starts_with("CARGO_BUILD_")
                || k.starts_with("CARGO_TARGET_")
                || k.starts_with("CARGO_PROFILE_")
                || k.starts_with("CARGO_CFG_")
                || k == "CARGO_INCREMENTAL"
                || k == "__CARGO_FIX_PLZ"
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3")
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
            .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "false")
            .env("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", "false")
            .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
            .env("RUSTC", &tc.rustc)
            .env("COHORT_PTX_BUILD", "1");
        let out = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| BuildError::Toolchain(format!("cannot run {}: {e}", tc.cargo.display())))?;
        let messages = compiler_messages(&String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            let errors: Vec<&Diagnostic> = messages.iter().filter(|m| m.level == "error").collect();
            if errors.is_empty() {
                // Not rustc's error but cargo's (a manifest, a dependency): its own words.
                let stderr = String::from_utf8_lossy(&out.stderr);
                let diagnostics: Vec<&str> = stderr.lines().filter(|l| !is_progress_line(l)).collect();
                return Err(BuildError::Compile { arch, diagnostics: diagnostics.join("\n"), errors: Vec::new() });
            }
            let diagnostics = errors.iter().map(|m| m.rendered.trim_end()).collect::<Vec<_>>().join("\n\n");
            let errors = errors.iter().take(MAX_HEADLINES).map(|m| m.short()).collect();
            return Err(BuildError::Compile { arch, diagnostics, errors });
        }
        // Surface kernel warnings in the outer build (once, not per architecture).
        for m in messages.iter().filter(|m| m.level == "warning") {
            let line = format!("kernels: {}", m.short());
            if !warned.contains(&line) {
                println!("cargo::warning={line}");
                warned.push(line);
            }
        }
        // The `.ptx` cargo reports for this crate's library (whatever its `[lib] name`), else the
        // file named after the package.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let ptx = ptx_artifact(&stdout, &crate_dir.join("Cargo.toml"))
            .unwrap_or_else(|| dir.join(TARGET).join("release").join(format!("{lib_name}.ptx")));
        if ptx.exists() {
            Ok(ptx)
        } else {
            Err(BuildError::Other(format!(
                "the device build succeeded but wrote no {} (is `{lib_name}` the crate's library name?)",
                ptx.display()
            )))
        }
    }
}

/// A located toolchain that can build nvptx.
struct Toolchain {
    cargo: PathBuf,
    rustc: PathBuf,
    sysroot: PathBuf,
}

impl Toolchain {
    fn check() -> Result<Self, BuildError> {
        let cargo = env::var_os("CARGO").map(PathBuf::from).unwrap_or_else(|| "cargo".into());
        let rustc = env::var_os("RUSTC").map(PathBuf::from).unwrap_or_else(|| "rustc".into());
        let fix = format!(
            "the workspace root needs a rust-toolchain.toml containing\n{}then run `rustup toolchain install` there",
            rust_toolchain_toml()
        );
        let vv = Command::new(&rustc)
            .arg("-vV")
            .output()
            .map_err(|e| BuildError::Toolchain(format!("cannot run rustc ({}): {e}; {fix}", rustc.display())))?;
        let vv = String::from_utf8_lossy(&vv.stdout).into_owned();
        let release = vv.lines().find_map(|l| l.strip_prefix("release: ")).unwrap_or("").to_string();
        let host = vv.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or("").to_string();
        if !(release.contains("nightly") || release.contains("dev")) {
            return Err(BuildError::Toolchain(format!(
                "rustc {release} is not a nightly: building kernels needs nightly (nvptx64, -Zbuild-std, abi_ptx); {fix}"
            )));
        }
        let sysroot = Command::new(&rustc)
            .args(["--print", "sysroot"])
            .output()
            .map_err(|e| BuildError::Toolchain(format!("rustc --print sysroot: {e}")))?;
        let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
        let tc_name = sysroot.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut missing = Vec::new();
        if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").exists() {
            missing.push("rust-src");
        }
        let bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        if !bin.join("llc").exists() || !bin.join("opt").exists() {
            missing.push("llvm-tools");
        }
        if !bin.join("self-contained/llvm-bitcode-linker").exists() && !bin.join("llvm-bitcode-linker").exists() {
            missing.push("llvm-bitcode-linker");
        }
        if !missing.is_empty() {
            return Err(BuildError::Toolchain(format!(
                "toolchain {tc_name} lacks component(s) {}: run `rustup component add {} --toolchain {tc_name}` \
                 (or `rustup toolchain install` in the workspace root, whose rust-toolchain.toml lists them)",
                missing.join(", "),
                missing.join(" ")
            )));
        }
        Ok(Self { cargo, rustc, sysroot })
    }
}

fn archs_from_env() -> Result<Option<Vec<u32>>, BuildError> {
    let Ok(v) = env::var("COHORT_ARCHS") else { return Ok(None) };
    if v.trim().eq_ignore_ascii_case("native") {
        return native_archs().map(Some);
    }
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let num = part.trim_start_matches("sm_").trim_start_matches("compute_");
        let n: u32 = num
            .parse()
            .map_err(|_| BuildError::Other(format!("COHORT_ARCHS: `{part}` is not an architecture like sm_80")))?;
        if n < 70 {
            return Err(BuildError::Other(format!("COHORT_ARCHS: sm_{n} is below sm_70, the oldest Cohort supports")));
        }
        out.push(n);
    }
    Ok(Some(out))
}

/// `COHORT_ARCHS=native`: the architectures of the GPUs of the building machine, as
/// `nvidia-smi --query-gpu=compute_cap` reports them (each once; a module for an older one runs
/// on a newer GPU through the driver's JIT, never the reverse).
fn native_archs() -> Result<Vec<u32>, BuildError> {
    let out = Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader"]).output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned() + " (nvidia-smi failed)",
        Err(e) => format!("nvidia-smi: {e}"),
    };
    parse_compute_caps(&text).ok_or_else(|| {
        BuildError::Other(format!(
            "COHORT_ARCHS=native builds for the GPUs of this machine, but nvidia-smi reports none ({}); name the \
             architectures instead (COHORT_ARCHS=sm_80,sm_90), or unset it for the default",
            text.trim()
        ))
    })
}

/// The architectures in `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` output
/// (`9.0` per line), each once, in order; `None` if there is none.
fn parse_compute_caps(text: &str) -> Option<Vec<u32>> {
    let mut archs: Vec<u32> = Vec::new();
    for line in text.lines() {
        let (major, minor) = line.trim().split_once('.')?;
        let arch = major.parse::<u32>().ok()? * 10 + minor.parse::<u32>().ok()?;
        if !archs.contains(&arch) {
            archs.push(arch);
        }
    }
    archs.sort_unstable();
    (!archs.is_empty()).then_some(archs)
}

fn package_name(crate_dir: &Path) -> Result<String, BuildError> {
    if let Ok(name) = env::var("CARGO_PKG_NAME")
        && env::var_os("CARGO_MANIFEST_DIR").is_some_and(|d| fs::canonicalize(d).ok().as_deref() == Some(crate_dir))
    {
        return Ok(name);
    }
    let toml = fs::read_to_string(crate_dir.join("Cargo.toml"))
        .map_err(|e| BuildError::Other(format!("{}: {e}", crate_dir.join("Cargo.toml").display())))?;
    let mut in_package = false;
    for line in toml.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_package = l == "[package]";
        } else if in_package && let Some(rest) = l.strip_prefix("name") {
            let v = rest.trim_start().trim_start_matches('=').trim().trim_matches('"');
            return Ok(v.to_string());
        }
    }
    Err(BuildError::Other(format!("no [package] name in {}", crate_dir.join("Cargo.toml").display())))
}

/// Locks the device target directory `dir` for this process until the file is dropped: one
/// device build at a time (from every build script and workspace that shares it), and its
/// `.ptx` read before the next one overwrites it.
fn lock_dir(dir: &Path) -> Result<fs::File, BuildError> {
    let other =
        |e: std::io::Error| BuildError::Other(format!("locking the device target directory {}: {e}", dir.display()));
    fs::create_dir_all(dir).map_err(other)?;
    let file = fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("cohort-build.lock"))
        .map_err(other)?;
    file.lock().map_err(other)?;
    Ok(file)
}

/// `Err` unless the PTX was built for `arch` (its `.target sm_XX` directive): the shared device
/// directory never hands one architecture's module to another.
fn check_target(ptx: &[u8], arch: u32, path: &Path) -> Result<(), BuildError> {
    let text = String::from_utf8_lossy(ptx);
    let target = text.lines().find_map(|l| l.trim_start().strip_prefix(".target"));
    let first = target.and_then(|t| t.split([' ', ',', '\t']).find(|w| !w.is_empty()));
    if first == Some(format!("sm_{arch}").as_str()) {
        return Ok(());
    }
    Err(BuildError::Other(format!(
        "{} is not sm_{arch} PTX (its .target is {:?}): the device build wrote another module than asked",
        path.display(),
        target.map(str::trim)
    )))
}

/// `<outer target dir>/cohort-ptx`, found from `OUT_DIR` by the `CACHEDIR.TAG` cargo writes at
/// a target root (the outermost one, so that builds nested in `target/`, such as trybuild's,
/// share the device build); `OUT_DIR/cohort-ptx` otherwise.
fn default_target_root(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .filter(|dir| dir.join("CACHEDIR.TAG").exists())
        .last()
        .map_or_else(|| out_dir.join("cohort-ptx"), |dir| dir.join("cohort-ptx"))
}

fn find_upwards(start: &Path, name: &str) -> Option<PathBuf> {
    start.ancestors().map(|d| d.join(name)).find(|p| p.exists())
}

/// The sources listed in a dep-info file, minus the standard library and registry crates.
fn read_dep_info(path: &Path, sysroot: &Path) -> Vec<PathBuf> {
    let Ok(text) = fs::read_to_string(path) else { return Vec::new() };
    let Some((_, deps)) = text.split_once(": ") else { return Vec::new() };
    let cargo_home = env::var_os("CARGO_HOME").map(PathBuf::from);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = deps.lines().next().unwrap_or("").chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            ' ' => {
                if !cur.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(PathBuf::from(cur));
    }
    out.retain(|p| {
        !p.starts_with(sysroot)
            && !cargo_home.as_ref().is_some_and(|h| p.starts_with(h))
            && !p.components().any(|c| c.as_os_str() == ".cargo" || c.as_os_str() == ".rustup")
    });
    out
}

fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let mut f = fs::File::create(path)?;
    f.write_all(bytes)
}

/// How many compiler errors become `cargo::error=` headlines (rustc's full text follows anyway).
const MAX_HEADLINES: usize = 5;

/// One message of rustc, from cargo's `--message-format=json`.
#[derive(Clone, Debug, PartialEq)]
struct Diagnostic {
    /// `error`, `warning`, `note`, …
    level: String,
    /// The one-line message (`cannot add `u32` to `f32``).
    message: String,
    /// `E0277`, when it has one.
    code: Option<String>,
    /// The primary span: file, line, column.
    at: Option<(String, u64, u64)>,
    /// The message as rustc prints it.
    rendered: String,
}

impl Diagnostic {
    /// rustc's short form: `src/lib.rs:14:28: error[E0277]: cannot add `u32` to `f32``.
    fn short(&self) -> String {
        let at = self.at.as_ref().map(|(f, l, c)| format!("{f}:{l}:{c}: ")).unwrap_or_default();
        let code = self.code.as_ref().map(|c| format!("[{c}]")).unwrap_or_default();
        format!("{at}{}{code}: {}", self.level, self.message)
    }
}

/// The compiler messages in cargo's JSON output, minus rustc's closing summaries ("aborting
/// due to …") and duplicates.
fn compiler_messages(stdout: &str) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v["reason"] != "compiler-message" {
            continue;
        }
        let m = &v["message"];
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let message = text(&m["message"]);
        if message.starts_with("aborting due to")
            || message.ends_with("warnings emitted")
            || message.ends_with("warning emitted")
        {
            continue;
        }
        let at = m["spans"].as_array().and_then(|spans| {
            let s = spans.iter().find(|s| s["is_primary"] == true)?;
            Some((text(&s["file_name"]), s["line_start"].as_u64()?, s["column_start"].as_u64()?))
        });
        let d = Diagnostic {
            level: text(&m["level"]),
            message,
            code: m["code"]["code"].as_str().map(str::to_string),
            at,
            rendered: text(&m["rendered"]),
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// The `.ptx` file among the artifacts cargo reports (`compiler-artifact`) for the package of
/// `manifest`.
fn ptx_artifact(stdout: &str, manifest: &Path) -> Option<PathBuf> {
    stdout.lines().filter(|l| l.starts_with('{')).find_map(|line| {
        let v = serde_json::from_str::<serde_json::Value>(line).ok()?;
        if v["reason"] != "compiler-artifact" || v["manifest_path"].as_str().map(Path::new) != Some(manifest) {
            return None;
        }
        v["filenames"].as_array()?.iter().filter_map(|f| f.as_str()).find(|f| f.ends_with(".ptx")).map(PathBuf::from)
    })
}

/// cargo's progress and summary lines (`Compiling …`, `error: could not compile …`), which
/// say nothing about the error itself.
fn is_progress_line(line: &str) -> bool {
    let t = line.trim_start();
    ["Compiling ", "Checking ", "Finished ", "Updating ", "Locking ", "Downloading ", "Downloaded ", "Blocking "]
        .iter()
        .any(|p| t.starts_with(p))
        || t.starts_with("error: could not compile")
        || (t.starts_with("warning: ") && t.contains("generated"))
}

/// Reports a failed build from a build script and exits: `headlines` as `cargo::error=` lines
/// (cargo prints them first, and again in its dump of the script's stdout), `details` on stderr.
fn fail(headlines: &[String], details: &str) -> ! {
    for h in headlines {
        println!("cargo::error={}", h.replace('\n', " "));
    }
    if !details.is_empty() {
        eprintln!("{details}");
    }
    std::process::exit(1);
}

/// The Rust source `cohort_runtime::include_ptx!()` includes.
fn generate_rust(built: &Built) -> String {
    let mut s = String::new();
    s.push_str("// @generated by cohort-build. Do not edit.\n");
    if let Some(p) = &built.device_runtime {
        s.push_str(
            "/// `libcudadevrt.a`, which the runtime links into the modules that launch kernels from the device.\n",
        );
        s.push_str(&format!("pub static DEVICE_RUNTIME: &[u8] = include_bytes!({:?});\n", p.display().to_string()));
    }
    s.push_str("/// This crate's kernels as PTX, one module per architecture, with ptxas' resource report.\n");
    s.push_str("pub static PTX: ::cohort_runtime::PtxSet = ::cohort_runtime::PtxSet {\n");
    s.push_str(&format!("    crate_name: {:?},\n    modules: &[\n", built.lib_name));
    let devrt = built.device_runtime.as_ref().map(|_| "            .with_device_runtime(DEVICE_RUNTIME)\n".to_string());
    for m in &built.modules {
        s.push_str(&format!(
            "        ::cohort_runtime::PtxModule::new({}, concat!(include_str!({:?}), \"\\0\"))\n",
            m.arch,
            m.path.display().to_string()
        ));
        if let Some(v) = &m.ptxas {
            s.push_str(&format!("            .with_ptxas({v:?})\n"));
        }
        if let (true, Some(d)) = (m.needs_device_runtime, &devrt) {
            s.push_str(d);
        }
        s.push_str("            .with_resources(&[\n");
        for r in &m.resources {
            s.push_str(&format!(
                "                ::cohort_runtime::KernelResources {{ name: {:?}, registers: {}, barriers: {}, shared_bytes: {}, \
                 stack_frame_bytes: {}, cumulative_stack_bytes: {}, spill_store_bytes: {}, spill_load_bytes: {} }},\n",
                r.name,
                r.registers,
                r.barriers,
                r.shared_bytes,
                r.stack_frame_bytes,
                r.cumulative_stack_bytes,
                r.spill_store_bytes,
                r.spill_load_bytes
            ));
        }
        s.push_str("            ]),\n");
    }
    s.push_str("    ],\n};\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_architectures_come_from_nvidia_smi() {
        assert_eq!(parse_compute_caps("9.0\n"), Some(vec![90]));
        assert_eq!(parse_compute_caps("9.0\n8.0\n9.0\n"), Some(vec![80, 90]), "each once, in order");
        assert_eq!(parse_compute_caps("12.0\n"), Some(vec![120]));
        assert_eq!(parse_compute_caps(""), None);
        assert_eq!(parse_compute_caps("No devices were found\n"), None);
        assert_eq!(parse_compute_caps("9.x\n"), None);
    }

    #[test]
    fn the_ptx_must_be_of_the_architecture_asked() {
        let p = Path::new("k.ptx");
        let ptx = |t: &str| format!("//\n// Generated by LLVM NVPTX Back-End\n.version 8.0\n{t}\n.address_size 64\n");
        assert!(check_target(ptx(".target sm_80").as_bytes(), 80, p).is_ok());
        assert!(check_target(ptx(".target sm_90, debug").as_bytes(), 90, p).is_ok());
        for (text, arch) in [(".target sm_90", 80), (".target sm_80", 90), (".target sm_800", 80), ("", 80)] {
            let e = check_target(ptx(text).as_bytes(), arch, p).unwrap_err().to_string();
            assert!(e.contains(&format!("is not sm_{arch} PTX")), "{e}");
        }
    }

    #[test]
    fn one_device_build_at_a_time_in_a_shared_directory() {
        let dir = env::temp_dir().join(format!("cohort-build-lock-{}", std::process::id()));
        let held = lock_dir(&dir).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let d = dir.clone();
        let waiter = std::thread::spawn(move || {
            let _second = lock_dir(&d).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "the second build waits");
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10)).expect("and runs once the first is done");
        waiter.join().unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_device_directory_is_shared_and_can_be_moved() {
        // Not `COHORT_PTX_TARGET_DIR` (the environment is the process's, shared with other tests).
        let out = env::temp_dir().join(format!("cohort-build-out-{}", std::process::id()));
        let target = out.join("target");
        let out_dir = target.join("release/build/k-1234/out");
        fs::create_dir_all(&out_dir).unwrap();
        fs::write(target.join("CACHEDIR.TAG"), "").unwrap();
        let b = Builder::new("k");
        if env::var_os("COHORT_PTX_TARGET_DIR").is_none() {
            assert_eq!(b.device_target_dir(&out_dir), target.join("cohort-ptx"), "one directory, whatever the crate");
        }
        let b = b.target_dir(out.join("elsewhere"));
        assert_eq!(b.device_target_dir(&out_dir), out.join("elsewhere"));
        let _ = fs::remove_dir_all(&out);
    }

    #[test]
    fn dep_info_skips_std_and_keeps_escaped_spaces() {
        let dir = env::temp_dir().join(format!("cohort-build-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let d = dir.join("x.d");
        fs::write(&d, "/t/x.ptx: /w/k/src/lib.rs /w/my\\ dir/a.rs /sys/lib/rustlib/src/core/lib.rs\n").unwrap();
        let got = read_dep_info(&d, Path::new("/sys"));
        assert_eq!(got, vec![PathBuf::from("/w/k/src/lib.rs"), PathBuf::from("/w/my dir/a.rs")]);
    }

    #[test]
    fn errors_come_from_rustc_json_with_their_location() {
        // Two lines of `cargo rustc --message-format=json` (abridged), an artifact line and
        // rustc's closing summary, which is dropped.
        let out = concat!(
            r#"{"reason":"compiler-artifact","package_id":"core"}"#,
            "\n",
            r#"{"reason":"compiler-message","message":{"level":"error","message":"cannot add `u32` to `f32`","#,
            r#""code":{"code":"E0277"},"spans":[{"file_name":"k/src/x.rs","line_start":3,"column_start":9,"is_primary":false},"#,
            r#"{"file_name":"k/src/lib.rs","line_start":14,"column_start":28,"is_primary":true}],"#,
            r#""rendered":"error[E0277]: cannot add `u32` to `f32`\n  --> k/src/lib.rs:14:28\n"}}"#,
            "\n",
            r#"{"reason":"compiler-message","message":{"level":"error","message":"aborting due to 1 previous error","#,
            r#""code":null,"spans":[],"rendered":"error: aborting due to 1 previous error\n"}}"#,
            "\n",
            r#"{"reason":"build-finished","success":false}"#,
        );
        let msgs = compiler_messages(out);
        assert_eq!(msgs.len(), 1, "{msgs:?}");
        assert_eq!(msgs[0].short(), "k/src/lib.rs:14:28: error[E0277]: cannot add `u32` to `f32`");
        assert!(msgs[0].rendered.starts_with("error[E0277]: cannot add `u32` to `f32`\n  --> k/src/lib.rs:14:28"));
        let e = BuildError::Compile {
            arch: 80,
            diagnostics: msgs[0].rendered.clone(),
            errors: msgs.iter().map(Diagnostic::short).collect(),
        };
        let (head, details) = e.report();
        assert_eq!(head, vec!["k/src/lib.rs:14:28: error[E0277]: cannot add `u32` to `f32`".to_string()]);
        assert!(details.starts_with("error[E0277]"), "rustc's own text comes first: {details}");
        assert!(details.contains("failed to compile for sm_80"), "{details}");
    }

    #[test]
    fn the_toolchain_is_the_repository_pin() {
        // In Cohort's own repository, the pin the builder prints is the one it is tested with.
        // (In a packaged copy of this crate there is no repository around it.)
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../rust-toolchain.toml");
        let Ok(text) = fs::read_to_string(&file) else {
            eprintln!("no {}: not in Cohort's repository", file.display());
            return;
        };
        assert!(text.contains(&format!("channel = {TOOLCHAIN:?}")), "{TOOLCHAIN} vs {text}");
        for c in TOOLCHAIN_COMPONENTS {
            assert!(text.contains(&format!("{c:?}")), "{c} vs {text}");
        }
        assert!(rust_toolchain_toml().starts_with("[toolchain]\nchannel = \"nightly-"));
    }

    #[test]
    fn the_ptx_is_the_artifact_of_the_kernels_package() {
        let out = concat!(
            r#"{"reason":"compiler-artifact","manifest_path":"/w/dep/Cargo.toml","filenames":["/t/libdep.rlib"]}"#,
            "\n",
            r#"{"reason":"compiler-artifact","manifest_path":"/w/k/Cargo.toml","target":{"name":"my_lib"},"#,
            r#""filenames":["/t/nvptx64-nvidia-cuda/release/my_lib.ptx"]}"#,
        );
        assert_eq!(
            ptx_artifact(out, Path::new("/w/k/Cargo.toml")),
            Some(PathBuf::from("/t/nvptx64-nvidia-cuda/release/my_lib.ptx"))
        );
        assert_eq!(ptx_artifact(out, Path::new("/w/other/Cargo.toml")), None);
    }

    #[test]
    fn cargo_failures_keep_cargo_words_without_progress_lines() {
        assert!(is_progress_line("   Compiling cohort v0.1.0 (/w/crates/cohort)"));
        assert!(is_progress_line("error: could not compile `k` (lib) due to 1 previous error"));
        assert!(!is_progress_line("error: failed to select a version for the requirement `cohort = \"^9\"`"));
        let e = BuildError::Compile { arch: 90, diagnostics: "error: no matching package".into(), errors: vec![] };
        let (head, details) = e.report();
        assert_eq!(head.len(), 1);
        assert!(head[0].contains("sm_90"), "{head:?}");
        assert!(details.starts_with("error: no matching package"), "{details}");
    }

    #[test]
    fn site_markers_get_one_number_each() {
        let ptx = "\t// begin inline asm\n\tmov.u32 %r5, 0; // cohort-site?\n\t// end inline asm\n\tshfl.sync.idx.b32 \
                   %r6, %r1, 0, 31, -1;\n\tmov.u32 %r7, 0; // cohort-site?\n";
        let (out, n) = number_site_markers(ptx).unwrap();
        assert_eq!(n, 2);
        assert!(out.contains("\tmov.u32 %r5, 1; // cohort-site=1\n"), "{out}");
        assert!(out.contains("\tmov.u32 %r7, 2; // cohort-site=2\n"), "{out}");
        assert!(!out.contains(SITE_MARKER_UNNUMBERED));
        assert!(out.contains("shfl.sync.idx.b32 %r6, %r1, 0, 31, -1;"));
        // Nothing to number: the text comes back as it was.
        assert_eq!(number_site_markers("mov.u32 %r1, 0;\n").unwrap(), ("mov.u32 %r1, 0;\n".to_owned(), 0));
        // Another form is refused rather than left unnumbered.
        assert!(number_site_markers("add.u32 %r1, %r2, 0; // cohort-site?\n").is_err());
    }

    #[test]
    fn generated_rust_names_every_module() {
        let built = Built {
            lib_name: "k".into(),
            modules: vec![PtxModule {
                arch: 80,
                path: "/o/k.sm_80.ptx".into(),
                resources: vec![],
                ptxas: None,
                needs_device_runtime: false,
            }],
            sources: vec![],
            device_runtime: None,
        };
        let rs = generate_rust(&built);
        assert!(rs.contains("PtxModule::new(80, concat!(include_str!(\"/o/k.sm_80.ptx\"), \"\\0\"))"), "{rs}");
    }
}

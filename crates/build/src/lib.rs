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
//! **Architecture-specific modules (`sm_90a`).** Hopper's warpgroup MMA (`wgmma`) exists only
//! in `.target sm_90a` PTX, which runs on compute capability 9.0 exactly (not on 10.x or 12.x).
//! A crate whose kernels use it asks for such a module with [`Builder::arch_specific`]`(&[90])`:
//! whenever `sm_90` is built (by default, `COHORT_ARCHS`, `native`), `sm_90a` is built beside it
//! — a third device build of that crate only, so crates that do not ask pay nothing.
//! `COHORT_ARCHS=…,sm_90a` asks for it for every crate. The runtime loads the `sm_90a` module on
//! a 9.0 device and never elsewhere (`cohort_runtime::PtxSet::select`); in the other modules
//! the device library compiles `wgmma` to a marked trap, and the runtime refuses to launch a
//! kernel that reaches one (`Error::NeedsArchSpecific`), so a kernel never runs without it.
//!
//! 1. checks the toolchain: a nightly `rustc` with the `rust-src`, `llvm-tools` and
//!    `llvm-bitcode-linker` components, else fails naming the command that fixes it;
//! 2. runs `cargo rustc --lib --crate-type cdylib --release --target nvptx64-nvidia-cuda
//!    -Zbuild-std=core` on the crate with `-Ctarget-cpu=sm_XX` and LLVM's unroll threshold raised to
//!    [`UNROLL_THRESHOLD`] (a loop over a register array must unroll, as nvcc's `#pragma unroll`
//!    does), in a target directory of its own
//!    (`<target>/cohort-ptx`, so no lock is shared with the outer build; `COHORT_PTX_TARGET_DIR`
//!    to share one between workspaces), with the outer build's `RUSTFLAGS`, wrappers and profile
//!    overrides removed. Every kernels crate, architecture and mode (checked or not) builds in
//!    that one directory, where cargo keeps each set of flags' artifacts apart: `core` and the
//!    device library are built once per architecture and mode for all the kernels crates, and
//!    the host crates of the device build (the `#[kernel]` macro, build scripts) once. A lock
//!    file there lets one device build run at a time. rustc's `llvm-bitcode-linker` writes the
//!    `.ptx`, whose `.target` is checked against the architecture asked, and in which the
//!    builder numbers checked mode's call-site markers, one number per call instruction
//!    ([`number_site_markers`]), and gives the entries of kernels with launch bounds their
//!    `.maxntid` / `.minnctapersm` / `.maxnreg` directives ([`apply_launch_bounds`]);
//! 3. when `ptxas` is found (`COHORT_PTXAS`, `PATH`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`),
//!    assembles the PTX for its architecture and records each kernel's registers, spills,
//!    stack and shared memory, which end up in the [`PtxSet`](../cohort_runtime/struct.PtxSet.html);
//! 4. when the PTX calls the device runtime (`__cudaCDP2*`: a kernel launches kernels, see
//!    `cohort::launch`), assembles it as relocatable code (`ptxas -c`: the calls are resolved
//!    only when the runtime links it) and finds `libcudadevrt.a` ([`find_cudadevrt`]), which is
//!    embedded beside the PTX so that the runtime can link the module without a CUDA toolkit;
//!    a missing one is a warning (an error under `COHORT_REQUIRE_PTXAS=1`, as in CI, or
//!    `COHORT_REQUIRE_CUDADEVRT=1`, as in `tools/gpu-bundle`) saying how to get it, and
//!    loading such a module is then `cohort_runtime::Error::NoDeviceRuntime`;
//! 5. emits `rerun-if-changed` for every source file the kernels were built from (the crate
//!    and its path dependencies, from rustc's dep-info), so host-only edits elsewhere never
//!    rebuild PTX.
//!
//! Inside the nested build (`TARGET=nvptx64-…`) the builder does nothing, so the kernels crate's
//! own `build.rs` cannot recurse.
//!
//! The source, by concept: `lib.rs` ([`Builder`] and what it returns), `toolchain.rs` (the
//! nightly `rustc` and its components, the architectures, `libcudadevrt.a`), `nested.rs` (the
//! nested `cargo rustc`: its package, shared and locked target directory, dep-info and
//! messages), `ptx_text.rs` (what is read and rewritten in the PTX: the device runtime's
//! mark, the `.target`, checked mode's site markers), `ptxas.rs` (assembling and its
//! resource report), `generate.rs` (the Rust `include_ptx!()` includes).

use std::env;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// LLVM's full-unroll threshold for device builds (its default, 300, is a CPU's; rustc has no
/// `#pragma unroll`). A loop over a thread's register array (an accumulator tile, a row of
/// loaded values) must unroll completely, or the array lives in local memory: the obvious
/// 128×128 SGEMM (`kernels-gpu/src/obvious.rs`, an 8×8 accumulator written back in a loop of
/// checked `set`s) kept its 256-byte accumulator in local memory at 300 and ran at 0.36× its
/// CUDA C++ twin (H200); at 1500 every loop of its body unrolls and the accumulator is in
/// registers, as nvcc's `#pragma unroll` puts it. Of the other kernels of `kernels-gpu` (built
/// both ways) only the two obvious SGEMMs changed. A crate sets its own with
/// `.rustflag("-Cllvm-args=-unroll-threshold=N")`.
pub const UNROLL_THRESHOLD: u32 = 1500;

mod generate;
mod nested;
mod ptx_text;
mod ptxas;
#[cfg(test)]
mod tests;
mod toolchain;

use generate::generate_rust;
use nested::{
    Diagnostic, MAX_HEADLINES, compiler_messages, default_target_root, fail, find_upwards, is_progress_line, lock_dir,
    package_name, ptx_artifact, read_dep_info, write_if_changed,
};
use ptx_text::check_target;
pub use ptx_text::{
    DEVICE_RUNTIME_MARK, LAUNCH_BOUNDS_APPLIED, LAUNCH_BOUNDS_MARKER, SITE_MARKER_NUMBERED, SITE_MARKER_UNNUMBERED,
    apply_launch_bounds, needs_device_runtime, number_site_markers,
};
pub use ptxas::{KernelResources, parse_ptxas_output};
pub use toolchain::find_cudadevrt;
use toolchain::{Toolchain, archs_from_env};

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

/// One architecture a module is built for: `sm_90` (`arch_specific: false`) or `sm_90a`
/// (`true`: PTX with the architecture's own instructions, which runs only on a device of
/// exactly this compute capability).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Arch {
    /// Compute capability × 10 (`90`).
    pub sm: u32,
    /// The `a` suffix (`sm_90a`).
    pub arch_specific: bool,
}

impl Arch {
    /// `sm_<sm>`.
    #[must_use]
    pub const fn portable(sm: u32) -> Self {
        Self { sm, arch_specific: false }
    }

    /// `sm_<sm>a`.
    #[must_use]
    pub const fn specific(sm: u32) -> Self {
        Self { sm, arch_specific: true }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm, if self.arch_specific { "a" } else { "" })
    }
}

/// The modules to build: each portable architecture of `portable`, followed by its
/// architecture-specific twin when `specific` names it, then the specific ones asked for
/// explicitly (`COHORT_ARCHS=sm_90a`) that are not there yet; each once.
pub(crate) fn targets(portable: &[u32], specific: &[u32], explicit: &[Arch]) -> Vec<Arch> {
    let mut out: Vec<Arch> = Vec::new();
    let mut push = |a: Arch| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    for &sm in portable {
        push(Arch::portable(sm));
        if specific.contains(&sm) {
            push(Arch::specific(sm));
        }
    }
    for &a in explicit {
        push(a);
    }
    out
}

/// Builds one kernels crate to PTX.
#[derive(Clone, Debug)]
pub struct Builder {
    crate_dir: PathBuf,
    archs: Vec<u32>,
    specific: Vec<u32>,
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
    /// Built for `sm_<arch>a` (see [`Arch`]).
    pub arch_specific: bool,
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
            specific: Vec::new(),
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

    /// Architecture-specific modules this crate's kernels need (`&[90]`: `sm_90a`, for Hopper's
    /// `wgmma`): each is built whenever its portable architecture is (by default, by
    /// `COHORT_ARCHS`, by `native`). See the crate docs.
    #[must_use]
    pub fn arch_specific(mut self, archs: &[u32]) -> Self {
        self.specific = archs.to_vec();
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
                    "COHORT_REQUIRE_CUDADEVRT",
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
        let (portable, explicit) = archs_from_env()?.unwrap_or_else(|| (self.archs.clone(), Vec::new()));
        let archs = targets(&portable, &self.specific, &explicit);
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
                check_target(&text, &arch.to_string(), &ptx)?;
                let deps = read_dep_info(&ptx.with_extension("d"), &tc.sysroot);
                (ptx, text, deps)
            };
            if let Some(stem) = ptx.file_stem() {
                lib_name = stem.to_string_lossy().into_owned();
            }
            let dest = out_dir.join(format!("{lib_name}.{arch}.ptx"));
            let text = String::from_utf8(text)
                .map_err(|e| BuildError::Other(format!("{} ({arch}) is not UTF-8: {e}", ptx.display())))?;
            let text = number_site_markers(&text)
                .and_then(|(text, _)| apply_launch_bounds(&text))
                .map_err(|e| BuildError::Other(format!("{} ({arch}): {e}", ptx.display())))?
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
                    // CI (`COHORT_REQUIRE_PTXAS=1`) and `tools/gpu-bundle`
                    // (`COHORT_REQUIRE_CUDADEVRT=1`) must embed it; elsewhere the crate still
                    // builds, and loading the module is `Error::NoDeviceRuntime`, saying the same.
                    Err(m)
                        if ["COHORT_REQUIRE_PTXAS", "COHORT_REQUIRE_CUDADEVRT"]
                            .iter()
                            .any(|v| env::var(v).as_deref() == Ok("1")) =>
                    {
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
                    let (res, ver) = ptxas::run(bin, &dest, &arch.to_string(), &out_dir, needs_devrt)
                        .map_err(|message| BuildError::Ptxas { arch: arch.sm, message })?;
                    (res, Some(ver))
                }
                None => (Vec::new(), None),
            };
            modules.push(PtxModule {
                arch: arch.sm,
                arch_specific: arch.arch_specific,
                path: dest,
                resources,
                ptxas: version,
                needs_device_runtime: needs_devrt,
            });
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
        target: Arch,
        dir: &Path,
        warned: &mut Vec<String>,
    ) -> Result<PathBuf, BuildError> {
        let arch = target.sm;
        // `-Ctarget-cpu=sm_90a`: `.target sm_90a`, and `cfg(target_feature = "sm_90a")` in the
        // device library (which compiles `wgmma` only then).
        let mut flags = vec![format!("-Ctarget-cpu={target}")];
        // Newer PTX ISAs than rustc's defaults (7.0 for sm_80, 7.8 for sm_90): sm_80's
        // `mbarrier.test_wait.parity` needs 7.1; sm_90's bulk copies and
        // `mbarrier.arrive.expect_tx` 8.0, the tensor map's `fence.proxy.tensormap` 8.3, and
        // `mma.sync` with FP8 inputs (sm_89+) 8.4.
        if arch >= 90 {
            flags.push("-Ctarget-feature=+ptx84".to_string());
        } else if arch >= 80 {
            flags.push("-Ctarget-feature=+ptx71".to_string());
        }
        if self.is_checked() {
            flags.extend(["--cfg".to_string(), "cohort_checked".to_string()]);
        }
        // LLVM may take an option once: a crate's own threshold replaces ours.
        if !self.rustflags.iter().any(|f| f.contains("unroll-threshold")) {
            flags.push(format!("-Cllvm-args=-unroll-threshold={UNROLL_THRESHOLD}"));
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

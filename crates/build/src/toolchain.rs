//! The tools a device build needs: a nightly `rustc` with the nvptx components, the
//! architectures to build (`COHORT_ARCHS`, `native` from `nvidia-smi`), and the CUDA device
//! runtime library (`libcudadevrt.a`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Arch, BuildError, rust_toolchain_toml};

pub(crate) struct Toolchain {
    pub(crate) cargo: PathBuf,
    pub(crate) rustc: PathBuf,
    pub(crate) sysroot: PathBuf,
}

impl Toolchain {
    pub(crate) fn check() -> Result<Self, BuildError> {
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

/// The portable architectures (`sm_80` → 80) and the architecture-specific ones named
/// explicitly (`sm_90a`).
pub(crate) type ArchLists = (Vec<u32>, Vec<Arch>);

/// `COHORT_ARCHS`, if set (see [`ArchLists`]).
pub(crate) fn archs_from_env() -> Result<Option<ArchLists>, BuildError> {
    let Ok(v) = env::var("COHORT_ARCHS") else { return Ok(None) };
    parse_archs(&v).map(Some)
}

/// The value of `COHORT_ARCHS` (see [`archs_from_env`]).
pub(crate) fn parse_archs(v: &str) -> Result<ArchLists, BuildError> {
    if v.trim().eq_ignore_ascii_case("native") {
        return native_archs().map(|a| (a, Vec::new()));
    }
    let (mut portable, mut specific) = (Vec::new(), Vec::new());
    for part in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let num = part.trim_start_matches("sm_").trim_start_matches("compute_");
        let (num, a) = match num.strip_suffix('a') {
            Some(n) => (n, true),
            None => (num, false),
        };
        let n: u32 = num
            .parse()
            .map_err(|_| BuildError::Other(format!("COHORT_ARCHS: `{part}` is not an architecture like sm_80")))?;
        if n < 70 {
            return Err(BuildError::Other(format!("COHORT_ARCHS: sm_{n} is below sm_70, the oldest Cohort supports")));
        }
        if a && n != 90 {
            return Err(BuildError::Other(format!(
                "COHORT_ARCHS: `{part}`: the only architecture-specific target Cohort builds is sm_90a"
            )));
        }
        if a { specific.push(Arch::specific(n)) } else { portable.push(n) }
    }
    Ok((portable, specific))
}

/// `COHORT_ARCHS=native`: the architectures of the GPUs of the building machine, as
/// `nvidia-smi --query-gpu=compute_cap` reports them (each once; a module for an older one runs
/// on a newer GPU through the driver's JIT, never the reverse).
pub(crate) fn native_archs() -> Result<Vec<u32>, BuildError> {
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
pub(crate) fn parse_compute_caps(text: &str) -> Option<Vec<u32>> {
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

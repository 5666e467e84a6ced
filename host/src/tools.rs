//! Finding the optional CUDA command-line tools (`ptxas`, `nvdisasm`, `cuobjdump`) for
//! `cohort doctor`, `ptx` and `sass`.
//!
//! `ptxas` is looked up first exactly as `cohort-build` does at build time
//! ([`cohort_build::ptxas_path`]: `COHORT_PTXAS`, `PATH`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin`,
//! `/usr/local/cuda/bin`), then where the PyPI wheels this tool suggests are installed
//! ([`wheel_dirs`]), which a build does not see. The disassemblers are looked up in the same
//! places and beside the `ptxas` found.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The PyPI wheel that ships `ptxas` (CUDA 13.0, as the GPU machine's driver).
pub const NVCC_WHEEL: &str = "nvidia-cuda-nvcc==13.0.88";
/// The PyPI wheel that ships `nvdisasm` (the oldest CUDA 13 one on PyPI; it reads sm_80/sm_90
/// cubins from ptxas 13.0).
pub const NVDISASM_WHEEL: &str = "nvidia-cuda-nvdisasm==13.2.51";
/// The PyPI wheel that ships `libcudadevrt.a` (the driver's CUDA version: 13.0).
pub const CUDADEVRT_WHEEL: &str = "nvidia-cuda-runtime==13.0.96";

/// Where the install commands this tool prints put a wheel: `$HOME/.cohort/<what>` (one
/// directory per wheel: `pip install --target` does not merge into an existing `nvidia/`).
pub fn cohort_dir(what: &str) -> String {
    format!("$HOME/.cohort/{what}")
}

/// The command that installs `wheel` into [`cohort_dir`]`(what)`.
pub fn pip_install(what: &str, wheel: &str) -> String {
    format!("python3 -m pip install --no-deps --target {} {wheel}", cohort_dir(what))
}

/// The `bin` directories of the wheels [`pip_install`] installs, and of this repository's CI
/// (`.ci/.pytools`, when this binary was built in a checkout that has it).
pub fn wheel_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        for what in ["nvcc", "nvdisasm"] {
            dirs.push(PathBuf::from(&home).join(".cohort").join(what).join("nvidia/cu13/bin"));
        }
    }
    if let Some(repo) = Path::new(env!("CARGO_MANIFEST_DIR")).parent() {
        dirs.push(repo.join(".ci/.pytools/nvidia/cu13/bin"));
    }
    dirs
}

/// `name` as an executable file in `dir`, if it is one.
fn in_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    let p = dir.join(name);
    p.is_file().then(|| p.canonicalize().unwrap_or(p))
}

/// The directories a CUDA tool is looked for in, in order: `PATH`, `$CUDA_PATH/bin`,
/// `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, then [`wheel_dirs`].
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(PathBuf::from(root).join("bin"));
        }
    }
    dirs.push("/usr/local/cuda/bin".into());
    dirs.extend(wheel_dirs());
    dirs
}

/// `ptxas`: where a build finds it (`true`), else in [`wheel_dirs`] (`false`: builds do not
/// see it there).
pub fn ptxas() -> Option<(PathBuf, bool)> {
    if let Some(p) = cohort_build::ptxas_path() {
        return Some((p, true));
    }
    wheel_dirs().iter().find_map(|d| in_dir(d, "ptxas")).map(|p| (p, false))
}

/// A CUDA tool by name: beside `ptxas` first (one toolkit), then in the search directories.
pub fn find(name: &str) -> Option<PathBuf> {
    let beside = ptxas().and_then(|(p, _)| p.parent().and_then(|d| in_dir(d, name)));
    beside.or_else(|| search_dirs().iter().find_map(|d| in_dir(d, name)))
}

/// A disassembler for `cohort sass`: `nvdisasm`, else `cuobjdump`.
pub fn disassembler() -> Option<PathBuf> {
    find("nvdisasm").or_else(|| find("cuobjdump"))
}

/// The release line of `tool --version` (`Cuda compilation tools, release 13.0, V13.0.88`),
/// else its last line, if it runs.
pub fn version(tool: &Path) -> Option<String> {
    let out = Command::new(tool).arg("--version").output().ok()?;
    release_line(&String::from_utf8_lossy(&out.stdout))
}

/// The line of `--version` output that names the CUDA release, else the last non-empty one.
pub fn release_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.iter().find(|l| l.contains(", release ")).or(lines.last()).map(|l| l.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_release_line_is_the_cuda_release() {
        let ptxas = "ptxas: NVIDIA (R) Ptx optimizing assembler\nCopyright (c) 2005-2025 NVIDIA Corporation\n\
                     Built on Wed_Aug_20_01:55:39_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\n\
                     Build cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(release_line(ptxas).as_deref(), Some("Cuda compilation tools, release 13.0, V13.0.88"));
        assert_eq!(release_line("tool 1.2\n\n").as_deref(), Some("tool 1.2"));
        assert_eq!(release_line(""), None);
    }

    #[test]
    fn tools_install_commands_and_places_agree() {
        // What `pip_install` installs is where `wheel_dirs` looks.
        let cmd = pip_install("nvdisasm", NVDISASM_WHEEL);
        assert_eq!(
            cmd,
            "python3 -m pip install --no-deps --target $HOME/.cohort/nvdisasm nvidia-cuda-nvdisasm==13.2.51"
        );
        if let Some(home) = std::env::var_os("HOME") {
            let want = PathBuf::from(home).join(".cohort/nvdisasm/nvidia/cu13/bin");
            assert!(wheel_dirs().contains(&want), "{:?}", wheel_dirs());
        }
    }
}

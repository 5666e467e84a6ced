//! Finding and running `ptxas`, and reading its `-v` resource report.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `ptxas -v` reports for one kernel (entry function).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// The entry's name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Named barriers used.
    pub barriers: u32,
    /// Static shared memory, bytes.
    pub shared_bytes: u32,
    /// Stack frame of the entry itself, bytes (local memory).
    pub stack_frame_bytes: u32,
    /// Stack of the entry and everything it calls, bytes (0 when it makes no calls).
    pub cumulative_stack_bytes: u32,
    /// Bytes spilled to local memory.
    pub spill_store_bytes: u32,
    /// Bytes reloaded from spills.
    pub spill_load_bytes: u32,
}

/// `COHORT_PTXAS`, then `ptxas` on `PATH`, then `$CUDA_PATH/bin`, `$CUDA_HOME/bin` and
/// `/usr/local/cuda/bin`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = env::var_os("COHORT_PTXAS") {
        let p = PathBuf::from(p);
        return p.exists().then_some(p);
    }
    if let Some(path) = env::var_os("PATH") {
        for dir in env::split_paths(&path) {
            let p = dir.join("ptxas");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = env::var_os(var) {
            let p = PathBuf::from(root).join("bin/ptxas");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let p = PathBuf::from("/usr/local/cuda/bin/ptxas");
    p.is_file().then_some(p)
}

/// Assembles `ptx` for `arch` (`sm_90`, `sm_90a`); returns the per-kernel report and ptxas' version line.
/// `relocatable`: as relocatable code (`-c`), for PTX that calls functions defined elsewhere
/// (the device runtime), which the driver links at load.
pub fn run(
    bin: &Path,
    ptx: &Path,
    arch: &str,
    scratch: &Path,
    relocatable: bool,
) -> Result<(Vec<KernelResources>, String), String> {
    let version = Command::new(bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or("").trim().to_string())
        .unwrap_or_default();
    let cubin = scratch.join(format!("{}.cubin", ptx.file_stem().and_then(|s| s.to_str()).unwrap_or("module")));
    let out = Command::new(bin)
        .arg(format!("-arch={arch}"))
        .args(relocatable.then_some("-c"))
        .arg("-v")
        .arg("-o")
        .arg(&cubin)
        .arg(ptx)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(text);
    }
    Ok((parse_ptxas_output(&text), version))
}

/// Reads `ptxas -v` output into one record per entry function, in the order ptxas compiled
/// them.
#[must_use]
pub fn parse_ptxas_output(text: &str) -> Vec<KernelResources> {
    let mut out: Vec<KernelResources> = Vec::new();
    let mut current: Option<usize> = None;
    let mut props_for: Option<String> = None;
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("ptxas info    : Compiling entry function '") {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(KernelResources { name, ..Default::default() });
            current = Some(out.len() - 1);
            props_for = None;
        } else if let Some(rest) = l.strip_prefix("ptxas info    : Function properties for ") {
            props_for = Some(rest.trim().to_string());
        } else if l.contains("bytes stack frame") {
            if let (Some(name), Some(i)) = (&props_for, current)
                && out[i].name == *name
            {
                out[i].stack_frame_bytes = number_before(l, "bytes stack frame");
                out[i].spill_store_bytes = number_before(l, "bytes spill stores");
                out[i].spill_load_bytes = number_before(l, "bytes spill loads");
            }
            props_for = None;
        } else if l.starts_with("ptxas info    : Used ") {
            if let Some(i) = current {
                out[i].registers = number_before(l, "registers");
                out[i].barriers = number_before(l, "barriers");
                out[i].shared_bytes = number_before(l, "bytes smem");
                out[i].cumulative_stack_bytes = number_before(l, "bytes cumulative stack size");
            }
        } else if l.starts_with("ptxas info    : Function properties") || l.starts_with("ptxas info    : Compile time")
        {
            // another function's report, or the end of this one
        }
    }
    out
}

/// The integer just before `unit` in `line` (`"12 registers"` → 12), or 0.
fn number_before(line: &str, unit: &str) -> u32 {
    let Some(at) = line.find(unit) else { return 0 };
    line[..at].split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty()).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_13_report() {
        let text = "ptxas info    : 314 bytes gmem, 48 bytes cmem[4]
ptxas info    : Compiling entry function 'add' for 'sm_80'
ptxas info    : Function properties for add
    112 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 50 registers, used 1 barriers, 4096 bytes smem, 112 bytes cumulative stack size, 384 bytes cmem[0]
ptxas info    : Compile time = 24.213 ms
ptxas info    : Function properties for helper
    56 bytes stack frame, 52 bytes spill stores, 52 bytes spill loads
ptxas info    : Compiling entry function 'k2' for 'sm_80'
ptxas info    : Function properties for k2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]
";
        let r = parse_ptxas_output(text);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            KernelResources {
                name: "add".into(),
                registers: 50,
                barriers: 1,
                shared_bytes: 4096,
                stack_frame_bytes: 112,
                cumulative_stack_bytes: 112,
                spill_store_bytes: 4,
                spill_load_bytes: 8
            }
        );
        assert_eq!(r[1].name, "k2");
        assert_eq!(r[1].registers, 12);
        assert_eq!(r[1].stack_frame_bytes, 0);
    }
}

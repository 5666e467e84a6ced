//! `ptxas` on a kernel's PTX: its resource report, in a scratch directory; and what to tell a
//! user who lacks a CUDA tool.

use std::path::Path;
use std::process::Command;

use crate::tools;
use crate::util::{CliError, CliResult};

/// The `-arch` a device of compute capability `arch` assembles module `m` for: the module's
/// own for an architecture-specific module (`sm_90a` PTX assembles only as `sm_90a`), else
/// `sm_<arch>`.
pub(super) fn target(arch: u32, m: &cohort_runtime::PtxModule) -> String {
    if m.arch_specific { m.arch_name() } else { format!("sm_{arch}") }
}

/// Runs `ptxas -v` on `ptx` for `arch` (`sm_90`, `sm_90a`) into `dir/<kernel>.cubin`; returns ptxas' report
/// for `kernel`, or its error output. `relocatable` (`-c`): when the module the PTX comes from
/// calls the device runtime (kernels that launch kernels), as the build and the driver's link
/// compile it — whole-program code would get other registers.
pub(super) fn assemble(
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    relocatable: bool,
    kernel: &str,
    dir: &Path,
) -> Result<cohort_build::KernelResources, String> {
    let src = dir.join(format!("{kernel}.ptx"));
    std::fs::write(&src, ptx).map_err(|e| format!("{}: {e}", src.display()))?;
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .args(relocatable.then_some("-c"))
        .arg("-v")
        .arg("-o")
        .arg(dir.join(format!("{kernel}.cubin")))
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(text);
    }
    cohort_build::parse_ptxas_output(&text)
        .into_iter()
        .find(|r| r.name == kernel)
        .ok_or_else(|| format!("ptxas reported nothing for `{kernel}`:\n{text}"))
}

/// A scratch directory, removed when dropped.
pub(super) struct Scratch(pub(super) std::path::PathBuf);

impl Scratch {
    pub(super) fn new(what: &str) -> CliResult<Self> {
        let dir = std::env::temp_dir().join(format!("cohort-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| CliError::Failed(format!("{}: {e}", dir.display())))?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn resources_line(r: &cohort_build::KernelResources) -> String {
    format!(
        "{} registers, {} B shared, {} B stack frame ({} B with callees), {} B spilled / {} B reloaded, {} barriers",
        r.registers,
        r.shared_bytes,
        r.stack_frame_bytes,
        r.cumulative_stack_bytes,
        r.spill_store_bytes,
        r.spill_load_bytes,
        r.barriers
    )
}

pub(super) fn embedded_resources_line(r: &cohort_runtime::KernelResources) -> String {
    resources_line(&cohort_build::KernelResources {
        name: r.name.to_string(),
        registers: r.registers,
        barriers: r.barriers,
        shared_bytes: r.shared_bytes,
        stack_frame_bytes: r.stack_frame_bytes,
        cumulative_stack_bytes: r.cumulative_stack_bytes,
        spill_store_bytes: r.spill_store_bytes,
        spill_load_bytes: r.spill_load_bytes,
    })
}

/// What to tell a user who lacks a CUDA tool.
pub(super) fn get_tool(name: &str, wheel_dir: &str, wheel: &str) -> String {
    format!(
        "{name} was not found (looked on PATH, in $CUDA_PATH/bin, $CUDA_HOME/bin, /usr/local/cuda/bin and {}). \
         Get it: {} and put {}/nvidia/cu13/bin on PATH, or install a CUDA 13 toolkit",
        tools::wheel_dirs().iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
        tools::pip_install(wheel_dir, wheel),
        tools::cohort_dir(wheel_dir)
    )
}

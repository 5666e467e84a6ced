//! `cohort sass`: the entry assembled by `ptxas` and disassembled by `nvdisasm` (or
//! `cuobjdump`).

use std::process::Command;

use super::assemble::{Scratch, assemble, get_tool, resources_line, target};
use super::cut::extract_entry;
use super::lookup::{find_kernel, gpu_here};
use super::{EMBEDDED, SassArgs};
use crate::tools;
use crate::util::{self, CliError, CliResult};

/// `cohort sass`.
pub fn sass(args: SassArgs) -> CliResult {
    let gpu = gpu_here();
    let cc = gpu.as_ref().map(|g| g.info().cc());
    let found = find_kernel(EMBEDDED, &args.kernel, args.arch, cc)?;
    let (k, m) = (args.kernel.as_str(), found.module);
    let Some((ptxas, _)) = tools::ptxas() else {
        return Err(CliError::Failed(format!(
            "cohort sass needs ptxas (to assemble the PTX) and nvdisasm or cuobjdump: {}",
            get_tool("ptxas", "nvcc", tools::NVCC_WHEEL)
        )));
    };
    let Some(dis) = tools::disassembler() else {
        return Err(CliError::Failed(format!(
            "cohort sass needs nvdisasm or cuobjdump (ptxas is {}): {}",
            ptxas.display(),
            get_tool("nvdisasm", "nvdisasm", tools::NVDISASM_WHEEL)
        )));
    };
    let scratch = Scratch::new("sass")?;
    // The entry alone (its cubin holds only it and its callees); else the whole module.
    let (report, whole) = match extract_entry(m.text(), k)
        .map(|t| assemble(&ptxas, &t, &target(found.arch, m), m.needs_device_runtime(), k, &scratch.0))
    {
        Some(Ok(r)) => (r, false),
        _ => (
            assemble(&ptxas, m.text(), &target(found.arch, m), m.needs_device_runtime(), k, &scratch.0).map_err(
                |e| {
                    CliError::Failed(format!(
                        "ptxas could not assemble {}'s {} PTX:\n{e}",
                        found.set.crate_name,
                        m.arch_name()
                    ))
                },
            )?,
            true,
        ),
    };
    let cubin = scratch.0.join(format!("{k}.cubin"));
    let is_nvdisasm = dis.file_name().is_some_and(|n| n == "nvdisasm");
    let mut cmd = Command::new(&dis);
    if is_nvdisasm {
        cmd.arg("-c");
    } else {
        cmd.arg("-sass").args(["-fun", k]);
    }
    let out = cmd.arg(&cubin).output().map_err(|e| CliError::Failed(format!("cannot run {}: {e}", dis.display())))?;
    if !out.status.success() {
        return Err(CliError::Failed(format!(
            "{} failed: {}{}",
            dis.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let code = if whole && is_nvdisasm { kernel_sections(&text, k) } else { text.into_owned() };
    util::print_out(&format!(
        "// cohort: `{k}` of {}, sm_{} PTX assembled for sm_{} by {} ({}), disassembled by {}\n// cohort: {}\n\n{code}",
        found.set.crate_name,
        m.arch,
        found.arch,
        ptxas.display(),
        tools::version(&ptxas).unwrap_or_default(),
        dis.display(),
        resources_line(&report),
    ))
}

/// From `nvdisasm` output of a whole module, the sections of `kernel`'s code (`.text.<kernel>`).
pub fn kernel_sections(disasm: &str, kernel: &str) -> String {
    let mut out = String::new();
    let mut on = false;
    for line in disasm.lines() {
        if let Some(rest) = line.trim_start().strip_prefix(".section") {
            on = rest.trim_start().split([',', ' ', '\t']).next() == Some(&format!(".text.{kernel}"));
        }
        if on {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

//! Finding a kernel among the embedded modules, by name and architecture (close names when
//! there is none).

use cohort_runtime::{Gpu, PtxModule, PtxSet};

use crate::util::{CliError, CliResult};

/// Up to five embedded kernel names close to `name` (typos, a generic kernel's base name), best first.
pub fn close_names<'a>(name: &str, all: &[&'a str]) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = all
        .iter()
        .map(|&k| {
            let s = strsim::jaro_winkler(name, k);
            let s = if k.contains(name) || name.contains(k) { s.max(0.9) } else { s };
            (s, k)
        })
        .filter(|(s, _)| *s >= 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let mut out: Vec<&str> = Vec::new();
    for (_, k) in scored {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out.truncate(5);
    out
}

/// One kernel found among the embedded modules.
pub struct Found {
    /// Its kernels crate's PTX.
    pub set: &'static PtxSet,
    /// The module chosen for the architecture.
    pub module: &'static PtxModule,
    /// The architecture asked for (or the default).
    pub arch: u32,
}

/// Finds `kernel` in `sets`, in the module a device of `arch` (default `default_arch`, else the
/// highest embedded) loads.
///
/// # Errors
/// A usage error naming close kernel names, or the architectures embedded.
pub fn find_kernel(
    sets: &[&'static PtxSet],
    kernel: &str,
    arch: Option<u32>,
    default_arch: Option<u32>,
) -> CliResult<Found> {
    let Some(set) = sets.iter().copied().find(|s| s.modules.iter().any(|m| m.kernels().contains(&kernel))) else {
        let mut all: Vec<&str> = sets.iter().flat_map(|s| s.modules.iter().flat_map(|m| m.kernels())).collect();
        all.sort_unstable();
        all.dedup();
        let close = close_names(kernel, &all);
        let hint = if close.is_empty() {
            format!("the embedded kernels are: {}", all.join(", "))
        } else {
            format!("did you mean {}? (`cohort info` lists every kernel)", close.join(", "))
        };
        return Err(CliError::Usage(format!("no embedded kernel is named `{kernel}`; {hint}")));
    };
    let highest = set.archs().into_iter().max().unwrap_or(0);
    let arch = arch.or(default_arch).unwrap_or(highest);
    let module = set.select(arch).filter(|m| m.kernels().contains(&kernel)).ok_or_else(|| {
        CliError::Usage(format!(
            "no embedded PTX of `{kernel}` runs on sm_{arch}: {} embeds {} (rebuild with COHORT_ARCHS=sm_{arch},… to add it)",
            set.crate_name,
            archs_text(set)
        ))
    })?;
    Ok(Found { set, module, arch })
}

pub(super) fn archs_text(set: &PtxSet) -> String {
    set.arch_names().join(", ")
}

/// The GPU named by `COHORT_DEVICE`, if there is one (no driver or no device: `None`).
pub(super) fn gpu_here() -> Option<Gpu> {
    Gpu::from_env().ok()
}

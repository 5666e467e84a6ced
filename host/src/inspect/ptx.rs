//! `cohort ptx`: the entry and what it uses (or the whole module), headed by its resource use
//! (ptxas' at build time or now, the driver's on a GPU).

use super::assemble::{Scratch, assemble, embedded_resources_line, resources_line, target};
use super::cut::{extract_entry, mark_entry};
use super::lookup::{archs_text, find_kernel, gpu_here};
use super::{EMBEDDED, PtxArgs};
use crate::tools;
use crate::util::{self, CliResult};

/// `cohort ptx`.
pub fn ptx(args: PtxArgs) -> CliResult {
    let gpu = gpu_here();
    let cc = gpu.as_ref().map(|g| g.info().cc());
    let found = find_kernel(EMBEDDED, &args.kernel, args.arch, cc)?;
    let (k, m) = (args.kernel.as_str(), found.module);
    let extracted = if args.module { None } else { extract_entry(m.text(), k) };
    let mut head = vec![format!(
        "`{k}` of {}: sm_{} PTX (embedded: {}){}",
        found.set.crate_name,
        m.arch,
        archs_text(found.set),
        if found.arch == m.arch { String::new() } else { format!(", which a sm_{} device loads", found.arch) }
    )];
    head.push(match (&extracted, args.module) {
        (Some(_), _) => "the entry and what it uses (--module: the whole module)".to_string(),
        (None, true) => "the whole module, the entry marked".to_string(),
        (None, false) => "the whole module, the entry marked (the entry could not be cut out of it)".to_string(),
    });
    // Resource use: ptxas' report from the build, else ptxas now; and the driver's, on a GPU.
    match m.resources_of(k) {
        Some(r) => head.push(format!(
            "ptxas at build time ({}), sm_{}: {}",
            m.ptxas.unwrap_or("?"),
            m.arch,
            embedded_resources_line(r)
        )),
        None => match tools::ptxas() {
            Some((ptxas, _)) => {
                let scratch = Scratch::new("ptx")?;
                let text = extracted.as_deref().unwrap_or(m.text());
                match assemble(&ptxas, text, &target(found.arch, m), m.needs_device_runtime(), k, &scratch.0) {
                    Ok(r) => head.push(format!(
                        "ptxas -arch={} ({}): {}",
                        target(found.arch, m),
                        ptxas.display(),
                        resources_line(&r)
                    )),
                    Err(e) => head.push(format!("ptxas failed: {}", e.lines().next().unwrap_or(""))),
                }
            }
            None => head.push(format!(
                "ptxas resource report unavailable: no ptxas at build time or now ({})",
                tools::pip_install("nvcc", tools::NVCC_WHEEL)
            )),
        },
    }
    match &gpu {
        Some(g) if found.set.select(g.info().cc()).is_some_and(|s| std::ptr::eq(s, m)) => {
            let module = g.load(found.set)?;
            let f = module.function(k, false)?;
            let a = f.attributes();
            head.push(format!(
                "driver ({}, sm_{}): {} registers, {} B static shared, {} B local, max block {}",
                g.info().name,
                g.info().cc(),
                a.registers,
                a.static_shared_bytes,
                a.local_bytes,
                a.max_threads_per_block
            ));
        }
        Some(g) => head.push(format!(
            "driver figures: only for the sm_{} module this GPU loads (omit --arch)",
            found.set.select(g.info().cc()).map_or(0, |s| s.arch)
        )),
        None => head.push("driver figures: no GPU here".into()),
    }
    let mut out: String = head.iter().map(|h| format!("// cohort: {h}\n")).collect();
    out.push('\n');
    out.push_str(&extracted.unwrap_or_else(|| mark_entry(m.text(), k)));
    util::print_out(&out)
}

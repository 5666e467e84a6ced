//! `cohort ptx` and `cohort sass`: one embedded kernel's PTX, or its SASS (assembled here with
//! `ptxas`, disassembled with `nvdisasm` or `cuobjdump`), with its resource use — what CUDA.jl's
//! `@device_code_ptx` / `@device_code_sass` show.
//!
//! The PTX printed is the kernel's `.entry` with everything it uses (the module's header, the
//! functions it calls and their prototypes, the globals and shared variables it names), in the
//! module's order: a module of its own that `ptxas` assembles. `--module` prints the whole
//! module instead, the entry marked.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;

use cohort_runtime::{Gpu, PtxModule, PtxSet};

use crate::tools;
use crate::util::{self, CliError, CliResult};

/// Every kernels crate whose PTX this binary embeds. Another one: add its `PTX` here (and the
/// crate to host/Cargo.toml); `ptx`, `sass` and `doctor` then cover it.
pub static EMBEDDED: &[&PtxSet] = &[&cohort_kernels::PTX, &cohort_dynamic_kernels::PTX];

/// `cohort ptx`'s options.
#[derive(clap::Args, Debug)]
pub struct PtxArgs {
    /// The kernel: its PTX entry name (`vector_add`; a generic kernel's instance: `saxpy_f32`)
    pub kernel: String,
    /// The architecture (`sm_90` or `90`): the embedded PTX a device of it loads (the highest
    /// not above it) [default: this GPU's, else the highest embedded]
    #[arg(long, value_parser = parse_arch)]
    pub arch: Option<u32>,
    /// Print the whole module, the entry marked, instead of the entry and what it uses
    #[arg(long)]
    pub module: bool,
}

/// `cohort sass`' options.
#[derive(clap::Args, Debug)]
pub struct SassArgs {
    /// The kernel: its PTX entry name (`vector_add`; a generic kernel's instance: `saxpy_f32`)
    pub kernel: String,
    /// The architecture to assemble for (`sm_90` or `90`), from the embedded PTX a device of it
    /// loads [default: this GPU's, else the highest embedded]
    #[arg(long, value_parser = parse_arch)]
    pub arch: Option<u32>,
}

/// `sm_90`, `sm90` or `90` → 90.
pub fn parse_arch(v: &str) -> Result<u32, String> {
    let digits = v.trim().trim_start_matches("sm_").trim_start_matches("sm");
    match digits.parse::<u32>() {
        Ok(n) if (10..=1000).contains(&n) => Ok(n),
        _ => Err(format!("`{v}` is not an architecture like sm_90")),
    }
}

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

fn archs_text(set: &PtxSet) -> String {
    set.archs().iter().map(|a| format!("sm_{a}")).collect::<Vec<_>>().join(", ")
}

/// The GPU named by `COHORT_DEVICE`, if there is one (no driver or no device: `None`).
fn gpu_here() -> Option<Gpu> {
    Gpu::from_env().ok()
}

/// One top-level statement of a PTX module: a declaration, a definition or a variable.
struct Item<'a> {
    text: &'a str,
    name: Option<&'a str>,
}

/// `text` without its `//` and `/* */` comments (for finding names, not for printing).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |e| &tail[e..]);
        } else if tail.starts_with("/*") {
            rest = tail.find("*/").map_or("", |e| &tail[e + 2..]);
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The identifiers in `text` (PTX: letters, digits, `_`, `$`, `%`; not starting with a digit).
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'))
        .filter(|t| t.chars().next().is_some_and(|c| !c.is_ascii_digit()))
}

/// The name an item declares or defines: the first identifier after its directives
/// (`.visible .entry NAME(`, `.func (.param .b64 r) NAME`, `.global .align 8 .u64 NAME[3]`).
fn defined_name(text: &str) -> Option<&str> {
    let mut rest = text.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(r.len());
            rest = r[end..].trim_start();
        } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
            let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            rest = rest[end..].trim_start();
        } else if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        } else if rest.starts_with("//") {
            rest = rest[rest.find('\n')?..].trim_start();
        } else {
            let name = identifiers(rest).next()?;
            return rest.starts_with(name).then_some(name);
        }
    }
}

/// Splits a PTX module into its header lines (`.version`, `.target`, `.address_size`) and its
/// top-level items; `None` if it is not shaped as expected (unbalanced braces, an unterminated
/// item).
fn split_module(ptx: &str) -> Option<(Vec<&str>, Vec<Item<'_>>)> {
    let b = ptx.as_bytes();
    let (mut header, mut items) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < b.len() {
        // Between items: whitespace, comments, header directives.
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let rest = &ptx[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
            continue;
        }
        if rest.starts_with("/*") {
            i += rest.find("*/")? + 2;
            continue;
        }
        if [".version", ".target", ".address_size"].iter().any(|d| rest.starts_with(d)) {
            let end = rest.find('\n').unwrap_or(rest.len());
            header.push(rest[..end].trim_end());
            i += end;
            continue;
        }
        // An item: up to a `;` outside braces, or the `}` that closes its body.
        let start = i;
        let mut depth = 0usize;
        let end = loop {
            if i >= b.len() {
                return None;
            }
            let rest = &ptx[i..];
            if rest.starts_with("//") {
                i += rest.find('\n').unwrap_or(rest.len());
                continue;
            }
            if rest.starts_with("/*") {
                i += rest.find("*/")? + 2;
                continue;
            }
            match b[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        // A body ends here, unless an initializer's `= {…};` goes on to its `;`.
                        let after = ptx[i + 1..].trim_start_matches([' ', '\t']);
                        if !after.starts_with(';') && !after.starts_with(',') {
                            break i + 1;
                        }
                    }
                }
                b';' if depth == 0 => break i + 1,
                _ => {}
            }
            i += 1;
        };
        let text = &ptx[start..end];
        items.push(Item { text, name: defined_name(text) });
        i = end;
    }
    Some((header, items))
}

/// The PTX of one kernel: the module's header, then — in the module's order — the kernel's
/// `.entry` and every item it needs (transitively: the functions it calls, their prototypes, the
/// globals, constants and shared variables it names). `None` if the module has no such entry or
/// cannot be split.
pub fn extract_entry(ptx: &str, kernel: &str) -> Option<String> {
    let (header, items) = split_module(ptx)?;
    let is_entry = |it: &Item<'_>| it.name == Some(kernel) && strip_comments(it.text).contains(".entry");
    if !items.iter().any(is_entry) {
        return None;
    }
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        if let Some(n) = it.name {
            by_name.entry(n).or_default().push(i);
        }
    }
    let mut need: HashSet<&str> = HashSet::from([kernel]);
    let mut todo = vec![kernel];
    while let Some(n) = todo.pop() {
        for &i in by_name.get(n).into_iter().flatten() {
            let code = strip_comments(items[i].text);
            for id in identifiers(&code) {
                if let Some((&known, _)) = by_name.get_key_value(id)
                    && need.insert(known)
                {
                    todo.push(known);
                }
            }
        }
    }
    // Other kernels are in `need` only when this one launches them (it names their address).
    // Dynamic shared memory (`.extern .shared`) stays, named or not: ptxas aligns the static
    // shared memory of every kernel to it (8 B of static shared memory count as 16 beside an
    // `.align 16` extern array), so the report matches the whole module's.
    let dynamic_shared = |it: &Item<'_>| strip_comments(it.text).trim_start().starts_with(".extern .shared");
    let mut out = header.join("\n");
    out.push_str("\n\n");
    for it in items.iter().filter(|it| it.name.is_some_and(|n| need.contains(n)) || dynamic_shared(it)) {
        out.push_str(it.text);
        out.push_str("\n\n");
    }
    Some(out)
}

/// The whole module with a comment line before `kernel`'s `.entry`.
pub fn mark_entry(ptx: &str, kernel: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 80);
    for line in ptx.lines() {
        let l = line.trim_start();
        let entry = l.strip_prefix(".visible .entry ").or_else(|| l.strip_prefix(".entry "));
        if entry.is_some_and(|r| r.split(['(', ' ']).next() == Some(kernel)) {
            out.push_str(&format!("// >>>>>>>> cohort: the kernel `{kernel}` <<<<<<<<\n"));
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Runs `ptxas -v` on `ptx` for `sm_<arch>` into `dir/<kernel>.cubin`; returns ptxas' report
/// for `kernel`, or its error output. `relocatable` (`-c`): when the module the PTX comes from
/// calls the device runtime (kernels that launch kernels), as the build and the driver's link
/// compile it — whole-program code would get other registers.
fn assemble(
    ptxas: &Path,
    ptx: &str,
    arch: u32,
    relocatable: bool,
    kernel: &str,
    dir: &Path,
) -> Result<cohort_build::KernelResources, String> {
    let src = dir.join(format!("{kernel}.ptx"));
    std::fs::write(&src, ptx).map_err(|e| format!("{}: {e}", src.display()))?;
    let out = Command::new(ptxas)
        .arg(format!("-arch=sm_{arch}"))
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
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(what: &str) -> CliResult<Self> {
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

fn resources_line(r: &cohort_build::KernelResources) -> String {
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

fn embedded_resources_line(r: &cohort_runtime::KernelResources) -> String {
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
fn get_tool(name: &str, wheel_dir: &str, wheel: &str) -> String {
    format!(
        "{name} was not found (looked on PATH, in $CUDA_PATH/bin, $CUDA_HOME/bin, /usr/local/cuda/bin and {}). \
         Get it: {} and put {}/nvidia/cu13/bin on PATH, or install a CUDA 13 toolkit",
        tools::wheel_dirs().iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
        tools::pip_install(wheel_dir, wheel),
        tools::cohort_dir(wheel_dir)
    )
}

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
                match assemble(&ptxas, text, found.arch, m.needs_device_runtime(), k, &scratch.0) {
                    Ok(r) => head.push(format!(
                        "ptxas -arch=sm_{} ({}): {}",
                        found.arch,
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
        .map(|t| assemble(&ptxas, &t, found.arch, m.needs_device_runtime(), k, &scratch.0))
    {
        Some(Ok(r)) => (r, false),
        _ => (
            assemble(&ptxas, m.text(), found.arch, m.needs_device_runtime(), k, &scratch.0).map_err(|e| {
                CliError::Failed(format!("ptxas could not assemble {}'s sm_{} PTX:\n{e}", found.set.crate_name, m.arch))
            })?,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A module shaped as LLVM's NVPTX back end writes them: prototypes first, globals (one with
    /// an initializer naming another), two entries, then the function bodies.
    const MODULE: &str = "//
// Generated by LLVM NVPTX Back-End
//

.version 7.8
.target sm_90
.address_size 64

.shared .align 16 .b8 tile_a[512];
.shared .align 16 .b8 tile_b[512];
.extern .shared .align 16 .b8 dyn_smem[];
\t// .globl\tfirst                  // -- Begin function first
.extern .func  (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0,
\t.param .b64 vprintf_param_1
)
;
.func helper
(
\t.param .b64 helper_param_0
)
.noreturn;
.func  (.param .b64 func_retval0) index_of
()
;
.global .align 1 .b8 msg[3] = {104, 105, 0};
.global .align 8 .u64 msg_ref[1] = {generic(msg)};
.global .align 1 .b8 unused[2] = {1, 2};
.visible .entry first(
\t.param .u64 first_param_0
)                                       // @first
{
\t.reg .b64 \t%rd<4>;

\tmov.u64 \t%rd1, tile_a;
\t{ // callseq 1, 0
\t.param .b64 \tretval0;
\tcall.uni (retval0), index_of, ();
\t} // callseq 1
\tret;
                                        // -- End function
}
\t// .globl\tsecond
.visible .entry second()                // @second
{
\t.reg .b64 \t%rd<4>;

\tmov.u64 \t%rd1, tile_b;
\tmov.u64 \t%rd2, msg_ref;
\t{ // callseq 2, 0
\t.param .b64 \tparam0;
\tcall.uni helper, (param0);
\t} // callseq 2
\tret;
}
.func  (.param .b64 func_retval0) index_of() // -- Begin function index_of
{
\t.reg .b64 \t%rd<2>;
\tmov.u64 \t%rd1, 0;
\tst.param.b64 \t[func_retval0], %rd1;
\tret;
}
.func helper(
\t.param .b64 helper_param_0
)
.noreturn                               // -- Begin function helper
{
\t/* a comment naming first */
\t.reg .b64 \t%rd<2>;
\t{ // callseq 3, 0
\t.param .b64 \tparam0;
\t.param .b64 \tparam1;
\tcall.uni (retval0), vprintf, (param0, param1);
\t} // callseq 3
\ttrap; exit;
}
";

    /// The top-level items an extract holds, by their first line.
    fn heads(ptx: &str) -> Vec<String> {
        split_module(ptx).unwrap().1.iter().map(|i| i.text.lines().next().unwrap().trim().to_string()).collect()
    }

    #[test]
    fn ptx_module_splits_into_items_with_names() {
        let (header, items) = split_module(MODULE).unwrap();
        assert_eq!(header, [".version 7.8", ".target sm_90", ".address_size 64"]);
        let names: Vec<_> = items.iter().map(|i| i.name.unwrap()).collect();
        assert_eq!(
            names,
            [
                "tile_a", "tile_b", "dyn_smem", "vprintf", "helper", "index_of", "msg", "msg_ref", "unused", "first",
                "second", "index_of", "helper"
            ]
        );
        assert!(items[9].text.ends_with('}') && items[6].text.ends_with("};"));
    }

    #[test]
    fn ptx_entry_extraction_keeps_what_the_entry_uses() {
        let first = extract_entry(MODULE, "first").unwrap();
        assert!(first.starts_with(".version 7.8\n.target sm_90\n.address_size 64\n"));
        assert_eq!(
            heads(&first),
            [
                ".shared .align 16 .b8 tile_a[512];",
                ".extern .shared .align 16 .b8 dyn_smem[];",
                ".func  (.param .b64 func_retval0) index_of",
                ".visible .entry first(",
                ".func  (.param .b64 func_retval0) index_of() // -- Begin function index_of"
            ]
        );
        // Transitively: helper (prototype and body) → vprintf; msg_ref → msg. Not another entry
        // it does not launch, nor what nothing names (`unused`), nor names only in comments.
        let second = extract_entry(MODULE, "second").unwrap();
        assert_eq!(
            heads(&second),
            [
                ".shared .align 16 .b8 tile_b[512];",
                ".extern .shared .align 16 .b8 dyn_smem[];",
                ".extern .func  (.param .b32 func_retval0) vprintf",
                ".func helper",
                ".global .align 1 .b8 msg[3] = {104, 105, 0};",
                ".global .align 8 .u64 msg_ref[1] = {generic(msg)};",
                ".visible .entry second()                // @second",
                ".func helper(",
            ]
        );
        assert!(!second.contains("entry first"));
    }

    #[test]
    fn ptx_entry_extraction_refuses_what_it_cannot_cut() {
        assert_eq!(extract_entry(MODULE, "index_of"), None, "a .func is not a kernel");
        assert_eq!(extract_entry(MODULE, "third"), None);
        assert_eq!(extract_entry(".version 7.8\n.visible .entry k()\n{\n\tret;\n", "k"), None, "unclosed body");
        assert_eq!(extract_entry(".version 7.8\n.visible .entry k()\n}\n", "k"), None, "unbalanced");
    }

    #[test]
    fn ptx_whole_module_marks_the_entry() {
        let marked = mark_entry(MODULE, "second");
        let lines: Vec<&str> = marked.lines().collect();
        let at = lines.iter().position(|l| l.starts_with(".visible .entry second")).unwrap();
        assert!(lines[at - 1].contains("cohort: the kernel `second`"));
        assert_eq!(marked.matches("cohort: the kernel").count(), 1);
    }

    #[test]
    fn ptx_every_embedded_kernel_is_cut_out_with_only_its_entry() {
        for set in EMBEDDED {
            for m in set.modules {
                for k in m.kernels() {
                    let text =
                        extract_entry(m.text(), k).unwrap_or_else(|| panic!("{k} (sm_{}) not extracted", m.arch));
                    let items = split_module(&text).unwrap().1;
                    let bodies: Vec<&str> = items
                        .iter()
                        .filter(|i| strip_comments(i.text).contains(".entry") && i.text.ends_with('}'))
                        .filter_map(|i| i.name)
                        .collect();
                    assert_eq!(bodies.iter().filter(|&&n| n == k).count(), 1, "{k} sm_{}: {bodies:?}", m.arch);
                    // Any other kernel is there because this one launches it (names its address).
                    for other in bodies.iter().filter(|&&n| n != k) {
                        let named = items
                            .iter()
                            .filter(|i| i.name != Some(other))
                            .any(|i| identifiers(&strip_comments(i.text)).any(|id| id == *other));
                        assert!(named, "{k} sm_{}: {other} is in its extract but not launched", m.arch);
                    }
                    assert!(bodies.len() < m.kernels().len() || m.kernels().len() == 1, "{k}: every kernel kept");
                }
            }
        }
    }

    /// The extracts are modules of their own: ptxas assembles each (when there is a ptxas;
    /// `COHORT_REQUIRE_PTXAS=1` makes its absence a failure, as in CI).
    #[test]
    fn ptx_every_embedded_kernel_extract_assembles() {
        let Some((ptxas, _)) = tools::ptxas() else {
            assert!(std::env::var("COHORT_REQUIRE_PTXAS").is_err(), "COHORT_REQUIRE_PTXAS=1 but no ptxas");
            eprintln!("skipped: no ptxas");
            return;
        };
        let dir = Scratch::new("extract-test").unwrap();
        for set in EMBEDDED {
            for m in set.modules {
                for k in m.kernels() {
                    let text = extract_entry(m.text(), k).unwrap();
                    let r = assemble(&ptxas, &text, m.arch, m.needs_device_runtime(), k, &dir.0)
                        .unwrap_or_else(|e| panic!("{k} (sm_{}): ptxas refused the extract:\n{e}", m.arch));
                    // The same code as in the whole module: the same report as at build time.
                    if let Some(b) = m.resources_of(k) {
                        assert_eq!((r.registers, r.shared_bytes), (b.registers, b.shared_bytes), "{k}");
                    }
                }
            }
        }
    }

    #[test]
    fn ptx_kernel_lookup_by_name_and_arch() {
        let f = find_kernel(EMBEDDED, "vector_add", Some(89), None).unwrap();
        assert_eq!((f.module.arch, f.arch, f.set.crate_name), (80, 89, "cohort_kernels"));
        let f = find_kernel(EMBEDDED, "vector_add", None, Some(120)).unwrap();
        assert_eq!(f.module.arch, *cohort_kernels::PTX.archs().iter().max().unwrap());
        let f = find_kernel(EMBEDDED, "vector_add", None, None).unwrap();
        assert_eq!(f.module.arch, *cohort_kernels::PTX.archs().iter().max().unwrap());
        let usage = |r: CliResult<Found>| match r {
            Err(CliError::Usage(m)) => m,
            _ => panic!("expected a usage error"),
        };
        let m = usage(find_kernel(EMBEDDED, "vector_add", Some(75), None));
        assert!(m.contains("sm_75") && m.contains("COHORT_ARCHS"), "{m}");
        let m = usage(find_kernel(EMBEDDED, "vectoradd", None, None));
        assert!(m.contains("did you mean vector_add"), "{m}");
        let m = usage(find_kernel(EMBEDDED, "qqqqqqqqqq", None, None));
        assert!(m.contains("the embedded kernels are: ") && m.contains("vector_add"), "{m}");
    }

    #[test]
    fn ptx_close_names_and_archs() {
        let all = ["vector_add", "overlap_add", "saxpy_f32", "saxpy_f64", "sum_u32"];
        assert_eq!(close_names("vectoradd", &all)[0], "vector_add");
        assert_eq!(close_names("saxpy", &all)[..2], ["saxpy_f32", "saxpy_f64"]);
        assert!(close_names("zzzzzz", &all).is_empty());
        assert_eq!(parse_arch("sm_90"), Ok(90));
        assert_eq!(parse_arch("sm90"), Ok(90));
        assert_eq!(parse_arch("80"), Ok(80));
        assert!(parse_arch("volta").is_err() && parse_arch("sm_").is_err() && parse_arch("7").is_err());
    }

    #[test]
    fn sass_sections_of_one_kernel() {
        let dis = "\t.target\tsm_90\n\
                   \t.section\t.text.other,\"ax\",@progbits\nother:\n        /*0000*/ EXIT ;\n\
                   \t.section\t.text.k,\"ax\",@progbits\nk:\n        /*0000*/ MOV R1, c[0x0][0x28] ;\n\
                   \t.section\t.text.k_tail,\"ax\",@progbits\nk_tail:\n        /*0000*/ RET ;\n";
        let s = kernel_sections(dis, "k");
        assert!(s.starts_with("\t.section\t.text.k,") && s.contains("MOV R1"), "{s}");
        assert!(!s.contains("other") && !s.contains("k_tail"), "{s}");
    }
}

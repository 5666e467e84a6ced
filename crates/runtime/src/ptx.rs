//! Embedded PTX: what `cohort_build` produced for a kernels crate.

use std::ffi::CStr;

/// Every PTX module of one kernels crate (one per architecture), embedded in the binary.
/// Made by `cohort_runtime::include_ptx!()` from the crate's build output.
#[derive(Debug)]
pub struct PtxSet {
    /// The kernels crate's library name.
    pub crate_name: &'static str,
    /// The modules, one per architecture.
    pub modules: &'static [PtxModule],
}

/// One PTX module: its text, which the driver reads as a C string, is checked to end with a
/// NUL when the module is made ([`PtxModule::new`]), at compile time in a `static`.
///
/// ```
/// use cohort_runtime::PtxModule;
/// static M: PtxModule = PtxModule::new(80, ".version 8.0\n.target sm_80\n\0").with_ptxas("ptxas 13.0");
/// assert_eq!(M.text(), ".version 8.0\n.target sm_80\n");
/// ```
///
/// Text without its final NUL is refused (at compile time here), and there is no other way to
/// make a module:
///
/// ```compile_fail
/// static M: cohort_runtime::PtxModule = cohort_runtime::PtxModule::new(80, ".version 8.0");
/// ```
/// ```compile_fail
/// static M: cohort_runtime::PtxModule =
///     cohort_runtime::PtxModule { arch: 80, ptx: ".version 8.0", ptxas: None, resources: &[] };
/// ```
#[derive(Debug)]
pub struct PtxModule {
    /// Compute capability × 10 it was built for (`-Ctarget-cpu=sm_XX`).
    pub arch: u32,
    /// Built for `sm_<arch>a` (`-Ctarget-cpu=sm_90a`: PTX with the architecture's own
    /// instructions, Hopper's `wgmma`), which runs only on a device of compute capability
    /// `arch` exactly: [`PtxSet::select`] picks it there and nowhere else.
    pub arch_specific: bool,
    /// The PTX text, ending with a NUL (for `cuModuleLoadData`). Not public, so that safe code
    /// cannot hand the driver a string without one: see [`PtxModule::new`].
    pub(crate) ptx: &'static str,
    /// `ptxas --version` of the ptxas that checked it at build time, if one did.
    pub ptxas: Option<&'static str>,
    /// Per-kernel resource use reported by that ptxas (empty if none ran).
    pub resources: &'static [KernelResources],
    /// `libcudadevrt.a`, embedded by `cohort-build` when the PTX calls the device runtime
    /// (kernels that launch kernels): [`Gpu::load`](crate::Gpu::load) then links the module
    /// with it.
    pub device_runtime: Option<&'static [u8]>,
}

/// What `ptxas -v` reported for one kernel at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelResources {
    /// The kernel (entry point) name.
    pub name: &'static str,
    /// Registers per thread.
    pub registers: u32,
    /// Named barriers.
    pub barriers: u32,
    /// Static shared memory, bytes.
    pub shared_bytes: u32,
    /// The entry's own stack frame (local memory), bytes.
    pub stack_frame_bytes: u32,
    /// Stack including callees, bytes.
    pub cumulative_stack_bytes: u32,
    /// Spill stores, bytes.
    pub spill_store_bytes: u32,
    /// Spill loads, bytes.
    pub spill_load_bytes: u32,
}

impl PtxSet {
    /// The module for a device of compute capability `cc` (× 10): the architecture-specific
    /// module of exactly `cc` (`sm_90a` on a 9.0 device) if there is one, else the highest
    /// portable architecture that is not above `cc`. An architecture-specific module is never
    /// chosen for another compute capability (its PTX does not run there).
    #[must_use]
    pub fn select(&self, cc: u32) -> Option<&'static PtxModule> {
        self.modules
            .iter()
            .find(|m| m.arch_specific && m.arch == cc)
            .or_else(|| self.modules.iter().filter(|m| !m.arch_specific && m.arch <= cc).max_by_key(|m| m.arch))
    }

    /// The architectures embedded (an architecture-specific module's number too: see
    /// [`PtxSet::arch_names`]).
    #[must_use]
    pub fn archs(&self) -> Vec<u32> {
        self.modules.iter().map(|m| m.arch).collect()
    }

    /// The modules' architectures by name (`sm_80`, `sm_90`, `sm_90a`).
    #[must_use]
    pub fn arch_names(&self) -> Vec<String> {
        self.modules.iter().map(PtxModule::arch_name).collect()
    }
}

/// Why `text` cannot be handed to the driver as a C string, if it cannot. Constant time: the
/// embedded modules are megabytes, and a `static` initializer is evaluated by the compiler.
/// (A NUL *before* the end only makes the driver stop reading early, inside the text: a load
/// error, not a read past the end.)
const fn nul_problem(text: &str) -> Option<&'static str> {
    let b = text.as_bytes();
    if b.is_empty() || b[b.len() - 1] != 0 {
        return Some("PTX text must end with a NUL (\\0): the driver reads it as a C string");
    }
    None
}

/// The offset of the first NUL in `text`, if any (PTX text to which a final NUL is still to be
/// appended must have none).
pub(crate) fn interior_nul(text: &str) -> Option<usize> {
    text.bytes().position(|b| b == 0)
}

impl PtxModule {
    /// A module of `ptx` text for compute capability `arch` (× 10), with no ptxas report.
    /// `ptx` must end with a NUL, and should contain no other (the driver stops reading at the
    /// first): write `concat!(include_str!("k.sm_80.ptx"), "\0")`.
    ///
    /// Only the final NUL is checked here, in constant time: the embedded modules are
    /// megabytes, and scanning them in a `static` initializer takes the compiler's constant
    /// evaluator tens of seconds per module. A NUL inside makes the driver read less text
    /// (a load error), never past the end; [`Gpu::load_ptx_text`](crate::Gpu::load_ptx_text)
    /// refuses such text.
    ///
    /// # Panics
    /// If `ptx` does not end with `\0`. In a `const` or `static` initializer (as
    /// `cohort_runtime::include_ptx!()` generates) that is a compile error.
    #[must_use]
    #[track_caller]
    pub const fn new(arch: u32, ptx: &'static str) -> Self {
        if let Some(why) = nul_problem(ptx) {
            panic!("{}", why);
        }
        Self { arch, arch_specific: false, ptx, ptxas: None, resources: &[], device_runtime: None }
    }

    /// The same, built for `sm_<arch>a` (see [`PtxModule::arch_specific`]).
    #[must_use]
    pub const fn with_arch_specific(mut self) -> Self {
        self.arch_specific = true;
        self
    }

    /// The architecture by name: `sm_90`, or `sm_90a` for an architecture-specific module.
    #[must_use]
    pub fn arch_name(&self) -> String {
        format!("sm_{}{}", self.arch, if self.arch_specific { "a" } else { "" })
    }

    /// The same, with the device runtime library (`libcudadevrt.a`) it is to be linked with.
    #[must_use]
    pub const fn with_device_runtime(mut self, library: &'static [u8]) -> Self {
        self.device_runtime = Some(library);
        self
    }

    /// Whether the PTX calls the device runtime (`__cudaCDP2*`: a kernel launches kernels), so
    /// that loading it needs a link step with `libcudadevrt.a`.
    #[must_use]
    pub fn needs_device_runtime(&self) -> bool {
        self.text().contains("__cudaCDP2")
    }

    /// The same, checked by `ptxas` of this `--version` at build time.
    #[must_use]
    pub const fn with_ptxas(mut self, version: &'static str) -> Self {
        self.ptxas = Some(version);
        self
    }

    /// The same, with ptxas' per-kernel resource report.
    #[must_use]
    pub const fn with_resources(mut self, resources: &'static [KernelResources]) -> Self {
        self.resources = resources;
        self
    }

    /// The PTX text without its terminating NUL.
    #[must_use]
    pub const fn text(&self) -> &'static str {
        // `new` checked that the text ends with a NUL: one byte, a character of its own.
        self.ptx.split_at(self.ptx.len() - 1).0
    }

    /// The PTX text with its terminating NUL, as the driver reads it.
    #[must_use]
    pub const fn text_with_nul(&self) -> &'static str {
        self.ptx
    }

    /// The PTX text as a C string (what `cuModuleLoadData` takes): up to its first NUL,
    /// which `new` guarantees exists (at the end at the latest).
    #[must_use]
    pub fn as_c_str(&self) -> &'static CStr {
        match CStr::from_bytes_until_nul(self.ptx.as_bytes()) {
            Ok(c) => c,
            // `new` checked that the text ends with a NUL.
            Err(_) => unreachable!("PtxModule text without a NUL"),
        }
    }

    /// The names of the module's kernels (`.entry` directives), in file order, each once (a
    /// kernel whose address another takes before its definition is also declared ahead).
    #[must_use]
    pub fn kernels(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        for l in self.text().lines() {
            let l = l.trim_start();
            let Some(rest) = l.strip_prefix(".visible .entry ").or_else(|| l.strip_prefix(".entry ")) else {
                continue;
            };
            let name = rest.split(['(', ' ']).next().unwrap_or(rest).trim();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Each entry's bound on its block (`.maxntid x, y, z` between its parameters and its body,
    /// as `#[kernel(launch_bounds(..))]` makes it: the product), for the entries that have one;
    /// one pass over the text.
    #[must_use]
    pub fn max_threads_per_entry(&self) -> Vec<(&'static str, u32)> {
        self.entry_directives()
            .filter_map(|(name, l)| {
                let dims = l.strip_prefix(".maxntid")?;
                let product =
                    dims.split(',').map(|d| d.trim().parse::<u32>().ok()).try_fold(1u32, |p, d| p.checked_mul(d?));
                product.map(|n| (name, n))
            })
            .collect()
    }

    /// Each entry's directive lines between its `.entry` and its body (its `.param`s, then
    /// `.maxntid`, `.maxnreg`, `.minnctapersm`, …), as (entry, trimmed line); one pass over the
    /// text.
    fn entry_directives(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        let mut entry: Option<&'static str> = None;
        self.text().lines().filter_map(move |l| {
            let l = l.trim();
            if let Some(rest) = l.strip_prefix(".visible .entry ").or_else(|| l.strip_prefix(".entry ")) {
                entry = (!rest.ends_with(';')).then(|| rest.split(['(', ' ']).next().unwrap_or(rest));
                None
            } else if l == "{" {
                entry = None;
                None
            } else {
                entry.filter(|_| l.starts_with('.')).map(|name| (name, l))
            }
        })
    }

    /// The most threads per block kernel `name` may be launched with, if its entry says (see
    /// [`PtxModule::max_threads_per_entry`]).
    #[must_use]
    pub fn max_threads_of(&self, name: &str) -> Option<u32> {
        self.max_threads_per_entry().into_iter().find(|(n, _)| *n == name).map(|(_, t)| t)
    }

    /// The register split of kernel `name`, if its code changes its warps' register counts
    /// (`setmaxnreg`, sm_90a: `cohort::wgmma::SplitRegisters`): the lowest count a
    /// `setmaxnreg.dec` sets and the highest a `setmaxnreg.inc` sets, in the entry's own body
    /// (where `SplitRegisters` inlines them), or in every function of the module together if
    /// only a function it calls has them (more than it may need: never less).
    #[must_use]
    pub fn register_split_of(&self, name: &str) -> Option<(u32, u32)> {
        fn counts(body: &str) -> Option<(u32, u32)> {
            let mut split: Option<(u32, u32)> = None;
            for (at, _) in body.match_indices("setmaxnreg.") {
                let insn = body[at..].split(';').next().unwrap_or("");
                let Some(n) = insn.split_whitespace().last().and_then(|n| n.parse::<u32>().ok()) else { continue };
                let (dec, inc) = split.get_or_insert((u32::MAX, 0));
                if insn.starts_with("setmaxnreg.dec") {
                    *dec = (*dec).min(n);
                } else {
                    *inc = (*inc).max(n);
                }
            }
            split
        }
        // The entry's own counts, and every body's together (bodies without their comments).
        let (own, all) = (std::cell::Cell::new(None), std::cell::Cell::new(None::<(u32, u32)>));
        let seed = |f: &str, body: &str| {
            let here = counts(body);
            if f == name {
                own.set(here);
            }
            if let Some((dec, inc)) = here {
                all.set(Some(all.get().map_or((dec, inc), |(d, i)| (d.min(dec), i.max(inc)))));
            }
            here.is_some()
        };
        let reached = entries_where(self.text(), seed, |_| false);
        if !reached.iter().any(|e| e == name) || !self.bounds_registers(name) {
            return None;
        }
        own.get().or(all.get())
    }

    /// Whether entry `name`'s header fixes its register count at entry (`.maxntid` or
    /// `.maxnreg` between its parameters and its body): without one ptxas drops every
    /// `setmaxnreg` of the kernel ("unable to determine register count at entry", C7508), and
    /// the kernel runs without the split.
    fn bounds_registers(&self, name: &str) -> bool {
        self.entry_directives().any(|(e, l)| e == name && (l.starts_with(".maxntid") || l.starts_with(".maxnreg")))
    }

    /// The kernels that can launch kernels from the device: the `.entry` functions from which
    /// a call to `__cudaCDP2LaunchDeviceV2` is reachable through the module's call graph.
    #[must_use]
    pub fn device_launching_kernels(&self) -> Vec<String> {
        entries_reaching(self.text(), "__cudaCDP2LaunchDeviceV2")
    }

    /// The ptxas report for kernel `name`, if ptxas ran at build time.
    #[must_use]
    pub fn resources_of(&self, name: &str) -> Option<&'static KernelResources> {
        self.resources.iter().find(|r| r.name == name)
    }
}

/// The `.entry` functions of `ptx` from whose body `target` is reachable: a function reaches
/// `target` if its body names `target` or names a function that reaches it. Names are whole
/// identifier tokens, so an entry whose address is taken (a device-side launch's `mov.u64 %rd,
/// child;`) counts as reached too — an over-approximation, never an omission.
pub(crate) fn entries_reaching(ptx: &str, target: &str) -> Vec<String> {
    reach(ptx, target, &|_, _| false, &|_| false)
}

/// The `.entry` functions of `ptx` that reach a function (themselves included) whose name and
/// body satisfy `seed` (through calls, as [`entries_reaching`] follows them), not counting
/// paths through functions `skip` names.
pub(crate) fn entries_where(ptx: &str, seed: impl Fn(&str, &str) -> bool, skip: impl Fn(&str) -> bool) -> Vec<String> {
    reach(ptx, "", &seed, &skip)
}

/// The call-graph walk of [`entries_reaching`] and [`entries_where`]: entries from which
/// `target` (if not empty) or a body satisfying `seed` is reachable.
fn reach(ptx: &str, target: &str, seed: &dyn Fn(&str, &str) -> bool, skip: &dyn Fn(&str) -> bool) -> Vec<String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    // Without comments (a name in a comment is not a call).
    let mut text = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while let Some(at) = rest.find('/') {
        let (before, from) = rest.split_at(at);
        text.push_str(before);
        if from.starts_with("//") {
            rest = from.find('\n').map_or("", |n| &from[n..]);
        } else if from.starts_with("/*") {
            rest = from.find("*/").map_or("", |n| &from[n + 2..]);
        } else {
            text.push('/');
            rest = &from[1..];
        }
    }
    text.push_str(rest);
    let ptx = text.as_str();
    // (name, is_entry, body) for every function with a body; declarations only name functions.
    let mut functions: Vec<(&str, bool, &str)> = Vec::new();
    let mut names: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let bytes = ptx.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    let mut pending: Option<(&str, bool)> = None;
    let mut body_start = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if depth == 0 && c == b'.' {
            let rest = &ptx[i + 1..];
            let kw = rest.split(|ch: char| !is_ident(ch)).next().unwrap_or("");
            if kw == "entry" || kw == "func" {
                let mut j = i + 1 + kw.len();
                let skip_ws = |j: &mut usize| {
                    while *j < bytes.len() && (bytes[*j] as char).is_whitespace() {
                        *j += 1;
                    }
                };
                skip_ws(&mut j);
                if bytes.get(j) == Some(&b'(') {
                    // A `.func`'s return parameters.
                    j = ptx[j..].find(')').map_or(bytes.len(), |n| j + n + 1);
                    skip_ws(&mut j);
                }
                let name_len = ptx[j..].find(|ch: char| !is_ident(ch)).unwrap_or(ptx.len() - j);
                let name = &ptx[j..j + name_len];
                if !name.is_empty() {
                    names.insert(name);
                    pending = Some((name, kw == "entry"));
                }
                i = j + name_len;
                continue;
            }
        }
        match c {
            b';' if depth == 0 => pending = None,
            b'{' => {
                if depth == 0 {
                    body_start = i;
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0
                    && let Some((name, entry)) = pending.take()
                {
                    functions.push((name, entry, &ptx[body_start..=i]));
                }
            }
            _ => {}
        }
        i += 1;
    }
    // Which known functions each body names.
    let calls: Vec<Vec<&str>> = functions
        .iter()
        .map(|&(_, _, body)| {
            let mut v: Vec<&str> = body
                .split(|ch: char| !is_ident(ch))
                .filter(|t| (!target.is_empty() && *t == target) || names.contains(t))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let mut reaches: std::collections::HashSet<&str> = std::collections::HashSet::new();
    if !target.is_empty() {
        reaches.insert(target);
    }
    reaches.extend(functions.iter().filter(|f| !skip(f.0) && seed(f.0, f.2)).map(|f| f.0));
    loop {
        let before = reaches.len();
        for (f, called) in functions.iter().zip(&calls) {
            if !reaches.contains(f.0) && !skip(f.0) && called.iter().any(|c| reaches.contains(c)) {
                reaches.insert(f.0);
            }
        }
        if reaches.len() == before {
            break;
        }
    }
    functions.iter().filter(|f| f.1 && reaches.contains(f.0)).map(|f| f.0.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panic_message<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> String {
        let e = std::panic::catch_unwind(f).err().expect("expected a panic");
        e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap()
    }

    /// Exactly what `cohort_build` is to generate for `cohort_runtime::include_ptx!()`.
    static GENERATED: PtxSet = PtxSet {
        crate_name: "k",
        modules: &[
            PtxModule::new(80, concat!(".version 8.0\n.target sm_80\n.visible .entry add(\n)\n{\n}\n", "\0"))
                .with_ptxas("Cuda compilation tools, release 13.0, V13.0.48")
                .with_resources(&[KernelResources {
                    name: "add",
                    registers: 8,
                    barriers: 0,
                    shared_bytes: 0,
                    stack_frame_bytes: 0,
                    cumulative_stack_bytes: 0,
                    spill_store_bytes: 0,
                    spill_load_bytes: 0,
                }]),
            PtxModule::new(90, concat!(".version 8.0\n.target sm_90\n", "\0")).with_resources(&[]),
        ],
    };

    static WITH_90A: PtxSet = PtxSet {
        crate_name: "k",
        modules: &[
            PtxModule::new(80, concat!(".target sm_80\n", "\0")),
            PtxModule::new(90, concat!(".target sm_90\n", "\0")),
            PtxModule::new(90, concat!(".target sm_90a\n", "\0")).with_arch_specific(),
        ],
    };

    #[test]
    fn arch_specific_modules_only_on_their_exact_compute_capability() {
        let pick = |cc| WITH_90A.select(cc).map(PtxModule::arch_name);
        assert_eq!(pick(90).as_deref(), Some("sm_90a"));
        // Never elsewhere: 10.0 and 12.0 take the portable sm_90, 8.9 the sm_80.
        assert_eq!(pick(100).as_deref(), Some("sm_90"));
        assert_eq!(pick(120).as_deref(), Some("sm_90"));
        assert_eq!(pick(89).as_deref(), Some("sm_80"));
        assert_eq!(pick(75), None);
        assert_eq!(WITH_90A.arch_names(), ["sm_80", "sm_90", "sm_90a"]);
        // Without one, 9.0 takes sm_90.
        assert_eq!(GENERATED.select(90).map(PtxModule::arch_name).as_deref(), Some("sm_90"));
    }

    #[test]
    fn generated_statics_keep_their_fields() {
        assert_eq!(GENERATED.archs(), vec![80, 90]);
        let m = GENERATED.select(89).unwrap();
        assert_eq!((m.arch, m.ptxas.is_some(), m.kernels()), (80, true, vec!["add"]));
        assert_eq!(m.resources_of("add").map(|r| r.registers), Some(8));
        let m = GENERATED.select(120).unwrap();
        assert_eq!((m.arch, m.ptxas, m.resources.len()), (90, None, 0));
    }

    #[test]
    fn text_and_c_string() {
        static M: PtxModule =
            PtxModule::new(80, concat!(".visible .entry add(\n)\n{\n}\n.entry scale (\n)\n{\n}\n", "\0"));
        assert_eq!(M.text(), ".visible .entry add(\n)\n{\n}\n.entry scale (\n)\n{\n}\n");
        assert_eq!(M.text_with_nul(), format!("{}\0", M.text()));
        assert_eq!(M.as_c_str().to_bytes(), M.text().as_bytes());
        assert_eq!(M.kernels(), vec!["add", "scale"]);
        // Only the NUL: empty text.
        assert_eq!(PtxModule::new(80, "\0").text(), "");
    }

    #[test]
    fn nul_problems_are_found() {
        assert_eq!(nul_problem("x\0"), None);
        assert_eq!(nul_problem("\0"), None);
        assert!(nul_problem("").unwrap().contains("end with a NUL"));
        assert!(nul_problem("x").unwrap().contains("end with a NUL"));
        assert!(nul_problem("x\0y").unwrap().contains("end with a NUL"));
        assert_eq!(interior_nul("abc"), None);
        assert_eq!(interior_nul("ab\0c"), Some(2));
    }

    #[test]
    fn new_at_run_time_panics_without_the_final_nul() {
        // Leaked so that the text is `'static` but not a literal the compiler sees.
        let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
        let (no_nul, empty) = (leak(".version 8.0"), leak(""));
        assert!(panic_message(move || PtxModule::new(80, no_nul)).contains("must end with a NUL"));
        assert!(panic_message(move || PtxModule::new(80, empty)).contains("must end with a NUL"));
        // A NUL inside: the driver reads up to it, never past the end.
        let m = PtxModule::new(80, leak(".version\08.0\0"));
        assert_eq!(m.as_c_str().to_bytes(), b".version");
    }

    #[test]
    fn device_launching_entries_through_the_call_graph() {
        let ptx = r#"
.extern .func  (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2
(
	.param .b64 __cudaCDP2LaunchDeviceV2_param_0
)
;
.global .align 1 .b8 table[2] = {1, 2};
.func  (.param .b64 func_retval0) helper(
	.param .b64 helper_param_0
)
{
	{ // callseq 0, 0
	call.uni (retval0), __cudaCDP2LaunchDeviceV2, (param0, param1);
	} // callseq 0
	ret;
}
.func leaf()
{
	ret; // __cudaCDP2LaunchDeviceV2 in a comment is not a call
}
.visible .entry child(
	.param .u64 child_param_0
)
{
	call.uni leaf, ();
	ret;
}
.visible .entry parent(
	.param .u64 parent_param_0
)
{
	mov.u64 %rd1, child;
	{
	call.uni (retval0),
	helper,
	(param0);
	}
	ret;
}
.visible .entry direct()
{
	call.uni (retval0), __cudaCDP2LaunchDeviceV2, (param0, param1);
	ret;
}
"#;
        assert_eq!(entries_reaching(ptx, "__cudaCDP2LaunchDeviceV2"), ["parent", "direct"]);
        assert!(entries_reaching(ptx, "nothing").is_empty());
    }

    #[test]
    fn register_splits_per_entry() {
        let text = concat!(
            ".func split_in_a_callee()\n{\n\tsetmaxnreg.dec.sync.aligned.u32 24;\n\tret;\n}\n",
            ".visible .entry gemm(\n\t.param .u64 gemm_param_0\n)\n.maxntid 384, 1, 1\n{\n",
            "\t@%p1 bra $L1;\n\tsetmaxnreg.dec.sync.aligned.u32 40;\n\tbra.uni $L2;\n",
            "$L1:\n\tsetmaxnreg.inc.sync.aligned.u32 232;\n$L2:\n\tret;\n}\n",
            ".visible .entry plain()\n{\n\tret; // setmaxnreg.inc.sync.aligned.u32 256; in a comment\n}\n",
            ".visible .entry through_a_call()\n.maxnreg 128\n{\n\tcall.uni split_in_a_callee, ();\n\tret;\n}\n",
            ".visible .entry unbounded()\n{\n\tsetmaxnreg.inc.sync.aligned.u32 232;\n\tret;\n}\n",
            "\0"
        );
        let m = PtxModule::new(90, text);
        assert_eq!(m.register_split_of("gemm"), Some((40, 232)));
        assert_eq!(m.register_split_of("plain"), None);
        // Only a callee splits: the whole module's counts (the lowest drop, the highest rise).
        assert_eq!(m.register_split_of("through_a_call"), Some((24, 232)));
        // No `.maxntid` / `.maxnreg`: ptxas drops the `setmaxnreg`s, nothing to check.
        assert_eq!(m.register_split_of("unbounded"), None);
        assert_eq!(m.register_split_of("missing"), None);
    }
}
#[cfg(test)]
mod cpu_fast_path {
    /// Which entries the CPU device runs on its fast path: collectives rule it out through
    /// calls, failure paths (`core::panicking`, `cohort::panic`) don't.
    #[test]
    fn collectives_through_calls_rule_out_the_fast_path_panics_do_not() {
        let ptx = "\
.func _RNvNtCsX_4core9panicking9panic_fmt()\n{\n\tnanosleep.u32 %r1;\n\tret;\n}\n\
.func _RNvNtCsY_6cohort5panic10fail_check()\n{\n\tactivemask.b32 %r1;\n\tret;\n}\n\
.func helper_sync()\n{\n\t@%p1 bar.sync 0;\n\tret;\n}\n\
.func helper_plain()\n{\n\tadd.s32 %r1, %r1, 1;\n\tret;\n}\n\
.visible .entry plain()\n{\n\tcall.uni helper_plain, ();\n\tcall.uni _RNvNtCsX_4core9panicking9panic_fmt, ();\n\t\
call.uni _RNvNtCsY_6cohort5panic10fail_check, ();\n\tret;\n}\n\
.visible .entry synced()\n{\n\tcall.uni helper_sync, ();\n\tret;\n}\n\
.visible .entry shuffles()\n{\n\tshfl.sync.idx.b32 %r1, %r2, 0, 31, -1;\n\tret;\n}\n";
        let mut slow = super::entries_where(
            ptx,
            |_, body| crate::backend::cpu::needs_threads(body),
            crate::backend::cpu::panic_path,
        );
        slow.sort();
        assert_eq!(slow, ["shuffles", "synced"]);
        // Without the failure-path exception every entry would need coroutines.
        assert_eq!(super::entries_where(ptx, |_, body| crate::backend::cpu::needs_threads(body), |_| false).len(), 3);
        // An empty target is no target (every body has empty tokens between separators).
        assert!(super::entries_reaching(ptx, "nothing_here").is_empty());
    }
}

//! Module variables: `constant!` and `global!` statics, found by their typed handles
//! (`cudaMemcpyToSymbol` / `cudaMemcpyFromSymbol`, `cuModuleGetGlobal`).
//!
//! ```ignore
//! let coeffs = module.constant(&my_kernels::COEFFS)?;  // Symbol<[f32; 16]>: name and size checked
//! coeffs.set(gpu.stream(), &[0.5; 16])?;               // stream-ordered, like a copy into a buffer
//! poly.launch(gpu.stream(), cfg, &x, &mut out)?;        // reads the new coefficients
//! let hits: u32 = module.global(&my_kernels::HITS)?.get()?; // waits for the kernels that use it
//! ```
//!
//! **Ordering.** Each loaded module with variables keeps one tracking record (the one buffers
//! use, [`crate::track`]) whose byte ranges are the variables' device addresses. A typed launch
//! of a kernel whose PTX names a variable — in its entry, or in a function or kernel it reaches
//! through calls or addresses — is recorded as a *read* of that variable's range (kernels only
//! read variables or update them atomically: see `cohort::global`). [`Symbol::set`] is a
//! *write* on its stream, so it waits for other streams' launches still using the variable,
//! and later launches on other streams wait for it. [`Symbol::get`] waits on the host for the
//! pending `set`s, and, for globals that kernels update atomically, for every pending launch
//! that uses it. Launches through the `unsafe` raw launchers are not recorded.
//!
//! **Initial values.** At load, each variable gets the value of its `__cohort_init_NAME`
//! static (the macro's initializer), before any kernel of the module can run.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use crate::backend::{ModuleH, StreamH};
use cohort::DeviceCopy;
use cohort::global::{Constant, DeviceGlobal, GlobalValue};

use crate::device::{Doing, GpuInner};
use crate::error::{Error, Result};
use crate::module::{Module, ModuleInner};
use crate::stream::Stream;
use crate::track::{Alloc, Use, run_tracked_in};

/// The prefix of the static that holds a variable's initial value.
const INIT_PREFIX: &str = "__cohort_init_";

/// One `constant!` / `global!` variable of a loaded module.
#[derive(Debug)]
pub(crate) struct Var {
    name: String,
    /// Device address (constant-bank variables have one too: `cuModuleGetGlobal`).
    addr: u64,
    size: usize,
    constant: bool,
}

/// The variables of a loaded module and the record of operations pending on them.
pub(crate) struct ModuleVars {
    vars: Vec<Var>,
    /// The module's record (`ModuleInner::record`): ranges are device addresses (`ptr` is 0,
    /// so nothing is freed when it drops: the module owns the memory, and stays loaded until
    /// the operations recorded here have finished).
    record: Arc<Alloc>,
    /// Per PTX function: the variables and functions it names (read at the first lookup).
    refs: OnceLock<HashMap<String, Refs>>,
    /// On the CPU device: the variables' host memory, which launches of the module hand the
    /// engine.
    pub(crate) cpu: Option<Arc<cohort_cpu::VarTable>>,
}

#[derive(Default)]
struct Refs {
    vars: Vec<usize>,
    functions: Vec<String>,
}

impl ModuleVars {
    /// Finds the module's variables in its PTX (`__cohort_init_NAME` statics beside `.const`
    /// or `.global` declarations of `NAME`) and copies each initial value into its variable.
    /// `None` when the module has none (no cost for modules without variables). `layouts` is
    /// [`layouts`]`(ptx)`, which the module loader has made already.
    pub(crate) fn load(
        gpu: &Arc<GpuInner>,
        module: ModuleH,
        ptx: &str,
        layouts: &HashMap<String, (usize, usize)>,
        record: &Arc<Alloc>,
    ) -> Result<Option<Self>> {
        if !ptx.contains(INIT_PREFIX) {
            return Ok(None);
        }
        if gpu.backend.host_variables() {
            return Ok(Self::load_cpu(ptx, layouts, record));
        }
        let mut vars = Vec::new();
        for (name, constant) in declared(ptx) {
            let Some((addr, size)) = global_of(gpu, module, &name) else { continue };
            let Some((init, init_size)) = global_of(gpu, module, &format!("{INIT_PREFIX}{name}")) else { continue };
            let bytes = size.min(init_size);
            if bytes > 0 {
                // SAFETY: both are live variables of the module, of at least `bytes` bytes.
                unsafe { gpu.backend.copy_dtod(addr, init, bytes) }
                    .map_err(|f| gpu.fail(f, Doing::Call(format!("initializing module variable `{name}`"))))?;
            }
            vars.push(Var { name, addr, size, constant });
        }
        if vars.is_empty() {
            return Ok(None);
        }
        // Device-to-device copies may still run when they return: finish them before any
        // launch (on any stream) can read the variables.
        // SAFETY: the legacy default stream of the current context.
        unsafe { gpu.backend.stream_synchronize(StreamH::NULL) }
            .map_err(|f| gpu.fail(f, Doing::Wait("initializing module variables")))?;
        Ok(Some(Self { vars, record: record.clone(), refs: OnceLock::new(), cpu: None }))
    }

    /// [`ModuleVars::load`] on the CPU device: host memory for each variable, of the size and
    /// alignment its PTX declaration gives. Each variable gets its initial value at its first
    /// lookup, by a kernel or by [`Module::constant`] / [`Module::global`] (the declaration's
    /// host half passes the initializer), so no path sees it uninitialized.
    fn load_cpu(ptx: &str, layouts: &HashMap<String, (usize, usize)>, record: &Arc<Alloc>) -> Option<Self> {
        let declared: Vec<(String, bool, usize, usize)> = declared(ptx)
            .into_iter()
            .filter_map(|(name, constant)| {
                let &(size, align) = layouts.get(&name)?;
                Some((name, constant, size, align))
            })
            .collect();
        if declared.is_empty() {
            return None;
        }
        let table = cohort_cpu::VarTable::new(
            declared.iter().map(|(n, constant, size, align)| (n.clone(), *size, *align, *constant)),
        );
        let vars = declared
            .into_iter()
            .map(|(name, constant, size, _)| {
                let (addr, _) = table.get(&name).expect("the table has every declared variable");
                Var { name, addr, size, constant }
            })
            .collect();
        Some(Self { vars, record: record.clone(), refs: OnceLock::new(), cpu: Some(table) })
    }

    /// The uses a launch of entry `kernel` makes: a read of every variable the entry reaches.
    pub(crate) fn kernel_uses(&self, ptx: &str, kernel: &str) -> KernelVars {
        let refs = self.refs.get_or_init(|| references(ptx, &self.vars));
        let found = reachable(refs, kernel);
        KernelVars {
            ranges: found.iter().map(|&i| (self.vars[i].addr, self.vars[i].size)).collect(),
            record: self.record.clone(),
        }
    }
}

/// The variables one kernel uses, recorded with each of its typed launches.
pub(crate) struct KernelVars {
    ranges: Vec<(u64, usize)>,
    record: Arc<Alloc>,
}

impl KernelVars {
    /// Whether the kernel uses no variable (its launches then cost nothing more).
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// `uses` and a read of each variable.
    pub(crate) fn with<'a>(&'a self, uses: &[Use<'a>]) -> Vec<Use<'a>> {
        let mut all: Vec<Use<'a>> = uses
            .iter()
            .map(|u| Use {
                alloc: u.alloc,
                owner: u.owner,
                start: u.start,
                end: u.end,
                write: u.write,
                shared: u.shared,
                foreign: u.foreign,
            })
            .collect();
        all.extend(self.ranges.iter().map(|&(addr, size)| Use::new(&self.record, range(addr, size), false)));
        all
    }
}

fn reachable(refs: &HashMap<String, Refs>, kernel: &str) -> Vec<usize> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut stack = vec![kernel];
    let mut found: Vec<usize> = Vec::new();
    while let Some(f) = stack.pop() {
        if !seen.insert(f) {
            continue;
        }
        if let Some(r) = refs.get(f) {
            found.extend(&r.vars);
            stack.extend(r.functions.iter().map(String::as_str));
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

fn range(addr: u64, size: usize) -> std::ops::Range<usize> {
    addr as usize..addr as usize + size.max(1)
}

/// `cuModuleGetGlobal`: the address and size of `name`, if the module has it.
fn global_of(gpu: &GpuInner, module: ModuleH, name: &str) -> Option<(u64, usize)> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: live module of the current context (the caller bound it).
    unsafe { gpu.backend.global(module, &c) }
}

/// The variables the PTX declares with an initial-value static: `(name, in .const space)`.
fn declared(ptx: &str) -> Vec<(String, bool)> {
    let mut inits = HashSet::new();
    let mut decls = Vec::new();
    for line in ptx.lines() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix(".visible ") else { continue };
        let constant = rest.starts_with(".const ");
        if !constant && !rest.starts_with(".global ") {
            continue;
        }
        // `.visible .const .align 4 .b8 NAME[64];` (and `= {…}` for initialized ones).
        let Some(name) = rest.split('[').next().and_then(|h| h.split_whitespace().last()) else { continue };
        match name.strip_prefix(INIT_PREFIX) {
            Some(var) => {
                inits.insert(var.to_string());
            }
            None => decls.push((name.to_string(), constant)),
        }
    }
    decls.retain(|(n, _)| inits.contains(n));
    decls
}

/// The size and alignment of every `.const` / `.global` variable the PTX declares
/// (`.visible .global .align 4 .b8 NAME[64];`). The module loader also asks it whether the
/// optional globals (panic record, launch budget) exist before looking them up: a failed
/// `cuModuleGetGlobal` is an error to tools such as compute-sanitizer, which report it.
pub(crate) fn layouts(ptx: &str) -> HashMap<String, (usize, usize)> {
    let mut out = HashMap::new();
    for line in ptx.lines() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix(".visible ") else { continue };
        if !rest.starts_with(".const ") && !rest.starts_with(".global ") {
            continue;
        }
        let mut words = rest.split_whitespace();
        let align = words.clone().skip_while(|w| *w != ".align").nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
        let Some(decl) = words.find(|w| w.contains('[')) else { continue };
        let Some((name, size)) = decl.split_once('[') else { continue };
        let Some(size) = size.split(']').next().and_then(|n| n.parse().ok()) else { continue };
        out.insert(name.to_string(), (size, align));
    }
    out
}

/// The name of the function a PTX line declares or defines (`.entry k(`, `.func (…) f(`).
fn header_name(t: &str) -> Option<&str> {
    let mut rest = t;
    for q in [".visible ", ".weak ", ".extern "] {
        rest = rest.strip_prefix(q).unwrap_or(rest);
    }
    let rest = rest.strip_prefix(".entry ").or_else(|| rest.strip_prefix(".func "))?.trim_start();
    // A return parameter list comes first: `.func (.param .b32 func_retval0) name(`.
    let rest = match rest.strip_prefix('(') {
        Some(r) => r.split_once(')')?.1.trim_start(),
        None => rest,
    };
    let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// For every function defined in the PTX, the variables and the functions its body names.
fn references(ptx: &str, vars: &[Var]) -> HashMap<String, Refs> {
    let var_index: HashMap<&str, usize> = vars.iter().enumerate().map(|(i, v)| (v.name.as_str(), i)).collect();
    let functions: HashSet<&str> = ptx.lines().filter_map(|l| header_name(l.trim_start())).collect();
    let mut out: HashMap<String, Refs> = HashMap::new();
    // The function whose header or body we are in, and what its body named so far.
    let mut current: Option<(&str, Refs)> = None;
    let mut depth = 0i64;
    for line in ptx.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if depth == 0 {
            if let Some(name) = header_name(t) {
                current = Some((name, Refs::default()));
            }
            if current.is_none() {
                continue;
            }
            if !t.contains('{') {
                if t.ends_with(';') {
                    current = None; // a declaration without a body
                }
                continue;
            }
        }
        let Some((f, refs)) = current.as_mut() else { continue };
        depth += t.matches('{').count() as i64 - t.matches('}').count() as i64;
        for tok in t.split(|c: char| !is_ident(c)).filter(|s| !s.is_empty()) {
            if let Some(&i) = var_index.get(tok) {
                refs.vars.push(i);
            } else if tok != *f && functions.contains(tok) {
                refs.functions.push(tok.to_string());
            }
        }
        if depth <= 0 {
            depth = 0;
            if let Some((f, refs)) = current.take() {
                out.insert(f.to_string(), refs);
            }
        }
    }
    out
}

/// A `constant!` or `global!` variable of a loaded module, typed: what the host reads and
/// writes (`T` is the host's value: `u32` for an `AtomicU32` global).
pub struct Symbol<T> {
    module: Arc<ModuleInner>,
    index: usize,
    device_writes: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Symbol<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.var();
        f.debug_struct("Symbol")
            .field("name", &v.name)
            .field("constant", &v.constant)
            .field("bytes", &v.size)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T> Symbol<T> {
    fn vars(&self) -> &ModuleVars {
        self.module.vars.as_ref().expect("a symbol exists only for a module with variables")
    }

    fn var(&self) -> &Var {
        &self.vars().vars[self.index]
    }
}

impl<T: DeviceCopy> Symbol<T> {
    /// The PTX name of the variable.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.var().name
    }

    /// Its device address (`cuModuleGetGlobal`), for interop; accesses through it are not
    /// ordered by Cohort.
    #[must_use]
    pub fn device_ptr(&self) -> u64 {
        self.var().addr
    }

    /// Whether it is in constant memory (`constant!`) rather than global memory.
    #[must_use]
    pub fn is_constant(&self) -> bool {
        self.var().constant
    }

    /// Writes `value` into the variable on `stream` (`cudaMemcpyToSymbolAsync`), ordered as a
    /// write: after the launches on other streams that still use the variable, and before
    /// later launches on other streams that use it. The value is copied before this returns,
    /// so `value` may change afterwards.
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for a stream of another context (or device) than the module's;
    /// [`Error::Argument`] while `stream` is in a graph capture (a replay would copy host memory
    /// that is gone), or from another thread than the one capturing it; a driver failure.
    pub fn set(&self, stream: &Stream, value: &T) -> Result<()> {
        let v = self.var();
        let gpu = &self.module.gpu;
        crate::peer::require_same(
            || format!("setting module variable `{}`", v.name),
            gpu,
            &stream.inner.gpu,
            "set a module variable on a stream of the Gpu its module was loaded on",
        )?;
        let gate = stream.inner.gate_with(|| format!("setting module variable `{}`", v.name))?;
        if gate.capture().is_some() {
            return Err(Error::Argument(format!(
                "setting module variable `{}` cannot be captured into a graph: set it before capturing or between replays",
                v.name
            )));
        }
        let bytes = size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        // A copy on this thread's stack: pageable memory, which the driver stages before the
        // copy call returns (a pinned source would be read later, after `value` may change).
        let staged: T = *value;
        gpu.bind()?;
        run_tracked_in(&stream.inner, &gate, &[Use::new(&self.vars().record, range(v.addr, v.size), true)], || {
            // On the CPU device: not while a launch of the module runs (on another thread).
            let _guard = self.vars().cpu.as_ref().map(|t| t.host_guard());
            // SAFETY: the variable has `size_of::<T>()` bytes (checked at lookup); `staged` is
            // a live `T` whose bytes are all initialized (`DeviceCopy`: no padding); pageable,
            // so it is read before the call returns; the stream is of the module's context
            // (checked above), which is current; the tracker ordered the copy.
            unsafe { gpu.backend.copy_htod_async(v.addr, (&raw const staged).cast(), bytes, stream.inner.raw) }
                .map_err(|f| gpu.fail(f, Doing::Call(format!("setting module variable `{}`", v.name))))
        })
    }

    /// Reads the variable (`cudaMemcpyFromSymbol`), after waiting on the host for the pending
    /// `set`s, and, when kernels update it (atomics), for the pending launches that use it.
    ///
    /// # Errors
    /// A kernel failure seen while waiting; a driver failure.
    pub fn get(&self) -> Result<T> {
        let v = self.var();
        let bytes = size_of::<T>();
        if bytes == 0 {
            // SAFETY: a zero-sized `DeviceCopy` type has exactly one value, which has no bytes.
            return Ok(unsafe { std::mem::zeroed() });
        }
        let gpu = &self.module.gpu;
        self.vars().record.host_access(range(v.addr, v.size), self.device_writes, "reading a module variable", || {
            gpu.bind()?;
            // On the CPU device: not while a launch of the module runs (on another thread).
            let _guard = self.vars().cpu.as_ref().map(|t| t.host_guard());
            let mut out = std::mem::MaybeUninit::<T>::uninit();
            // SAFETY: the variable has `size_of::<T>()` bytes; `out` has room for them;
            // synchronous; no pending operation writes the variable (waited above).
            unsafe { gpu.backend.copy_dtoh(out.as_mut_ptr().cast(), v.addr, bytes) }
                .map_err(|f| gpu.fail(f, Doing::Call(format!("reading module variable `{}`", v.name))))?;
            // SAFETY: every byte was written; `DeviceCopy` types are valid for any bits.
            Ok(unsafe { out.assume_init() })
        })
    }
}

impl Module {
    fn symbol<T: DeviceCopy>(&self, name: &str, constant: bool, device_writes: bool) -> Result<Symbol<T>> {
        // `set` and `get` copy its bytes between host and device: no padding.
        cohort::assert_no_padding::<T>();
        let what = if constant { "constant" } else { "global" };
        let crate_name = self.inner.set.crate_name;
        let missing = || {
            Error::Argument(format!(
                "the module of `{crate_name}` (sm_{}) has no {what} `{name}`: is it declared with `cohort::{what}!` in \
                 that kernels crate?",
                self.inner.ptx.arch
            ))
        };
        let vars = self.inner.vars.as_ref().ok_or_else(missing)?;
        let index = vars.vars.iter().position(|v| v.name == name && v.constant == constant).ok_or_else(missing)?;
        let size = vars.vars[index].size;
        let want = size_of::<T>().max(1);
        if size != want {
            return Err(Error::Argument(format!(
                "{what} `{name}` of `{crate_name}` has {size} B in the module, but the host's handle is a `{}` of {want} B: \
                 the kernels and the host were built from different declarations",
                std::any::type_name::<T>()
            )));
        }
        Ok(Symbol { module: self.inner.clone(), index, device_writes, _t: PhantomData })
    }

    /// The variable a [`cohort::constant!`] static declares, typed by its handle
    /// (`module.constant(&my_kernels::COEFFS)?.set(&stream, &coeffs)?`).
    ///
    /// # Errors
    /// [`Error::Argument`] when the module has no such constant, or has it with another size.
    pub fn constant<T: DeviceCopy>(&self, handle: &Constant<T>) -> Result<Symbol<T>> {
        let symbol = self.symbol(handle.name(), true, false)?;
        self.init_on_cpu(|| handle.__host_addr());
        Ok(symbol)
    }

    /// On the CPU device: looks the variable up through its handle's host address function in
    /// this module's variables, which gives it its initial value if no kernel has used it yet.
    fn init_on_cpu(&self, addr: impl FnOnce() -> u64) {
        if let Some(table) = self.inner.vars.as_ref().and_then(|v| v.cpu.as_ref()) {
            cohort_cpu::with_module_vars(table, addr);
        }
    }

    /// The variable a [`cohort::global!`] static declares, typed by its handle: the host sees
    /// `T::Host` (`u32` for an `AtomicU32`).
    ///
    /// # Errors
    /// [`Error::Argument`] when the module has no such global, or has it with another size.
    pub fn global<T: GlobalValue>(&self, handle: &DeviceGlobal<T>) -> Result<Symbol<T::Host>> {
        let symbol = self.symbol(handle.name(), false, T::DEVICE_WRITES)?;
        self.init_on_cpu(|| handle.__host_addr());
        Ok(symbol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.visible .const .align 4 .b8 C[16];
.visible .global .align 4 .b8 G[4];
.visible .global .align 4 .b8 OTHER[4];
.visible .global .align 4 .b8 __cohort_init_C[16] = {0, 0, 128, 63};
.visible .global .align 4 .b8 __cohort_init_G[4];
.extern .func (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0
)
;
.func (.param .b32 func_retval0) helper(
\t.param .b32 helper_param_0
)
{
\tmov.u64 %rd1, G;
\t{ // callseq
\tcall.uni (retval0), vprintf, (param0);
\t}
\tret;
}
.visible .entry uses_c(
\t.param .u64 uses_c_param_0
)
.maxntid 256, 1, 1
{
\t// mov.u64 %rd9, G;  (a comment)
\tmov.u64 %rd1, C;
\tld.const.b32 %r1, [%rd1];
\tret;
}
.visible .entry uses_g_through_helper()
{
\tcall.uni (retval0), helper, (param0);
\tret;
}
.visible .entry none()
{
\tmov.u64 %rd1, OTHER;
\tret;
}
";

    fn vars() -> Vec<Var> {
        declared(PTX)
            .into_iter()
            .enumerate()
            .map(|(i, (name, constant))| Var { name, addr: 0x1000 * (i as u64 + 1), size: 4, constant })
            .collect()
    }

    #[test]
    fn declared_variables_are_those_with_an_initial_value() {
        assert_eq!(declared(PTX), vec![("C".to_string(), true), ("G".to_string(), false)]);
    }

    #[test]
    fn layouts_of_declarations() {
        let l = layouts(PTX);
        assert_eq!(l.get("C"), Some(&(16, 4)));
        assert_eq!(l.get("G"), Some(&(4, 4)));
        assert_eq!(l.get("__cohort_init_C"), Some(&(16, 4)));
        // A use is not a declaration; a prefix of a name is another name.
        assert_eq!(l.get("vprintf"), None);
        assert_eq!(l.get("OTHE"), None);
    }

    #[test]
    fn header_names() {
        assert_eq!(header_name(".visible .entry uses_c("), Some("uses_c"));
        assert_eq!(header_name(".func (.param .b32 func_retval0) helper("), Some("helper"));
        assert_eq!(header_name(".extern .func (.param .b32 func_retval0) vprintf"), Some("vprintf"));
        assert_eq!(header_name(".visible .global .align 4 .b8 G[4];"), None);
    }

    #[test]
    fn kernels_reach_variables_through_calls() {
        let vars = vars();
        let refs = references(PTX, &vars);
        let reach = |k: &str| reachable(&refs, k).iter().map(|&i| vars[i].name.clone()).collect::<Vec<_>>();
        assert_eq!(reach("uses_c"), vec!["C"], "a commented-out reference does not count");
        assert_eq!(reach("uses_g_through_helper"), vec!["G"]);
        assert!(reach("none").is_empty(), "OTHER has no initial-value static: not a Cohort variable");
    }
}

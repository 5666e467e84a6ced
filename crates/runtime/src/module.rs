//! Loaded modules and their kernels.

use std::ffi::CString;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use cohort::panic::{PANIC_RECORD_SYMBOL, PanicRecord};

use crate::backend::{Fault, FuncH, FuncInfo, HostAlloc, HostKernel, LaunchMode, ModuleH, ModuleSource};
use crate::device::GpuInner;
use crate::error::{Error, Result};
use crate::launch::{Dim3, LaunchConfig};
use crate::ptx::{PtxModule, PtxSet};
use crate::stream::Stream;
use crate::track::{Use, run_tracked_in};

/// Host-mapped memory where a panicking kernel thread leaves its location.
pub(crate) struct PanicSlot {
    host: *mut PanicRecord,
}

// SAFETY: the pointer is to pinned host memory owned by the module; reads are volatile and the
// device writes it only before trapping.
unsafe impl Send for PanicSlot {}

impl PanicSlot {
    pub(crate) fn read(&self) -> Option<String> {
        // SAFETY: `host` points at a live, pinned `PanicRecord` (freed only after the slot is
        // removed from the registry).
        let rec = unsafe { std::ptr::read_volatile(self.host) };
        (rec.claimed != 0).then(|| {
            let what = match rec.check_text() {
                Some(check) => format!("{check}; "),
                None => String::new(),
            };
            format!(
                "{what}panicked at {}:{}:{} in block ({},{},{}) thread ({},{},{})",
                rec.file(),
                rec.line,
                rec.column,
                rec.block[0],
                rec.block[1],
                rec.block[2],
                rec.thread[0],
                rec.thread[1],
                rec.thread[2]
            )
        })
    }
}

pub(crate) struct ModuleInner {
    raw: ModuleH,
    pub(crate) gpu: Arc<GpuInner>,
    pub(crate) set: &'static PtxSet,
    pub(crate) ptx: &'static PtxModule,
    /// The record of the operations that use the module: every typed launch of its kernels
    /// reads `CODE` of it (and the variables it uses, at their device addresses; `Symbol::set`
    /// writes those). It keeps the module loaded ([`Loaded`]) until they have all finished
    /// and the last handle is gone: this one, or a graph that captured one of its kernels.
    pub(crate) record: Arc<crate::track::Alloc>,
    /// Entries and ABI records of the PTX, read on the first typed `load`.
    abi_index: std::sync::OnceLock<crate::abi::Index>,
    /// Its `constant!` / `global!` variables, if it has any.
    pub(crate) vars: Option<crate::symbol::ModuleVars>,
    /// The device-side launch budget, for a module whose kernels launch kernels, with the
    /// kernels that can (from the PTX's call graph).
    launch_budget: Option<(crate::budget::LaunchBudget, Vec<String>)>,
}

/// The range of a module's record ([`ModuleInner::record`]) that stands for its code: every
/// launch of one of its kernels reads it. (Variables are recorded at their device addresses,
/// never 0.)
const CODE: std::ops::Range<usize> = 0..1;

/// A loaded module's driver resources: unloaded when dropped, which its record does only once
/// every operation recorded on it has finished (`track::Alloc`'s drop waits, then drops what it
/// keeps). A kernel still running, or a graph that can still replay one of its kernels, so
/// never finds its code, its variables or its panic record gone.
struct Loaded {
    raw: ModuleH,
    panic_host: *mut PanicRecord,
    gpu: Arc<GpuInner>,
}

// SAFETY: a CUmodule and the pinned panic record may be released from any thread; nothing else
// uses them once this is dropped.
unsafe impl Send for Loaded {}
// SAFETY: as above (it is only dropped).
unsafe impl Sync for Loaded {}

impl Drop for Loaded {
    fn drop(&mut self) {
        if !self.panic_host.is_null() {
            let mut slots = self.gpu.panic_records.lock().unwrap_or_else(|p| p.into_inner());
            slots.retain(|s| s.host != self.panic_host);
        }
        // (Inside a host function `bind` refuses: the module is leaked, not unloaded.)
        if self.gpu.bind().is_ok() {
            // SAFETY: handles we own; no operation uses them any more (the record that drops
            // this waited for every launch and variable access; graphs keep the record), and
            // no handle that could start one is left (they hold the record too).
            unsafe {
                let _ = self.gpu.backend.unload_module(self.raw);
                if !self.panic_host.is_null() {
                    let _ = self.gpu.backend.free_host(self.panic_host.cast());
                }
            }
        }
    }
}

/// A PTX module loaded on a [`Gpu`](crate::Gpu): look kernels up in it with their generated
/// `load` (`vector_add::load(&module)`).
///
/// The driver module is unloaded once the `Module`, its launchers and every graph that captured
/// one of its kernels are gone *and* every launch of its kernels has finished: dropping the
/// handles while a kernel still runs does not pull its code, variables or panic record from
/// under it (the last drop waits for those launches, as dropping a buffer waits for its users).
#[derive(Clone)]
pub struct Module {
    pub(crate) inner: Arc<ModuleInner>,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module").field("crate", &self.inner.set.crate_name).field("arch", &self.inner.ptx.arch).finish()
    }
}

/// How the driver compiles a module's PTX (`cuModuleLoadDataEx` JIT options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Compile every kernel so that blocks of this many threads fit
    /// (`CU_JIT_THREADS_PER_BLOCK`: CUDA C++'s `__launch_bounds__` for the whole module).
    pub threads_per_block: Option<u32>,
    /// Registers per thread, at most (`CU_JIT_MAX_REGISTERS`: nvcc's `-maxrregcount`).
    pub max_registers: Option<u32>,
}

impl LoadOptions {
    /// No options: the driver's defaults.
    #[must_use]
    pub const fn new() -> Self {
        Self { threads_per_block: None, max_registers: None }
    }
    /// See [`LoadOptions::threads_per_block`].
    #[must_use]
    pub const fn threads_per_block(mut self, n: u32) -> Self {
        self.threads_per_block = Some(n);
        self
    }
    /// See [`LoadOptions::max_registers`].
    #[must_use]
    pub const fn max_registers(mut self, n: u32) -> Self {
        self.max_registers = Some(n);
        self
    }
}

impl Module {
    pub(crate) fn load(gpu: &Arc<GpuInner>, set: &'static PtxSet, options: LoadOptions) -> Result<Self> {
        let cc = gpu.info.cc();
        let ptx = set.select(cc).ok_or_else(|| Error::NoCompatiblePtx {
            crate_name: set.crate_name,
            device: gpu.info.name.clone(),
            compute_capability: cc,
            available: set.archs(),
        })?;
        // Checked mode tells collectives' calls apart by numbers cohort-build gives its markers.
        if ptx.ptx.contains(cohort::raw::SITE_MARKER_UNNUMBERED) {
            return Err(Error::UnnumberedSiteMarkers { crate_name: set.crate_name, arch: ptx.arch });
        }
        gpu.bind()?;
        // Only a device that compiles PTX links it with the device runtime (the CPU device
        // runs device-side launches on its engine's queue).
        let device_runtime = if ptx.needs_device_runtime() && gpu.backend.links_device_runtime() {
            Some(ptx.device_runtime.ok_or(Error::NoDeviceRuntime { crate_name: set.crate_name, arch: ptx.arch })?)
        } else {
            None
        };
        let source = ModuleSource {
            module: ptx,
            device_runtime,
            threads_per_block: options.threads_per_block,
            max_registers: options.max_registers,
        };
        let raw = gpu.backend.load_module(&source).map_err(|failure| match failure.fault {
            Fault::Driver(code) => {
                let log = if failure.step.is_empty() {
                    failure.log
                } else {
                    format!("{} failed\n{}", failure.step, failure.log)
                };
                Error::ModuleLoad { crate_name: set.crate_name, arch: ptx.arch, code, log }
            }
            fault => fault.into_error(format!("loading the sm_{} module of `{}`", ptx.arch, set.crate_name)),
        })?;
        // Unloaded (with its panic record) when the last operation and handle are gone, or
        // now if what follows fails.
        let mut loaded = Loaded { raw, panic_host: std::ptr::null_mut(), gpu: gpu.clone() };
        // The variables the module declares: the optional globals are looked up only if there.
        let globals = crate::symbol::layouts(ptx.ptx);
        loaded.panic_host = register_panic_record(gpu, raw, globals.contains_key(PANIC_RECORD_SYMBOL))?;
        let record = Arc::new(
            crate::track::Alloc::new(gpu, 0, std::ptr::null_mut(), crate::track::AllocKind::Device)
                .keeping(Box::new(loaded)),
        );
        let vars = crate::symbol::ModuleVars::load(gpu, raw, ptx.ptx, &globals, &record)?;
        let launch_budget = if ptx.needs_device_runtime() {
            crate::budget::LaunchBudget::find(&*gpu.backend, raw, &globals).map(|b| (b, ptx.device_launching_kernels()))
        } else {
            None
        };
        Ok(Self {
            inner: Arc::new(ModuleInner {
                raw,
                gpu: gpu.clone(),
                set,
                ptx,
                record,
                abi_index: std::sync::OnceLock::new(),
                vars,
                launch_budget,
            }),
        })
    }

    /// The architecture of the PTX that was loaded.
    #[must_use]
    pub fn arch(&self) -> u32 {
        self.inner.ptx.arch
    }

    /// The embedded PTX module that was loaded.
    #[must_use]
    pub fn ptx(&self) -> &'static PtxModule {
        self.inner.ptx
    }

    /// Looks up kernel `name`. Generated `load` functions call this; call it yourself only for
    /// kernels you launch with [`Function::launch_raw`].
    ///
    /// # Errors
    /// [`Error::KernelNotFound`].
    pub fn function(&self, name: &str, cooperative: bool) -> Result<Function> {
        Function::new(self, name, cooperative)
    }

    /// Looks up kernel `name` for a typed launcher: first checks that the entry was built from
    /// the same `#[kernel]` declaration as the launcher, whose ABI record is `abi` (generated
    /// `load` functions call this with `kernel::ABI`).
    ///
    /// # Errors
    /// [`Error::AbiMismatch`] naming the first difference (parameter count, a parameter's
    /// kind, size or alignment, cooperative or not, the entry's `.param` list), or
    /// [`Error::KernelNotFound`].
    pub fn kernel(&self, name: &str, cooperative: bool, abi: &[u8]) -> Result<Function> {
        let index = self.inner.abi_index.get_or_init(|| crate::abi::index(self.inner.ptx.ptx));
        match index.get(name) {
            None => Err(Error::KernelNotFound { name: name.to_string(), crate_name: self.inner.set.crate_name }),
            Some(info) => crate::abi::check(Some(info), abi).map_err(|detail| Error::AbiMismatch {
                kernel: name.to_string(),
                crate_name: self.inner.set.crate_name,
                detail,
            }),
        }?;
        let mut f = Function::new(self, name, cooperative)?;
        f.required_block = crate::abi::required_block(abi).map(|[x, y, z]| Dim3::new(x, y, z));
        // A dependent kernel's record (the same as the module's, checked above): may it be
        // launched programmatically, and does the loaded entry wait? (`crate::pdl`)
        f.programmatic = crate::pdl::classify(
            self.inner.ptx,
            name,
            crate::abi::dependent(abi),
            self.inner.gpu.backend.programmatic_overlap(),
        );
        Ok(f)
    }

    /// [`Module::kernel`], with the kernel's host entry `cpu` (generated `load` functions call
    /// this), which runs it on the CPU device.
    ///
    /// # Safety
    /// `cpu` must be the host entry `#[kernel]` generated for the entry `name` from the same
    /// declaration as the ABI record `abi`: the CPU device calls it with the parameter array of
    /// launches of `name`.
    ///
    /// # Errors
    /// As [`Module::kernel`].
    #[doc(hidden)]
    pub unsafe fn kernel_with_entry(
        &self,
        name: &str,
        cooperative: bool,
        abi: &[u8],
        cpu: crate::cpu::CpuEntry,
    ) -> Result<Function> {
        let mut f = self.kernel(name, cooperative, abi)?;
        f.cpu_entry = Some(cpu);
        Ok(f)
    }
}

/// The launch mode of a plain or cooperative launch.
#[inline]
fn mode(cooperative: bool) -> LaunchMode {
    if cooperative { LaunchMode::Cooperative } else { LaunchMode::Plain }
}

/// The check [`Module::kernel`] makes, on PTX text alone (no GPU needed): whether entry `name`
/// of `ptx` was built from the declaration whose ABI record is `abi`.
///
/// # Errors
/// [`Error::KernelNotFound`] or [`Error::AbiMismatch`], as [`Module::kernel`].
pub fn check_kernel_abi(set: &PtxSet, ptx: &PtxModule, name: &str, abi: &[u8]) -> Result<()> {
    let index = crate::abi::index(ptx.ptx);
    match index.get(name) {
        None => Err(Error::KernelNotFound { name: name.to_string(), crate_name: set.crate_name }),
        Some(info) => crate::abi::check(Some(info), abi).map_err(|detail| Error::AbiMismatch {
            kernel: name.to_string(),
            crate_name: set.crate_name,
            detail,
        }),
    }
}

/// Allocates the host-mapped [`PanicRecord`] and stores its device address in the module's
/// `cohort_panic_record` global (absent when the kernels crate has no Cohort panic handler).
fn register_panic_record(gpu: &Arc<GpuInner>, module: ModuleH, declared: bool) -> Result<*mut PanicRecord> {
    if !declared {
        return Ok(std::ptr::null_mut());
    }
    let sym = CString::new(PANIC_RECORD_SYMBOL).expect("no NUL in the symbol");
    // SAFETY: live module of the current context.
    let Some((global, size)) = (unsafe { gpu.backend.global(module, &sym) }) else { return Ok(std::ptr::null_mut()) };
    if size != std::mem::size_of::<u64>() {
        return Ok(std::ptr::null_mut());
    }
    let drv = |what: &str| {
        let what = what.to_string();
        move |fault: Fault| fault.into_error(what)
    };
    // Pinned, device-mapped host memory of the record's size (not portable: this context's).
    let host = gpu
        .backend
        .alloc_host(std::mem::size_of::<PanicRecord>(), HostAlloc { portable: false, write_combined: false })
        .map_err(drv("allocating the panic record"))?
        .cast::<PanicRecord>();
    // SAFETY: `host` is a fresh allocation of the right size and alignment (pinned pages).
    unsafe { host.write(PanicRecord::EMPTY) };
    // SAFETY: `host` was allocated mapped.
    let dev = unsafe { gpu.backend.host_device_ptr(host.cast()) }.map_err(drv("mapping the panic record"))?;
    // SAFETY: `global` is the module's 8-byte pointer variable.
    unsafe { gpu.backend.copy_htod(global, (&raw const dev).cast(), 8) }
        .map_err(drv("registering the panic record"))?;
    gpu.panic_records.lock().unwrap_or_else(|p| p.into_inner()).push(PanicSlot { host });
    Ok(host)
}

/// Attributes of a loaded kernel, read once at load.
#[derive(Debug, Clone, Copy)]
pub struct FunctionAttributes {
    /// Most threads per block this kernel can be launched with (registers can lower it below
    /// the device's 1024).
    pub max_threads_per_block: u32,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory, bytes.
    pub static_shared_bytes: u32,
    /// Local memory per thread (stack, spills), bytes.
    pub local_bytes: u32,
    /// Constant memory, bytes.
    pub const_bytes: u32,
    /// PTX ISA version × 10 of the module.
    pub ptx_version: u32,
    /// SASS architecture × 10 the driver compiled it for.
    pub binary_version: u32,
}

/// A kernel in a loaded module, with its attributes and launch checks. Generated launchers
/// wrap one; use it directly for occupancy queries and configuration helpers.
pub struct Function {
    raw: FuncH,
    name: Arc<str>,
    cooperative: bool,
    /// The block shape the kernel's `BlockShape` parameter requires, if it has one.
    required_block: Option<Dim3>,
    attrs: FunctionAttributes,
    dyn_smem_limit: AtomicU32,
    occupancy: Mutex<Vec<(u32, u32, u32)>>,
    /// The module variables the kernel uses, recorded with each typed launch (`None`: none).
    vars: Option<crate::symbol::KernelVars>,
    /// Whether the kernel can launch kernels from the device: its host launches are budgeted.
    pub(crate) device_launches: bool,
    /// The kernel's host entry, which runs it on the CPU device (set by generated launchers).
    pub(crate) cpu_entry: Option<crate::cpu::CpuEntry>,
    /// On the CPU device: whether its PTX reaches no barrier or collective (the fast path).
    pub(crate) cpu_fast_path: bool,
    /// Whether (and how) it may be launched programmatically (`#[kernel(dependent)]`).
    programmatic: crate::pdl::Programmatic,
    module: Arc<ModuleInner>,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function").field("name", &self.name).field("attributes", &self.attrs).finish()
    }
}

impl Function {
    fn new(module: &Module, name: &str, cooperative: bool) -> Result<Self> {
        let m = &module.inner;
        m.gpu.bind()?;
        let cname = CString::new(name).map_err(|_| Error::Argument(format!("kernel name {name:?} contains NUL")))?;
        // SAFETY: live module of the current context.
        let found = unsafe { m.gpu.backend.function(m.raw, &cname) }
            .map_err(|fault| fault.into_error(format!("reading the attributes of kernel `{name}`")))?;
        let Some((raw, info)) = found else {
            return Err(Error::KernelNotFound { name: name.to_string(), crate_name: m.set.crate_name });
        };
        let attrs = FunctionAttributes {
            max_threads_per_block: info.max_threads_per_block,
            registers: info.registers,
            static_shared_bytes: info.static_shared_bytes,
            local_bytes: info.local_bytes,
            const_bytes: info.const_bytes,
            ptx_version: info.ptx_version,
            binary_version: info.binary_version,
        };
        let (vars, device_launches, cpu_fast_path) = match info.host {
            // Compiled and run by the device: its launches record the variables they read; it
            // launches kernels if its module has a launch budget that names it.
            None => (
                m.vars.as_ref().map(|v| v.kernel_uses(m.ptx.ptx, name)).filter(|k| !k.is_empty()),
                m.launch_budget.as_ref().is_some_and(|(_, names)| names.iter().any(|n| n == name)),
                false,
            ),
            // Run through its host entry (the CPU device), which runs it to its end at once;
            // its host launches get a launch budget from the engine.
            Some(host) => (None, host.device_launches, !cooperative && host.fast_path),
        };
        Ok(Self {
            raw,
            name: Arc::from(name),
            cooperative,
            required_block: None,
            attrs,
            dyn_smem_limit: AtomicU32::new(info.max_dynamic_shared),
            occupancy: Mutex::new(Vec::new()),
            vars,
            device_launches,
            cpu_entry: None,
            cpu_fast_path,
            programmatic: crate::pdl::Programmatic::No,
            module: m.clone(),
        })
    }

    /// On the CPU device, whether launches take the engine's fast path (no coroutines): the
    /// kernel reaches no barrier, warp collective or `nanosleep` and is not cooperative. `false`
    /// on a GPU.
    #[must_use]
    pub fn cpu_fast_path(&self) -> bool {
        self.cpu_fast_path
    }

    /// The kernel's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel's name, shared.
    pub(crate) fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    /// On the CPU device: its module's variables (`constant!` / `global!`), if it has any.
    pub(crate) fn cpu_vars(&self) -> Option<&Arc<cohort_cpu::VarTable>> {
        self.module.vars.as_ref().and_then(|v| v.cpu.as_ref())
    }

    /// The context the kernel was loaded into.
    pub(crate) fn module_gpu(&self) -> &GpuInner {
        &self.module.gpu
    }

    /// Attributes read at load.
    #[must_use]
    pub fn attributes(&self) -> &FunctionAttributes {
        &self.attrs
    }

    /// The raw handle, for interop.
    #[must_use]
    pub fn cu_function(&self) -> cudarc::driver::sys::CUfunction {
        crate::backend::cuda::function(self.raw)
    }

    /// Whether this kernel uses grid sync and must be launched cooperatively.
    #[must_use]
    pub fn is_cooperative(&self) -> bool {
        self.cooperative
    }

    /// How many blocks of `block_threads` threads and `dynamic_smem` bytes one SM holds at
    /// once (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn max_active_blocks_per_sm(&self, block_threads: u32, dynamic_smem: u32) -> Result<u32> {
        {
            let cache = self.occupancy.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(&(_, _, n)) = cache.iter().find(|&&(b, s, _)| b == block_threads && s == dynamic_smem) {
                return Ok(n);
            }
        }
        self.module.gpu.bind()?;
        self.ensure_dynamic_smem(dynamic_smem)?;
        // SAFETY: live function handle.
        let n =
            unsafe { self.module.gpu.backend.max_active_blocks(self.raw, &self.info(), block_threads, dynamic_smem) }
                .map_err(|fault| fault.into_error(format!("occupancy of kernel `{}`", self.name)))?;
        let mut cache = self.occupancy.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() > 64 {
            cache.clear();
        }
        cache.push((block_threads, dynamic_smem, n));
        Ok(n)
    }

    /// The block size the occupancy calculator suggests and the grid that fills the device
    /// with it (`cuOccupancyMaxPotentialBlockSize`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn suggested_block_size(&self, dynamic_smem: u32) -> Result<(u32, u32)> {
        self.module.gpu.bind()?;
        // SAFETY: live function handle.
        unsafe { self.module.gpu.backend.suggested_block_size(self.raw, &self.info(), dynamic_smem) }
            .map_err(|fault| fault.into_error(format!("occupancy of kernel `{}`", self.name)))
    }

    /// One thread per element with the occupancy-suggested block size.
    ///
    /// # Errors
    /// A driver failure.
    pub fn config_for_elements(&self, n: usize) -> Result<LaunchConfig> {
        let (_, block) = self.suggested_block_size(0)?;
        Ok(LaunchConfig::for_elements(n, block))
    }

    /// A grid that fills the GPU once (SMs × resident blocks per SM), for grid-stride loops
    /// and cooperative kernels.
    ///
    /// # Errors
    /// A driver failure, or a block this kernel cannot run at all.
    pub fn persistent_config(&self, block_threads: u32, dynamic_smem: u32) -> Result<LaunchConfig> {
        let per_sm = self.max_active_blocks_per_sm(block_threads, dynamic_smem)?;
        if per_sm == 0 {
            return Err(Error::InvalidLaunch {
                kernel: self.name.clone(),
                config: LaunchConfig::new(1, block_threads).with_shared_mem(dynamic_smem),
                reason: "not one block of this shape fits on an SM".into(),
            });
        }
        Ok(LaunchConfig::new(per_sm * self.module.gpu.info.sms, block_threads).with_shared_mem(dynamic_smem))
    }

    fn invalid(&self, config: &LaunchConfig, reason: String) -> Error {
        Error::InvalidLaunch { kernel: self.name.clone(), config: *config, reason }
    }

    /// Checks `config` against the device's and this kernel's limits.
    #[inline]
    fn check(&self, config: &LaunchConfig) -> Result<()> {
        let info = &self.module.gpu.info;
        let (g, b) = (config.grid, config.block);
        if let Some(required) = self.required_block
            && b != required
        {
            return Err(Error::BlockShape { kernel: self.name.clone(), required, config: *config });
        }
        if g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0 {
            return Err(self.invalid(config, "a grid or block dimension is 0".into()));
        }
        // Before any `volume()`: a grid whose threads `thread::global_id` cannot number (and
        // whose volume would overflow) is refused here.
        config.check_index_space().map_err(|reason| self.invalid(config, reason))?;
        let threads = config.block.volume();
        if threads > self.attrs.max_threads_per_block as u64 {
            let why = if self.attrs.max_threads_per_block < info.max_threads_per_block {
                format!(
                    " (its {} registers per thread cap it below the device's {})",
                    self.attrs.registers, info.max_threads_per_block
                )
            } else {
                String::new()
            };
            return Err(self.invalid(
                config,
                format!(
                    "a block of {threads} threads exceeds this kernel's limit of {} threads per block{why}",
                    self.attrs.max_threads_per_block
                ),
            ));
        }
        for (i, axis) in ["x", "y", "z"].iter().enumerate() {
            let (bd, gd) = ([b.x, b.y, b.z][i], [g.x, g.y, g.z][i]);
            if bd > info.max_block_dim[i] {
                return Err(self.invalid(
                    config,
                    format!("block {axis} = {bd} exceeds the device's limit of {}", info.max_block_dim[i]),
                ));
            }
            if gd > info.max_grid_dim[i] {
                return Err(self.invalid(
                    config,
                    format!("grid {axis} = {gd} exceeds the device's limit of {}", info.max_grid_dim[i]),
                ));
            }
        }
        let smem = config.shared_mem_bytes as u64 + self.attrs.static_shared_bytes as u64;
        if smem > info.shared_per_block_optin as u64 {
            return Err(self.invalid(
                config,
                format!(
                    "{} B of dynamic + {} B of static shared memory exceed the device's limit of {} B per block",
                    config.shared_mem_bytes, self.attrs.static_shared_bytes, info.shared_per_block_optin
                ),
            ));
        }
        if config.shared_mem_bytes > self.dyn_smem_limit.load(Ordering::Relaxed) {
            self.ensure_dynamic_smem(config.shared_mem_bytes)?;
        }
        Ok(())
    }

    /// Raises the kernel's dynamic shared memory limit (above 48 KiB needs an opt-in).
    fn ensure_dynamic_smem(&self, bytes: u32) -> Result<()> {
        if bytes <= self.dyn_smem_limit.load(Ordering::Relaxed) {
            return Ok(());
        }
        // SAFETY: live function handle; the value was checked against the device limit.
        unsafe { self.module.gpu.backend.set_max_dynamic_shared(self.raw, bytes) }.map_err(|fault| {
            fault.into_error(format!("allowing {bytes} B of dynamic shared memory for kernel `{}`", self.name))
        })?;
        self.dyn_smem_limit.fetch_max(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Launches with a raw parameter array, untracked: nothing orders the launch against other
    /// streams' work on the memory it uses (the caller does, or uses one stream).
    ///
    /// # Safety
    /// `params` must hold one pointer per PTX parameter of the kernel, in order, each pointing
    /// at a value of exactly that parameter's type, and the kernel must be safe to run with
    /// those values (device pointers valid for its accesses, and not used by other streams'
    /// pending work in conflicting ways).
    ///
    /// # Errors
    /// [`Error::InvalidLaunch`] for an impossible configuration, [`Error::Cooperative`] for a
    /// cooperative kernel, [`Error::CrossDevice`] for a stream of another context than the
    /// module's, [`Error::Argument`] on a stream another thread is capturing into a graph (the
    /// launch would go into that graph), [`Error::Launch`] when the driver refuses.
    #[inline]
    pub unsafe fn launch_raw(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
    ) -> Result<()> {
        self.check_plain(&config)?;
        crate::peer::check_launch(&self.name, &self.module.gpu, &stream.inner.gpu, &[])?;
        let gate = stream.inner.gate_with(|| format!("launching kernel `{}`", self.name))?;
        self.check_capture(&gate)?;
        self.module.gpu.bind()?;
        // SAFETY: the caller's contract.
        unsafe { self.enqueue(stream, config, params, false) }
    }

    /// A kernel that launches kernels from the device cannot be captured into a graph.
    fn check_capture(&self, gate: &crate::stream::Gate<'_>) -> Result<()> {
        if self.device_launches && self.module.launch_budget.is_some() && gate.capture().is_some() {
            return Err(Error::Argument(format!(
                "kernel `{}` launches kernels from the device, so it cannot be captured into a graph: each host \
                 launch gets its own launch budget, which a replay would not reset in order",
                self.name
            )));
        }
        Ok(())
    }

    /// [`run_tracked`] of a launch (`launch`) of this kernel with operands `uses` on `stream`:
    /// the stream's gate first (another thread's capture is refused), then a capture check,
    /// then the tracker, with the module variables the kernel uses.
    fn tracked(&self, stream: &Stream, uses: &[Use<'_>], launch: impl FnOnce() -> Result<()>) -> Result<()> {
        let gate = stream.inner.gate_with(|| format!("launching kernel `{}`", self.name))?;
        self.check_capture(&gate)?;
        // The launch reads the module's code (which keeps the module loaded until the kernel
        // has finished, and in a graph for as long as the graph lives) and its variables.
        let code = Use::new(&self.module.record, CODE, false);
        match &self.vars {
            None => {
                let mut all: Vec<Use<'_>> = Vec::with_capacity(uses.len() + 1);
                all.extend_from_slice(uses);
                all.push(code);
                run_tracked_in(&stream.inner, &gate, &all, launch)
            }
            Some(vars) => {
                let mut all = vars.with(uses);
                all.push(code);
                run_tracked_in(&stream.inner, &gate, &all, launch)
            }
        }
    }

    /// What generated launchers call: [`Function::launch_raw`], ordered against other
    /// streams' pending work on `uses` (the memory the arguments name) and on the module
    /// variables the kernel uses (`constant!`, `global!`), and recorded on them.
    ///
    /// # Safety
    /// As [`Function::launch_raw`]; `uses` must cover the memory the kernel accesses through
    /// `params`.
    ///
    /// # Errors
    /// As [`Function::launch_raw`].
    #[doc(hidden)]
    #[inline]
    pub unsafe fn launch_tracked(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        uses: &[Use<'_>],
    ) -> Result<()> {
        self.check_plain(&config)?;
        crate::peer::check_launch(&self.name, &self.module.gpu, &stream.inner.gpu, uses)?;
        self.module.gpu.bind()?;
        // SAFETY: the caller's contract; the tracker orders the launch.
        let launch = || unsafe { self.enqueue(stream, config, params, false) };
        self.tracked(stream, uses, launch)
    }

    /// [`Function::launch_tracked`] as a programmatic dependent launch (what the generated
    /// `launch_programmatic` of a `#[kernel(dependent)]` kernel calls): on sm_90 and later,
    /// through `cuLaunchKernelEx` with programmatic stream serialization, so that the grid may
    /// be scheduled while the kernel before it on `stream` finishes; its entry waits for that
    /// kernel before touching memory (see `crate::pdl`). Where the loaded entry has no wait
    /// (PTX below sm_90) and on the CPU device, an ordinary launch.
    ///
    /// # Safety
    /// As [`Function::launch_tracked`].
    ///
    /// # Errors
    /// As [`Function::launch_tracked`], and [`Error::Argument`] for a kernel not loaded as a
    /// `#[kernel(dependent)]` kernel (its entry would not wait).
    #[doc(hidden)]
    pub unsafe fn launch_programmatic_tracked(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        uses: &[Use<'_>],
    ) -> Result<()> {
        use crate::pdl::Programmatic;
        let overlap = match self.programmatic {
            Programmatic::No => {
                return Err(Error::Argument(format!(
                    "kernel `{}` cannot be launched programmatically: it was not loaded as a #[kernel(dependent)] \
                     kernel, so its entry does not wait for the kernel before it; declare it `dependent`, or use `launch`",
                    self.name
                )));
            }
            Programmatic::StreamOrder => false,
            // A kernel that launches kernels has its launch budget reset in stream order before
            // it (`enqueue`): launched plainly.
            Programmatic::Overlap => !self.device_launches,
        };
        self.check_plain(&config)?;
        crate::peer::check_launch(&self.name, &self.module.gpu, &stream.inner.gpu, uses)?;
        self.module.gpu.bind()?;
        let launch = || {
            if overlap {
                // SAFETY: the caller's contract; the entry waits for its prerequisite grids
                // before touching memory (`Programmatic::Overlap`: found in the loaded PTX).
                unsafe { self.enqueue_now(stream, config, params, LaunchMode::Programmatic) }
            } else {
                // SAFETY: the caller's contract.
                unsafe { self.enqueue(stream, config, params, false) }
            }
        };
        self.tracked(stream, uses, launch)
    }

    /// Whether [`Function::launch_programmatic_tracked`] overlaps this kernel with the one
    /// before it (`true`: a `#[kernel(dependent)]` kernel whose loaded entry waits, on a GPU),
    /// rather than launching it in plain stream order.
    #[must_use]
    pub fn overlaps_when_programmatic(&self) -> bool {
        self.programmatic == crate::pdl::Programmatic::Overlap && !self.device_launches
    }

    fn check_plain(&self, config: &LaunchConfig) -> Result<()> {
        if self.cooperative {
            return Err(Error::Cooperative {
                kernel: self.name.clone(),
                reason: "it uses grid sync (#[kernel(cooperative)]), so it must be launched with launch_cooperative"
                    .into(),
            });
        }
        self.check(config)
    }

    /// `cuLaunchKernel` / `cuLaunchCooperativeKernel` of a checked configuration.
    ///
    /// # Safety
    /// As [`Function::launch_raw`]; the configuration was checked and the context is current.
    #[inline]
    pub(crate) unsafe fn enqueue(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        cooperative: bool,
    ) -> Result<()> {
        if self.device_launches
            && let Some((budget, _)) = &self.module.launch_budget
        {
            // Not in a capture: the callers checked (`check_capture`) under the stream's gate.
            let serial = &self.module.gpu.launch_serial;
            // SAFETY: forwarded; the budget only orders and resets before the launch.
            let launch = || unsafe { self.enqueue_now(stream, config, params, mode(cooperative)) };
            return budget.around(&*self.module.gpu.backend, serial, stream.inner.raw, launch);
        }
        // SAFETY: forwarded.
        unsafe { self.enqueue_now(stream, config, params, mode(cooperative)) }
    }

    /// [`Function::enqueue`] without the launch budget.
    ///
    /// # Safety
    /// As [`Function::enqueue`].
    #[inline]
    unsafe fn enqueue_now(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        mode: LaunchMode,
    ) -> Result<()> {
        let host = HostKernel {
            entry: self.cpu_entry,
            name: &self.name,
            fast_path: self.cpu_fast_path,
            device_launches: self.device_launches,
            vars: self.cpu_vars(),
        };
        // SAFETY: the caller guarantees the parameters and the configuration.
        let r = unsafe { self.module.gpu.backend.launch(self.raw, host, config, stream.inner.raw, params, mode) };
        match r {
            Ok(()) => {
                stream.note_launch(&self.name, config);
                Ok(())
            }
            Err(fault) => Err(self.launch_failure(stream, config, fault)),
        }
    }

    /// The error of a launch the backend refused or (on the CPU device) that failed.
    #[cold]
    fn launch_failure(&self, stream: &Stream, config: LaunchConfig, fault: Fault) -> Error {
        match fault {
            Fault::Driver(code) => stream.launch_error(&self.name, config, code),
            Fault::Kernel(error) => {
                // It ran (and failed): noted as any launch.
                stream.note_launch(&self.name, config);
                Error::CpuKernel { kernel: self.name.clone(), config, error }
            }
            Fault::Unsupported(what) => crate::cpu::not_on_cpu(what),
            fault => fault.into_error(format!("launching kernel `{}` with {config}", self.name)),
        }
    }

    /// The attributes the backend reported, for its occupancy calls.
    fn info(&self) -> FuncInfo {
        FuncInfo {
            max_threads_per_block: self.attrs.max_threads_per_block,
            registers: self.attrs.registers,
            static_shared_bytes: self.attrs.static_shared_bytes,
            local_bytes: self.attrs.local_bytes,
            const_bytes: self.attrs.const_bytes,
            ptx_version: self.attrs.ptx_version,
            binary_version: self.attrs.binary_version,
            max_dynamic_shared: self.dyn_smem_limit.load(Ordering::Relaxed),
            host: None,
        }
    }

    /// Checks a cooperative launch: the device supports it, the configuration, and that every
    /// block of the grid can be resident at once.
    pub(crate) fn check_cooperative(&self, config: &LaunchConfig) -> Result<()> {
        let info = &self.module.gpu.info;
        if !info.cooperative_launch {
            return Err(Error::Cooperative {
                kernel: self.name.clone(),
                reason: format!("{} does not support cooperative launches", info.name),
            });
        }
        self.check(config)?;
        if let Some(limit) = self.module.gpu.backend.coresident_limit(config.block.volume() as u32) {
            // The device's own limit, exactly (not rounded to a per-SM share).
            if config.grid.volume() > limit {
                return Err(Error::CooperativeTooLarge {
                    kernel: self.name.clone(),
                    config: *config,
                    blocks_per_sm: limit as u32,
                    sms: 1,
                });
            }
            return Ok(());
        }
        let per_sm = self.max_active_blocks_per_sm(config.block.volume() as u32, config.shared_mem_bytes)?;
        if config.grid.volume() > per_sm as u64 * info.sms as u64 {
            return Err(Error::CooperativeTooLarge {
                kernel: self.name.clone(),
                config: *config,
                blocks_per_sm: per_sm,
                sms: info.sms,
            });
        }
        Ok(())
    }

    /// Launches cooperatively (`cuLaunchCooperativeKernel`) after checking that every block
    /// of the grid can be resident at once; untracked, as [`Function::launch_raw`].
    ///
    /// # Safety
    /// As [`Function::launch_raw`].
    ///
    /// # Errors
    /// As [`Function::launch_raw`], and [`Error::CooperativeTooLarge`] for a grid the device
    /// cannot hold at once, [`Error::Cooperative`] when the device has no cooperative launch.
    pub unsafe fn launch_cooperative_raw(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
    ) -> Result<()> {
        self.check_cooperative(&config)?;
        crate::peer::check_launch(&self.name, &self.module.gpu, &stream.inner.gpu, &[])?;
        let gate = stream.inner.gate_with(|| format!("launching kernel `{}`", self.name))?;
        self.check_capture(&gate)?;
        self.module.gpu.bind()?;
        // SAFETY: the caller's contract; co-residency was checked.
        unsafe { self.enqueue(stream, config, params, true) }
    }

    /// [`Function::launch_cooperative_raw`], ordered and recorded as
    /// [`Function::launch_tracked`].
    ///
    /// # Safety
    /// As [`Function::launch_tracked`].
    ///
    /// # Errors
    /// As [`Function::launch_cooperative_raw`].
    #[doc(hidden)]
    pub unsafe fn launch_cooperative_tracked(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        uses: &[Use<'_>],
    ) -> Result<()> {
        self.check_cooperative(&config)?;
        crate::peer::check_launch(&self.name, &self.module.gpu, &stream.inner.gpu, uses)?;
        self.module.gpu.bind()?;
        // SAFETY: the caller's contract; co-residency was checked; the tracker orders it.
        let launch = || unsafe { self.enqueue(stream, config, params, true) };
        self.tracked(stream, uses, launch)
    }
}

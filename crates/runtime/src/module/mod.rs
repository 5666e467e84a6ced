//! Loaded modules and their kernels.
//!
//! | file | concept |
//! | --- | --- |
//! | `mod.rs` | [`Module`]: loading a PTX set's module for the device, looking its kernels up, the ABI check ([`Module::kernel`], [`check_kernel_abi`]) |
//! | `options.rs` | [`LoadOptions`]: how the driver compiles the PTX |
//! | `panic.rs` | the panic record a trapping kernel thread leaves its location in |
//! | `function.rs` | [`Function`]: a kernel's attributes, occupancy queries, launch-configuration checks |
//! | `launch.rs` | launching a [`Function`]: one path under the plain, tracked, programmatic, cooperative and multi-grid launches |

use std::fmt;
use std::sync::Arc;

use cohort::panic::{PANIC_RECORD_SYMBOL, PanicRecord};

use crate::backend::{Fault, ModuleH, ModuleSource};
use crate::device::GpuInner;
use crate::error::{Error, Result};
use crate::launch::Dim3;
use crate::ptx::{PtxModule, PtxSet};

mod function;
mod launch;
mod options;
mod panic;

pub use function::{Function, FunctionAttributes};
pub(crate) use launch::Launch;
pub use options::LoadOptions;
pub(crate) use panic::PanicSlot;
use panic::register_panic_record;

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
    /// The entries that reach an instruction the module's architecture lacks (`wgmma` outside
    /// `sm_90a`, compiled to a marked trap: `cohort::raw::NEEDS_SM_90A`), read on the first
    /// typed `load`.
    needs_sm_90a: std::sync::OnceLock<Vec<String>>,
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
        // Launch bounds reach the entries only through cohort-build's rewrite.
        if ptx.ptx.contains(cohort::raw::LAUNCH_BOUNDS_MARKER) {
            return Err(Error::UnappliedLaunchBounds { crate_name: set.crate_name, arch: ptx.arch });
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
                needs_sm_90a: std::sync::OnceLock::new(),
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
        check_abi(self.inner.set, index, name, abi)?;
        self.check_arch_specific(name)?;
        let mut f = Function::new(self, name, cooperative)?;
        f.required_block = crate::abi::required_block(abi).map(|[x, y, z]| Dim3::new(x, y, z));
        f.cluster = crate::abi::cluster(abi);
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

    /// `Err` if kernel `name` reaches an instruction the loaded module's architecture lacks
    /// (see [`Error::NeedsArchSpecific`]), where the device runs the PTX.
    fn check_arch_specific(&self, name: &str) -> Result<()> {
        let inner = &self.inner;
        if !inner.gpu.backend.runs_ptx() {
            return Ok(());
        }
        let needing = inner.needs_sm_90a.get_or_init(|| {
            let ptx = inner.ptx.text();
            if !ptx.contains(cohort::raw::NEEDS_SM_90A) {
                return Vec::new();
            }
            crate::ptx::entries_where(ptx, |_, body| body.contains(cohort::raw::NEEDS_SM_90A), |_| false)
        });
        if needing.iter().any(|k| k == name) {
            return Err(Error::NeedsArchSpecific {
                crate_name: inner.set.crate_name,
                kernel: name.to_string(),
                loaded: inner.ptx.arch_name(),
                compute_capability: inner.gpu.info.cc(),
            });
        }
        Ok(())
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

/// The check [`Module::kernel`] makes, on PTX text alone (no GPU needed): whether entry `name`
/// of `ptx` was built from the declaration whose ABI record is `abi`.
///
/// # Errors
/// [`Error::KernelNotFound`] or [`Error::AbiMismatch`], as [`Module::kernel`].
pub fn check_kernel_abi(set: &PtxSet, ptx: &PtxModule, name: &str, abi: &[u8]) -> Result<()> {
    check_abi(set, &crate::abi::index(ptx.ptx), name, abi)
}

/// Whether entry `name` of the PTX `index` (of `set`) has the ABI record `abi`.
fn check_abi(set: &PtxSet, index: &crate::abi::Index, name: &str, abi: &[u8]) -> Result<()> {
    match index.get(name) {
        None => Err(Error::KernelNotFound { name: name.to_string(), crate_name: set.crate_name }),
        Some(info) => crate::abi::check(Some(info), abi).map_err(|detail| Error::AbiMismatch {
            kernel: name.to_string(),
            crate_name: set.crate_name,
            detail,
        }),
    }
}

//! A kernel of a loaded module ([`Function`]): its attributes, occupancy queries, its public
//! launch functions, and the checks a launch configuration must pass (the device's and the
//! kernel's limits, cooperative co-residency). The launch functions are one line each: the
//! launch path they share is `launch.rs`'s. (They are here, in the type's own module, so that
//! compiler diagnostics name them `Function::launch_raw`, not by the file's path.)

use std::ffi::CString;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::launch::Launch;
use super::{Module, ModuleInner};
use crate::backend::{FuncH, FuncInfo};
use crate::device::GpuInner;
use crate::error::{Error, Result};
use crate::launch::{Dim3, LaunchConfig};
use crate::stream::Stream;
use crate::track::Use;

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
    pub(super) raw: FuncH,
    pub(super) name: Arc<str>,
    pub(super) cooperative: bool,
    /// The block shape the kernel's `BlockShape` parameter requires, if it has one.
    pub(super) required_block: Option<Dim3>,
    /// Whether it is a `#[kernel(cluster)]` kernel (launched through `LaunchMode::Cluster`).
    pub(super) cluster: bool,
    /// The registers its warpgroups drop to and rise to, if it splits them (`setmaxnreg`:
    /// `cohort::wgmma::SplitRegisters`; GPU modules only).
    register_split: Option<(u32, u32)>,
    /// Whether the non-portable cluster size attribute was set.
    non_portable: std::sync::atomic::AtomicBool,
    pub(super) attrs: FunctionAttributes,
    dyn_smem_limit: AtomicU32,
    occupancy: Mutex<Vec<(u32, u32, u32)>>,
    /// `max_active_clusters` answers by (cluster x, y, z, block x, y, z, dynamic shared bytes):
    /// every cluster launch checks it, and the driver's call costs microseconds.
    cluster_occupancy: Mutex<Vec<([u32; 7], u32)>>,
    /// The module variables the kernel uses, recorded with each typed launch (`None`: none).
    pub(super) vars: Option<crate::symbol::KernelVars>,
    /// Whether the kernel can launch kernels from the device: its host launches are budgeted.
    pub(crate) device_launches: bool,
    /// The kernel's host entry, which runs it on the CPU device (set by generated launchers).
    pub(crate) cpu_entry: Option<crate::cpu::CpuEntry>,
    /// On the CPU device: whether its PTX reaches no barrier or collective (the fast path).
    pub(crate) cpu_fast_path: bool,
    /// Whether (and how) it may be launched programmatically (`#[kernel(dependent)]`).
    pub(super) programmatic: crate::pdl::Programmatic,
    pub(super) module: Arc<ModuleInner>,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function").field("name", &self.name).field("attributes", &self.attrs).finish()
    }
}

impl Function {
    pub(super) fn new(module: &Module, name: &str, cooperative: bool) -> Result<Self> {
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
        // The CPU device has no register file to split.
        let register_split = if info.host.is_none() { m.ptx.register_split_of(name) } else { None };
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
            cluster: false,
            register_split,
            non_portable: std::sync::atomic::AtomicBool::new(false),
            attrs,
            dyn_smem_limit: AtomicU32::new(info.max_dynamic_shared),
            occupancy: Mutex::new(Vec::new()),
            cluster_occupancy: Mutex::new(Vec::new()),
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

    pub(super) fn invalid(&self, config: &LaunchConfig, reason: String) -> Error {
        Error::InvalidLaunch { kernel: self.name.clone(), config: *config, reason }
    }

    /// Checks `config` against the device's and this kernel's limits.
    #[inline]
    pub(super) fn check(&self, config: &LaunchConfig) -> Result<()> {
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
            let why = if self.module.ptx.max_threads_of(&self.name) == Some(self.attrs.max_threads_per_block) {
                " (its launch bounds: `#[kernel(launch_bounds(..))]`)".to_owned()
            } else if self.attrs.max_threads_per_block < info.max_threads_per_block {
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
        if let Some(split) = self.register_split {
            self.check_register_split(config, split, threads)?;
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

    /// A kernel that splits its registers (`setmaxnreg`: the producer warpgroup, the first 128
    /// threads, drops to `low` per thread, every other warpgroup rises to `high`) runs only if
    /// the block's allocation at launch (the kernel's registers per thread × its threads) holds
    /// what the split asks for: otherwise the rising warpgroups wait forever for registers that
    /// never come (`setmaxnreg.inc` blocks until the block's pool has them). And each count must
    /// be a change in its direction (`low` ≤ the kernel's count ≤ `high`).
    fn check_register_split(&self, config: &LaunchConfig, (low, high): (u32, u32), threads: u64) -> Result<()> {
        if high == 0 {
            return Ok(()); // Only drops: nothing waits for registers.
        }
        let regs = self.attrs.registers;
        let low = low.min(high);
        let need = 128 * u64::from(low) + threads.saturating_sub(128) * u64::from(high);
        let have = u64::from(regs) * threads;
        if have >= need && (low..=high).contains(&regs) {
            return Ok(());
        }
        Err(self.invalid(
            config,
            format!(
                "this kernel splits its registers between warpgroups (`setmaxnreg`: the first 128 threads drop \
                 to {low} per thread, the others rise to {high}); it was compiled to {regs} registers per thread, \
                 so a block of {threads} threads holds {have} registers, and the split needs {need} (128 × {low} \
                 + {} × {high}) with {low} <= {regs} <= {high}: the rising warpgroups would wait forever. \
                 Compile it for this block (`#[kernel(launch_bounds({threads}, 1))]`, which lets ptxas give it \
                 up to 65536 / {threads} registers per thread) or split fewer registers",
                threads.saturating_sub(128)
            ),
        ))
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

    /// The attributes the backend reported, for its occupancy calls.
    pub(super) fn info(&self) -> FuncInfo {
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
    pub(super) fn check_cooperative(&self, config: &LaunchConfig) -> Result<()> {
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
        // SAFETY: the caller's contract.
        unsafe { self.launch_with(Launch::Plain, stream, config, params, None) }
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
        // SAFETY: the caller's contract; the tracker orders the launch.
        unsafe { self.launch_with(Launch::Plain, stream, config, params, Some(uses)) }
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
        // SAFETY: the caller's contract; a programmatic launch overlaps only a kernel whose
        // loaded entry waits for its prerequisite grids before touching memory
        // (`Function::programmatic_mode`); the tracker orders the launch.
        unsafe { self.launch_with(Launch::Programmatic, stream, config, params, Some(uses)) }
    }

    /// Whether [`Function::launch_programmatic_tracked`] overlaps this kernel with the one
    /// before it (`true`: a `#[kernel(dependent)]` kernel whose loaded entry waits, on a GPU),
    /// rather than launching it in plain stream order.
    #[must_use]
    pub fn overlaps_when_programmatic(&self) -> bool {
        self.programmatic == crate::pdl::Programmatic::Overlap && !self.device_launches
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
        // SAFETY: the caller's contract; co-residency is checked first.
        unsafe { self.launch_with(Launch::Cooperative, stream, config, params, None) }
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
        // SAFETY: the caller's contract; co-residency is checked first; the tracker orders it.
        unsafe { self.launch_with(Launch::Cooperative, stream, config, params, Some(uses)) }
    }

    /// Whether this is a `#[kernel(cluster)]` kernel, which may be launched in clusters of
    /// several blocks ([`LaunchConfig::with_cluster`]).
    #[must_use]
    pub fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// How many clusters of `config.cluster` blocks (of `config.block` threads and
    /// `config.shared_mem_bytes` of dynamic shared memory) can be resident at once
    /// (`cuOccupancyMaxActiveClusters`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn max_active_clusters(&self, config: &LaunchConfig) -> Result<u32> {
        let (c, b) = (config.cluster, config.block);
        let key = [c.x, c.y, c.z, b.x, b.y, b.z, config.shared_mem_bytes];
        {
            let cache = self.cluster_occupancy.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(&(_, n)) = cache.iter().find(|(k, _)| *k == key) {
                return Ok(n);
            }
        }
        self.module.gpu.bind()?;
        self.ensure_dynamic_smem(config.shared_mem_bytes)?;
        if config.cluster.volume() > 8 {
            self.allow_non_portable()?;
        }
        // SAFETY: live function handle.
        let n = unsafe { self.module.gpu.backend.max_active_clusters(self.raw, &self.info(), config) }
            .map_err(|fault| fault.into_error(format!("cluster occupancy of kernel `{}`", self.name)))?;
        let mut cache = self.cluster_occupancy.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() > 64 {
            cache.clear();
        }
        cache.push((key, n));
        Ok(n)
    }

    fn allow_non_portable(&self) -> Result<()> {
        if self.non_portable.load(Ordering::Relaxed) {
            return Ok(());
        }
        // SAFETY: live function handle.
        unsafe { self.module.gpu.backend.allow_non_portable_cluster(self.raw) }.map_err(|fault| {
            fault.into_error(format!("allowing non-portable cluster sizes for kernel `{}`", self.name))
        })?;
        self.non_portable.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Checks the cluster shape of a launch (the rest of the configuration is checked by the
    /// launch's own check): a kernel that is not `#[kernel(cluster)]` takes only clusters of one;
    /// a cluster of several blocks needs a device and a loaded module with clusters (sm_90),
    /// must divide the grid, have at most 8 blocks (16 with the non-portable size, which this
    /// allows), and one cluster must fit on the device at once.
    pub(super) fn check_cluster(&self, config: &LaunchConfig) -> Result<()> {
        let c = config.cluster;
        let one = Dim3::new(1, 1, 1);
        if c == one {
            return Ok(());
        }
        let why = |reason: String| Err(self.invalid(config, reason));
        if !self.cluster {
            return why(format!(
                "a launch in clusters of ({},{},{}) blocks of a kernel that is not `#[kernel(cluster)]`: its entry \
                 has no cluster protocol (blocks could exit while another reads their shared memory); declare it \
                 `#[kernel(cluster)]`, or launch it without `with_cluster`",
                c.x, c.y, c.z
            ));
        }
        if c.x == 0 || c.y == 0 || c.z == 0 {
            return why("a cluster dimension is 0".into());
        }
        let info = &self.module.gpu.info;
        if info.cc() < 90 {
            return why(format!(
                "{} (compute capability {}.{}) has no thread-block clusters (sm_90 and later); only clusters of one",
                info.name, info.compute_capability.0, info.compute_capability.1
            ));
        }
        if self.module.ptx.arch < 90 {
            return why(format!(
                "the module was loaded as sm_{} PTX, which has no thread-block clusters (sm_90 and later)",
                self.module.ptx.arch
            ));
        }
        let g = config.grid;
        for (axis, gd, cd) in [("x", g.x, c.x), ("y", g.y, c.y), ("z", g.z, c.z)] {
            if gd % cd != 0 {
                return why(format!("the cluster's {axis} = {cd} does not divide the grid's {axis} = {gd}"));
            }
        }
        let blocks = c.volume();
        if blocks > 16 {
            return why(format!(
                "a cluster of {blocks} blocks exceeds the limit of 16 (8 portable, 16 with the non-portable size)"
            ));
        }
        self.check(config)?;
        let n = self.max_active_clusters(config)?;
        if n == 0 {
            return why(format!(
                "not one cluster of {blocks} blocks of {} threads with {} B of dynamic + {} B of static shared memory \
                 fits on the device at once (cuOccupancyMaxActiveClusters is 0)",
                config.block.volume(),
                config.shared_mem_bytes,
                self.attrs.static_shared_bytes
            ));
        }
        Ok(())
    }

    /// Checks a plain (or programmatic) launch: the kernel is not cooperative, and the
    /// configuration.
    pub(super) fn check_plain(&self, config: &LaunchConfig) -> Result<()> {
        if self.cooperative {
            return Err(Error::Cooperative {
                kernel: self.name.clone(),
                reason: "it uses grid sync (#[kernel(cooperative)]), so it must be launched with launch_cooperative"
                    .into(),
            });
        }
        self.check(config)
    }
}

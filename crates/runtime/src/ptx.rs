//! Embedded PTX: what `cohort_build` produced for a kernels crate.

/// Every PTX module of one kernels crate (one per architecture), embedded in the binary.
/// Made by `cohort_runtime::include_ptx!()` from the crate's build output.
#[derive(Debug)]
pub struct PtxSet {
    /// The kernels crate's library name.
    pub crate_name: &'static str,
    /// The modules, one per architecture.
    pub modules: &'static [PtxModule],
}

/// One PTX module.
#[derive(Debug)]
pub struct PtxModule {
    /// Compute capability × 10 it was built for (`-Ctarget-cpu=sm_XX`).
    pub arch: u32,
    /// The PTX text, NUL-terminated (for `cuModuleLoadData`).
    pub ptx: &'static str,
    /// `ptxas --version` of the ptxas that checked it at build time, if one did.
    pub ptxas: Option<&'static str>,
    /// Per-kernel resource use reported by that ptxas (empty if none ran).
    pub resources: &'static [KernelResources],
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
    /// The module for a device of compute capability `cc` (× 10): the highest architecture
    /// that is not above it.
    #[must_use]
    pub fn select(&self, cc: u32) -> Option<&'static PtxModule> {
        self.modules.iter().filter(|m| m.arch <= cc).max_by_key(|m| m.arch)
    }

    /// The architectures embedded.
    #[must_use]
    pub fn archs(&self) -> Vec<u32> {
        self.modules.iter().map(|m| m.arch).collect()
    }
}

impl PtxModule {
    /// The PTX text without its terminating NUL.
    #[must_use]
    pub fn text(&self) -> &'static str {
        self.ptx.strip_suffix('\0').unwrap_or(self.ptx)
    }

    /// The names of the module's kernels (`.entry` directives), in file order.
    #[must_use]
    pub fn kernels(&self) -> Vec<&'static str> {
        self.text()
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let rest = l.strip_prefix(".visible .entry ").or_else(|| l.strip_prefix(".entry "))?;
                Some(rest.split(['(', ' ']).next().unwrap_or(rest).trim())
            })
            .collect()
    }

    /// The ptxas report for kernel `name`, if ptxas ran at build time.
    #[must_use]
    pub fn resources_of(&self, name: &str) -> Option<&'static KernelResources> {
        self.resources.iter().find(|r| r.name == name)
    }
}

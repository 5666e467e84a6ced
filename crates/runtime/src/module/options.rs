//! How the driver compiles a module's PTX: [`LoadOptions`].

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

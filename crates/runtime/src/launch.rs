//! Launch configurations.

use std::fmt;

pub use cohort::thread::Dim3;

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A grid of `grid` blocks of `block` threads (each a `u32` for 1-D, or a tuple / [`Dim3`]).
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self { grid: grid.into(), block: block.into(), shared_mem_bytes: 0 }
    }

    /// One thread per element: `ceil(n / block)` blocks of `block` threads (1-D).
    ///
    /// A grid larger than the device allows is reported when launching, not here.
    #[must_use]
    pub fn for_elements(n: usize, block: u32) -> Self {
        let blocks = n.div_ceil(block.max(1) as usize).max(1);
        Self::new(u32::try_from(blocks).unwrap_or(u32::MAX), block)
    }

    /// A 2-D grid covering `width × height` elements with `block` threads per block.
    #[must_use]
    pub fn for_2d(width: u32, height: u32, block: (u32, u32)) -> Self {
        Self::new((width.div_ceil(block.0), height.div_ceil(block.1), 1), (block.0, block.1, 1))
    }

    /// A 3-D grid covering `extent` with blocks of `block`.
    #[must_use]
    pub fn for_3d(extent: Dim3, block: Dim3) -> Self {
        Self::new(Dim3::new(extent.x.div_ceil(block.x), extent.y.div_ceil(block.y), extent.z.div_ceil(block.z)), block)
    }

    /// The same with `bytes` of dynamic shared memory per block.
    #[must_use]
    pub fn with_shared_mem(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Threads per block.
    #[must_use]
    pub fn block_threads(&self) -> u64 {
        self.block.volume()
    }

    /// Threads in the whole grid.
    #[must_use]
    pub fn total_threads(&self) -> u64 {
        self.grid.volume() * self.block.volume()
    }
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |d: Dim3| {
            if d.y == 1 && d.z == 1 { format!("{}", d.x) } else { format!("({},{},{})", d.x, d.y, d.z) }
        };
        write!(f, "grid {} x block {}", d(self.grid), d(self.block))?;
        if self.shared_mem_bytes != 0 {
            write!(f, ", {} B dynamic shared memory", self.shared_mem_bytes)?;
        }
        Ok(())
    }
}

/// `(grid, block)` as 1-D sizes.
impl From<(u32, u32)> for LaunchConfig {
    fn from((grid, block): (u32, u32)) -> Self {
        Self::new(grid, block)
    }
}

/// `(grid, block)` as [`Dim3`].
impl From<(Dim3, Dim3)> for LaunchConfig {
    fn from((grid, block): (Dim3, Dim3)) -> Self {
        Self::new(grid, block)
    }
}

/// `(grid, block, dynamic shared memory bytes)`.
impl From<(u32, u32, u32)> for LaunchConfig {
    fn from((grid, block, smem): (u32, u32, u32)) -> Self {
        Self::new(grid, block).with_shared_mem(smem)
    }
}

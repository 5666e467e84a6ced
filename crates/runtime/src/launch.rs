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
    /// The thread-block cluster's extent in blocks (sm_90): `(1, 1, 1)` — every block a cluster
    /// of one — unless set with [`LaunchConfig::with_cluster`]. Only a `#[kernel(cluster)]`
    /// kernel may be launched with another.
    pub cluster: Dim3,
}

impl LaunchConfig {
    /// A grid of `grid` blocks of `block` threads (each a `u32` for 1-D, or a tuple / [`Dim3`]).
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self { grid: grid.into(), block: block.into(), shared_mem_bytes: 0, cluster: Dim3::new(1, 1, 1) }
    }

    /// One thread per element: `ceil(n / block)` blocks of `block` threads (1-D), at least one
    /// block (so `n == 0` still launches, and the kernel sees no element to handle).
    ///
    /// A grid larger than the device allows is reported when launching, not here.
    ///
    /// # Panics
    /// If `block` is 0.
    #[must_use]
    #[track_caller]
    pub fn for_elements(n: usize, block: u32) -> Self {
        assert!(block != 0, "LaunchConfig::for_elements: `block` is 0 (a block needs at least one thread)");
        let blocks = n.div_ceil(block as usize).max(1);
        Self::new(u32::try_from(blocks).unwrap_or(u32::MAX), block)
    }

    /// A 2-D grid covering `width × height` elements with `block` threads per block.
    ///
    /// # Panics
    /// If `block.0` or `block.1` is 0.
    #[must_use]
    #[track_caller]
    pub fn for_2d(width: u32, height: u32, block: (u32, u32)) -> Self {
        assert!(block.0 != 0, "LaunchConfig::for_2d: `block.0` (the block's width) is 0");
        assert!(block.1 != 0, "LaunchConfig::for_2d: `block.1` (the block's height) is 0");
        Self::new((width.div_ceil(block.0), height.div_ceil(block.1), 1), (block.0, block.1, 1))
    }

    /// A 3-D grid covering `extent` with blocks of `block`.
    ///
    /// # Panics
    /// If `block.x`, `block.y` or `block.z` is 0.
    #[must_use]
    #[track_caller]
    pub fn for_3d(extent: Dim3, block: Dim3) -> Self {
        assert!(block.x != 0, "LaunchConfig::for_3d: `block.x` is 0");
        assert!(block.y != 0, "LaunchConfig::for_3d: `block.y` is 0");
        assert!(block.z != 0, "LaunchConfig::for_3d: `block.z` is 0");
        Self::new(Dim3::new(extent.x.div_ceil(block.x), extent.y.div_ceil(block.y), extent.z.div_ceil(block.z)), block)
    }

    /// The same with `bytes` of dynamic shared memory per block.
    #[must_use]
    pub fn with_shared_mem(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    /// The same in thread-block clusters of `dims` blocks (`cudaLaunchAttributeClusterDimension`),
    /// for a `#[kernel(cluster)]` kernel. The launch checks that the cluster divides the grid, is
    /// at most 8 blocks (16 with the non-portable size, which the launch allows by itself), that
    /// the device has clusters (sm_90) and that one cluster fits on the device at once.
    #[must_use]
    pub fn with_cluster(mut self, dims: impl Into<Dim3>) -> Self {
        self.cluster = dims.into();
        self
    }

    /// Threads per block, saturating at `u64::MAX` (only a block of absurd extents, which no
    /// device accepts, comes near it).
    #[must_use]
    pub fn block_threads(&self) -> u64 {
        volume(self.block).unwrap_or(u64::MAX)
    }

    /// Threads in the whole grid, saturating at `u64::MAX` when the product overflows (see
    /// [`LaunchConfig::checked_total_threads`] to tell, and
    /// [`LaunchConfig::check_index_space`] for the launcher's check).
    #[must_use]
    pub fn total_threads(&self) -> u64 {
        self.checked_total_threads().unwrap_or(u64::MAX)
    }

    /// Threads in the whole grid, or `None` if there are more than `u64::MAX`.
    #[must_use]
    pub fn checked_total_threads(&self) -> Option<u64> {
        let (g, b) = (self.grid, self.block);
        if [g.x, g.y, g.z, b.x, b.y, b.z].contains(&0) {
            return Some(0);
        }
        volume(g)?.checked_mul(volume(b)?)
    }

    /// Whether every thread of the grid has a linear index that kernels can represent:
    /// `thread::global_id()` and `thread::grid_size()` are `u64`s (and become `usize` for
    /// indexing), so the grid may hold at most `min(u64::MAX, usize::MAX)` threads. Larger
    /// grids would make those values wrap, and two threads would claim the same element.
    ///
    /// Only the index space is checked here; the device's grid and block limits are checked
    /// by the launcher. A configuration with a 0 extent has no threads and passes.
    ///
    /// # Errors
    /// A message with the grid, the block and the limit when the grid has too many threads.
    pub fn check_index_space(&self) -> Result<(), String> {
        let total = self.checked_total_threads();
        if total.is_some_and(|t| usize::try_from(t).is_ok()) {
            return Ok(());
        }
        let extent = |d: Dim3| volume(d).map_or_else(|| format!("({}*{}*{})", d.x, d.y, d.z), |v| v.to_string());
        let limit = u64::try_from(usize::MAX).unwrap_or(u64::MAX);
        Err(format!(
            "{} blocks of {} threads are {} threads, more than the {limit} (2^{}-1) that thread::global_id() can \
             number",
            extent(self.grid),
            extent(self.block),
            total.map_or_else(|| "over 2^64".to_string(), |t| t.to_string()),
            limit.count_ones(),
        ))
    }
}

/// `d.x * d.y * d.z`, or `None` when it does not fit a `u64`.
fn volume(d: Dim3) -> Option<u64> {
    (d.x as u64).checked_mul(d.y as u64)?.checked_mul(d.z as u64)
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
        if self.cluster != Dim3::new(1, 1, 1) {
            write!(f, ", clusters of {}", d(self.cluster))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn panic_message<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> String {
        let e = std::panic::catch_unwind(f).err().expect("expected a panic");
        e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap()
    }

    #[test]
    fn helpers_cover_the_elements() {
        let c = LaunchConfig::for_elements(1000, 256);
        assert_eq!((c.grid, c.block), (Dim3::new(4, 1, 1), Dim3::new(256, 1, 1)));
        assert_eq!(LaunchConfig::for_elements(0, 256).grid, Dim3::new(1, 1, 1));
        let c = LaunchConfig::for_2d(100, 30, (16, 16));
        assert_eq!((c.grid, c.block), (Dim3::new(7, 2, 1), Dim3::new(16, 16, 1)));
        let c = LaunchConfig::for_3d(Dim3::new(10, 10, 10), Dim3::new(4, 4, 4));
        assert_eq!((c.grid, c.block), (Dim3::new(3, 3, 3), Dim3::new(4, 4, 4)));
    }

    #[test]
    fn helpers_panic_on_a_zero_block_extent_naming_it() {
        assert!(panic_message(|| LaunchConfig::for_elements(10, 0)).contains("for_elements: `block` is 0"));
        assert!(panic_message(|| LaunchConfig::for_2d(64, 64, (0, 16))).contains("for_2d: `block.0`"));
        assert!(panic_message(|| LaunchConfig::for_2d(64, 64, (16, 0))).contains("for_2d: `block.1`"));
        let e = Dim3::new(8, 8, 8);
        assert!(panic_message(|| LaunchConfig::for_3d(e, Dim3::new(0, 1, 1))).contains("for_3d: `block.x`"));
        assert!(panic_message(|| LaunchConfig::for_3d(e, Dim3::new(1, 0, 1))).contains("for_3d: `block.y`"));
        assert!(panic_message(|| LaunchConfig::for_3d(e, Dim3::new(1, 1, 0))).contains("for_3d: `block.z`"));
    }

    #[test]
    fn total_threads_saturates_and_checked_total_threads_tells() {
        let c = LaunchConfig::new(1000, 256);
        assert_eq!((c.total_threads(), c.checked_total_threads(), c.block_threads()), (256_000, Some(256_000), 256));
        let max = u32::MAX;
        // 2^32-1 cubed overflows u64 on its own: the grid volume alone, before the block.
        let huge = LaunchConfig::new((max, max, max), (max, max, max));
        assert_eq!((huge.total_threads(), huge.checked_total_threads()), (u64::MAX, None));
        assert_eq!(huge.block_threads(), u64::MAX);
        // Just over: (2^32-1)^2 * 2 blocks of 1 thread.
        let over = LaunchConfig::new((max, max, 2), 1);
        assert_eq!(over.checked_total_threads(), None);
        // A 0 extent: no threads, even with huge other extents.
        assert_eq!(LaunchConfig::new((max, max, 0), (max, max, max)).checked_total_threads(), Some(0));
    }

    #[test]
    fn check_index_space_rejects_grids_global_id_cannot_number() {
        assert_eq!(LaunchConfig::new(1000, 256).check_index_space(), Ok(()));
        // The largest grid a device accepts today: 2^31-1 x 65535 x 65535 blocks of 1024.
        let device_max = LaunchConfig::new((i32::MAX as u32, 65_535, 65_535), 1024);
        let msg = device_max.check_index_space().unwrap_err();
        assert!(msg.contains("over 2^64") && msg.contains("global_id") && msg.contains("1024 threads"), "{msg}");
        // Exactly u64::MAX threads fits (indices 0..u64::MAX-1): (2^32-1) * 641 * 6700417 (= 2^32+1).
        let exact = LaunchConfig::new((u32::MAX, 1, 1), (641, 6_700_417, 1));
        assert_eq!(exact.checked_total_threads(), Some(u64::MAX));
        assert_eq!(exact.check_index_space(), Ok(()));
        let one_more = LaunchConfig::new((u32::MAX, 1, 1), (641, 6_700_417, 2));
        assert!(one_more.check_index_space().is_err());
        let msg = LaunchConfig::new((u32::MAX, u32::MAX, u32::MAX), 1).check_index_space().unwrap_err();
        assert!(msg.contains("(4294967295*4294967295*4294967295) blocks"), "{msg}");
        assert_eq!(LaunchConfig::new((0, u32::MAX, u32::MAX), (u32::MAX, u32::MAX, 1)).check_index_space(), Ok(()));
    }
}

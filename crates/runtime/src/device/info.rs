//! What Cohort reads of a device once, when its [`Gpu`](crate::Gpu) is made: [`DeviceInfo`].

use std::fmt;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUdevice_attribute as A;

use super::failure::{device_error, remember_name};
use crate::error::Result;

/// What Cohort needs to know about a device (read once, when the [`Gpu`](crate::Gpu) is made).
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Ordinal, as the driver numbers devices.
    pub ordinal: usize,
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Device memory, bytes.
    pub total_memory: usize,
    /// Threads per block, at most.
    pub max_threads_per_block: u32,
    /// Block extent limits.
    pub max_block_dim: [u32; 3],
    /// Grid extent limits.
    pub max_grid_dim: [u32; 3],
    /// Shared memory a block gets without opting in, bytes.
    pub shared_per_block: u32,
    /// Shared memory a block can opt into, bytes.
    pub shared_per_block_optin: u32,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Threads per SM, at most.
    pub max_threads_per_sm: u32,
    /// Whether `cuLaunchCooperativeKernel` works here.
    pub cooperative_launch: bool,
    /// L2 cache, bytes.
    pub l2_bytes: u32,
    /// SM clock, kHz.
    pub clock_khz: u32,
    /// Memory clock, kHz.
    pub memory_clock_khz: u32,
    /// Memory bus width, bits.
    pub memory_bus_bits: u32,
    /// Driver version (`13000` for CUDA 13.0).
    pub driver_version: i32,
}

impl DeviceInfo {
    /// Compute capability × 10 (`90` for 9.0).
    #[must_use]
    pub fn cc(&self) -> u32 {
        self.compute_capability.0 * 10 + self.compute_capability.1
    }

    /// Theoretical memory bandwidth, GB/s (DDR: two transfers per clock).
    #[must_use]
    pub fn peak_bandwidth_gbs(&self) -> f64 {
        2.0 * self.memory_clock_khz as f64 * 1e3 * (self.memory_bus_bits as f64 / 8.0) / 1e9
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] {}: compute capability {}.{}, {} SMs, {:.1} GiB, cooperative launch {}",
            self.ordinal,
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sms,
            self.total_memory as f64 / (1u64 << 30) as f64,
            if self.cooperative_launch { "yes" } else { "no" }
        )
    }
}

pub(super) fn read_info(ctx: &CudaContext, ordinal: usize) -> Result<DeviceInfo> {
    let attr = |a: A| -> Result<u32> {
        ctx.attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(|code| device_error(ordinal, code, format!("reading device attribute {a:?}")))
    };
    let name = ctx.name().map_err(|code| device_error(ordinal, code, "reading the device name".into()))?;
    remember_name(ordinal, &name);
    let total_memory = ctx.total_mem().map_err(|code| device_error(ordinal, code, "reading the memory size".into()))?;
    let driver_version = crate::backend::cuda::driver_version()
        .map_err(|code| device_error(ordinal, code, "reading the driver version".into()))?;
    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability: (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        sms: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        total_memory,
        max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        shared_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        shared_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        cooperative_launch: attr(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
        l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        memory_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
        memory_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
        driver_version,
    })
}

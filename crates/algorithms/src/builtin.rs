//! The built-in kernels (feature `builtin`): [`Algorithms`], loaded once per device.

use cohort::DeviceCopy;
use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Gpu, LaunchConfig, Module, Stream};

use crate::host::{AlgorithmKernels, Result, Temp, exclusive_scan, inclusive_scan, reduce};
use crate::{Max, Min, Sum};

/// The built-in kernels (this crate's PTX), loaded once per device.
#[derive(Debug)]
pub struct Algorithms {
    sum_u32: crate::sum_u32::Kernels,
    sum_i32: crate::sum_i32::Kernels,
    pub(crate) sum_u64: crate::sum_u64::Kernels,
    sum_i64: crate::sum_i64::Kernels,
    sum_f32: crate::sum_f32::Kernels,
    sum_f64: crate::sum_f64::Kernels,
    min_u32: crate::min_u32::Kernels,
    min_i32: crate::min_i32::Kernels,
    min_f32: crate::min_f32::Kernels,
    max_u32: crate::max_u32::Kernels,
    max_i32: crate::max_i32::Kernels,
    max_f32: crate::max_f32::Kernels,
    pub(crate) select: crate::select::SelectSet,
    pub(crate) sort: crate::radix_sort::SortSet,
    pub(crate) histogram: crate::histogram::HistogramSet,
    pub(crate) segmented: crate::segmented::SegmentedSet,
    pub(crate) arg: crate::arg::ArgSet,
    /// The device's SMs (grids of a few blocks per SM).
    pub(crate) sms: u32,
    /// Shared memory a block gets without opting in, bytes.
    pub(crate) smem_per_block: u32,
}

/// An element type and built-in operator with kernels in [`Algorithms`].
pub trait Builtin<Op>: DeviceCopy {
    #[doc(hidden)]
    fn kernels(a: &Algorithms) -> &dyn AlgorithmKernels<Self>;
}

macro_rules! builtin {
    ($($op:ident $t:ty => $field:ident;)*) => {$(
        impl Builtin<$op> for $t {
            fn kernels(a: &Algorithms) -> &dyn AlgorithmKernels<Self> {
                &a.$field
            }
        }
    )*};
}
builtin! {
    Sum u32 => sum_u32; Sum i32 => sum_i32; Sum u64 => sum_u64; Sum i64 => sum_i64; Sum f32 => sum_f32; Sum f64 => sum_f64;
    Min u32 => min_u32; Min i32 => min_i32; Min f32 => min_f32;
    Max u32 => max_u32; Max i32 => max_i32; Max f32 => max_f32;
}

impl<T: DeviceCopy> AlgorithmKernels<T> for &dyn AlgorithmKernels<T> {
    fn launch_scan(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        state: &mut DeviceBuffer<u64>,
        init: T,
        exclusive: bool,
    ) -> Result<()> {
        (**self).launch_scan(stream, config, input, out, state, init, exclusive)
    }
    fn launch_reduce(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        input: DeviceView<'_, T>,
        out: DeviceViewMut<'_, T>,
        init: T,
        with_init: bool,
    ) -> Result<()> {
        (**self).launch_reduce(stream, config, input, out, init, with_init)
    }
}

impl Algorithms {
    /// Loads the built-in kernels on `gpu` (the GPU or the CPU device).
    ///
    /// # Errors
    /// As `Gpu::load` and a kernel's `load`.
    pub fn load(gpu: &Gpu) -> Result<Self> {
        let m: Module = gpu.load(&crate::PTX)?;
        Ok(Self {
            sum_u32: crate::sum_u32::Kernels::load(&m)?,
            sum_i32: crate::sum_i32::Kernels::load(&m)?,
            sum_u64: crate::sum_u64::Kernels::load(&m)?,
            sum_i64: crate::sum_i64::Kernels::load(&m)?,
            sum_f32: crate::sum_f32::Kernels::load(&m)?,
            sum_f64: crate::sum_f64::Kernels::load(&m)?,
            min_u32: crate::min_u32::Kernels::load(&m)?,
            min_i32: crate::min_i32::Kernels::load(&m)?,
            min_f32: crate::min_f32::Kernels::load(&m)?,
            max_u32: crate::max_u32::Kernels::load(&m)?,
            max_i32: crate::max_i32::Kernels::load(&m)?,
            max_f32: crate::max_f32::Kernels::load(&m)?,
            select: crate::select::SelectSet::load(&m)?,
            sort: crate::radix_sort::SortSet::load(&m)?,
            histogram: crate::histogram::HistogramSet::load(&m)?,
            segmented: crate::segmented::SegmentedSet::load(&m)?,
            arg: crate::arg::ArgSet::load(&m)?,
            sms: gpu.info().sms,
            smem_per_block: gpu.info().shared_per_block,
        })
    }

    /// [`reduce`](crate::reduce) with a built-in operator.
    ///
    /// # Errors
    /// As [`reduce`](crate::reduce).
    pub fn reduce<T: Builtin<Op>, Op>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        init: T,
        _op: Op,
        temp: &mut Temp,
    ) -> Result<()> {
        reduce(&T::kernels(self), stream, input, out, init, temp)
    }

    /// [`exclusive_scan`](crate::exclusive_scan) with a built-in operator.
    ///
    /// # Errors
    /// As [`exclusive_scan`](crate::exclusive_scan).
    pub fn exclusive_scan<T: Builtin<Op>, Op>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        init: T,
        _op: Op,
        temp: &mut Temp,
    ) -> Result<()> {
        exclusive_scan(&T::kernels(self), stream, input, out, init, temp)
    }

    /// [`inclusive_scan`](crate::inclusive_scan) with a built-in operator.
    ///
    /// # Errors
    /// As [`inclusive_scan`](crate::inclusive_scan).
    pub fn inclusive_scan<T: Builtin<Op>, Op>(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        _op: Op,
        temp: &mut Temp,
    ) -> Result<()> {
        inclusive_scan(&T::kernels(self), stream, input, out, temp)
    }
}

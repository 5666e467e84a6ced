//! The built-in kernels (feature `builtin`): [`Algorithms`], loaded once per device.

use std::format;

use cohort::DeviceCopy;
use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Gpu, LaunchConfig, Module, Stream};

use crate::host::{
    AlgorithmKernels, MergeSortKernels, Result, ScanByKeyKernels, Temp, exclusive_scan, exclusive_scan_by_key,
    inclusive_scan, inclusive_scan_by_key, merge_sort, merge_sort_keys, reduce,
};
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
    by_key: ByKeySet,
    merge: MergeSet,
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

/// A key type, value type and built-in operator with a scan-by-key kernel in [`Algorithms`].
pub trait ByKeyBuiltin<K: DeviceCopy + PartialEq, Op>: DeviceCopy {
    #[doc(hidden)]
    fn kernels(a: &Algorithms) -> &dyn ScanByKeyKernels<K, Self>;
}

macro_rules! by_key_set {
    ($($op:ident $k:ty, $t:ty => $field:ident;)*) => {
        /// The built-in scan-by-key kernels.
        #[derive(Debug)]
        struct ByKeySet {
            $($field: crate::$field::Kernels,)*
        }
        impl ByKeySet {
            fn load(m: &Module) -> Result<Self> {
                Ok(Self { $($field: crate::$field::Kernels::load(m)?,)* })
            }
        }
        $(impl ByKeyBuiltin<$k, $op> for $t {
            fn kernels(a: &Algorithms) -> &dyn ScanByKeyKernels<$k, Self> {
                &a.by_key.$field
            }
        })*
    };
}
by_key_set! {
    Sum u32, u32 => by_u32_sum_u32; Sum u32, i32 => by_u32_sum_i32; Sum u32, u64 => by_u32_sum_u64;
    Sum u32, i64 => by_u32_sum_i64; Sum u32, f32 => by_u32_sum_f32; Sum u32, f64 => by_u32_sum_f64;
    Sum u64, u32 => by_u64_sum_u32; Sum u64, i32 => by_u64_sum_i32; Sum u64, u64 => by_u64_sum_u64;
    Sum u64, i64 => by_u64_sum_i64; Sum u64, f32 => by_u64_sum_f32; Sum u64, f64 => by_u64_sum_f64;
}

/// Key types with built-in merge sort kernels (natural order, `<`).
pub trait MergeBuiltin: DeviceCopy + PartialOrd {
    #[doc(hidden)]
    fn kernels32(a: &Algorithms) -> &dyn MergeSortKernels<Self, u32>;
    #[doc(hidden)]
    fn kernels64(a: &Algorithms) -> &dyn MergeSortKernels<Self, u64>;
}

macro_rules! merge_set {
    ($($k:ty => $f32:ident, $f64:ident;)*) => {
        /// The built-in merge sort kernels.
        #[derive(Debug)]
        struct MergeSet {
            $($f32: crate::$f32::Kernels, $f64: crate::$f64::Kernels,)*
        }
        impl MergeSet {
            fn load(m: &Module) -> Result<Self> {
                Ok(Self { $($f32: crate::$f32::Kernels::load(m)?, $f64: crate::$f64::Kernels::load(m)?,)* })
            }
        }
        $(impl MergeBuiltin for $k {
            fn kernels32(a: &Algorithms) -> &dyn MergeSortKernels<Self, u32> {
                &a.merge.$f32
            }
            fn kernels64(a: &Algorithms) -> &dyn MergeSortKernels<Self, u64> {
                &a.merge.$f64
            }
        })*
    };
}
merge_set! {
    u32 => merge_u32_v32, merge_u32_v64;
    u64 => merge_u64_v32, merge_u64_v64;
}

impl<K: DeviceCopy, V: DeviceCopy> MergeSortKernels<K, V> for &dyn MergeSortKernels<K, V> {
    fn launch_tiles(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        keys: DeviceView<'_, K>,
        values: DeviceView<'_, V>,
        keys_out: DeviceViewMut<'_, K>,
        values_out: DeviceViewMut<'_, V>,
    ) -> Result<()> {
        (**self).launch_tiles(stream, config, keys, values, keys_out, values_out)
    }
    fn launch_partition(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        keys: DeviceView<'_, K>,
        width: u64,
        tile: u64,
        splits: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        (**self).launch_partition(stream, config, keys, width, tile, splits)
    }
    fn launch_merge(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        keys: DeviceView<'_, K>,
        values: DeviceView<'_, V>,
        splits: &DeviceBuffer<u64>,
        width: u64,
        keys_out: DeviceViewMut<'_, K>,
        values_out: DeviceViewMut<'_, V>,
    ) -> Result<()> {
        (**self).launch_merge(stream, config, keys, values, splits, width, keys_out, values_out)
    }
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
            by_key: ByKeySet::load(&m)?,
            merge: MergeSet::load(&m)?,
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

    /// [`inclusive_scan_by_key`](crate::inclusive_scan_by_key) with a built-in operator
    /// ([`Sum`]: CUB's `DeviceScan::InclusiveSumByKey`).
    ///
    /// # Errors
    /// As [`inclusive_scan_by_key`](crate::inclusive_scan_by_key).
    pub fn inclusive_scan_by_key<K: DeviceCopy + PartialEq, T: ByKeyBuiltin<K, Op>, Op>(
        &self,
        stream: &Stream,
        keys: &DeviceBuffer<K>,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        _op: Op,
        temp: &mut Temp,
    ) -> Result<()> {
        inclusive_scan_by_key(&T::kernels(self), stream, keys, input, out, temp)
    }

    /// [`exclusive_scan_by_key`](crate::exclusive_scan_by_key) with a built-in operator
    /// ([`Sum`] with `init` zero: CUB's `DeviceScan::ExclusiveSumByKey`).
    ///
    /// # Errors
    /// As [`exclusive_scan_by_key`](crate::exclusive_scan_by_key).
    #[allow(clippy::too_many_arguments)]
    pub fn exclusive_scan_by_key<K: DeviceCopy + PartialEq, T: ByKeyBuiltin<K, Op>, Op>(
        &self,
        stream: &Stream,
        keys: &DeviceBuffer<K>,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        init: T,
        _op: Op,
        temp: &mut Temp,
    ) -> Result<()> {
        exclusive_scan_by_key(&T::kernels(self), stream, keys, input, out, init, temp)
    }

    /// [`merge_sort_keys`](crate::merge_sort_keys) of built-in keys in their natural order
    /// (CUB's `DeviceMergeSort::SortKeys` with `cuda::std::less`): stable. For the built-in key
    /// types a radix sort is faster; this is the comparator path, built in to compare it with
    /// CUB's.
    ///
    /// # Errors
    /// As [`merge_sort_keys`](crate::merge_sort_keys).
    pub fn merge_sort_keys<K: MergeBuiltin>(
        &self,
        stream: &Stream,
        keys: &mut DeviceBuffer<K>,
        temp: &mut Temp,
    ) -> Result<()> {
        merge_sort_keys(&K::kernels32(self), stream, keys, temp)
    }

    /// [`merge_sort_pairs`](crate::merge_sort_pairs) of built-in keys in their natural order,
    /// values of any 4- or 8-byte `DeviceCopy` type (moved as their bytes).
    ///
    /// # Errors
    /// As [`merge_sort_pairs`](crate::merge_sort_pairs), and a value type of another size.
    pub fn merge_sort_pairs<K: MergeBuiltin, V: DeviceCopy>(
        &self,
        stream: &Stream,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<V>,
        temp: &mut Temp,
    ) -> Result<()> {
        let cast = || cohort_runtime::Error::Argument("merge sort: the values are not aligned for their width".into());
        match size_of::<V>() {
            4 => {
                let v = values.slice_mut(..).cast::<u32>().ok_or_else(cast)?;
                merge_sort(&K::kernels32(self), stream, keys.slice_mut(..), Some(v), temp)
            }
            8 => {
                let v = values.slice_mut(..).cast::<u64>().ok_or_else(cast)?;
                merge_sort(&K::kernels64(self), stream, keys.slice_mut(..), Some(v), temp)
            }
            s => Err(cohort_runtime::Error::Argument(format!("merge sort: values of {s} bytes (4 or 8 are built in)"))),
        }
    }
}

//! # cohort-algorithms: device-wide algorithms (CUB's `Device*`) in Rust
//!
//! Reduce and single-pass scan (decoupled look-back) over a `DeviceBuffer`, on the GPU and on
//! the CPU device, for the built-in types and operators out of the box, and for your own
//! element type or operator through [`algorithm_kernels!`] in your kernels crate. The design
//! (layers, the look-back's memory ordering and forward progress, the CUB ↔ Cohort table) is
//! in the docs of [`cohort::algorithms`]; the building blocks are [`cohort::block`].
//!
//! ```no_run
//! # fn main() -> Result<(), cohort_runtime::Error> {
//! use cohort_algorithms::{Algorithms, Sum, Temp};
//! let gpu = cohort_runtime::Gpu::from_env()?;
//! let algos = Algorithms::load(&gpu)?;
//! let input = gpu.upload(&[3u32, 1, 4, 1, 5])?;
//! let mut out = gpu.zeroed::<u32>(5)?;
//! let mut temp = Temp::new(&gpu);
//! algos.exclusive_scan(gpu.stream(), &input, &mut out, 0, Sum, &mut temp)?;
//! assert_eq!(out.to_vec()?, [0, 3, 4, 8, 9]);
//! let mut sum = gpu.zeroed::<u32>(1)?;
//! algos.reduce(gpu.stream(), &input, &mut sum, 0, Sum, &mut temp)?;
//! assert_eq!(sum.to_vec()?, [14]);
//! # Ok(()) }
//! ```
//!
//! | algorithm | CUB | here | types × operators built in |
//! |---|---|---|---|
//! | reduce | `DeviceReduce::Reduce` / `Sum` / `Min` / `Max` | [`Algorithms::reduce`] | [`Sum`] of `u32 i32 u64 i64 f32 f64`; [`Min`], [`Max`] of `u32 i32 f32` |
//! | exclusive scan | `DeviceScan::ExclusiveScan` / `ExclusiveSum` | [`Algorithms::exclusive_scan`] | as reduce |
//! | inclusive scan | `DeviceScan::InclusiveScan` / `InclusiveSum` | [`Algorithms::inclusive_scan`] | as reduce |
//! | scan by key | `DeviceScan::InclusiveScanByKey` / `ExclusiveScanByKey` / `InclusiveSumByKey` / `ExclusiveSumByKey` | [`Algorithms::inclusive_scan_by_key`] / [`exclusive_scan_by_key`](Algorithms::exclusive_scan_by_key) (single pass; a segment is a run of keys equal by `==`) | [`Sum`] of `u32 i32 u64 i64 f32 f64` by `u32` or `u64` keys |
//! | select-if / partition-if | `DeviceSelect::If` / `DevicePartition::If` | `Algorithms::select_if` / `partition_if` with [`LessThan`] | `u32 i32 u64 f32` |
//! | select-flagged | `DeviceSelect::Flagged` | `Algorithms::select_flagged` (`u8` flags) | as select-if |
//! | unique, run-length encode | `DeviceSelect::Unique`, `DeviceRunLengthEncode::Encode` | `Algorithms::unique`, `run_length_encode` | as select-if |
//! | radix sort | `DeviceRadixSort::SortKeys` / `SortPairs` (+ `Descending`, `begin_bit`/`end_bit`) | `Algorithms::radix_sort_keys` / `radix_sort_pairs` with [`RadixBits`] (stable; LSD, 8 bits a pass) | keys `u32 u64 i32 i64 f32 f64`; values any 4- or 8-byte type |
//! | merge sort | `DeviceMergeSort::SortKeys` / `SortPairs` / `StableSortKeys` (a comparator) | [`Algorithms::merge_sort_keys`] / [`merge_sort_pairs`](Algorithms::merge_sort_pairs) (stable; `<`) | keys `u32 u64`; values any 4- or 8-byte type |
//! | histogram | `DeviceHistogram::HistogramEven` / `HistogramRange` | `Algorithms::histogram_even` / `histogram_range` (`u32` counts; bins privatized per warp in shared memory) | samples `u8 u16 u32 i32` (levels `i64`), `f32` (levels `f32`; NaN never counted) |
//! | segmented reduce | `DeviceSegmentedReduce::Reduce` / `Sum` / `Min` / `Max` | `Algorithms::segmented_reduce` (offsets `offsets[s]..offsets[s + 1]`; work cut by elements, so huge and tiny segments run alike) | as reduce |
//! | argmin / argmax | `DeviceReduce::ArgMin` / `ArgMax` | `Algorithms::arg_min` / `arg_max` (first position; NaN wins) | `u32 i32 u64 i64 f32 f64` |
//! | your type / op | a C++ functor and a template instantiation | [`algorithm_kernels!`] in your kernels crate, then [`reduce`], [`exclusive_scan`], [`inclusive_scan`] | any `DeviceCopy` of at most 32 bytes, any associative op |
//! | your key type and comparator, merge sort | `DeviceMergeSort` with a C++ comparator | [`merge_sort_kernels!`], then [`merge_sort_keys`], [`merge_sort_pairs`] | keys and values any `DeviceCopy`, at most 192 bytes together |
//! | your key / value / op, by key | as above | [`scan_by_key_kernels!`], then [`inclusive_scan_by_key`], [`exclusive_scan_by_key`] | keys any `DeviceCopy + PartialEq`; values a `DeviceCopy` of at most 24 bytes (size a multiple of 4) |

#![no_std]
#![cfg_attr(all(feature = "builtin", target_arch = "nvptx64"), feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
cohort_runtime::include_ptx!();

mod ops;
pub use ops::{Max, Min, Sum};
#[cfg(feature = "builtin")]
mod select;
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
pub use select::{LessThan, SelectBuiltin, SelectKernels};
#[cfg(feature = "builtin")]
mod arg;
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
pub use arg::{ArgBuiltin, ArgKernels};
#[cfg(feature = "builtin")]
mod histogram;
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
pub use histogram::{HistogramBuiltin, HistogramKernels};
#[cfg(feature = "builtin")]
mod segmented;
pub use cohort::algorithms::{ArgPair, ArgValue, HistogramSample};
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
pub use segmented::{SegmentedBuiltin, SegmentedKernels};
#[cfg(feature = "builtin")]
mod radix_sort;
pub use cohort::block::{RadixBits, RadixKey};
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
pub use radix_sort::{SortBuiltin, SortKernels};

#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
mod builtin;
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
pub use builtin::{Algorithms, Builtin, ByKeyBuiltin, MergeBuiltin};

#[doc(hidden)]
pub mod __private {
    pub use cohort;
    #[cfg(not(target_arch = "nvptx64"))]
    pub use cohort_runtime;
}

/// Instantiates the device-wide algorithms for one element type and operator, in the calling
/// (kernels) crate: two `#[kernel]`s with the names given (their PTX entries: unique in the
/// module) and, on the host, `Kernels`, which [`reduce`], [`exclusive_scan`] and
/// [`inclusive_scan`] launch. No `unsafe` and no C++ on the user's side.
///
/// ```ignore
/// #[derive(Clone, Copy, Debug, Default, PartialEq, cohort::DeviceCopy)]
/// #[repr(C)]
/// pub struct Affine { pub a: f32, pub b: f32 } // x ↦ a x + b, composed left to right
///
/// cohort_algorithms::algorithm_kernels! {
///     /// Scans and reductions of affine maps.
///     pub mod affine_algos {
///         type T = super::Affine;
///         op = |f: super::Affine, g: super::Affine| super::Affine { a: g.a * f.a, b: g.a * f.b + g.b };
///         scan = affine_scan_tile;
///         reduce = affine_reduce_tiles;
///     }
/// }
/// // host: let k = affine_algos::Kernels::load(&module)?;
/// //       cohort_algorithms::inclusive_scan(&k, stream, &input, &mut out, &mut temp)?;
/// ```
///
/// The kernels themselves are private to the module: only the host functions, which size and
/// clear the temporary storage, launch them (a scan launched over uncleared storage would give
/// wrong values, or panic after its bounded wait).
#[macro_export]
macro_rules! algorithm_kernels {
    (
        $(#[$m:meta])*
        $vis:vis mod $name:ident {
            type T = $t:ty;
            op = $op:expr;
            scan = $scan:ident;
            reduce = $reduce:ident;
        }
    ) => {
        $(#[$m])*
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::__private::cohort;

            /// The element type.
            pub type Elem = $t;

            /// One tile of the single-pass scan.
            #[cohort::kernel]
            fn $scan(
                input: &[$t],
                mut out: cohort::slice::DisjointSlice<$t, cohort::thread::Blocked<16>>,
                state: &[cohort::atomic::AtomicU64],
                init: $t,
                exclusive: u32,
            ) {
                let init = if exclusive != 0 { ::core::option::Option::Some(init) } else { ::core::option::Option::None };
                // SAFETY: this kernel writes `out` nowhere else.
                unsafe { cohort::algorithms::scan_tile::<$t, _, 16>(input, &mut out, state, init, $op) }
            }

            /// One pass of the reduction: block `b`'s partial into `out[b]`, preceded by `init`
            /// when `with_init` is not zero (the last pass).
            #[cohort::kernel]
            fn $reduce(
                input: &[$t],
                mut out: cohort::slice::DisjointSlice<$t, cohort::slice::PerBlock>,
                init: $t,
                with_init: u32,
            ) {
                use cohort::cg::ReduceOp as _;
                let op = $op;
                let r = cohort::algorithms::reduce_tiles::<$t, _, 16>(input, op);
                let block = cohort::cg::this_thread_block();
                if let ::core::option::Option::Some(b) = block.leader_index() {
                    let v = match r {
                        ::core::option::Option::Some(r) if with_init != 0 => op.combine(init, r),
                        ::core::option::Option::Some(r) => r,
                        ::core::option::Option::None => init,
                    };
                    out.set(b, v);
                }
            }

            /// The loaded kernels, for [`reduce`]($crate::reduce) and the scans.
            #[cfg(not(target_arch = "nvptx64"))]
            #[derive(Debug)]
            pub struct Kernels {
                scan: $scan,
                reduce: $reduce,
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl Kernels {
                /// Finds both kernels in `module` (the calling crate's PTX, loaded).
                ///
                /// # Errors
                /// As a kernel's `load`.
                pub fn load(
                    module: &$crate::__private::cohort_runtime::Module,
                ) -> ::core::result::Result<Self, $crate::__private::cohort_runtime::Error> {
                    ::core::result::Result::Ok(Self { scan: $scan::load(module)?, reduce: $reduce::load(module)? })
                }
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::AlgorithmKernels<$t> for Kernels {
                fn launch_scan(
                    &self,
                    stream: &$crate::__private::cohort_runtime::Stream,
                    config: $crate::__private::cohort_runtime::LaunchConfig,
                    input: &$crate::__private::cohort_runtime::DeviceBuffer<$t>,
                    out: &mut $crate::__private::cohort_runtime::DeviceBuffer<$t>,
                    state: &mut $crate::__private::cohort_runtime::DeviceBuffer<u64>,
                    init: $t,
                    exclusive: bool,
                ) -> ::core::result::Result<(), $crate::__private::cohort_runtime::Error> {
                    self.scan.launch(stream, config, input, out, state, init, exclusive as u32)
                }
                fn launch_reduce(
                    &self,
                    stream: &$crate::__private::cohort_runtime::Stream,
                    config: $crate::__private::cohort_runtime::LaunchConfig,
                    input: $crate::__private::cohort_runtime::DeviceView<'_, $t>,
                    out: $crate::__private::cohort_runtime::DeviceViewMut<'_, $t>,
                    init: $t,
                    with_init: bool,
                ) -> ::core::result::Result<(), $crate::__private::cohort_runtime::Error> {
                    self.reduce.launch(stream, config, input, out, init, with_init as u32)
                }
            }
        }
    };
}

/// Instantiates the single-pass **scan by key** (CUB's `DeviceScan::InclusiveScanByKey` /
/// `ExclusiveScanByKey`) for one key type, value type and operator, in the calling (kernels)
/// crate: one `#[kernel]` with the name given and, on the host, `Kernels`, which
/// [`inclusive_scan_by_key`] and [`exclusive_scan_by_key`] launch. Keys: any `DeviceCopy +
/// PartialEq` (a segment is a run of consecutive keys equal by `==`); values: a `DeviceCopy` of
/// at most 24 bytes whose size is a multiple of 4; the operator: associative. No `unsafe` and no
/// C++ on the user's side.
///
/// ```ignore
/// cohort_algorithms::scan_by_key_kernels! {
///     /// Affine maps composed within runs of equal `u64` keys.
///     pub mod affine_by_key {
///         type K = u64;
///         type T = super::Affine;
///         op = super::compose;
///         kernel = affine_scan_by_key_tile;
///     }
/// }
/// // host: let k = affine_by_key::Kernels::load(&module)?;
/// //       cohort_algorithms::inclusive_scan_by_key(&k, stream, &keys, &values, &mut out, &mut temp)?;
/// ```
///
/// The kernel is private to the module: only the host functions, which size and clear the
/// look-back's storage, launch it.
#[macro_export]
macro_rules! scan_by_key_kernels {
    (
        $(#[$m:meta])*
        $vis:vis mod $name:ident {
            type K = $k:ty;
            type T = $t:ty;
            op = $op:expr;
            kernel = $kern:ident;
        }
    ) => {
        $(#[$m])*
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::__private::cohort;

            /// The key type.
            pub type Key = $k;
            /// The value type.
            pub type Elem = $t;

            /// One tile of the single-pass scan by key (`SCAN_BY_KEY_ITEMS` = 8 items a thread).
            #[cohort::kernel]
            fn $kern(
                keys: &[$k],
                input: &[$t],
                mut out: cohort::slice::DisjointSlice<$t, cohort::thread::Blocked<8>>,
                state: &[cohort::atomic::AtomicU64],
                init: $t,
                exclusive: u32,
            ) {
                let init = if exclusive != 0 { ::core::option::Option::Some(init) } else { ::core::option::Option::None };
                // SAFETY: this kernel writes `out` nowhere else.
                unsafe { cohort::algorithms::scan_by_key_tile::<$k, $t, _, 8>(keys, input, &mut out, state, init, $op) }
            }

            /// The loaded kernel, for [`inclusive_scan_by_key`]($crate::inclusive_scan_by_key)
            /// and [`exclusive_scan_by_key`]($crate::exclusive_scan_by_key).
            #[cfg(not(target_arch = "nvptx64"))]
            #[derive(Debug)]
            pub struct Kernels {
                scan: $kern,
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl Kernels {
                /// Finds the kernel in `module` (the calling crate's PTX, loaded).
                ///
                /// # Errors
                /// As a kernel's `load`.
                pub fn load(
                    module: &$crate::__private::cohort_runtime::Module,
                ) -> ::core::result::Result<Self, $crate::__private::cohort_runtime::Error> {
                    ::core::result::Result::Ok(Self { scan: $kern::load(module)? })
                }
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::ScanByKeyKernels<$k, $t> for Kernels {
                fn launch_scan_by_key(
                    &self,
                    stream: &$crate::__private::cohort_runtime::Stream,
                    config: $crate::__private::cohort_runtime::LaunchConfig,
                    keys: &$crate::__private::cohort_runtime::DeviceBuffer<$k>,
                    input: &$crate::__private::cohort_runtime::DeviceBuffer<$t>,
                    out: &mut $crate::__private::cohort_runtime::DeviceBuffer<$t>,
                    state: &mut $crate::__private::cohort_runtime::DeviceBuffer<u64>,
                    init: $t,
                    exclusive: bool,
                ) -> ::core::result::Result<(), $crate::__private::cohort_runtime::Error> {
                    self.scan.launch(stream, config, keys, input, out, state, init, exclusive as u32)
                }
            }
        }
    };
}

/// Instantiates the stable **merge sort with a comparator** (CUB's `DeviceMergeSort::SortKeys`
/// / `SortPairs`) for one key type, value type and comparator, in the calling (kernels) crate:
/// three `#[kernel]`s with the names given and, on the host, `Kernels`, which
/// [`merge_sort_keys`] and [`merge_sort_pairs`] launch. `less(&a, &b)` must be a strict weak
/// order (`a < b`); one that is not gives unspecified output values, never an access out of
/// bounds. Keys and values: any `DeviceCopy`, at most 192 bytes together (for keys alone, give
/// `type V = u32;`). No `unsafe` and no C++ on the user's side.
///
/// ```ignore
/// #[derive(Clone, Copy, Debug, PartialEq, cohort::DeviceCopy)]
/// #[repr(C)]
/// pub struct Point { pub x: f32, pub y: f32 }
///
/// cohort_algorithms::merge_sort_kernels! {
///     /// Points by distance from the origin.
///     pub mod by_norm {
///         type K = super::Point;
///         type V = u32;
///         less = |a: &super::Point, b: &super::Point| a.x * a.x + a.y * a.y < b.x * b.x + b.y * b.y;
///         tiles = by_norm_tiles;
///         partition = by_norm_partition;
///         merge = by_norm_merge;
///     }
/// }
/// // host: let k = by_norm::Kernels::load(&module)?;
/// //       cohort_algorithms::merge_sort_keys(&k, stream, &mut points, &mut temp)?;
/// ```
///
/// The kernels are private to the module: only the host functions, which run the partition
/// before each merge pass in the same stream, launch them.
#[macro_export]
macro_rules! merge_sort_kernels {
    (
        $(#[$m:meta])*
        $vis:vis mod $name:ident {
            type K = $k:ty;
            type V = $v:ty;
            less = $less:expr;
            tiles = $tiles:ident;
            partition = $part:ident;
            merge = $merge:ident;
        }
    ) => {
        $(#[$m])*
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::__private::cohort;

            /// The key type.
            pub type Key = $k;
            /// The value type.
            pub type Value = $v;

            /// Sorts each tile (see `cohort::algorithms::merge_sort_tiles`).
            #[cohort::kernel]
            fn $tiles(
                keys: &[$k],
                values: &[$v],
                mut keys_out: cohort::slice::DisjointSlice<$k, cohort::thread::Scattered>,
                mut values_out: cohort::slice::DisjointSlice<$v, cohort::thread::Scattered>,
            ) {
                const N: usize = cohort::algorithms::merge_items::<$k, $v>();
                let (sk, sv) = cohort::algorithms::merge_smem::<$k, $v>();
                // SAFETY: this kernel writes its outputs nowhere else.
                unsafe {
                    cohort::algorithms::merge_sort_tiles::<$k, $v, _, N>(
                        keys, values, &mut keys_out, &mut values_out, $less, &sk, &sv,
                    )
                }
            }

            /// A merge pass's cuts (see `cohort::algorithms::merge_partition`).
            #[cohort::kernel]
            fn $part(keys: &[$k], width: u64, tile: u64, mut splits: cohort::slice::DisjointSlice<u64>) {
                cohort::algorithms::merge_partition::<$k, _>(keys, width as usize, tile as usize, &mut splits, $less)
            }

            /// A merge pass (see `cohort::algorithms::merge_tiles`).
            #[cohort::kernel]
            fn $merge(
                keys: &[$k],
                values: &[$v],
                splits: &[u64],
                width: u64,
                mut keys_out: cohort::slice::DisjointSlice<$k, cohort::thread::Scattered>,
                mut values_out: cohort::slice::DisjointSlice<$v, cohort::thread::Scattered>,
            ) {
                const N: usize = cohort::algorithms::merge_items::<$k, $v>();
                let (sk, sv) = cohort::algorithms::merge_smem::<$k, $v>();
                // SAFETY: this kernel writes its outputs nowhere else.
                unsafe {
                    cohort::algorithms::merge_tiles::<$k, $v, _, N>(
                        keys, values, splits, width as usize, &mut keys_out, &mut values_out, $less, &sk, &sv,
                    )
                }
            }

            /// The loaded kernels, for [`merge_sort_keys`]($crate::merge_sort_keys) and
            /// [`merge_sort_pairs`]($crate::merge_sort_pairs).
            #[cfg(not(target_arch = "nvptx64"))]
            #[derive(Debug)]
            pub struct Kernels {
                tiles: $tiles,
                part: $part,
                merge: $merge,
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl Kernels {
                /// Finds the kernels in `module` (the calling crate's PTX, loaded).
                ///
                /// # Errors
                /// As a kernel's `load`.
                pub fn load(
                    module: &$crate::__private::cohort_runtime::Module,
                ) -> ::core::result::Result<Self, $crate::__private::cohort_runtime::Error> {
                    ::core::result::Result::Ok(Self {
                        tiles: $tiles::load(module)?,
                        part: $part::load(module)?,
                        merge: $merge::load(module)?,
                    })
                }
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::MergeSortKernels<$k, $v> for Kernels {
                fn launch_tiles(
                    &self,
                    stream: &$crate::__private::cohort_runtime::Stream,
                    config: $crate::__private::cohort_runtime::LaunchConfig,
                    keys: $crate::__private::cohort_runtime::DeviceView<'_, $k>,
                    values: $crate::__private::cohort_runtime::DeviceView<'_, $v>,
                    keys_out: $crate::__private::cohort_runtime::DeviceViewMut<'_, $k>,
                    values_out: $crate::__private::cohort_runtime::DeviceViewMut<'_, $v>,
                ) -> ::core::result::Result<(), $crate::__private::cohort_runtime::Error> {
                    self.tiles.launch(stream, config, keys, values, keys_out, values_out)
                }
                fn launch_partition(
                    &self,
                    stream: &$crate::__private::cohort_runtime::Stream,
                    config: $crate::__private::cohort_runtime::LaunchConfig,
                    keys: $crate::__private::cohort_runtime::DeviceView<'_, $k>,
                    width: u64,
                    tile: u64,
                    splits: &mut $crate::__private::cohort_runtime::DeviceBuffer<u64>,
                ) -> ::core::result::Result<(), $crate::__private::cohort_runtime::Error> {
                    self.part.launch(stream, config, keys, width, tile, splits)
                }
                fn launch_merge(
                    &self,
                    stream: &$crate::__private::cohort_runtime::Stream,
                    config: $crate::__private::cohort_runtime::LaunchConfig,
                    keys: $crate::__private::cohort_runtime::DeviceView<'_, $k>,
                    values: $crate::__private::cohort_runtime::DeviceView<'_, $v>,
                    splits: &$crate::__private::cohort_runtime::DeviceBuffer<u64>,
                    width: u64,
                    keys_out: $crate::__private::cohort_runtime::DeviceViewMut<'_, $k>,
                    values_out: $crate::__private::cohort_runtime::DeviceViewMut<'_, $v>,
                ) -> ::core::result::Result<(), $crate::__private::cohort_runtime::Error> {
                    self.merge.launch(stream, config, keys, values, splits, width, keys_out, values_out)
                }
            }
        }
    };
}

/// The built-in kernels (feature `builtin`), one module per type and operator.
#[cfg(feature = "builtin")]
macro_rules! builtin_kernels {
    ($($name:ident: $t:ty, $op:ident, $scan:ident, $reduce:ident;)*) => {$(
        algorithm_kernels! { #[doc(hidden)] pub mod $name { type T = $t; op = crate::$op; scan = $scan; reduce = $reduce; } }
    )*};
}
#[cfg(feature = "builtin")]
builtin_kernels! {
    sum_u32: u32, Sum, scan_sum_u32, reduce_sum_u32;
    sum_i32: i32, Sum, scan_sum_i32, reduce_sum_i32;
    sum_u64: u64, Sum, scan_sum_u64, reduce_sum_u64;
    sum_i64: i64, Sum, scan_sum_i64, reduce_sum_i64;
    sum_f32: f32, Sum, scan_sum_f32, reduce_sum_f32;
    sum_f64: f64, Sum, scan_sum_f64, reduce_sum_f64;
    min_u32: u32, Min, scan_min_u32, reduce_min_u32;
    min_i32: i32, Min, scan_min_i32, reduce_min_i32;
    min_f32: f32, Min, scan_min_f32, reduce_min_f32;
    max_u32: u32, Max, scan_max_u32, reduce_max_u32;
    max_i32: i32, Max, scan_max_i32, reduce_max_i32;
    max_f32: f32, Max, scan_max_f32, reduce_max_f32;
}

/// The built-in scan-by-key kernels (feature `builtin`): [`Sum`] by `u32` or `u64` keys.
#[cfg(feature = "builtin")]
macro_rules! builtin_by_key {
    ($($name:ident: $k:ty, $t:ty, $op:ident, $kern:ident;)*) => {$(
        scan_by_key_kernels! { #[doc(hidden)] pub mod $name { type K = $k; type T = $t; op = crate::$op; kernel = $kern; } }
    )*};
}
#[cfg(feature = "builtin")]
builtin_by_key! {
    by_u32_sum_u32: u32, u32, Sum, scan_by_u32_sum_u32;
    by_u32_sum_i32: u32, i32, Sum, scan_by_u32_sum_i32;
    by_u32_sum_u64: u32, u64, Sum, scan_by_u32_sum_u64;
    by_u32_sum_i64: u32, i64, Sum, scan_by_u32_sum_i64;
    by_u32_sum_f32: u32, f32, Sum, scan_by_u32_sum_f32;
    by_u32_sum_f64: u32, f64, Sum, scan_by_u32_sum_f64;
    by_u64_sum_u32: u64, u32, Sum, scan_by_u64_sum_u32;
    by_u64_sum_i32: u64, i32, Sum, scan_by_u64_sum_i32;
    by_u64_sum_u64: u64, u64, Sum, scan_by_u64_sum_u64;
    by_u64_sum_i64: u64, i64, Sum, scan_by_u64_sum_i64;
    by_u64_sum_f32: u64, f32, Sum, scan_by_u64_sum_f32;
    by_u64_sum_f64: u64, f64, Sum, scan_by_u64_sum_f64;
}

/// The built-in merge sort kernels (feature `builtin`): `u32` and `u64` keys in their natural
/// order, values moved as 4- or 8-byte words.
#[cfg(feature = "builtin")]
macro_rules! builtin_merge {
    ($($name:ident: $k:ty, $v:ty, $tiles:ident, $part:ident, $merge:ident;)*) => {$(
        merge_sort_kernels! {
            #[doc(hidden)]
            pub mod $name {
                type K = $k;
                type V = $v;
                less = |a: &$k, b: &$k| *a < *b;
                tiles = $tiles;
                partition = $part;
                merge = $merge;
            }
        }
    )*};
}
#[cfg(feature = "builtin")]
builtin_merge! {
    merge_u32_v32: u32, u32, merge_tiles_u32_v32, merge_part_u32_v32, merge_pass_u32_v32;
    merge_u32_v64: u32, u64, merge_tiles_u32_v64, merge_part_u32_v64, merge_pass_u32_v64;
    merge_u64_v32: u64, u32, merge_tiles_u64_v32, merge_part_u64_v32, merge_pass_u64_v32;
    merge_u64_v64: u64, u64, merge_tiles_u64_v64, merge_part_u64_v64, merge_pass_u64_v64;
}

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
//! | select-if / partition-if | `DeviceSelect::If` / `DevicePartition::If` | `Algorithms::select_if` / `partition_if` with [`LessThan`] | `u32 i32 u64 f32` |
//! | select-flagged | `DeviceSelect::Flagged` | `Algorithms::select_flagged` (`u8` flags) | as select-if |
//! | unique, run-length encode | `DeviceSelect::Unique`, `DeviceRunLengthEncode::Encode` | `Algorithms::unique`, `run_length_encode` | as select-if |
//! | radix sort | `DeviceRadixSort::SortKeys` / `SortPairs` (+ `Descending`, `begin_bit`/`end_bit`) | `Algorithms::radix_sort_keys` / `radix_sort_pairs` with [`RadixBits`] (stable; LSD, 8 bits a pass) | keys `u32 u64 i32 i64 f32 f64`; values any 4- or 8-byte type |
//! | histogram | `DeviceHistogram::HistogramEven` / `HistogramRange` | `Algorithms::histogram_even` / `histogram_range` (`u32` counts; bins privatized per warp in shared memory) | samples `u8 u16 u32 i32` (levels `i64`), `f32` (levels `f32`; NaN never counted) |
//! | segmented reduce | `DeviceSegmentedReduce::Reduce` / `Sum` / `Min` / `Max` | `Algorithms::segmented_reduce` (offsets `offsets[s]..offsets[s + 1]`; work cut by elements, so huge and tiny segments run alike) | as reduce |
//! | argmin / argmax | `DeviceReduce::ArgMin` / `ArgMax` | `Algorithms::arg_min` / `arg_max` (first position; NaN wins) | `u32 i32 u64 i64 f32 f64` |
//! | your type / op | a C++ functor and a template instantiation | [`algorithm_kernels!`] in your kernels crate, then [`reduce`], [`exclusive_scan`], [`inclusive_scan`] | any `DeviceCopy` of at most 32 bytes, any associative op |

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
pub use builtin::{Algorithms, Builtin};

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

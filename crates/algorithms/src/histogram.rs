//! The built-in histograms (feature `builtin`): even and range bins of `u8 u16 u32 i32 f32`
//! samples into `u32` counts, over [`cohort::algorithms::histogram_even`] and
//! [`histogram_range`]; one kernel of each per sample type.

use cohort::algorithms::{EvenBins, histogram_even, histogram_range};
use cohort::atomic::AtomicU32;

macro_rules! hist_kernels {
    ($($t:ty => $even:ident, $range:ident;)*) => {$(
        /// One block's share of an even histogram (see `histogram_even`).
        // At most 64 registers: four blocks of 256 threads per SM.
        #[cohort::kernel(launch_bounds(256, 4))]
        fn $even(samples: &[$t], bins: EvenBins, counters: u32, out: &[AtomicU32]) {
            histogram_even::<$t>(samples, bins, counters, out)
        }

        /// One block's share of a histogram over levels (see `histogram_range`).
        // At most 64 registers: four blocks of 256 threads per SM.
        #[cohort::kernel(launch_bounds(256, 4))]
        fn $range(
            samples: &[$t],
            levels: &[<$t as cohort::algorithms::HistogramSample>::Level],
            counters: u32,
            stage_levels: u32,
            out: &[AtomicU32],
        ) {
            histogram_range::<$t>(samples, levels, counters, stage_levels != 0, out)
        }
    )*};
}

hist_kernels! {
    u8 => hist_even_u8, hist_range_u8;
    u16 => hist_even_u16, hist_range_u16;
    u32 => hist_even_u32, hist_range_u32;
    i32 => hist_even_i32, hist_range_i32;
    f32 => hist_even_f32, hist_range_f32;
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::boxed::Box;
    use std::format;

    use cohort::algorithms::{EvenBins, HIST_BLOCK, HIST_BYTES, HistogramSample, range_levels_at};
    use cohort::block::BlockHistogram;
    use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, LaunchConfig, Module, Stream};

    use crate::host::Result;

    type Level<T> = <T as HistogramSample>::Level;
    type EvenFn<T> = Box<
        dyn Fn(&Stream, LaunchConfig, DeviceView<'_, T>, EvenBins, u32, DeviceViewMut<'_, u32>) -> Result<()>
            + Send
            + Sync,
    >;
    type RangeFn<T> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                DeviceView<'_, T>,
                DeviceView<'_, Level<T>>,
                u32,
                u32,
                DeviceViewMut<'_, u32>,
            ) -> Result<()>
            + Send
            + Sync,
    >;

    /// The loaded histogram kernels of one sample type.
    pub struct HistogramKernels<T: HistogramSample> {
        even: EvenFn<T>,
        range: RangeFn<T>,
    }

    impl<T: HistogramSample> std::fmt::Debug for HistogramKernels<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("HistogramKernels")
        }
    }

    /// Sample types with built-in histogram kernels: `u8 u16 u32 i32` (levels `i64`) and `f32`
    /// (levels `f32`).
    pub trait HistogramBuiltin: HistogramSample {
        #[doc(hidden)]
        fn kernels(a: &crate::Algorithms) -> &HistogramKernels<Self>;
    }

    macro_rules! loaders {
        ($($t:ty => $field:ident, $even:ident, $range:ident;)*) => {
            /// The histogram kernels of every built-in sample type.
            #[derive(Debug)]
            pub(crate) struct HistogramSet {
                $(pub(crate) $field: HistogramKernels<$t>,)*
            }
            impl HistogramSet {
                pub(crate) fn load(m: &Module) -> Result<Self> {
                    Ok(Self {
                        $($field: {
                            let e = super::$even::load(m)?;
                            let r = super::$range::load(m)?;
                            HistogramKernels {
                                even: Box::new(move |s, c, x, p, k, o| e.launch(s, c, x, p, k, o)),
                                range: Box::new(move |s, c, x, l, k, st, o| r.launch(s, c, x, l, k, st, o)),
                            }
                        },)*
                    })
                }
            }
            $(impl HistogramBuiltin for $t {
                fn kernels(a: &crate::Algorithms) -> &HistogramKernels<Self> {
                    &a.histogram.$field
                }
            })*
        };
    }
    loaders! {
        u8 => u8s, hist_even_u8, hist_range_u8;
        u16 => u16s, hist_even_u16, hist_range_u16;
        u32 => u32s, hist_even_u32, hist_range_u32;
        i32 => i32s, hist_even_i32, hist_range_i32;
        f32 => f32s, hist_even_f32, hist_range_f32;
    }

    /// Warps per block of the histogram kernels: copies of the counters at most.
    const WARPS: usize = HIST_BLOCK as usize / 32;
    /// Blocks per SM (2048 threads).
    const BLOCKS_PER_SM: usize = 8;

    /// The grid for `n` samples of `T`: at most a few blocks per SM (each merges its counts
    /// once), at least one.
    fn grid<T>(sms: u32, n: usize) -> u32 {
        let tile = HIST_BLOCK as usize * (HIST_BYTES / size_of::<T>());
        n.div_ceil(tile).clamp(1, sms.max(1) as usize * BLOCKS_PER_SM) as u32
    }

    /// The counters of `bins` bins that fit `budget` bytes (a copy per warp at most, each with
    /// its spare counter; 0 when not even one copy fits: the kernel counts with global
    /// atomics).
    fn counters(bins: usize, budget: usize) -> u32 {
        let copies = (budget / (4 * (bins + 1))).min(WARPS);
        BlockHistogram::counters(bins, copies) as u32
    }

    /// Checks the output for `num_levels` and clears its bins in `stream`.
    fn prepare(stream: &Stream, hist: &mut DeviceBuffer<u32>, num_levels: usize, what: &str) -> Result<usize> {
        if num_levels < 2 {
            return Err(Error::Argument(format!("{what}: {num_levels} levels (at least 2: one bin)")));
        }
        let bins = num_levels - 1;
        if bins > u32::MAX as usize {
            return Err(Error::Argument(format!("{what}: {bins} bins (at most 2^32 - 1)")));
        }
        if hist.len() < bins {
            return Err(Error::Argument(format!(
                "{what}: the histogram holds {} counts, fewer than {bins} bins",
                hist.len()
            )));
        }
        stream.fill_bytes(hist.slice_mut(..bins), 0)?;
        Ok(bins)
    }

    impl crate::Algorithms {
        /// CUB's `DeviceHistogram::HistogramEven`: `hist[b]` = how many samples fall in bin
        /// `b` of `num_levels - 1` equal bins over `[lower, upper)` (`hist` is cleared
        /// first; elements past `num_levels - 1` are left alone). Samples outside `[lower,
        /// upper)` — `upper` itself included — and NaNs are not counted. Integer samples get
        /// the exact bin `⌊(x − lower) · bins / (upper − lower)⌋` (bounds as `i64`, so `0 ..
        /// 256` covers every `u8`); `f32` samples `⌊(x − lower) · scale⌋` computed in `f32`,
        /// `scale = bins / (upper − lower)` rounded once, at most the last bin. Counts wrap at
        /// 2^32. A clear and one launch, in `stream`.
        ///
        /// # Errors
        /// Fewer than 2 levels, a histogram shorter than the bins, `lower >= upper`, a
        /// non-finite or overflowing float range, an integer range whose product with the
        /// bins (when they do not divide it) reaches 2^64; a launch or driver failure.
        #[allow(clippy::too_many_arguments)]
        pub fn histogram_even<T: HistogramBuiltin>(
            &self,
            stream: &Stream,
            samples: &DeviceBuffer<T>,
            hist: &mut DeviceBuffer<u32>,
            num_levels: usize,
            lower: T::Level,
            upper: T::Level,
        ) -> Result<()> {
            let what = "histogram_even";
            if num_levels >= 2 && num_levels - 1 <= u32::MAX as usize {
                T::even_bins((num_levels - 1) as u32, lower, upper).ok_or_else(|| {
                    Error::Argument(format!(
                        "{what}: no even bins of [{lower:?}, {upper:?}) (lower < upper, finite, within range)"
                    ))
                })?;
            }
            let bins = prepare(stream, hist, num_levels, what)?;
            let p = T::even_bins(bins as u32, lower, upper).expect("checked above");
            if samples.is_empty() {
                return Ok(());
            }
            let k = counters(bins, self.smem_per_block as usize);
            let cfg = LaunchConfig::new(grid::<T>(self.sms, samples.len()), HIST_BLOCK).with_shared_mem(4 * k);
            (T::kernels(self).even)(stream, cfg, samples.slice(..), p, k, hist.slice_mut(..bins))
        }

        /// CUB's `DeviceHistogram::HistogramRange`: `hist[i]` = how many samples `x` have
        /// `levels[i] <= x < levels[i + 1]`, for the `levels.len() - 1` bins (`hist` cleared
        /// first). The levels must ascend (else the counts are unspecified — each sample in
        /// some bin or none — but never out of bounds). Samples below the first level, at or
        /// above the last, and NaNs are not counted. The levels are read from shared memory
        /// when they fit. A clear and one launch, in `stream`.
        ///
        /// # Errors
        /// Fewer than 2 levels, a histogram shorter than the bins; a launch or driver failure.
        pub fn histogram_range<T: HistogramBuiltin>(
            &self,
            stream: &Stream,
            samples: &DeviceBuffer<T>,
            hist: &mut DeviceBuffer<u32>,
            levels: &DeviceBuffer<T::Level>,
        ) -> Result<()> {
            let bins = prepare(stream, hist, levels.len(), "histogram_range")?;
            if samples.is_empty() {
                return Ok(());
            }
            let budget = self.smem_per_block as usize;
            let level_bytes = levels.len() * size_of::<T::Level>();
            let stage = level_bytes <= budget / 2;
            let (k, smem) = if stage {
                let k = counters(bins, budget - level_bytes - 16);
                (k, 4 * range_levels_at(k) + level_bytes)
            } else {
                let k = counters(bins, budget);
                (k, 4 * k as usize)
            };
            let cfg = LaunchConfig::new(grid::<T>(self.sms, samples.len()), HIST_BLOCK).with_shared_mem(smem as u32);
            (T::kernels(self).range)(
                stream,
                cfg,
                samples.slice(..),
                levels.slice(..),
                k,
                stage as u32,
                hist.slice_mut(..bins),
            )
        }
    }
}

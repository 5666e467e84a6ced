//! The built-in radix sort (feature `builtin`): keys `u32 u64 i32 i64 f32 f64`, with values of
//! any 4- or 8-byte type, over [`cohort::algorithms::radix_upsweep`] and
//! [`radix_downsweep`]; per key type an upsweep kernel and a downsweep per value width (the
//! 4-byte one also sorts keys alone).

use cohort::algorithms::{SORT_ITEMS, radix_downsweep, radix_upsweep};
use cohort::atomic::AtomicU64;
use cohort::block::RadixBits;
use cohort::slice::DisjointSlice;
use cohort::thread::Scattered;

macro_rules! sort_kernels {
    ($($k:ty => $up:ident, $down32:ident, $down64:ident;)*) => {$(
        /// The digit counts of one pass (see `radix_upsweep`).
        #[cohort::kernel]
        fn $up(keys: &[$k], hist: &[AtomicU64], shift: u32, width: u32, descending: u32) {
            let bits = RadixBits { begin: shift, end: shift.saturating_add(width), descending: descending != 0 };
            radix_upsweep::<$k, SORT_ITEMS>(keys, hist, bits)
        }

        sort_kernels!(@down $k, $down32, u32);
        sort_kernels!(@down $k, $down64, u64);
    )*};
    (@down $k:ty, $down:ident, $v:ty) => {
        /// The scatter of one pass (see `radix_downsweep`); keys alone when `values` is empty.
        #[cohort::kernel]
        #[allow(clippy::too_many_arguments)]
        fn $down(
            keys: &[$k],
            values: &[$v],
            offsets: &[u64],
            mut keys_out: DisjointSlice<$k, Scattered>,
            mut values_out: DisjointSlice<$v, Scattered>,
            shift: u32,
            width: u32,
            descending: u32,
        ) {
            const TILE: usize = cohort::algorithms::SORT_BLOCK as usize * SORT_ITEMS;
            let bits = RadixBits { begin: shift, end: shift.saturating_add(width), descending: descending != 0 };
            let smem_keys = cohort::shared::dynamic::<$k>().sub(0, TILE);
            let smem_values = cohort::shared::dynamic::<$v>().sub(TILE * size_of::<$k>() / size_of::<$v>(), TILE);
            // SAFETY: the host API launches this right after the upsweep of the same keys,
            // bits and grid and the exclusive scan of its histogram into `offsets`, all in one
            // stream, and this kernel writes its outputs nowhere else.
            unsafe {
                radix_downsweep::<$k, $v, SORT_ITEMS>(
                    keys, values, offsets, &mut keys_out, &mut values_out, bits, &smem_keys, &smem_values,
                )
            }
        }
    };
}

sort_kernels! {
    u32 => sort_up_u32, sort_down_u32_v32, sort_down_u32_v64;
    u64 => sort_up_u64, sort_down_u64_v32, sort_down_u64_v64;
    i32 => sort_up_i32, sort_down_i32_v32, sort_down_i32_v64;
    i64 => sort_up_i64, sort_down_i64_v32, sort_down_i64_v64;
    f32 => sort_up_f32, sort_down_f32_v32, sort_down_f32_v64;
    f64 => sort_up_f64, sort_down_f64_v32, sort_down_f64_v64;
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::boxed::Box;
    use std::format;

    use cohort::DeviceCopy;
    use cohort::algorithms::{RADIX_BITS, SORT_BLOCK, SORT_ITEMS, radix_hist_len, radix_smem_bytes};
    use cohort::block::{RadixBits, RadixKey};
    use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, LaunchConfig, Module, Stream};

    use crate::host::{Result, Temp, exclusive_scan};

    /// Elements per tile of the sort kernels.
    const TILE: usize = SORT_BLOCK as usize * SORT_ITEMS;
    /// Blocks of a pass at most (each takes a contiguous range of tiles).
    const SORT_GRID: usize = 1024;

    type UpFn<K> = Box<
        dyn Fn(&Stream, LaunchConfig, DeviceView<'_, K>, &mut DeviceBuffer<u64>, u32, u32, u32) -> Result<()>
            + Send
            + Sync,
    >;
    type DownFn<K, V> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                DeviceView<'_, K>,
                DeviceView<'_, V>,
                &DeviceBuffer<u64>,
                DeviceViewMut<'_, K>,
                DeviceViewMut<'_, V>,
                u32,
                u32,
                u32,
            ) -> Result<()>
            + Send
            + Sync,
    >;

    /// The loaded sort kernels of one key type.
    pub struct SortKernels<K: DeviceCopy> {
        up: UpFn<K>,
        down32: DownFn<K, u32>,
        down64: DownFn<K, u64>,
    }

    impl<K: DeviceCopy> std::fmt::Debug for SortKernels<K> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("SortKernels")
        }
    }

    /// Key types with built-in radix sort kernels.
    pub trait SortBuiltin: RadixKey {
        #[doc(hidden)]
        fn kernels(a: &crate::Algorithms) -> &SortKernels<Self>;
    }

    macro_rules! loaders {
        ($($t:ty => $field:ident, $up:ident, $down32:ident, $down64:ident;)*) => {
            /// The sort kernels of every built-in key type.
            #[derive(Debug)]
            pub(crate) struct SortSet {
                $(pub(crate) $field: SortKernels<$t>,)*
            }
            impl SortSet {
                pub(crate) fn load(m: &Module) -> Result<Self> {
                    Ok(Self {
                        $($field: {
                            let up = super::$up::load(m)?;
                            let d32 = super::$down32::load(m)?;
                            let d64 = super::$down64::load(m)?;
                            SortKernels {
                                up: Box::new(move |s, c, k, h, sh, w, d| up.launch(s, c, k, h, sh, w, d)),
                                down32: Box::new(move |s, c, k, v, o, ko, vo, sh, w, d| d32.launch(s, c, k, v, o, ko, vo, sh, w, d)),
                                down64: Box::new(move |s, c, k, v, o, ko, vo, sh, w, d| d64.launch(s, c, k, v, o, ko, vo, sh, w, d)),
                            }
                        },)*
                    })
                }
            }
            $(impl SortBuiltin for $t {
                fn kernels(a: &crate::Algorithms) -> &SortKernels<Self> {
                    &a.sort.$field
                }
            })*
        };
    }
    loaders! {
        u32 => u32s, sort_up_u32, sort_down_u32_v32, sort_down_u32_v64;
        u64 => u64s, sort_up_u64, sort_down_u64_v32, sort_down_u64_v64;
        i32 => i32s, sort_up_i32, sort_down_i32_v32, sort_down_i32_v64;
        i64 => i64s, sort_up_i64, sort_down_i64_v32, sort_down_i64_v64;
        f32 => f32s, sort_up_f32, sort_down_f32_v32, sort_down_f32_v64;
        f64 => f64s, sort_up_f64, sort_down_f64_v32, sort_down_f64_v64;
    }

    /// The values' storage as the kernels' value word: `u32` or `u64` (any 4- or 8-byte
    /// `DeviceCopy` is moved as its bytes).
    pub(crate) trait Word: DeviceCopy {
        fn down<K: DeviceCopy>(k: &SortKernels<K>) -> &DownFn<K, Self>;
    }
    impl Word for u32 {
        fn down<K: DeviceCopy>(k: &SortKernels<K>) -> &DownFn<K, u32> {
            &k.down32
        }
    }
    impl Word for u64 {
        fn down<K: DeviceCopy>(k: &SortKernels<K>) -> &DownFn<K, u64> {
            &k.down64
        }
    }

    /// A `K` view of the first `n` elements' bytes of `buf` (the temporary storage).
    fn view_mut<K: DeviceCopy>(buf: &mut DeviceBuffer<u8>, n: usize) -> Result<DeviceViewMut<'_, K>> {
        buf.slice_mut(..n * size_of::<K>())
            .cast::<K>()
            .ok_or_else(|| Error::Argument("radix sort: the temporary storage is not aligned for the type".into()))
    }
    fn view<K: DeviceCopy>(buf: &DeviceBuffer<u8>, n: usize) -> Result<DeviceView<'_, K>> {
        buf.slice(..n * size_of::<K>())
            .cast::<K>()
            .ok_or_else(|| Error::Argument("radix sort: the temporary storage is not aligned for the type".into()))
    }

    /// `values` as the kernels' value words (`W` of `V`'s size).
    fn words<V: DeviceCopy, W: Word>(v: &mut DeviceBuffer<V>) -> Result<DeviceViewMut<'_, W>> {
        v.slice_mut(..)
            .cast::<W>()
            .ok_or_else(|| Error::Argument("radix sort: the values are not aligned for their width".into()))
    }

    /// The sort's passes: keys (and values, moved as `W`s) in place, through the temporary
    /// storage.
    pub(crate) fn sort<K: SortBuiltin, W: Word>(
        algos: &crate::Algorithms,
        stream: &Stream,
        mut keys: DeviceViewMut<'_, K>,
        mut values: Option<DeviceViewMut<'_, W>>,
        bits: RadixBits,
        temp: &mut Temp,
    ) -> Result<()> {
        let n = keys.len();
        if let Some(v) = &values
            && v.len() != n
        {
            return Err(Error::Argument(format!("radix sort: {} values for {n} keys", v.len())));
        }
        let (begin, end) = bits.clamped::<K>();
        let passes = (end - begin).div_ceil(RADIX_BITS);
        if n <= 1 || passes == 0 {
            return Ok(());
        }
        let tiles = n.div_ceil(TILE);
        let grid = tiles.min(SORT_GRID);
        // A block's digit counters are `u32`: its share of the keys stays below 2^32.
        if tiles.div_ceil(grid).saturating_mul(TILE) >= 1 << 32 {
            return Err(Error::Argument(format!("radix sort: {n} keys are too many for {SORT_GRID} blocks")));
        }
        let k = K::kernels(algos);
        let down = W::down(k);
        let smem = u32::try_from(radix_smem_bytes::<K, W>(TILE))
            .map_err(|_| Error::Argument("radix sort: the key type is too large".into()))?;
        let cfg = LaunchConfig::new(grid as u32, SORT_BLOCK);
        let words_len = radix_hist_len(grid);
        let pairs = values.is_some();
        // The histogram's scan has storage of its own (the scan's state, kept in `temp`).
        let mut scan_temp = Temp::new(&temp.gpu);
        scan_temp.state = temp.state.take();
        let Temp { gpu, sort_keys, sort_values, hist, hist_scan, dummy64, .. } = temp;
        let alt_keys = Temp::grow(gpu, sort_keys, n * size_of::<K>())?;
        let alt_values = Temp::grow(gpu, sort_values, if pairs { n * size_of::<W>() } else { 8 })?;
        let dummy = Temp::grow(gpu, dummy64, 1)?;
        let hist = Temp::grow(gpu, hist, words_len)?;
        let hist_scan = Temp::grow(gpu, hist_scan, hist.len())?;
        let align = || Error::Argument("radix sort: an empty view did not cast".into());
        let result = (|| {
            for p in 0..passes {
                let shift = begin + p * RADIX_BITS;
                let width = (end - shift).min(RADIX_BITS);
                let desc = bits.descending as u32;
                // Even passes read the caller's buffers and write the temporary ones; odd
                // passes the other way.
                let from_user = p % 2 == 0;
                {
                    let src = if from_user { keys.as_view() } else { view::<K>(alt_keys, n)? };
                    (k.up)(stream, cfg, src, hist, shift, width, desc)?;
                }
                exclusive_scan(&algos.sum_u64, stream, hist, hist_scan, 0, &mut scan_temp)?;
                let cfg = cfg.with_shared_mem(smem);
                if from_user {
                    let kout = view_mut::<K>(alt_keys, n)?;
                    match values.as_mut() {
                        Some(v) => {
                            let vin = v.as_view();
                            let vout = view_mut::<W>(alt_values, n)?;
                            down(stream, cfg, keys.as_view(), vin, hist_scan, kout, vout, shift, width, desc)?;
                        }
                        None => {
                            let vin = dummy.slice(..0).cast::<W>().ok_or_else(align)?;
                            let vout = view_mut::<W>(alt_values, 0)?;
                            down(stream, cfg, keys.as_view(), vin, hist_scan, kout, vout, shift, width, desc)?;
                        }
                    }
                } else {
                    let kin = view::<K>(alt_keys, n)?;
                    match values.as_mut() {
                        Some(v) => {
                            let vin = view::<W>(alt_values, n)?;
                            let vout = v.slice_mut(..);
                            down(stream, cfg, kin, vin, hist_scan, keys.slice_mut(..), vout, shift, width, desc)?;
                        }
                        None => {
                            let vin = dummy.slice(..0).cast::<W>().ok_or_else(align)?;
                            let vout = view_mut::<W>(alt_values, 0)?;
                            down(stream, cfg, kin, vin, hist_scan, keys.slice_mut(..), vout, shift, width, desc)?;
                        }
                    }
                }
            }
            if passes % 2 == 1 {
                stream.copy(view::<K>(alt_keys, n)?, &mut keys)?;
                if let Some(v) = values.as_mut() {
                    stream.copy(view::<W>(alt_values, n)?, v)?;
                }
            }
            Ok(())
        })();
        temp.state = scan_temp.state.take();
        result
    }

    impl crate::Algorithms {
        /// Sorts `keys` in place by `bits` (CUB's `DeviceRadixSort::SortKeys` /
        /// `SortKeysDescending` with `begin_bit`, `end_bit`): stable, key order as
        /// [`cohort::block::radix_sort`] documents it (floats: `-NaN < -inf < … < -0.0 < +0.0 <
        /// … < +inf < +NaN`). Per 8-bit pass three launches (digit counts, their scan, the
        /// scatter), ping-ponging through `temp` (a copy back after an odd number of passes),
        /// all in `stream`. `RadixBits::all::<K>()` sorts by every bit.
        ///
        /// # Errors
        /// A launch or driver failure; more keys than the kernels' counters hold (past
        /// 2^42).
        pub fn radix_sort_keys<K: SortBuiltin>(
            &self,
            stream: &Stream,
            keys: &mut DeviceBuffer<K>,
            bits: RadixBits,
            temp: &mut Temp,
        ) -> Result<()> {
            sort::<K, u32>(self, stream, keys.slice_mut(..), None, bits, temp)
        }

        /// [`radix_sort_keys`](Self::radix_sort_keys) moving `values[i]` with `keys[i]` (CUB's
        /// `DeviceRadixSort::SortPairs`): stable, so equal keys keep their values in input
        /// order. Values of any 4- or 8-byte `DeviceCopy` type (moved as their bytes).
        ///
        /// # Errors
        /// As [`radix_sort_keys`](Self::radix_sort_keys), and `values.len() != keys.len()`, a
        /// value type of another size.
        pub fn radix_sort_pairs<K: SortBuiltin, V: DeviceCopy>(
            &self,
            stream: &Stream,
            keys: &mut DeviceBuffer<K>,
            values: &mut DeviceBuffer<V>,
            bits: RadixBits,
            temp: &mut Temp,
        ) -> Result<()> {
            match size_of::<V>() {
                4 => sort::<K, u32>(self, stream, keys.slice_mut(..), Some(words::<V, u32>(values)?), bits, temp),
                8 => sort::<K, u64>(self, stream, keys.slice_mut(..), Some(words::<V, u64>(values)?), bits, temp),
                s => Err(Error::Argument(format!("radix sort: values of {s} bytes (4 or 8 are built in)"))),
            }
        }
    }
}

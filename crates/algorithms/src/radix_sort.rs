//! The built-in radix sort (feature `builtin`): keys `u32 u64 i32 i64 f32 f64`, with values of
//! any 4- or 8-byte type, Onesweep ([`cohort::algorithms::onesweep_histogram`] once, then
//! [`onesweep_pass`] per 8-bit pass); per key type a histogram kernel, a pass kernel of keys
//! alone and a pass kernel per value width.

use cohort::algorithms::{ONESWEEP_BLOCK, ONESWEEP_ITEMS, onesweep_histogram, onesweep_pass, onesweep_pass_keys};
use cohort::atomic::AtomicU64;
use cohort::block::RadixBits;
use cohort::slice::DisjointSlice;
use cohort::thread::Scattered;

macro_rules! sort_kernels {
    ($($k:ty => $hist:ident, $keys:ident, $pass32:ident, $pass64:ident;)*) => {$(
        /// The digit counts of every pass (see `onesweep_histogram`).
        #[cohort::kernel]
        fn $hist(keys: &[$k], hist: &[AtomicU64], begin: u32, end: u32, descending: u32) {
            let bits = RadixBits { begin, end, descending: descending != 0 };
            onesweep_histogram::<$k, ONESWEEP_ITEMS>(keys, hist, bits)
        }

        /// One pass of keys alone (see `onesweep_pass_keys`). Three blocks a multiprocessor (at
        /// most 80 registers): without the bound ptxas takes 96 (`u32` keys) or 125 (`u64`) and
        /// leaves room for two; with it, it spills 104 or 260 bytes a thread. Measured on an H200
        /// at 2^28 with the bound: `u32` keys 0.51 of CUB's speed, `u64` keys 0.61 (0.47 and 0.56
        /// before this kernel existed, when keys alone ran the pairs kernel; the bound's share
        /// of that not measured apart).
        #[cohort::kernel(launch_bounds(256, 3))]
        fn $keys(
            keys: &[$k],
            hist: &[u64],
            state: &[AtomicU64],
            mut keys_out: DisjointSlice<$k, Scattered>,
            shift: u32,
            width: u32,
            descending: u32,
        ) {
            const TILE: usize = ONESWEEP_BLOCK as usize * ONESWEEP_ITEMS;
            let bits = RadixBits { begin: shift, end: shift.saturating_add(width), descending: descending != 0 };
            let smem_keys = cohort::shared::dynamic::<$k>().sub(0, TILE);
            // SAFETY: as the pairs kernel's, below.
            unsafe { onesweep_pass_keys::<$k, ONESWEEP_ITEMS>(keys, hist, state, &mut keys_out, bits, &smem_keys) }
        }

        sort_kernels!(@pass $k, $pass32, u32);
        sort_kernels!(@pass $k, $pass64, u64);
    )*};
    (@pass $k:ty, $pass:ident, $v:ty) => {
        /// One pass of pairs (see `onesweep_pass`).
        #[cohort::kernel]
        #[allow(clippy::too_many_arguments)]
        fn $pass(
            keys: &[$k],
            values: &[$v],
            hist: &[u64],
            state: &[AtomicU64],
            mut keys_out: DisjointSlice<$k, Scattered>,
            mut values_out: DisjointSlice<$v, Scattered>,
            shift: u32,
            width: u32,
            descending: u32,
        ) {
            const TILE: usize = ONESWEEP_BLOCK as usize * ONESWEEP_ITEMS;
            let bits = RadixBits { begin: shift, end: shift.saturating_add(width), descending: descending != 0 };
            // Keys, then values, in the same bytes (`onesweep_smem_bytes`).
            let smem_keys = cohort::shared::dynamic::<$k>().sub(0, TILE);
            let smem_values = cohort::shared::dynamic::<$v>().sub(0, TILE);
            // SAFETY: the host API launches this with `hist` the digit counts of the keys it
            // sorts (from the histogram kernel in the same stream; every pass's input holds the
            // same keys), `state` cleared just before in the same stream and used by this
            // launch alone, and this kernel writes its outputs nowhere else.
            unsafe {
                onesweep_pass::<$k, $v, ONESWEEP_ITEMS>(
                    keys, values, hist, state, &mut keys_out, &mut values_out, bits, &smem_keys, &smem_values,
                )
            }
        }
    };
}

sort_kernels! {
    u32 => sort_hist_u32, sort_keys_u32, sort_pass_u32_v32, sort_pass_u32_v64;
    u64 => sort_hist_u64, sort_keys_u64, sort_pass_u64_v32, sort_pass_u64_v64;
    i32 => sort_hist_i32, sort_keys_i32, sort_pass_i32_v32, sort_pass_i32_v64;
    i64 => sort_hist_i64, sort_keys_i64, sort_pass_i64_v32, sort_pass_i64_v64;
    f32 => sort_hist_f32, sort_keys_f32, sort_pass_f32_v32, sort_pass_f32_v64;
    f64 => sort_hist_f64, sort_keys_f64, sort_pass_f64_v32, sort_pass_f64_v64;
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::boxed::Box;
    use std::format;

    use cohort::DeviceCopy;
    use cohort::algorithms::{
        ONESWEEP_BLOCK, ONESWEEP_ITEMS, RADIX_BITS, RADIX_DIGITS, onesweep_hist_len, onesweep_smem_bytes,
        onesweep_state_len,
    };
    use cohort::block::{RadixBits, RadixKey};
    use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, LaunchConfig, Module, Stream};

    use crate::host::{Result, Temp};

    /// Elements per tile of the sort kernels.
    const TILE: usize = ONESWEEP_BLOCK as usize * ONESWEEP_ITEMS;
    /// Blocks of the histogram kernel at most (each takes a contiguous range of tiles).
    const HIST_GRID: usize = 1024;

    type HistFn<K> = Box<
        dyn Fn(&Stream, LaunchConfig, DeviceView<'_, K>, &mut DeviceBuffer<u64>, u32, u32, u32) -> Result<()>
            + Send
            + Sync,
    >;
    type KeysFn<K> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                DeviceView<'_, K>,
                DeviceView<'_, u64>,
                &mut DeviceBuffer<u64>,
                DeviceViewMut<'_, K>,
                u32,
                u32,
                u32,
            ) -> Result<()>
            + Send
            + Sync,
    >;
    type PassFn<K, V> = Box<
        dyn Fn(
                &Stream,
                LaunchConfig,
                DeviceView<'_, K>,
                DeviceView<'_, V>,
                DeviceView<'_, u64>,
                &mut DeviceBuffer<u64>,
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
        hist: HistFn<K>,
        keys: KeysFn<K>,
        pass32: PassFn<K, u32>,
        pass64: PassFn<K, u64>,
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
        ($($t:ty => $field:ident, $hist:ident, $keys:ident, $pass32:ident, $pass64:ident;)*) => {
            /// The sort kernels of every built-in key type.
            #[derive(Debug)]
            pub(crate) struct SortSet {
                $(pub(crate) $field: SortKernels<$t>,)*
            }
            impl SortSet {
                pub(crate) fn load(m: &Module) -> Result<Self> {
                    Ok(Self {
                        $($field: {
                            let h = super::$hist::load(m)?;
                            let ks = super::$keys::load(m)?;
                            let p32 = super::$pass32::load(m)?;
                            let p64 = super::$pass64::load(m)?;
                            SortKernels {
                                hist: Box::new(move |s, c, k, h2, b, e, d| h.launch(s, c, k, h2, b, e, d)),
                                keys: Box::new(move |s, c, k, h, st, ko, sh, w, d| ks.launch(s, c, k, h, st, ko, sh, w, d)),
                                pass32: Box::new(move |s, c, k, v, h, st, ko, vo, sh, w, d| p32.launch(s, c, k, v, h, st, ko, vo, sh, w, d)),
                                pass64: Box::new(move |s, c, k, v, h, st, ko, vo, sh, w, d| p64.launch(s, c, k, v, h, st, ko, vo, sh, w, d)),
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
        u32 => u32s, sort_hist_u32, sort_keys_u32, sort_pass_u32_v32, sort_pass_u32_v64;
        u64 => u64s, sort_hist_u64, sort_keys_u64, sort_pass_u64_v32, sort_pass_u64_v64;
        i32 => i32s, sort_hist_i32, sort_keys_i32, sort_pass_i32_v32, sort_pass_i32_v64;
        i64 => i64s, sort_hist_i64, sort_keys_i64, sort_pass_i64_v32, sort_pass_i64_v64;
        f32 => f32s, sort_hist_f32, sort_keys_f32, sort_pass_f32_v32, sort_pass_f32_v64;
        f64 => f64s, sort_hist_f64, sort_keys_f64, sort_pass_f64_v32, sort_pass_f64_v64;
    }

    /// The values' storage as the kernels' value word: `u32` or `u64` (any 4- or 8-byte
    /// `DeviceCopy` is moved as its bytes).
    pub(crate) trait Word: DeviceCopy {
        fn pass<K: DeviceCopy>(k: &SortKernels<K>) -> &PassFn<K, Self>;
    }
    impl Word for u32 {
        fn pass<K: DeviceCopy>(k: &SortKernels<K>) -> &PassFn<K, u32> {
            &k.pass32
        }
    }
    impl Word for u64 {
        fn pass<K: DeviceCopy>(k: &SortKernels<K>) -> &PassFn<K, u64> {
            &k.pass64
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

    /// The sort: the digit counts of every pass (one launch), then one launch per pass (after
    /// clearing its look-back state), keys (and values, moved as `W`s) ping-ponging between the
    /// caller's buffers and the temporary storage.
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
        let hist_grid = tiles.min(HIST_GRID);
        // The histogram kernel's block counters are `u32` (a block's share below 2^32), and the
        // pass kernel packs a digit's total above 16 bits of a `u64` (below 2^46 keys).
        if tiles.div_ceil(hist_grid).saturating_mul(TILE) >= 1 << 32 || n >= 1 << 46 {
            return Err(Error::Argument(format!("radix sort: {n} keys are too many (2^42 at most)")));
        }
        let pass_grid = u32::try_from(tiles)
            .ok()
            .filter(|&t| t < (1 << 31))
            .ok_or_else(|| Error::Argument(format!("radix sort: {n} keys are more than 2^31 tiles")))?;
        let k = K::kernels(algos);
        let pass = W::pass(k);
        let smem_of = |bytes: usize| {
            u32::try_from(bytes).map_err(|_| Error::Argument("radix sort: the key type is too large".into()))
        };
        let pairs = values.is_some();
        // The keys' kernel has only the keys' shared memory.
        let smem = smem_of(if pairs { onesweep_smem_bytes::<K, W>(TILE) } else { onesweep_smem_bytes::<K, K>(TILE) })?;
        let hist_len = onesweep_hist_len::<K>(bits);
        let state_len = onesweep_state_len(n, TILE);
        let Temp { gpu, sort_keys, sort_values, hist, hist_scan, .. } = temp;
        let alt_keys = Temp::grow(gpu, sort_keys, n * size_of::<K>())?;
        let mut alt_values = if pairs { Some(Temp::grow(gpu, sort_values, n * size_of::<W>())?) } else { None };
        let hist = Temp::grow(gpu, hist, hist_len)?;
        let state = Temp::grow(gpu, hist_scan, state_len)?;
        let desc = bits.descending as u32;
        // The counts of every pass, from one read of the keys.
        stream.fill_bytes(hist.slice_mut(..hist_len), 0)?;
        (k.hist)(stream, LaunchConfig::new(hist_grid as u32, ONESWEEP_BLOCK), keys.as_view(), hist, begin, end, desc)?;
        let cfg = LaunchConfig::new(pass_grid, ONESWEEP_BLOCK).with_shared_mem(smem);
        for p in 0..passes {
            let shift = begin + p * RADIX_BITS;
            let width = (end - shift).min(RADIX_BITS);
            let ph = hist.slice(p as usize * RADIX_DIGITS..(p as usize + 1) * RADIX_DIGITS);
            // The look-back's contract: the counter and every slot zero before the launch.
            stream.fill_bytes(state.slice_mut(..state_len), 0)?;
            // Even passes read the caller's buffers and write the temporary ones; odd passes
            // the other way.
            if p % 2 == 0 {
                let kout = view_mut::<K>(alt_keys, n)?;
                match (values.as_mut(), alt_values.as_mut()) {
                    (Some(v), Some(av)) => {
                        let vin = v.as_view();
                        let vout = view_mut::<W>(av, n)?;
                        pass(stream, cfg, keys.as_view(), vin, ph, state, kout, vout, shift, width, desc)?;
                    }
                    _ => (k.keys)(stream, cfg, keys.as_view(), ph, state, kout, shift, width, desc)?,
                }
            } else {
                let kin = view::<K>(alt_keys, n)?;
                match (values.as_mut(), alt_values.as_ref()) {
                    (Some(v), Some(av)) => {
                        let vin = view::<W>(av, n)?;
                        let vout = v.slice_mut(..);
                        pass(stream, cfg, kin, vin, ph, state, keys.slice_mut(..), vout, shift, width, desc)?;
                    }
                    _ => (k.keys)(stream, cfg, kin, ph, state, keys.slice_mut(..), shift, width, desc)?,
                }
            }
        }
        if passes % 2 == 1 {
            stream.copy(view::<K>(alt_keys, n)?, &mut keys)?;
            if let (Some(v), Some(av)) = (values.as_mut(), alt_values.as_ref()) {
                stream.copy(view::<W>(av, n)?, v)?;
            }
        }
        Ok(())
    }

    impl crate::Algorithms {
        /// Sorts `keys` in place by `bits` (CUB's `DeviceRadixSort::SortKeys` /
        /// `SortKeysDescending` with `begin_bit`, `end_bit`): stable, key order as
        /// [`cohort::block::radix_sort`] documents it (floats: `-NaN < -inf < … < -0.0 < +0.0 <
        /// … < +inf < +NaN`). Onesweep: one launch counts the digits of every pass, then one
        /// launch per 8-bit pass (rank, decoupled look-back per digit, scatter), ping-ponging
        /// through `temp` (a copy back after an odd number of passes), all in `stream`. `RadixBits::all::<K>()` sorts by every bit.
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

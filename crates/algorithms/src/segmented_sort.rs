//! The built-in segmented sort (feature `builtin`; CUB's `DeviceSegmentedSort::SortKeys` /
//! `SortPairs`): keys `u32 u64 i32 i64 f32 f64` sorted within each segment `offsets[s] ..
//! offsets[s + 1]`, stable, with values of any 4- or 8-byte type.
//!
//! **Scheme** (two stable radix sorts and a gather): the positions `p = 0 .. n` sorted by key
//! ([`radix_sort_pairs`](crate::Algorithms::radix_sort_pairs) of a copy of the keys, the
//! positions as values), then by the segment each position lies in (a stable radix sort of
//! their segment numbers, only as many bits as the segments need), so `p` lists the positions
//! by (segment, key, position); then `keys_out[i] = keys_in[p[i]]` (and the values). The
//! segment number of a position is how many offsets are at most it (a binary search), so the
//! positions before `offsets[0]` and from `offsets[m]` on form the first and last groups: they
//! land where they were, and the gather copies them unchanged (they are in no segment). Work
//! per element is the same whatever the segments' lengths; it is not yet CUB's speed for short
//! segments (CUB sorts those in one block each).
//!
//! Offsets that do not ascend give unspecified values, never an access out of bounds: the
//! positions are always a permutation, and every read and write is bounds-checked.

use cohort::slice::DisjointSlice;
use cohort::thread;

/// How many of `offsets` (each clamped to `n`) are at most `pos`, for ascending offsets (any
/// count in `0 ..= offsets.len()` otherwise).
#[inline(always)]
fn segment_of(offsets: &[u64], n: u64, pos: u64) -> usize {
    let (mut lo, mut hi) = (0, offsets.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if offsets[mid].min(n) <= pos {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

macro_rules! seg_sort_kernels {
    ($($p:ty => $iota:ident, $ids:ident, $g32:ident, $g64:ident;)*) => {$(
        /// `out[i] = i`: the positions to sort.
        #[cohort::kernel]
        fn $iota(mut out: DisjointSlice<$p>) {
            for i in thread::grid_stride(out.len()) {
                let v = *i as $p;
                out.set(&i, v);
            }
        }

        /// `ids[i]` = the segment group of position `perm[i]` (how many offsets are at most
        /// it; the positions are below `n`).
        #[cohort::kernel]
        fn $ids(perm: &[$p], offsets: &[u64], n: u64, mut ids: DisjointSlice<u32>) {
            for i in thread::grid_stride(perm.len()) {
                let g = segment_of(offsets, n, perm[*i] as u64);
                ids.set(&i, g as u32);
            }
        }

        seg_sort_kernels!(@gather $p, $g32, u32);
        seg_sort_kernels!(@gather $p, $g64, u64);
    )*};
    (@gather $p:ty, $g:ident, $w:ty) => {
        /// `out[i] = src[perm[i]]` for the positions inside the segments (`offsets[0] ..
        /// offsets[m]`), `src[i]` outside them; a position past `src` leaves `out[i]` unwritten.
        #[cohort::kernel]
        fn $g(src: &[$w], perm: &[$p], offsets: &[u64], mut out: DisjointSlice<$w>) {
            let n = src.len() as u64;
            let first = offsets.first().map_or(0, |&o| o.min(n));
            let last = offsets.last().map_or(0, |&o| o.min(n));
            for i in thread::grid_stride(out.len().min(perm.len())) {
                let at = *i as u64;
                let from = if first <= at && at < last { perm[*i] as u64 } else { at };
                if let Some(&v) = src.get(from as usize) {
                    out.set(&i, v);
                }
            }
        }
    };
}

seg_sort_kernels! {
    u32 => seg_iota_u32, seg_ids_u32, seg_gather_p32_w32, seg_gather_p32_w64;
    u64 => seg_iota_u64, seg_ids_u64, seg_gather_p64_w32, seg_gather_p64_w64;
}

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::format;

    use cohort::DeviceCopy;
    use cohort::block::RadixBits;
    use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, LaunchConfig, Module, Stream};

    use crate::SortBuiltin;
    use crate::host::{Result, Temp};

    /// The segmented sort's kernels.
    #[derive(Debug)]
    pub(crate) struct SegSortSet {
        iota32: super::seg_iota_u32,
        iota64: super::seg_iota_u64,
        ids32: super::seg_ids_u32,
        ids64: super::seg_ids_u64,
        g32_32: super::seg_gather_p32_w32,
        g32_64: super::seg_gather_p32_w64,
        g64_32: super::seg_gather_p64_w32,
        g64_64: super::seg_gather_p64_w64,
    }

    impl SegSortSet {
        pub(crate) fn load(m: &Module) -> Result<Self> {
            Ok(Self {
                iota32: super::seg_iota_u32::load(m)?,
                iota64: super::seg_iota_u64::load(m)?,
                ids32: super::seg_ids_u32::load(m)?,
                ids64: super::seg_ids_u64::load(m)?,
                g32_32: super::seg_gather_p32_w32::load(m)?,
                g32_64: super::seg_gather_p32_w64::load(m)?,
                g64_32: super::seg_gather_p64_w32::load(m)?,
                g64_64: super::seg_gather_p64_w64::load(m)?,
            })
        }
    }

    /// A grid-stride launch over `n` items.
    fn stride_cfg(n: usize, sms: u32) -> LaunchConfig {
        let blocks = n.div_ceil(256).clamp(1, (sms.max(1) * 8) as usize);
        LaunchConfig::new(blocks as u32, 256)
    }

    /// `buf`'s first `n` elements as `T`s (the temporary storage).
    fn typed_mut<T: DeviceCopy>(buf: &mut DeviceBuffer<u8>, n: usize) -> Result<DeviceViewMut<'_, T>> {
        buf.slice_mut(..n * size_of::<T>())
            .cast::<T>()
            .ok_or_else(|| Error::Argument("segmented sort: the temporary storage is not aligned for the type".into()))
    }

    /// A buffer's elements as 4- or 8-byte words `W`.
    fn words<T: DeviceCopy, W: DeviceCopy>(v: DeviceView<'_, T>) -> Result<DeviceView<'_, W>> {
        v.cast::<W>().ok_or_else(|| Error::Argument("segmented sort: not aligned for the element width".into()))
    }
    fn words_mut<T: DeviceCopy, W: DeviceCopy>(v: DeviceViewMut<'_, T>) -> Result<DeviceViewMut<'_, W>> {
        v.cast::<W>().ok_or_else(|| Error::Argument("segmented sort: not aligned for the element width".into()))
    }

    /// One gather, `out[i] = src[perm[i]]` inside the segments, by the positions' and the
    /// elements' widths.
    #[allow(clippy::too_many_arguments)]
    fn gather<T: DeviceCopy>(
        set: &SegSortSet,
        stream: &Stream,
        cfg: LaunchConfig,
        src: DeviceView<'_, T>,
        perm: &DeviceBuffer<u8>,
        wide_perm: bool,
        offsets: &DeviceBuffer<u64>,
        out: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let n = src.len();
        let pv32 = || perm.slice(..n * 4).cast::<u32>().ok_or_else(|| Error::Argument("perm".into()));
        let pv64 = || perm.slice(..n * 8).cast::<u64>().ok_or_else(|| Error::Argument("perm".into()));
        match (size_of::<T>(), wide_perm) {
            (4, false) => {
                set.g32_32.launch(stream, cfg, words::<T, u32>(src)?, pv32()?, offsets, words_mut::<T, u32>(out)?)
            }
            (8, false) => {
                set.g32_64.launch(stream, cfg, words::<T, u64>(src)?, pv32()?, offsets, words_mut::<T, u64>(out)?)
            }
            (4, true) => {
                set.g64_32.launch(stream, cfg, words::<T, u32>(src)?, pv64()?, offsets, words_mut::<T, u32>(out)?)
            }
            (8, true) => {
                set.g64_64.launch(stream, cfg, words::<T, u64>(src)?, pv64()?, offsets, words_mut::<T, u64>(out)?)
            }
            (s, _) => Err(Error::Argument(format!("segmented sort: elements of {s} bytes (4 or 8 are built in)"))),
        }
    }

    /// The sort's steps (see the module docs).
    #[allow(clippy::too_many_arguments)]
    fn segmented_sort<K: SortBuiltin, V: DeviceCopy>(
        algos: &crate::Algorithms,
        stream: &Stream,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        values: Option<(&DeviceBuffer<V>, &mut DeviceBuffer<V>)>,
        offsets: &DeviceBuffer<u64>,
        bits: RadixBits,
        temp: &mut Temp,
    ) -> Result<()> {
        let n = keys_in.len();
        if keys_out.len() != n {
            return Err(Error::Argument(format!("segmented sort: {} output keys for {n} keys", keys_out.len())));
        }
        if let Some((vi, vo)) = &values
            && (vi.len() != n || vo.len() != n)
        {
            return Err(Error::Argument(format!(
                "segmented sort: {} values in and {} out for {n} keys",
                vi.len(),
                vo.len()
            )));
        }
        if values.is_some() && !matches!(size_of::<V>(), 4 | 8) {
            return Err(Error::Argument(format!(
                "segmented sort: values of {} bytes (4 or 8 are built in)",
                size_of::<V>()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        // Segment groups: 0 before offsets[0], s + 1 for segment s, m + 1 from offsets[m] on.
        let groups = offsets.len() + 1;
        let group_bits = usize::BITS - (groups - 1).leading_zeros();
        if groups > u32::MAX as usize {
            return Err(Error::Argument(format!("segmented sort: {} segments are too many", offsets.len())));
        }
        let set = &algos.seg_sort;
        let cfg = stride_cfg(n, algos.sms);
        let wide_perm = n > u32::MAX as usize;
        let pw = if wide_perm { 8 } else { 4 };
        // The storage of the positions, the keys' copy and the group numbers, taken out of
        // `temp` while the radix sorts use the rest of it.
        let mut perm = temp.seg_perm.take();
        let mut kcopy = temp.seg_keys.take();
        let mut ids = temp.seg_ids.take();
        let result = (|| {
            let gpu = temp.gpu.clone();
            let perm = Temp::grow(&gpu, &mut perm, n * pw)?;
            let kcopy = Temp::grow(&gpu, &mut kcopy, n * size_of::<K>())?;
            let ids = Temp::grow(&gpu, &mut ids, n)?;
            // 1. The positions by key: a copy of the keys, sorted with the positions.
            stream.copy(keys_in, typed_mut::<K>(kcopy, n)?)?;
            if wide_perm {
                set.iota64.launch(stream, cfg, typed_mut::<u64>(perm, n)?)?;
                crate::radix_sort::sort::<K, u64>(
                    algos,
                    stream,
                    typed_mut::<K>(kcopy, n)?,
                    Some(typed_mut::<u64>(perm, n)?),
                    bits,
                    temp,
                )?;
            } else {
                set.iota32.launch(stream, cfg, typed_mut::<u32>(perm, n)?)?;
                crate::radix_sort::sort::<K, u32>(
                    algos,
                    stream,
                    typed_mut::<K>(kcopy, n)?,
                    Some(typed_mut::<u32>(perm, n)?),
                    bits,
                    temp,
                )?;
            }
            // 2. Then by segment group (stable): their numbers, sorted with the positions.
            let n64 = n as u64;
            let gbits = RadixBits { begin: 0, end: group_bits, descending: false };
            if wide_perm {
                let p = perm.slice(..n * 8).cast::<u64>().expect("aligned");
                set.ids64.launch(stream, cfg, p, offsets, n64, ids.slice_mut(..n))?;
                if group_bits > 0 {
                    crate::radix_sort::sort::<u32, u64>(
                        algos,
                        stream,
                        ids.slice_mut(..n),
                        Some(typed_mut::<u64>(perm, n)?),
                        gbits,
                        temp,
                    )?;
                }
            } else {
                let p = perm.slice(..n * 4).cast::<u32>().expect("aligned");
                set.ids32.launch(stream, cfg, p, offsets, n64, ids.slice_mut(..n))?;
                if group_bits > 0 {
                    crate::radix_sort::sort::<u32, u32>(
                        algos,
                        stream,
                        ids.slice_mut(..n),
                        Some(typed_mut::<u32>(perm, n)?),
                        gbits,
                        temp,
                    )?;
                }
            }
            // 3. The gathers.
            gather(set, stream, cfg, keys_in.slice(..), perm, wide_perm, offsets, keys_out.slice_mut(..))?;
            if let Some((vi, vo)) = values {
                gather(set, stream, cfg, vi.slice(..), perm, wide_perm, offsets, vo.slice_mut(..))?;
            }
            Ok(())
        })();
        temp.seg_perm = perm;
        temp.seg_keys = kcopy;
        temp.seg_ids = ids;
        result
    }

    impl crate::Algorithms {
        /// Sorts the keys of each segment `offsets[s] .. offsets[s + 1]` of `keys_in` into the
        /// same positions of `keys_out` (CUB's `DeviceSegmentedSort::StableSortKeys`; offsets
        /// as [`segmented_reduce`](Self::segmented_reduce)'s, `m + 1` ascending positions for
        /// `m` segments), by `bits` (ascending or descending, a bit range; key order as
        /// [`radix_sort_keys`](Self::radix_sort_keys)), stable. Keys before `offsets[0]` or
        /// from `offsets[m]` on are copied unchanged. All in `stream`, through `temp`.
        ///
        /// # Errors
        /// `keys_out` of another length; a launch or driver failure.
        #[allow(clippy::too_many_arguments)]
        pub fn segmented_sort_keys<K: SortBuiltin>(
            &self,
            stream: &Stream,
            keys_in: &DeviceBuffer<K>,
            keys_out: &mut DeviceBuffer<K>,
            offsets: &DeviceBuffer<u64>,
            bits: RadixBits,
            temp: &mut Temp,
        ) -> Result<()> {
            segmented_sort::<K, u32>(self, stream, keys_in, keys_out, None, offsets, bits, temp)
        }

        /// [`segmented_sort_keys`](Self::segmented_sort_keys) moving `values_in[i]` with
        /// `keys_in[i]` into `values_out` (CUB's `DeviceSegmentedSort::StableSortPairs`):
        /// values of any 4- or 8-byte type.
        ///
        /// # Errors
        /// As [`segmented_sort_keys`](Self::segmented_sort_keys), values of other lengths or
        /// of another size.
        #[allow(clippy::too_many_arguments)]
        pub fn segmented_sort_pairs<K: SortBuiltin, V: DeviceCopy>(
            &self,
            stream: &Stream,
            keys_in: &DeviceBuffer<K>,
            keys_out: &mut DeviceBuffer<K>,
            values_in: &DeviceBuffer<V>,
            values_out: &mut DeviceBuffer<V>,
            offsets: &DeviceBuffer<u64>,
            bits: RadixBits,
            temp: &mut Temp,
        ) -> Result<()> {
            segmented_sort(self, stream, keys_in, keys_out, Some((values_in, values_out)), offsets, bits, temp)
        }
    }
}

//! The host API: temporary storage, the launch drivers, the built-in kernels.

use std::format;

use cohort::DeviceCopy;
use cohort::algorithms::{
    MERGE_BLOCK, REDUCE_BLOCK, REDUCE_ITEMS, SCAN_BLOCK, SCAN_BY_KEY_ITEMS, SCAN_ITEMS, merge_items, merge_smem_bytes,
    scan_state_len,
};
use cohort_runtime::{DeviceBuffer, DeviceView, DeviceViewMut, Error, Gpu, LaunchConfig, Stream};

pub(crate) type Result<T> = core::result::Result<T, Error>;

/// What the host drivers launch: the two kernels [`algorithm_kernels!`](crate::algorithm_kernels)
/// writes for one element type and operator. Implemented by the macro's `Kernels` only (its
/// kernels are private to it).
pub trait AlgorithmKernels<T: DeviceCopy> {
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn launch_scan(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        state: &mut DeviceBuffer<u64>,
        init: T,
        exclusive: bool,
    ) -> Result<()>;
    #[doc(hidden)]
    fn launch_reduce(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        input: DeviceView<'_, T>,
        out: DeviceViewMut<'_, T>,
        init: T,
        with_init: bool,
    ) -> Result<()>;
}

/// What the scan-by-key drivers launch: the kernel
/// [`scan_by_key_kernels!`](crate::scan_by_key_kernels) writes for one key type, value type and
/// operator. Implemented by the macro's `Kernels` only (its kernel is private to it).
pub trait ScanByKeyKernels<K: DeviceCopy + PartialEq, T: DeviceCopy> {
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn launch_scan_by_key(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        keys: &DeviceBuffer<K>,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        state: &mut DeviceBuffer<u64>,
        init: T,
        exclusive: bool,
    ) -> Result<()>;
}

impl<K: DeviceCopy + PartialEq, T: DeviceCopy> ScanByKeyKernels<K, T> for &dyn ScanByKeyKernels<K, T> {
    fn launch_scan_by_key(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        keys: &DeviceBuffer<K>,
        input: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
        state: &mut DeviceBuffer<u64>,
        init: T,
        exclusive: bool,
    ) -> Result<()> {
        (**self).launch_scan_by_key(stream, config, keys, input, out, state, init, exclusive)
    }
}

/// Reusable temporary storage of the algorithms (CUB's `d_temp_storage`): grown on demand,
/// never shrunk; one `Temp` serves any algorithm, type and size. Stream-ordered like any
/// device buffer: a second algorithm on another stream with the same `Temp` waits for the
/// first (the runtime's tracker orders them), so give each concurrent stream its own.
#[derive(Debug)]
pub struct Temp {
    pub(crate) gpu: Gpu,
    pub(crate) state: Option<DeviceBuffer<u64>>,
    pub(crate) partials: Option<DeviceBuffer<u64>>,
    /// Run-length encoding's run offsets.
    pub(crate) offsets: Option<DeviceBuffer<u64>>,
    /// Empty views' backing ("no flags", "no indices").
    pub(crate) dummy8: Option<DeviceBuffer<u8>>,
    pub(crate) dummy64: Option<DeviceBuffer<u64>>,
    /// Radix sort: the keys' and values' second buffers (bytes), the digit counts and their
    /// scan.
    pub(crate) sort_keys: Option<DeviceBuffer<u8>>,
    pub(crate) sort_values: Option<DeviceBuffer<u8>>,
    pub(crate) hist: Option<DeviceBuffer<u64>>,
    pub(crate) hist_scan: Option<DeviceBuffer<u64>>,
    /// Segmented reduce: each chunk's first and last pieces (bytes).
    pub(crate) seg_head: Option<DeviceBuffer<u8>>,
    pub(crate) seg_tail: Option<DeviceBuffer<u8>>,
    /// Argmin / argmax: the per-block partials (bytes).
    pub(crate) arg: Option<DeviceBuffer<u8>>,
    /// Merge sort: each pass's cuts of the runs at the tile boundaries.
    pub(crate) splits: Option<DeviceBuffer<u64>>,
}

impl Temp {
    /// Empty storage on `gpu` (allocated by the first algorithm that needs it).
    #[must_use]
    pub fn new(gpu: &Gpu) -> Self {
        Self {
            gpu: gpu.clone(),
            state: None,
            partials: None,
            offsets: None,
            dummy8: None,
            dummy64: None,
            sort_keys: None,
            sort_values: None,
            hist: None,
            hist_scan: None,
            seg_head: None,
            seg_tail: None,
            arg: None,
            splits: None,
        }
    }

    /// Device bytes held now.
    #[must_use]
    pub fn bytes(&self) -> usize {
        let words = |b: &Option<DeviceBuffer<u64>>| b.as_ref().map_or(0, DeviceBuffer::len);
        let bytes = |b: &Option<DeviceBuffer<u8>>| b.as_ref().map_or(0, DeviceBuffer::len);
        8 * (words(&self.state)
            + words(&self.partials)
            + words(&self.offsets)
            + words(&self.dummy64)
            + words(&self.hist)
            + words(&self.hist_scan)
            + words(&self.splits))
            + bytes(&self.dummy8)
            + bytes(&self.sort_keys)
            + bytes(&self.sort_values)
            + bytes(&self.seg_head)
            + bytes(&self.seg_tail)
            + bytes(&self.arg)
    }

    pub(crate) fn grow<'a, T: DeviceCopy>(
        gpu: &Gpu,
        buf: &'a mut Option<DeviceBuffer<T>>,
        words: usize,
    ) -> Result<&'a mut DeviceBuffer<T>> {
        if buf.as_ref().is_none_or(|b| b.len() < words) {
            *buf = None;
            *buf = Some(gpu.zeroed::<T>(words.max(1))?);
        }
        Ok(buf.as_mut().expect("allocated above"))
    }
}

/// Elements per tile of the scan and of the reduce.
const SCAN_TILE: usize = SCAN_BLOCK as usize * SCAN_ITEMS;
const REDUCE_TILE: usize = REDUCE_BLOCK as usize * REDUCE_ITEMS;
/// Blocks of the reduce's first pass at most: its partials then fit one tile of the second.
const REDUCE_GRID: usize = 1024;

fn check_out(n: usize, out: usize, what: &str) -> Result<()> {
    if out < n {
        return Err(Error::Argument(format!("{what}: the output holds {out} elements, fewer than the input's {n}")));
    }
    Ok(())
}

fn scan<T: DeviceCopy>(
    kernels: &impl AlgorithmKernels<T>,
    stream: &Stream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    init: Option<T>,
    temp: &mut Temp,
) -> Result<()> {
    let n = input.len();
    check_out(n, out.len(), "scan")?;
    if n == 0 {
        return Ok(());
    }
    let tiles = n.div_ceil(SCAN_TILE);
    let grid = u32::try_from(tiles)
        .ok()
        .filter(|&t| t < (1 << 31))
        .ok_or_else(|| Error::Argument(format!("scan: {n} elements are more than 2^31 tiles of {SCAN_TILE}")))?;
    let state = Temp::grow(&temp.gpu, &mut temp.state, scan_state_len::<T>(n, SCAN_TILE))?;
    // The look-back's contract: the counter and every status slot zero before the launch.
    stream.fill_bytes(&mut *state, 0)?;
    let (init, exclusive) = match init {
        Some(x) => (x, true),
        None => (input_first_placeholder::<T>(), false),
    };
    kernels.launch_scan(stream, LaunchConfig::new(grid, SCAN_BLOCK), input, out, state, init, exclusive)
}

/// A value for the scan kernel's unused `init` (an inclusive scan never reads it).
fn input_first_placeholder<T: DeviceCopy>() -> T {
    cohort::assert_no_padding::<T>();
    // SAFETY: every bit pattern, zero included, is a valid `DeviceCopy` value.
    unsafe { core::mem::zeroed() }
}

/// `out[i] = init op input[0] op … op input[i - 1]` (`out[0] = init`): CUB's
/// `DeviceScan::ExclusiveScan`, one launch (decoupled look-back) after clearing its state, all
/// in `stream`. `out` may be longer than `input` (the rest is not written).
///
/// # Errors
/// `out` shorter than `input`; a launch or driver failure.
pub fn exclusive_scan<T: DeviceCopy>(
    kernels: &impl AlgorithmKernels<T>,
    stream: &Stream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    init: T,
    temp: &mut Temp,
) -> Result<()> {
    scan(kernels, stream, input, out, Some(init), temp)
}

/// `out[i] = input[0] op … op input[i]`: CUB's `DeviceScan::InclusiveScan`; as
/// [`exclusive_scan`].
///
/// # Errors
/// As [`exclusive_scan`].
pub fn inclusive_scan<T: DeviceCopy>(
    kernels: &impl AlgorithmKernels<T>,
    stream: &Stream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    temp: &mut Temp,
) -> Result<()> {
    scan(kernels, stream, input, out, None, temp)
}

/// Elements per tile of the scan by key.
const BY_KEY_TILE: usize = SCAN_BLOCK as usize * SCAN_BY_KEY_ITEMS;

fn scan_by_key<K: DeviceCopy + PartialEq, T: DeviceCopy>(
    kernels: &impl ScanByKeyKernels<K, T>,
    stream: &Stream,
    keys: &DeviceBuffer<K>,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    init: Option<T>,
    temp: &mut Temp,
) -> Result<()> {
    let n = input.len();
    if keys.len() != n {
        return Err(Error::Argument(format!("scan by key: {} keys for {n} values", keys.len())));
    }
    check_out(n, out.len(), "scan by key")?;
    if n == 0 {
        return Ok(());
    }
    let tiles = n.div_ceil(BY_KEY_TILE);
    let grid = u32::try_from(tiles).ok().filter(|&t| t < (1 << 31)).ok_or_else(|| {
        Error::Argument(format!("scan by key: {n} elements are more than 2^31 tiles of {BY_KEY_TILE}"))
    })?;
    let state = Temp::grow(&temp.gpu, &mut temp.state, scan_state_len::<T>(n, BY_KEY_TILE))?;
    // The look-back's contract: the counter and every status slot zero before the launch.
    stream.fill_bytes(&mut *state, 0)?;
    let (init, exclusive) = match init {
        Some(x) => (x, true),
        None => (input_first_placeholder::<T>(), false),
    };
    kernels.launch_scan_by_key(stream, LaunchConfig::new(grid, SCAN_BLOCK), keys, input, out, state, init, exclusive)
}

/// `out[i] = input[h] op … op input[i]`, where `h` is the first element of `i`'s segment (the
/// maximal run of consecutive equal keys, by `==`, holding `i`): CUB's
/// `DeviceScan::InclusiveScanByKey` (`InclusiveSumByKey` with [`Sum`](crate::Sum)). One launch
/// (decoupled look-back) after clearing its state, all in `stream`; the temporary storage is
/// the scan's. `out` may be longer than the input (the rest is not written); the op need only
/// be associative.
///
/// # Errors
/// `keys` and `input` of different lengths, `out` shorter than `input`; a launch or driver
/// failure.
pub fn inclusive_scan_by_key<K: DeviceCopy + PartialEq, T: DeviceCopy>(
    kernels: &impl ScanByKeyKernels<K, T>,
    stream: &Stream,
    keys: &DeviceBuffer<K>,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    temp: &mut Temp,
) -> Result<()> {
    scan_by_key(kernels, stream, keys, input, out, None, temp)
}

/// `out[i] = init` at a segment's first element, else `init op input[h] op … op input[i - 1]`
/// from the segment's first element `h`: CUB's `DeviceScan::ExclusiveScanByKey`
/// (`ExclusiveSumByKey` with [`Sum`](crate::Sum) and `init` zero); as
/// [`inclusive_scan_by_key`].
///
/// # Errors
/// As [`inclusive_scan_by_key`].
pub fn exclusive_scan_by_key<K: DeviceCopy + PartialEq, T: DeviceCopy>(
    kernels: &impl ScanByKeyKernels<K, T>,
    stream: &Stream,
    keys: &DeviceBuffer<K>,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    init: T,
    temp: &mut Temp,
) -> Result<()> {
    scan_by_key(kernels, stream, keys, input, out, Some(init), temp)
}

/// `out[0] = init op input[0] op … op input[n - 1]` (`init` for an empty input): CUB's
/// `DeviceReduce::Reduce`; the op must be associative and commutative. Two launches in
/// `stream` (one for at most one tile).
///
/// # Errors
/// `out` empty; a launch or driver failure.
pub fn reduce<T: DeviceCopy>(
    kernels: &impl AlgorithmKernels<T>,
    stream: &Stream,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
    init: T,
    temp: &mut Temp,
) -> Result<()> {
    if out.is_empty() {
        return Err(Error::Argument("reduce: the output is empty (it needs one element)".into()));
    }
    let n = input.len();
    let tiles = n.div_ceil(REDUCE_TILE);
    let cfg = |g: usize| LaunchConfig::new(g as u32, REDUCE_BLOCK);
    // Fewer than 8 tiles: one block loops over them. Else a multiple of 8 blocks, so that
    // their partials are a whole number of 64-bit words of the storage.
    if tiles < 8 {
        return kernels.launch_reduce(stream, cfg(1), input.slice(..), out.slice_mut(..1), init, true);
    }
    let grid = tiles.min(REDUCE_GRID) & !7;
    let words = grid * size_of::<T>() / 8;
    let partials = Temp::grow(&temp.gpu, &mut temp.partials, words)?;
    let align = || Error::Argument("reduce: the element type's alignment exceeds 8 bytes".into());
    let view = partials.slice_mut(..words).cast::<T>().ok_or_else(align)?;
    kernels.launch_reduce(stream, cfg(grid), input.slice(..), view, init, false)?;
    let view = partials.slice(..words).cast::<T>().ok_or_else(align)?;
    kernels.launch_reduce(stream, cfg(1), view, out.slice_mut(..1), init, true)
}

/// What the merge sort drivers launch: the three kernels
/// [`merge_sort_kernels!`](crate::merge_sort_kernels) writes for one key type, value type and
/// comparator. Implemented by the macro's `Kernels` only (its kernels are private to it).
pub trait MergeSortKernels<K: DeviceCopy, V: DeviceCopy> {
    #[doc(hidden)]
    fn launch_tiles(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        keys: DeviceView<'_, K>,
        values: DeviceView<'_, V>,
        keys_out: DeviceViewMut<'_, K>,
        values_out: DeviceViewMut<'_, V>,
    ) -> Result<()>;
    #[doc(hidden)]
    fn launch_partition(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        keys: DeviceView<'_, K>,
        width: u64,
        tile: u64,
        splits: &mut DeviceBuffer<u64>,
    ) -> Result<()>;
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
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
    ) -> Result<()>;
}

/// A `T` view of the first `n` elements' bytes of `buf` (the temporary storage).
fn temp_view_mut<'a, T: DeviceCopy>(
    buf: &'a mut DeviceBuffer<u8>,
    n: usize,
    what: &str,
) -> Result<DeviceViewMut<'a, T>> {
    buf.slice_mut(..n * size_of::<T>())
        .cast::<T>()
        .ok_or_else(|| Error::Argument(format!("{what}: the temporary storage is not aligned for the type")))
}

fn temp_view<'a, T: DeviceCopy>(buf: &'a DeviceBuffer<u8>, n: usize, what: &str) -> Result<DeviceView<'a, T>> {
    buf.slice(..n * size_of::<T>())
        .cast::<T>()
        .ok_or_else(|| Error::Argument(format!("{what}: the temporary storage is not aligned for the type")))
}

/// The merge sort's launches: the tiles sorted from the caller's buffers into the temporary
/// ones, then the merge passes ping-ponging between them (a copy back when the last pass
/// wrote the temporary ones), all in `stream`.
pub(crate) fn merge_sort<K: DeviceCopy, V: DeviceCopy>(
    kernels: &impl MergeSortKernels<K, V>,
    stream: &Stream,
    mut keys: DeviceViewMut<'_, K>,
    mut values: Option<DeviceViewMut<'_, V>>,
    temp: &mut Temp,
) -> Result<()> {
    const WHAT: &str = "merge sort";
    let n = keys.len();
    if let Some(v) = &values
        && v.len() != n
    {
        return Err(Error::Argument(format!("merge sort: {} values for {n} keys", v.len())));
    }
    if n <= 1 {
        return Ok(());
    }
    let tile = MERGE_BLOCK as usize * merge_items::<K, V>();
    let tiles = n.div_ceil(tile);
    let grid = u32::try_from(tiles)
        .ok()
        .filter(|&t| t < (1 << 31))
        .ok_or_else(|| Error::Argument(format!("merge sort: {n} keys are more than 2^31 tiles of {tile}")))?;
    let smem = u32::try_from(merge_smem_bytes::<K, V>()).expect("at most 48 KiB");
    let cfg = LaunchConfig::new(grid, MERGE_BLOCK).with_shared_mem(smem);
    let pairs = values.is_some();
    let Temp { gpu, sort_keys, sort_values, splits, dummy8, .. } = temp;
    let alt_keys = Temp::grow(gpu, sort_keys, n * size_of::<K>())?;
    let alt_values = Temp::grow(gpu, sort_values, if pairs { n * size_of::<V>() } else { size_of::<V>() })?;
    let splits = Temp::grow(gpu, splits, tiles + 1)?;
    // The empty values of a keys-only sort: a view of nothing.
    let dummy = Temp::grow(gpu, dummy8, 16)?;
    let no_values = || temp_view::<V>(dummy, 0, WHAT);
    // Tiles: the caller's buffers into the temporary ones.
    match values.as_mut() {
        Some(v) => kernels.launch_tiles(
            stream,
            cfg,
            keys.as_view(),
            v.as_view(),
            temp_view_mut::<K>(alt_keys, n, WHAT)?,
            temp_view_mut::<V>(alt_values, n, WHAT)?,
        )?,
        None => kernels.launch_tiles(
            stream,
            cfg,
            keys.as_view(),
            no_values()?,
            temp_view_mut::<K>(alt_keys, n, WHAT)?,
            temp_view_mut::<V>(alt_values, 0, WHAT)?,
        )?,
    }
    let part_cfg = LaunchConfig::new(tiles.div_ceil(256).min(1 << 16) as u32, 256);
    let mut width = tile;
    let mut in_temp = true;
    while width < n {
        let w = width as u64;
        if in_temp {
            let src = temp_view::<K>(alt_keys, n, WHAT)?;
            kernels.launch_partition(stream, part_cfg, src, w, tile as u64, splits)?;
            let src = temp_view::<K>(alt_keys, n, WHAT)?;
            match values.as_mut() {
                Some(v) => {
                    let vin = temp_view::<V>(alt_values, n, WHAT)?;
                    kernels.launch_merge(stream, cfg, src, vin, splits, w, keys.slice_mut(..), v.slice_mut(..))?
                }
                None => kernels.launch_merge(
                    stream,
                    cfg,
                    src,
                    no_values()?,
                    splits,
                    w,
                    keys.slice_mut(..),
                    temp_view_mut::<V>(alt_values, 0, WHAT)?,
                )?,
            }
        } else {
            kernels.launch_partition(stream, part_cfg, keys.as_view(), w, tile as u64, splits)?;
            let kout = temp_view_mut::<K>(alt_keys, n, WHAT)?;
            match values.as_mut() {
                Some(v) => {
                    let vout = temp_view_mut::<V>(alt_values, n, WHAT)?;
                    kernels.launch_merge(stream, cfg, keys.as_view(), v.as_view(), splits, w, kout, vout)?
                }
                None => {
                    let vout = temp_view_mut::<V>(alt_values, 0, WHAT)?;
                    kernels.launch_merge(stream, cfg, keys.as_view(), no_values()?, splits, w, kout, vout)?
                }
            }
        }
        in_temp = !in_temp;
        width = width.saturating_mul(2);
    }
    if in_temp {
        stream.copy(temp_view::<K>(alt_keys, n, WHAT)?, &mut keys)?;
        if let Some(v) = values.as_mut() {
            stream.copy(temp_view::<V>(alt_values, n, WHAT)?, v)?;
        }
    }
    Ok(())
}

/// Sorts `keys` in place, stable, by the comparator the kernels were instantiated with (CUB's
/// `DeviceMergeSort::StableSortKeys`; `SortKeys` is stable here too): one launch sorting tiles
/// of `256 * N` keys in shared memory, then `log2(tiles)` merge passes of two launches each
/// (the runs' cuts at the tile boundaries, the merge), ping-ponging through `temp`, all in
/// `stream`. A comparator that is not a strict weak order gives unspecified values, never an
/// access out of bounds.
///
/// # Errors
/// More than 2^31 tiles; a launch or driver failure.
pub fn merge_sort_keys<K: DeviceCopy, V: DeviceCopy>(
    kernels: &impl MergeSortKernels<K, V>,
    stream: &Stream,
    keys: &mut DeviceBuffer<K>,
    temp: &mut Temp,
) -> Result<()> {
    merge_sort(kernels, stream, keys.slice_mut(..), None, temp)
}

/// [`merge_sort_keys`] moving `values[i]` with `keys[i]` (CUB's `DeviceMergeSort::SortPairs`,
/// stable: equal keys keep their values in input order).
///
/// # Errors
/// As [`merge_sort_keys`], and `values.len() != keys.len()`.
pub fn merge_sort_pairs<K: DeviceCopy, V: DeviceCopy>(
    kernels: &impl MergeSortKernels<K, V>,
    stream: &Stream,
    keys: &mut DeviceBuffer<K>,
    values: &mut DeviceBuffer<V>,
    temp: &mut Temp,
) -> Result<()> {
    merge_sort(kernels, stream, keys.slice_mut(..), Some(values.slice_mut(..)), temp)
}

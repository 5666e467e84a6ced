//! The host API: temporary storage, the launch drivers, the built-in kernels.

use std::format;

use cohort::DeviceCopy;
use cohort::algorithms::{REDUCE_BLOCK, REDUCE_ITEMS, SCAN_BLOCK, SCAN_ITEMS, scan_state_len};
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
            + words(&self.hist_scan))
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

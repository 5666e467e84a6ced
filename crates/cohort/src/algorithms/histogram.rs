//! Device histogram (CUB's `DeviceHistogram::HistogramEven`, `HistogramRange`): a grid of
//! blocks, each counting its tiles (`b, b + G, …`, read as 16-byte vectors) into a
//! [`BlockHistogram`] privatized per warp in dynamic shared memory, then adding its counts to
//! the device histogram with one global atomic per bin. Too many bins for shared memory: the
//! samples are counted with global atomics directly.
//!
//! **Bins.** [`histogram_even`]: `bins` equal bins over `[lower, upper)`, as
//! [`HistogramSample::bin_even`] computes them (integers exactly, `⌊(x − lower) · bins /
//! (upper − lower)⌋`; `f32` as `⌊(x − lower) · scale⌋` in `f32` with `scale = bins / (upper −
//! lower)` rounded once on the host, clamped to the last bin). [`histogram_range`]: bin `i`
//! is `[levels[i], levels[i + 1])` (a binary search; the levels must ascend). Samples outside
//! `[lower, upper)` / `[levels[0], levels[last])` are not counted, nor is a NaN.

use core::sync::atomic::Ordering::Relaxed;

use crate::DeviceCopy;
use crate::atomic::AtomicU32;
use crate::block::{self, BlockHistogram};
use crate::shared::SharedSlice;
use crate::thread;

/// Threads per block of the histogram kernels.
pub const HIST_BLOCK: u32 = 256;
/// Bytes of samples per thread and tile (four 16-byte vector loads, issued together).
pub const HIST_BYTES: usize = 64;

/// "Not counted": the bin of a sample outside the histogram.
pub const NO_BIN: u32 = u32::MAX;

/// How [`EvenBins`] computes a bin from the sample's offset `x - lower`.
const SHIFT: u32 = 0;
const DIV32: u32 = 1;
const DIV64: u32 = 2;
const MULDIV: u32 = 3;
const FLOAT: u32 = 4;

/// The even bins of [`histogram_even`], precomputed on the host by
/// [`HistogramSample::even_bins`] (the divisions a sample's bin needs chosen once).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvenBins {
    /// `lower`: an `i64`'s bits, or an `f32`'s in the low word.
    lower: u64,
    /// `upper`, likewise.
    upper: u64,
    /// Shift, or divisor (bin width), by mode.
    div: u64,
    /// `upper - lower` (integers).
    range: u64,
    /// `bins / (upper - lower)` as `f32` bits (floats).
    scale: u64,
    /// Bins.
    bins: u32,
    /// `SHIFT`, `DIV32`, `DIV64`, `MULDIV` or `FLOAT`.
    mode: u32,
}

// SAFETY: `#[repr(C)]` of `u64`s and `u32`s (5 × 8 + 2 × 4 = 48 bytes, no padding), valid for
// every bit pattern (a garbage `EvenBins` gives wrong bins, never an access out of bounds:
// every bin is checked against the histogram's length).
unsafe impl DeviceCopy for EvenBins {}

impl EvenBins {
    /// Bins.
    #[inline(always)]
    #[must_use]
    pub const fn bins(&self) -> u32 {
        self.bins
    }

    /// Integer bins of `[lower, upper)`: `None` unless `0 < bins` and `lower < upper`, or if
    /// `(upper - lower) * bins` (when `bins` does not divide the range) reaches 2^64.
    #[must_use]
    pub fn int(bins: u32, lower: i64, upper: i64) -> Option<Self> {
        if bins == 0 || lower >= upper {
            return None;
        }
        let range = upper.wrapping_sub(lower) as u64;
        let b = u64::from(bins);
        let (mode, div) = if range.is_multiple_of(b) {
            let d = range / b;
            if d.is_power_of_two() {
                (SHIFT, u64::from(d.trailing_zeros()))
            } else if range <= 1 << 32 && d <= u64::from(u32::MAX) {
                // Every offset is below the range, so fits 32 bits.
                (DIV32, d)
            } else {
                (DIV64, d)
            }
        } else {
            range.checked_mul(b)?;
            (MULDIV, 0)
        };
        Some(Self { lower: lower as u64, upper: upper as u64, div, range, scale: 0, bins, mode })
    }

    /// `f32` bins of `[lower, upper)`: `None` unless `0 < bins`, both bounds are finite,
    /// `lower < upper` and the scale `bins / (upper - lower)` is finite and positive.
    #[must_use]
    pub fn float(bins: u32, lower: f32, upper: f32) -> Option<Self> {
        let scale = bins as f32 / (upper - lower);
        if bins == 0 || !lower.is_finite() || !upper.is_finite() || lower >= upper || !scale.is_finite() || scale <= 0.0
        {
            return None;
        }
        Some(Self {
            lower: u64::from(lower.to_bits()),
            upper: u64::from(upper.to_bits()),
            div: 0,
            range: 0,
            scale: u64::from(scale.to_bits()),
            bins,
            mode: FLOAT,
        })
    }

    /// The bin of an integer sample `x` ([`NO_BIN`] outside `[lower, upper)`).
    #[inline(always)]
    #[must_use]
    pub fn bin_int(&self, x: i64) -> u32 {
        let (lower, upper) = (self.lower as i64, self.upper as i64);
        if x < lower || x >= upper {
            return NO_BIN;
        }
        // `0 <= off < range`.
        let off = x.wrapping_sub(lower) as u64;
        match self.mode {
            SHIFT => (off >> (self.div & 63)) as u32,
            DIV32 => (off as u32) / (self.div as u32).max(1),
            DIV64 => (off / self.div.max(1)) as u32,
            _ => (off.wrapping_mul(u64::from(self.bins)) / self.range.max(1)) as u32,
        }
    }

    /// The bin of an `f32` sample `x` ([`NO_BIN`] outside `[lower, upper)` and for a NaN):
    /// `⌊(x − lower) · scale⌋` in `f32`, at most the last bin.
    #[inline(always)]
    #[must_use]
    pub fn bin_f32(&self, x: f32) -> u32 {
        let (lower, upper) = (f32::from_bits(self.lower as u32), f32::from_bits(self.upper as u32));
        if !(x >= lower && x < upper) {
            return NO_BIN;
        }
        let b = ((x - lower) * f32::from_bits(self.scale as u32)) as u32;
        b.min(self.bins.wrapping_sub(1))
    }
}

/// A sample type of the histograms: its levels' type, its even bins, and how it sits in a
/// 32-bit word (the kernels read samples as 16-byte vectors of words).
pub trait HistogramSample: DeviceCopy {
    /// The type of the bounds and levels: `i64` for the integers (so that `upper = 256`
    /// covers every `u8`), `f32` for `f32`.
    type Level: DeviceCopy + PartialOrd + core::fmt::Debug;
    /// Samples per 32-bit word (`4 / size_of::<Self>()`).
    const PER_WORD: usize;
    /// Whether the even bins are [`EvenBins::float`]'s (else [`EvenBins::int`]'s).
    const FLOAT: bool;
    /// The even bins of `[lower, upper)` (see [`EvenBins::int`], [`EvenBins::float`]).
    fn even_bins(bins: u32, lower: Self::Level, upper: Self::Level) -> Option<EvenBins>;
    /// The sample's even bin, [`NO_BIN`] if not counted.
    fn bin_even(self, p: &EvenBins) -> u32;
    /// The sample as a level (for [`histogram_range`]'s comparisons).
    fn level(self) -> Self::Level;
    /// The sample as an `i64` (integers) or an `f32` (floats; integers converted).
    fn as_i64(self) -> i64;
    /// The sample as an `f32`.
    fn as_f32(self) -> f32;
    /// Sample `k` (`k < PER_WORD`, in memory order) of the little-endian word `w`.
    fn from_word(w: u32, k: usize) -> Self;
}

macro_rules! int_samples {
    ($($t:ty),*) => {$(
        impl HistogramSample for $t {
            type Level = i64;
            const PER_WORD: usize = 4 / size_of::<$t>();
            const FLOAT: bool = false;
            fn even_bins(bins: u32, lower: i64, upper: i64) -> Option<EvenBins> {
                EvenBins::int(bins, lower, upper)
            }
            #[inline(always)]
            fn bin_even(self, p: &EvenBins) -> u32 {
                p.bin_int(self as i64)
            }
            #[inline(always)]
            fn level(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn as_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn as_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn from_word(w: u32, k: usize) -> Self {
                (w >> ((8 * size_of::<$t>() * k) & 31)) as $t
            }
        }
    )*};
}
int_samples!(u8, u16, u32, i32);

impl HistogramSample for f32 {
    type Level = f32;
    const PER_WORD: usize = 1;
    const FLOAT: bool = true;
    fn even_bins(bins: u32, lower: f32, upper: f32) -> Option<EvenBins> {
        EvenBins::float(bins, lower, upper)
    }
    #[inline(always)]
    fn bin_even(self, p: &EvenBins) -> u32 {
        p.bin_f32(self)
    }
    #[inline(always)]
    fn level(self) -> f32 {
        self
    }
    #[inline(always)]
    fn as_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn as_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_word(w: u32, _: usize) -> Self {
        f32::from_bits(w)
    }
}

/// The bin of `x` among `len` levels read by `at` (ascending): the `i` with `at(i) <= x <
/// at(i + 1)`, found by binary search; [`NO_BIN`] below the first level, at or above the last,
/// for a NaN, or with fewer than two levels. Always below `len - 1` otherwise (whatever the
/// levels hold).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn range_bin<L: PartialOrd + Copy>(x: L, len: usize, at: impl Fn(usize) -> L) -> u32 {
    if len < 2 || !(x >= at(0) && x < at(len - 1)) {
        return NO_BIN;
    }
    let (mut lo, mut hi) = (0usize, len - 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if x >= at(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo as u32
}

/// 16 bytes, 16-byte aligned: one `ld.global.v4`.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct V16([u32; 4]);

/// 16-byte vectors per thread and tile.
const VECTORS: usize = HIST_BYTES / 16;

/// Counts this block's share of `samples` by `bin_of` into `hist` and merges it into `out`;
/// every thread of the block calls it. Full tiles (`block_size() * HIST_BYTES` bytes; `b, b +
/// G, …` for block `b` of `G`) are read as vector-striped 16-byte loads, all four of a thread
/// issued before any is counted (the order of samples does not matter); the rest of the input
/// (and all of it when `samples` does not start 16-byte aligned) by a grid-stride loop.
#[inline(always)]
#[track_caller]
fn count_tiles<T: HistogramSample>(
    samples: &[T],
    hist: &BlockHistogram<'_>,
    out: &[AtomicU32],
    bin_of: impl Fn(T) -> u32 + Copy,
) {
    const { assert!(size_of::<T>() * T::PER_WORD == 4, "histogram samples are 1, 2 or 4 bytes") };
    let bs = thread::block_size() as usize;
    let t = thread::thread_rank_in_block() as usize;
    let n = samples.len();
    let tile_len = bs * VECTORS * 4 * T::PER_WORD;
    let aligned = (samples.as_ptr() as usize).is_multiple_of(16);
    let full = if aligned { n / tile_len } else { 0 };
    let vp = samples.as_ptr().cast::<V16>();
    for tile in block::tiles(full as u64) {
        let base = tile.id() as usize * bs * VECTORS + t;
        // SAFETY: tile `id < full` lies inside `samples` (its `bs * VECTORS` vectors are
        // `tile_len` samples), so vector `base + k * bs < (id + 1) * bs * VECTORS` is in
        // bounds; `samples` starts 16-byte aligned (checked), so every vector is.
        let v: [V16; VECTORS] = core::array::from_fn(|k| unsafe { vp.add(base + k * bs).read() });
        crate::unroll::<VECTORS>(|k| {
            crate::unroll::<4>(|w| {
                let word = v[k].0[w];
                let mut e = 0;
                while e < T::PER_WORD {
                    hist.add(bin_of(T::from_word(word, e)));
                    e += 1;
                }
            })
        });
    }
    let threads = thread::num_blocks() as usize * bs;
    let mut i = full * tile_len + thread::block_rank() as usize * bs + t;
    while i < n {
        hist.add(bin_of(samples[i]));
        i += threads;
    }
    hist.merge_into(out);
}

/// Counts the samples with global atomics alone (more bins than shared memory holds):
/// a grid-stride loop.
#[inline(always)]
#[track_caller]
fn count_global<T: DeviceCopy>(samples: &[T], out: &[AtomicU32], bins: usize, bin_of: impl Fn(T) -> u32 + Copy) {
    let end = bins.min(out.len());
    for i in thread::grid_stride(samples.len()) {
        let b = bin_of(samples[*i]) as usize;
        if b < end {
            out[b].add(1, Relaxed);
        }
    }
}

/// One block's share of an even histogram: `out[b] +=` the number of this block's samples in
/// bin `b` (`p`'s bins). The block's counters are the first `counters` `u32`s of dynamic
/// shared memory ([`BlockHistogram::counters`]`(bins, copies)` of them: one copy per warp at
/// most); `counters <= bins`: global atomics alone. Every thread of the block calls it (a multiple of 32 threads); the
/// host clears `out` before the launch. Safe: every count is an atomic, every bin checked.
///
/// # Panics
/// `counters` larger than the dynamic shared memory.
#[inline(always)]
#[track_caller]
pub fn histogram_even<T: HistogramSample>(samples: &[T], p: EvenBins, counters: u32, out: &[AtomicU32]) {
    let bins = p.bins() as usize;
    if samples.is_empty() || bins == 0 {
        return;
    }
    // Counts with `bin_of`: in shared memory, or with global atomics alone.
    macro_rules! count {
        ($bin_of:expr) => {{
            let bin_of = $bin_of;
            if (counters as usize) <= bins {
                count_global(samples, out, bins, bin_of)
            } else {
                let counts = crate::shared::dynamic::<u32>().sub(0, counters as usize);
                let hist = BlockHistogram::new(&counts, bins);
                count_tiles(samples, &hist, out, bin_of)
            }
        }};
    }
    if T::FLOAT {
        return count!(move |x: T| p.bin_f32(x.as_f32()));
    }
    // The integer arithmetic chosen once, outside the loops (`0 <= off < range` inside).
    // `lower <= v < upper` is `(v - lower) mod 2^64 < upper - lower` (for `v < lower`, the
    // wrapped difference is at least `2^64 - (lower - v) > upper - lower`, as `upper < 2^63`).
    let (lower, range) = (p.lower as i64, p.upper.wrapping_sub(p.lower));
    let off = move |x: T| {
        let o = x.as_i64().wrapping_sub(lower) as u64;
        if o < range { Some(o) } else { None }
    };
    match p.mode {
        SHIFT => {
            let s = (p.div & 63) as u32;
            count!(move |x: T| off(x).map_or(NO_BIN, |o| (o >> s) as u32))
        }
        DIV32 => {
            let d = (p.div as u32).max(1);
            count!(move |x: T| off(x).map_or(NO_BIN, |o| o as u32 / d))
        }
        DIV64 => {
            let d = p.div.max(1);
            count!(move |x: T| off(x).map_or(NO_BIN, |o| (o / d) as u32))
        }
        _ => {
            let (b, r) = (u64::from(p.bins), p.range.max(1));
            count!(move |x: T| off(x).map_or(NO_BIN, |o| (o.wrapping_mul(b) / r) as u32))
        }
    }
}

/// The dynamic shared memory's `u32`s before the staged levels of [`histogram_range`]:
/// `counters` rounded up to 16 bytes.
#[must_use]
pub const fn range_levels_at(counters: u32) -> usize {
    (counters as usize).next_multiple_of(4)
}

/// One block's share of a histogram over `levels` (bin `i` = `[levels[i], levels[i + 1])`):
/// as [`histogram_even`], and with `stage_levels` the levels are first copied into dynamic
/// shared memory after the counters (at `u32` [`range_levels_at`]`(counters)`), where the
/// binary searches read them.
///
/// # Panics
/// The counters (and staged levels) larger than the dynamic shared memory.
#[inline(always)]
#[track_caller]
pub fn histogram_range<T: HistogramSample>(
    samples: &[T],
    levels: &[T::Level],
    counters: u32,
    stage_levels: bool,
    out: &[AtomicU32],
) {
    let len = levels.len();
    let bins = len.saturating_sub(1);
    if samples.is_empty() || bins == 0 {
        return;
    }
    // `move` closures: the captured values live in registers (captured by reference, they
    // were reloaded from the stack after every shared-memory atomic).
    let from_global = move |x: T| range_bin(x.level(), len, |i| levels[i]);
    if !stage_levels {
        if (counters as usize) <= bins {
            return count_global(samples, out, bins, from_global);
        }
        let counts = crate::shared::dynamic::<u32>().sub(0, counters as usize);
        let hist = BlockHistogram::new(&counts, bins);
        return count_tiles(samples, &hist, out, from_global);
    }
    let at = range_levels_at(counters) * 4 / size_of::<T::Level>();
    let staged: SharedSlice<T::Level> = crate::shared::dynamic::<T::Level>().sub(at, len);
    let bs = thread::block_size() as usize;
    let mut i = thread::thread_rank_in_block() as usize;
    while i < len {
        staged.store(i, levels[i]);
        i += bs;
    }
    crate::sync::sync_threads();
    let staged = &staged;
    // SAFETY: `range_bin` reads indices below `len`, the staged slice's length.
    let from_shared = move |x: T| range_bin(x.level(), len, |i| unsafe { staged.load_unchecked(i) });
    if (counters as usize) <= bins {
        return count_global(samples, out, bins, from_shared);
    }
    let counts = crate::shared::dynamic::<u32>().sub(0, counters as usize);
    let hist = BlockHistogram::new(&counts, bins);
    count_tiles(samples, &hist, out, from_shared);
}

//! `cohort::global`: constant memory (`constant!`) and module globals (`global!`), set and read
//! by the host through typed handles.

use cohort::prelude::*;

/// An affine map `a * x + b`, a struct in constant memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceCopy)]
pub struct Affine {
    /// Slope.
    pub a: f32,
    /// Offset.
    pub b: f32,
}

/// Sixteen bytes, 16-byte aligned: read from constant memory with `ld.const.v4.b32`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceCopy)]
pub struct Quad {
    /// The words.
    pub v: [u32; 4],
}

/// Taps of [`conv1d`] (radius 4).
pub const CONV_RADIUS: usize = 4;

cohort::constant! {
    /// Coefficients of [`poly_eval`]'s polynomial, lowest degree first (initially 1 + x).
    pub static POLY: [f32; 8] = [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    /// Taps of [`conv1d`], `CONV_TAPS[k]` weighs `x[i + k - CONV_RADIUS]`.
    pub static CONV_TAPS: [f32; 2 * CONV_RADIUS + 1] = [0.0; 2 * CONV_RADIUS + 1];
    /// The map of [`affine`] (initially the identity).
    pub static AFFINE: Affine = Affine { a: 1.0, b: 0.0 };
    /// 16-byte pieces: `ld.const.v4.b32`.
    pub static WIDE: [Quad; 2] = [Quad { v: [1, 2, 3, 4] }, Quad { v: [5, 6, 7, 8] }];
    /// 2-byte pieces: `ld.const.b16`.
    pub static HALVES: [u16; 3] = [7, 8, 9];
}

cohort::global! {
    /// Counts the elements [`count_above`] saw above its threshold.
    pub static ABOVE: AtomicU32 = 0;
    /// A histogram of [`histogram16`]'s input, 16 bins.
    pub static BINS: [AtomicU32; 16] = [0; 16];
    /// Added by [`add_offsets`]: `out[i] = x[i] + OFFSETS[i % 4]`; set by the host.
    pub static OFFSETS: [f32; 4] = [0.0; 4];
    /// Never set by the host: its initial value must be there after load.
    pub static SEVEN: u64 = 7;
}

/// Sleeps `ns` nanoseconds first (the ordering tests: long enough that a host write left
/// unordered would land before the reads), then `out[i] = Σ_k POLY[k] · x[i]^k` (Horner, each
/// coefficient read with `ld.const`).
#[kernel]
pub fn poly_eval(x: &[f32], ns: u64, mut out: DisjointSlice<f32>) {
    sleep(ns);
    let i = thread::index_1d();
    let Some(&v) = x.get(*i) else { return };
    let mut p = 0.0f32;
    let mut k = POLY.len();
    while k > 0 {
        k -= 1;
        p = p * v + POLY.load(k);
    }
    out.set(&i, p);
}

fn sleep(ns: u64) {
    let start = cohort::raw::globaltimer();
    while cohort::raw::globaltimer().wrapping_sub(start) < ns {
        cohort::raw::nanosleep(1000);
    }
}

/// `out[i] = Σ_k CONV_TAPS[k] · x[i + k - R]`, zero outside `x` (a 1-D convolution with its
/// taps in constant memory, read through `Deref` as ordinary Rust reads).
#[kernel]
pub fn conv1d(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index_1d();
    if *i >= x.len() {
        return;
    }
    let taps: &[f32; 2 * CONV_RADIUS + 1] = &CONV_TAPS;
    let mut s = 0.0f32;
    for (k, &t) in taps.iter().enumerate() {
        let j = *i + k;
        if j >= CONV_RADIUS && j - CONV_RADIUS < x.len() {
            s += t * x[j - CONV_RADIUS];
        }
    }
    out.set(&i, s);
}

/// `out[i] = AFFINE.a * x[i] + AFFINE.b` (the whole struct read with `get`).
#[kernel]
pub fn affine(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index_1d();
    let m = AFFINE.get();
    if let Some(&v) = x.get(*i) {
        out.set(&i, m.a * v + m.b);
    }
}

/// `out[i] = WIDE[i / 4 % 2].v[i % 4] + HALVES[i % 3]` (pieces of 16 and 2 bytes).
#[kernel]
pub fn wide_and_halves(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let w = WIDE.load(*i / 4 % 2);
    // A dynamic index into `w` would put it in local memory: select instead.
    let [a, b, c, d] = w.v;
    let word = match *i % 4 {
        0 => a,
        1 => b,
        2 => c,
        _ => d,
    };
    let v = word + u32::from(HALVES.load(*i % 3));
    out.set(&i, v);
}

/// Sleeps `ns` nanoseconds, then adds one to [`ABOVE`] for every `x[i] > threshold`.
#[kernel]
pub fn count_above(x: &[f32], threshold: f32, ns: u64) {
    sleep(ns);
    let i = thread::index_1d();
    if let Some(&v) = x.get(*i)
        && v > threshold
    {
        ABOVE.add(1, Ordering::Relaxed);
    }
}

/// Counts `x[i] % 16` into [`BINS`].
#[kernel]
pub fn histogram16(x: &[u32]) {
    let i = thread::index_1d();
    if let Some(&v) = x.get(*i) {
        BINS[(v % 16) as usize].add(1, Ordering::Relaxed);
    }
}

/// `out[i] = x[i] + OFFSETS[i % 4]` (a host-set global, read by the kernel).
#[kernel]
pub fn add_offsets(x: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index_1d();
    if let Some(&v) = x.get(*i) {
        out.set(&i, v + OFFSETS[*i % 4]);
    }
}

/// `out[i] = SEVEN` (the initial value of a global the host never set).
#[kernel]
pub fn read_seven(mut out: DisjointSlice<u64>) {
    let i = thread::index_1d();
    out.set(&i, *SEVEN);
}

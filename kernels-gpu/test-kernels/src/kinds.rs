//! Parameter kinds written through type aliases and named lifetimes (`tests/gpu/kinds.rs`):
//! `#[kernel]` takes a parameter's kind from its type (`cohort::abi::KernelParam`), not from the
//! name it is written with.

use cohort::prelude::*;

/// A read-only input.
pub type Input<'a> = &'a [u32];
/// Per-thread outputs.
pub type Outputs<'a> = DisjointSlice<'a, u32>;
/// Appended results.
pub type Found<'a> = AppendSlice<'a, u32>;
/// Shared counters.
pub type Counters<'a> = &'a [AtomicU32];
/// A by-value parameter.
pub type Scale = u32;
/// An output matrix of 2 × 3 elements per thread.
pub type Tile<'a> = DisjointMatrix<'a, u32, Cyclic<2, 3>>;
/// A read-only matrix with `u32` offsets.
pub type Source<'a> = Matrix<'a, u32, u32>;

/// `out[i] = data[i] * k + 1`; odd `data[i]` are appended to `found`; `counts[0]` counts the
/// threads with an element, `counts[1]` those without.
#[kernel]
pub fn aliased_slices(data: Input, mut out: Outputs, found: Found, counts: Counters, k: Scale) {
    let i = thread::index_1d();
    match data.get(*i) {
        Some(&v) => {
            out.set(&i, v * k + 1);
            if v % 2 == 1 {
                let _ = found.push(v);
            }
            counts[0].fetch_add(1, Ordering::Relaxed);
        }
        None => {
            counts[1].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// [`aliased_slices`] with every type spelled out: its ABI record must be the same.
#[kernel]
pub fn spelled_slices(
    data: &[u32],
    mut out: DisjointSlice<u32>,
    found: AppendSlice<u32>,
    counts: &[AtomicU32],
    k: u32,
) {
    let i = thread::index_1d();
    match data.get(*i) {
        Some(&v) => {
            out.set(&i, v * k + 1);
            if v % 2 == 1 {
                let _ = found.push(v);
            }
            counts[0].fetch_add(1, Ordering::Relaxed);
        }
        None => {
            counts[1].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Every thread writes its 2 × 3 elements of `out`: `src(k, l)` plus its block, thread and
/// element, packed as `shapes::code` packs them.
#[kernel]
pub fn aliased_matrix(shape: BlockShape<8, 4>, src: Source, mut out: Tile) {
    let mut mine = out.tile(&shape);
    for k in 0..2 {
        for l in 0..3 {
            mine.set(k, l, crate::shapes::code(k, l).wrapping_add(src.load_or(k as u32, l as u32, 0)));
        }
    }
}

/// `out[i] = data[i] + first`, with the kernel's lifetime named in its parameters.
#[kernel]
pub fn named_lifetime<'a>(data: &'a [u32], mut out: DisjointSlice<'a, u32>, first: u32) {
    let i = thread::index_1d();
    if let Some(&v) = data.get(*i) {
        out.set(&i, v + first);
    }
}

/// [`named_lifetime`] with the parameters' lifetimes written `'static`.
#[kernel]
pub fn static_lifetime(data: &'static [u32], mut out: DisjointSlice<'static, u32>, first: u32) {
    let i = thread::index_1d();
    if let Some(&v) = data.get(*i) {
        out.set(&i, v + first);
    }
}

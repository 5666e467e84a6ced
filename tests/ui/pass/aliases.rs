//! Parameter kinds through type aliases, named lifetimes and `'static`: `#[kernel]` takes the
//! kind from the type (issue 25, gap 4), and the launcher takes the same arguments.
#![no_std]
extern crate std;

use cohort::prelude::*;
use cohort_runtime::{AppendBuffer, DeviceBuffer, LaunchConfig, Module, Stream};

pub type Input<'a> = &'a [f32];
pub type Counters<'a> = &'a [AtomicU32];
pub type Out<'a> = DisjointSlice<'a, f32>;
pub type Found<'a> = AppendSlice<'a, u32>;
pub type Tile<'a> = DisjointMatrix<'a, f32, Cyclic<2, 2>>;
pub type Src<'a> = Matrix<'a, f32, u32>;
pub type Factor = f32;

#[kernel]
pub fn aliased(x: Input, counts: Counters, mut out: Out, found: Found, k: Factor) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(&i) {
        *o = x[*i] * k;
    }
    let _ = found.push(1);
    counts[0].fetch_add(1, Ordering::Relaxed);
}

#[kernel]
pub fn aliased_matrix(shape: BlockShape<16, 16>, a: Src, mut out: Tile) {
    let mut mine = out.tile(&shape);
    mine.set(0, 0, a.load_or(0, 0, 0.0));
}

#[kernel]
pub fn lifetimes<'a>(x: &'a [f32], mut out: DisjointSlice<'a, f32>, y: &'static [f32]) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(&i) {
        *o = x[*i] + y[*i];
    }
}

#[allow(clippy::too_many_arguments)]
pub fn launch(
    m: &Module,
    s: &Stream,
    x: &DeviceBuffer<f32>,
    counts: &mut DeviceBuffer<u32>,
    out: &mut DeviceBuffer<f32>,
    found: &mut AppendBuffer<u32>,
) -> cohort_runtime::Result<()> {
    aliased::load(m)?.launch(s, LaunchConfig::new(1u32, 32u32), x, &mut *counts, &mut *out, found, 2.0)?;
    lifetimes::load(m)?.launch(s, LaunchConfig::new(1u32, 32u32), x, &mut *out, x)?;
    let m2 = out.as_matrix_mut(4, 4)?;
    aliased_matrix::load(m)?.launch(s, LaunchConfig::new(1u32, (16u32, 16u32)), x.as_matrix(2, 2)?, m2)
}

fn main() {}

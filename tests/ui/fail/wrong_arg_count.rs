use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

#[kernel]
pub fn add(a: &[f32], mut out: DisjointSlice<f32>) {
    out.set(thread::index_1d(), a[0]);
}

fn launch(m: &Module, s: &Stream, a: &DeviceBuffer<f32>) -> cohort_runtime::Result<()> {
    add::load(m)?.launch(s, (1u32, 32u32), a)
}

fn main() {}

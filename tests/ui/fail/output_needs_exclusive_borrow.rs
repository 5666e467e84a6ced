use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

#[kernel]
pub fn fill(mut out: DisjointSlice<f32>) {
    out.set(thread::index_1d(), 1.0);
}

fn launch(m: &Module, s: &Stream, out: &DeviceBuffer<f32>) -> cohort_runtime::Result<()> {
    fill::load(m)?.launch(s, (1u32, 32u32), out)
}

fn main() {}

// A read-only `Matrix` parameter takes a `MatrixRef` (`buffer.as_matrix(rows, cols)?`, whose shape
// is checked against the buffer): a bare buffer, which has no shape, is refused by rustc.
use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

#[kernel]
pub fn corner(a: Matrix<f32, u32>, mut out: DisjointSlice<f32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = a.load_or(0, 0, 0.0);
    }
}

fn launch(m: &Module, s: &Stream, a: &DeviceBuffer<f32>, out: &mut DeviceBuffer<f32>) -> cohort_runtime::Result<()> {
    corner::load(m)?.launch(s, (1u32, 32u32), a, out)
}
fn main() {}

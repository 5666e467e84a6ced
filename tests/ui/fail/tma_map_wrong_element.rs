use cohort::prelude::*;
use cohort::tma::TensorMap;
use cohort_runtime::{Module, Stream};

#[kernel]
pub fn k(src: TensorMap<f32, 2>, x: u32) {
    let _ = (src.box_elements(), x);
}

// The kernel's parameter fixes the element type: a map of `u32` is not a map of `f32`.
fn launch(m: &Module, s: &Stream, map: &cohort_runtime::TensorMap<'_, u32, 2>) -> cohort_runtime::Result<()> {
    k::load(m)?.launch(s, (1u32, 32u32), map, 1)
}

fn main() {}

use cohort::prelude::*;
use cohort::tma::TensorMap;
use cohort_runtime::{Module, Stream};

#[kernel]
pub fn k(src: TensorMap<f32, 2>, x: u32) {
    let _ = (src.box_elements(), x);
}

// The kernel's parameter fixes the rank: a 3-D map is not a 2-D one.
fn launch(m: &Module, s: &Stream, map: &cohort_runtime::TensorMap<'_, f32, 3>) -> cohort_runtime::Result<()> {
    k::load(m)?.launch(s, (1u32, 32u32), map, 1)
}

fn main() {}

use cohort::prelude::*;
use cohort::tma::TensorMapMut;
use cohort_runtime::{Module, Stream};

#[kernel]
pub fn k(a: TensorMapMut<f32, 2>, b: TensorMapMut<f32, 2>) {
    let _ = (a.box_elements(), b.box_elements());
}

// A store map is passed as `&mut`: one launch cannot take it twice.
fn launch(m: &Module, s: &Stream, map: &mut cohort_runtime::TensorMapMut<'_, f32, 2>) -> cohort_runtime::Result<()> {
    k::load(m)?.launch(s, (1u32, 32u32), &mut *map, &mut *map)
}

fn main() {}

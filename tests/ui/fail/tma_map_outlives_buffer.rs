use cohort::prelude::*;
use cohort::tma::TensorMap;
use cohort_runtime::tensor_map::TensorMapSpec;
use cohort_runtime::{Gpu, Module, Stream};

#[kernel]
pub fn k(src: TensorMap<f32, 2>, x: u32) {
    let _ = (src.box_elements(), x);
}

// A tensor map borrows its buffer: the buffer cannot be freed while the map lives.
fn launch(gpu: &Gpu, m: &Module, s: &Stream) -> cohort_runtime::Result<()> {
    let buffer = gpu.upload(&[1.0f32; 64 * 64])?;
    let map = cohort_runtime::TensorMap::<f32, 2>::new(&buffer, TensorMapSpec::new([64, 64], [64, 64]))?;
    drop(buffer);
    k::load(m)?.launch(s, (1u32, 32u32), &map, 1)
}

fn main() {}

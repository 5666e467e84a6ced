use cohort::prelude::*;
use cohort::tma::TensorMapMut;
use cohort_runtime::tensor_map::TensorMapSpec;
use cohort_runtime::{Gpu, Module, Stream};

#[kernel]
pub fn k(dst: TensorMapMut<f32, 2>, x: u32) {
    let _ = (dst.box_elements(), x);
}

// A store map borrows its buffer exclusively: nothing reads the buffer while the map lives, and
// a load map or a slice of the same buffer cannot be made beside it.
fn launch(gpu: &Gpu, m: &Module, s: &Stream) -> cohort_runtime::Result<()> {
    let mut buffer = gpu.upload(&[1.0f32; 64 * 64])?;
    let mut map = cohort_runtime::TensorMapMut::<f32, 2>::new(&mut buffer, TensorMapSpec::new([64, 64], [64, 64]))?;
    let seen = buffer.to_vec()?;
    k::load(m)?.launch(s, (1u32, 32u32), &mut map, seen.len() as u32)
}

fn main() {}

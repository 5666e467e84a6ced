// A kernel cannot claim a larger `DisjointMatrix` (here with `u32` offsets) than its launch
// passed: making one from a pointer and a shape is `unsafe`.
use cohort::prelude::*;

#[kernel]
pub fn forged(shape: BlockShape<32, 8>, out: DisjointMatrix<f32, Cyclic, u32>) {
    let rows = out.rows() * 2;
    let mut big = DisjointMatrix::<f32, Cyclic, u32>::from_raw_parts(core::ptr::null_mut(), rows, out.cols());
    big.tile(&shape).set(0, 0, 1.0);
}

fn main() {}

// A `DisjointMatrix` is divided among threads by the block shape, so it needs a `BlockShape`.
use cohort::prelude::*;

#[kernel]
pub fn no_shape(mut out: DisjointMatrix<f32, Cyclic>) {
    let _ = &mut out;
}

fn main() {}

// Threads write a `DisjointMatrix` only through their own tile: no element by number.
use cohort::prelude::*;

#[kernel]
pub fn by_number(shape: BlockShape<32, 8>, mut out: DisjointMatrix<f32, Cyclic>) {
    out[(0, 0)] = shape.x() as f32;
}

fn main() {}

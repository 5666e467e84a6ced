// A block of 64 × 32 = 2048 threads cannot exist: the declaration does not compile.
use cohort::prelude::*;

#[kernel]
pub fn too_large(shape: BlockShape<64, 32>, mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), shape.x());
}

fn main() {}

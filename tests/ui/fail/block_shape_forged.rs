// A `BlockShape` is proof that the launcher checked the block shape: safe code cannot make one.
use cohort::prelude::*;

#[kernel]
pub fn forged(mut out: DisjointSlice<u32>) {
    let shape = BlockShape::<32, 8>::new_unchecked();
    out.set(thread::index_1d(), shape.x());
}

fn main() {}

// A `DisjointMatrix` needs a `BlockShape` parameter, also when it comes through an alias.
use cohort::prelude::*;

pub type Image<'a> = DisjointMatrix<'a, f32, Cyclic>;

#[kernel]
pub fn bad(out: Image) {
    let _ = out;
}

fn main() {}

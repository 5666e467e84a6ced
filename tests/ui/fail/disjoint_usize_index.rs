use cohort::prelude::*;

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    out[5usize] = 1;
}

fn main() {}

// A split grid arrival is waited once: the token is not `Clone` (nor `Copy`).
use cohort::prelude::*;

#[kernel(cooperative)]
pub fn k(grid: GridGroup, mut out: DisjointSlice<u32>) {
    let token = grid.barrier_arrive();
    let copy = token.clone();
    token.wait();
    copy.wait();
    out.set(thread::index_1d(), 0);
}

fn main() {}

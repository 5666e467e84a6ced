// A split grid arrival is waited once: `wait` and `barrier_wait` consume the token.
use cohort::prelude::*;

#[kernel(cooperative)]
pub fn k(grid: GridGroup, mut out: DisjointSlice<u32>) {
    let token = grid.barrier_arrive();
    grid.barrier_wait(token);
    token.wait();
    out.set(thread::index_1d(), 0);
}

fn main() {}

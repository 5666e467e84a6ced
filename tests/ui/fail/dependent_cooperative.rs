use cohort::prelude::*;

#[kernel(dependent, cooperative)]
pub fn both(grid: GridGroup, mut out: DisjointSlice<u32>) {
    grid.sync();
    out.set(thread::index_1d(), 1);
}

fn main() {}

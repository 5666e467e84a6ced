// A block bound above 1024 threads cannot hold (the hardware's limit): a compile error on the number.
use cohort::prelude::*;

#[kernel(launch_bounds(2048))]
pub fn k(mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), 0);
}

fn main() {}

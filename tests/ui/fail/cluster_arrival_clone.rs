// A split cluster arrival is waited once: the token is not `Clone` (nor `Copy`), so it cannot
// be duplicated to wait twice.
use cohort::prelude::*;

#[kernel(cluster)]
pub fn k(mut out: DisjointSlice<u32>) {
    let c = cohort::cg::this_cluster();
    let token = c.barrier_arrive();
    let copy = token.clone();
    token.wait();
    copy.wait();
    out.set(thread::index_1d(), 0);
}

fn main() {}

// A split cluster arrival is waited once: `wait` and `barrier_wait` consume the token.
use cohort::prelude::*;

#[kernel(cluster)]
pub fn k(mut out: DisjointSlice<u32>) {
    let c = cohort::cg::this_cluster();
    let token = c.barrier_arrive();
    token.wait();
    c.barrier_wait(token);
    out.set(thread::index_1d(), 0);
}

fn main() {}

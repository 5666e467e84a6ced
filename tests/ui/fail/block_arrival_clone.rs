// A split block arrival is waited once: the token is not `Clone` (nor `Copy`), so it cannot be
// duplicated to wait twice.
use cohort::prelude::*;

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let b = cohort::cg::this_thread_block();
    let token = b.barrier_arrive();
    let copy = token.clone();
    token.wait();
    copy.wait();
    out.set(thread::index_1d(), 0);
}

fn main() {}

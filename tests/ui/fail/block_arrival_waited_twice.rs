// A split block arrival is waited once: `wait` and `barrier_wait` consume the token.
use cohort::prelude::*;

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let b = cohort::cg::this_thread_block();
    let token = b.barrier_arrive();
    token.wait();
    b.barrier_wait(token);
    out.set(thread::index_1d(), 0);
}

fn main() {}

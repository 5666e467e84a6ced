// `invoke_one_broadcast` exists on tiles and coalesced groups (as in CUDA), not on the block:
// the block has no shuffle to broadcast the leader's result with.
use cohort::prelude::*;

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let block = cohort::cg::this_thread_block();
    let v = cohort::cg::invoke_one_broadcast(&block, || 7u32);
    out.set(thread::index_1d(), v);
}

fn main() {}

// `invoke_one_broadcast` moves the leader's result to the other lanes word by word: only
// `DeviceCopy` values (no references: a pointer into one lane's memory means nothing in another).
use cohort::prelude::*;

#[kernel]
pub fn k(vals: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let tile = cohort::cg::tiled_partition::<8>(&cohort::cg::this_thread_block());
    let r: &u32 = cohort::cg::invoke_one_broadcast(&tile, || &vals[*i]);
    out.set(&i, *r);
}

fn main() {}

// A remote view of another block's shared memory has no plain `store`: remote writes go only
// through `store_own`, into the writing block's own part (the disjoint scheme).
use cohort::prelude::*;

cohort::shared! {
    static A: [u32; 64];
}

#[kernel(cluster)]
pub fn k(mut out: DisjointSlice<u32>) {
    let c = cohort::cg::this_cluster();
    let remote = c.map_shared_rank(A.get(), 1);
    remote.store(0, 7);
    out.set(thread::index_1d(), 0);
}

fn main() {}

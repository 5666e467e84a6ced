use cohort::prelude::*;

// Lane 0's pointer to its local memory means nothing in another lane.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let local = 5u32;
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let r: &u32 = warp.shfl(&local, 0);
    out.set(thread::index_1d(), *r);
}

fn main() {}

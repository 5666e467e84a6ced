//! Example 03: a block reduction with Cooperative Groups (`cg`).

use cohort::prelude::*;

/// `sums[b]` = the sum of block `b`'s elements of `data` (one element per thread).
#[kernel]
pub fn block_sums(data: &[u32], mut sums: DisjointSlice<u64, PerBlock>) {
    let block = cg::this_thread_block();
    let i = thread::index_1d();
    let v = data.get(*i).copied().unwrap_or(0) as u64; // threads past the end add 0
    let total = cg::reduce(&block, v, cg::plus); // every thread of the block gets the sum
    if let Some(b) = block.leader_index() {
        // Thread 0 of the block owns the block's element.
        sums.set(b, total);
    }
}

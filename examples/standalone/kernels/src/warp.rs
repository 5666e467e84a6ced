//! Example 04: warp shuffles (an inclusive prefix sum within each warp).

use cohort::prelude::*;

/// `out[i]` = the sum of `data[j]` for the `j <= i` in `i`'s warp (32 consecutive elements):
/// a Hillis–Steele scan on `shfl_up`. The library's `cg::inclusive_scan` does the same.
#[kernel]
pub fn warp_scan(data: &[u32], mut out: DisjointSlice<u32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let i = thread::index_1d();
    let mut x = data.get(*i).copied().unwrap_or(0); // every lane takes part, even past the end
    let mut d = 1;
    while d < 32 {
        let below = warp.shfl_up(x, d); // the value of the lane `d` below (own value at the bottom)
        if warp.thread_rank() >= d {
            x += below;
        }
        d *= 2;
    }
    if let Some(o) = out.get_mut(&i) {
        *o = x;
    }
}

use cohort::mma::{self, M16N8K32, MmaA, MmaB, MmaC, e4m3};
use cohort::prelude::*;

// `.satfinite` is an integer `mma.sync`'s: FP8 inputs have no such form.
#[kernel]
pub fn k(mut out: DisjointSlice<i32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let a = MmaA::<M16N8K32, e4m3>::splat(e4m3::ONE);
    let b = MmaB::<M16N8K32, e4m3>::splat(e4m3::ONE);
    let c = MmaC::<M16N8K32, i32>::splat(0);
    let d = mma::mma_sync_satfinite(&warp, &a, &b, &c);
    out.set(thread::index_1d(), d.get(0));
}

fn main() {}

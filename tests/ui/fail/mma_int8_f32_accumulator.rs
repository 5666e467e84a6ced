use cohort::mma::{self, M16N8K32, MmaA, MmaB, MmaC};
use cohort::prelude::*;

// 8-bit integer inputs accumulate in `i32`: there is no `f32` accumulator for them.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let a = MmaA::<M16N8K32, i8>::splat(1);
    let b = MmaB::<M16N8K32, i8>::splat(1);
    let c = MmaC::<M16N8K32, f32>::splat(0.0);
    let d = mma::mma_sync(&warp, &a, &b, &c);
    out.set(thread::index_1d(), d.get(0));
}

fn main() {}

use cohort::mma::{self, FragA, FragB, FragC, bf16};
use cohort::prelude::*;

// BF16 accumulators do not exist (BF16 inputs accumulate in F32).
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let a = FragA::<bf16>::splat(bf16::ONE);
    let b = FragB::<bf16>::splat(bf16::ONE);
    let c = FragC::<bf16>::splat(bf16::ZERO);
    let d = mma::mma_sync(&warp, &a, &b, &c);
    out.set(thread::index_1d(), d.get(0).to_f32());
}

fn main() {}

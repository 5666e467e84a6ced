use cohort::mma::{self, FragA, FragB, FragC, bf16, f16};
use cohort::prelude::*;

// A in BF16 and B in F16: `mma.sync` has no such instruction.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let a = FragA::<bf16>::splat(bf16::ONE);
    let b = FragB::<f16>::splat(f16::ONE);
    let c = FragC::<f32>::splat(0.0);
    let d = mma::mma_sync(&warp, &a, &b, &c);
    out.set(thread::index_1d(), d.get(0));
}

fn main() {}

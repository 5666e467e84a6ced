use cohort::mma::{self, FragA, FragB, FragC, bf16};
use cohort::prelude::*;

// B where A goes (a 16×8 fragment for a 16×16 one): a type error, not a wrong result.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let a = FragA::<bf16>::splat(bf16::ONE);
    let b = FragB::<bf16>::splat(bf16::ONE);
    let c = FragC::<f32>::splat(0.0);
    let d = mma::mma_sync(&warp, &b, &a, &c);
    out.set(thread::index_1d(), d.get(0));
}

fn main() {}
